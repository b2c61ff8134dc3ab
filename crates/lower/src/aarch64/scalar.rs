//! Scalar code for every node and dtype, exactly as `accy_ir::op` specifies.
//!
//! Operands come from their frame slots into fixed scratch registers (integers, bools and u8
//! in `x0`/`x1`, zero-extended from 8 or 32 bits or full 64-bit for i64; floats in `s0`/`s1`
//! or `d0`/`d1`) and results go back to the node's slot. Where AArch64 already matches the IR
//! no fix-up is needed: `sdiv`/`udiv` give 0 for a zero divisor and wrap `MIN / -1`, and a
//! remainder is `a - (a / b) * b` (`msub`), which is then `a` for `b = 0` and 0 for `MIN % -1`;
//! `fmax`/`fmin` propagate NaN and order `-0.0 < +0.0`; `fcmp` condition codes are false on
//! unordered operands except `ne`. Shift amounts are masked by the hardware, so amounts outside
//! `0..bits` are clamped (arithmetic) or zero the result (logical). Floor, ceil and round are
//! `frintm`/`frintp`/`frintn` and `fma` is `fmadd`; transcendentals, `pow` and float `rem` call
//! the import table.

use accy_artifact::{DispatchState, Import};
use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{a64, add_imm, gpr, ldr_slot, mov_imm, mul_imm, str_slot, Slot};
use super::kernel::Emitter;
use crate::kernel::Node;
use crate::target::EmitError;

/// The import implementing a float unary op, as (f32, f64) variants. Floor, ceil and round
/// are native instructions here, so they never call an import.
fn unary_import(op: UnaryOp) -> Option<(Import, Import)> {
    Some(match op {
        UnaryOp::Exp => (Import::ExpF32, Import::ExpF64),
        UnaryOp::Log => (Import::LogF32, Import::LogF64),
        UnaryOp::Tanh => (Import::TanhF32, Import::TanhF64),
        UnaryOp::Sigmoid => (Import::SigmoidF32, Import::SigmoidF64),
        UnaryOp::Erf => (Import::ErfF32, Import::ErfF64),
        UnaryOp::Sin => (Import::SinF32, Import::SinF64),
        UnaryOp::Cos => (Import::CosF32, Import::CosF64),
        _ => return None,
    })
}

/// The frame access kind of an integer or bool dtype.
fn int_slot(dtype: DType) -> Slot {
    match dtype.size_bytes() {
        1 => Slot::B,
        4 => Slot::W,
        _ => Slot::X,
    }
}

impl Emitter<'_> {
    /// `reg` = the integer/bool value in `slot` (u8/bool zero-extended, i32 in 32 bits).
    pub(crate) fn load_int(&mut self, reg: u8, slot: i32, dtype: DType) {
        ldr_slot(self.ops, int_slot(dtype), reg, slot);
    }

    /// `slot` = the low bytes of `reg` that hold a `dtype` value.
    pub(crate) fn store_int(&mut self, reg: u8, slot: i32, dtype: DType) {
        str_slot(self.ops, int_slot(dtype), reg, slot);
    }

    /// `s(x)`/`d(x)` = the float in `slot`.
    pub(crate) fn load_float(&mut self, x: u8, slot: i32, dtype: DType) {
        let kind = if dtype == DType::F64 {
            Slot::D
        } else {
            Slot::S
        };
        ldr_slot(self.ops, kind, x, slot);
    }

    /// `slot` = the float in `s(x)`/`d(x)`.
    pub(crate) fn store_float(&mut self, x: u8, slot: i32, dtype: DType) {
        let kind = if dtype == DType::F64 {
            Slot::D
        } else {
            Slot::S
        };
        str_slot(self.ops, kind, x, slot);
    }

    /// Calls `import` (arguments already in s0/s1 or d0/d1; result in s0/d0). The call
    /// clobbers every caller-saved register, but every value lives in the frame and the base
    /// registers x19-x21 are callee-saved, so nothing needs saving.
    pub(crate) fn call_import(&mut self, import: Import) {
        // At most 24 entries of 8 bytes: fits the scaled offset field.
        let at = import.table_offset();
        a64!(self.ops; ldr x16, [x21, #at] ; blr x16);
    }

    /// Emits node `i` at the current point.
    pub(crate) fn emit_node(&mut self, i: usize) -> Result<(), EmitError> {
        let n = &self.k.nodes[i];
        let (dtype, dst) = (n.dtype, self.lay.node[i]);
        match n.node.clone() {
            Node::Load { binding, .. } => {
                let map = self.lay.map[i].ok_or_else(|| self.unsupported("a load without map"))?;
                ldr_slot(self.ops, Slot::X, gpr::X0, map);
                self.emit_element_load(binding, dtype, dst)
            }
            Node::Gather {
                binding,
                index,
                axis_len,
                axis_stride,
                ..
            } => {
                let map =
                    self.lay.map[i].ok_or_else(|| self.unsupported("a gather without map"))?;
                let (islot, itype) = (self.slot(index)?, self.dtype(index)?);
                match itype {
                    DType::I32 => {
                        ldr_slot(self.ops, Slot::W, gpr::X0, islot);
                        a64!(self.ops; sxtw x0, w0);
                    }
                    DType::I64 => ldr_slot(self.ops, Slot::X, gpr::X0, islot),
                    DType::U8 | DType::Bool => ldr_slot(self.ops, Slot::B, gpr::X0, islot),
                    _ => return Err(self.unsupported(format!("a {itype} gather index"))),
                }
                // clamp(index, 0, axis_len - 1) as signed values.
                let hi = i64::try_from(axis_len.saturating_sub(1)).unwrap_or(i64::MAX);
                a64!(self.ops; cmp x0, #0 ; csel x0, xzr, x0, lt);
                mov_imm(self.ops, gpr::X1, hi);
                a64!(self.ops; cmp x0, x1 ; csel x0, x1, x0, gt);
                mul_imm(self.ops, gpr::X0, axis_stride);
                ldr_slot(self.ops, Slot::X, gpr::X1, map);
                a64!(self.ops; add x0, x0, x1);
                self.emit_element_load(binding, dtype, dst)
            }
            Node::Const { .. } => Ok(()),
            Node::Index { dim, scale, offset } => {
                match dim {
                    Some(d) => {
                        let counter = self.lay.counter[d as usize];
                        ldr_slot(self.ops, Slot::X, gpr::X0, counter);
                        mul_imm(self.ops, gpr::X0, scale);
                        add_imm(self.ops, gpr::X0, offset);
                    }
                    None => mov_imm(self.ops, gpr::X0, offset),
                }
                self.convert_from_i64(dtype, dst)
            }
            Node::Unary { op, x } => self.emit_unary(op, dtype, self.slot(x)?, dst),
            Node::Binary { op, lhs, rhs } => {
                self.emit_binary(op, dtype, self.slot(lhs)?, self.slot(rhs)?, dst)
            }
            Node::Compare { op, lhs, rhs } => {
                let operand = self.dtype(lhs)?;
                self.emit_compare(op, operand, self.slot(lhs)?, self.slot(rhs)?, dst)
            }
            Node::Select {
                cond,
                on_true,
                on_false,
            } => {
                let (c, t, f) = (self.slot(cond)?, self.slot(on_true)?, self.slot(on_false)?);
                ldr_slot(self.ops, Slot::X, gpr::X0, t);
                ldr_slot(self.ops, Slot::X, gpr::X1, f);
                ldr_slot(self.ops, Slot::B, 2, c);
                a64!(self.ops; cmp w2, #0 ; csel x0, x1, x0, eq);
                str_slot(self.ops, Slot::X, gpr::X0, dst);
                Ok(())
            }
            Node::Convert { x } => {
                let from = self.dtype(x)?;
                self.emit_convert(from, self.slot(x)?, dtype, dst)
            }
            Node::Acc => Err(self.unsupported("an accumulator read in a loop kernel")),
            Node::Fma { a, b, c } => {
                let (a, b, c) = (self.slot(a)?, self.slot(b)?, self.slot(c)?);
                self.load_float(0, a, dtype);
                self.load_float(1, b, dtype);
                self.load_float(2, c, dtype);
                match dtype {
                    DType::F32 => a64!(self.ops; fmadd s0, s0, s1, s2),
                    DType::F64 => a64!(self.ops; fmadd d0, d0, d1, d2),
                    _ => return Err(self.unsupported(format!("fma on {dtype}"))),
                }
                self.store_float(0, dst, dtype);
                Ok(())
            }
            // `AArch64Target::has_scale_b` is false: no expansion produces it here.
            Node::ScaleB { .. } => Err(self.unsupported("scaleb")),
            // The slot holds the value's bits whatever its dtype: copy them.
            Node::Bitcast { x } => {
                ldr_slot(self.ops, Slot::X, gpr::X0, self.slot(x)?);
                str_slot(self.ops, Slot::X, gpr::X0, dst);
                Ok(())
            }
        }
    }

    /// `dst` = element `x0` of `binding` (a bool byte reads as true when non-zero).
    fn emit_element_load(&mut self, binding: u32, dtype: DType, dst: i32) -> Result<(), EmitError> {
        if binding as usize >= self.k.bindings.len() {
            return Err(self.unsupported("a load from a missing binding"));
        }
        // Below MAX_BINDINGS (check_shape), so `b` < 2048 fits the scaled offset field.
        let b = binding * DispatchState::BINDING_STRIDE;
        a64!(self.ops; ldr x1, [x20, #b]);
        match dtype {
            DType::Bool => {
                a64!(self.ops; ldrb w2, [x1, x0] ; cmp w2, #0 ; cset w2, ne);
                str_slot(self.ops, Slot::B, 2, dst);
            }
            DType::U8 => {
                a64!(self.ops; ldrb w2, [x1, x0]);
                str_slot(self.ops, Slot::B, 2, dst);
            }
            DType::F32 | DType::I32 => {
                a64!(self.ops; ldr w2, [x1, x0, lsl #2]);
                str_slot(self.ops, Slot::W, 2, dst);
            }
            DType::F64 | DType::I64 => {
                a64!(self.ops; ldr x2, [x1, x0, lsl #3]);
                str_slot(self.ops, Slot::X, 2, dst);
            }
            _ => return Err(self.unsupported(format!("a {dtype} load"))),
        }
        Ok(())
    }

    fn emit_unary(&mut self, op: UnaryOp, dtype: DType, x: i32, dst: i32) -> Result<(), EmitError> {
        let f64 = dtype == DType::F64;
        match (op, dtype) {
            // Sign-bit operations in general registers keep NaN payloads untouched.
            (UnaryOp::Neg, DType::F32) => {
                ldr_slot(self.ops, Slot::W, gpr::X0, x);
                a64!(self.ops; eor w0, w0, #0x8000_0000);
            }
            (UnaryOp::Neg, DType::F64) => {
                ldr_slot(self.ops, Slot::X, gpr::X0, x);
                a64!(self.ops; eor x0, x0, #0x8000_0000_0000_0000);
            }
            (UnaryOp::Abs, DType::F32) => {
                ldr_slot(self.ops, Slot::W, gpr::X0, x);
                a64!(self.ops; and w0, w0, #0x7fff_ffff);
            }
            (UnaryOp::Abs, DType::F64) => {
                ldr_slot(self.ops, Slot::X, gpr::X0, x);
                a64!(self.ops; and x0, x0, #0x7fff_ffff_ffff_ffff);
            }
            (UnaryOp::Sqrt | UnaryOp::Rsqrt, DType::F32 | DType::F64) => {
                self.load_float(0, x, dtype);
                if f64 {
                    a64!(self.ops; fsqrt d0, d0);
                } else {
                    a64!(self.ops; fsqrt s0, s0);
                }
                if op == UnaryOp::Rsqrt {
                    // A correctly rounded division of 1 by the correctly rounded root.
                    if f64 {
                        a64!(self.ops; fmov d1, #1.0 ; fdiv d0, d1, d0);
                    } else {
                        a64!(self.ops; fmov s1, #1.0 ; fdiv s0, s1, s0);
                    }
                }
                self.store_float(0, dst, dtype);
                return Ok(());
            }
            (UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round, DType::F32 | DType::F64) => {
                self.load_float(0, x, dtype);
                match (op, f64) {
                    (UnaryOp::Floor, false) => a64!(self.ops; frintm s0, s0),
                    (UnaryOp::Floor, true) => a64!(self.ops; frintm d0, d0),
                    (UnaryOp::Ceil, false) => a64!(self.ops; frintp s0, s0),
                    (UnaryOp::Ceil, true) => a64!(self.ops; frintp d0, d0),
                    // `round` is round-half-to-even.
                    (_, false) => a64!(self.ops; frintn s0, s0),
                    (_, true) => a64!(self.ops; frintn d0, d0),
                }
                self.store_float(0, dst, dtype);
                return Ok(());
            }
            (_, DType::F32 | DType::F64) if unary_import(op).is_some() => {
                let (i32_, i64_) = unary_import(op).unwrap_or((Import::ExpF32, Import::ExpF64));
                self.load_float(0, x, dtype);
                self.call_import(if f64 { i64_ } else { i32_ });
                self.store_float(0, dst, dtype);
                return Ok(());
            }
            (UnaryOp::Not, DType::Bool) => {
                ldr_slot(self.ops, Slot::B, gpr::X0, x);
                a64!(self.ops; eor w0, w0, #1);
            }
            (UnaryOp::Not, DType::I32 | DType::U8) => {
                self.load_int(gpr::X0, x, dtype);
                a64!(self.ops; mvn w0, w0);
            }
            (UnaryOp::Not, DType::I64) => {
                ldr_slot(self.ops, Slot::X, gpr::X0, x);
                a64!(self.ops; mvn x0, x0);
            }
            (UnaryOp::Neg, DType::I32 | DType::U8) => {
                self.load_int(gpr::X0, x, dtype);
                a64!(self.ops; neg w0, w0);
            }
            (UnaryOp::Neg, DType::I64) => {
                ldr_slot(self.ops, Slot::X, gpr::X0, x);
                a64!(self.ops; neg x0, x0);
            }
            (UnaryOp::Abs, DType::U8) => ldr_slot(self.ops, Slot::B, gpr::X0, x),
            (UnaryOp::Abs, DType::I32) => {
                ldr_slot(self.ops, Slot::W, gpr::X0, x);
                a64!(self.ops; cmp w0, #0 ; cneg w0, w0, lt);
            }
            (UnaryOp::Abs, DType::I64) => {
                ldr_slot(self.ops, Slot::X, gpr::X0, x);
                a64!(self.ops; cmp x0, #0 ; cneg x0, x0, lt);
            }
            _ => return Err(self.unsupported(format!("{op} on {dtype}"))),
        }
        // Integer, bool and sign-bit results are in x0; store the dtype's width.
        self.store_int(gpr::X0, dst, dtype);
        Ok(())
    }

    /// `dst = op(a, b)` over `dtype` (also the reduction combine step).
    pub(crate) fn emit_binary(
        &mut self,
        op: BinaryOp,
        dtype: DType,
        a: i32,
        b: i32,
        dst: i32,
    ) -> Result<(), EmitError> {
        if dtype.is_float() {
            return self.emit_float_binary(op, dtype, a, b, dst);
        }
        self.load_int(gpr::X0, a, dtype);
        self.load_int(gpr::X1, b, dtype);
        let (w64, unsigned) = (dtype == DType::I64, !dtype.is_signed_integer());
        let bits: u32 = if w64 {
            64
        } else if dtype == DType::I32 {
            32
        } else {
            8
        };
        let numeric = dtype.is_numeric();
        match op {
            BinaryOp::And => a64!(self.ops; and x0, x0, x1),
            BinaryOp::Or => a64!(self.ops; orr x0, x0, x1),
            BinaryOp::Xor => a64!(self.ops; eor x0, x0, x1),
            BinaryOp::Add if numeric => a64!(self.ops; add x0, x0, x1),
            BinaryOp::Sub if numeric => a64!(self.ops; sub x0, x0, x1),
            BinaryOp::Mul if numeric => a64!(self.ops; mul x0, x0, x1),
            BinaryOp::Max | BinaryOp::Min if numeric => match (op == BinaryOp::Max, unsigned) {
                (true, true) => a64!(self.ops; cmp x0, x1 ; csel x0, x0, x1, hi),
                (false, true) => a64!(self.ops; cmp x0, x1 ; csel x0, x0, x1, lo),
                (true, false) if w64 => a64!(self.ops; cmp x0, x1 ; csel x0, x0, x1, gt),
                (false, false) if w64 => a64!(self.ops; cmp x0, x1 ; csel x0, x0, x1, lt),
                (true, false) => a64!(self.ops; cmp w0, w1 ; csel w0, w0, w1, gt),
                (false, false) => a64!(self.ops; cmp w0, w1 ; csel w0, w0, w1, lt),
            },
            BinaryOp::Div | BinaryOp::Rem if numeric => self.emit_int_div(op, dtype),
            BinaryOp::Pow if numeric => self.emit_int_pow(w64),
            BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic if numeric => {
                // Values are zero-extended (u8, i32) or full (i64), so an unsigned compare of
                // the amount against the width also catches negative amounts.
                let arithmetic = op == BinaryOp::ShrArithmetic && !unsigned;
                match (op, w64, arithmetic) {
                    (_, true, true) => a64!(self.ops
                        ; mov x2, #63 ; cmp x1, #64 ; csel x1, x2, x1, hs ; asr x0, x0, x1),
                    (_, false, true) => a64!(self.ops
                        ; mov w2, #31 ; cmp w1, #32 ; csel w1, w2, w1, hs ; asr w0, w0, w1),
                    (BinaryOp::Shl, true, _) => a64!(self.ops; lsl x0, x0, x1),
                    (BinaryOp::Shl, false, _) => a64!(self.ops; lsl w0, w0, w1),
                    (_, true, _) => a64!(self.ops; lsr x0, x0, x1),
                    (_, false, _) => a64!(self.ops; lsr w0, w0, w1),
                }
                if !arithmetic {
                    a64!(self.ops; cmp x1, #bits ; csel x0, xzr, x0, hs);
                }
            }
            _ => return Err(self.unsupported(format!("{op} on {dtype}"))),
        }
        self.store_int(gpr::X0, dst, dtype);
        Ok(())
    }

    /// Integer division or remainder of x0 by x1 with the IR's rules for 0 and `MIN / -1`,
    /// which `sdiv`/`udiv` and `msub` implement natively (see the module doc).
    fn emit_int_div(&mut self, op: BinaryOp, dtype: DType) {
        let rem = op == BinaryOp::Rem;
        match dtype {
            DType::I64 => a64!(self.ops; sdiv x2, x0, x1),
            DType::I32 => a64!(self.ops; sdiv w2, w0, w1),
            _ => a64!(self.ops; udiv w2, w0, w1),
        }
        match (dtype, rem) {
            (DType::I64, true) => a64!(self.ops; msub x0, x2, x1, x0),
            (_, true) => a64!(self.ops; msub w0, w2, w1, w0),
            (_, false) => a64!(self.ops; mov x0, x2),
        }
    }

    /// `x0 = pow(x0, x1)` by square-and-multiply; a negative exponent gives 1 for base 1,
    /// ±1 for base -1 and 0 otherwise. u8 values are zero-extended, so they never look
    /// negative and share the 32-bit code.
    fn emit_int_pow(&mut self, w64: bool) {
        if w64 {
            a64!(self.ops
                ; tbz x1, #63, >pos
                ; cmp x0, #1 ; b.eq >done ; cmn x0, #1 ; b.ne >zero
                ; tbnz x1, #0, >done ; mov x0, #1 ; b >done
                ; zero: ; mov x0, xzr ; b >done
                ; pos: ; mov x2, x1 ; mov x1, x0 ; mov x0, #1
                ; cbz x2, >done
                ; top: ; tbz x2, #0, >skip ; mul x0, x0, x1
                ; skip: ; mul x1, x1, x1 ; lsr x2, x2, #1 ; cbnz x2, <top
                ; done:);
        } else {
            a64!(self.ops
                ; tbz w1, #31, >pos
                ; cmp w0, #1 ; b.eq >done ; cmn w0, #1 ; b.ne >zero
                ; tbnz w1, #0, >done ; mov w0, #1 ; b >done
                ; zero: ; mov w0, wzr ; b >done
                ; pos: ; mov w2, w1 ; mov w1, w0 ; mov w0, #1
                ; cbz w2, >done
                ; top: ; tbz w2, #0, >skip ; mul w0, w0, w1
                ; skip: ; mul w1, w1, w1 ; lsr w2, w2, #1 ; cbnz w2, <top
                ; done:);
        }
    }

    fn emit_float_binary(
        &mut self,
        op: BinaryOp,
        dtype: DType,
        a: i32,
        b: i32,
        dst: i32,
    ) -> Result<(), EmitError> {
        let f64 = dtype == DType::F64;
        self.load_float(0, a, dtype);
        self.load_float(1, b, dtype);
        match (op, f64) {
            (BinaryOp::Add, false) => a64!(self.ops; fadd s0, s0, s1),
            (BinaryOp::Add, true) => a64!(self.ops; fadd d0, d0, d1),
            (BinaryOp::Sub, false) => a64!(self.ops; fsub s0, s0, s1),
            (BinaryOp::Sub, true) => a64!(self.ops; fsub d0, d0, d1),
            (BinaryOp::Mul, false) => a64!(self.ops; fmul s0, s0, s1),
            (BinaryOp::Mul, true) => a64!(self.ops; fmul d0, d0, d1),
            (BinaryOp::Div, false) => a64!(self.ops; fdiv s0, s0, s1),
            (BinaryOp::Div, true) => a64!(self.ops; fdiv d0, d0, d1),
            (BinaryOp::Rem, _) => {
                self.call_import(if f64 { Import::RemF64 } else { Import::RemF32 })
            }
            (BinaryOp::Pow, _) => {
                self.call_import(if f64 { Import::PowF64 } else { Import::PowF32 })
            }
            // NaN-propagating, and -0.0 < +0.0: exactly the IR's max/min.
            (BinaryOp::Max, false) => a64!(self.ops; fmax s0, s0, s1),
            (BinaryOp::Max, true) => a64!(self.ops; fmax d0, d0, d1),
            (BinaryOp::Min, false) => a64!(self.ops; fmin s0, s0, s1),
            (BinaryOp::Min, true) => a64!(self.ops; fmin d0, d0, d1),
            _ => return Err(self.unsupported(format!("{op} on {dtype}"))),
        }
        self.store_float(0, dst, dtype);
        Ok(())
    }

    fn emit_compare(
        &mut self,
        op: CompareOp,
        dtype: DType,
        a: i32,
        b: i32,
        dst: i32,
    ) -> Result<(), EmitError> {
        if dtype.is_float() {
            self.load_float(0, a, dtype);
            self.load_float(1, b, dtype);
            if dtype == DType::F64 {
                a64!(self.ops; fcmp d0, d1);
            } else {
                a64!(self.ops; fcmp s0, s1);
            }
            // Unordered sets NZCV = 0011: mi, ls, gt, ge and eq are false, ne is true.
            match op {
                CompareOp::Eq => a64!(self.ops; cset w0, eq),
                CompareOp::Ne => a64!(self.ops; cset w0, ne),
                CompareOp::Lt => a64!(self.ops; cset w0, mi),
                CompareOp::Le => a64!(self.ops; cset w0, ls),
                CompareOp::Gt => a64!(self.ops; cset w0, gt),
                CompareOp::Ge => a64!(self.ops; cset w0, ge),
            }
        } else {
            self.load_int(gpr::X0, a, dtype);
            self.load_int(gpr::X1, b, dtype);
            // Zero-extended u8/bool values compare correctly in 64 bits either way; i32 needs
            // a 32-bit compare for its sign.
            if dtype == DType::I32 {
                a64!(self.ops; cmp w0, w1);
            } else {
                a64!(self.ops; cmp x0, x1);
            }
            match (op, dtype.is_signed_integer()) {
                (CompareOp::Eq, _) => a64!(self.ops; cset w0, eq),
                (CompareOp::Ne, _) => a64!(self.ops; cset w0, ne),
                (CompareOp::Lt, true) => a64!(self.ops; cset w0, lt),
                (CompareOp::Le, true) => a64!(self.ops; cset w0, le),
                (CompareOp::Gt, true) => a64!(self.ops; cset w0, gt),
                (CompareOp::Ge, true) => a64!(self.ops; cset w0, ge),
                (CompareOp::Lt, false) => a64!(self.ops; cset w0, lo),
                (CompareOp::Le, false) => a64!(self.ops; cset w0, ls),
                (CompareOp::Gt, false) => a64!(self.ops; cset w0, hi),
                (CompareOp::Ge, false) => a64!(self.ops; cset w0, hs),
            }
        }
        str_slot(self.ops, Slot::B, gpr::X0, dst);
        Ok(())
    }

    /// `acc = op(acc, value)`: one reduction step (bool max/min are or/and).
    pub(crate) fn emit_combine(
        &mut self,
        op: ReduceOp,
        dtype: DType,
        acc: i32,
        value: i32,
    ) -> Result<(), EmitError> {
        let binary = match (op, dtype) {
            (ReduceOp::Max, DType::Bool) => BinaryOp::Or,
            (ReduceOp::Min, DType::Bool) => BinaryOp::And,
            (ReduceOp::Sum, _) => BinaryOp::Add,
            (ReduceOp::Prod, _) => BinaryOp::Mul,
            (ReduceOp::Max, _) => BinaryOp::Max,
            (ReduceOp::Min, _) => BinaryOp::Min,
        };
        self.emit_binary(binary, dtype, acc, value, acc)
    }
}
