//! NEON code for each varying node of a vectorized kernel (which nodes qualify is decided in
//! `vector.rs`). Lanes are 32-bit (f32, i32, bool masks) or 64-bit (f64, i64, bool masks).
//!
//! Operands come from their homes (or scratch v5–v7 when spilled) and the result goes to the
//! node's register (or scratch v4). Every instruction here has the scalar code's semantics
//! lane by lane: `fmax`/`fmin` propagate NaN and order `-0.0 < +0.0`; float compares are false
//! on unordered lanes (`ne` is the complement of `fcmeq`, so true); shifts are by constants
//! below the lane width, where the IR's shift rules are the plain shifts.

use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{a64, gpr, mov_imm};
use super::kernel::Emitter;
use super::vector::{VectorPlan, SRC_SCRATCH};
use crate::kernel::Node;
use crate::target::EmitError;

/// `prfm`'s operation for a load into the L1 cache, kept (`PLDL1KEEP`).
const PLDL1KEEP: u32 = 0;

impl Emitter<'_> {
    /// After a whole-vector load of `binding` from `[x1]`: the kernel's prefetch hint for
    /// that binding, if it has one, as `prfm pldl1keep` at `x1` plus the hinted distance in
    /// bytes (in x16: the register form takes any distance, where an immediate offset stops
    /// at 32 KiB). The lines are read soon, by the next workgroup's first pass or by this
    /// loop a little later, as on x86-64 (`prefetcht0`). Clobbers x16.
    pub(crate) fn emit_load_prefetch(&mut self, binding: u32, wide: bool) {
        let Some(ahead) = self.k.prefetch_bytes(binding, if wide { 8 } else { 4 }) else {
            return;
        };
        mov_imm(self.ops, gpr::X16, ahead);
        a64!(self.ops; prfm PLDL1KEEP, [x1, x16]);
    }

    /// Emits varying node `i` (not a load) for one vector of points into register `r`.
    pub(crate) fn emit_vnode(
        &mut self,
        plan: &VectorPlan,
        i: usize,
        r: u8,
    ) -> Result<(), EmitError> {
        let n = self.k.nodes[i].clone();
        let w = plan.wide;
        let [s0, s1, s2] = SRC_SCRATCH;
        match n.node {
            Node::Unary { op, x } => {
                let a = self.vsrc(plan, x, s0)?;
                self.emit_vector_unary(op, n.dtype, w, r, a)
            }
            Node::Binary { op, lhs, rhs } => {
                let a = self.vsrc(plan, lhs, s0)?;
                if let Some(amount) = plan.shift[i] {
                    return self.emit_vector_shift(op, w, r, a, amount);
                }
                let b = self.vsrc(plan, rhs, s1)?;
                self.emit_vector_binary(op, n.dtype.is_float(), w, r, a, b)
            }
            Node::Compare { op, lhs, rhs } => {
                let float = self.dtype(lhs)?.is_float();
                let a = self.vsrc(plan, lhs, s0)?;
                let b = self.vsrc(plan, rhs, s1)?;
                self.emit_vector_compare(op, float, w, r, a, b);
                Ok(())
            }
            Node::Select {
                cond,
                on_true,
                on_false,
            } => {
                let c = self.vsrc(plan, cond, s0)?;
                let t = self.vsrc(plan, on_true, s1)?;
                let f = self.vsrc(plan, on_false, s2)?;
                // bsl keeps the mask in its destination: r = (r & t) | (!r & f).
                if r != c {
                    a64!(self.ops; orr V(r).B16, V(c).B16, V(c).B16);
                }
                a64!(self.ops; bsl V(r).B16, V(t).B16, V(f).B16);
                Ok(())
            }
            Node::Fma { a, b, c } => {
                let a = self.vsrc(plan, a, s0)?;
                let b = self.vsrc(plan, b, s1)?;
                let c = self.vsrc(plan, c, s2)?;
                // fmla accumulates into its destination, which is never a factor's register
                // (each value has its own home; r is v4 only for a slot-homed result).
                if r != c {
                    a64!(self.ops; orr V(r).B16, V(c).B16, V(c).B16);
                }
                if w {
                    a64!(self.ops; fmla V(r).D2, V(a).D2, V(b).D2);
                } else {
                    a64!(self.ops; fmla V(r).S4, V(a).S4, V(b).S4);
                }
                Ok(())
            }
            Node::Bitcast { x } => {
                let a = self.vsrc(plan, x, s0)?;
                if a != r {
                    a64!(self.ops; orr V(r).B16, V(a).B16, V(a).B16);
                }
                Ok(())
            }
            _ => Err(self.unsupported("a node without a vector form")),
        }
    }

    fn emit_vector_unary(
        &mut self,
        op: UnaryOp,
        dtype: DType,
        wide: bool,
        r: u8,
        a: u8,
    ) -> Result<(), EmitError> {
        let float = dtype.is_float();
        match (op, float, wide) {
            (UnaryOp::Neg, true, false) => a64!(self.ops; fneg V(r).S4, V(a).S4),
            (UnaryOp::Neg, true, true) => a64!(self.ops; fneg V(r).D2, V(a).D2),
            (UnaryOp::Abs, true, false) => a64!(self.ops; fabs V(r).S4, V(a).S4),
            (UnaryOp::Abs, true, true) => a64!(self.ops; fabs V(r).D2, V(a).D2),
            (UnaryOp::Sqrt, true, false) => a64!(self.ops; fsqrt V(r).S4, V(a).S4),
            (UnaryOp::Sqrt, true, true) => a64!(self.ops; fsqrt V(r).D2, V(a).D2),
            // A correctly rounded division of 1 by the correctly rounded root; v6 is free
            // (a one-operand node loads at most v5).
            (UnaryOp::Rsqrt, true, false) => {
                a64!(self.ops; fsqrt V(r).S4, V(a).S4 ; fmov v6.S4, 1.0 ; fdiv V(r).S4, v6.S4, V(r).S4)
            }
            (UnaryOp::Rsqrt, true, true) => {
                a64!(self.ops; fsqrt V(r).D2, V(a).D2 ; fmov v6.D2, 1.0 ; fdiv V(r).D2, v6.D2, V(r).D2)
            }
            (UnaryOp::Floor, true, false) => a64!(self.ops; frintm V(r).S4, V(a).S4),
            (UnaryOp::Floor, true, true) => a64!(self.ops; frintm V(r).D2, V(a).D2),
            (UnaryOp::Ceil, true, false) => a64!(self.ops; frintp V(r).S4, V(a).S4),
            (UnaryOp::Ceil, true, true) => a64!(self.ops; frintp V(r).D2, V(a).D2),
            (UnaryOp::Round, true, false) => a64!(self.ops; frintn V(r).S4, V(a).S4),
            (UnaryOp::Round, true, true) => a64!(self.ops; frintn V(r).D2, V(a).D2),
            (UnaryOp::Neg, false, false) => a64!(self.ops; neg V(r).S4, V(a).S4),
            (UnaryOp::Neg, false, true) => a64!(self.ops; neg V(r).D2, V(a).D2),
            // Bools are all-ones/zero masks, so `not` is a complement for them too.
            (UnaryOp::Not, false, _) => a64!(self.ops; mvn V(r).B16, V(a).B16),
            _ => return Err(self.unsupported(format!("vector {op} on {dtype}"))),
        }
        Ok(())
    }

    pub(crate) fn emit_vector_binary(
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

    /// `r = a op amount` for a constant `amount` below the lane width (`ushr`/`sshr` take
    /// 1..=width, so a shift right by 0 is a move).
    fn emit_vector_shift(
        &mut self,
        op: BinaryOp,
        wide: bool,
        r: u8,
        a: u8,
        amount: u32,
    ) -> Result<(), EmitError> {
        if amount == 0 {
            if r != a {
                a64!(self.ops; orr V(r).B16, V(a).B16, V(a).B16);
            }
            return Ok(());
        }
        match (op, wide) {
            (BinaryOp::Shl, false) => a64!(self.ops; shl V(r).S4, V(a).S4, amount),
            (BinaryOp::Shl, true) => a64!(self.ops; shl V(r).D2, V(a).D2, amount),
            (BinaryOp::ShrLogical, false) => a64!(self.ops; ushr V(r).S4, V(a).S4, amount),
            (BinaryOp::ShrLogical, true) => a64!(self.ops; ushr V(r).D2, V(a).D2, amount),
            (BinaryOp::ShrArithmetic, false) => a64!(self.ops; sshr V(r).S4, V(a).S4, amount),
            (BinaryOp::ShrArithmetic, true) => a64!(self.ops; sshr V(r).D2, V(a).D2, amount),
            _ => return Err(self.unsupported(format!("vector shift {op}"))),
        }
        Ok(())
    }

    /// `r = (a op b)` as a lane mask. Less-than forms swap the operands of the greater-than
    /// instructions; `ne` complements `eq` (so NaN lanes are true, as the IR says).
    fn emit_vector_compare(&mut self, op: CompareOp, float: bool, wide: bool, r: u8, a: u8, b: u8) {
        let (first, second) = match op {
            CompareOp::Lt | CompareOp::Le => (b, a),
            _ => (a, b),
        };
        let (a, b) = (first, second);
        match (op, float, wide) {
            (CompareOp::Eq | CompareOp::Ne, true, false) => {
                a64!(self.ops; fcmeq V(r).S4, V(a).S4, V(b).S4)
            }
            (CompareOp::Eq | CompareOp::Ne, true, true) => {
                a64!(self.ops; fcmeq V(r).D2, V(a).D2, V(b).D2)
            }
            (CompareOp::Gt | CompareOp::Lt, true, false) => {
                a64!(self.ops; fcmgt V(r).S4, V(a).S4, V(b).S4)
            }
            (CompareOp::Gt | CompareOp::Lt, true, true) => {
                a64!(self.ops; fcmgt V(r).D2, V(a).D2, V(b).D2)
            }
            (CompareOp::Ge | CompareOp::Le, true, false) => {
                a64!(self.ops; fcmge V(r).S4, V(a).S4, V(b).S4)
            }
            (CompareOp::Ge | CompareOp::Le, true, true) => {
                a64!(self.ops; fcmge V(r).D2, V(a).D2, V(b).D2)
            }
            (CompareOp::Eq | CompareOp::Ne, false, false) => {
                a64!(self.ops; cmeq V(r).S4, V(a).S4, V(b).S4)
            }
            (CompareOp::Eq | CompareOp::Ne, false, true) => {
                a64!(self.ops; cmeq V(r).D2, V(a).D2, V(b).D2)
            }
            (CompareOp::Gt | CompareOp::Lt, false, false) => {
                a64!(self.ops; cmgt V(r).S4, V(a).S4, V(b).S4)
            }
            (CompareOp::Gt | CompareOp::Lt, false, true) => {
                a64!(self.ops; cmgt V(r).D2, V(a).D2, V(b).D2)
            }
            (CompareOp::Ge | CompareOp::Le, false, false) => {
                a64!(self.ops; cmge V(r).S4, V(a).S4, V(b).S4)
            }
            (CompareOp::Ge | CompareOp::Le, false, true) => {
                a64!(self.ops; cmge V(r).D2, V(a).D2, V(b).D2)
            }
        }
        if op == CompareOp::Ne {
            a64!(self.ops; mvn V(r).B16, V(r).B16);
        }
    }
}
