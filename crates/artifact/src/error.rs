//! [`ArtifactError`]: why [`crate::Artifact::validate`] refused an artifact.

use accy_ir::Type;
use thiserror::Error;

use crate::{Arch, FeatureSet, Operand, SlotId, SlotKind};

/// Why an artifact is not valid. Each variant carries every number involved (command index,
/// slot, offsets, lengths, sizes) so the message can be acted on without a debugger.
///
/// For an artifact accy just compiled, every variant is a compiler bug. For an artifact read
/// from storage, it is corrupt or foreign input — except [`ArtifactError::UnsupportedAbi`],
/// which means it was produced by an accy with another dispatch ABI and must be recompiled.
/// Callers match on the variant, never on the message text.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ArtifactError {
    /// The code follows another version of the dispatch ABI ([`crate::abi`]).
    #[error(
        "artifact code follows dispatch ABI version {found}, but this accy supports only \
         version {supported}; recompile the program"
    )]
    UnsupportedAbi {
        /// [`crate::Artifact::abi_version`].
        found: u32,
        /// [`crate::abi::ABI_VERSION`].
        supported: u32,
    },

    /// The target lists features of another architecture.
    #[error("target architecture {arch} cannot have the features {foreign}")]
    ForeignFeatures {
        /// The target's architecture.
        arch: Arch,
        /// The features that belong to another architecture.
        foreign: FeatureSet,
    },

    /// A kernel's name is empty.
    #[error("kernel {kernel} has an empty name")]
    UnnamedKernel {
        /// Index in [`crate::Artifact::kernels`].
        kernel: usize,
    },

    /// Two kernels share a name.
    #[error("kernels {first} and {second} are both named `{name}`")]
    DuplicateKernelName {
        /// The shared name.
        name: String,
        /// The earlier kernel's index.
        first: usize,
        /// The later kernel's index.
        second: usize,
    },

    /// A kernel has no code.
    #[error("kernel {kernel} `{name}` has length 0")]
    EmptyKernel {
        /// Index in [`crate::Artifact::kernels`].
        kernel: usize,
        /// Its name.
        name: String,
    },

    /// A kernel declares more worker scratch than [`crate::abi::MAX_WORKER_SCRATCH`].
    #[error(
        "kernel {kernel} `{name}` declares {bytes} bytes of worker scratch; at most {max} are \
         allowed"
    )]
    WorkerScratchTooLarge {
        /// Index in [`crate::Artifact::kernels`].
        kernel: usize,
        /// Its name.
        name: String,
        /// What it declares.
        bytes: u64,
        /// The limit.
        max: u64,
    },

    /// A kernel's code range does not lie inside [`crate::Artifact::code`].
    #[error(
        "kernel {kernel} `{name}`: code at offset {offset} length {len} exceeds the \
         {code_len} code bytes"
    )]
    KernelOutOfBounds {
        /// Index in [`crate::Artifact::kernels`].
        kernel: usize,
        /// Its name.
        name: String,
        /// Its entry offset.
        offset: u32,
        /// Its length.
        len: u32,
        /// Length of the code.
        code_len: usize,
    },

    /// A kernel's entry point is not aligned as its architecture requires.
    #[error(
        "kernel {kernel} `{name}`: entry offset {offset} is not a multiple of {alignment}, \
         the code alignment of {arch}"
    )]
    MisalignedKernel {
        /// Index in [`crate::Artifact::kernels`].
        kernel: usize,
        /// Its name.
        name: String,
        /// Its entry offset.
        offset: u32,
        /// [`Arch::code_alignment`].
        alignment: u32,
        /// The target architecture.
        arch: Arch,
    },

    /// The plan has more slots than a [`SlotId`] can number.
    #[error("the plan has {count} slots, more than {max}")]
    TooManySlots {
        /// Number of slots.
        count: usize,
        /// The largest allowed count.
        max: usize,
    },

    /// The scratch slots laid out together ([`crate::ArtifactPlan::scratch_layout`]) need more
    /// than `u64::MAX` bytes.
    #[error("the {count} scratch slots together need more than u64::MAX bytes")]
    ScratchTooLarge {
        /// Number of scratch slots.
        count: usize,
    },

    /// A slot's alignment is 0 or not a power of two.
    #[error("{slot} ({kind}): alignment {alignment} is not a power of two")]
    BadAlignment {
        /// The slot.
        slot: SlotId,
        /// Its kind.
        kind: SlotKind,
        /// The alignment given.
        alignment: u64,
    },

    /// An input, output or weight slot has no tensor type.
    #[error("{slot} ({kind}) has no tensor type; input, output and weight slots need one")]
    MissingType {
        /// The slot.
        slot: SlotId,
        /// Its kind.
        kind: SlotKind,
    },

    /// A slot's type does not occupy exactly its byte size.
    #[error("{slot} ({kind}): type {ty} occupies {type_bytes} bytes but the slot has {byte_size}")]
    TypeSizeMismatch {
        /// The slot.
        slot: SlotId,
        /// Its kind.
        kind: SlotKind,
        /// The slot's type.
        ty: Type,
        /// Bytes a dense buffer of `ty` occupies.
        type_bytes: u64,
        /// The slot's byte size.
        byte_size: u64,
    },

    /// A slot's type has a byte size that overflows `u64`.
    #[error("{slot} ({kind}): the byte size of type {ty} overflows u64")]
    TypeSizeOverflow {
        /// The slot.
        slot: SlotId,
        /// Its kind.
        kind: SlotKind,
        /// The slot's type.
        ty: Type,
    },

    /// Two input (or two output) slots have the same number.
    #[error("{kind} number {number} is used by both {first} and {second}")]
    DuplicateIoNumber {
        /// [`SlotKind::Input`] or [`SlotKind::Output`].
        kind: SlotKind,
        /// The shared number.
        number: u32,
        /// The earlier slot.
        first: SlotId,
        /// The later slot.
        second: SlotId,
    },

    /// Input (or output) numbers are not `0..count`.
    #[error(
        "the {count} {kind} slots must be numbered 0..{count}, but {kind} {missing} is absent"
    )]
    IoNumberGap {
        /// [`SlotKind::Input`] or [`SlotKind::Output`].
        kind: SlotKind,
        /// Number of slots of that kind.
        count: usize,
        /// The smallest number below `count` that no slot has.
        missing: u32,
    },

    /// A weight slot has an empty name.
    #[error("{slot} is a weight with an empty name")]
    UnnamedWeight {
        /// The slot.
        slot: SlotId,
    },

    /// Two weight slots have the same name.
    #[error("{first} and {second} are both weight `{name}`")]
    DuplicateWeight {
        /// The shared name.
        name: String,
        /// The earlier slot.
        first: SlotId,
        /// The later slot.
        second: SlotId,
    },

    /// A constant slot's payload does not lie inside [`crate::Artifact::constants`].
    #[error(
        "{slot} (constant): payload at offset {offset} length {len} exceeds the \
         {constants_len} constant bytes"
    )]
    ConstantOutOfBounds {
        /// The slot.
        slot: SlotId,
        /// The payload's offset in the constants.
        offset: u64,
        /// The payload's length (the slot's byte size).
        len: u64,
        /// Length of [`crate::Artifact::constants`].
        constants_len: usize,
    },

    /// A constant slot's payload offset is not a multiple of its alignment.
    #[error(
        "{slot} (constant): payload offset {offset} is not a multiple of its alignment {alignment}"
    )]
    MisalignedConstant {
        /// The slot.
        slot: SlotId,
        /// The payload's offset in the constants.
        offset: u64,
        /// The slot's alignment.
        alignment: u64,
    },

    /// A dispatch names a kernel that does not exist.
    #[error("command {command}: dispatch of kernel {kernel}, but the artifact has {kernel_count} kernels")]
    UnknownKernel {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// The kernel index given.
        kernel: u32,
        /// Number of kernels.
        kernel_count: usize,
    },

    /// A dispatch has zero workgroups.
    #[error("command {command}: dispatch of kernel {kernel} has 0 workgroups")]
    NoWorkgroups {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// The kernel index.
        kernel: u32,
    },

    /// A chained dispatch is not followed by a dispatch with the same workgroup count.
    #[error(
        "command {command}: dispatch chained to the next, which is not a dispatch of the same \
         {workgroups} workgroups"
    )]
    BrokenChain {
        /// Index in [`crate::LaunchPlan::commands`] of the chained dispatch.
        command: usize,
        /// Its workgroup count.
        workgroups: u32,
    },

    /// A setup command is a chained dispatch: setup commands run per derived slot (only those
    /// writing it, in order), so a chain would link commands of different slots.
    #[error("setup command {command}: a dispatch chained to the next (setup runs no chains)")]
    ChainedSetup {
        /// Index in [`crate::Artifact::setup`]'s commands.
        command: usize,
    },

    /// A dispatch has more than [`crate::abi::MAX_BINDINGS`] bindings.
    #[error("command {command}: dispatch has {count} bindings, more than the limit {max}")]
    TooManyBindings {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// Number of bindings.
        count: usize,
        /// [`crate::abi::MAX_BINDINGS`].
        max: usize,
    },

    /// A dispatch has more than [`crate::abi::MAX_SCALARS`] scalars.
    #[error("command {command}: dispatch has {count} scalars, more than the limit {max}")]
    TooManyScalars {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// Number of scalars.
        count: usize,
        /// [`crate::abi::MAX_SCALARS`].
        max: usize,
    },

    /// A fill's pattern width is not 1, 2 or 4.
    #[error("command {command}: fill pattern width {width} is not 1, 2 or 4")]
    BadFillWidth {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// The width given.
        width: u8,
    },

    /// A fill's pattern has bits above its width.
    #[error("command {command}: fill pattern {pattern:#x} does not fit in {width} bytes")]
    FillPatternTooWide {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// The pattern.
        pattern: u32,
        /// The width.
        width: u8,
    },

    /// A fill's region offset or length is not a multiple of the pattern width.
    #[error(
        "command {command}: fill region at offset {offset} length {len} is not aligned to \
         the pattern width {width}"
    )]
    MisalignedFill {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// The region's offset.
        offset: u64,
        /// The region's length.
        len: u64,
        /// The width.
        width: u8,
    },

    /// A copy's source and destination lengths differ.
    #[error(
        "command {command}: copy source length {src_len} differs from destination length {dst_len}"
    )]
    CopyLengthMismatch {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// Source length.
        src_len: u64,
        /// Destination length.
        dst_len: u64,
    },

    /// A copy's source and destination share bytes.
    #[error(
        "command {command}: copy source at offset {src_offset} and destination at offset \
         {dst_offset}, length {len}, overlap in {slot}"
    )]
    CopyOverlap {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// The slot of both regions.
        slot: SlotId,
        /// Source offset.
        src_offset: u64,
        /// Destination offset.
        dst_offset: u64,
        /// The common length.
        len: u64,
    },

    /// A region names a slot that does not exist.
    #[error(
        "command {command} ({operand}): {slot} does not exist; the plan has {slot_count} slots"
    )]
    UnknownSlot {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// Which region of the command.
        operand: Operand,
        /// The slot named.
        slot: SlotId,
        /// Number of slots.
        slot_count: usize,
    },

    /// A region does not lie inside its slot (including `offset + len` overflowing).
    #[error(
        "command {command} ({operand}): region at offset {offset} length {len} exceeds the \
         {slot_size} bytes of {slot}"
    )]
    RegionOutOfBounds {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// Which region of the command.
        operand: Operand,
        /// The slot.
        slot: SlotId,
        /// The region's offset.
        offset: u64,
        /// The region's length.
        len: u64,
        /// The slot's byte size.
        slot_size: u64,
    },

    /// A command writes an input, weight or constant slot.
    #[error("command {command} ({operand}) writes {slot}, a read-only {kind} slot")]
    WriteToReadOnly {
        /// Index in [`crate::LaunchPlan::commands`].
        command: usize,
        /// Which region of the command.
        operand: Operand,
        /// The slot.
        slot: SlotId,
        /// Its kind.
        kind: SlotKind,
    },

    /// Some byte of an output slot is written by no command, so the caller would get whatever
    /// its buffer held.
    #[error(
        "output {output} ({slot}): byte {offset} of {byte_size} is not written by any command"
    )]
    OutputNotWritten {
        /// The output number.
        output: u32,
        /// Its slot.
        slot: SlotId,
        /// The first byte no command writes.
        offset: u64,
        /// The slot's byte size.
        byte_size: u64,
    },

    /// A derived slot's layout is empty.
    #[error("derived slot {slot} has an empty layout")]
    UnnamedLayout {
        /// The derived slot.
        slot: SlotId,
    },

    /// A derived slot's source is not a weight or constant slot of the plan.
    #[error("derived slot {slot} is computed from {from}, which the plan has no slot for")]
    UnknownDerivedSource {
        /// The derived slot.
        slot: SlotId,
        /// The source as named.
        from: String,
    },

    /// A setup command touches a slot that is not its derived slot's source or the derived
    /// slot itself (setup runs once, with no caller buffers and no scratch).
    #[error(
        "setup command {command} {operand}: touches {slot} ({kind}), but setup commands touch \
         only a derived slot and its source"
    )]
    SetupTouchesSlot {
        /// Index in [`crate::Artifact::setup`].
        command: usize,
        /// Which of its regions.
        operand: Operand,
        /// The slot.
        slot: SlotId,
        /// Its kind.
        kind: SlotKind,
    },

    /// A setup command writes no derived slot, or more than one.
    #[error("setup command {command} writes {written} derived slots; it must write exactly one")]
    SetupWrites {
        /// Index in [`crate::Artifact::setup`].
        command: usize,
        /// How many distinct slots it writes.
        written: usize,
    },

    /// Some byte of a derived slot is written by no setup command.
    #[error(
        "derived slot {slot}: byte {offset} of {byte_size} is not written by any setup command"
    )]
    DerivedNotWritten {
        /// The derived slot.
        slot: SlotId,
        /// The first byte no setup command writes.
        offset: u64,
        /// The slot's byte size.
        byte_size: u64,
    },
}
