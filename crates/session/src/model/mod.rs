//! Models: immutable weights loaded once and shared, shape-specific prepared plans with a
//! bounded number of inference slots, and compiled programs ("fragments") chained through
//! regions (DESIGN.md "Models", after seed `002_…`).
//!
//! # The convenient path
//!
//! ```no_run
//! # fn main() -> Result<(), accy_session::Error> {
//! # let (program, program_b8, weights): (accy_session::Program, accy_session::Program, accy_session::Weights) = todo!();
//! use accy_session::Model;
//! let model = Model::new(&program, weights)?;     // compiles, packs the weights once
//! let b1 = model.prepare(&program, 4)?;           // 4 inference slots
//! let b8 = model.prepare(&program_b8, 2)?;        // another batch size, same weights
//! let input = vec![0.0f32; b1.inputs()[0].byte_size / 4];
//! let mut output = vec![0.0f32; b1.outputs()[0].byte_size / 4];
//! b1.run_typed(&[&input], &mut [&mut output])?;   // from any number of threads
//! # Ok(()) }
//! ```
//!
//! [`Model::new`] binds a program to its [`crate::Weights`] (which live on read-only pages);
//! [`Model::prepare`] compiles another shape of the same network — batch 1, 8, 37, … — into a
//! [`PreparedModel`] sharing the weights and their packed forms; [`PreparedModel::run`] may be
//! called from many threads at once: it takes a free inference slot, waiting its turn (in
//! arrival order, eventually fair: see [`PreparedModel`]) when all are busy, and allocates
//! nothing. [`PreparedModel::try_run`]
//! returns [`crate::Error::Busy`] instead of waiting.
//!
//! # The general path
//!
//! A [`ModelContext`] is the shared scheduling and allocation domain (code generator, thread
//! pool). [`ModelContext::record`] starts a [`ModelRecorder`], which collects allocations —
//! immutable ones holding weights, scratch ones holding only a size — and fragments (compiled
//! programs), then [`ModelRecorder::freeze`]s into a [`ModelDefinition`] bound to that context
//! (freezing into another is refused). The definition owns the weights, on read-only pages,
//! and counts them once ([`ModelDefinition::weight_bytes`], packed forms included) however
//! many plans and slots use them.
//!
//! A [`Region`] is (definition, allocation, offset, bytes). [`ModelDefinition::prepare`] takes
//! [`Command`]s (byte fills of a region; dispatches of a fragment with its inputs and outputs
//! bound to regions), the plan's inputs and outputs as (region, [`crate::Descriptor`]) pairs
//! and a capacity, validates everything once, and sizes each slot's scratch to the extents the
//! plan uses. Every rule has its own error: a region or kernel of another definition is
//! [`ModelFailure::ForeignRegion`] / [`ModelFailure::ForeignKernel`]; the rest are
//! [`ModelPlanError`] variants (allocation out of range, region past its allocation, empty or
//! oversized IO, IO aliasing weights, fill or write of weights, binding sizes and alignment,
//! overlapping outputs); all arrive as [`crate::Error::InvalidModel`] with the rule as the
//! cause.
//!
//! Model calls return their cause inside the [`crate::Error`] and leave
//! [`crate::Session::last_cause`] alone (they belong to no session's table).

mod context;
mod convenient;
mod definition;
mod failure;
mod prepared;
mod record;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// The data of a plan as validation sees it (regions by allocation index): what
/// [`ModelPlanError`]s carry.
pub use accy_artifact::model::Region as PlanRegion;
pub use accy_artifact::model::{IoKind, ModelPlanError, Site};
pub use context::ModelContext;
pub use convenient::Model;
pub use definition::ModelDefinition;
pub use failure::ModelFailure;
pub use prepared::PreparedModel;
pub use record::ModelRecorder;

/// Names one model definition (and the recording it was frozen from) in regions and kernels.
/// Unique within the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DefinitionId(pub u64);

impl fmt::Display for DefinitionId {
    /// `model 7`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "model {}", self.0)
    }
}

/// The next identifier for a context or a recording: a plain counter, never reused, so a
/// handle of one model is never mistaken for another's.
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One allocation of a model: an immutable one (a weight) or scratch. A plain value from
/// [`ModelRecorder`]; its fields are public so a host can store and rebuild it, and
/// [`ModelDefinition::prepare`] checks both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Allocation {
    /// The definition it belongs to.
    pub definition: DefinitionId,
    /// Its index among the definition's allocations.
    pub index: u32,
}

impl Allocation {
    /// Bytes `offset..offset + bytes` of this allocation (checked when a plan uses it).
    pub fn region(self, offset: u64, bytes: u64) -> Region {
        Region {
            allocation: self,
            offset,
            bytes,
        }
    }
}

/// Bytes `offset..offset + bytes` of an allocation. Checked by
/// [`ModelDefinition::prepare`]: it must belong to that definition, its allocation must exist,
/// and `offset + bytes` (checked arithmetic) must fit the allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// The allocation.
    pub allocation: Allocation,
    /// First byte, from the allocation's start.
    pub offset: u64,
    /// Number of bytes.
    pub bytes: u64,
}

/// One fragment (compiled program) of a model, for dispatch commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kernel {
    /// The definition it belongs to.
    pub definition: DefinitionId,
    /// Its index among the definition's fragments.
    pub index: u32,
}

/// One step of a plan. Commands run in order, each complete before the next starts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Sets every byte of `region` (scratch, never weights) to `value`.
    Fill {
        /// The bytes written.
        region: Region,
        /// The byte value.
        value: u8,
    },
    /// Runs `kernel` with its input `i` read from `inputs[i]` and its output `j` written to
    /// `outputs[j]`, in place: each region must have exactly the byte size of the fragment's
    /// descriptor and its alignment; outputs must not be weights and must not overlap
    /// another binding of the same dispatch. One dispatch's output region can be the next
    /// one's input region: fragments chain without copies.
    Dispatch {
        /// The fragment.
        kernel: Kernel,
        /// One region per fragment input, in order.
        inputs: Vec<Region>,
        /// One region per fragment output, in order.
        outputs: Vec<Region>,
    },
}
