//! Running programs: per-thread scratch and `accy_program_invoke`.

use std::ffi::c_void;

use accy_session::{Scratch, Status};
use smallvec::SmallVec;

use crate::args::{create, destroy, slice, slice_mut};
use crate::program::AccyProgram;
use crate::session::{session_ref, AccySession};
use crate::status::{guard, AccyStatus, Failure};

/// Reusable working memory for invocations. Opaque to C. One call at a time uses it: give each
/// thread that invokes its own (it may move between threads between calls). It grows to the
/// largest program it has served, after which invoking allocates nothing. Not tied to a
/// session: one scratch may serve programs of several sessions.
#[derive(Debug)]
pub struct AccyScratch {
    scratch: Scratch,
}

/// Creates an empty scratch (it allocates on first use). `*scratch` receives it (NULL on
/// failure); the caller frees it with `accy_scratch_destroy`.
///
/// # Safety
/// `scratch` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_scratch_create(scratch: *mut *mut AccyScratch) -> AccyStatus {
    // SAFETY: the caller promises `scratch` is NULL or writable.
    guard(Status::LaunchFailed, || unsafe {
        create(scratch, "scratch", || {
            Ok(AccyScratch {
                scratch: Scratch::new(),
            })
        })
    })
}

/// Frees a scratch. NULL is accepted and does nothing. Returns `ACCY_STATUS_OK`.
///
/// # Safety
/// `scratch` is NULL or came from `accy_scratch_create` and has not been destroyed; no call
/// using it is running.
#[no_mangle]
pub unsafe extern "C" fn accy_scratch_destroy(scratch: *mut AccyScratch) -> AccyStatus {
    // SAFETY: the caller's promises are `destroy`'s.
    unsafe { destroy(scratch) }
}

/// An input buffer: `byte_size` bytes at `data`, only read. `data` may be NULL when
/// `byte_size` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AccyConstBuffer {
    /// The first byte.
    pub data: *const c_void,
    /// The number of bytes.
    pub byte_size: usize,
}

/// An output buffer: `byte_size` bytes at `data`, written by the call. `data` may be NULL
/// when `byte_size` is 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AccyBuffer {
    /// The first byte.
    pub data: *mut c_void,
    /// The number of bytes.
    pub byte_size: usize,
}

/// The first pair of buffers that share a byte: an output with an input or another output.
/// Checked on addresses before any Rust slice exists, since overlapping `&mut` slices may not
/// even be formed.
fn overlap(inputs: &[AccyConstBuffer], outputs: &[AccyBuffer]) -> Option<String> {
    let range = |data: usize, len: usize| data..data.saturating_add(len);
    let meets = |a: std::ops::Range<usize>, b: std::ops::Range<usize>| {
        !a.is_empty() && !b.is_empty() && a.start < b.end && b.start < a.end
    };
    for (o, out) in outputs.iter().enumerate() {
        let r = range(out.data as usize, out.byte_size);
        for (i, inp) in inputs.iter().enumerate() {
            if meets(r.clone(), range(inp.data as usize, inp.byte_size)) {
                return Some(format!("output {o} overlaps input {i}"));
            }
        }
        for (p, prev) in outputs[..o].iter().enumerate() {
            if meets(r.clone(), range(prev.data as usize, prev.byte_size)) {
                return Some(format!("output {o} overlaps output {p}"));
            }
        }
    }
    None
}

/// Runs a program on caller buffers: `inputs` and `outputs` in the order of
/// `accy_program_input` and `accy_program_output`. Each buffer must have exactly its
/// descriptor's `byte_size` and at least its `alignment`, and no output may share a byte with
/// an input or another output. Inputs are only read. `scratch` is this call's working memory.
/// On failure the outputs' contents are unspecified.
///
/// Fails with `ACCY_STATUS_INVALID_BUFFER` (a wrong count, size or alignment, an overlap, a
/// NULL pointer with a nonzero length, a NULL scratch), `ACCY_STATUS_INVALID_HANDLE`,
/// `ACCY_STATUS_OUT_OF_MEMORY` (scratch could not grow) or `ACCY_STATUS_LAUNCH_FAILED`.
///
/// May run on many threads at once for one session, for the same program or different ones,
/// each call with its own scratch and output buffers. Generated code runs on the calling thread
/// (and the session's pool threads) and uses up to 64 KiB of the calling thread's stack.
///
/// # Safety
/// `session` is NULL or live; `scratch` is NULL or a live scratch no other call is using;
/// `inputs` is NULL (then `input_count` is 0) or points to `input_count` buffers, likewise
/// `outputs`; each buffer's `data` holds `byte_size` readable (inputs) or writable (outputs)
/// bytes that no other thread writes during the call.
#[no_mangle]
pub unsafe extern "C" fn accy_program_invoke(
    session: *const AccySession,
    program: AccyProgram,
    scratch: *mut AccyScratch,
    inputs: *const AccyConstBuffer,
    input_count: usize,
    outputs: *const AccyBuffer,
    output_count: usize,
) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller promises `session` is NULL or live.
        let s = unsafe { session_ref(session) }?;
        let handle = program.handle(s)?;
        // SAFETY: the caller promises a non-null `scratch` is live and used by no other call.
        let scratch =
            unsafe { scratch.as_mut() }.ok_or_else(|| Failure::argument("scratch is NULL"))?;
        // SAFETY: the caller's promises for the buffers are `byte_views`'.
        let (input_bytes, mut output_bytes) =
            unsafe { byte_views(inputs, input_count, outputs, output_count) }?;
        s.session.invoke(
            handle,
            &mut scratch.scratch,
            &input_bytes,
            &mut output_bytes,
        )?;
        Ok(())
    })
}

/// Byte slices inline up to this many buffers per direction, so a warm call allocates nothing.
pub(crate) type Views<T> = SmallVec<[T; 8]>;

/// A call's inputs and outputs as byte slices.
pub(crate) type ByteViews<'a> = (Views<&'a [u8]>, Views<&'a mut [u8]>);

/// The caller's input and output buffers as byte slices, after the ABI's checks: NULL only
/// with a zero count or length, and no output sharing a byte with another buffer (checked on
/// addresses before any slice exists, since overlapping `&mut` slices may not be formed).
///
/// # Safety
/// `inputs` is NULL (then `input_count` is 0) or points to `input_count` buffers, likewise
/// `outputs`; each buffer's `data` holds `byte_size` readable (inputs) or writable (outputs)
/// bytes that no other thread writes while `'a` lasts.
pub(crate) unsafe fn byte_views<'a>(
    inputs: *const AccyConstBuffer,
    input_count: usize,
    outputs: *const AccyBuffer,
    output_count: usize,
) -> Result<ByteViews<'a>, Failure> {
    // SAFETY: the caller promises `input_count` buffers at a non-null `inputs`.
    let inputs = unsafe { slice(inputs, input_count, "inputs") }?;
    // SAFETY: likewise for `outputs`.
    let outputs = unsafe { slice(outputs, output_count, "outputs") }?;
    if let Some(what) = overlap(inputs, outputs) {
        return Err(Failure::argument(what));
    }
    let mut input_bytes: Views<&[u8]> = SmallVec::with_capacity(inputs.len());
    for (i, b) in inputs.iter().enumerate() {
        // SAFETY: the caller promises `byte_size` readable bytes at `data`, unwritten while
        // `'a` lasts.
        let bytes = unsafe {
            slice(
                b.data.cast::<u8>(),
                b.byte_size,
                format_args!("inputs[{i}].data"),
            )
        }?;
        input_bytes.push(bytes);
    }
    let mut output_bytes: Views<&mut [u8]> = SmallVec::with_capacity(outputs.len());
    for (i, b) in outputs.iter().enumerate() {
        // SAFETY: the caller promises `byte_size` writable bytes at `data`, used by no other
        // thread; no output shares a byte with another buffer (checked above), so this `&mut`
        // is the only reference to them.
        let bytes = unsafe {
            slice_mut(
                b.data.cast::<u8>(),
                b.byte_size,
                format_args!("outputs[{i}].data"),
            )
        }?;
        output_bytes.push(bytes);
    }
    Ok((input_bytes, output_bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(at: usize, len: usize) -> AccyConstBuffer {
        AccyConstBuffer {
            data: at as *const c_void,
            byte_size: len,
        }
    }

    fn output(at: usize, len: usize) -> AccyBuffer {
        AccyBuffer {
            data: at as *mut c_void,
            byte_size: len,
        }
    }

    #[test]
    fn overlaps_are_found_on_addresses_and_empty_buffers_never_overlap() {
        let ins = [input(0x1000, 16), input(0x1010, 16)];
        assert_eq!(overlap(&ins, &[output(0x2000, 8), output(0x2008, 8)]), None);
        assert_eq!(
            overlap(&ins, &[output(0x2000, 8), output(0x101f, 4)]),
            Some("output 1 overlaps input 1".into())
        );
        assert_eq!(
            overlap(&ins, &[output(0x2000, 8), output(0x2007, 4)]),
            Some("output 1 overlaps output 0".into())
        );
        assert_eq!(overlap(&ins, &[output(0x1000, 0), output(0x1000, 0)]), None);
    }
}
