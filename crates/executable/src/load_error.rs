//! [`LoadError`]: why an artifact could not be made live on this host (`crate::load`).

use accy_artifact::{Arch, ArtifactError, FeatureSet, SlotId, TargetSpec};

use crate::code_memory::CodeMemoryError;
use crate::cpu::Tier;
use crate::run::LaunchError;

/// Why an artifact could not be loaded.
///
/// [`LoadError::Invalid`] and the weight variants are caller errors (a corrupt artifact, the
/// wrong weights); [`LoadError::ArchMismatch`] and [`LoadError::MissingFeatures`] mean the
/// artifact was compiled for another machine or tier and must be recompiled for this one;
/// out-of-memory and code-mapping failures are limits or policies of the host.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The artifact failed validation.
    #[error("invalid artifact: {0}")]
    Invalid(#[from] ArtifactError),
    /// The code is for another architecture than the host's.
    #[error("artifact code is for {artifact}, but this host is {}", host_name(*.host))]
    ArchMismatch {
        /// The architecture the code was generated for.
        artifact: Arch,
        /// The host's architecture, or `None` if accy generates no code for it.
        host: Option<Arch>,
    },
    /// The code needs CPU features the host lacks (or that `ACCY_CPU_FEATURES_MAX` masks).
    #[error(
        "artifact code for {target} needs CPU features {missing} that this host cannot use \
         (usable: {host}, tier {tier})"
    )]
    MissingFeatures {
        /// The artifact's target.
        target: TargetSpec,
        /// The needed features the host lacks.
        missing: FeatureSet,
        /// The features the host may use.
        host: FeatureSet,
        /// The tier the host's features were masked to.
        tier: Tier,
    },
    /// A slot is larger than this host can address.
    #[error(
        "slot {slot} needs {bytes} bytes aligned to {alignment}, more than this host can address"
    )]
    TooLarge {
        /// The slot.
        slot: SlotId,
        /// Its size.
        bytes: u64,
        /// Its alignment.
        alignment: u64,
    },
    /// The constants or scratch block is larger (or more aligned) than this host can address.
    #[error("the {block} block needs {bytes} bytes aligned to {alignment}, more than this host can address")]
    BlockTooLarge {
        /// `constants` or `scratch`.
        block: &'static str,
        /// Its size.
        bytes: u64,
        /// Its alignment.
        alignment: u64,
    },
    /// The artifact needs a weight the [`Weights`](crate::weights::Weights) given do not have.
    #[error("slot {slot} needs weight {name:?}, which was not given ({available} weights were)")]
    MissingWeight {
        /// The weight slot.
        slot: SlotId,
        /// The weight's name.
        name: String,
        /// How many weights were given.
        available: usize,
    },
    /// A weight's size differs from its slot's.
    #[error("weight {name:?} has {actual} bytes, but slot {slot} needs exactly {expected}")]
    WeightSize {
        /// The weight slot.
        slot: SlotId,
        /// The weight's name.
        name: String,
        /// The slot's size.
        expected: u64,
        /// The weight's size.
        actual: usize,
    },
    /// A weight slot asks for more alignment than its weight's address has (copied weights
    /// have at least [`Weights::ALIGNMENT`](crate::weights::Weights::ALIGNMENT); mapped
    /// ones what their place in the file gives).
    #[error("weight slot {slot} ({name:?}) needs alignment {required}, but the weight is aligned to {provided}")]
    WeightAlignment {
        /// The weight slot.
        slot: SlotId,
        /// The weight's name.
        name: String,
        /// The slot's alignment.
        required: u64,
        /// The alignment of the weight's address (up to a page).
        provided: usize,
    },
    /// There was no memory for the constants.
    #[error("out of memory copying {bytes} bytes of constants (alignment {alignment})")]
    OutOfMemory {
        /// The size asked for.
        bytes: usize,
        /// The alignment asked for.
        alignment: usize,
    },
    /// The code could not be mapped or published.
    #[error("publishing {bytes} bytes of code failed: {source}")]
    Code {
        /// The code size.
        bytes: usize,
        /// Why.
        source: CodeMemoryError,
    },
    /// A kernel's entry point is not callable in the published code (a validator bug).
    #[error("kernel {kernel} `{name}` has no valid entry point: {source}")]
    KernelEntry {
        /// The kernel's index.
        kernel: usize,
        /// Its name.
        name: String,
        /// Why.
        source: CodeMemoryError,
    },
    /// A setup command failed while computing a derived slot (its kernel returned an error).
    #[error("computing derived slot {slot}: {source}")]
    Setup {
        /// The derived slot.
        slot: SlotId,
        /// Why its setup stopped.
        source: LaunchError,
    },
    /// A slot the plan lists as derived is not one (a bug in `accy-artifact`).
    #[error("slot {slot} is not a derived slot")]
    NotDerived {
        /// The slot.
        slot: SlotId,
    },
    /// The plan summary placed no scratch slot at this id (a bug in `accy-artifact`).
    #[error("scratch slot {slot} has no place in the plan's scratch layout")]
    ScratchUnplaced {
        /// The slot.
        slot: SlotId,
    },
}

fn host_name(host: Option<Arch>) -> String {
    match host {
        Some(arch) => arch.name().to_owned(),
        None => format!(
            "{} (an architecture accy generates no code for)",
            std::env::consts::ARCH
        ),
    }
}
