//! A chain's intermediates in worker scratch: a scratch region that one link of a dispatch
//! chain (`plan/chain.rs`) writes row by row and only later links of the same chain read,
//! at the same rows, never leaves the workgroup that wrote it. So it needs only one
//! workgroup's rows, in the worker's scratch ([`RowScratch`]), where they stay in the
//! cache, instead of rows spread over the whole buffer, which go to memory and come back.
//!
//! That is the stored `exp` of a row softmax (`plan/mod.rs` stores it once where it is
//! chained): the `exp` link writes a workgroup's rows (and, since `plan/keep.rs`, sums them
//! as it does), the division link rereads them. Measured on an AVX-512 host (Intel, 48 KiB
//! L1d and 2 MiB L2 per core; `accy bench`, 1 thread, min of alternating rounds), before the
//! sum was fused, an f32 4096×1024 softmax: `exp` recomputed by two
//! links 2.21-2.22 ms; stored once in a 16 MiB buffer 3.23-3.29 ms (2.26 ms without
//! non-temporal stores); in worker scratch 2.06-2.08 ms, and 1.82 ms once the hint to fetch
//! the next workgroup's rows moved from the division link, which no longer reads the input,
//! to the `exp` link (`plan/chain.rs`). `cargo xtask bench memory`, two alternating rounds
//! (copy 4.66-4.70 ms): 4096×1024 2.29 → 1.93-1.95 ms at 1 thread (51 → 60% of the copy's
//! rate), 1.05-1.06 ms → 952-964 µs at 2; 16384×1024 9.08-9.23 → 7.67-7.79 ms, 4.16-4.29 →
//! 3.79 ms.
//!
//! A region qualifies when:
//! - its slot is scratch (so no caller sees it) and some link writes it as its store, with
//!   no reduction, or as the value a reduction keeps (`crate::kernel::Keep`), through a map
//!   that covers every element of the binding once (so each row is written whole before
//!   anything reads it);
//! - while that value lives (to the first later command that writes bytes it overlaps: slots
//!   are reused, `plan/buffers.rs`), every access to it is a read of exactly that region by a
//!   later link of the same chain, row-partitioned with the same row bytes; no setup command
//!   touches it.
//!
//! The dispatches keep their regions, which the kernels no longer touch (so binding numbers,
//! the artifact's checks and the interpreters stay as they were): the slot is still
//! allocated, but its pages are never written.

use accy_artifact::abi::MAX_WORKER_SCRATCH;
use accy_artifact::{Access, ArtifactPlan, Command, Operand, Region, SlotRole};

use crate::kernel::{IndexMap, Kernel, LoopKernel, RowScratch, Rows};

/// Alignment of each reservation in the worker's scratch (a cache line).
const ALIGN: u64 = 64;

/// Gives the qualifying regions of every chain in `commands` a home in worker scratch
/// (see the module doc). `setup` is only checked for accesses.
pub(super) fn place(
    commands: &[Command],
    setup: &[Command],
    kernels: &mut [Kernel],
    plan: &ArtifactPlan,
) {
    let mut start = 0;
    while start < commands.len() {
        let end = chain_end(commands, start);
        if end > start {
            for (index, entry) in chain_scratch(commands, setup, kernels, plan, start, end) {
                if let Some(Kernel::Loop(k)) = kernels.get_mut(index) {
                    k.row_scratch.push(entry);
                }
            }
        }
        start = end + 1;
    }
}

/// The index of the last link of the chain starting at `start`, or `start` when the command
/// there is not chained to the next.
fn chain_end(commands: &[Command], start: usize) -> usize {
    let mut end = start;
    while let Some(Command::Dispatch { chained: true, .. }) = commands.get(end) {
        end += 1;
    }
    end.min(commands.len().saturating_sub(1))
}

/// The loop kernel of dispatch `command`, with its index, when no other command (setup
/// included) dispatches it.
fn lone_kernel<'k>(
    command: &Command,
    commands: &[Command],
    setup: &[Command],
    kernels: &'k [Kernel],
) -> Option<(usize, &'k LoopKernel)> {
    let Command::Dispatch { kernel, .. } = command else {
        return None;
    };
    let uses = commands
        .iter()
        .chain(setup)
        .filter(|c| matches!(c, Command::Dispatch { kernel: other, .. } if other == kernel))
        .count();
    let k = kernels.get(*kernel as usize)?.as_loop()?;
    (uses == 1).then_some((*kernel as usize, k))
}

/// Whether `map` visits every element of `0..elements` exactly once over `dims`: offset 0 and
/// row-major strides.
fn covers_once(map: &IndexMap, dims: &[u64], elements: u64) -> bool {
    let mut stride: u64 = 1;
    for (&s, &d) in map.strides.iter().zip(dims).rev() {
        if u64::try_from(s).ok() != Some(stride) {
            return false;
        }
        let Some(next) = stride.checked_mul(d) else {
            return false;
        };
        stride = next;
    }
    map.offset == 0 && map.strides.len() == dims.len() && stride == elements
}

/// The reservations of the chain `commands[start..=end]`: (kernel index, entry) pairs.
fn chain_scratch(
    commands: &[Command],
    setup: &[Command],
    kernels: &[Kernel],
    plan: &ArtifactPlan,
    start: usize,
    end: usize,
) -> Vec<(usize, RowScratch)> {
    let mut entries = Vec::new();
    let Some(Command::Dispatch { workgroups, .. }) = commands.get(start) else {
        return entries;
    };
    let workgroups = u64::from(*workgroups).max(1);
    let mut next_offset = 0u64;
    for writer in start..=end {
        let Some((index, k)) = lone_kernel(&commands[writer], commands, setup, kernels) else {
            continue;
        };
        let Command::Dispatch { bindings, .. } = &commands[writer] else {
            continue;
        };
        // The value written at every point: an elementwise kernel's store, or a reducing
        // kernel's kept value (a softmax's terms, stored while they are summed).
        let (written, map, space) = match (&k.keep, k.reduction) {
            (Some(keep), _) => (keep.binding, &keep.map, &k.dims[..]),
            (None, None) => (k.store.binding, &k.store.map, &k.dims[..]),
            (None, Some(_)) => continue,
        };
        let Some(binding) = bindings.get(written as usize) else {
            continue;
        };
        let region = binding.region;
        let scratch = plan
            .slot(region.slot)
            .is_some_and(|s| s.role == SlotRole::Scratch);
        let elements = k.bindings[written as usize].elements;
        let live = k.live_nodes();
        let Rows::Partitioned { bytes: row_bytes } = k.rows_of(&live, written) else {
            continue;
        };
        if !scratch || !covers_once(map, space, elements) {
            continue;
        }
        let span = (writer, end);
        let Some(readers) = readers(commands, setup, kernels, region, span, row_bytes) else {
            continue;
        };
        let rows = k.dims.first().copied().unwrap_or(0);
        let Some(bytes) = rows.div_ceil(workgroups).checked_mul(row_bytes) else {
            continue;
        };
        let offset = next_offset;
        let Some(after) = offset
            .checked_add(bytes)
            .filter(|&e| e <= MAX_WORKER_SCRATCH)
            .and_then(|e| e.checked_next_multiple_of(ALIGN))
        else {
            continue;
        };
        next_offset = after;
        let entry = |binding: u32| RowScratch {
            binding,
            offset,
            row_bytes,
            bytes,
        };
        entries.push((index, entry(written)));
        entries.extend(readers.into_iter().map(|(i, b)| (i, entry(b))));
    }
    entries
}

/// The (kernel index, binding) of each read of `region`'s value, when all of them are by
/// links `writer + 1 ..= end`, each of exactly `region` and row-partitioned in rows of
/// `row_bytes`; `None` otherwise.
///
/// Scratch bytes are reused once a value is dead (`plan/buffers.rs`), so only the value's
/// lifetime counts: commands before the writer touch earlier values (the writer overwrites
/// every byte before any link reads), and after it the value is dead at the first command
/// that writes bytes it overlaps without reading any (no command writes a live value's bytes
/// but its writer), while any read of them before that may be reading the value. No setup
/// command may touch it.
fn readers(
    commands: &[Command],
    setup: &[Command],
    kernels: &[Kernel],
    region: Region,
    (writer, end): (usize, usize),
    row_bytes: u64,
) -> Option<Vec<(usize, u32)>> {
    let overlapping = |c: &Command| -> Vec<(Operand, Region, Access)> {
        c.accesses()
            .filter(|(_, r, _)| r.overlaps(&region))
            .collect()
    };
    // The writer touches it through its store binding alone; no setup command touches it.
    let by_writer = commands.get(writer).map(overlapping);
    if by_writer.is_none_or(|uses| uses.len() != 1)
        || setup.iter().any(|c| !overlapping(c).is_empty())
    {
        return None;
    }
    let mut found = Vec::new();
    for (c, command) in commands.iter().enumerate().skip(writer + 1) {
        let uses = overlapping(command);
        if uses.is_empty() {
            continue;
        }
        if !uses.iter().any(|(_, _, access)| access.reads()) {
            // Another value's writer: this one is dead.
            break;
        }
        if c > end {
            return None;
        }
        let (index, k) = lone_kernel(command, commands, setup, kernels)?;
        let live = k.live_nodes();
        for (operand, r, access) in uses {
            let Operand::Binding(b) = operand else {
                return None;
            };
            let rows = k.rows_of(&live, b as u32);
            if r != region
                || access != Access::Read
                || rows != (Rows::Partitioned { bytes: row_bytes })
            {
                return None;
            }
            found.push((index, b as u32));
        }
    }
    Some(found)
}

/// Whether value `v` of `program` looks like a chain's intermediate that [`place`] can keep in
/// worker scratch: at least two dims with at least two rows, a reduce of the value keeps dim 0,
/// and every other user is elementwise over the value's own dims. The planner asks it before
/// it stores such a value once instead of recomputing it (`plan/mod.rs`); a value that fails
/// [`place`] after all is stored in a whole buffer, which is right, only slower.
pub(super) fn may_stay_in_rows(program: &accy_ir::Program, v: accy_ir::ValueId) -> bool {
    use accy_ir::Op;
    let Some(ty) = program.value_type(v) else {
        return false;
    };
    if ty.dims.len() < 2 || ty.dims.first().is_none_or(|&d| d < 2) {
        return false;
    }
    let is_output = program.outputs.iter().any(|o| o.value == v);
    !is_output
        && program
            .instructions
            .iter()
            .enumerate()
            .filter(|(_, inst)| inst.op.operands().contains(&v))
            .all(|(k, inst)| match &inst.op {
                Op::Reduce { axes, .. } => !axes.contains(&0),
                Op::Unary { .. }
                | Op::Binary { .. }
                | Op::Compare { .. }
                | Op::Select { .. }
                | Op::Convert { .. } => program
                    .value_type(program.instruction_value(k))
                    .is_some_and(|t| t.dims == ty.dims),
                _ => false,
            })
}
