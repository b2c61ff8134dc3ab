//! [`CompileError`]: why a program could not be compiled.

use accy_artifact::ArtifactError;
use accy_ir::VerifyErrors;

use crate::kernel::KernelError;
use crate::target::EmitError;

/// Why [`crate::compile`] or [`crate::plan`] failed. Only [`CompileError::Invalid`] and
/// [`CompileError::Unsupported`] can be the caller's doing; every other variant is a bug in
/// the compiler, reported instead of panicking.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The program failed verification; nothing was compiled.
    #[error("invalid program: {0}")]
    Invalid(VerifyErrors),
    /// The program is valid but uses something this compiler cannot lower yet (for example,
    /// a kernel needing more bindings than the dispatch ABI allows).
    #[error("unsupported: {what}")]
    Unsupported {
        /// What could not be lowered, with the numbers involved.
        what: String,
    },
    /// The backend could not emit code for a kernel.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// The assembled artifact failed validation (a compiler bug).
    #[error("the compiled artifact is malformed: {0}")]
    Artifact(#[from] ArtifactError),
    /// The planner produced a kernel that failed [`crate::kernel::LoopKernel::validate`]
    /// (a compiler bug).
    #[error("the planner produced a malformed kernel: {0}")]
    Kernel(#[from] KernelError),
    /// The planner broke one of its own invariants (a compiler bug).
    #[error("compiler bug: {message}")]
    Internal {
        /// What went wrong.
        message: String,
    },
}

impl CompileError {
    /// A [`CompileError::Internal`] with `message`.
    pub(crate) fn internal(message: impl Into<String>) -> CompileError {
        CompileError::Internal {
            message: message.into(),
        }
    }

    /// A [`CompileError::Unsupported`] with `what`.
    pub(crate) fn unsupported(what: impl Into<String>) -> CompileError {
        CompileError::Unsupported { what: what.into() }
    }
}
