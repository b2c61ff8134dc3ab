//! Status codes, the calling thread's error message, and the guard every entry point runs its
//! body in (clearing or setting the message, and catching panics).

use std::any::Any;
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};

use accy_session::{Error, Status};

/// What every fallible function returns: `ACCY_STATUS_OK` (0) or one of the session's stable
/// failure codes. Codes are only ever appended, so a caller must treat a code it does not know
/// as a failure (and can still print `accy_last_error_message()`).
pub type AccyStatus = u32;

/// Success.
pub const ACCY_STATUS_OK: AccyStatus = 0;
/// The bytes are not a valid program (malformed, or refused by the verifier). Retrying the
/// same bytes cannot help.
pub const ACCY_STATUS_INVALID_PROGRAM: AccyStatus = 1;
/// The bytes use a wire-format version this build does not know; a newer accy may accept
/// them.
pub const ACCY_STATUS_UNSUPPORTED_VERSION: AccyStatus = 2;
/// The program handle names no live program of this session: released, never issued, or
/// issued by another session.
pub const ACCY_STATUS_INVALID_HANDLE: AccyStatus = 3;
/// A buffer or argument is unusable: wrong count, size or alignment, overlapping outputs, a
/// null pointer with a nonzero length, a null out-parameter, an options or descriptor struct
/// whose `size` this library cannot use, an index out of range. Fix it and retry.
pub const ACCY_STATUS_INVALID_BUFFER: AccyStatus = 4;
/// All 64 program slots of the session are in use; release one and retry.
pub const ACCY_STATUS_TOO_MANY_PROGRAMS: AccyStatus = 5;
/// Memory could not be allocated (for weights, code, scratch or threads). May succeed later.
pub const ACCY_STATUS_OUT_OF_MEMORY: AccyStatus = 6;
/// A valid program could not be compiled or loaded for this CPU, or the session could not be
/// set up (an unknown target name, a target this CPU cannot run). Also what the calls that
/// compile return when accy panicked inside them (a bug in accy).
pub const ACCY_STATUS_COMPILE_FAILED: AccyStatus = 7;
/// Running the program failed. Also what every call that does not compile returns when accy
/// panicked inside it (a bug in accy).
pub const ACCY_STATUS_LAUNCH_FAILED: AccyStatus = 8;
/// A model or plan breaks one of the models API's rules (the message names it): from
/// `accy_model_create` and `accy_model_prepare`.
pub const ACCY_STATUS_INVALID_MODEL: AccyStatus = 9;
/// No inference slot of a plan could be had at once: from `accy_prepared_try_run`.
pub const ACCY_STATUS_BUSY: AccyStatus = 10;

/// A failure on its way to the C caller: its status and its message.
#[derive(Debug)]
pub(crate) struct Failure {
    status: Status,
    message: String,
}

impl Failure {
    /// A failure the C layer found in its arguments (a null pointer, a bad struct size, an
    /// index out of range): [`Status::InvalidBuffer`].
    pub(crate) fn argument(message: impl fmt::Display) -> Failure {
        Failure::new(Status::InvalidBuffer, format!("invalid buffer: {message}"))
    }

    /// A program handle this session cannot use: [`Status::InvalidHandle`].
    pub(crate) fn handle(message: impl fmt::Display) -> Failure {
        Failure::new(Status::InvalidHandle, format!("invalid handle: {message}"))
    }

    pub(crate) fn new(status: Status, message: String) -> Failure {
        Failure { status, message }
    }
}

/// The one place a session [`Error`] becomes a status and a message: the session's own code,
/// and the error's text followed by any deeper causes it does not already print.
impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let mut message = e.to_string();
        let mut source = e.cause().and_then(|c| c.source());
        while let Some(s) = source {
            let text = s.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = s.source();
        }
        Failure::new(Status::from(&e), message)
    }
}

thread_local! {
    /// The message of the calling thread's most recent failed call; `None` after a success.
    static MESSAGE: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Replaces the calling thread's message (`None` clears it). During thread teardown, when the
/// thread-local is gone, the message is dropped.
fn set_message(message: Option<String>) {
    let message = message.map(|m| {
        // A name from wire bytes may hold a NUL; C strings cannot.
        CString::new(m.replace('\0', "\\0")).unwrap_or_default()
    });
    let _ = MESSAGE.try_with(|m| *m.borrow_mut() = message);
}

/// The text of a panic's payload.
fn panic_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(a panic without a message)"
    }
}

/// Runs an entry point's body: on success clears the thread's message and returns
/// [`ACCY_STATUS_OK`]; on failure records the message and returns the code. A panic is caught
/// here, so none crosses the C boundary: it returns `on_panic` with a message that starts with
/// `internal error`.
pub(crate) fn guard(on_panic: Status, body: impl FnOnce() -> Result<(), Failure>) -> AccyStatus {
    // AssertUnwindSafe: after a panic the caller only gets a status; the session's own locks
    // tolerate poisoning, and no C-visible state is left half-written (out-parameters are
    // written last).
    let (status, message) = match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => (Status::Ok, None),
        Ok(Err(f)) => (f.status, Some(f.message)),
        Err(payload) => (
            on_panic,
            Some(format!(
                "internal error (accy panicked; please report it): {}",
                panic_text(payload.as_ref())
            )),
        ),
    };
    set_message(message);
    status.code()
}

/// The message of the calling thread's most recent failed accy call: a NUL-terminated UTF-8
/// string, empty when that call succeeded (or there was none). Each thread has its own, so
/// concurrent callers never see each other's messages. Never NULL.
///
/// The pointer stays valid until the calling thread's next accy call (other than this one and
/// the two that never fail, `accy_abi_version` and `accy_status_name`) or until the thread
/// exits; copy the text to keep it. Messages are for people: match on the status code, never on
/// the text.
#[no_mangle]
pub extern "C" fn accy_last_error_message() -> *const c_char {
    MESSAGE
        .try_with(|m| m.borrow().as_ref().map(|s| s.as_ptr()))
        .ok()
        .flatten()
        .unwrap_or(c"".as_ptr())
}

/// The name of a status code (`"ok"`, `"invalid_program"`, …, `"busy"`), or
/// `"unknown"` for a code this build does not know (a newer library's). A static
/// NUL-terminated string; never NULL.
#[no_mangle]
pub extern "C" fn accy_status_name(status: AccyStatus) -> *const c_char {
    match Status::from_code(status) {
        Some(Status::Ok) => c"ok",
        Some(Status::InvalidProgram) => c"invalid_program",
        Some(Status::UnsupportedVersion) => c"unsupported_version",
        Some(Status::InvalidHandle) => c"invalid_handle",
        Some(Status::InvalidBuffer) => c"invalid_buffer",
        Some(Status::TooManyPrograms) => c"too_many_programs",
        Some(Status::OutOfMemory) => c"out_of_memory",
        Some(Status::CompileFailed) => c"compile_failed",
        Some(Status::LaunchFailed) => c"launch_failed",
        Some(Status::InvalidModel) => c"invalid_model",
        Some(Status::Busy) => c"busy",
        None => c"unknown",
    }
    .as_ptr()
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    fn message() -> String {
        // SAFETY: `accy_last_error_message` returns a NUL-terminated string that stays valid
        // until this thread's next accy call; it is copied at once.
        unsafe { CStr::from_ptr(accy_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn the_constants_are_the_sessions_codes_and_names() {
        let constants = [
            ACCY_STATUS_OK,
            ACCY_STATUS_INVALID_PROGRAM,
            ACCY_STATUS_UNSUPPORTED_VERSION,
            ACCY_STATUS_INVALID_HANDLE,
            ACCY_STATUS_INVALID_BUFFER,
            ACCY_STATUS_TOO_MANY_PROGRAMS,
            ACCY_STATUS_OUT_OF_MEMORY,
            ACCY_STATUS_COMPILE_FAILED,
            ACCY_STATUS_LAUNCH_FAILED,
            ACCY_STATUS_INVALID_MODEL,
            ACCY_STATUS_BUSY,
        ];
        assert_eq!(constants.len(), Status::ALL.len());
        for (constant, status) in constants.into_iter().zip(Status::ALL) {
            assert_eq!(constant, status.code());
            // SAFETY: `accy_status_name` returns a static NUL-terminated string.
            let name = unsafe { CStr::from_ptr(accy_status_name(constant)) };
            assert_eq!(name.to_str().unwrap(), status.to_string());
        }
        // SAFETY: as above.
        let unknown = unsafe { CStr::from_ptr(accy_status_name(11)) };
        assert_eq!(unknown.to_str().unwrap(), "unknown");
    }

    #[test]
    fn the_guard_records_failures_clears_on_success_and_catches_panics() {
        assert_eq!(guard(Status::LaunchFailed, || Ok(())), ACCY_STATUS_OK);
        assert_eq!(message(), "");
        let status = guard(Status::LaunchFailed, || {
            Err(Failure::argument("bytes is null\0but 3 long"))
        });
        assert_eq!(status, ACCY_STATUS_INVALID_BUFFER);
        assert_eq!(message(), "invalid buffer: bytes is null\\0but 3 long");
        // Another thread has its own message.
        std::thread::spawn(|| assert_eq!(message(), ""))
            .join()
            .unwrap();
        assert_eq!(guard(Status::CompileFailed, || panic!("boom")), 7);
        assert!(message().starts_with("internal error") && message().ends_with("boom"));
        let owned = guard(Status::LaunchFailed, || panic!("{} {}", "owned", 8));
        assert_eq!(owned, ACCY_STATUS_LAUNCH_FAILED);
        assert!(message().ends_with("owned 8"), "{}", message());
        assert_eq!(guard(Status::LaunchFailed, || Ok(())), ACCY_STATUS_OK);
        assert_eq!(message(), "");
    }
}
