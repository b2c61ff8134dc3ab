//! The NEON path: the innermost parallel dim of an elementwise kernel, 4 (32-bit lanes) or 2
//! (64-bit lanes) points per iteration in 128-bit `v` registers, then the scalar loop for the
//! remaining points.
//!
//! A kernel qualifies ([`plan`]) when it has no reduction, stores contiguously along the
//! innermost dim (stride 1), never loads from the binding it stores, and every live node has
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
use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

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
    /// Number of frame vector slots the homes use.
    pub slots: usize,
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

/// The vector plan for `k`, or `None` if it stays scalar.
pub(crate) fn plan(k: &LoopKernel, live: &[bool]) -> Option<VectorPlan> {
    if k.reduction.is_some() || k.dims.is_empty() || k.parallel_rank as usize != k.dims.len() {
        return None;
    }
    let d = k.dims.len() - 1;
    if k.store.map.strides.get(d) != Some(&1) {
        return None;
    }
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
                if *binding == k.store.binding {
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
    let (home, slots) = allocate(&k.nodes, k.result, &uniform, &needs_vec, &REGS);
    Some(VectorPlan {
        wide,
        home,
        uniform,
        shift,
        slots,
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
        let (top, check, tail) = (
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
        );
        self.emit_counter_start(d);
        // An empty run has no point at which the uniform nodes may be read: skip it all.
        self.emit_bound(d, gpr::X1);
        ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.counter[d]);
        a64!(self.ops; cmp x0, x1 ; b.hs =>tail);
        self.emit_broadcasts(plan)?;
        a64!(self.ops; b =>check ; =>top);
        self.emit_vector_body(plan)?;
        crate::aarch64::asm::add_slot(self.ops, self.lay.counter[d], lanes);
        self.emit_map_step(d, lanes);
        a64!(self.ops; =>check);
        self.emit_bound(d, gpr::X1);
        ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.counter[d]);
        let l = lanes as u32;
        a64!(self.ops; add x0, x0, #l ; cmp x0, x1 ; b.ls =>top ; =>tail);
        self.emit_counting_loop(d, Self::emit_dim)
    }

    /// Uniform nodes: evaluated by the scalar code at the loop's first point (their value is
    /// the same at every point of the run) and broadcast into their homes.
    fn emit_broadcasts(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
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
            } else {
                self.emit_vnode(plan, i, r)?;
            }
            self.vfinish(plan, i, r);
        }
        let result = self.vsrc(plan, self.k.result, SRC_SCRATCH[0])?;
        let b = self.k.store.binding * DispatchState::BINDING_STRIDE;
        ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.store_map);
        a64!(self.ops; ldr x1, [x20, #b] ; add x1, x1, x0, lsl #shift ; str Q(result), [x1]);
        Ok(())
    }
}
