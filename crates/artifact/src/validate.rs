//! [`Artifact::validate`]: proves an artifact well formed and summarises how each slot is used.
//!
//! Checked, in this order (the first violation is returned; an artifact comes from our own
//! compiler or from storage, so one precise error is enough to act on):
//! 1. the ABI version is [`abi::ABI_VERSION`]; every target feature belongs to the target's
//!    architecture;
//! 2. kernels: names non-empty and unique, length at least 1, `offset + len` inside `code`,
//!    entry offsets aligned to [`crate::Arch::code_alignment`], worker scratch at most
//!    [`abi::MAX_WORKER_SCRATCH`] bytes;
//! 3. slots: at most `u32::MAX` of them; alignments are powers of two; input, output and weight
//!    slots have a type whose dense size is the slot's size (a typed constant or scratch slot
//!    too); input and output numbers are each dense `0..n` without duplicates; weight names
//!    non-empty and unique; each constant payload lies inside `constants` at an offset that is
//!    a multiple of the slot's alignment; all scratch slots fit in one block of at most
//!    `u64::MAX` bytes;
//! 4. commands: dispatches name an existing kernel, have at least one workgroup and at most
//!    [`abi::MAX_BINDINGS`] bindings and [`abi::MAX_SCALARS`] scalars, and a chained one is
//!    followed by a dispatch of as many workgroups; fills have width 1, 2 or
//!    4 and a pattern that fits; copies have equal lengths; every region names an existing slot
//!    and lies inside it (`offset + len <= byte_size`, with overflow caught); no command writes
//!    an input, weight or constant slot; fill regions are aligned to the width; a copy's source
//!    and destination do not overlap;
//! 5. every byte of every output slot is written by some command;
//! 6. derived slots and setup (module `setup`): each derived slot has a non-empty layout and
//!    names a weight or constant slot of the plan; each setup command is well formed as in 4
//!    and not chained, writes exactly one derived slot and touches nothing but it and its
//!    source; every byte of every derived slot is written by some setup command.
//!
//! Not checked (promises of the compiler, documented where they are made): that scratch and
//! output bytes are written before they are read, that workgroups of one dispatch write
//! disjoint bytes, that a chain's links touch shared bytes from one workgroup index only,
//! that overlapping bindings of one dispatch are safe for that kernel, and that
//! kernels keep the ABI's rules.

use std::collections::{BTreeMap, HashMap};

use crate::slots::ScratchLayout;
use crate::{abi, Artifact, ArtifactError, Command, SlotId, SlotKind, SlotRole};

/// How the commands use one slot, gathered in one pass by [`Artifact::validate`].
///
/// A runtime uses it to check a caller's buffer once, when binding (size, alignment), and to
/// size private memory (`extent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotUsage {
    /// The slot's kind.
    pub kind: SlotKind,
    /// The slot's declared size, which a caller's buffer must match exactly.
    pub byte_size: u64,
    /// The alignment the slot's base address must have (a power of two).
    pub alignment: u64,
    /// One past the highest byte any command touches; 0 if no command touches the slot.
    /// Never more than `byte_size`.
    pub extent: u64,
    /// True if some command reads the slot.
    pub read: bool,
    /// True if some command writes the slot (never for inputs, weights and constants).
    pub written: bool,
}

/// What a runtime needs from a validated artifact, computed once by [`Artifact::validate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanSummary {
    /// Per-slot usage, indexed by [`SlotId`].
    pub usage: Vec<SlotUsage>,
    /// The input slots; item `n` is input `n`.
    pub inputs: Vec<SlotId>,
    /// The output slots; item `n` is output `n`.
    pub outputs: Vec<SlotId>,
    /// The weight slots, in slot order.
    pub weights: Vec<SlotId>,
    /// The derived slots, in slot order.
    pub derived: Vec<SlotId>,
    /// The alignment the base of [`Artifact::constants`] must have in memory so that every
    /// constant slot is aligned (the largest constant-slot alignment, at least 1).
    pub constants_alignment: u64,
    /// Where each scratch slot sits in one block of private memory.
    pub scratch: ScratchLayout,
    /// The worker-scratch stride a runtime gives: the largest
    /// [`crate::KernelEntry::worker_scratch`], rounded up to [`abi::WORKER_SCRATCH_ALIGN`].
    pub worker_scratch: u64,
}

impl PlanSummary {
    /// The usage of slot `id`, or `None` if there is no such slot.
    pub fn usage(&self, id: SlotId) -> Option<&SlotUsage> {
        self.usage.get(id.index())
    }
}

impl Artifact {
    /// Checks every structural invariant listed in this module's documentation and returns
    /// the [`PlanSummary`] a runtime binds buffers with, or the first violation found.
    ///
    /// Success guarantees that executing the launch plan as documented touches only bytes
    /// inside slots and never writes a read-only slot, provided the kernels keep the ABI's
    /// rules. It never panics, whatever the artifact holds.
    pub fn validate(&self) -> Result<PlanSummary, ArtifactError> {
        self.check_target()?;
        let worker_scratch = self.check_kernels()?;
        let mut summary = self.check_slots()?;
        summary.worker_scratch = worker_scratch;
        self.check_commands(&mut summary.usage)?;
        self.check_outputs_written(&summary.outputs)?;
        self.check_setup(&summary)?;
        Ok(summary)
    }

    fn check_target(&self) -> Result<(), ArtifactError> {
        if self.abi_version != abi::ABI_VERSION {
            return Err(ArtifactError::UnsupportedAbi {
                found: self.abi_version,
                supported: abi::ABI_VERSION,
            });
        }
        let foreign = self.target.foreign_features();
        if !foreign.is_empty() {
            return Err(ArtifactError::ForeignFeatures {
                arch: self.target.arch,
                foreign,
            });
        }
        Ok(())
    }

    /// Checks every kernel entry; returns the worker-scratch stride they need.
    fn check_kernels(&self) -> Result<u64, ArtifactError> {
        let alignment = self.target.arch.code_alignment();
        let mut worker_scratch = 0u64;
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (i, k) in self.kernels.iter().enumerate() {
            if k.name.is_empty() {
                return Err(ArtifactError::UnnamedKernel { kernel: i });
            }
            if let Some(&first) = names.get(k.name.as_str()) {
                return Err(ArtifactError::DuplicateKernelName {
                    name: k.name.clone(),
                    first,
                    second: i,
                });
            }
            names.insert(&k.name, i);
            if k.len == 0 {
                return Err(ArtifactError::EmptyKernel {
                    kernel: i,
                    name: k.name.clone(),
                });
            }
            if u64::from(k.offset) + u64::from(k.len) > self.code.len() as u64 {
                return Err(ArtifactError::KernelOutOfBounds {
                    kernel: i,
                    name: k.name.clone(),
                    offset: k.offset,
                    len: k.len,
                    code_len: self.code.len(),
                });
            }
            if k.offset % alignment != 0 {
                return Err(ArtifactError::MisalignedKernel {
                    kernel: i,
                    name: k.name.clone(),
                    offset: k.offset,
                    alignment,
                    arch: self.target.arch,
                });
            }
            if k.worker_scratch > abi::MAX_WORKER_SCRATCH {
                return Err(ArtifactError::WorkerScratchTooLarge {
                    kernel: i,
                    name: k.name.clone(),
                    bytes: k.worker_scratch,
                    max: abi::MAX_WORKER_SCRATCH,
                });
            }
            worker_scratch = worker_scratch.max(k.worker_scratch);
        }
        // At most MAX_WORKER_SCRATCH (a multiple of the alignment), so this cannot overflow.
        Ok(worker_scratch.next_multiple_of(abi::WORKER_SCRATCH_ALIGN))
    }

    fn check_slots(&self) -> Result<PlanSummary, ArtifactError> {
        let slots = &self.plan.slots;
        if slots.len() > u32::MAX as usize {
            return Err(ArtifactError::TooManySlots {
                count: slots.len(),
                max: u32::MAX as usize,
            });
        }
        let mut inputs: BTreeMap<u32, SlotId> = BTreeMap::new();
        let mut outputs: BTreeMap<u32, SlotId> = BTreeMap::new();
        let mut weight_names: HashMap<&str, SlotId> = HashMap::new();
        let mut weights = Vec::new();
        let mut derived = Vec::new();
        let mut constants_alignment = 1;
        let mut usage = Vec::with_capacity(slots.len());

        for (id, slot) in self.plan.iter() {
            let kind = slot.role.kind();
            if !slot.alignment.is_power_of_two() {
                return Err(ArtifactError::BadAlignment {
                    slot: id,
                    kind,
                    alignment: slot.alignment,
                });
            }
            match &slot.ty {
                None if matches!(kind, SlotKind::Input | SlotKind::Output | SlotKind::Weight) => {
                    return Err(ArtifactError::MissingType { slot: id, kind });
                }
                None => {}
                Some(ty) => match ty.byte_size() {
                    None => {
                        return Err(ArtifactError::TypeSizeOverflow {
                            slot: id,
                            kind,
                            ty: ty.clone(),
                        })
                    }
                    Some(type_bytes) if type_bytes != slot.byte_size => {
                        return Err(ArtifactError::TypeSizeMismatch {
                            slot: id,
                            kind,
                            ty: ty.clone(),
                            type_bytes,
                            byte_size: slot.byte_size,
                        })
                    }
                    Some(_) => {}
                },
            }
            match &slot.role {
                SlotRole::Input(n) => number_io(&mut inputs, SlotKind::Input, *n, id)?,
                SlotRole::Output(n) => number_io(&mut outputs, SlotKind::Output, *n, id)?,
                SlotRole::Weight(name) => {
                    if name.is_empty() {
                        return Err(ArtifactError::UnnamedWeight { slot: id });
                    }
                    if let Some(&first) = weight_names.get(name.as_str()) {
                        return Err(ArtifactError::DuplicateWeight {
                            name: name.clone(),
                            first,
                            second: id,
                        });
                    }
                    weight_names.insert(name, id);
                    weights.push(id);
                }
                SlotRole::Constant { offset } => {
                    let in_bounds = offset
                        .checked_add(slot.byte_size)
                        .is_some_and(|end| end <= self.constants.len() as u64);
                    if !in_bounds {
                        return Err(ArtifactError::ConstantOutOfBounds {
                            slot: id,
                            offset: *offset,
                            len: slot.byte_size,
                            constants_len: self.constants.len(),
                        });
                    }
                    if offset % slot.alignment != 0 {
                        return Err(ArtifactError::MisalignedConstant {
                            slot: id,
                            offset: *offset,
                            alignment: slot.alignment,
                        });
                    }
                    constants_alignment = slot.alignment.max(constants_alignment);
                }
                SlotRole::Scratch => {}
                SlotRole::Derived { layout, .. } => {
                    if layout.is_empty() {
                        return Err(ArtifactError::UnnamedLayout { slot: id });
                    }
                    derived.push(id);
                }
            }
            usage.push(SlotUsage {
                kind,
                byte_size: slot.byte_size,
                alignment: slot.alignment,
                extent: 0,
                read: false,
                written: false,
            });
        }

        let inputs = dense_numbers(inputs, SlotKind::Input)?;
        let outputs = dense_numbers(outputs, SlotKind::Output)?;
        // Alignments are powers of two (checked above), so only an overflowing total fails.
        let scratch = self
            .plan
            .scratch_layout()
            .ok_or_else(|| ArtifactError::ScratchTooLarge {
                count: usage.iter().filter(|u| u.kind == SlotKind::Scratch).count(),
            })?;
        Ok(PlanSummary {
            usage,
            inputs,
            outputs,
            weights,
            derived,
            constants_alignment,
            scratch,
            worker_scratch: 0,
        })
    }

    fn check_commands(&self, usage: &mut [SlotUsage]) -> Result<(), ArtifactError> {
        for (c, command) in self.launch.commands.iter().enumerate() {
            let next = self.launch.commands.get(c + 1);
            check_command_shape(c, command, next, self.kernels.len())?;
            for (operand, region, access) in command.accesses() {
                let Some(u) = usage.get_mut(region.slot.index()) else {
                    return Err(ArtifactError::UnknownSlot {
                        command: c,
                        operand,
                        slot: region.slot,
                        slot_count: self.plan.slots.len(),
                    });
                };
                let end = match region.end() {
                    Some(end) if end <= u.byte_size => end,
                    _ => {
                        return Err(ArtifactError::RegionOutOfBounds {
                            command: c,
                            operand,
                            slot: region.slot,
                            offset: region.offset,
                            len: region.len,
                            slot_size: u.byte_size,
                        })
                    }
                };
                if access.writes() && u.kind.is_read_only() {
                    return Err(ArtifactError::WriteToReadOnly {
                        command: c,
                        operand,
                        slot: region.slot,
                        kind: u.kind,
                    });
                }
                u.extent = u.extent.max(end);
                u.read |= access.reads();
                u.written |= access.writes();
            }
            check_fill_alignment(c, command)?;
            match command {
                Command::Copy { src, dst } if src.overlaps(dst) => {
                    return Err(ArtifactError::CopyOverlap {
                        command: c,
                        slot: src.slot,
                        src_offset: src.offset,
                        dst_offset: dst.offset,
                        len: src.len,
                    });
                }
                Command::Fill { .. } | Command::Copy { .. } | Command::Dispatch { .. } => {}
            }
        }
        Ok(())
    }

    fn check_outputs_written(&self, outputs: &[SlotId]) -> Result<(), ArtifactError> {
        match self.first_unwritten(&self.launch.commands, outputs) {
            Some((number, offset, byte_size)) => Err(ArtifactError::OutputNotWritten {
                output: u32::try_from(number).unwrap_or(u32::MAX),
                slot: outputs[number],
                offset,
                byte_size,
            }),
            None => Ok(()),
        }
    }

    /// The first of `slots` (its position, the first byte no command writes, its size) that
    /// `commands` do not write entirely. Each slot is in `slots` at most once (the callers'
    /// output and derived slots are).
    pub(super) fn first_unwritten(
        &self,
        commands: &[Command],
        slots: &[SlotId],
    ) -> Option<(usize, u64, u64)> {
        // Written byte ranges per slot, then a sweep per slot for the first gap. `entry_of`
        // finds a slot's entry by its index (no hashing: validation runs on every compile).
        let mut entry_of: Vec<Option<usize>> = vec![None; self.plan.slots.len()];
        for (at, id) in slots.iter().enumerate() {
            if let Some(p) = entry_of.get_mut(id.index()) {
                *p = Some(at);
            }
        }
        let mut written: Vec<Vec<(u64, u64)>> = vec![Vec::new(); slots.len()];
        for command in commands {
            for (_, region, access) in command.accesses() {
                let at = entry_of.get(region.slot.index()).copied().flatten();
                if let (true, Some(at), Some(end)) = (access.writes(), at, region.end()) {
                    if let Some(ranges) = written.get_mut(at) {
                        ranges.push((region.offset, end));
                    }
                }
            }
        }
        for (position, &id) in slots.iter().enumerate() {
            let byte_size = self.plan.slot(id).map_or(0, |s| s.byte_size);
            let mut ranges = written
                .get_mut(position)
                .map(std::mem::take)
                .unwrap_or_default();
            ranges.sort_unstable();
            let mut covered = 0;
            for (start, end) in ranges {
                if start > covered {
                    break;
                }
                covered = covered.max(end);
            }
            if covered < byte_size {
                return Some((position, covered, byte_size));
            }
        }
        None
    }
}

/// Checks of one command (followed by `next`) that do not depend on its regions' slots.
pub(super) fn check_command_shape(
    c: usize,
    command: &Command,
    next: Option<&Command>,
    kernel_count: usize,
) -> Result<(), ArtifactError> {
    match command {
        Command::Fill { pattern, width, .. } => {
            if !matches!(width, 1 | 2 | 4) {
                return Err(ArtifactError::BadFillWidth {
                    command: c,
                    width: *width,
                });
            }
            if u64::from(*pattern) >> (8 * u32::from(*width)) != 0 {
                return Err(ArtifactError::FillPatternTooWide {
                    command: c,
                    pattern: *pattern,
                    width: *width,
                });
            }
        }
        Command::Copy { src, dst } => {
            if src.len != dst.len {
                return Err(ArtifactError::CopyLengthMismatch {
                    command: c,
                    src_len: src.len,
                    dst_len: dst.len,
                });
            }
        }
        Command::Dispatch {
            kernel,
            bindings,
            scalars,
            workgroups,
            chained,
        } => {
            let same_grid = |next: &Command| match next {
                Command::Dispatch { workgroups: w, .. } => w == workgroups,
                _ => false,
            };
            if *chained && !next.is_some_and(same_grid) {
                return Err(ArtifactError::BrokenChain {
                    command: c,
                    workgroups: *workgroups,
                });
            }
            if usize::try_from(*kernel).map_or(true, |k| k >= kernel_count) {
                return Err(ArtifactError::UnknownKernel {
                    command: c,
                    kernel: *kernel,
                    kernel_count,
                });
            }
            if *workgroups == 0 {
                return Err(ArtifactError::NoWorkgroups {
                    command: c,
                    kernel: *kernel,
                });
            }
            if bindings.len() > abi::MAX_BINDINGS {
                return Err(ArtifactError::TooManyBindings {
                    command: c,
                    count: bindings.len(),
                    max: abi::MAX_BINDINGS,
                });
            }
            if scalars.len() > abi::MAX_SCALARS {
                return Err(ArtifactError::TooManyScalars {
                    command: c,
                    count: scalars.len(),
                    max: abi::MAX_SCALARS,
                });
            }
        }
    }
    Ok(())
}

/// A fill's region must be whole units of its width (checked after its region is in bounds).
pub(super) fn check_fill_alignment(c: usize, command: &Command) -> Result<(), ArtifactError> {
    if let Command::Fill { dst, width, .. } = command {
        let w = u64::from(*width);
        if dst.offset % w != 0 || dst.len % w != 0 {
            return Err(ArtifactError::MisalignedFill {
                command: c,
                offset: dst.offset,
                len: dst.len,
                width: *width,
            });
        }
    }
    Ok(())
}

/// Records input or output number `n` of slot `id`, refusing a number already taken.
fn number_io(
    seen: &mut BTreeMap<u32, SlotId>,
    kind: SlotKind,
    n: u32,
    id: SlotId,
) -> Result<(), ArtifactError> {
    if let Some(&first) = seen.get(&n) {
        return Err(ArtifactError::DuplicateIoNumber {
            kind,
            number: n,
            first,
            second: id,
        });
    }
    seen.insert(n, id);
    Ok(())
}

/// The slots in number order, if the (distinct) numbers are exactly `0..count`.
fn dense_numbers(
    numbered: BTreeMap<u32, SlotId>,
    kind: SlotKind,
) -> Result<Vec<SlotId>, ArtifactError> {
    let count = numbered.len();
    // Keys are sorted and distinct, so the first key that differs from its position is larger,
    // and that position is the smallest absent number.
    if let Some((missing, _)) = (0u32..).zip(numbered.keys()).find(|(i, n)| i != *n) {
        return Err(ArtifactError::IoNumberGap {
            kind,
            count,
            missing,
        });
    }
    Ok(numbered.into_values().collect())
}

mod setup;
#[cfg(test)]
mod tests;
