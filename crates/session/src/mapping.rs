//! The one place where inner errors become session [`Error`]s.

use std::sync::Arc;

use accy_artifact::model::ModelPlanError;
use accy_artifact::SerialError;
use accy_executable::{
    BindingError, CodeMemoryError, CpuError, LaunchError, LoadError, PoolError, PrepareError,
    RunError, WeightError,
};
use accy_lower::{CompileError, LookupError};
use accy_wire::DecodeError;

use crate::Error;

/// An inner error a session call can run into, before it is mapped.
#[derive(Debug)]
pub(crate) enum Inner {
    Decode(DecodeError),
    /// Bytes given to `load_artifact` (or an artifact `compile_artifact` could not write).
    Artifact(SerialError),
    Compile(CompileError),
    Load(LoadError),
    Bind(BindingError),
    Launch(LaunchError),
    Cpu(CpuError),
    Lookup(LookupError),
    Pool(PoolError),
    /// A failure the session itself detected, with its message.
    Session(SessionFailure),
    /// A models-API rule about identity or interfaces.
    Model(crate::ModelFailure),
    /// Weights that could not be built.
    Weights(WeightError),
    /// A model plan that could not be prepared.
    Prepare(PrepareError),
    /// A prepared model's run that failed.
    Run(RunError),
}

/// A failure found by the session's own checks (not by a lower layer).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionFailure {
    /// An input or output slot of the artifact carries no type (an artifact not produced by
    /// accy's compiler: every input and output slot it makes is typed).
    #[error("{what} {index} has no type in the artifact")]
    Untyped {
        /// `input` or `output`.
        what: &'static str,
        /// Its position.
        index: usize,
    },
    /// The program's inputs or outputs are larger than this host can address.
    #[error("{what} {index} has type {ty}, which is larger than this host can address")]
    TooLarge {
        /// `input` or `output`.
        what: &'static str,
        /// Its position.
        index: usize,
        /// Its type.
        ty: accy_ir::Type,
    },
    /// The wrong number of buffers was passed.
    #[error("expected {expected} {what} buffers, got {actual}")]
    Count {
        /// `input` or `output`.
        what: &'static str,
        /// Buffers the program has.
        expected: usize,
        /// Buffers passed.
        actual: usize,
    },
    /// A typed buffer's elements do not fit the descriptor's bytes exactly.
    #[error("{what} {index} holds {actual} bytes of {element}-byte elements, but its descriptor needs {expected} bytes of {dtype}")]
    Typed {
        /// `input` or `output`.
        what: &'static str,
        /// Its position.
        index: usize,
        /// The element size of the Rust slice.
        element: usize,
        /// Bytes given.
        actual: usize,
        /// Bytes needed.
        expected: usize,
        /// The descriptor's dtype.
        dtype: accy_ir::DType,
    },
}

fn cause<E: std::error::Error + Send + Sync + 'static>(e: E) -> crate::Cause {
    Arc::new(e)
}

impl Inner {
    /// The session error for this failure. Every mapping decision lives here.
    pub(crate) fn into_error(self) -> Error {
        match self {
            Inner::Decode(e @ DecodeError::UnsupportedVersion { .. }) => {
                Error::UnsupportedVersion(cause(e))
            }
            Inner::Decode(e) => Error::InvalidProgram(cause(e)),
            Inner::Artifact(e @ SerialError::UnsupportedVersion { .. }) => {
                Error::UnsupportedVersion(cause(e))
            }
            Inner::Artifact(e @ (SerialError::TooLong { .. } | SerialError::Unencodable(_))) => {
                Error::CompileFailed(cause(e))
            }
            Inner::Artifact(e) => Error::InvalidProgram(cause(e)),
            Inner::Compile(CompileError::Invalid(e)) => Error::InvalidProgram(cause(e)),
            Inner::Compile(e) => Error::CompileFailed(cause(e)),
            Inner::Load(
                e @ (LoadError::OutOfMemory { .. }
                | LoadError::Code {
                    source: CodeMemoryError::OutOfMemory { .. },
                    ..
                }),
            ) => Error::OutOfMemory(cause(e)),
            Inner::Load(
                e @ (LoadError::MissingWeight { .. }
                | LoadError::WeightSize { .. }
                | LoadError::WeightAlignment { .. }),
            ) => Error::InvalidBuffer(cause(e)),
            Inner::Load(e) => Error::CompileFailed(cause(e)),
            Inner::Bind(e @ BindingError::ScratchOutOfMemory { .. }) => {
                Error::OutOfMemory(cause(e))
            }
            Inner::Bind(e) => Error::InvalidBuffer(cause(e)),
            Inner::Launch(e) => Error::LaunchFailed(cause(e)),
            Inner::Cpu(e) => Error::CompileFailed(cause(e)),
            Inner::Lookup(e) => Error::CompileFailed(cause(e)),
            Inner::Pool(e) => Error::OutOfMemory(cause(e)),
            Inner::Session(
                e @ (SessionFailure::TooLarge { .. } | SessionFailure::Untyped { .. }),
            ) => Error::CompileFailed(cause(e)),
            Inner::Session(e) => Error::InvalidBuffer(cause(e)),
            Inner::Model(e) => Error::InvalidModel(cause(e)),
            Inner::Weights(e @ WeightError::OutOfMemory { .. }) => Error::OutOfMemory(cause(e)),
            Inner::Weights(e) => Error::InvalidModel(cause(e)),
            // The rule itself is the cause, so a caller can match on `ModelPlanError`.
            Inner::Prepare(PrepareError::Invalid(e)) => {
                Error::InvalidModel(cause::<ModelPlanError>(e))
            }
            Inner::Prepare(
                e @ (PrepareError::OutOfMemory { .. } | PrepareError::TooLarge { .. }),
            ) => Error::OutOfMemory(cause(e)),
            Inner::Prepare(e) => Error::InvalidModel(cause(e)),
            Inner::Run(RunError::Launch { command, source }) => {
                Error::LaunchFailed(cause(RunError::Launch { command, source }))
            }
            Inner::Run(e) => Error::InvalidBuffer(cause(e)),
        }
    }
}
