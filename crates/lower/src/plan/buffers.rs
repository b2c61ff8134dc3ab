//! Scratch assignment: virtual buffers become slots, and pending commands become artifact
//! commands over slot regions.
//!
//! Buffers of inputs, weights, outputs and constants already have their slots. Every other
//! buffer is live from the first command that touches it to the last; commands are walked in
//! order and, at each command, buffers first touched there get a scratch slot — the smallest
//! free slot at least as large (best fit), or a new one — and then buffers last touched there
//! free theirs. Allocating before freeing keeps a command's inputs and outputs in distinct
//! slots. A buffer always starts at byte 0 of its slot; a reused slot may be larger than the
//! buffer, and regions name only the buffer's bytes.
//!
//! Scratch slots are aligned to [`SCRATCH_ALIGNMENT`] bytes so emitters may use aligned vector
//! accesses on them.

use std::collections::HashMap;

use accy_artifact::{Binding, Command, Region, Slot, SlotId};
use accy_ir::DType;

use super::expr::BufId;
use super::{LoweredProgram, Pending, Planner};
use crate::error::CompileError;

/// Where a buffer lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Home {
    /// In this slot, from byte 0 (inputs, weights, outputs, constants).
    Slot(SlotId),
    /// In a scratch slot chosen by liveness.
    Scratch,
}

/// One virtual buffer: a dense array of `elements` values of `dtype`.
#[derive(Clone, Debug)]
pub(super) struct Buffer {
    pub(super) dtype: DType,
    pub(super) elements: u64,
    pub(super) home: Home,
}

impl Buffer {
    pub(super) fn bytes(&self) -> u64 {
        self.elements.saturating_mul(self.dtype.size_bytes())
    }
}

/// The alignment of every scratch slot: a cache line, enough for any vector access.
pub(crate) const SCRATCH_ALIGNMENT: u64 = 64;

/// First and last command index touching each scratch buffer.
fn lifetimes(commands: &[Pending]) -> HashMap<BufId, (usize, usize)> {
    let mut life: HashMap<BufId, (usize, usize)> = HashMap::new();
    for (c, command) in commands.iter().enumerate() {
        for buf in touched(command) {
            life.entry(buf).and_modify(|l| l.1 = c).or_insert((c, c));
        }
    }
    life
}

/// The buffers a command touches.
pub(super) fn touched(command: &Pending) -> Vec<BufId> {
    match command {
        Pending::Fill { buf, .. } => vec![*buf],
        Pending::Copy { src, dst, .. } => vec![*src, *dst],
        Pending::Dispatch { bindings, .. } => bindings.iter().map(|(b, _)| *b).collect(),
        Pending::Placed(command) => command.accesses().map(|(_, r, _)| r.slot.0).collect(),
    }
}

/// Assigns scratch slots and builds the [`LoweredProgram`].
pub(super) fn assign(p: Planner<'_>) -> Result<LoweredProgram, CompileError> {
    let Planner {
        bufs,
        mut plan,
        constants,
        commands,
        setup,
        kernels,
        sources,
        ..
    } = p;
    let life = lifetimes(&commands);
    let mut slot_of: HashMap<BufId, SlotId> = HashMap::new();
    for (i, b) in bufs.iter().enumerate() {
        if let Home::Slot(s) = b.home {
            slot_of.insert(i as BufId, s);
        }
    }
    // Free scratch slots with their sizes.
    let mut free: Vec<(SlotId, u64)> = Vec::new();
    for (c, command) in commands.iter().enumerate() {
        let mut starting: Vec<BufId> = touched(command)
            .into_iter()
            .filter(|b| life.get(b).is_some_and(|l| l.0 == c) && !slot_of.contains_key(b))
            .collect();
        starting.sort_unstable();
        starting.dedup();
        for buf in starting {
            let need = bufs
                .get(buf as usize)
                .ok_or_else(|| CompileError::internal(format!("buffer {buf} missing")))?
                .bytes();
            let best = free
                .iter()
                .enumerate()
                .filter(|(_, (_, size))| *size >= need)
                .min_by_key(|(_, (_, size))| *size)
                .map(|(i, _)| i);
            let slot = match best {
                Some(i) => free.swap_remove(i).0,
                None => plan
                    .add(Slot::scratch(need, SCRATCH_ALIGNMENT))
                    .ok_or_else(|| CompileError::unsupported("too many slots"))?,
            };
            slot_of.insert(buf, slot);
        }
        let mut ending: Vec<BufId> = touched(command)
            .into_iter()
            .filter(|b| life.get(b).is_some_and(|l| l.1 == c))
            .collect();
        ending.sort_unstable();
        ending.dedup();
        for buf in ending {
            let is_scratch = bufs
                .get(buf as usize)
                .is_some_and(|b| b.home == Home::Scratch);
            if let (true, Some(&slot)) = (is_scratch, slot_of.get(&buf)) {
                let size = plan.slot(slot).map_or(0, |s| s.byte_size);
                free.push((slot, size));
            }
        }
    }

    let region = |buf: BufId, offset: u64, len: u64| -> Result<Region, CompileError> {
        let slot = slot_of
            .get(&buf)
            .copied()
            .ok_or_else(|| CompileError::internal(format!("buffer {buf} has no slot")))?;
        Ok(Region::new(slot, offset, len))
    };
    let whole = |buf: BufId| -> Result<Region, CompileError> {
        let b = bufs
            .get(buf as usize)
            .ok_or_else(|| CompileError::internal(format!("buffer {buf} missing")))?;
        region(buf, 0, b.bytes())
    };
    let convert = |commands: &[Pending]| {
        commands
            .iter()
            .map(|c| {
                Ok(match c {
                    Pending::Fill {
                        buf,
                        pattern,
                        width,
                    } => Command::Fill {
                        dst: whole(*buf)?,
                        pattern: *pattern,
                        width: *width,
                    },
                    Pending::Copy {
                        src,
                        src_offset,
                        dst,
                        len,
                    } => Command::Copy {
                        src: region(*src, *src_offset, *len)?,
                        dst: region(*dst, 0, *len)?,
                    },
                    Pending::Placed(command) => placed(command, &region)?,
                    Pending::Dispatch {
                        kernel,
                        bindings,
                        workgroups,
                    } => Command::Dispatch {
                        kernel: *kernel,
                        bindings: bindings
                            .iter()
                            .map(|&(buf, access)| Ok(Binding::new(whole(buf)?, access)))
                            .collect::<Result<_, CompileError>>()?,
                        scalars: Vec::new(),
                        workgroups: *workgroups,
                        chained: false,
                    },
                })
            })
            .collect::<Result<Vec<Command>, CompileError>>()
    };
    Ok(LoweredProgram {
        setup: convert(&setup)?,
        commands: convert(&commands)?,
        plan,
        constants,
        kernels,
        sources,
    })
}

/// A [`Pending::Placed`] command with each region's buffer replaced by its slot.
fn placed(
    command: &Command,
    region: &dyn Fn(BufId, u64, u64) -> Result<Region, CompileError>,
) -> Result<Command, CompileError> {
    map_regions(command, 0, &|r| region(r.slot.0, r.offset, r.len))
}

/// `command` with every region replaced by `region(it)` and its kernel number (of a
/// dispatch) shifted by `kernel_shift`.
pub(super) fn map_regions(
    command: &Command,
    kernel_shift: u32,
    region: &dyn Fn(&Region) -> Result<Region, CompileError>,
) -> Result<Command, CompileError> {
    Ok(match command {
        Command::Fill {
            dst,
            pattern,
            width,
        } => Command::Fill {
            dst: region(dst)?,
            pattern: *pattern,
            width: *width,
        },
        Command::Copy { src, dst } => Command::Copy {
            src: region(src)?,
            dst: region(dst)?,
        },
        Command::Dispatch {
            kernel,
            bindings,
            scalars,
            workgroups,
            chained,
        } => Command::Dispatch {
            kernel: kernel + kernel_shift,
            bindings: bindings
                .iter()
                .map(|b| Ok(Binding::new(region(&b.region)?, b.access)))
                .collect::<Result<_, CompileError>>()?,
            scalars: scalars.clone(),
            workgroups: *workgroups,
            chained: *chained,
        },
    })
}
