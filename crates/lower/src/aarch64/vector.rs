//! The NEON path: the innermost parallel dim of an elementwise kernel, 4 (32-bit lanes) or 2
//! (64-bit lanes) points per iteration in 128-bit `v` registers, then the scalar loop for the
//! remaining points.
//!
//! A kernel qualifies ([`plan`]) when it is elementwise, stores contiguously along the
//! innermost dim (stride 1) and never loads from the binding it stores — or reduces along its
//! innermost dim with a combine NEON gives the scalar loop's result for (`vector_reduce.rs`)
//! — and every live node has
//! a NEON form (`vector_ops.rs`) in one lane width (f32/i32 or f64/i64, with bools as
//! all-ones/zero lane masks of that width): loads contiguous along the dim (stride 1) or
//! constant along it (stride 0: evaluated by the scalar code once per run of the inner loop
//! and broadcast), constants (broadcast once per run), and the lane-wise ops, all of which
//! have exactly the scalar instructions' IEEE semantics (float max/min propagate NaN,
//! `-0.0 < +0.0`). Anything else stays on the scalar loops, which handle every node.
//!
//! Vector values live in v16–v31 and v0–v3 by the shared linear scan (`emit::vregs`), the
//! rest in frame slots; v4–v7 are scratch (operands loaded from slots, a slot-homed result);
//! v8–v15 are callee-saved and never touched.
//!
//! Bounds: the vector loop runs while `counter + lanes <= bound`, so it touches only points of
//! the space; the scalar loop finishes the remaining points one at a time. Nothing reads or
//! writes past a binding's end.

use accy_artifact::DispatchState;
use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use super::asm::{a64, gpr, ldr_slot, str_slot, Slot};
use super::kernel::Emitter;
use crate::emit::vregs::{allocate, Home};
use crate::kernel::{LoopKernel, Node};
use crate::target::EmitError;

/// The registers handed out to values, in order: never v4–v7 (scratch) or v8–v15
/// (callee-saved).
const REGS: [u8; 20] = [
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 0, 1, 2, 3,
];
/// The accumulator of a vectorized reduction (`vector_reduce.rs`), then not allocatable.
pub(crate) const ACC_REG: u8 = 31;
/// Where a slot-homed result is computed before it is stored.
pub(crate) const DST_SCRATCH: u8 = 4;
/// Where operands that live in slots are loaded, by operand position.
pub(crate) const SRC_SCRATCH: [u8; 3] = [5, 6, 7];

/// How the innermost parallel dim is vectorized.
#[derive(Debug)]
pub(crate) struct VectorPlan {
    /// True for 64-bit lanes (2 per vector), false for 32-bit lanes (4 per vector).
    pub wide: bool,
    /// Per node: where its vector value lives.
    pub home: Vec<Home>,
    /// Per node: evaluated by scalar code before the vector loop and broadcast.
    pub uniform: Vec<bool>,
    /// Per node: for a shift by a constant, the amount (which then needs no vector).
    pub shift: Vec<Option<u32>>,
    /// Number of frame vector slots the homes (and the accumulator spill) use.
    pub slots: usize,
    /// For a reduction: the slot the accumulator vector is spilled to, to combine its lanes.
    pub acc_slot: Option<usize>,
}

impl VectorPlan {
    /// Points per vector iteration.
    pub(crate) fn lanes(&self) -> i64 {
        if self.wide {
            2
        } else {
            4
        }
    }
}

/// The amount of a shift node whose amount is a constant below the lane width.
fn shift_amount(k: &LoopKernel, node: &Node, bits: u32) -> Option<u32> {
    let Node::Binary {
        op: BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic,
        rhs,
        ..
    } = node
    else {
        return None;
    };
    let Node::Const { bits: amount } = k.nodes.get(*rhs as usize)?.node else {
        return None;
    };
    (amount < u64::from(bits)).then_some(amount as u32)
}

/// Whether a non-uniform node of `dtype` (operands of `operand`) has a NEON form here.
fn vectorizable(node: &Node, dtype: DType, operand: Option<DType>, shift: bool) -> bool {
    use DType::{Bool, F32, F64, I32, I64};
    match node {
        Node::Load { .. } | Node::Const { .. } => matches!(dtype, F32 | F64 | I32 | I64),
        Node::Unary { op, .. } => match dtype {
            F32 | F64 => matches!(
                op,
                UnaryOp::Neg
                    | UnaryOp::Abs
                    | UnaryOp::Sqrt
                    | UnaryOp::Rsqrt
                    | UnaryOp::Floor
                    | UnaryOp::Ceil
                    | UnaryOp::Round
            ),
            I32 | I64 => matches!(op, UnaryOp::Neg | UnaryOp::Not),
            Bool => *op == UnaryOp::Not,
            _ => false,
        },
        Node::Binary { op, .. } => {
            use BinaryOp::*;
            match dtype {
                F32 | F64 => matches!(op, Add | Sub | Mul | Div | Max | Min),
                I32 => matches!(op, Add | Sub | Mul | And | Or | Xor) || shift,
                I64 => matches!(op, Add | Sub | And | Or | Xor) || shift,
                Bool => matches!(op, And | Or | Xor),
                _ => false,
            }
        }
        Node::Compare { op, .. } => match operand {
            Some(F32 | F64 | I32 | I64) => true,
            Some(Bool) => matches!(op, CompareOp::Eq | CompareOp::Ne),
            _ => false,
        },
        Node::Select { .. } => true,
        Node::Fma { .. } => matches!(dtype, F32 | F64),
        // No NEON instruction does it (SVE's FSCALE would); no expansion produces it here.
        Node::ScaleB { .. } => false,
        // Validation keeps the lane width.
        Node::Bitcast { .. } => true,
        Node::Gather { .. } | Node::Index { .. } | Node::Convert { .. } | Node::Acc => false,
    }
}

/// Whether reduction `op` over `dtype` has a NEON combine that gives the scalar loop's
/// result: wrapping integer sums and i32 products, float max/min (NaN-propagating, `-0 < +0`,
/// so any order gives the same value), and float sums where `reassociate` (default mode)
/// allows reordering them.
fn vector_reduction(op: ReduceOp, dtype: DType, reassociate: bool) -> bool {
    use DType::{F32, F64, I32, I64};
    match op {
        ReduceOp::Sum => matches!(dtype, I32 | I64) || (reassociate && matches!(dtype, F32 | F64)),
        ReduceOp::Max | ReduceOp::Min => matches!(dtype, F32 | F64),
        ReduceOp::Prod => dtype == I32,
    }
}

/// The vector plan for `k`, or `None` if it stays scalar. An elementwise kernel is
/// vectorized along its innermost dim, which it stores contiguously; a reduction whose
/// innermost dim is reduced along that dim, each lane accumulating every `lanes`-th point
/// (`vector_reduce.rs`). `reassociate` (default mode) allows float sums.
pub(crate) fn plan(k: &LoopKernel, live: &[bool], reassociate: bool) -> Option<VectorPlan> {
    let rank = k.dims.len();
    if rank == 0 {
        return None;
    }
    let d = rank - 1;
    let reducing = match k.reduction {
        None if k.parallel_rank as usize == rank => {
            if k.store.map.strides.get(d) != Some(&1) {
                return None;
            }
            false
        }
        Some(op) if (k.parallel_rank as usize) < rank => {
            let dtype = k.nodes.get(k.result as usize)?.dtype;
            if !vector_reduction(op, dtype, reassociate) {
                return None;
            }
            true
        }
        _ => return None,
    };
    let out = k.bindings.get(k.store.binding as usize)?.dtype;
    let wide = match out {
        DType::F32 | DType::I32 => false,
        DType::F64 | DType::I64 => true,
        _ => return None,
    };
    let lane_bits = if wide { 64 } else { 32 };
    let n = k.nodes.len();
    let mut uniform = vec![false; n];
    let mut shift = vec![None; n];
    let mut needs_vec = vec![false; n];
    needs_vec[k.result as usize] = true;
    // A kept value is stored a whole vector at a time, contiguously, in the lanes' width.
    if let Some(keep) = &k.keep {
        let dtype = k.nodes.get(keep.node as usize)?.dtype;
        let lanes_fit = matches!(dtype, DType::F32 | DType::I32 | DType::F64 | DType::I64)
            && (dtype.size_bytes() == 8) == wide;
        if !reducing || keep.map.strides.get(d) != Some(&1) || !lanes_fit {
            return None;
        }
        *needs_vec.get_mut(keep.node as usize)? = true;
    }
    for (i, kn) in k.nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        let is_bool = kn.dtype == DType::Bool;
        if !is_bool && (kn.dtype.size_bytes() == 8) != wide {
            return None;
        }
        shift[i] = shift_amount(k, &kn.node, lane_bits);
        let operand = match kn.node {
            Node::Select { .. } => Some(kn.dtype),
            _ => kn
                .node
                .operands()
                .first()
                .and_then(|&o| k.nodes.get(o as usize))
                .map(|o| o.dtype),
        };
        if !vectorizable(&kn.node, kn.dtype, operand, shift[i].is_some()) {
            return None;
        }
        match &kn.node {
            Node::Load { binding, map } => {
                // Elementwise, a point must not read a later point's store early; a
                // reduction stores after the whole inner loop.
                if *binding == k.store.binding && !reducing {
                    return None;
                }
                match map.strides.get(d) {
                    Some(0) => uniform[i] = true,
                    Some(1) => {}
                    _ => return None,
                }
            }
            // A bool constant would broadcast as 0/1, not as a lane mask.
            Node::Const { .. } if is_bool => return None,
            Node::Const { .. } => uniform[i] = true,
            _ => {}
        }
        let operands = kn.node.operands();
        let vector_operands = if shift[i].is_some() {
            &operands[..1]
        } else {
            &operands[..]
        };
        for &o in vector_operands {
            needs_vec[o as usize] = true;
        }
    }
    let regs: Vec<u8> = REGS
        .iter()
        .copied()
        .filter(|&r| !reducing || r != ACC_REG)
        .collect();
    let (home, mut slots) = allocate(&k.nodes, &k.roots(), &uniform, &needs_vec, &regs);
    let acc_slot = reducing.then(|| {
        slots += 1;
        slots - 1
    });
    Some(VectorPlan {
        wide,
        home,
        uniform,
        shift,
        slots,
        acc_slot,
    })
}

impl Emitter<'_> {
    /// The register holding node `id`'s vector value, loading it into `scratch` from its
    /// slot if it lives in memory.
    pub(crate) fn vsrc(
        &mut self,
        plan: &VectorPlan,
        id: u32,
        scratch: u8,
    ) -> Result<u8, EmitError> {
        match plan.home.get(id as usize) {
            Some(Home::Reg(r)) => Ok(*r),
            Some(Home::Slot(s)) => {
                ldr_slot(self.ops, Slot::Q, scratch, self.lay.vec_slot(*s));
                Ok(scratch)
            }
            _ => Err(self.unsupported(format!("vector operand {id} without a home"))),
        }
    }

    /// The register node `i`'s vector result is computed into: its home, or a scratch
    /// register when it lives in a slot (`vfinish` then stores it).
    fn vdst(&self, plan: &VectorPlan, i: usize) -> u8 {
        match plan.home.get(i) {
            Some(Home::Reg(r)) => *r,
            _ => DST_SCRATCH,
        }
    }

    /// Stores `reg` to node `i`'s slot if that is where it lives.
    fn vfinish(&mut self, plan: &VectorPlan, i: usize, reg: u8) {
        if let Some(Home::Slot(s)) = plan.home.get(i) {
            str_slot(self.ops, Slot::Q, reg, self.lay.vec_slot(*s));
        }
    }

    /// The innermost parallel dim `d` with the vector loop, then the scalar loop for the
    /// points left over.
    pub(crate) fn emit_vector_dim(&mut self, d: usize, plan: &VectorPlan) -> Result<(), EmitError> {
        let lanes = plan.lanes();
        let [top, check, tail] = self.emit_vector_run_start(d, plan)?;
        a64!(self.ops; b =>check ; =>top);
        self.emit_vector_body(plan)?;
        crate::aarch64::asm::add_slot(self.ops, self.lay.counter[d], lanes);
        self.emit_map_step(d, lanes);
        self.emit_vector_loop_check(d, lanes, check, top);
        a64!(self.ops; =>tail);
        self.emit_counting_loop(d, Self::emit_dim)
    }

    /// The start of a run of dim `d`'s vector loop: the counter at its start, a jump to the
    /// returned `tail` label (to be bound before the scalar loop) when the run is empty — it
    /// then has no point at which the uniform nodes may be read — and the broadcasts. Returns
    /// the labels `[top, check, tail]` for the loop to bind.
    pub(crate) fn emit_vector_run_start(
        &mut self,
        d: usize,
        plan: &VectorPlan,
    ) -> Result<[DynamicLabel; 3], EmitError> {
        let labels = [(); 3].map(|_| self.ops.new_dynamic_label());
        self.emit_counter_start(d);
        self.emit_bound(d, gpr::X1);
        ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.counter[d]);
        a64!(self.ops; cmp x0, x1 ; b.hs =>labels[2]);
        self.emit_broadcasts(plan)?;
        Ok(labels)
    }

    /// Binds `check`: back to `top` while a whole vector of `lanes` points is left in dim `d`.
    pub(crate) fn emit_vector_loop_check(
        &mut self,
        d: usize,
        lanes: i64,
        check: DynamicLabel,
        top: DynamicLabel,
    ) {
        a64!(self.ops; =>check);
        self.emit_bound(d, gpr::X1);
        ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.counter[d]);
        let l = lanes as u32;
        a64!(self.ops; add x0, x0, #l ; cmp x0, x1 ; b.ls =>top);
    }

    /// Uniform nodes: evaluated by the scalar code at the loop's first point (their value is
    /// the same at every point of the run) and broadcast into their homes.
    pub(crate) fn emit_broadcasts(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        for i in 0..self.k.nodes.len() {
            if !self.live[i] || !plan.uniform[i] {
                continue;
            }
            if !matches!(self.k.nodes[i].node, Node::Const { .. }) {
                self.emit_node(i)?;
            }
            if plan.home[i] == Home::None {
                continue;
            }
            let r = self.vdst(plan, i);
            ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.node[i]);
            if plan.wide {
                a64!(self.ops; dup V(r).D2, x0);
            } else {
                a64!(self.ops; dup V(r).S4, w0);
            }
            self.vfinish(plan, i, r);
        }
        Ok(())
    }

    /// One vector iteration: every non-uniform live node, then the store.
    fn emit_vector_body(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        self.emit_vector_nodes(plan)?;
        let shift: u32 = if plan.wide { 3 } else { 2 };
        let result = self.vsrc(plan, self.k.result, SRC_SCRATCH[0])?;
        let b = self.k.store.binding * DispatchState::BINDING_STRIDE;
        ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.store_map);
        a64!(self.ops; ldr x1, [x20, #b] ; add x1, x1, x0, lsl #shift ; str Q(result), [x1]);
        Ok(())
    }

    /// Every non-uniform live node for one vector of points, then the kept value's store, if
    /// the kernel keeps one ([`crate::kernel::Keep`]).
    pub(crate) fn emit_vector_nodes(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        let shift: u32 = if plan.wide { 3 } else { 2 };
        for i in 0..self.k.nodes.len() {
            if !self.live[i] || plan.uniform[i] {
                continue;
            }
            let r = self.vdst(plan, i);
            if let Node::Load { binding, .. } = self.k.nodes[i].node {
                let map = self.lay.map[i].ok_or_else(|| self.unsupported("a load without map"))?;
                let b = binding * DispatchState::BINDING_STRIDE;
                ldr_slot(self.ops, Slot::X, gpr::X0, map);
                a64!(self.ops; ldr x1, [x20, #b] ; add x1, x1, x0, lsl #shift ; ldr Q(r), [x1]);
                self.emit_load_prefetch(binding, plan.wide);
            } else {
                self.emit_vnode(plan, i, r)?;
            }
            self.vfinish(plan, i, r);
        }
        if let (Some(keep), Some(map)) = (&self.k.keep, self.lay.keep_map) {
            let kept = self.vsrc(plan, keep.node, SRC_SCRATCH[0])?;
            let b = keep.binding * DispatchState::BINDING_STRIDE;
            ldr_slot(self.ops, Slot::X, gpr::X0, map);
            a64!(self.ops; ldr x1, [x20, #b] ; add x1, x1, x0, lsl #shift ; str Q(kept), [x1]);
        }
        Ok(())
    }
}
