//! The arch-neutral kernel description that every ISA emitter translates.
//!
//! Two forms ([`Kernel`]): a [`LoopKernel`] and a [`ContractionKernel`] (a batched matrix
//! product with an epilogue, in `contraction.rs`). A [`LoopKernel`] is a loop nest over a
//! static iteration space. At every point of the space it
//! evaluates a small SSA expression ([`Node`]s) whose leaves read bindings through affine
//! [`IndexMap`]s; it either stores the result at that point, or, when it has a reduction,
//! combines the result over the trailing reduction dims and stores one value per point of the
//! leading parallel dims. Elementwise chains, broadcasts, transposes, slices, reverses, iota,
//! gather, reductions and plain dots all lower to this one form, so an emitter has one thing to
//! translate and a new ISA is a new emitter, not a new compiler.
//!
//! Semantics, which the kernel interpreter implements and emitters must reproduce:
//! - Points are visited in row-major order of `dims` (parallel dims first, then reduction
//!   dims); an emitter may reorder or vectorize only where the result cannot change, except
//!   that float `sum`/`prod` reductions may be reassociated (callers then compare with a
//!   tolerance).
//! - Without a reduction, the `result` node's value at point `p` is stored at element
//!   `store.map(p)` of the store binding.
//! - With a reduction `op`, for each parallel point `p` the accumulator starts at `op`'s
//!   identity (see [`accy_ir::ReduceOp`]) and becomes `op(acc, result(p, r))` for each
//!   reduction point `r` in row-major order; the final accumulator is stored at
//!   `store.map(p)`. The combine step has the semantics of the matching binary op (`add`,
//!   `mul`, NaN-propagating `max`/`min`; `or`/`and` for bool max/min).
//! - With a [`Keep`], the kept node's value at each point (reduced dims included) is also
//!   stored at `keep.map(p)` of its binding.
//! - Every node has the exact semantics of the IR op it is named after (see `accy_ir::Op`).
//! - A kernel never reads or writes an element outside its bindings: [`LoopKernel::validate`]
//!   proves every map stays inside `[0, elements)` over the whole space before emission.
//!
//! [`run_kernel`] is the reference executor of these semantics (module `interp`);
//! [`LoopKernel::validate`] (module `validate`) lists everything an emitter may rely on.
//!
//! What the planner (`crate::plan`) additionally guarantees about the kernels it produces,
//! which emitters may use but `validate` does not check: the store binding is the last
//! binding and is write-only; every other binding is read-only (but a [`Keep`]'s, which is
//! write-only and the second to last), and no two bindings of a
//! dispatch overlap; dims of extent 1 have been removed and adjacent dims that every map walks
//! as one have been merged.

use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, Dims, ReduceOp, UnaryOp};
use smallvec::SmallVec;

mod contraction;
mod display;
mod error;
mod interp;
mod keep;
mod rows;
mod scale_b;
mod substripe;
mod validate;

pub use contraction::{ContractionKernel, Operand};
pub use error::{KernelError, Site};
pub use interp::{run_contraction, run_kernel};
pub use keep::Keep;
pub use rows::{RowScratch, Rows};

/// A kernel in either form; what [`crate::Target::emit`] translates.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "kernels are built once per compile and moved rarely; boxing buys nothing"
)]
pub enum Kernel {
    /// A loop nest, optionally reducing (see [`LoopKernel`]).
    Loop(LoopKernel),
    /// A batched matrix product with an epilogue (see [`ContractionKernel`]).
    Contraction(ContractionKernel),
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        match self {
            Kernel::Loop(k) => &k.name,
            Kernel::Contraction(k) => &k.name,
        }
    }

    /// The loop kernel, if this is one.
    pub fn as_loop(&self) -> Option<&LoopKernel> {
        match self {
            Kernel::Loop(k) => Some(k),
            Kernel::Contraction(_) => None,
        }
    }

    /// The contraction, if this is one.
    pub fn as_contraction(&self) -> Option<&ContractionKernel> {
        match self {
            Kernel::Loop(_) => None,
            Kernel::Contraction(k) => Some(k),
        }
    }

    /// The kernel's bindings.
    pub fn bindings(&self) -> &[KernelBinding] {
        match self {
            Kernel::Loop(k) => &k.bindings,
            Kernel::Contraction(k) => &k.bindings,
        }
    }

    /// Checks the kernel (see [`LoopKernel::validate`], [`ContractionKernel::validate`]).
    pub fn validate(&self) -> Result<(), KernelError> {
        match self {
            Kernel::Loop(k) => k.validate(),
            Kernel::Contraction(k) => k.validate(),
        }
    }

    /// Runs the kernel with the reference executor ([`run_kernel`], [`run_contraction`]).
    pub fn run(&self, bindings: &mut [&mut [u8]]) -> Result<(), KernelError> {
        match self {
            Kernel::Loop(k) => run_kernel(k, bindings),
            Kernel::Contraction(k) => run_contraction(k, bindings),
        }
    }
}

/// Index of a node in [`LoopKernel::nodes`]; operands always name earlier nodes.
pub type NodeId = u32;

/// An element offset that is affine in the iteration point: `offset + Σ strides[d] * i[d]`,
/// counted in elements of the binding's dtype. A stride of 0 repeats an element along that dim
/// (broadcast); a negative stride walks backwards (reverse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexMap {
    /// Offset at the origin.
    pub offset: i64,
    /// One stride per iteration dim (for a store: per parallel dim).
    pub strides: SmallVec<[i64; 8]>,
}

/// One buffer a kernel reads or writes, as the kernel sees it. At run time it is bound to a
/// region of a slot (see `accy_artifact::Command::Dispatch`), binding `i` of the kernel being
/// binding `i` of the dispatch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelBinding {
    /// Element type of the buffer.
    pub dtype: DType,
    /// Number of elements the region holds; every access stays below it.
    pub elements: u64,
    /// How the kernel uses it.
    pub access: Access,
}

/// One SSA step of a kernel's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// The element of `binding` at `map(point)`.
    Load {
        /// Binding read.
        binding: u32,
        /// Where.
        map: IndexMap,
    },
    /// The element of `binding` at `map(point) + clamp(index, 0, axis_len - 1) * axis_stride`,
    /// where `index` is an integer node (i32, i64 or u8 value, taken as a signed i64; u8 as
    /// 0..=255): the IR's `gather` after its movement has been folded into `map`.
    Gather {
        /// Binding read.
        binding: u32,
        /// The part of the offset that does not depend on the index.
        map: IndexMap,
        /// The integer index node.
        index: NodeId,
        /// Length of the gathered axis (≥ 1).
        axis_len: u64,
        /// Element stride of the gathered axis.
        axis_stride: i64,
    },
    /// A constant: the little-endian bits of one value of the node's dtype (bool: 0 or 1),
    /// zero-extended to 64 bits.
    Const {
        /// The value's bits.
        bits: u64,
    },
    /// `offset + scale * i[dim]` (or just `offset` when `dim` is `None`) as an i64, converted
    /// to the node's dtype as `convert` does: the IR's `iota` seen through movement ops.
    Index {
        /// Iteration dim read, if any.
        dim: Option<u32>,
        /// Multiplier of the dim's index.
        scale: i64,
        /// Added constant.
        offset: i64,
    },
    /// `op(x)`.
    Unary {
        /// Function.
        op: UnaryOp,
        /// Operand.
        x: NodeId,
    },
    /// `op(lhs, rhs)`; operands have the node's dtype.
    Binary {
        /// Function.
        op: BinaryOp,
        /// Left operand.
        lhs: NodeId,
        /// Right operand.
        rhs: NodeId,
    },
    /// `lhs op rhs`; the node's dtype is bool, the operands share another dtype.
    Compare {
        /// Relation.
        op: CompareOp,
        /// Left operand.
        lhs: NodeId,
        /// Right operand.
        rhs: NodeId,
    },
    /// `cond ? on_true : on_false`.
    Select {
        /// Bool condition.
        cond: NodeId,
        /// Value where true.
        on_true: NodeId,
        /// Value where false.
        on_false: NodeId,
    },
    /// `x` converted to the node's dtype, as the IR's `convert`.
    Convert {
        /// Operand.
        x: NodeId,
    },
    /// The finished accumulator of the current point: valid only in a
    /// [`ContractionKernel`]'s epilogue, where its dtype is the contraction's.
    Acc,
    /// `a · b + c` rounded once (IEEE 754 fusedMultiplyAdd, Rust's `mul_add`); the three
    /// operands and the node are all f32 or all f64. No IR op produces it: the math
    /// expansions (`crate::math`) do, and emitters use the CPU's FMA instruction, or an
    /// import where the CPU has none, so the result is the same everywhere.
    Fma {
        /// First factor.
        a: NodeId,
        /// Second factor.
        b: NodeId,
        /// Addend.
        c: NodeId,
    },
    /// `x · 2^⌊n⌋` rounded once (IEEE 754 `scaleB`, as AVX-512's `vscalefps`/`pd` computes
    /// it); `x`, `n` and the node are all f32 or all f64. NaN if either operand is NaN, or
    /// for `0 · 2^+inf` and `inf · 2^-inf`; otherwise `±inf` for `n = +inf` and `±0` for
    /// `n = -inf`. No IR op produces it: the math expansions scale by a power of two with it
    /// on targets that have the instruction ([`crate::Target::has_scale_b`]).
    ScaleB {
        /// The value scaled.
        x: NodeId,
        /// The power of two (its floor).
        n: NodeId,
    },
    /// The bits of `x` as a value of the node's dtype, which has the same size: f32 ↔ i32,
    /// f64 ↔ i64 (or the dtype itself). No IR op produces it: the math expansions take
    /// floats apart (exponent, sign) with it.
    Bitcast {
        /// Operand.
        x: NodeId,
    },
}

/// A node and the dtype of the value it produces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelNode {
    /// The step.
    pub node: Node,
    /// Its result dtype.
    pub dtype: DType,
}

/// Where a kernel writes its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    /// Binding written (its dtype is the result's).
    pub binding: u32,
    /// Element offset over the parallel dims (`strides.len() == parallel_rank`).
    pub map: IndexMap,
}

/// A loop-nest kernel; see the module doc for its exact semantics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopKernel {
    /// A name unique within one compiled program (shows in disassembly and profiles).
    pub name: String,
    /// The iteration space: `parallel_rank` parallel dims, then the reduction dims.
    pub dims: Dims,
    /// How many leading dims are parallel; the rest are reduced.
    pub parallel_rank: u32,
    /// The buffers, by binding number.
    pub bindings: Vec<KernelBinding>,
    /// The body, in evaluation order.
    pub nodes: Vec<KernelNode>,
    /// The node whose value is stored (or reduced, then stored).
    pub result: NodeId,
    /// How the result combines over the reduction dims. `None` requires that there are none;
    /// `Some` with zero reduction dims stores `op(identity, result)` (so a `sum` turns `-0.0`
    /// into `+0.0`, exactly as the IR's `reduce` over no axes does).
    pub reduction: Option<ReduceOp>,
    /// Where the result goes.
    pub store: Store,
    /// A hint for the vector loop to fetch data that it, or the next workgroup, will read
    /// soon, or `None`. No effect on any result: interpreters ignore it, and so may an
    /// emitter.
    pub prefetch: Option<Prefetch>,
    /// The bindings whose rows live in the worker's scratch rather than at the dispatch's
    /// address for them ([`RowScratch`]); empty for most kernels. Interpreters ignore it (they
    /// run every binding as a whole buffer); machine code with it computes its bytes only as
    /// a link of its chain, each workgroup's links in turn on one worker.
    pub row_scratch: Vec<RowScratch>,
    /// A value a reducing kernel also stores at every point, reduced dims included, or
    /// `None` (most kernels).
    pub keep: Option<Keep>,
    /// Float nodes whose value the planner proved at most zero or NaN at every point (a
    /// softmax's `x - max(x)`, `plan/facts.rs`): the math expansions leave out the guards
    /// for larger arguments. Interpreters and emitters ignore it; a kernel whose listed node
    /// is ever positive computes what its expansion does for that argument, which is wrong.
    pub at_most_zero: Vec<NodeId>,
}

/// A cache hint of a [`LoopKernel`]: wherever the vector loop loads a whole vector of
/// `binding` contiguously along the innermost dim, it also hints the cache to fetch the
/// element `ahead` elements further on (masked tails, scalar code, gathers and tiles carry
/// none). The dispatch chains (`plan/chain.rs`) set it on a chain's last link, so that while
/// one workgroup's rows are computed the next workgroup's rows arrive: that overlaps the
/// first link's reads from memory with the last link's arithmetic. A kernel that streams a
/// large input on its own gets one a little ahead of its loads (`plan/stream_hint.rs`),
/// where the hardware prefetchers fall behind. A hint is not an access:
/// a prefetch instruction neither faults nor changes memory, wherever it points, so
/// validation only checks that the kernel loads `binding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefetch {
    /// The binding whose loads carry the hint.
    pub binding: u32,
    /// How far ahead of the loaded element, in elements of the binding.
    pub ahead: i64,
}

impl Node {
    /// The nodes this one reads, in operand order.
    pub fn operands(&self) -> SmallVec<[NodeId; 3]> {
        match self {
            Node::Load { .. } | Node::Const { .. } | Node::Index { .. } | Node::Acc => {
                SmallVec::new()
            }
            Node::Gather { index, .. } => smallvec::smallvec![*index],
            Node::Unary { x, .. } | Node::Convert { x } | Node::Bitcast { x } => {
                smallvec::smallvec![*x]
            }
            Node::Binary { lhs, rhs, .. } | Node::Compare { lhs, rhs, .. } => {
                smallvec::smallvec![*lhs, *rhs]
            }
            Node::ScaleB { x, n } => smallvec::smallvec![*x, *n],
            Node::Select {
                cond,
                on_true,
                on_false,
            } => smallvec::smallvec![*cond, *on_true, *on_false],
            Node::Fma { a, b, c } => smallvec::smallvec![*a, *b, *c],
        }
    }

    /// The same node with every operand id replaced by `f(id)` (leaves are returned as they
    /// are); the first error of `f` is returned instead.
    pub fn map_operands<E>(
        &self,
        mut f: impl FnMut(NodeId) -> Result<NodeId, E>,
    ) -> Result<Node, E> {
        let mut node = self.clone();
        match &mut node {
            Node::Load { .. } | Node::Const { .. } | Node::Index { .. } | Node::Acc => {}
            Node::Gather { index, .. } => *index = f(*index)?,
            Node::Unary { x, .. } | Node::Convert { x } | Node::Bitcast { x } => *x = f(*x)?,
            Node::Binary { lhs, rhs, .. } | Node::Compare { lhs, rhs, .. } => {
                *lhs = f(*lhs)?;
                *rhs = f(*rhs)?;
            }
            Node::ScaleB { x, n } => {
                *x = f(*x)?;
                *n = f(*n)?;
            }
            Node::Select {
                cond,
                on_true,
                on_false,
            } => {
                *cond = f(*cond)?;
                *on_true = f(*on_true)?;
                *on_false = f(*on_false)?;
            }
            Node::Fma { a, b, c } => {
                *a = f(*a)?;
                *b = f(*b)?;
                *c = f(*c)?;
            }
        }
        Ok(node)
    }
}

impl IndexMap {
    /// The map `offset + Σ strides[d] * i[d]`.
    pub fn new(offset: i64, strides: &[i64]) -> IndexMap {
        IndexMap {
            offset,
            strides: SmallVec::from_slice(strides),
        }
    }

    /// The dense row-major map of a tensor of `dims` (the last dim has stride 1), or `None` if
    /// a stride overflows `i64`.
    pub fn row_major(dims: &[u64]) -> Option<IndexMap> {
        let mut strides: SmallVec<[i64; 8]> = SmallVec::from_elem(0, dims.len());
        let mut step: i64 = 1;
        for (s, &n) in strides.iter_mut().zip(dims).rev() {
            *s = step;
            step = step.checked_mul(i64::try_from(n.max(1)).ok()?)?;
        }
        Some(IndexMap { offset: 0, strides })
    }
}

impl LoopKernel {
    /// The number of iteration dims.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The parallel dims (the leading `parallel_rank` dims), or all dims if `parallel_rank` is
    /// out of range (which [`LoopKernel::validate`] rejects).
    pub fn parallel_dims(&self) -> &[u64] {
        self.dims
            .get(..self.parallel_rank as usize)
            .unwrap_or(&self.dims)
    }

    /// How many bytes ahead of a whole-vector load of `binding` (elements of `elem_bytes`
    /// bytes) this kernel's prefetch hint asks an emitter to fetch: `None` when the hint is
    /// for another binding, there is none, or the distance overflows.
    pub fn prefetch_bytes(&self, binding: u32, elem_bytes: i64) -> Option<i64> {
        let p = self.prefetch.filter(|p| p.binding == binding)?;
        p.ahead.checked_mul(elem_bytes)
    }

    /// The nodes whose values leave the body at each point: the result and a kept value's
    /// ([`Keep`]). Code that folds a node into its only reader must leave these alone.
    pub fn roots(&self) -> SmallVec<[NodeId; 2]> {
        std::iter::once(self.result)
            .chain(self.keep.as_ref().map(|k| k.node))
            .collect()
    }

    /// Which nodes the result and the kept value ([`Keep`]) depend on (the others are never
    /// evaluated).
    pub fn live_nodes(&self) -> Vec<bool> {
        let mut live = vec![false; self.nodes.len()];
        for root in self.roots() {
            if let Some(r) = live.get_mut(root as usize) {
                *r = true;
            }
        }
        for i in (0..self.nodes.len()).rev() {
            if !live[i] {
                continue;
            }
            for op in self.nodes[i].node.operands() {
                if let Some(l) = live.get_mut(op as usize) {
                    *l = true;
                }
            }
        }
        live
    }

    /// The reduction dims (those after the parallel ones).
    pub fn reduction_dims(&self) -> &[u64] {
        self.dims.get(self.parallel_rank as usize..).unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests;
