//! [`Keep`]: a value a reducing kernel stores at every point, and its validation rule.

use super::error::{KernelError, Site};
use super::validate::Checker;
use super::{IndexMap, LoopKernel, Node, NodeId};

/// A node's value that a reducing [`LoopKernel`] stores at every point of its space as well
/// as reducing the result: the terms of a softmax's sum, `exp(x - max)`, which the division
/// reads next, are stored by the pass that sums them instead of by a pass of their own, and
/// the sum no longer rereads them. At point `p` (all dims) the value of `node` goes to
/// element `map(p)` of `binding`, after that point's loads. `binding` is write-only, no node
/// loads it and it is not the store's; the planner only makes maps that give each point its
/// own element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keep {
    /// The node whose value is stored.
    pub node: NodeId,
    /// The binding written (its dtype is the node's).
    pub binding: u32,
    /// Where, over all dims (`strides.len() == rank`).
    pub map: IndexMap,
}

/// Validation rule 8 (`validate.rs`): a reducing kernel, a node that exists, a binding of its dtype
/// that may be written, is not the store's and that no node reads, and a map inside it over all
/// dims.
pub(super) fn check(k: &LoopKernel, c: &Checker<'_>, keep: &Keep) -> Result<(), KernelError> {
    let bad = |why| KernelError::Keep {
        kernel: c.name(),
        why,
    };
    if k.reduction.is_none() {
        return Err(bad("the kernel does not reduce"));
    }
    if keep.binding == k.store.binding {
        return Err(bad("its binding is the store's"));
    }
    let read = k.nodes.iter().any(|n| match n.node {
        Node::Load { binding, .. } | Node::Gather { binding, .. } => binding == keep.binding,
        _ => false,
    });
    if read {
        return Err(bad("a node reads its binding"));
    }
    let dtype = k
        .nodes
        .get(keep.node as usize)
        .map(|n| n.dtype)
        .ok_or(bad("it names no node"))?;
    let site = Site::Node(keep.node);
    let elements = c.binding(site, keep.binding, dtype, true)?;
    c.bounds(site, keep.binding, &keep.map, &k.dims, elements, (0, 0))
}
