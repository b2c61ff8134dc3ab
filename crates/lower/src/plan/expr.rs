//! Fusible expressions: how the planner represents a value that is not (yet) in memory, and how
//! an expression becomes the body of one [`LoopKernel`].
//!
//! Every IR value is an [`ExprId`] into one arena. A value in memory is a single
//! [`ExprKind::Load`] of a buffer through an affine map over the value's own dims (a *view*:
//! params, constants and kernel results read row-major, or through folded movement ops). An
//! elementwise op builds a new node over its operands' expressions, so a chain of them is one
//! expression DAG whose leaves are loads, gathers, constants and iotas. Movement ops push their
//! [`PointMap`] down into the leaves ([`Exprs::remap`]), so an expression is always expressed
//! over the dims of the value it computes.
//!
//! Nodes only ever refer to nodes created before them, so ascending id order is a topological
//! order: every walk here is iterative (no recursion depth proportional to program size).

use std::collections::HashSet;

use accy_artifact::Access;
use accy_ir::DType;
use smallvec::{smallvec, SmallVec};

use super::views::PointMap;
use crate::error::CompileError;
use crate::kernel::{KernelBinding, KernelNode, Node, NodeId};

/// The most nodes an expression shared by several consumers may have and still be recomputed
/// by each ([`Exprs::is_recomputable`]).
pub(crate) const RECOMPUTE_NODES: usize = 8;

/// The most nodes [`Exprs::reachable`] marks by scanning the ones it has found before it
/// switches to a hash set.
const LINEAR_MARKS: usize = 32;

/// Index of an expression node in [`Exprs`].
pub(crate) type ExprId = u32;

/// Index of a buffer in the planner's buffer table.
pub(crate) type BufId = u32;

/// One expression node: the value at a point of the expression's space. It is a kernel
/// [`Node`] whose operands are [`ExprId`]s and whose `binding` fields (of loads and gathers)
/// hold the [`BufId`] read; [`Exprs::body`] renumbers both when it turns an expression into a
/// kernel body.
pub(crate) type ExprKind = Node;

/// An expression node and the dtype of its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expr {
    pub(crate) kind: ExprKind,
    pub(crate) dtype: DType,
}

/// The arena of every expression node of one planning run.
#[derive(Debug, Default)]
pub(crate) struct Exprs {
    nodes: Vec<Expr>,
    /// The IR instruction (by index) whose planning created each node, if any: what a kernel
    /// computing the node fuses (`accy inspect` shows it).
    origin: Vec<Option<u32>>,
    /// The instruction being planned; nodes pushed now are attributed to it.
    pub(crate) current: Option<u32>,
    /// Nodes whose value is at most zero or NaN at every point (`plan/facts.rs`).
    at_most_zero: HashSet<ExprId>,
}

/// What a kernel body built from an expression needs: its nodes, and the buffers it reads.
#[derive(Debug)]
pub(crate) struct Body {
    /// The kernel nodes, in evaluation order.
    pub(crate) nodes: Vec<KernelNode>,
    /// The node whose value is the expression's.
    pub(crate) result: NodeId,
    /// The buffers read, by binding number.
    pub(crate) reads: Vec<BufId>,
    /// The IR instructions (by index, ascending) whose work the body does.
    pub(crate) sources: Vec<u32>,
    /// The nodes known to be at most zero or NaN ([`Exprs::mark_at_most_zero`]).
    pub(crate) at_most_zero: Vec<NodeId>,
}

impl Exprs {
    /// Adds `kind` with `dtype` and returns its id.
    pub(crate) fn push(&mut self, kind: ExprKind, dtype: DType) -> Result<ExprId, CompileError> {
        let id = ExprId::try_from(self.nodes.len())
            .map_err(|_| CompileError::unsupported("more than 2^32 expression nodes"))?;
        self.nodes.push(Expr { kind, dtype });
        self.origin.push(self.current);
        Ok(id)
    }

    /// Records that node `id`'s value is at most zero or NaN at every point, as
    /// `plan/facts.rs` proved; kernel bodies list it ([`Body::at_most_zero`]).
    pub(crate) fn mark_at_most_zero(&mut self, id: ExprId) {
        self.at_most_zero.insert(id);
    }

    /// [`Exprs::push`] of a node no instruction computes: a view of a value already in memory.
    pub(crate) fn push_view(
        &mut self,
        kind: ExprKind,
        dtype: DType,
    ) -> Result<ExprId, CompileError> {
        let id = self.push(kind, dtype)?;
        if let Some(o) = self.origin.last_mut() {
            *o = None;
        }
        Ok(id)
    }

    /// The node `id`.
    pub(crate) fn get(&self, id: ExprId) -> Result<&Expr, CompileError> {
        self.nodes
            .get(id as usize)
            .ok_or_else(|| CompileError::internal(format!("expression {id} does not exist")))
    }

    /// Every node reachable from `root` (itself included), in ascending (topological) order.
    fn reachable(&self, root: ExprId) -> Result<Vec<ExprId>, CompileError> {
        let mut seen = vec![root];
        let mut stack: SmallVec<[ExprId; 16]> = smallvec![root];
        // The planner asks this of small expressions thousands of times per compile: up to
        // `LINEAR_MARKS` nodes a scan of `seen` is cheaper than hashing, and a larger
        // expression switches to a set so the walk stays linear in its size.
        let mut marked: Option<HashSet<ExprId>> = None;
        while let Some(id) = stack.pop() {
            for op in self.get(id)?.kind.operands() {
                if op >= id {
                    return Err(CompileError::internal(format!(
                        "expression {id} reads the later expression {op}"
                    )));
                }
                let new = match &mut marked {
                    Some(set) => set.insert(op),
                    None => !seen.contains(&op),
                };
                if new {
                    seen.push(op);
                    stack.push(op);
                    if marked.is_none() && seen.len() > LINEAR_MARKS {
                        marked = Some(seen.iter().copied().collect());
                    }
                }
            }
        }
        seen.sort_unstable();
        Ok(seen)
    }

    /// The number of distinct nodes `root` is computed from (itself included).
    pub(crate) fn size(&self, root: ExprId) -> Result<usize, CompileError> {
        Ok(self.reachable(root)?.len())
    }

    /// True when computing `root` again at every point it is used is no worse than reading it
    /// from memory: it reads no memory and has at most a few nodes (constants, iotas and
    /// small arithmetic on them).
    pub(crate) fn is_cheap(&self, root: ExprId) -> Result<bool, CompileError> {
        let nodes = self.reachable(root)?;
        if nodes.len() > 4 {
            return Ok(false);
        }
        for id in nodes {
            if matches!(self.get(id)?.kind, Node::Load { .. } | Node::Gather { .. }) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// True when evaluating `root` loads from (or gathers from) buffer `buf`.
    pub(crate) fn reads_buffer(&self, root: ExprId, buf: BufId) -> Result<bool, CompileError> {
        for id in self.reachable(root)? {
            if let Node::Load { binding, .. } | Node::Gather { binding, .. } = &self.get(id)?.kind {
                if *binding == buf {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// True when recomputing `root` in each consumer costs less than storing it and reading it
    /// back: at most [`RECOMPUTE_NODES`] nodes of plain arithmetic (no gather, no function an
    /// emitter may call out for, no remainder or power) over at most two buffers. A memory-bound
    /// chain then reads its inputs once more instead of writing and rereading a temporary the
    /// size of its space (layer norm's `x - mean`, shared by the variance and the result).
    /// With `cheap_math`, `exp`, `tanh` and `sigmoid` count as arithmetic too: the caller says
    /// so when they are expanded into vectorised node sequences (`crate::math`) that scale by
    /// a power of two in one instruction (`Options::scale_b`, AVX-512) and the value is too
    /// large for a store and a reread to stay in the L2 cache (see `Planner::instruction`).
    /// Called out per element (exact mode, or a target without FMA), they never do.
    pub(crate) fn is_recomputable(
        &self,
        root: ExprId,
        cheap_math: bool,
    ) -> Result<bool, CompileError> {
        use accy_ir::{BinaryOp, UnaryOp};
        let nodes = self.reachable(root)?;
        if nodes.len() > RECOMPUTE_NODES {
            return Ok(false);
        }
        let arithmetic = |op: UnaryOp| match op {
            UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Not | UnaryOp::Sqrt | UnaryOp::Rsqrt => true,
            UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Sigmoid => cheap_math,
            _ => false,
        };
        let mut buffers: Vec<BufId> = Vec::new();
        for id in nodes {
            match &self.get(id)?.kind {
                Node::Load { binding, .. } if !buffers.contains(binding) => {
                    buffers.push(*binding);
                }
                Node::Gather { .. } => return Ok(false),
                Node::Unary { op, .. } if !arithmetic(*op) => {
                    return Ok(false);
                }
                Node::Binary {
                    op: BinaryOp::Rem | BinaryOp::Pow,
                    ..
                } => return Ok(false),
                _ => {}
            }
        }
        Ok(buffers.len() <= 2)
    }

    /// True when `root`'s value is the same at every point (no load, gather or iota in it).
    pub(crate) fn is_uniform(&self, root: ExprId) -> Result<bool, CompileError> {
        for id in self.reachable(root)? {
            if matches!(
                self.get(id)?.kind,
                Node::Load { .. } | Node::Gather { .. } | Node::Index { .. }
            ) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `root` (an expression over the source space of `pm`) seen from the new space of `pm`:
    /// the point map is pushed into every load, gather and iota. Shared subexpressions stay
    /// shared.
    pub(crate) fn remap(&mut self, root: ExprId, pm: &PointMap) -> Result<ExprId, CompileError> {
        let nodes = self.reachable(root)?;
        // `memo[i]` is the new node for `nodes[i]`; `nodes` is sorted, so a lookup is a
        // binary search.
        let mut memo: Vec<ExprId> = Vec::with_capacity(nodes.len());
        for &id in &nodes {
            let e = self.get(id)?.clone();
            let m = |x: ExprId| {
                nodes
                    .binary_search(&x)
                    .ok()
                    .and_then(|i| memo.get(i).copied())
                    .ok_or_else(|| {
                        CompileError::internal(format!("expression {x} was not remapped"))
                    })
            };
            let mut kind = e.kind.map_operands(m)?;
            // A remapped node does its original instruction's work; a view remapped is the
            // movement op's (the instruction being planned).
            let mut origin = self.origin.get(id as usize).copied().flatten();
            match &mut kind {
                Node::Load { map, .. } | Node::Gather { map, .. } => {
                    *map = pm.compose(map)?;
                    origin = origin.or(self.current);
                }
                Node::Index { dim, scale, offset } => {
                    (*dim, *scale, *offset) = pm.compose_index(*dim, *scale, *offset)?;
                    origin = origin.or(self.current);
                }
                _ => {}
            }
            let new = self.push(kind, e.dtype)?;
            if let Some(o) = self.origin.last_mut() {
                *o = origin;
            }
            memo.push(new);
        }
        // `root` is the largest reachable id, so its new node is the last.
        memo.last()
            .copied()
            .ok_or_else(|| CompileError::internal("remapped root missing"))
    }

    /// The kernel nodes computing `root`: one node per reachable expression node (so shared
    /// subexpressions are computed once per point), and one read binding per distinct buffer,
    /// numbered in order of first use.
    pub(crate) fn body(&self, root: ExprId) -> Result<Body, CompileError> {
        let exprs = self.reachable(root)?;
        let mut reads: Vec<BufId> = Vec::new();
        let mut nodes: Vec<KernelNode> = Vec::with_capacity(exprs.len());
        let mut sources: Vec<u32> = Vec::new();
        let mut at_most_zero: Vec<NodeId> = Vec::new();
        for &id in &exprs {
            if let Some(&Some(o)) = self.origin.get(id as usize) {
                sources.push(o);
            }
            let e = self.get(id)?;
            // Kernel node `i` computes `exprs[i]`, and `exprs` is sorted.
            let n = |x: ExprId| {
                exprs
                    .binary_search(&x)
                    .ok()
                    .filter(|&i| i < nodes.len())
                    .and_then(|i| NodeId::try_from(i).ok())
                    .ok_or_else(|| {
                        CompileError::internal(format!("expression {x} has no kernel node"))
                    })
            };
            let mut binding = |buf: BufId| -> Result<u32, CompileError> {
                let at = match reads.iter().position(|&b| b == buf) {
                    Some(at) => at,
                    None => {
                        reads.push(buf);
                        reads.len() - 1
                    }
                };
                u32::try_from(at).map_err(|_| CompileError::unsupported("too many bindings"))
            };
            let mut node = e.kind.map_operands(n)?;
            if let Node::Load { binding: b, .. } | Node::Gather { binding: b, .. } = &mut node {
                *b = binding(*b)?;
            }
            let node_id = NodeId::try_from(nodes.len())
                .map_err(|_| CompileError::unsupported("more than 2^32 kernel nodes"))?;
            nodes.push(KernelNode {
                node,
                dtype: e.dtype,
            });
            if self.at_most_zero.contains(&id) {
                at_most_zero.push(node_id);
            }
        }
        // `root` is the largest reachable id, so its node is the last.
        let result = nodes
            .len()
            .checked_sub(1)
            .and_then(|last| NodeId::try_from(last).ok())
            .ok_or_else(|| CompileError::internal("kernel root missing"))?;
        sources.sort_unstable();
        sources.dedup();
        Ok(Body {
            nodes,
            result,
            reads,
            sources,
            at_most_zero,
        })
    }
}

/// A read binding of a buffer of `dtype` and `elements`.
pub(crate) fn read_binding(dtype: DType, elements: u64) -> KernelBinding {
    KernelBinding {
        dtype,
        elements,
        access: Access::Read,
    }
}
