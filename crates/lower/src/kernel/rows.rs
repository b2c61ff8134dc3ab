//! How a [`LoopKernel`] touches a binding row by row along its outermost dim, and the
//! [`RowScratch`] bindings that this lets live in worker scratch.
//!
//! Binding `b` is *row-partitioned* with row stride `s > 0` when every access at outer index
//! `r` falls in the binding's elements `[r·s, (r+1)·s)`: every map of `b` has stride `s` on
//! dim 0 and its other dims keep the offset within `[0, s)`. Then the rows a workgroup
//! touches are exactly its share of dim 0, which is what lets a dispatch chain run
//! workgroup by workgroup (`plan/chain.rs`) and what lets a binding that only a chain uses
//! keep just one workgroup's rows, in the worker's scratch ([`RowScratch`]).

use accy_artifact::abi::MAX_WORKER_SCRATCH;

use super::{KernelError, LoopKernel, Node};

/// How a kernel touches one of its bindings, row by row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// Not at all.
    Untouched,
    /// Outer index `r` touches only the binding's bytes `[r·bytes, (r+1)·bytes)`.
    Partitioned {
        /// Bytes per row.
        bytes: u64,
    },
    /// Some other way (a gather, a stride that is not the same for every map, an offset
    /// leaving its row, or no dims).
    Other,
}

/// A binding of a [`LoopKernel`] whose bytes live in the calling worker's scratch
/// (`accy_artifact::abi`), one workgroup's rows at a time, instead of at the dispatch's
/// address for it. The binding must be row-partitioned with `row_bytes` per row
/// ([`LoopKernel::rows_of`]; `validate` checks it): the kernel's code addresses row `r` at
/// `worker scratch + offset + (r - first row of the workgroup)·row_bytes`, so a workgroup of
/// `n` rows touches `offset .. offset + n·row_bytes` of the worker's scratch, and the code
/// refuses a worker scratch shorter than `offset + bytes` or a share of more than
/// `bytes / row_bytes` rows (`KERNEL_WORKER_MISMATCH`). The dispatch still passes a region
/// for the binding (the kernel never touches it), so binding numbers and the kernel
/// interpreter, which runs every binding as a whole buffer, are unchanged.
///
/// The planner gives a chain's intermediate this home (`plan/row_scratch.rs`): the runtime
/// calls every link of one workgroup back to back on one worker, and the worker's scratch
/// keeps what one link wrote for the next (`accy_artifact::abi`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowScratch {
    /// The binding.
    pub binding: u32,
    /// Where its rows start in the worker's scratch, in bytes (a multiple of 64).
    pub offset: u64,
    /// Bytes per row.
    pub row_bytes: u64,
    /// Bytes reserved for it from `offset`: the most rows a workgroup may have times
    /// `row_bytes`.
    pub bytes: u64,
}

impl LoopKernel {
    /// How the kernel touches binding `b` row by row (`live`: [`LoopKernel::live_nodes`]).
    pub fn rows_of(&self, live: &[bool], b: u32) -> Rows {
        let Some(elem) = self.bindings.get(b as usize).map(|x| x.dtype.size_bytes()) else {
            return Rows::Other;
        };
        let mut maps = Vec::new();
        for (n, is_live) in self.nodes.iter().zip(live) {
            match &n.node {
                Node::Load { binding, map } if *binding == b && *is_live => maps.push(map),
                Node::Gather { binding, .. } if *binding == b && *is_live => return Rows::Other,
                _ => {}
            }
        }
        if self.store.binding == b {
            maps.push(&self.store.map);
        }
        if let Some(keep) = self.keep.as_ref().filter(|k| k.binding == b) {
            maps.push(&keep.map);
        }
        let mut stride = None;
        for map in maps {
            let Some(&s0) = map.strides.first() else {
                return Rows::Other;
            };
            if s0 <= 0 || stride.is_some_and(|s| s != s0) {
                return Rows::Other;
            }
            stride = Some(s0);
            // The offset's range over the other dims must stay within one row.
            let (mut lo, mut hi) = (i128::from(map.offset), i128::from(map.offset));
            for (&s, &d) in map.strides.iter().zip(&self.dims).skip(1) {
                let reach = i128::from(s) * i128::from(d.saturating_sub(1));
                let end = if reach < 0 { &mut lo } else { &mut hi };
                let Some(moved) = end.checked_add(reach) else {
                    return Rows::Other;
                };
                *end = moved;
            }
            if lo < 0 || hi >= i128::from(s0) {
                return Rows::Other;
            }
        }
        match stride.map(|s| s.unsigned_abs().checked_mul(elem)) {
            None => Rows::Untouched,
            Some(Some(bytes)) => Rows::Partitioned { bytes },
            Some(None) => Rows::Other,
        }
    }

    /// Validation's rule 7 (`validate.rs`): the kernel's [`RowScratch`] entries.
    pub(super) fn check_row_scratch(&self, name: &str) -> Result<(), KernelError> {
        let k = self;
        if k.row_scratch.is_empty() {
            return Ok(());
        }
        let live = k.live_nodes();
        let mut taken: Vec<(u64, u64)> = Vec::new();
        for (i, r) in k.row_scratch.iter().enumerate() {
            let bad = |why| KernelError::RowScratch {
                kernel: name.to_owned(),
                binding: r.binding,
                why,
            };
            if k.parallel_rank == 0 {
                return Err(bad("the kernel has no parallel dim to split rows by"));
            }
            if k.row_scratch[..i].iter().any(|o| o.binding == r.binding) {
                return Err(bad("it is named twice"));
            }
            if k.rows_of(&live, r.binding) != (Rows::Partitioned { bytes: r.row_bytes }) {
                return Err(bad(
                    "its accesses are not partitioned in rows of `row_bytes`",
                ));
            }
            let end = r.offset.checked_add(r.bytes);
            let whole = r.row_bytes > 0 && r.bytes >= r.row_bytes && r.bytes % r.row_bytes == 0;
            let Some(end) = end.filter(|&e| whole && r.offset % 64 == 0 && e <= MAX_WORKER_SCRATCH)
            else {
                return Err(bad(
                    "its reservation is not whole rows at an aligned offset in range",
                ));
            };
            if taken.iter().any(|&(a, b)| r.offset < b && a < end) {
                return Err(bad("its reservation overlaps another one's"));
            }
            taken.push((r.offset, end));
        }
        Ok(())
    }
}
