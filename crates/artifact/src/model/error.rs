//! [`ModelPlanError`]: why [`super::ModelPlan::validate`] refused a plan, one variant per rule.

use std::fmt;

use thiserror::Error;

use super::Region;

/// A plan input or a plan output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoKind {
    /// Copied in before the commands.
    Input,
    /// Copied out after the commands.
    Output,
}

impl fmt::Display for IoKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoKind::Input => "input",
            IoKind::Output => "output",
        })
    }
}

/// Where in a plan a region is used, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Site {
    /// Plan input or output number `index`.
    Io {
        /// Input or output.
        kind: IoKind,
        /// Its position.
        index: usize,
    },
    /// The region of fill command number `command`.
    Fill {
        /// Index in [`super::ModelPlan::commands`].
        command: usize,
    },
    /// Binding `index` among the inputs or outputs of dispatch command number `command`.
    Binding {
        /// Index in [`super::ModelPlan::commands`].
        command: usize,
        /// Input or output of the fragment.
        kind: IoKind,
        /// Its position.
        index: usize,
    },
}

impl fmt::Display for Site {
    /// `plan input 0`, `command 3 (fill)`, `command 2 output 1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Site::Io { kind, index } => write!(f, "plan {kind} {index}"),
            Site::Fill { command } => write!(f, "command {command} (fill)"),
            Site::Binding {
                command,
                kind,
                index,
            } => write!(f, "command {command} (dispatch) {kind} {index}"),
        }
    }
}

/// Why a model plan is not valid. Each variant is one rule and carries every number
/// involved. A caller matches on the variant, never on the message.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModelPlanError {
    /// An allocation's alignment is not a power of two (a runtime bug).
    #[error("allocation {allocation} has alignment {alignment}, which is not a power of two")]
    BadAllocationAlignment {
        /// The allocation.
        allocation: u32,
        /// Its alignment.
        alignment: u64,
    },
    /// A region names an allocation the model does not have.
    #[error("{site}: region {region} names allocation {}, but the model has {count}", .region.allocation)]
    AllocationOutOfRange {
        /// Where the region is used.
        site: Site,
        /// The region.
        region: Region,
        /// How many allocations the model has.
        count: usize,
    },
    /// A region reaches past the end of its allocation (or `offset + bytes` overflows).
    #[error(
        "{site}: region {region} (offset {} + {} bytes) does not fit allocation {} of \
         {allocation_bytes} bytes",
        .region.offset, .region.bytes, .region.allocation
    )]
    RegionOutOfBounds {
        /// Where the region is used.
        site: Site,
        /// The region.
        region: Region,
        /// The allocation's size.
        allocation_bytes: u64,
    },
    /// A plan input or output has no bytes.
    #[error("plan {kind} {index} is empty (0 bytes)")]
    EmptyIo {
        /// Input or output.
        kind: IoKind,
        /// Its position.
        index: usize,
    },
    /// A plan input or output has more bytes than its region.
    #[error("plan {kind} {index} has {bytes} bytes, more than its region {region} holds")]
    IoTooLarge {
        /// Input or output.
        kind: IoKind,
        /// Its position.
        index: usize,
        /// Its size.
        bytes: u64,
        /// Its region.
        region: Region,
    },
    /// A plan input or output lies in an immutable (weight) allocation.
    #[error(
        "plan {kind} {index} is region {region} of allocation {}, which holds weights: plan \
         inputs and outputs may not alias weights", .region.allocation
    )]
    IoAliasesWeights {
        /// Input or output.
        kind: IoKind,
        /// Its position.
        index: usize,
        /// Its region.
        region: Region,
    },
    /// Two plan inputs share bytes, so one input's copy would overwrite the other's.
    #[error("plan inputs {first} ({first_region}) and {second} ({second_region}) overlap")]
    InputsOverlap {
        /// The earlier input.
        first: usize,
        /// Its bytes (the first `bytes` of its region).
        first_region: Region,
        /// The later input.
        second: usize,
        /// Its bytes.
        second_region: Region,
    },
    /// A fill writes an immutable (weight) allocation.
    #[error("command {command}: fill of region {region}, which holds weights")]
    FillOfWeights {
        /// Index in the commands.
        command: usize,
        /// The region.
        region: Region,
    },
    /// A dispatch names a fragment the model does not have.
    #[error("command {command}: dispatch of fragment {fragment}, but the model has {count}")]
    FragmentOutOfRange {
        /// Index in the commands.
        command: usize,
        /// The fragment named.
        fragment: u32,
        /// How many fragments the model has.
        count: usize,
    },
    /// A dispatch binds a different number of inputs or outputs than its fragment has.
    #[error("command {command}: fragment {fragment} has {expected} {kind}s, but {actual} regions are bound")]
    BindingCount {
        /// Index in the commands.
        command: usize,
        /// The fragment.
        fragment: u32,
        /// Inputs or outputs.
        kind: IoKind,
        /// How many the fragment has.
        expected: usize,
        /// How many regions were given.
        actual: usize,
    },
    /// A dispatch binds a region whose size is not exactly the fragment's.
    #[error("{site}: region {region} has {} bytes, but fragment {fragment} needs exactly {expected}", .region.bytes)]
    BindingSize {
        /// The binding.
        site: Site,
        /// The fragment.
        fragment: u32,
        /// The region.
        region: Region,
        /// The fragment's size for it.
        expected: u64,
    },
    /// A dispatch binds a region whose address would not have the alignment the fragment
    /// needs.
    #[error(
        "{site}: region {region} must be aligned to {required} bytes for fragment {fragment}, \
         but its allocation's base is aligned to {allocation_alignment} and the offset is {}",
        .region.offset
    )]
    BindingMisaligned {
        /// The binding.
        site: Site,
        /// The fragment.
        fragment: u32,
        /// The region.
        region: Region,
        /// The alignment the fragment needs.
        required: u64,
        /// The alignment of the allocation's base.
        allocation_alignment: u64,
    },
    /// A dispatch output lies in an immutable (weight) allocation.
    #[error("{site}: fragment {fragment} would write region {region}, which holds weights")]
    WriteOfWeights {
        /// The binding.
        site: Site,
        /// The fragment.
        fragment: u32,
        /// The region.
        region: Region,
    },
    /// A dispatch output shares bytes with another binding of the same dispatch.
    #[error("{site}: output region {region} overlaps {other_site} ({other_region})")]
    BindingOverlap {
        /// The output binding.
        site: Site,
        /// Its region.
        region: Region,
        /// The other binding (an input, or an earlier output).
        other_site: Site,
        /// Its region.
        other_region: Region,
    },
    /// The private memory of one inference slot would not fit in `u64` bytes.
    #[error("the plan's scratch does not fit in 2^64 bytes (allocation {allocation} at extent {extent})")]
    ScratchTooLarge {
        /// The allocation that overflowed the block.
        allocation: u32,
        /// Its extent.
        extent: u64,
    },
}
