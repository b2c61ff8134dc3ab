//! A [`ModelPlan`]: the commands of one inference of a model, over the model's allocations
//! and its compiled fragments, as plain data (DESIGN.md "Models", after seed `002_…`).
//!
//! A model has **allocations**: immutable ones hold its weights (shared by every plan and
//! every inference slot), the others are scratch sizes, given memory privately by each
//! inference slot of a prepared plan. Its **fragments** are compiled programs, known here only
//! by their [`Signature`] (the byte size and alignment of each input and output). A plan is a
//! list of [`Command`]s — byte fills of a region, and dispatches of a fragment with each of
//! its inputs and outputs bound to a [`Region`] — plus the plan's own inputs and outputs
//! ([`Io`]): regions that a run copies the caller's input bytes into before the commands and
//! copies the output bytes out of afterwards. Fragments chain through regions: one
//! fragment's output region is the next one's input region, with no copy between them.
//!
//! [`ModelPlan::validate`] (module `validate`) checks every rule and computes the
//! [`PlanLayout`] of one inference slot's private memory; a runtime must validate a plan
//! before running it. Validation guarantees that running the commands as described touches
//! only bytes inside allocations, never writes an immutable one, and hands each fragment
//! buffers of exactly the sizes and alignments its signature asks for, with no output
//! sharing a byte with another binding of the same dispatch. Whether the results are useful is
//! the plan author's business (a region read before anything wrote it holds stale or zero
//! bytes).
//!
//! Identity (which model a region or fragment belongs to) is not data and is checked by the
//! runtime that owns the model, before it builds a `ModelPlan`.

use std::fmt;

mod error;
mod validate;

pub use error::{IoKind, ModelPlanError, Site};

/// The alignment the runtime gives the base of every scratch allocation: a cache line, and
/// at least the alignment any fragment input or output asks for (an element's).
pub const SCRATCH_ALIGNMENT: u64 = 64;

/// Whether an allocation holds weights or scratch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocationKind {
    /// Weights: shared by every plan and slot, never written by any command.
    Immutable,
    /// Working memory: each inference slot of a prepared plan has its own, sized to the
    /// extent the plan uses.
    Scratch,
}

impl fmt::Display for AllocationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AllocationKind::Immutable => "immutable",
            AllocationKind::Scratch => "scratch",
        })
    }
}

/// One allocation of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Allocation {
    /// Weights or scratch.
    pub kind: AllocationKind,
    /// Its size in bytes: the most any region of it may reach.
    pub bytes: u64,
    /// The alignment its base address has in memory (a power of two): what the weights' place
    /// gives for an immutable allocation, [`SCRATCH_ALIGNMENT`] for scratch.
    pub alignment: u64,
}

impl Allocation {
    /// A weight allocation of `bytes` bytes whose base is aligned to `alignment`.
    pub fn immutable(bytes: u64, alignment: u64) -> Allocation {
        Allocation {
            kind: AllocationKind::Immutable,
            bytes,
            alignment,
        }
    }

    /// A scratch allocation of at most `bytes` bytes.
    pub fn scratch(bytes: u64) -> Allocation {
        Allocation {
            kind: AllocationKind::Scratch,
            bytes,
            alignment: SCRATCH_ALIGNMENT,
        }
    }
}

/// One input or output buffer of a fragment: its exact size and the alignment its address
/// needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Port {
    /// The exact byte size the bound region must have.
    pub bytes: u64,
    /// The alignment the bound region's address must have (a power of two).
    pub alignment: u64,
}

/// What a plan needs to know of a compiled fragment: its inputs and outputs, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The fragment's inputs (read only).
    pub inputs: Vec<Port>,
    /// The fragment's outputs (written).
    pub outputs: Vec<Port>,
}

/// Bytes `offset..offset + bytes` of allocation number `allocation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// Index into [`ModelPlan::allocations`].
    pub allocation: u32,
    /// First byte, from the allocation's base.
    pub offset: u64,
    /// Number of bytes.
    pub bytes: u64,
}

impl Region {
    /// The region `offset..offset + bytes` of `allocation`.
    pub fn new(allocation: u32, offset: u64, bytes: u64) -> Region {
        Region {
            allocation,
            offset,
            bytes,
        }
    }

    /// One past the last byte, or `None` if `offset + bytes` overflows.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.bytes)
    }

    /// True if both regions are non-empty and share a byte of the same allocation (exact even
    /// when an end overflows `u64`).
    pub fn overlaps(&self, other: &Region) -> bool {
        let end = |r: &Region| u128::from(r.offset) + u128::from(r.bytes);
        self.allocation == other.allocation
            && self.bytes > 0
            && other.bytes > 0
            && u128::from(self.offset) < end(other)
            && u128::from(other.offset) < end(self)
    }
}

impl fmt::Display for Region {
    /// `a2[16..48]`: allocation, first byte, one past the last.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.end() {
            Some(end) => write!(f, "a{}[{}..{}]", self.allocation, self.offset, end),
            None => write!(
                f,
                "a{}[{}..{}+{}]",
                self.allocation, self.offset, self.offset, self.bytes
            ),
        }
    }
}

/// One step of a plan. Commands run in order, each complete before the next starts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Sets every byte of `region` to `value`.
    Fill {
        /// The bytes written.
        region: Region,
        /// The byte value.
        value: u8,
    },
    /// Runs fragment number `fragment` with input `i` bound to `inputs[i]` (read) and output
    /// `j` bound to `outputs[j]` (written).
    Dispatch {
        /// Index into [`ModelPlan::fragments`].
        fragment: u32,
        /// One region per fragment input, in order.
        inputs: Vec<Region>,
        /// One region per fragment output, in order.
        outputs: Vec<Region>,
    },
}

/// A plan input or output: a run copies `bytes` caller bytes into (or out of) the first
/// `bytes` bytes of `region`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Io {
    /// Where the bytes go (inputs) or come from (outputs).
    pub region: Region,
    /// The caller buffer's exact size: at least 1 and at most the region's.
    pub bytes: u64,
}

/// The commands of one inference, over a model's allocations and fragments (see the module
/// documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ModelPlan {
    /// The model's allocations, indexed by [`Region::allocation`].
    pub allocations: Vec<Allocation>,
    /// The model's fragments, indexed by a dispatch's `fragment`.
    pub fragments: Vec<Signature>,
    /// The commands, in order.
    pub commands: Vec<Command>,
    /// What the caller's input buffers are copied into, in order.
    pub inputs: Vec<Io>,
    /// What the caller's output buffers are copied from, in order.
    pub outputs: Vec<Io>,
}

/// Where a validated plan puts each scratch allocation in one inference slot's block of
/// private memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanLayout {
    /// Per allocation: one past the highest byte the plan touches (its commands' regions and
    /// its inputs' and outputs' first `bytes` bytes); 0 if the plan never uses it. Always 0
    /// for immutable allocations, which take no private memory.
    pub extents: Vec<u64>,
    /// Per allocation: its offset in the block, for every scratch allocation the plan uses;
    /// `None` for immutable and unused ones.
    pub offsets: Vec<Option<u64>>,
    /// The block's size in bytes.
    pub size: u64,
    /// The alignment the block's base must have (every placed allocation's alignment divides
    /// it).
    pub alignment: u64,
}
