//! Another visiting order of an elementwise kernel's points: its innermost dim cut into
//! sub-stripes that an outer loop walks one after another ([`LoopKernel::sub_striped`]).
//!
//! A transpose blocked along the source rows (`plan::blocking`) walks stripes of `run` source
//! rows, each read a few lines of every row at a time across the whole width, and writes each
//! destination row a run of `run` elements per block. Every row is a stream of reads; when a
//! stripe holds more rows than the hardware prefetchers follow at once (Intel's L2 streamer
//! follows 32 streams), nearly every line is a demand miss. Cut into sub-stripes of fewer
//! rows, each walked across the whole width before the next, the reads stay within what the
//! prefetchers follow, at the price of shorter destination runs: whole lines when the
//! destination starts on one, but split lines, completed a sub-stripe later, when it does
//! not. So an emitter runs this form only for destinations on a line (x64: `x64/on_line.rs`).
//!
//! Only the order changes: an elementwise kernel whose store map gives every point its own
//! element and that never loads its store binding computes each point independently, so the
//! result cannot change. [`LoopKernel::sub_striped`] checks both (the first by a sufficient
//! condition on the store's strides).

use super::{IndexMap, LoopKernel, Node};

impl LoopKernel {
    /// The same kernel visiting its points with its innermost dim (extent `n`) cut into `n /
    /// rows` sub-stripes of `rows`, the new sub-stripe dim inserted at `rank - 3` (outside the
    /// three innermost dims), so that dim 0, and with it the workgroups, stay as they are.
    /// `None` unless `self` is elementwise, its store gives each point its own element
    /// ([`distinct_elements`]) and no node loads the store binding, it has at least four dims,
    /// no index or gather nodes (their values depend on the dims), no worker-scratch rows and
    /// no kept value, `rows` cuts the innermost dim into at least two whole sub-stripes, and
    /// the result validates.
    pub(crate) fn sub_striped(&self, rows: u64) -> Option<LoopKernel> {
        let rank = self.dims.len();
        let last = rank.checked_sub(1)?;
        let n = *self.dims.last()?;
        let elementwise = self.reduction.is_none() && self.parallel_rank as usize == rank;
        let plain = self.row_scratch.is_empty()
            && self.keep.is_none()
            && !self
                .nodes
                .iter()
                .any(|n| matches!(n.node, Node::Index { .. } | Node::Gather { .. }));
        let injective = distinct_elements(&self.dims, &self.store.map.strides)
            && !self.nodes.iter().any(|n| match &n.node {
                Node::Load { binding, .. } => *binding == self.store.binding,
                _ => false,
            });
        if !elementwise || !plain || !injective || rank < 4 || rows == 0 {
            return None;
        }
        if !n.is_multiple_of(rows) || n / rows < 2 {
            return None;
        }
        let at = rank - 3;
        let split = |map: &IndexMap| -> Option<IndexMap> {
            let mut strides = map.strides.clone();
            let outer = strides[last].checked_mul(rows as i64)?;
            strides.insert(at, outer);
            Some(IndexMap {
                offset: map.offset,
                strides,
            })
        };
        let mut k = self.clone();
        k.name = format!("{}_sub", self.name);
        for node in &mut k.nodes {
            if let Node::Load { map, .. } = &mut node.node {
                *map = split(map)?;
            }
        }
        k.store.map = split(&self.store.map)?;
        k.dims.insert(at, n / rows);
        k.dims[last + 1] = rows;
        k.parallel_rank += 1;
        k.validate().ok()?;
        Some(k)
    }
}

/// Whether a map with `strides` over `dims` gives every point its own element, by a
/// sufficient condition: taken by increasing size, each stride's magnitude exceeds the
/// farthest the smaller ones reach together (as in any row-major or permuted layout).
fn distinct_elements(dims: &[u64], strides: &[i64]) -> bool {
    let mut by_size: Vec<(u64, u64)> = dims
        .iter()
        .zip(strides)
        .filter(|(&n, _)| n > 1)
        .map(|(&n, &s)| (s.unsigned_abs(), n))
        .collect();
    by_size.sort_unstable();
    let mut reach: u64 = 0;
    for (stride, n) in by_size {
        if stride <= reach {
            return false;
        }
        let Some(more) = stride.checked_mul(n - 1).and_then(|m| reach.checked_add(m)) else {
            return false;
        };
        reach = more;
    }
    true
}

#[cfg(test)]
mod tests {
    use accy_ir::{DType, ReduceOp};

    use crate::kernel::{run_kernel, LoopKernel, Node};
    use crate::testing::kernels::{buffers_for, transpose_along_rows};

    fn transpose(dtype: DType) -> LoopKernel {
        transpose_along_rows(64, 256, dtype, 128)
    }

    fn results(k: &LoopKernel) -> Vec<Vec<u8>> {
        let mut buffers = buffers_for(k, 5);
        let mut views: Vec<&mut [u8]> = buffers.iter_mut().map(Vec::as_mut_slice).collect();
        run_kernel(k, &mut views).expect("runs");
        buffers
    }

    #[test]
    fn sub_stripes_visit_the_same_points_in_another_order() {
        for dtype in [DType::F32, DType::F64, DType::I32] {
            let k = transpose(dtype);
            let rank = k.dims.len();
            let last = k.dims[rank - 1];
            let form = k.sub_striped(32).expect("a form");
            let mut expected: Vec<u64> = k.dims.to_vec();
            expected.insert(rank - 3, last / 32);
            expected[rank] = 32;
            assert_eq!(form.dims.to_vec(), expected, "{dtype}");
            assert_eq!(form.dims[0], k.dims[0], "{dtype}: the workgroups stay");
            assert_eq!(form.parallel_rank, k.parallel_rank + 1);
            let stride = k.store.map.strides[rank - 1] * 32;
            assert_eq!(form.store.map.strides[rank - 3], stride, "{dtype}");
            assert_ne!(form, k);
            assert_eq!(results(&form), results(&k), "{dtype}");
        }
    }

    #[test]
    fn sub_stripes_are_refused_where_the_order_or_the_split_matters() {
        let k = transpose(DType::F32);
        let last = *k.dims.last().unwrap();
        assert!(k.sub_striped(last).is_none(), "a single sub-stripe");
        assert!(k.sub_striped(48).is_none(), "a split that leaves a rest");
        assert!(k.sub_striped(0).is_none());
        // A reduction over no dims is valid, and only its reduction refuses it.
        let mut reducing = k.clone();
        reducing.reduction = Some(ReduceOp::Sum);
        reducing.validate().expect("valid");
        assert!(reducing.sub_striped(32).is_none(), "a reduction");
        let rank = k.dims.len();
        let mut indexed = k.clone();
        indexed.nodes[0].node = Node::Index {
            dim: Some(rank as u32 - 1),
            scale: 1,
            offset: 0,
        };
        indexed.validate().expect("valid");
        assert!(indexed.sub_striped(32).is_none(), "an index node");
        let mut collapsing = k.clone();
        collapsing.store.map.strides[0] = 0;
        assert!(
            collapsing.sub_striped(32).is_none(),
            "a store shared by points"
        );
        // The innermost stride as large as the dim outside it: points overlap, no zero.
        let mut overlapping = k.clone();
        overlapping.store.map.strides[rank - 2] = 1;
        overlapping.validate().expect("valid");
        assert!(
            overlapping.sub_striped(32).is_none(),
            "overlapping store elements"
        );
        let mut rereading = k.clone();
        if let Node::Load { binding, .. } = &mut rereading.nodes[1].node {
            *binding = rereading.store.binding;
        }
        assert!(
            rereading.sub_striped(32).is_none(),
            "a load of the store binding"
        );
        let flat = crate::testing::kernels::binary_2d(
            [64, 64],
            DType::F32,
            (4096, 0, [1, 64]),
            (64, 0, [0, 1]),
            accy_ir::BinaryOp::Add,
        );
        assert!(flat.sub_striped(32).is_none(), "fewer than four dims");
    }
}
