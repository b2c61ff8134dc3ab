//! Dispatch chains: consecutive loop kernels that work row by row on the same rows run
//! workgroup by workgroup (`accy_artifact::Command::Dispatch::chained`), so the rows one pass
//! reads are still in the L2 cache when the next pass reads them.
//!
//! A row softmax is three kernels over its input — a max, a sum of exponentials, the normalising
//! pass (also three where its `exp` is stored once, `plan/mod.rs`: a max, the `exp` stored while it
//! is summed, `plan/keep.rs`, the division) — and a layer norm three as well. Run one after the
//! other over a tensor larger than the cache, each reads it from memory again. But each kernel's
//! workgroup `g` handles the same rows `[⌊g·E/G⌋, ⌊(g+1)·E/G⌋)` of its outermost dim when the
//! kernels have the same outermost extent `E` and workgroup count `G` (the emitters' split), so
//! running the three calls of workgroup `g` back to back touches one block of rows three times
//! while it is cached. That is only right when no workgroup of one link touches bytes that another
//! link's *different* workgroup writes; [`link`] proves it from the kernels' maps:
//!
//! - every binding a link shares with another link (regions that overlap where either one
//!   writes) is *row-partitioned* in both: every access at outer index `r` falls in the
//!   binding's elements `[r·s, (r+1)·s)` for one row stride `s > 0` (all of the binding's maps
//!   have stride `s` on dim 0, and the other dims keep the offset within `[0, s)`), and both
//!   partitions cut the slot at the same bytes (same region offset, same row bytes);
//! - so row `r`'s bytes of a shared region are touched only at outer index `r` in every link,
//!   which is in the same workgroup in every link.
//!
//! Gathers read data-dependent addresses, so a gathered binding is never row-partitioned.
//! The chain's workgroup count is the largest of its links', raised until one workgroup's
//! rows of the row-partitioned data (each region once) fit in half the L2, but never above
//! the rows nor above [`MAX_CHAIN_WORKGROUPS`] (unless a link already had more). A kernel
//! computes the same bytes for any workgroup count, so this changes no result.
//!
//! Run workgroup by workgroup, the first link's pass reads a block of rows from memory while
//! the core waits, and the later links compute on it from the cache while memory idles. So
//! the last link also carries a cache hint ([`crate::kernel::Prefetch`], from [`prefetch`]):
//! with each vector it loads of the largest region the first link reads row by row (and no
//! link writes), fetch the same element of the next workgroup's rows. (When the last link
//! does not load that region, as a softmax's division of its stored exp, the latest link
//! that does carries it.) The executor hands a
//! chain's workgroups to its workers in one contiguous range each (`accy-executable`'s
//! `chain_order.rs`), so the next workgroup is usually the same thread's next one.
//!
//! Chains are formed only where they pay: some region the links share is at least half the
//! last-level cache (half the L2 when the LLC is unknown); smaller ones stay in the LLC from
//! one pass to the next. Measured on an AVX-512 host (32 MiB L3, 1 MiB L2; `accy bench`, 1
//! thread, invocations a second, two alternating rounds), hint and threshold against plain
//! passes: a 4096×1024 f32 layer norm (16 MiB) 856-894 against 439-527, its softmax 447-463
//! against 339-376, 16384×1024 (64 MiB) layer norm 171-182 against 137-140 and softmax
//! 106-109 against 89-95; `cargo xtask bench memory`, two rounds, 2 threads: the 16 MiB
//! softmax 811-854 µs against 964-1000 µs, layer norm 442-522 µs against 670-758 µs. At 12
//! MiB the difference was within the noise and at 4 MiB a layer norm lost 10%, hence half
//! the LLC. Chaining alone, without the hint, was measured no faster, for a softmax slower
//! (1 thread, p50: a 24 MiB softmax 2.53 → 2.72 ms, layer norm 2.3 → 2.0 ms; at 16 MiB,
//! softmax 1.6 → 1.8 ms, layer norm 1.2 ms either way).
//!
//! A link's output that only later links of the chain read (a softmax's stored `exp`) keeps
//! one workgroup's rows in worker scratch instead of spreading them over a buffer for all
//! rows (`plan/row_scratch.rs`), so it is neither streamed past the cache nor written back
//! to memory.

use accy_artifact::{Blocking, Command, Region};

use crate::kernel::{Kernel, LoopKernel, Prefetch, Rows};

/// The most workgroups a chain gets (a call per link each).
const MAX_CHAIN_WORKGROUPS: u64 = 4096;

/// One dispatch of a candidate chain: its loop kernel (and its index) and its bindings'
/// regions with how the kernel touches them.
struct Link<'k> {
    index: usize,
    kernel: &'k LoopKernel,
    uses: Vec<(Region, bool, Rows)>,
}

/// The link for `command` if it is a dispatch of a loop kernel split along a parallel dim 0.
fn link_of<'k>(command: &Command, kernels: &'k [Kernel]) -> Option<Link<'k>> {
    let Command::Dispatch {
        kernel, bindings, ..
    } = command
    else {
        return None;
    };
    let index = *kernel as usize;
    let k = kernels.get(index)?.as_loop()?;
    if k.parallel_rank == 0 || k.dims.first().is_none_or(|&e| e < 2) {
        return None;
    }
    let live = k.live_nodes();
    let uses = bindings
        .iter()
        .enumerate()
        .map(|(i, b)| (b.region, b.access.writes(), k.rows_of(&live, i as u32)))
        .collect();
    Some(Link {
        index,
        kernel: k,
        uses,
    })
}

/// Whether two uses of overlapping regions by different links keep to the same rows.
fn same_rows(a: &(Region, bool, Rows), b: &(Region, bool, Rows)) -> bool {
    match (a.2, b.2) {
        (Rows::Untouched, _) | (_, Rows::Untouched) => true,
        (Rows::Partitioned { bytes: x }, Rows::Partitioned { bytes: y }) => {
            x == y && a.0.offset == b.0.offset
        }
        _ => false,
    }
}

/// Whether `next` may run workgroup by workgroup after the links of `chain`.
fn joins(chain: &[Link<'_>], next: &Link<'_>) -> bool {
    let extent = chain.first().and_then(|l| l.kernel.dims.first());
    if extent != next.kernel.dims.first() {
        return false;
    }
    chain.iter().all(|link| {
        link.uses.iter().all(|a| {
            next.uses.iter().all(|b| {
                let hazard = a.0.overlaps(&b.0) && (a.1 || b.1);
                !hazard || same_rows(a, b)
            })
        })
    })
}

/// Whether the links share a region of at least half the last-level cache (half the L2 when
/// the LLC is unknown): what the LLC no longer holds beside the pass's other data.
fn worth_chaining(chain: &[Link<'_>], caches: &Blocking) -> bool {
    let least = if caches.llc > 0 {
        caches.llc / 2
    } else {
        caches.l2 / 2
    };
    chain.iter().enumerate().any(|(i, a)| {
        chain[i + 1..].iter().any(|b| {
            a.uses.iter().any(|x| {
                b.uses
                    .iter()
                    .any(|y| x.0.overlaps(&y.0) && x.0.len.min(y.0.len) >= least)
            })
        })
    })
}

/// The chain's workgroup count: the largest of its links', raised so that one workgroup's
/// rows of every row-partitioned binding fit in half the L2 cache; at most the rows.
fn chain_workgroups(chain: &[Link<'_>], counts: &[u32], l2: u64) -> u32 {
    let rows = chain
        .first()
        .and_then(|l| l.kernel.dims.first().copied())
        .unwrap_or(1);
    // Each region once, however many links touch it.
    let mut partitioned: Vec<(Region, u64)> = Vec::new();
    for u in chain.iter().flat_map(|l| &l.uses) {
        if let Rows::Partitioned { bytes } = u.2 {
            if !partitioned.iter().any(|(r, _)| r.overlaps(&u.0)) {
                partitioned.push((u.0, bytes));
            }
        }
    }
    let row_bytes = partitioned
        .iter()
        .map(|&(_, bytes)| bytes)
        .fold(0u64, u64::saturating_add);
    let for_cache = rows.saturating_mul(row_bytes).div_ceil((l2 / 2).max(1));
    let most = counts.iter().copied().max().unwrap_or(1);
    let count = for_cache
        .max(u64::from(most))
        .min(rows)
        .min(MAX_CHAIN_WORKGROUPS.max(u64::from(most)));
    u32::try_from(count).unwrap_or(most).max(1)
}

/// The hint for a chain's link when the chain runs in `workgroups` workgroups: fetch the
/// next workgroup's rows of the largest region the first link reads row by row and no link
/// writes, from the latest link after the first that loads that region too (the last one,
/// unless it reads only what the chain computed). `None` when there is no such region, link
/// or next workgroup.
fn prefetch(chain: &[Link<'_>], workgroups: u32) -> Option<(usize, Prefetch)> {
    let first = chain.first()?;
    let rows = *first.kernel.dims.first()?;
    let written = |r: &Region| {
        chain
            .iter()
            .any(|l| l.uses.iter().any(|u| u.1 && u.0.overlaps(r)))
    };
    let source = first
        .uses
        .iter()
        .filter(|u| matches!(u.2, Rows::Partitioned { .. }) && !written(&u.0))
        .max_by_key(|u| u.0.len)?;
    let Rows::Partitioned { bytes } = source.2 else {
        return None;
    };
    // The latest link that reads the rows too: the last one, unless it reads only what the
    // chain computed (a softmax's stored exp divided by its sum).
    let (last, binding) = chain.iter().skip(1).rev().find_map(|link| {
        let binding = link.uses.iter().position(|u| {
            matches!(u.2, Rows::Partitioned { .. })
                && u.0.overlaps(&source.0)
                && same_rows(u, source)
        })?;
        Some((link, binding))
    })?;
    let elem = last.kernel.bindings.get(binding)?.dtype.size_bytes();
    if workgroups < 2 || elem == 0 {
        return None;
    }
    let rows_each = rows.div_ceil(u64::from(workgroups));
    let ahead = rows_each.checked_mul(bytes / elem)?;
    Some((
        last.index,
        Prefetch {
            binding: u32::try_from(binding).ok()?,
            ahead: i64::try_from(ahead).ok()?,
        },
    ))
}

/// Marks runs of consecutive dispatches in `commands` (of `kernels`) as chains where that is
/// proven right (see the module doc) and pays, giving each chain one workgroup count and its
/// last link (or the latest that can) the hint to fetch the next workgroup's rows
/// ([`prefetch`]).
pub(super) fn link(commands: &mut [Command], kernels: &mut [Kernel], caches: &Blocking) {
    for (index, hint) in link_chains(commands, kernels, caches) {
        if let Some(Kernel::Loop(k)) = kernels.get_mut(index) {
            k.prefetch = Some(hint);
        }
    }
}

/// [`link`]'s chains; returns the hints they ask for (kernel index, hint), which `link`
/// applies once the links no longer borrow the kernels.
fn link_chains(
    commands: &mut [Command],
    kernels: &[Kernel],
    caches: &Blocking,
) -> Vec<(usize, Prefetch)> {
    let mut hints = Vec::new();
    let mut start = 0;
    while start < commands.len() {
        let mut chain: Vec<Link<'_>> = Vec::new();
        let mut end = start;
        while let Some(next) = commands.get(end).and_then(|c| link_of(c, kernels)) {
            if !chain.is_empty() && !joins(&chain, &next) {
                break;
            }
            chain.push(next);
            end += 1;
        }
        if chain.len() >= 2 && worth_chaining(&chain, caches) {
            let counts: Vec<u32> = commands[start..end]
                .iter()
                .map(|c| match c {
                    Command::Dispatch { workgroups, .. } => *workgroups,
                    _ => 1,
                })
                .collect();
            let count = chain_workgroups(&chain, &counts, caches.l2);
            hints.extend(prefetch(&chain, count));
            let last = end - 1;
            for (i, command) in commands[start..end].iter_mut().enumerate() {
                if let Command::Dispatch {
                    workgroups,
                    chained,
                    ..
                } = command
                {
                    *workgroups = count;
                    *chained = start + i < last;
                }
            }
        }
        start = end.max(start + 1);
    }
    hints
}
