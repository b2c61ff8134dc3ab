//! Programs: named weights, compiling wire bytes into a handle, describing and releasing it.

use std::ffi::{c_char, c_void};

use accy_session::{
    DType, Descriptor, Error, Handle, Session, Status, WeightError, Weights, MAX_PROGRAMS,
};

use crate::args::{c_str, clear, create, destroy, required, slice, write_optional};
use crate::session::{session_ref, AccySession};
use crate::status::{guard, AccyStatus, Failure};

/// Names one compiled program of one session in later calls. A plain value: copy it freely.
/// `id` is opaque; 0 never names a program (out-parameters are cleared to it).
///
/// `accy_program_release` makes every copy of the handle dead: from then on each call with it
/// returns `ACCY_STATUS_INVALID_HANDLE`, even after its slot holds a new program. A handle given
/// to a session other than the one that issued it is refused the same way.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccyProgram {
    /// Slot, issuing session and generation, packed; opaque to callers.
    pub id: u64,
}

impl AccyProgram {
    /// The handle `session` issued for `h`: bits 0-7 hold the slot index plus one (so 0 is
    /// never a handle), bits 8-31 the session's tag, bits 32-63 the slot's generation.
    fn new(session: &AccySession, h: Handle) -> AccyProgram {
        let low = (session.tag << 8) | (h.index + 1);
        AccyProgram {
            id: (u64::from(h.generation) << 32) | u64::from(low),
        }
    }

    /// The session handle this names, if `session` issued it.
    pub(crate) fn handle(self, session: &AccySession) -> Result<Handle, Failure> {
        if self.id == 0 {
            return Err(Failure::handle(
                "the program handle is 0, which names no program",
            ));
        }
        let slot = (self.id & 0xff) as u32;
        let tag = ((self.id >> 8) & 0x00ff_ffff) as u32;
        if tag != session.tag {
            return Err(Failure::handle(format_args!(
                "program {:#x} was issued by another session",
                self.id
            )));
        }
        if slot == 0 || slot as usize > MAX_PROGRAMS {
            return Err(Failure::handle(format_args!(
                "program {:#x} is not a handle accy issued",
                self.id
            )));
        }
        Ok(Handle {
            index: slot - 1,
            generation: (self.id >> 32) as u32,
        })
    }
}

/// One named weight for `accy_weights_create`: a NUL-terminated UTF-8 name as the program's
/// `weight` parameter spells it, and its bytes (little-endian elements, row-major).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AccyWeight {
    /// The weight's name; not NULL.
    pub name: *const c_char,
    /// Its bytes; NULL only when `byte_size` is 0.
    pub data: *const c_void,
    /// The number of bytes at `data`.
    pub byte_size: usize,
}

/// An immutable set of named weights, copied once into memory of its own. Opaque to C; any
/// number of programs, compiled on any threads, may bind the same set, and it is stored once.
#[derive(Debug)]
pub struct AccyWeights {
    pub(crate) weights: Weights,
}

/// The failure for a weight set that could not be built.
fn weight_failure(e: WeightError) -> Failure {
    let status = match e {
        WeightError::OutOfMemory { .. } => Status::OutOfMemory,
        _ => Status::InvalidBuffer,
    };
    let prefix = if status == Status::OutOfMemory {
        "out of memory"
    } else {
        "invalid buffer"
    };
    Failure::new(status, format!("{prefix}: {e}"))
}

/// Copies `count` named weights into a new set for `accy_program_compile`. The caller's
/// memory may be freed once this returns. `*weights` receives the set (NULL on failure), which
/// the caller frees with `accy_weights_destroy` whenever it likes: programs compiled with it
/// keep what they need.
///
/// Fails with `ACCY_STATUS_INVALID_BUFFER` (an empty, duplicate, NULL or non-UTF-8 name, a
/// NULL pointer with a nonzero length) or `ACCY_STATUS_OUT_OF_MEMORY`.
///
/// # Safety
/// `entries` is NULL (then `count` is 0) or points to `count` entries whose names are
/// NUL-terminated and whose `data` holds `byte_size` readable bytes; `weights` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn accy_weights_create(
    entries: *const AccyWeight,
    count: usize,
    weights: *mut *mut AccyWeights,
) -> AccyStatus {
    // SAFETY: the caller promises `weights` is NULL or writable.
    guard(Status::LaunchFailed, || unsafe {
        create(weights, "weights", || weight_set(entries, count))
    })
}

/// The weight set `count` entries at `entries` name.
///
/// # Safety
/// As `accy_weights_create`'s for `entries` and `count`.
unsafe fn weight_set(entries: *const AccyWeight, count: usize) -> Result<AccyWeights, Failure> {
    // SAFETY: the caller promises `count` readable entries at a non-null `entries`.
    let entries = unsafe { slice(entries, count, "entries") }?;
    let mut named = Vec::with_capacity(entries.len());
    for (i, w) in entries.iter().enumerate() {
        // SAFETY: the caller promises each name is NUL-terminated (or NULL, refused here).
        let name = unsafe { c_str(w.name, format_args!("entries[{i}].name")) }?
            .ok_or_else(|| Failure::argument(format_args!("entries[{i}].name is NULL")))?;
        // SAFETY: the caller promises `byte_size` readable bytes at `data`.
        let data = unsafe {
            slice(
                w.data.cast::<u8>(),
                w.byte_size,
                format_args!("entries[{i}].data"),
            )
        }?;
        named.push((name, data));
    }
    let weights = Weights::new(&named).map_err(weight_failure)?;
    Ok(AccyWeights { weights })
}

/// Frees a weight set. NULL is accepted and does nothing. Programs compiled with the set keep
/// working. Returns `ACCY_STATUS_OK`.
///
/// # Safety
/// `weights` is NULL or came from `accy_weights_create` and has not been destroyed; no call
/// using it is running.
#[no_mangle]
pub unsafe extern "C" fn accy_weights_destroy(weights: *mut AccyWeights) -> AccyStatus {
    // SAFETY: the caller's promises are `destroy`'s.
    unsafe { destroy(weights) }
}

/// Compiles a program given as wire bytes (`docs/wire-format.md`) for this CPU and loads it
/// into a free slot of the session. `weights` binds the program's weight parameters by name
/// (NULL: no weights). The bytes may be freed once this returns. On success `*program`
/// receives the handle; on failure it is cleared to `{0}`.
///
/// Fails with `ACCY_STATUS_INVALID_PROGRAM` (malformed bytes, or a program the verifier
/// refuses), `ACCY_STATUS_UNSUPPORTED_VERSION`, `ACCY_STATUS_INVALID_BUFFER` (a missing or
/// wrongly sized weight, NULL bytes with a nonzero length, a NULL `program`),
/// `ACCY_STATUS_TOO_MANY_PROGRAMS`, `ACCY_STATUS_OUT_OF_MEMORY`, `ACCY_STATUS_COMPILE_FAILED`
/// or `ACCY_STATUS_INVALID_HANDLE` (a NULL session).
///
/// # Safety
/// `session` is NULL or live; `bytes` is NULL (then `length` is 0) or points to `length`
/// readable bytes; `weights` is NULL or a live set; `program` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_program_compile(
    session: *const AccySession,
    bytes: *const u8,
    length: usize,
    weights: *const AccyWeights,
    program: *mut AccyProgram,
) -> AccyStatus {
    // SAFETY: the caller keeps this function's contract, which is `new_program`'s.
    unsafe {
        new_program(
            session,
            bytes,
            length,
            weights,
            program,
            |s, bytes, w| match w {
                Some(w) => s.compile_with_weights(bytes, w),
                None => s.compile(bytes),
            },
        )
    }
}

/// Loads an ahead-of-time artifact (the bytes `accy compile FILE --artifact` writes, or
/// `Session::compile_artifact` returns) into a free slot of the session, without compiling;
/// from then on the program is used exactly like a compiled one. `weights` binds the
/// artifact's weight parameters by name (NULL: no weights); weights are never part of an
/// artifact. The bytes may be freed once this returns. On success `*program` receives the
/// handle; on failure it is cleared to `{0}`.
///
/// Before any code is mapped the bytes are checked (magic, format version, checksum, every
/// length and section) and the artifact validated; then its architecture and CPU features are
/// compared with the session's. Fails with `ACCY_STATUS_UNSUPPORTED_VERSION` (a newer format),
/// `ACCY_STATUS_INVALID_PROGRAM` (damaged or malformed bytes, or an artifact that fails
/// validation), `ACCY_STATUS_COMPILE_FAILED` (code for another architecture, or needing CPU
/// features this session may not use; the message names them), `ACCY_STATUS_INVALID_BUFFER`
/// (a missing or wrongly sized weight, NULL bytes with a nonzero length, a NULL `program`),
/// `ACCY_STATUS_TOO_MANY_PROGRAMS`, `ACCY_STATUS_OUT_OF_MEMORY` or
/// `ACCY_STATUS_INVALID_HANDLE` (a NULL session).
///
/// # Safety
/// As for `accy_program_compile`, and: the bytes contain machine code that will run in this
/// process. The checks catch damage and version skew, but nothing can prove what the code
/// does, so the caller promises the bytes were written by this accy version's compiler and
/// not tampered with. Loading an artifact from an untrusted source is running an untrusted
/// program.
#[no_mangle]
pub unsafe extern "C" fn accy_program_load_artifact(
    session: *const AccySession,
    bytes: *const u8,
    length: usize,
    weights: *const AccyWeights,
    program: *mut AccyProgram,
) -> AccyStatus {
    // SAFETY: the caller keeps this function's contract: `new_program`'s, and that the
    // artifact came from accy's compiler untampered, which is `load_artifact`'s.
    unsafe {
        new_program(
            session,
            bytes,
            length,
            weights,
            program,
            |s, bytes, w| match w {
                Some(w) => s.load_artifact_with_weights(bytes, w),
                None => s.load_artifact(bytes),
            },
        )
    }
}

/// What `accy_program_compile` and `accy_program_load_artifact` share: clears `*program`,
/// checks the arguments, makes the program from the bytes and weights with `make`, and
/// writes its handle to `*program`. Failures (and panics) become a status, `CompileFailed`
/// for a panic.
///
/// # Safety
/// `session` is NULL or live; `bytes` is NULL (then `length` is 0) or points to `length`
/// readable bytes; `weights` is NULL or a live set; `program` is NULL or writable.
unsafe fn new_program(
    session: *const AccySession,
    bytes: *const u8,
    length: usize,
    weights: *const AccyWeights,
    program: *mut AccyProgram,
    make: impl FnOnce(&Session, &[u8], Option<&Weights>) -> Result<Handle, Error>,
) -> AccyStatus {
    guard(Status::CompileFailed, || {
        // SAFETY: the caller promises `program` is NULL or writable.
        unsafe { clear(program, AccyProgram { id: 0 }) };
        required(program, "program")?;
        // SAFETY: the caller promises `session` is NULL or live.
        let s = unsafe { session_ref(session) }?;
        // SAFETY: the caller promises `length` readable bytes at a non-null `bytes`.
        let bytes = unsafe { slice(bytes, length, "bytes") }?;
        // SAFETY: the caller promises `weights` is NULL or a live set.
        let weights = unsafe { weights.as_ref() }.map(|w| &w.weights);
        let handle = make(&s.session, bytes, weights)?;
        // SAFETY: checked non-null above; the caller promises it is writable.
        unsafe { program.write(AccyProgram::new(s, handle)) };
        Ok(())
    })
}

/// Frees a program: its slot at once, and its code and plans once no scratch holds it (a
/// scratch keeps the program of its last invoke until its next invoke of another program, or
/// `accy_scratch_destroy`). Every copy of the handle is dead from then on.
/// Fails with `ACCY_STATUS_INVALID_HANDLE` when the handle is dead already, 0, or another
/// session's. Safe to call while another thread invokes the program: that call finishes
/// normally.
///
/// # Safety
/// `session` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn accy_program_release(
    session: *const AccySession,
    program: AccyProgram,
) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller promises `session` is NULL or live.
        let s = unsafe { session_ref(session) }?;
        s.session.release(program.handle(s)?)?;
        Ok(())
    })
}

/// How many buffers `accy_program_invoke` takes for the program: `*inputs` and `*outputs`
/// (either may be NULL when not wanted; both are cleared to 0 on entry).
///
/// # Safety
/// `session` is NULL or live; `inputs` and `outputs` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_program_io_count(
    session: *const AccySession,
    program: AccyProgram,
    inputs: *mut usize,
    outputs: *mut usize,
) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller promises each is NULL or writable.
        unsafe {
            clear(inputs, 0);
            clear(outputs, 0);
        }
        // SAFETY: the caller promises `session` is NULL or live.
        let s = unsafe { session_ref(session) }?;
        let h = program.handle(s)?;
        let counts = [
            (inputs, s.session.inputs(h)?.len()),
            (outputs, s.session.outputs(h)?.len()),
        ];
        // SAFETY: the caller promises each is NULL or writable.
        unsafe { write_optional(&counts) };
        Ok(())
    })
}

/// The most axes a value has (`accy_descriptor.dims` holds this many).
pub const ACCY_MAX_RANK: usize = 8;

/// Dtype codes in `accy_descriptor.dtype`: the codes of the wire format's dtype table
/// (`docs/wire-format.md` §8.1). 0 is never a dtype; a code this header does not name is a
/// dtype added by a newer library.
pub type AccyDtype = u32;
/// IEEE 754 binary32, 4 bytes.
pub const ACCY_DTYPE_F32: AccyDtype = 1;
/// IEEE 754 binary64, 8 bytes.
pub const ACCY_DTYPE_F64: AccyDtype = 2;
/// Two's-complement 32-bit integer.
pub const ACCY_DTYPE_I32: AccyDtype = 3;
/// Two's-complement 64-bit integer.
pub const ACCY_DTYPE_I64: AccyDtype = 4;
/// 8-bit unsigned integer.
pub const ACCY_DTYPE_U8: AccyDtype = 5;
/// One byte holding 0 (false) or 1 (true).
pub const ACCY_DTYPE_BOOL: AccyDtype = 6;

/// The code of a dtype.
fn dtype_code(dtype: DType) -> AccyDtype {
    match dtype {
        DType::F32 => ACCY_DTYPE_F32,
        DType::F64 => ACCY_DTYPE_F64,
        DType::I32 => ACCY_DTYPE_I32,
        DType::I64 => ACCY_DTYPE_I64,
        DType::U8 => ACCY_DTYPE_U8,
        DType::Bool => ACCY_DTYPE_BOOL,
        _ => 0,
    }
}

/// What a caller needs to size and type one input or output buffer. The caller sets `size`
/// to `sizeof(accy_descriptor)` before the call; the library fills the rest (a newer library
/// fills only the fields that fit in `size`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccyDescriptor {
    /// Set by the caller: `sizeof(accy_descriptor)`.
    pub size: usize,
    /// Element type: an `ACCY_DTYPE_*` code.
    pub dtype: AccyDtype,
    /// Number of axes (0 for a scalar), at most `ACCY_MAX_RANK`.
    pub rank: u32,
    /// Axis lengths, outermost first (row-major); entries from `rank` on are 0.
    pub dims: [u64; ACCY_MAX_RANK],
    /// The exact length in bytes the buffer must have.
    pub byte_size: usize,
    /// The alignment in bytes the buffer's address must have (the element's own: memory from
    /// `malloc` always qualifies).
    pub alignment: usize,
}

/// Which list a descriptor comes from.
#[derive(Clone, Copy)]
pub(crate) enum Io {
    Input,
    Output,
}

/// Fills `*out` with the descriptor of input or output `index` of a program.
///
/// # Safety
/// `session` is NULL or live; `out` is NULL or points to `out->size` writable bytes.
unsafe fn describe(
    session: *const AccySession,
    program: AccyProgram,
    io: Io,
    index: usize,
    out: *mut AccyDescriptor,
) -> Result<(), Failure> {
    // SAFETY: the caller promises `session` is NULL or live, and `out` as `fill_descriptor`
    // asks.
    unsafe {
        fill_descriptor(out, io, index, || {
            let s = session_ref(session)?;
            let h = program.handle(s)?;
            Ok(match io {
                Io::Input => s.session.inputs(h)?,
                Io::Output => s.session.outputs(h)?,
            })
        })
    }
}

/// Fills `*out` with descriptor `index` of the `io` list `list` gives: first checks `out`
/// and zeroes every field after `size`, so a failure (of `list` too) leaves it zeroed.
///
/// # Safety
/// `out` is NULL or points to `out->size` writable bytes.
pub(crate) unsafe fn fill_descriptor(
    out: *mut AccyDescriptor,
    io: Io,
    index: usize,
    list: impl FnOnce() -> Result<Vec<Descriptor>, Failure>,
) -> Result<(), Failure> {
    required(out, "descriptor")?;
    // SAFETY: non-null; the caller promises `out->size` writable bytes, and `size` is the
    // first field.
    let size = unsafe { out.cast::<usize>().read_unaligned() };
    let known = size_of::<AccyDescriptor>();
    if size < known {
        return Err(Failure::argument(format_args!(
            "accy_descriptor.size is {size}, less than the {known} bytes of the struct"
        )));
    }
    let empty = AccyDescriptor {
        size,
        dtype: 0,
        rank: 0,
        dims: [0; ACCY_MAX_RANK],
        byte_size: 0,
        alignment: 0,
    };
    // SAFETY: `known <= size` bytes are writable; write_unaligned asks nothing of alignment.
    unsafe { out.write_unaligned(empty) };
    let list = list()?;
    let what = match io {
        Io::Input => "input",
        Io::Output => "output",
    };
    let d: &Descriptor = list.get(index).ok_or_else(|| {
        Failure::argument(format_args!(
            "{what} {index} does not exist: there are {} {what}s",
            list.len()
        ))
    })?;
    if d.dims.len() > ACCY_MAX_RANK {
        return Err(Failure::argument(format_args!(
            "{what} {index} has {} axes, more than this header's accy_descriptor holds",
            d.dims.len()
        )));
    }
    let mut filled = empty;
    filled.dtype = dtype_code(d.dtype);
    filled.rank = d.dims.len() as u32;
    filled.dims[..d.dims.len()].copy_from_slice(&d.dims);
    filled.byte_size = d.byte_size;
    filled.alignment = d.alignment;
    // SAFETY: as above.
    unsafe { out.write_unaligned(filled) };
    Ok(())
}

/// Describes input `index` of the program (in the order `accy_program_invoke` takes inputs)
/// into `*descriptor`, whose `size` the caller has set. On failure every field after `size`
/// is 0. An index out of range is `ACCY_STATUS_INVALID_BUFFER`.
///
/// # Safety
/// `session` is NULL or live; `descriptor` is NULL or points to `descriptor->size` writable
/// bytes.
#[no_mangle]
pub unsafe extern "C" fn accy_program_input(
    session: *const AccySession,
    program: AccyProgram,
    index: usize,
    descriptor: *mut AccyDescriptor,
) -> AccyStatus {
    // SAFETY: the caller's promises are `describe`'s.
    guard(Status::LaunchFailed, || unsafe {
        describe(session, program, Io::Input, index, descriptor)
    })
}

/// Describes output `index` of the program; otherwise as `accy_program_input`.
///
/// # Safety
/// As `accy_program_input`.
#[no_mangle]
pub unsafe extern "C" fn accy_program_output(
    session: *const AccySession,
    program: AccyProgram,
    index: usize,
    descriptor: *mut AccyDescriptor,
) -> AccyStatus {
    // SAFETY: the caller's promises are `describe`'s.
    guard(Status::LaunchFailed, || unsafe {
        describe(session, program, Io::Output, index, descriptor)
    })
}
