//! The stack frame of one loop kernel, the same on every ISA: where every value the generated
//! code keeps lives.
//!
//! Scalar code is deliberately simple: every node owns an 8-byte slot (a value of any dtype
//! fits), and each node's code loads its operands from their slots into scratch registers and
//! stores its result to its own slot. Nothing but the three callee-saved base registers
//! survives an import call, so calls need no extra spilling. The frame also holds each index
//! map's running element offset, each dim's counter, the reduction accumulator and the 32-byte
//! slots the vector path spills to.

use accy_artifact::abi::MAX_KERNEL_STACK;
use smallvec::SmallVec;

use crate::kernel::{IndexMap, LoopKernel, Node};
use crate::target::EmitError;

/// The most frame bytes a kernel may use: the ABI's stack budget minus room for the pushed
/// registers and the import functions' own frames.
pub(crate) const MAX_FRAME: u32 = MAX_KERNEL_STACK - 16 * 1024;

/// Frame offsets (from `rsp` after the prologue) of everything a kernel keeps.
#[derive(Debug)]
pub(crate) struct Layout {
    /// Scalar slot of each node (8 bytes).
    pub node: Vec<i32>,
    /// Running element offset of each Load/Gather node's map (loads with equal maps share
    /// one).
    pub map: Vec<Option<i32>>,
    /// Running element offset of the store map (a load's, when the kernel has no reduced
    /// dims and their maps are equal).
    pub store_map: i32,
    /// Running element offset of the kept value's map ([`crate::kernel::Keep`]; a load's,
    /// when their maps are equal), if the kernel keeps one.
    pub keep_map: Option<i32>,
    /// Counter of each dim.
    pub counter: Vec<i32>,
    /// Exclusive upper bound of dim 0's counter (this workgroup's share).
    pub hi0: i32,
    /// The reduction accumulator.
    pub acc: i32,
    /// An 8-byte slot: dim 0's start until its loop begins, then scratch (bool broadcasts).
    pub tmp: i32,
    /// The first of the 32-byte vector slots.
    pub vec_base: i32,
    /// For a kernel with [`crate::kernel::RowScratch`] bindings: the worker index (4 bytes
    /// in an 8-byte slot) and the copy of the dispatch's binding addresses (8 bytes per
    /// binding) in which those bindings point into the worker's scratch. `None` otherwise.
    pub rows: Option<RowsFrame>,
    /// Total frame size, a multiple of 16.
    pub size: i32,
}

impl Layout {
    /// Lays out `k`'s frame with `vector_slots` 32-byte vector slots.
    pub(crate) fn new(
        k: &LoopKernel,
        vector_slots: usize,
        target: &'static str,
    ) -> Result<Layout, EmitError> {
        let too_big = || EmitError::Unsupported {
            kernel: k.name.clone(),
            what: format!(
                "a stack frame for {} nodes and {} dims (more than {MAX_FRAME} bytes)",
                k.nodes.len(),
                k.dims.len()
            ),
            target,
        };
        let mut next: u64 = 0;
        let mut take = |bytes: u64| {
            let at = next;
            next += bytes;
            i32::try_from(at).ok()
        };
        let mut layout = Layout {
            node: Vec::with_capacity(k.nodes.len()),
            map: Vec::with_capacity(k.nodes.len()),
            store_map: 0,
            keep_map: None,
            counter: Vec::with_capacity(k.dims.len()),
            hi0: 0,
            acc: 0,
            tmp: 0,
            vec_base: 0,
            rows: None,
            size: 0,
        };
        // Vector slots first, so their 32-byte offsets stay aligned relative to the frame.
        layout.vec_base = take(32 * vector_slots as u64).ok_or_else(too_big)?;
        // Loads with the same map walk the same offsets, and so does the store of a kernel
        // without reduced dims whose map is theirs (an elementwise kernel's input and output
        // laid out alike): they share one slot, which the loops step once, and which a
        // vector loop pins in one register.
        let mut walked: Vec<(&IndexMap, i32)> = Vec::new();
        for n in &k.nodes {
            layout.node.push(take(8).ok_or_else(too_big)?);
            let slot = match &n.node {
                Node::Load { map, .. } => match walked.iter().find(|(m, _)| *m == map) {
                    Some(&(_, slot)) => Some(slot),
                    None => {
                        let slot = take(8).ok_or_else(too_big)?;
                        walked.push((map, slot));
                        Some(slot)
                    }
                },
                Node::Gather { .. } => Some(take(8).ok_or_else(too_big)?),
                _ => None,
            };
            layout.map.push(slot);
        }
        for _ in &k.dims {
            layout.counter.push(take(8).ok_or_else(too_big)?);
        }
        // A kept value stored where a load reads (a softmax's terms, laid out as its input)
        // walks that load's offsets.
        if let Some(keep) = &k.keep {
            layout.keep_map = Some(match walked.iter().find(|(m, _)| *m == &keep.map) {
                Some(&(_, slot)) => slot,
                None => take(8).ok_or_else(too_big)?,
            });
        }
        let parallel = k.parallel_rank as usize == k.dims.len();
        layout.store_map = match walked.iter().find(|(m, _)| parallel && *m == &k.store.map) {
            Some(&(_, slot)) => slot,
            None => take(8).ok_or_else(too_big)?,
        };
        layout.hi0 = take(8).ok_or_else(too_big)?;
        layout.acc = take(8).ok_or_else(too_big)?;
        layout.tmp = take(8).ok_or_else(too_big)?;
        if !k.row_scratch.is_empty() {
            let worker = take(8).ok_or_else(too_big)?;
            let bindings = take(8 * k.bindings.len() as u64).ok_or_else(too_big)?;
            layout.rows = Some(RowsFrame { worker, bindings });
        }
        let size = next.div_ceil(16) * 16;
        if size > u64::from(MAX_FRAME) {
            return Err(too_big());
        }
        layout.size = i32::try_from(size).map_err(|_| too_big())?;
        Ok(layout)
    }

    /// The offset of vector slot `i`.
    pub(crate) fn vec_slot(&self, i: usize) -> i32 {
        // Bounded by the frame size check in `new`.
        self.vec_base + 32 * i as i32
    }
}

/// Frame offsets of what a kernel with [`crate::kernel::RowScratch`] bindings keeps.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowsFrame {
    /// The worker index the kernel was called with (a `u32`).
    pub worker: i32,
    /// The kernel's own copy of the binding address array.
    pub bindings: i32,
}

/// What the prologue of a kernel with [`crate::kernel::RowScratch`] bindings checks, as
/// `(bytes, rows)`: the worker scratch it needs (the end of its last reservation; also what
/// its entry declares) and the most rows its workgroup's share may have, so that every row
/// lands inside the worker's slice.
pub(crate) fn row_scratch_limits(k: &LoopKernel) -> (u64, u64) {
    let end = k
        .row_scratch
        .iter()
        .map(|r| r.offset.saturating_add(r.bytes))
        .max()
        .unwrap_or(0);
    let rows = k
        .row_scratch
        .iter()
        .map(|r| r.bytes / r.row_bytes.max(1))
        .min()
        .unwrap_or(0);
    (end, rows)
}

/// A map whose running offset the loops maintain.
pub(crate) struct MapRef<'a> {
    /// Frame slot of the running offset.
    pub(crate) slot: i32,
    /// The map.
    pub(crate) map: &'a IndexMap,
    /// Store maps have strides only for the parallel dims.
    pub(crate) parallel_only: bool,
}

/// The maps of one kernel ([`Layout::maps`]): emitters ask for them at every loop level, and
/// a kernel seldom has more than eight, so they live on the stack.
pub(crate) type Maps<'k> = SmallVec<[MapRef<'k>; 8]>;

impl MapRef<'_> {
    /// The stride along dim `d` (0 beyond a store map's parallel dims).
    pub(crate) fn stride(&self, d: usize, parallel_rank: u32) -> i64 {
        if self.parallel_only && d >= parallel_rank as usize {
            0
        } else {
            self.map.strides.get(d).copied().unwrap_or(0)
        }
    }
}

impl Layout {
    /// Every map the loops maintain, each slot once: the live loads' and gathers', the kept
    /// value's, then the store's.
    pub(crate) fn maps<'k>(&self, k: &'k LoopKernel, live: &[bool]) -> Maps<'k> {
        let mut maps = Maps::new();
        for (i, n) in k.nodes.iter().enumerate() {
            if !live.get(i).copied().unwrap_or(false) {
                continue;
            }
            if let (Node::Load { map, .. } | Node::Gather { map, .. }, Some(Some(slot))) =
                (&n.node, self.map.get(i).copied())
            {
                if !maps.iter().any(|m| m.slot == slot) {
                    maps.push(MapRef {
                        slot,
                        map,
                        parallel_only: false,
                    });
                }
            }
        }
        if let (Some(keep), Some(slot)) = (&k.keep, self.keep_map) {
            if !maps.iter().any(|m| m.slot == slot) {
                maps.push(MapRef {
                    slot,
                    map: &keep.map,
                    parallel_only: false,
                });
            }
        }
        if !maps.iter().any(|m| m.slot == self.store_map) {
            maps.push(MapRef {
                slot: self.store_map,
                map: &k.store.map,
                parallel_only: true,
            });
        }
        maps
    }
}
