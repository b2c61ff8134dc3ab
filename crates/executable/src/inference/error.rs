//! Why preparing or running a model plan failed.

use accy_artifact::model::{AllocationKind, ModelPlanError, Signature};

use crate::binding::BufferKind;
use crate::run::LaunchError;

/// Why a plan could not be prepared. [`PrepareError::Invalid`] is the plan author's error
/// (the inner error names the rule); out-of-memory is a limit; the rest mean the runtime
/// above described the model's weights or fragments inconsistently (a bug there).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PrepareError {
    /// The plan breaks a rule of `ModelPlan::validate`.
    #[error("invalid model plan: {0}")]
    Invalid(#[from] ModelPlanError),
    /// A plan needs at least one inference slot.
    #[error("a prepared plan needs at least one inference slot (capacity 0 given)")]
    NoSlots,
    /// The weight names do not cover the allocations one to one.
    #[error("{names} weight names given for {allocations} allocations")]
    WeightNames {
        /// The plan's allocations.
        allocations: usize,
        /// The names given.
        names: usize,
    },
    /// An immutable allocation has no weight of the given weights behind it, or a scratch
    /// allocation was given one.
    #[error("allocation {allocation} ({kind}) is bound to weight {name:?}, which the weights do not hold as such")]
    UnboundWeight {
        /// The allocation.
        allocation: u32,
        /// Its kind.
        kind: AllocationKind,
        /// The name given for it, if any.
        name: Option<String>,
    },
    /// An immutable allocation's size or alignment is not its weight's.
    #[error(
        "allocation {allocation} claims {bytes} bytes aligned to {alignment}, but weight \
         {name:?} has {weight_bytes} bytes aligned to {weight_alignment}"
    )]
    WeightMismatch {
        /// The allocation.
        allocation: u32,
        /// The weight's name.
        name: String,
        /// The allocation's size.
        bytes: u64,
        /// The allocation's alignment.
        alignment: u64,
        /// The weight's size.
        weight_bytes: usize,
        /// The alignment of the weight's address.
        weight_alignment: usize,
    },
    /// The plan and the loaded fragments differ in number.
    #[error("the plan describes {plan} fragments, but {loaded} were given")]
    FragmentCount {
        /// Signatures in the plan.
        plan: usize,
        /// Loaded fragments given.
        loaded: usize,
    },
    /// A fragment's signature in the plan is not the loaded fragment's.
    #[error("fragment {fragment}: the plan says {plan:?}, but the loaded fragment has {loaded:?}")]
    SignatureMismatch {
        /// The fragment.
        fragment: u32,
        /// What the plan says.
        plan: Signature,
        /// What the fragment has.
        loaded: Signature,
    },
    /// A slot's memory is larger than this host can address.
    #[error("an inference slot needs {bytes} bytes of {what}, more than this host can address")]
    TooLarge {
        /// `plan scratch`, `fragment scratch` or `worker scratch`.
        what: &'static str,
        /// The size.
        bytes: u64,
    },
    /// There was no memory for a slot.
    #[error("out of memory for inference slot {slot}: {bytes} bytes aligned to {alignment}")]
    OutOfMemory {
        /// The slot being made.
        slot: usize,
        /// The block asked for.
        bytes: usize,
        /// Its alignment.
        alignment: usize,
    },
}

/// Why a run failed. Nothing was changed in the caller's outputs unless the run reached the
/// end ([`RunError::Launch`] stops it with outputs unwritten).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The wrong number of input or output buffers.
    #[error("expected {expected} {kind} buffers, got {actual}")]
    Count {
        /// Inputs or outputs.
        kind: BufferKind,
        /// How many the plan has.
        expected: usize,
        /// How many were given.
        actual: usize,
    },
    /// A buffer's size is not the plan input's or output's.
    #[error("{kind} {index} must be exactly {expected} bytes, got {actual}")]
    Size {
        /// Inputs or outputs.
        kind: BufferKind,
        /// Its position.
        index: usize,
        /// The size the plan has for it.
        expected: usize,
        /// The buffer's length.
        actual: usize,
    },
    /// No slot could be had at once: every inference slot is in use, or one is free but a
    /// waiting caller is due to get it first.
    #[error("no free inference slot of {capacity} for a caller that does not wait")]
    Busy {
        /// The plan's slot count.
        capacity: usize,
    },
    /// A fragment's kernel failed.
    #[error("command {command}: {source}")]
    Launch {
        /// The plan command that failed.
        command: usize,
        /// Why.
        source: LaunchError,
    },
}
