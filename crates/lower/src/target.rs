//! The one interface arch-neutral lowering sees of an ISA backend.

use accy_artifact::{KernelEntry, TargetSpec};

use crate::kernel::LoopKernel;

/// An ISA backend: translates kernel descriptions into machine code for one instruction-set
/// tier. Implementations are immutable and shareable (`Send + Sync`), so one can serve many
/// compiles at once.
pub trait Target: Send + Sync + std::fmt::Debug {
    /// A short stable name (`x64-sse2`, `x64-avx2`, `x64-avx512`, `aarch64-neon`), used by
    /// tools and test names.
    fn name(&self) -> &'static str;

    /// The architecture and the exact CPU features the emitted code needs; recorded in the
    /// artifact so a runtime refuses to run it on a CPU that lacks any of them.
    fn spec(&self) -> TargetSpec;

    /// Machine code for `kernels`, one entry per kernel in the same order, each entry following
    /// the dispatch ABI (`accy_artifact::abi`). The kernels have passed
    /// [`LoopKernel::validate`]. Never panics: an encoding problem is an [`EmitError`].
    fn emit(&self, kernels: &[LoopKernel]) -> Result<EmittedCode, EmitError>;
}

/// What a [`Target`] produces: position-independent code and where each kernel starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmittedCode {
    /// The code bytes of all kernels.
    pub code: Vec<u8>,
    /// One entry per kernel, in the order given to [`Target::emit`].
    pub entries: Vec<KernelEntry>,
}

/// Why a backend could not emit code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmitError {
    /// The kernel uses something this backend does not implement (a bug or a missing feature,
    /// never bad user input: the verifier and planner accept only what every backend handles).
    #[error("kernel `{kernel}`: {what} is not supported by the {target} backend")]
    Unsupported {
        /// Kernel name.
        kernel: String,
        /// What was missing.
        what: String,
        /// Backend name.
        target: &'static str,
    },
    /// The assembler refused an instruction or could not resolve a label.
    #[error("kernel `{kernel}`: assembler error: {message}")]
    Assembler {
        /// Kernel name.
        kernel: String,
        /// The assembler's message (for dynasm, including the label name).
        message: String,
    },
    /// The code grew past what an artifact can address (4 GiB).
    #[error("generated code is too large ({bytes} bytes)")]
    TooLarge {
        /// Bytes generated.
        bytes: u64,
    },
}
