//! Dim coalescing: the same kernel over fewer iteration dims.
//!
//! Two rewrites keep every point's loads, store and order exactly as they were:
//! - a dim of extent 1 only takes index 0, so it is dropped (its strides contribute nothing,
//!   and an index node reading it reads no dim);
//! - adjacent dims `i`, `i + 1` of the same kind (both parallel or both reduced) merge into one
//!   of extent `n_i · n_{i+1}` when every map walks them as one (`stride_i = stride_{i+1} ·
//!   n_{i+1}`, a kept value's map included, and the store's for parallel dims) and no index
//!   node reads either. Row-major order over the merged dim is the old row-major order over
//!   the pair, so even reduction order is unchanged.
//!
//! Fewer dims mean fewer loop levels for emitters (an elementwise kernel over contiguous
//! tensors becomes one flat loop), and they keep a dot's kernel within [`accy_ir::MAX_RANK`]
//! dims once its operands are packed.

use smallvec::SmallVec;

use crate::kernel::{IndexMap, LoopKernel, Node};

/// Every map over the full iteration space (loads, gathers and a kept value's).
fn full_maps(k: &mut LoopKernel) -> impl Iterator<Item = &mut IndexMap> {
    let kept = k.keep.as_mut().map(|keep| &mut keep.map);
    k.nodes
        .iter_mut()
        .filter_map(|n| match &mut n.node {
            Node::Load { map, .. } | Node::Gather { map, .. } => Some(map),
            _ => None,
        })
        .chain(kept)
}

fn remove(strides: &mut SmallVec<[i64; 8]>, i: usize) {
    if i < strides.len() {
        strides.remove(i);
    }
}

/// Removes dim `i` (of extent 1, or merged into `i - 1`) from every map and renumbers index
/// nodes.
fn drop_dim(k: &mut LoopKernel, i: usize) {
    let parallel = (k.parallel_rank as usize) > i;
    for map in full_maps(k) {
        remove(&mut map.strides, i);
    }
    if parallel {
        remove(&mut k.store.map.strides, i);
        k.parallel_rank -= 1;
    }
    for n in &mut k.nodes {
        if let Node::Index { dim, scale, .. } = &mut n.node {
            match *dim {
                Some(d) if d as usize == i => {
                    *dim = None;
                    *scale = 0;
                }
                Some(d) if d as usize > i => *dim = Some(d - 1),
                _ => {}
            }
        }
    }
    k.dims.remove(i);
}

/// True when dims `i` and `i + 1` can merge.
fn mergeable(k: &LoopKernel, i: usize) -> bool {
    let parallel = k.parallel_rank as usize;
    let (Some(&inner), true) = (k.dims.get(i + 1), (i < parallel) == (i + 1 < parallel)) else {
        return false;
    };
    let Ok(inner) = i64::try_from(inner) else {
        return false;
    };
    let walks_as_one = |m: &IndexMap| match (m.strides.get(i), m.strides.get(i + 1)) {
        (Some(&outer), Some(&s)) => s.checked_mul(inner) == Some(outer),
        _ => false,
    };
    let indexed = k.nodes.iter().any(|n| {
        matches!(n.node, Node::Index { dim: Some(d), .. } if d as usize == i || d as usize == i + 1)
    });
    let maps_ok = k.nodes.iter().all(|n| match &n.node {
        Node::Load { map, .. } | Node::Gather { map, .. } => walks_as_one(map),
        _ => true,
    }) && k.keep.as_ref().is_none_or(|keep| walks_as_one(&keep.map));
    !indexed && maps_ok && (i + 1 >= parallel || walks_as_one(&k.store.map))
}

/// Rewrites `k` over as few dims as the rules in the module doc allow.
pub(super) fn coalesce(k: &mut LoopKernel) {
    let mut i = k.dims.len();
    while i > 0 {
        i -= 1;
        if k.dims.get(i) == Some(&1) {
            drop_dim(k, i);
        }
    }
    let mut i = k.dims.len().saturating_sub(1);
    while i > 0 {
        i -= 1;
        if !mergeable(k, i) {
            continue;
        }
        let Some(merged) = k.dims[i].checked_mul(k.dims[i + 1]) else {
            continue;
        };
        // The merged dim walks with the inner stride.
        for map in full_maps(k) {
            map.strides[i] = map.strides[i + 1];
        }
        if i + 1 < k.parallel_rank as usize {
            k.store.map.strides[i] = k.store.map.strides[i + 1];
        }
        k.dims[i] = merged;
        drop_dim(k, i + 1);
    }
}

#[cfg(test)]
mod tests {
    use accy_artifact::Access;
    use accy_ir::{DType, ReduceOp};

    use super::*;
    use crate::kernel::{KernelBinding, KernelNode, Store};

    fn kernel(dims: &[u64], parallel: u32, load: &[i64], store: &[i64]) -> LoopKernel {
        LoopKernel {
            name: "k".into(),
            dims: accy_ir::dims(dims),
            parallel_rank: parallel,
            bindings: vec![
                KernelBinding {
                    dtype: DType::F32,
                    elements: 1000,
                    access: Access::Read,
                },
                KernelBinding {
                    dtype: DType::F32,
                    elements: 1000,
                    access: Access::Write,
                },
            ],
            nodes: vec![KernelNode {
                node: Node::Load {
                    binding: 0,
                    map: IndexMap::new(0, load),
                },
                dtype: DType::F32,
            }],
            result: 0,
            reduction: (parallel as usize != dims.len()).then_some(ReduceOp::Sum),
            store: Store {
                binding: 1,
                map: IndexMap::new(0, store),
            },
            prefetch: None,
            row_scratch: Vec::new(),
            keep: None,
            at_most_zero: Vec::new(),
        }
    }

    #[test]
    fn contiguous_elementwise_becomes_flat() {
        let mut k = kernel(&[2, 1, 3, 4], 4, &[12, 0, 4, 1], &[12, 0, 4, 1]);
        coalesce(&mut k);
        assert_eq!(&k.dims[..], &[24]);
        assert_eq!(
            k.nodes[0].node,
            Node::Load {
                binding: 0,
                map: IndexMap::new(0, &[1])
            }
        );
        assert_eq!(k.store.map, IndexMap::new(0, &[1]));
        assert_eq!(k.parallel_rank, 1);
    }

    #[test]
    fn transposed_dims_and_kinds_stay_apart() {
        // A transpose does not merge; parallel and reduced dims never merge.
        let mut k = kernel(&[3, 4], 2, &[1, 3], &[4, 1]);
        coalesce(&mut k);
        assert_eq!(&k.dims[..], &[3, 4]);
        let mut k = kernel(&[3, 4, 5], 1, &[20, 5, 1], &[1]);
        coalesce(&mut k);
        assert_eq!(&k.dims[..], &[3, 20]);
        assert_eq!(k.parallel_rank, 1);
    }

    #[test]
    fn index_nodes_block_merging_and_follow_renumbering() {
        let mut k = kernel(&[1, 3, 4], 3, &[0, 4, 1], &[0, 4, 1]);
        k.nodes.push(KernelNode {
            node: Node::Index {
                dim: Some(2),
                scale: 1,
                offset: 0,
            },
            dtype: DType::F32,
        });
        coalesce(&mut k);
        assert_eq!(&k.dims[..], &[3, 4]);
        assert_eq!(
            k.nodes[1].node,
            Node::Index {
                dim: Some(1),
                scale: 1,
                offset: 0
            }
        );
    }
}
