//! The NEON path: the innermost parallel dim of an elementwise kernel, 4 (32-bit lanes) or 2
//! (64-bit lanes) points per iteration in 128-bit `v` registers, then the scalar loop for the
//! remaining points.
//!
//! A kernel qualifies ([`plan`]) when it has no reduction, stores contiguously along the
//! innermost dim (stride 1), never loads from the binding it stores, and every live node has
//! a NEON form here in one lane width (f32/i32 or f64/i64): loads contiguous along the dim
//! (stride 1) or constant along it (stride 0: evaluated by the scalar code once per run of the
//! inner loop and broadcast), constants (broadcast once per run), and the lane-wise ops below,
//! all of which have exactly the scalar instructions' IEEE semantics (float max/min propagate
//! NaN, `-0.0 < +0.0`). Anything else stays on the scalar loops, which handle every node.
//!
//! Every live node gets its own register (v16–v31, then v0–v7; v8–v15 are callee-saved and
//! never touched), so kernels with more than 24 live nodes stay scalar.
//!
//! Bounds: the vector loop runs while `counter + lanes <= bound`, so it touches only points of
//! the space; the scalar loop finishes the remaining points one at a time. Nothing reads or
//! writes past a binding's end.

use accy_artifact::DispatchState;
use accy_ir::{BinaryOp, DType, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{a64, gpr, ldr_slot, Slot};
use super::kernel::Emitter;
use crate::kernel::{LoopKernel, Node};
use crate::target::EmitError;

/// The registers handed out to nodes, in order: never v8–v15 (callee-saved).
const REGS: [u8; 24] = [
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 0, 1, 2, 3, 4, 5, 6, 7,
];

/// How the innermost parallel dim is vectorized.
#[derive(Debug)]
pub(crate) struct VectorPlan {
    /// True for 64-bit lanes (2 per vector), false for 32-bit lanes (4 per vector).
    pub wide: bool,
    /// Per node: its register, for live nodes.
    pub reg: Vec<Option<u8>>,
    /// Per node: evaluated by scalar code before the vector loop and broadcast.
    pub uniform: Vec<bool>,
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

/// Whether a non-uniform node of `dtype` has a NEON form here.
fn vectorizable(node: &Node, dtype: DType) -> bool {
    use DType::{F32, F64, I32, I64};
    match node {
        Node::Load { .. } | Node::Const { .. } => matches!(dtype, F32 | F64 | I32 | I64),
        Node::Unary { op, .. } => match dtype {
            F32 | F64 => matches!(
                op,
                UnaryOp::Neg
                    | UnaryOp::Abs
                    | UnaryOp::Sqrt
                    | UnaryOp::Floor
                    | UnaryOp::Ceil
                    | UnaryOp::Round
            ),
            I32 | I64 => matches!(op, UnaryOp::Neg | UnaryOp::Not),
            _ => false,
        },
        Node::Binary { op, .. } => {
            use BinaryOp::*;
            match dtype {
                F32 | F64 => matches!(op, Add | Sub | Mul | Div | Max | Min),
                I32 => matches!(op, Add | Sub | Mul | And | Or | Xor),
                I64 => matches!(op, Add | Sub | And | Or | Xor),
                _ => false,
            }
        }
        _ => false,
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
    let mut reg = vec![None; k.nodes.len()];
    let mut uniform = vec![false; k.nodes.len()];
    let mut next = REGS.iter();
    for (i, n) in k.nodes.iter().enumerate() {
        if !live[i] {
            continue;
        }
        if (n.dtype.size_bytes() == 8) != wide || !vectorizable(&n.node, n.dtype) {
            return None;
        }
        match &n.node {
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
            Node::Const { .. } => uniform[i] = true,
            _ => {}
        }
        reg[i] = Some(*next.next()?);
    }
    Some(VectorPlan { wide, reg, uniform })
}

impl Emitter<'_> {
    /// The register of node `id` in the vector plan.
    fn vreg(&self, plan: &VectorPlan, id: u32) -> Result<u8, EmitError> {
        plan.reg
            .get(id as usize)
            .copied()
            .flatten()
            .ok_or_else(|| self.unsupported(format!("vector operand {id} without a register")))
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
    /// the same at every point of the run) and broadcast into their registers.
    fn emit_broadcasts(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        for i in 0..self.k.nodes.len() {
            let Some(r) = plan.reg[i] else { continue };
            if !plan.uniform[i] {
                continue;
            }
            if !matches!(self.k.nodes[i].node, Node::Const { .. }) {
                self.emit_node(i)?;
            }
            let slot = self.lay.node[i];
            ldr_slot(self.ops, Slot::X, gpr::X0, slot);
            if plan.wide {
                a64!(self.ops; dup V(r).D2, x0);
            } else {
                a64!(self.ops; dup V(r).S4, w0);
            }
        }
        Ok(())
    }

    /// One vector iteration: every non-uniform live node, then the store.
    fn emit_vector_body(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        let shift: u32 = if plan.wide { 3 } else { 2 };
        for i in 0..self.k.nodes.len() {
            let Some(r) = plan.reg[i] else { continue };
            if plan.uniform[i] {
                continue;
            }
            let n = self.k.nodes[i].clone();
            let float = n.dtype.is_float();
            match n.node {
                Node::Load { binding, .. } => {
                    let map =
                        self.lay.map[i].ok_or_else(|| self.unsupported("a load without map"))?;
                    let b = binding * DispatchState::BINDING_STRIDE;
                    ldr_slot(self.ops, Slot::X, gpr::X0, map);
                    a64!(self.ops; ldr x1, [x20, #b] ; add x1, x1, x0, lsl #shift ; ldr Q(r), [x1]);
                }
                Node::Unary { op, x } => {
                    let a = self.vreg(plan, x)?;
                    self.emit_vector_unary(op, float, plan.wide, r, a)?;
                }
                Node::Binary { op, lhs, rhs } => {
                    let (a, b) = (self.vreg(plan, lhs)?, self.vreg(plan, rhs)?);
                    self.emit_vector_binary(op, float, plan.wide, r, a, b)?;
                }
                _ => return Err(self.unsupported("a node without a vector form")),
            }
        }
        let result = self.vreg(plan, self.k.result)?;
        let b = self.k.store.binding * DispatchState::BINDING_STRIDE;
        ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.store_map);
        a64!(self.ops; ldr x1, [x20, #b] ; add x1, x1, x0, lsl #shift ; str Q(result), [x1]);
        Ok(())
    }

    fn emit_vector_unary(
        &mut self,
        op: UnaryOp,
        float: bool,
        wide: bool,
        r: u8,
        a: u8,
    ) -> Result<(), EmitError> {
        match (op, float, wide) {
            (UnaryOp::Neg, true, false) => a64!(self.ops; fneg V(r).S4, V(a).S4),
            (UnaryOp::Neg, true, true) => a64!(self.ops; fneg V(r).D2, V(a).D2),
            (UnaryOp::Abs, true, false) => a64!(self.ops; fabs V(r).S4, V(a).S4),
            (UnaryOp::Abs, true, true) => a64!(self.ops; fabs V(r).D2, V(a).D2),
            (UnaryOp::Sqrt, true, false) => a64!(self.ops; fsqrt V(r).S4, V(a).S4),
            (UnaryOp::Sqrt, true, true) => a64!(self.ops; fsqrt V(r).D2, V(a).D2),
            (UnaryOp::Floor, true, false) => a64!(self.ops; frintm V(r).S4, V(a).S4),
            (UnaryOp::Floor, true, true) => a64!(self.ops; frintm V(r).D2, V(a).D2),
            (UnaryOp::Ceil, true, false) => a64!(self.ops; frintp V(r).S4, V(a).S4),
            (UnaryOp::Ceil, true, true) => a64!(self.ops; frintp V(r).D2, V(a).D2),
            (UnaryOp::Round, true, false) => a64!(self.ops; frintn V(r).S4, V(a).S4),
            (UnaryOp::Round, true, true) => a64!(self.ops; frintn V(r).D2, V(a).D2),
            (UnaryOp::Neg, false, false) => a64!(self.ops; neg V(r).S4, V(a).S4),
            (UnaryOp::Neg, false, true) => a64!(self.ops; neg V(r).D2, V(a).D2),
            (UnaryOp::Not, false, _) => a64!(self.ops; mvn V(r).B16, V(a).B16),
            _ => return Err(self.unsupported(format!("vector {op}"))),
        }
        Ok(())
    }

    fn emit_vector_binary(
        &mut self,
        op: BinaryOp,
        float: bool,
        wide: bool,
        r: u8,
        a: u8,
        b: u8,
    ) -> Result<(), EmitError> {
        use BinaryOp::*;
        match (op, float, wide) {
            (Add, true, false) => a64!(self.ops; fadd V(r).S4, V(a).S4, V(b).S4),
            (Add, true, true) => a64!(self.ops; fadd V(r).D2, V(a).D2, V(b).D2),
            (Sub, true, false) => a64!(self.ops; fsub V(r).S4, V(a).S4, V(b).S4),
            (Sub, true, true) => a64!(self.ops; fsub V(r).D2, V(a).D2, V(b).D2),
            (Mul, true, false) => a64!(self.ops; fmul V(r).S4, V(a).S4, V(b).S4),
            (Mul, true, true) => a64!(self.ops; fmul V(r).D2, V(a).D2, V(b).D2),
            (Div, true, false) => a64!(self.ops; fdiv V(r).S4, V(a).S4, V(b).S4),
            (Div, true, true) => a64!(self.ops; fdiv V(r).D2, V(a).D2, V(b).D2),
            (Max, true, false) => a64!(self.ops; fmax V(r).S4, V(a).S4, V(b).S4),
            (Max, true, true) => a64!(self.ops; fmax V(r).D2, V(a).D2, V(b).D2),
            (Min, true, false) => a64!(self.ops; fmin V(r).S4, V(a).S4, V(b).S4),
            (Min, true, true) => a64!(self.ops; fmin V(r).D2, V(a).D2, V(b).D2),
            (Add, false, false) => a64!(self.ops; add V(r).S4, V(a).S4, V(b).S4),
            (Add, false, true) => a64!(self.ops; add V(r).D2, V(a).D2, V(b).D2),
            (Sub, false, false) => a64!(self.ops; sub V(r).S4, V(a).S4, V(b).S4),
            (Sub, false, true) => a64!(self.ops; sub V(r).D2, V(a).D2, V(b).D2),
            (Mul, false, false) => a64!(self.ops; mul V(r).S4, V(a).S4, V(b).S4),
            (And, false, _) => a64!(self.ops; and V(r).B16, V(a).B16, V(b).B16),
            (Or, false, _) => a64!(self.ops; orr V(r).B16, V(a).B16, V(b).B16),
            (Xor, false, _) => a64!(self.ops; eor V(r).B16, V(a).B16, V(b).B16),
            _ => return Err(self.unsupported(format!("vector {op}"))),
        }
        Ok(())
    }
}
