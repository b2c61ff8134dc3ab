//! Session errors and their stable status codes.

use std::fmt;
use std::sync::Arc;

/// The inner error behind a session failure (a decode, verifier, compiler, loader, binding or
/// launch error), shared so that both the returned [`Error`] and [`crate::Session::last_cause`]
/// can hold it.
pub type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Every failure a session call can return. A caller matches on the variant to decide what to
/// do; [`Status::from`] turns it into a stable number for other languages. Variants built by
/// the error mapping carry the inner error as their [`std::error::Error::source`], which is
/// the authoritative cause of *this* failure even when many threads fail at once.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes are not a valid program: malformed wire bytes, or a program the verifier
    /// refuses; or, for `load_artifact`, bytes that are not an undamaged artifact or an
    /// artifact that fails validation. Retrying the same bytes cannot help.
    #[error("invalid program: {0}")]
    InvalidProgram(#[source] Cause),
    /// The bytes use a wire-format version (or a required section) this build does not know.
    /// A newer accy may accept them. For `load_artifact`: an artifact of another format
    /// version; recompile the program with this accy.
    #[error("unsupported version: {0}")]
    UnsupportedVersion(#[source] Cause),
    /// The handle names no live program: released (its generation moved on), never issued by
    /// this session, or out of range. Not retryable.
    #[error("invalid handle (index {index}, generation {generation})")]
    InvalidHandle {
        /// The handle's slot index.
        index: u32,
        /// The handle's generation.
        generation: u32,
    },
    /// A buffer passed to `invoke` has the wrong count, size or alignment, or overlaps another;
    /// the cause says which and gives every number. Fix the buffers and retry.
    #[error("invalid buffer: {0}")]
    InvalidBuffer(#[source] Cause),
    /// All [`crate::MAX_PROGRAMS`] slots hold live programs; release one and retry.
    #[error("too many programs: all {} slots are in use", crate::MAX_PROGRAMS)]
    TooManyPrograms,
    /// Memory (or executable memory) could not be allocated. May succeed later.
    #[error("out of memory: {0}")]
    OutOfMemory(#[source] Cause),
    /// A valid program could not be compiled or loaded for this CPU (for example the CPU lacks
    /// a feature the code needs, or a loaded artifact's code is for another architecture; the
    /// cause names the architecture or the missing features). Retrying the same program on
    /// the same machine cannot help.
    #[error("compile failed: {0}")]
    CompileFailed(#[source] Cause),
    /// Running the compiled program failed (a kernel reported an error status).
    #[error("launch failed: {0}")]
    LaunchFailed(#[source] Cause),
    /// A model definition, region, command or plan breaks one of the models API's rules
    /// (see `crate::model`); the cause names the rule and gives its numbers. Retrying the
    /// same request cannot help.
    #[error("invalid model: {0}")]
    InvalidModel(#[source] Cause),
    /// No inference slot of a prepared model could be had at once (`PreparedModel::try_run`):
    /// all are in use, or a free one is due to a waiting caller. Retry later, or call `run`,
    /// which waits its turn.
    #[error("busy: no free inference slot of {capacity} for a caller that does not wait")]
    Busy {
        /// The prepared model's slot count.
        capacity: usize,
    },
}

impl Error {
    /// The inner error, if this failure went through the error mapping.
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            Error::InvalidProgram(c)
            | Error::UnsupportedVersion(c)
            | Error::InvalidBuffer(c)
            | Error::OutOfMemory(c)
            | Error::CompileFailed(c)
            | Error::LaunchFailed(c)
            | Error::InvalidModel(c) => Some(c),
            Error::InvalidHandle { .. } | Error::TooManyPrograms | Error::Busy { .. } => None,
        }
    }
}

/// Stable numbers for reporting failures across a language boundary. `Ok` is 0 and the codes
/// run to 10 in this order; a code, once assigned, never changes meaning, and new codes are only
/// ever appended, so a host must treat an unknown code as a generic failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// [`Error::InvalidProgram`].
    InvalidProgram = 1,
    /// [`Error::UnsupportedVersion`].
    UnsupportedVersion = 2,
    /// [`Error::InvalidHandle`].
    InvalidHandle = 3,
    /// [`Error::InvalidBuffer`].
    InvalidBuffer = 4,
    /// [`Error::TooManyPrograms`].
    TooManyPrograms = 5,
    /// [`Error::OutOfMemory`].
    OutOfMemory = 6,
    /// [`Error::CompileFailed`].
    CompileFailed = 7,
    /// [`Error::LaunchFailed`].
    LaunchFailed = 8,
    /// [`Error::InvalidModel`].
    InvalidModel = 9,
    /// [`Error::Busy`].
    Busy = 10,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 11] = [
        Status::Ok,
        Status::InvalidProgram,
        Status::UnsupportedVersion,
        Status::InvalidHandle,
        Status::InvalidBuffer,
        Status::TooManyPrograms,
        Status::OutOfMemory,
        Status::CompileFailed,
        Status::LaunchFailed,
        Status::InvalidModel,
        Status::Busy,
    ];

    /// The stable number.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The status a number stands for, or `None` for a code this build does not know.
    pub fn from_code(code: u32) -> Option<Status> {
        Status::ALL.get(code as usize).copied()
    }

    /// The status of a call's result: `Ok` or the error's code. This and `From<&Error>` are the
    /// only places errors become numbers.
    pub fn of<T>(result: &Result<T, Error>) -> Status {
        match result {
            Ok(_) => Status::Ok,
            Err(e) => Status::from(e),
        }
    }
}

impl From<&Error> for Status {
    fn from(e: &Error) -> Status {
        match e {
            Error::InvalidProgram(_) => Status::InvalidProgram,
            Error::UnsupportedVersion(_) => Status::UnsupportedVersion,
            Error::InvalidHandle { .. } => Status::InvalidHandle,
            Error::InvalidBuffer(_) => Status::InvalidBuffer,
            Error::TooManyPrograms => Status::TooManyPrograms,
            Error::OutOfMemory(_) => Status::OutOfMemory,
            Error::CompileFailed(_) => Status::CompileFailed,
            Error::LaunchFailed(_) => Status::LaunchFailed,
            Error::InvalidModel(_) => Status::InvalidModel,
            Error::Busy { .. } => Status::Busy,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Status::Ok => "ok",
            Status::InvalidProgram => "invalid_program",
            Status::UnsupportedVersion => "unsupported_version",
            Status::InvalidHandle => "invalid_handle",
            Status::InvalidBuffer => "invalid_buffer",
            Status::TooManyPrograms => "too_many_programs",
            Status::OutOfMemory => "out_of_memory",
            Status::CompileFailed => "compile_failed",
            Status::LaunchFailed => "launch_failed",
            Status::InvalidModel => "invalid_model",
            Status::Busy => "busy",
        };
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_in_order() {
        let names = [
            "ok",
            "invalid_program",
            "unsupported_version",
            "invalid_handle",
            "invalid_buffer",
            "too_many_programs",
            "out_of_memory",
            "compile_failed",
            "launch_failed",
            "invalid_model",
            "busy",
        ];
        for (i, s) in Status::ALL.iter().enumerate() {
            assert_eq!(s.code(), i as u32);
            assert_eq!(s.to_string(), names[i]);
            assert_eq!(Status::from_code(i as u32), Some(*s));
        }
        assert_eq!(Status::from_code(11), None);
    }

    #[test]
    fn every_error_maps_to_its_status_and_keeps_its_cause() {
        let cause: Cause = Arc::new(std::io::Error::other("inner"));
        let cases = [
            (Error::InvalidProgram(cause.clone()), Status::InvalidProgram),
            (
                Error::UnsupportedVersion(cause.clone()),
                Status::UnsupportedVersion,
            ),
            (
                Error::InvalidHandle {
                    index: 1,
                    generation: 2,
                },
                Status::InvalidHandle,
            ),
            (Error::InvalidBuffer(cause.clone()), Status::InvalidBuffer),
            (Error::TooManyPrograms, Status::TooManyPrograms),
            (Error::OutOfMemory(cause.clone()), Status::OutOfMemory),
            (Error::CompileFailed(cause.clone()), Status::CompileFailed),
            (Error::LaunchFailed(cause.clone()), Status::LaunchFailed),
            (Error::InvalidModel(cause.clone()), Status::InvalidModel),
            (Error::Busy { capacity: 2 }, Status::Busy),
        ];
        for (e, s) in cases {
            assert_eq!(Status::from(&e), s);
            assert_eq!(Status::of::<()>(&Err(e.clone())), s);
            let has_cause = std::error::Error::source(&e).is_some();
            assert_eq!(has_cause, e.cause().is_some());
            if let Some(c) = e.cause() {
                assert_eq!(c.to_string(), "inner");
            }
        }
        assert_eq!(Status::of(&Ok::<(), Error>(())), Status::Ok);
    }
}
