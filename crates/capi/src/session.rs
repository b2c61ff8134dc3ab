//! Sessions: creating one from an options struct, destroying it, and what it reports.

use std::ffi::{c_char, CString};
use std::sync::atomic::{AtomicU32, Ordering};

use accy_session::{Session, SessionOptions, Status};

use crate::args::{c_str, clear, create, destroy};
use crate::status::{guard, AccyStatus, Failure};

/// How a session is set up. Zero means "the default" in every field, so a caller fills it
/// with `accy_session_options options = {.size = sizeof options};` and sets what it wants.
///
/// The struct only ever grows at its end. `size` tells the library which version the caller
/// compiled against: it reads the fields that fit in `size` bytes and defaults the rest, and
/// refuses a larger `size` whose bytes beyond the fields it knows are not all zero (an option
/// it cannot honour must not be ignored silently).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AccySessionOptions {
    /// `sizeof(accy_session_options)` as the caller's header declares it.
    pub size: usize,
    /// Threads working on one invocation: the caller plus `threads - 1` pool threads the
    /// session starts (1 starts none). 0: one per CPU this process may use. More than 4096 is
    /// `ACCY_STATUS_INVALID_BUFFER` (most likely an uninitialised field).
    pub threads: usize,
    /// Nonzero: exact mode. Float sums are not reassociated, so every result is bit-identical
    /// to accy's reference interpreter (up to the payload and sign of NaNs), on every CPU and
    /// thread count. 0: sums may be reassociated for speed, within each op's documented error
    /// bound.
    pub exact: u32,
    /// NULL: the best code generator for this CPU (lowered by the `ACCY_CPU_FEATURES_MAX`
    /// environment variable). Otherwise a NUL-terminated name such as `"x64-avx2"`; a name
    /// this build does not know, or one this CPU cannot run, is
    /// `ACCY_STATUS_COMPILE_FAILED`. Read only during the call.
    pub target: *const c_char,
    /// Nonzero: runs flush subnormal floats to zero (as ONNX Runtime's
    /// `session.set_denormal_as_zero`): subnormal inputs of float arithmetic read as zero and
    /// subnormal results are written as zero, so results differ from the interpreter's where
    /// a subnormal appears, and underflowing work (an attention's products of far-apart
    /// scores) is not slowed down tens of times by the CPU. 0: IEEE gradual underflow. Added
    /// in the second version of this struct; a first-version caller gets 0.
    pub flush_subnormals: u32,
}

/// The size of the first version of [`AccySessionOptions`] (up to and including `target`):
/// the smallest `size` a caller may pass.
const FIRST_VERSION_SIZE: usize =
    std::mem::offset_of!(AccySessionOptions, target) + size_of::<*const c_char>();

impl AccySessionOptions {
    /// The options a NULL pointer or zeroed fields stand for.
    const DEFAULT: AccySessionOptions = AccySessionOptions {
        size: size_of::<AccySessionOptions>(),
        threads: 0,
        exact: 0,
        target: std::ptr::null(),
        flush_subnormals: 0,
    };
}

/// A session: compiled programs in up to 64 slots, and the threads that run them. Opaque to C;
/// created by `accy_session_create`, freed by `accy_session_destroy`.
#[derive(Debug)]
pub struct AccySession {
    pub(crate) session: Session,
    /// Stamped into every program handle this session issues, so that a handle passed to
    /// another session is recognised (`ACCY_STATUS_INVALID_HANDLE`) instead of naming that
    /// session's program in the same slot.
    pub(crate) tag: u32,
    /// [`Session::target_name`] as a C string, for `accy_session_info`.
    target: CString,
}

/// Tags for new sessions (24 bits are used; after 2^24 sessions tags repeat, which only
/// weakens the foreign-handle check).
static NEXT_TAG: AtomicU32 = AtomicU32::new(0);

/// The most threads a session may be asked for. The pool starts them all at once, so a garbage
/// count must be refused before it gets there.
const MAX_THREADS: usize = 4096;

/// The options a caller passed, checked against the rules of [`AccySessionOptions`].
///
/// # Safety
/// If `options` is not NULL it must point to `options->size` readable bytes, whose `target`
/// is NULL or a NUL-terminated string not written during the call.
pub(crate) unsafe fn read_options(
    options: *const AccySessionOptions,
) -> Result<SessionOptions, Failure> {
    if options.is_null() {
        return to_session_options(&AccySessionOptions::DEFAULT);
    }
    // SAFETY: non-null; the caller promises `size` readable bytes, and `size` is the struct's
    // first field, so at least it is readable.
    let size = unsafe { options.cast::<usize>().read_unaligned() };
    let known = size_of::<AccySessionOptions>();
    if size < FIRST_VERSION_SIZE {
        return Err(Failure::argument(format_args!(
            "accy_session_options.size is {size}, less than the {FIRST_VERSION_SIZE} bytes of \
             the first version of the struct"
        )));
    }
    // SAFETY: the caller promises `size` readable bytes; the slice covers those past the
    // `known` bytes of this library's struct, and is empty when `size <= known`.
    let extra = unsafe {
        std::slice::from_raw_parts(
            options.cast::<u8>().add(known.min(size)),
            size.saturating_sub(known),
        )
    };
    if let Some(at) = extra.iter().position(|&b| b != 0) {
        return Err(Failure::argument(format_args!(
            "accy_session_options.size is {size} and byte {} is not zero: the caller sets an \
             option this library ({known}-byte struct) does not know",
            known + at
        )));
    }
    // The fields of the caller's version; the newer ones keep their defaults (zero).
    let mut read = AccySessionOptions::DEFAULT;
    // SAFETY: the caller promises `size` readable bytes, of which the first `min(size, known)`
    // are copied into `read`, a whole struct of `known` bytes; every field is a plain integer
    // or a raw pointer, valid for any bytes; the regions do not overlap (`read` is a local).
    unsafe {
        std::ptr::copy_nonoverlapping(
            options.cast::<u8>(),
            (&raw mut read).cast::<u8>(),
            size.min(known),
        );
    }
    to_session_options(&read)
}

/// The session options `options` stand for.
fn to_session_options(options: &AccySessionOptions) -> Result<SessionOptions, Failure> {
    let mut out = SessionOptions::default()
        .with_reassociate_float_sums(options.exact == 0)
        .with_flush_subnormals(options.flush_subnormals != 0);
    if options.threads > MAX_THREADS {
        return Err(Failure::argument(format_args!(
            "accy_session_options.threads is {}, more than the {MAX_THREADS} a session may start",
            options.threads
        )));
    }
    if options.threads != 0 {
        out = out.with_threads(options.threads);
    }
    // SAFETY: the caller of `accy_session_create` or `accy_model_create` (through
    // `read_options`) promises `target` is NULL or a NUL-terminated string that is not
    // written during the call.
    if let Some(name) = unsafe { c_str(options.target, "accy_session_options.target") }? {
        let names = SessionOptions::target_names();
        let known = names.iter().find(|n| **n == name).ok_or_else(|| {
            Failure::new(
                Status::CompileFailed,
                format!(
                    "compile failed: no code generator is called `{name}` (this build has: {})",
                    names.join(", ")
                ),
            )
        })?;
        out = out.with_target(known);
    }
    Ok(out)
}

/// Creates a session. `options` may be NULL for the defaults (see `accy_session_options`).
/// On success `*session` receives a session the caller frees with `accy_session_destroy`; on
/// failure it is NULL. `session` must not be NULL.
///
/// Fails with `ACCY_STATUS_INVALID_BUFFER` (a bad `options->size`, a NULL `session`),
/// `ACCY_STATUS_COMPILE_FAILED` (an unknown target, or one this CPU cannot run) or
/// `ACCY_STATUS_OUT_OF_MEMORY` (the threads could not be started).
///
/// # Safety
/// `options` is NULL or points to `options->size` readable bytes; `session` is NULL or valid
/// for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn accy_session_create(
    options: *const AccySessionOptions,
    session: *mut *mut AccySession,
) -> AccyStatus {
    // SAFETY: the caller promises `session` is NULL or writable, and `options` NULL or
    // `options->size` readable bytes.
    guard(Status::CompileFailed, || unsafe {
        create(session, "session", || {
            let created = Session::with_options(read_options(options)?)?;
            let target = CString::new(created.target_name()).unwrap_or_default();
            Ok(AccySession {
                session: created,
                tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff,
                target,
            })
        })
    })
}

/// Destroys a session: releases every program it still holds (see `accy_program_release`
/// for what a scratch keeps) and stops its threads. NULL is
/// accepted and does nothing. Returns `ACCY_STATUS_OK`.
///
/// # Safety
/// `session` is NULL or came from `accy_session_create` and has not been destroyed; no other
/// call on it is running or will be made (every program handle of it is dead afterwards).
#[no_mangle]
pub unsafe extern "C" fn accy_session_destroy(session: *mut AccySession) -> AccyStatus {
    // SAFETY: the caller's promises are `destroy`'s.
    unsafe { destroy(session) }
}

/// The session a C caller passes, or an invalid-handle failure for NULL.
///
/// # Safety
/// `session` is NULL or a live session from `accy_session_create`.
pub(crate) unsafe fn session_ref<'a>(
    session: *const AccySession,
) -> Result<&'a AccySession, Failure> {
    // SAFETY: the caller promises a non-null `session` is live for the call.
    unsafe { session.as_ref() }.ok_or_else(|| Failure::handle("the session is NULL"))
}

/// The name of the code generator a session uses (e.g. `"x64-avx2"`) and the most threads that
/// work on one of its invocations. `target` receives a NUL-terminated string that lives as long
/// as the session; either out-parameter may be NULL when not wanted.
///
/// # Safety
/// `session` is NULL or live; `target` and `threads` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn accy_session_info(
    session: *const AccySession,
    target: *mut *const c_char,
    threads: *mut usize,
) -> AccyStatus {
    guard(Status::LaunchFailed, || {
        // SAFETY: the caller promises each is NULL or writable.
        unsafe {
            clear(target, std::ptr::null());
            clear(threads, 0);
        }
        // SAFETY: the caller promises `session` is NULL or live.
        let s = unsafe { session_ref(session) }?;
        if !target.is_null() {
            // SAFETY: non-null, and the caller promises it is writable.
            unsafe { target.write(s.target.as_ptr()) };
        }
        if !threads.is_null() {
            // SAFETY: as above.
            unsafe { threads.write(s.session.threads()) };
        }
        Ok(())
    })
}
