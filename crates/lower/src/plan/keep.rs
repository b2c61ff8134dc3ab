//! Kept values: an elementwise kernel whose stored value the very next kernel, a reduction over
//! the same points, reads in place becomes part of that reduction, which stores the value as it
//! reduces it ([`crate::kernel::Keep`]).
//!
//! A row softmax stores its terms `exp(x - max)` once (the sum and the division both read
//! them; see `Planner::instruction`), and was a pass computing them, then a pass summing them
//! from the cache. Now one pass computes, stores and sums them, and the sum's reread of every
//! row is gone: on an AVX-512 host (Sapphire Rapids, 2 MiB L2), a 4096×1024 f32 softmax went
//! from 1.73 to 1.65 ms (`accy bench`, 1 thread, p50, three alternating rounds) and from 1.79
//! to 1.69-1.70 ms in `cargo xtask bench memory` (65-66% → 68% of a copy), 16384×1024 from
//! 7.11-7.19 to 6.79-6.80 ms.
//!
//! Rules, checked by [`Planner::try_keep`]:
//! - the reduction's kernel follows the elementwise one directly (no command between them,
//!   none waiting that touches their buffers), outside setup, with fusion on;
//! - both kernels have the same dims (the elementwise kernel's dims split back into the
//!   reduction's where coalescing merged them, `split_to`), and every read of the elementwise
//!   kernel's output by the reduction is a load through exactly the elementwise kernel's store
//!   map (so at every point it reads the value the elementwise kernel computes at that point);
//! - the elementwise kernel's loads and value are of the kinds every vector reduction takes
//!   (`vectorizes_in_a_reduction`), so fusing does not make the reduction scalar;
//! - the reduction does not write a buffer the elementwise kernel reads, the fused kernel has
//!   at most `MAX_BINDINGS` bindings, at least as many workgroups as the elementwise kernel
//!   had (a full reduction of a large tensor runs on one worker, its `exp` would too), and
//!   validates (otherwise both stay as they were).
//!
//! Every value is computed once, as before, and the reduction combines the same values, so
//! results are those of the two kernels: bit for bit in exact mode; in default mode a float
//! sum is reassociated by the fused kernel as the reduction alone may be, within the same
//! bound.

use accy_artifact::Access;
use accy_ir::Dims;
use smallvec::SmallVec;

use super::expr::BufId;
use super::{tiles, Pending, Planner};
use crate::kernel::{IndexMap, Keep, Kernel, KernelBinding, KernelNode, LoopKernel, Node, NodeId};

impl Planner<'_> {
    /// Fuses the reduction `kernel` (bindings `uses`, IR instructions `sources`) into the
    /// elementwise kernel just dispatched, when the rules in the module doc allow: the last
    /// command becomes the fused kernel's dispatch and `true` is returned. `false` leaves
    /// everything as it was.
    pub(super) fn try_keep(
        &mut self,
        kernel: &LoopKernel,
        uses: &[(BufId, Access)],
        sources: &[u32],
    ) -> bool {
        if !self.options.fuse || self.in_setup {
            return false;
        }
        let Some(&Pending::Dispatch {
            kernel: index,
            bindings: ref first_uses,
            workgroups: first_workgroups,
        }) = self.commands.last()
        else {
            return false;
        };
        let Some(Kernel::Loop(first)) = self.kernels.get(index as usize) else {
            return false;
        };
        let Some(fused) = fuse(first, first_uses, kernel, uses) else {
            return false;
        };
        let (fused, fused_uses) = fused;
        let touches_waiting = self
            .waiting
            .iter()
            .any(|w| fused_uses.iter().any(|&(b, _)| b == w.dst));
        let workgroups = tiles::workgroups(&fused);
        if touches_waiting || workgroups < first_workgroups || fused.validate().is_err() {
            return false;
        }
        if let Some(s) = self.sources.get_mut(index as usize) {
            s.extend_from_slice(sources);
            s.sort_unstable();
            s.dedup();
        }
        self.kernels[index as usize] = Kernel::Loop(fused);
        if let Some(last) = self.commands.last_mut() {
            *last = Pending::Dispatch {
                kernel: index,
                bindings: fused_uses,
                workgroups,
            };
        }
        true
    }
}

/// The reduction `second` (bindings `second_uses`) with the elementwise `first` (bindings
/// `first_uses`, its store last) fused in and its value kept, and the fused kernel's
/// bindings: `None` when the rules in the module doc do not hold.
fn fuse(
    first: &LoopKernel,
    first_uses: &[(BufId, Access)],
    second: &LoopKernel,
    second_uses: &[(BufId, Access)],
) -> Option<(LoopKernel, Vec<(BufId, Access)>)> {
    let elementwise = first.reduction.is_none() && first.keep.is_none();
    if !elementwise || second.reduction.is_none() || second.keep.is_some() {
        return None;
    }
    if first_uses.len() != first.bindings.len() {
        return None;
    }
    // Coalescing may have merged the first kernel's dims where the reduction's stay apart.
    let first = &split_to(first, &second.dims)?;
    let width = second.nodes.get(second.result as usize)?.dtype.size_bytes();
    if !vectorizes_in_a_reduction(first, width) {
        return None;
    }
    let &(kept, _) = first_uses.get(first.store.binding as usize)?;
    let &(result, _) = second_uses.get(second.store.binding as usize)?;
    if first_uses.iter().any(|&(b, _)| b == result) {
        return None;
    }
    // Every read of the kept buffer is a load of the value at the same point.
    let reads_kept = |b: u32| second_uses.get(b as usize).is_some_and(|u| u.0 == kept);
    let mut loads_kept = false;
    for n in &second.nodes {
        match &n.node {
            Node::Load { binding, map } if reads_kept(*binding) => {
                if *map != first.store.map {
                    return None;
                }
                loads_kept = true;
            }
            Node::Gather { binding, .. } if reads_kept(*binding) => return None,
            _ => {}
        }
    }
    if !loads_kept {
        return None;
    }
    // The fused bindings: what either reads (each buffer once, as one binding), then the kept
    // value and the result.
    let mut uses: Vec<(BufId, Access)> = Vec::new();
    let mut bindings: Vec<KernelBinding> = Vec::new();
    let mut read = |buf: BufId, b: &KernelBinding| -> Option<u32> {
        let at = match uses.iter().position(|&(u, _)| u == buf) {
            Some(at) => (bindings[at] == *b).then_some(at)?,
            None => {
                uses.push((buf, Access::Read));
                bindings.push(b.clone());
                uses.len() - 1
            }
        };
        u32::try_from(at).ok()
    };
    let mut first_map = Vec::with_capacity(first.bindings.len());
    for (i, (b, &(buf, _))) in first.bindings.iter().zip(first_uses).enumerate() {
        let reads = i != first.store.binding as usize;
        first_map.push(if reads { read(buf, b)? } else { 0 });
    }
    let mut second_map = Vec::with_capacity(second.bindings.len());
    for (i, (b, &(buf, _))) in second.bindings.iter().zip(second_uses).enumerate() {
        let reads = i != second.store.binding as usize && buf != kept;
        second_map.push(if reads { read(buf, b)? } else { 0 });
    }
    for (buf, k) in [(kept, first), (result, second)] {
        uses.push((buf, Access::Write));
        bindings.push(k.bindings.get(k.store.binding as usize)?.clone());
    }
    if uses.len() > accy_artifact::abi::MAX_BINDINGS {
        return None;
    }
    let (keep_binding, store_binding) = (uses.len() as u32 - 2, uses.len() as u32 - 1);
    // The first kernel's nodes, then the second's, whose loads of the kept value become that
    // value.
    let rebind = |node: &Node, map: &[u32]| -> Option<Node> {
        let mut node = node.clone();
        if let Node::Load { binding, .. } | Node::Gather { binding, .. } = &mut node {
            *binding = *map.get(*binding as usize)?;
        }
        Some(node)
    };
    let mut nodes: Vec<KernelNode> = Vec::with_capacity(first.nodes.len() + second.nodes.len());
    for n in &first.nodes {
        nodes.push(KernelNode {
            node: rebind(&n.node, &first_map)?,
            dtype: n.dtype,
        });
    }
    let mut ids: Vec<NodeId> = Vec::with_capacity(second.nodes.len());
    for n in &second.nodes {
        if matches!(&n.node, Node::Load { binding, .. } if reads_kept(*binding)) {
            ids.push(first.result);
            continue;
        }
        let node = rebind(&n.node, &second_map)?
            .map_operands(|o| ids.get(o as usize).copied().ok_or(()))
            .ok()?;
        ids.push(NodeId::try_from(nodes.len()).ok()?);
        nodes.push(KernelNode {
            node,
            dtype: n.dtype,
        });
    }
    let at_most_zero: Vec<NodeId> = first
        .at_most_zero
        .iter()
        .copied()
        .chain(
            second
                .at_most_zero
                .iter()
                .filter_map(|&n| ids.get(n as usize).copied()),
        )
        .collect();
    let fused = LoopKernel {
        name: first.name.clone(),
        dims: second.dims.clone(),
        parallel_rank: second.parallel_rank,
        bindings,
        nodes,
        result: *ids.get(second.result as usize)?,
        reduction: second.reduction,
        store: crate::kernel::Store {
            binding: store_binding,
            map: second.store.map.clone(),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: Some(Keep {
            node: first.result,
            binding: keep_binding,
            map: first.store.map.clone(),
        }),
        at_most_zero,
    };
    Some((fused, uses))
}

/// The elementwise `k` over `dims`, where each of its own dims is the product of consecutive
/// ones of `dims`: coalescing undone (`plan/coalesce.rs`), so each point's loads and store are
/// those of the point it was. `None` when `dims` does not split `k`'s that way, or an index
/// node reads a dim that splits.
fn split_to(k: &LoopKernel, dims: &[u64]) -> Option<LoopKernel> {
    if k.dims[..] == *dims {
        return Some(k.clone());
    }
    let mut groups: Vec<std::ops::Range<usize>> = Vec::with_capacity(k.dims.len());
    let mut next = 0;
    for &n in &k.dims {
        let (start, mut product) = (next, 1u64);
        while product < n {
            product = product.checked_mul(*dims.get(next)?)?;
            next += 1;
        }
        if product != n || next == start {
            return None;
        }
        groups.push(start..next);
    }
    if next != dims.len() {
        return None;
    }
    // A split dim's innermost part keeps its stride; each outer part steps over the parts
    // inside it.
    let split = |map: &IndexMap| -> Option<IndexMap> {
        let mut strides: SmallVec<[i64; 8]> = SmallVec::new();
        for (d, group) in groups.iter().enumerate() {
            let mut step = *map.strides.get(d)?;
            let mut parts: SmallVec<[i64; 8]> = SmallVec::new();
            for &n in dims[group.clone()].iter().rev() {
                parts.push(step);
                step = step.checked_mul(i64::try_from(n).ok()?)?;
            }
            strides.extend(parts.into_iter().rev());
        }
        Some(IndexMap {
            offset: map.offset,
            strides,
        })
    };
    let mut out = k.clone();
    out.dims = Dims::from_slice(dims);
    out.parallel_rank = u32::try_from(dims.len()).ok()?;
    out.store.map = split(&k.store.map)?;
    for n in &mut out.nodes {
        match &mut n.node {
            Node::Load { map, .. } | Node::Gather { map, .. } => *map = split(map)?,
            Node::Index { dim: Some(d), .. } => {
                let group = groups.get(*d as usize)?;
                if group.len() != 1 {
                    return None;
                }
                *d = u32::try_from(group.start).ok()?;
            }
            _ => {}
        }
    }
    Some(out)
}

/// Whether `k`'s nodes are all of the kinds every vector reduction takes, in lanes of
/// `width` bytes (the reduction's): loads of 4- or 8-byte numbers, each contiguous or
/// constant along the innermost dim; every other value but a bool of that width; no gathers,
/// index nodes or conversions. An elementwise kernel with a transposing load, a byte-sized
/// value or a change of width may vectorize alone (or not) but would make the fused reduction
/// scalar, slower than the two kernels.
fn vectorizes_in_a_reduction(k: &LoopKernel, width: u64) -> bool {
    let lanes = |d: accy_ir::DType| {
        use accy_ir::DType::{F32, F64, I32, I64};
        matches!(d, F32 | F64 | I32 | I64) && d.size_bytes() == width
    };
    let inner = k.dims.len().wrapping_sub(1);
    let value = k
        .nodes
        .get(k.result as usize)
        .is_some_and(|n| lanes(n.dtype));
    value
        && k.nodes.iter().all(|n| match &n.node {
            Node::Load { map, .. } => {
                lanes(n.dtype) && matches!(map.strides.get(inner), Some(0 | 1))
            }
            Node::Gather { .. } | Node::Index { .. } | Node::Convert { .. } => false,
            _ => n.dtype == accy_ir::DType::Bool || lanes(n.dtype),
        })
}
