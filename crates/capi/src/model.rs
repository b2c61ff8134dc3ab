//! Models: one network's weights shared by plans for several shapes, each plan with a
//! bounded number of inference slots (`accy_session::Model` and `PreparedModel`).

use accy_session::{decode_program, Model, ModelContext, PreparedModel, Status};

use crate::args::{clear, create, destroy, required, slice, write_optional};
use crate::invoke::{byte_views, AccyBuffer, AccyConstBuffer};
use crate::program::{fill_descriptor, AccyDescriptor, AccyWeights, Io};
use crate::session::{read_options, AccySessionOptions};
use crate::status::{guard, AccyStatus, Failure};

/// A network and its weights, compiled once, ready to be prepared for any shape of it. Opaque
/// to C; created by `accy_model_create`, freed by `accy_model_destroy`. Any number of threads
/// may prepare plans from one model at once.
#[derive(Debug)]
pub struct AccyModel {
    model: Model,
}

/// A plan of a model for one shape, with a fixed number of inference slots, each with its own
/// scratch memory; the weights are the model's, shared. Opaque to C; created by
/// `accy_model_prepare`, freed by `accy_prepared_destroy`. Any number of threads may run one
/// plan at once: at most `capacity` run together, the others wait their turn (see
/// `accy_prepared_run`) or, with `accy_prepared_try_run`, return `ACCY_STATUS_BUSY`.
#[derive(Debug)]
pub struct AccyPrepared {
    prepared: PreparedModel,
}

/// Creates a model from a program given as wire bytes and its weights, in a context of its
/// own set up by `options` (NULL for the defaults; as for `accy_session_create`). The program
/// is compiled and the weights' packed forms computed, once. The bytes may be freed once this
/// returns, and so may `weights` (the model keeps what it needs, stored once). `*model`
/// receives the model (NULL on failure).
///
/// Fails with `ACCY_STATUS_INVALID_PROGRAM`, `ACCY_STATUS_UNSUPPORTED_VERSION`,
/// `ACCY_STATUS_INVALID_BUFFER` (a missing or wrongly sized weight, a bad `options`, NULL
/// bytes with a nonzero length, a NULL `model`), `ACCY_STATUS_COMPILE_FAILED` or
/// `ACCY_STATUS_OUT_OF_MEMORY`.
///
/// # Safety
/// `options` is NULL or points to `options->size` readable bytes, whose `target` is NULL or
/// a NUL-terminated string; `bytes` is NULL (then `length` is 0) or points to `length`
/// readable bytes; `weights` is NULL or a live set; `model` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_model_create(
    options: *const AccySessionOptions,
    bytes: *const u8,
    length: usize,
    weights: *const AccyWeights,
    model: *mut *mut AccyModel,
) -> AccyStatus {
    // SAFETY: the caller promises `model` is NULL or writable, and the rest as documented.
    guard(Status::CompileFailed, || unsafe {
        create(model, "model", || {
            let context = ModelContext::with_options(read_options(options)?)?;
            let bytes = slice(bytes, length, "bytes")?;
            let program = decode_program(bytes)?;
            let weights = weights
                .as_ref()
                .map(|w| w.weights.clone())
                .unwrap_or_default();
            Ok(AccyModel {
                model: Model::with_context(&context, &program, weights)?,
            })
        })
    })
}

/// Frees a model. Plans prepared from it keep working (they share what they need). NULL is
/// accepted and does nothing. Returns `ACCY_STATUS_OK`.
///
/// # Safety
/// `model` is NULL or came from `accy_model_create` and has not been destroyed; no call
/// using it is running.
#[no_mangle]
pub unsafe extern "C" fn accy_model_destroy(model: *mut AccyModel) -> AccyStatus {
    // SAFETY: the caller's promises are `destroy`'s.
    unsafe { destroy(model) }
}

/// The physical bytes of the model's weights and their packed forms, counted once however
/// many plans and slots share them. `*bytes` is cleared to 0 on entry.
///
/// # Safety
/// `model` is NULL or live; `bytes` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_model_weight_bytes(
    model: *const AccyModel,
    bytes: *mut u64,
) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller promises `bytes` is NULL or writable.
        unsafe { clear(bytes, 0) };
        required(bytes, "bytes")?;
        // SAFETY: the caller promises `model` is NULL or live.
        let m = unsafe { model_ref(model) }?;
        // SAFETY: checked non-null above; the caller promises it is writable.
        unsafe { bytes.write(m.model.weight_bytes()) };
        Ok(())
    })
}

/// Prepares a plan of the model with `capacity` inference slots (at least 1) for `variant`,
/// given as wire bytes: another shape of the same network (batch 1, 8, 37, …: as many inputs
/// and outputs with the same dtypes, and the same weights). NULL bytes with length 0 stand for
/// the model's own program, which is not compiled again. A variant is compiled now and shares
/// the model's weights and their packed forms. `*prepared` receives the plan (NULL on
/// failure), which the caller frees with `accy_prepared_destroy`.
///
/// Fails with `ACCY_STATUS_INVALID_PROGRAM`, `ACCY_STATUS_UNSUPPORTED_VERSION`,
/// `ACCY_STATUS_INVALID_MODEL` (a variant that is not a shape of this network, a capacity of
/// 0), `ACCY_STATUS_INVALID_HANDLE` (a NULL model), `ACCY_STATUS_INVALID_BUFFER` (a NULL
/// `prepared`, NULL bytes with a nonzero length), `ACCY_STATUS_COMPILE_FAILED` or
/// `ACCY_STATUS_OUT_OF_MEMORY`.
///
/// # Safety
/// `model` is NULL or live; `variant` is NULL (then `length` is 0) or points to `length`
/// readable bytes; `prepared` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_model_prepare(
    model: *const AccyModel,
    variant: *const u8,
    length: usize,
    capacity: usize,
    prepared: *mut *mut AccyPrepared,
) -> AccyStatus {
    // SAFETY: the caller promises `prepared` is NULL or writable, and the rest as documented.
    guard(Status::CompileFailed, || unsafe {
        create(prepared, "prepared", || {
            let m = model_ref(model)?;
            let prepared = if variant.is_null() && length == 0 {
                m.model.prepare(m.model.program(), capacity)?
            } else {
                let bytes = slice(variant, length, "variant")?;
                m.model.prepare(&decode_program(bytes)?, capacity)?
            };
            Ok(AccyPrepared { prepared })
        })
    })
}

/// Frees a plan. NULL is accepted and does nothing. Returns `ACCY_STATUS_OK`.
///
/// # Safety
/// `prepared` is NULL or came from `accy_model_prepare` and has not been destroyed; no call
/// using it is running.
#[no_mangle]
pub unsafe extern "C" fn accy_prepared_destroy(prepared: *mut AccyPrepared) -> AccyStatus {
    // SAFETY: the caller's promises are `destroy`'s.
    unsafe { destroy(prepared) }
}

/// How many buffers `accy_prepared_run` takes (`*inputs`, `*outputs`), and how many
/// inference slots the plan has (`*capacity`). Any out-parameter may be NULL when not
/// wanted; each is cleared to 0 on entry.
///
/// # Safety
/// `prepared` is NULL or live; `inputs`, `outputs` and `capacity` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_prepared_info(
    prepared: *const AccyPrepared,
    inputs: *mut usize,
    outputs: *mut usize,
    capacity: *mut usize,
) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller promises each is NULL or writable.
        unsafe {
            clear(inputs, 0);
            clear(outputs, 0);
            clear(capacity, 0);
        }
        // SAFETY: the caller promises `prepared` is NULL or live.
        let p = unsafe { prepared_ref(prepared) }?;
        let values = [
            (inputs, p.prepared.inputs().len()),
            (outputs, p.prepared.outputs().len()),
            (capacity, p.prepared.capacity()),
        ];
        // SAFETY: the caller promises each is NULL or writable.
        unsafe { write_optional(&values) };
        Ok(())
    })
}

/// Describes input `index` of the plan (in the order `accy_prepared_run` takes inputs) into
/// `*descriptor`, whose `size` the caller has set; as `accy_program_input`. Plan buffers are
/// copied, so any address will do: `alignment` is informational.
///
/// # Safety
/// `prepared` is NULL or live; `descriptor` is NULL or points to `descriptor->size` writable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn accy_prepared_input(
    prepared: *const AccyPrepared,
    index: usize,
    descriptor: *mut AccyDescriptor,
) -> AccyStatus {
    // SAFETY: the caller's promises are `describe`'s.
    guard(Status::LaunchFailed, || unsafe {
        describe(prepared, Io::Input, index, descriptor)
    })
}

/// Describes output `index` of the plan; otherwise as `accy_prepared_input`.
///
/// # Safety
/// As `accy_prepared_input`.
#[no_mangle]
pub unsafe extern "C" fn accy_prepared_output(
    prepared: *const AccyPrepared,
    index: usize,
    descriptor: *mut AccyDescriptor,
) -> AccyStatus {
    // SAFETY: the caller's promises are `describe`'s.
    guard(Status::LaunchFailed, || unsafe {
        describe(prepared, Io::Output, index, descriptor)
    })
}

/// Runs one inference: takes a free inference slot, waiting while all are busy. Waiters are
/// served in arrival order; a caller arriving while a slot is free takes it unless the head
/// of the queue has waited 4 ms there, so slots stay busy and each waiter is passed over for
/// at most 4 ms once it heads the queue. Copies `inputs` into it, runs the plan and copies the outputs into
/// `outputs`. Each buffer must have exactly its descriptor's `byte_size` (any address: the
/// bytes are copied), and no output may share a byte with another buffer. With up to 8
/// inputs and 8 outputs it allocates nothing.
/// On failure the outputs' contents are unspecified.
///
/// Fails with `ACCY_STATUS_INVALID_BUFFER` (a wrong count or size, an overlap, a NULL pointer
/// with a nonzero length), `ACCY_STATUS_INVALID_HANDLE` (a NULL plan) or
/// `ACCY_STATUS_LAUNCH_FAILED`.
///
/// # Safety
/// `prepared` is NULL or live; `inputs` is NULL (then `input_count` is 0) or points to
/// `input_count` buffers, likewise `outputs`; each buffer's `data` holds `byte_size` readable
/// (inputs) or writable (outputs) bytes that no other thread writes during the call.
#[no_mangle]
pub unsafe extern "C" fn accy_prepared_run(
    prepared: *const AccyPrepared,
    inputs: *const AccyConstBuffer,
    input_count: usize,
    outputs: *const AccyBuffer,
    output_count: usize,
) -> AccyStatus {
    // SAFETY: the caller's promises are `run`'s.
    unsafe { run(prepared, inputs, input_count, outputs, output_count, true) }
}

/// `accy_prepared_run` if it would get a slot at once (one is free, and no waiter has headed
/// the queue for 4 ms); otherwise `ACCY_STATUS_BUSY` at once, without waiting.
///
/// # Safety
/// As `accy_prepared_run`.
#[no_mangle]
pub unsafe extern "C" fn accy_prepared_try_run(
    prepared: *const AccyPrepared,
    inputs: *const AccyConstBuffer,
    input_count: usize,
    outputs: *const AccyBuffer,
    output_count: usize,
) -> AccyStatus {
    // SAFETY: the caller's promises are `run`'s.
    unsafe { run(prepared, inputs, input_count, outputs, output_count, false) }
}

/// The body of `accy_prepared_run` (`wait`) and `accy_prepared_try_run`.
///
/// # Safety
/// As `accy_prepared_run`.
unsafe fn run(
    prepared: *const AccyPrepared,
    inputs: *const AccyConstBuffer,
    input_count: usize,
    outputs: *const AccyBuffer,
    output_count: usize,
    wait: bool,
) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller promises `prepared` is NULL or live.
        let p = unsafe { prepared_ref(prepared) }?;
        // SAFETY: the caller's promises for the buffers are `byte_views`'.
        let (input_bytes, mut output_bytes) =
            unsafe { byte_views(inputs, input_count, outputs, output_count) }?;
        if wait {
            p.prepared.run(&input_bytes, &mut output_bytes)?;
        } else {
            p.prepared.try_run(&input_bytes, &mut output_bytes)?;
        }
        Ok(())
    })
}

/// Fills `*out` with descriptor `index` of the plan's `io` list.
///
/// # Safety
/// `prepared` is NULL or live; `out` is NULL or points to `out->size` writable bytes.
unsafe fn describe(
    prepared: *const AccyPrepared,
    io: Io,
    index: usize,
    out: *mut AccyDescriptor,
) -> Result<(), Failure> {
    // SAFETY: the caller promises `prepared` is NULL or live, and `out` as `fill_descriptor`
    // asks.
    unsafe {
        fill_descriptor(out, io, index, || {
            let p = prepared_ref(prepared)?;
            Ok(match io {
                Io::Input => p.prepared.inputs().to_vec(),
                Io::Output => p.prepared.outputs().to_vec(),
            })
        })
    }
}

/// The model a C caller passes, or an invalid-handle failure for NULL.
///
/// # Safety
/// `model` is NULL or a live model from `accy_model_create`.
unsafe fn model_ref<'a>(model: *const AccyModel) -> Result<&'a AccyModel, Failure> {
    // SAFETY: the caller promises a non-null `model` is live for the call.
    unsafe { model.as_ref() }.ok_or_else(|| Failure::handle("the model is NULL"))
}

/// The plan a C caller passes, or an invalid-handle failure for NULL.
///
/// # Safety
/// `prepared` is NULL or a live plan from `accy_model_prepare`.
unsafe fn prepared_ref<'a>(prepared: *const AccyPrepared) -> Result<&'a AccyPrepared, Failure> {
    // SAFETY: the caller promises a non-null `prepared` is live for the call.
    unsafe { prepared.as_ref() }.ok_or_else(|| Failure::handle("the prepared model is NULL"))
}
