//! Scalar code for every node and dtype, exactly as `accy_ir::op` specifies.
//!
//! Operands come from their frame slots into fixed scratch registers (integers, bools and u8
//! in `rax`/`rcx`, zero-extended to 32 bits or full 64-bit for i64; floats in `xmm0`/`xmm1`)
//! and results go back to the node's slot. Where x86 differs from the IR the code fixes it up:
//! `idiv` is never reached with a zero divisor or `MIN / -1`; shift amounts outside `0..bits`
//! are clamped or zeroed; float max/min propagate NaN and order `-0.0 < +0.0`; comparisons
//! read the parity flag so NaN compares false (true for `ne`). Transcendentals, `pow`, `rem`
//! and (below the AVX2 tier) floor/ceil/round and `fma` call the runtime's import table.

use accy_artifact::{DispatchState, Import};
use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{add_imm, gpr, mul_imm, x64};
use super::kernel::Emitter;
use crate::kernel::Node;
use crate::target::EmitError;

/// The import implementing a float unary op, as (f32, f64) variants.
fn unary_import(op: UnaryOp) -> Option<(Import, Import)> {
    Some(match op {
        UnaryOp::Exp => (Import::ExpF32, Import::ExpF64),
        UnaryOp::Log => (Import::LogF32, Import::LogF64),
        UnaryOp::Tanh => (Import::TanhF32, Import::TanhF64),
        UnaryOp::Sigmoid => (Import::SigmoidF32, Import::SigmoidF64),
        UnaryOp::Erf => (Import::ErfF32, Import::ErfF64),
        UnaryOp::Sin => (Import::SinF32, Import::SinF64),
        UnaryOp::Cos => (Import::CosF32, Import::CosF64),
        UnaryOp::Floor => (Import::FloorF32, Import::FloorF64),
        UnaryOp::Ceil => (Import::CeilF32, Import::CeilF64),
        UnaryOp::Round => (Import::RoundF32, Import::RoundF64),
        _ => return None,
    })
}

/// The `roundss` immediate for floor/ceil/round (precision exception suppressed).
fn round_mode(op: UnaryOp) -> Option<i8> {
    match op {
        UnaryOp::Floor => Some(9),
        UnaryOp::Ceil => Some(10),
        UnaryOp::Round => Some(8),
        _ => None,
    }
}

impl Emitter<'_> {
    /// `reg` = the integer/bool value in `slot` (u8/bool zero-extended, i32 in 32 bits).
    pub(crate) fn load_int(&mut self, reg: u8, slot: i32, dtype: DType) {
        match dtype.size_bytes() {
            1 => x64!(self.ops; movzx Rd(reg), BYTE [rsp + slot]),
            4 => x64!(self.ops; mov Rd(reg), DWORD [rsp + slot]),
            _ => x64!(self.ops; mov Rq(reg), QWORD [rsp + slot]),
        }
    }

    /// `slot` = the low bytes of `reg` that hold a `dtype` value.
    pub(crate) fn store_int(&mut self, reg: u8, slot: i32, dtype: DType) {
        match dtype.size_bytes() {
            1 => x64!(self.ops; mov BYTE [rsp + slot], Rb(reg)),
            4 => x64!(self.ops; mov DWORD [rsp + slot], Rd(reg)),
            _ => x64!(self.ops; mov QWORD [rsp + slot], Rq(reg)),
        }
    }

    /// `xmm(x)` = the float in `slot`.
    pub(crate) fn load_float(&mut self, x: u8, slot: i32, dtype: DType) {
        if dtype == DType::F64 {
            x64!(self.ops; movsd Rx(x), QWORD [rsp + slot]);
        } else {
            x64!(self.ops; movss Rx(x), DWORD [rsp + slot]);
        }
    }

    /// `slot` = the float in `xmm(x)`.
    pub(crate) fn store_float(&mut self, x: u8, slot: i32, dtype: DType) {
        if dtype == DType::F64 {
            x64!(self.ops; movsd QWORD [rsp + slot], Rx(x));
        } else {
            x64!(self.ops; movss DWORD [rsp + slot], Rx(x));
        }
    }

    /// Calls `import` (arguments already in xmm0/xmm1; result in xmm0). The stack is 16-byte
    /// aligned in the body and every value lives in the frame, so nothing needs saving.
    pub(crate) fn call_import(&mut self, import: Import) {
        let at = import.table_offset() as i32;
        x64!(self.ops; call QWORD [r13 + at]);
    }

    /// Emits node `i` at the current point.
    pub(crate) fn emit_node(&mut self, i: usize) -> Result<(), EmitError> {
        let n = &self.k.nodes[i];
        let (dtype, dst) = (n.dtype, self.lay.node[i]);
        match n.node.clone() {
            Node::Load { binding, .. } => {
                let map = self.lay.map[i].ok_or_else(|| self.unsupported("a load without map"))?;
                x64!(self.ops; mov rax, QWORD [rsp + map]);
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
                    DType::I32 => x64!(self.ops; movsxd rax, DWORD [rsp + islot]),
                    DType::I64 => x64!(self.ops; mov rax, QWORD [rsp + islot]),
                    DType::U8 | DType::Bool => x64!(self.ops; movzx eax, BYTE [rsp + islot]),
                    _ => return Err(self.unsupported(format!("a {itype} gather index"))),
                }
                // clamp(index, 0, axis_len - 1) as signed values.
                let hi = i64::try_from(axis_len.saturating_sub(1)).unwrap_or(i64::MAX);
                x64!(self.ops; xor ecx, ecx ; test rax, rax ; cmovs rax, rcx);
                super::asm::mov_imm(self.ops, gpr::RCX, hi);
                x64!(self.ops; cmp rax, rcx ; cmovg rax, rcx);
                mul_imm(self.ops, gpr::RAX, axis_stride);
                x64!(self.ops; add rax, QWORD [rsp + map]);
                self.emit_element_load(binding, dtype, dst)
            }
            Node::Const { .. } => Ok(()),
            Node::Index { dim, scale, offset } => {
                match dim {
                    Some(d) => {
                        let counter = self.lay.counter[d as usize];
                        x64!(self.ops; mov rax, QWORD [rsp + counter]);
                        mul_imm(self.ops, gpr::RAX, scale);
                        add_imm(self.ops, gpr::RAX, offset);
                    }
                    None => super::asm::mov_imm(self.ops, gpr::RAX, offset),
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
                x64!(self.ops
                    ; mov rax, QWORD [rsp + t] ; mov rcx, QWORD [rsp + f]
                    ; cmp BYTE [rsp + c], 0 ; cmove rax, rcx
                    ; mov QWORD [rsp + dst], rax
                );
                Ok(())
            }
            Node::Convert { x } => {
                let from = self.dtype(x)?;
                self.emit_convert(from, self.slot(x)?, dtype, dst)
            }
            Node::Acc => Err(self.unsupported("an accumulator read in a loop kernel")),
            Node::Fma { a, b, c } => {
                let (a, b, c) = (self.slot(a)?, self.slot(b)?, self.slot(c)?);
                self.emit_fma(dtype, a, b, c, dst)
            }
            Node::ScaleB { x, n } => {
                let (x, n) = (self.slot(x)?, self.slot(n)?);
                self.emit_scale_b(dtype, x, n, dst)
            }
            // The slot holds the value's bits whatever its dtype: copy them.
            Node::Bitcast { x } => {
                let x = self.slot(x)?;
                x64!(self.ops; mov rax, QWORD [rsp + x] ; mov QWORD [rsp + dst], rax);
                Ok(())
            }
        }
    }

    /// `dst = x · 2^⌊n⌋` rounded once: `vscalefss`/`sd`, on the AVX-512 tier only (the only
    /// one whose expansions produce the node, `X64Target::has_scale_b`).
    fn emit_scale_b(&mut self, dtype: DType, x: i32, n: i32, dst: i32) -> Result<(), EmitError> {
        let wide = match dtype {
            DType::F32 => false,
            DType::F64 => true,
            _ => return Err(self.unsupported(format!("scaleb on {dtype}"))),
        };
        if self.tier != super::X64Tier::Avx512 {
            return Err(self.unsupported("scaleb below the AVX-512 tier"));
        }
        self.load_float(0, x, dtype);
        self.load_float(1, n, dtype);
        let op = super::evex_zmm::zv::scalef_scalar(wide);
        self.z(super::evex_zmm::Zins::rrr(op, 0, 0, 1).scalar());
        self.store_float(0, dst, dtype);
        Ok(())
    }

    /// `dst = a · b + c` rounded once: `vfmadd231ss`/`sd` on the tiers with FMA, else the
    /// import (the SSE2 tier's CPUs may lack the instruction).
    fn emit_fma(
        &mut self,
        dtype: DType,
        a: i32,
        b: i32,
        c: i32,
        dst: i32,
    ) -> Result<(), EmitError> {
        let wide = match dtype {
            DType::F32 => false,
            DType::F64 => true,
            _ => return Err(self.unsupported(format!("fma on {dtype}"))),
        };
        self.load_float(0, a, dtype);
        self.load_float(1, b, dtype);
        self.load_float(2, c, dtype);
        if self.tier.has_avx2() {
            self.ops.extend(super::vex::vfmadd231(2, 0, 1, wide, false));
            self.store_float(2, dst, dtype);
        } else {
            self.call_import(if wide { Import::FmaF64 } else { Import::FmaF32 });
            self.store_float(0, dst, dtype);
        }
        Ok(())
    }

    /// `dst` = element `rax` of `binding` (a bool byte reads as true when non-zero).
    fn emit_element_load(&mut self, binding: u32, dtype: DType, dst: i32) -> Result<(), EmitError> {
        let b = binding as i32 * DispatchState::BINDING_STRIDE as i32;
        x64!(self.ops; mov rcx, QWORD [r12 + b]);
        match dtype {
            DType::Bool => {
                x64!(self.ops; cmp BYTE [rcx + rax], 0 ; setne dl ; mov BYTE [rsp + dst], dl)
            }
            DType::U8 => x64!(self.ops; mov dl, BYTE [rcx + rax] ; mov BYTE [rsp + dst], dl),
            DType::F32 | DType::I32 => {
                x64!(self.ops; mov edx, DWORD [rcx + rax * 4] ; mov DWORD [rsp + dst], edx)
            }
            DType::F64 | DType::I64 => {
                x64!(self.ops; mov rdx, QWORD [rcx + rax * 8] ; mov QWORD [rsp + dst], rdx)
            }
            _ => return Err(self.unsupported(format!("a {dtype} load"))),
        }
        Ok(())
    }

    fn emit_unary(&mut self, op: UnaryOp, dtype: DType, x: i32, dst: i32) -> Result<(), EmitError> {
        let f64 = dtype == DType::F64;
        match (op, dtype) {
            (UnaryOp::Neg, DType::F32) => {
                x64!(self.ops; mov eax, DWORD [rsp + x] ; xor eax, 0x8000_0000u32 as i32)
            }
            (UnaryOp::Neg, DType::F64) => {
                x64!(self.ops; mov rax, QWORD [rsp + x] ; btc rax, 63)
            }
            (UnaryOp::Abs, DType::F32) => {
                x64!(self.ops; mov eax, DWORD [rsp + x] ; and eax, 0x7fff_ffff)
            }
            (UnaryOp::Abs, DType::F64) => {
                x64!(self.ops; mov rax, QWORD [rsp + x] ; btr rax, 63)
            }
            (UnaryOp::Sqrt | UnaryOp::Rsqrt, DType::F32 | DType::F64) => {
                self.load_float(0, x, dtype);
                if f64 {
                    x64!(self.ops; sqrtsd xmm0, xmm0);
                } else {
                    x64!(self.ops; sqrtss xmm0, xmm0);
                }
                if op == UnaryOp::Rsqrt {
                    // A correctly rounded division of 1 by the correctly rounded root.
                    if f64 {
                        super::asm::mov_imm(self.ops, gpr::RAX, 1f64.to_bits() as i64);
                        x64!(self.ops; movq xmm1, rax ; divsd xmm1, xmm0 ; movsd xmm0, xmm1);
                    } else {
                        x64!(self.ops
                            ; mov eax, 1f32.to_bits() as i32 ; movd xmm1, eax
                            ; divss xmm1, xmm0 ; movss xmm0, xmm1);
                    }
                }
                self.store_float(0, dst, dtype);
                return Ok(());
            }
            (_, DType::F32 | DType::F64) if round_mode(op).is_some() && self.tier.has_avx2() => {
                let mode = round_mode(op).unwrap_or(8);
                self.load_float(0, x, dtype);
                if f64 {
                    x64!(self.ops; roundsd xmm0, xmm0, mode);
                } else {
                    x64!(self.ops; roundss xmm0, xmm0, mode);
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
            (UnaryOp::Not, DType::Bool) => x64!(self.ops; mov al, BYTE [rsp + x] ; xor al, 1),
            (UnaryOp::Not, DType::I32 | DType::U8) => {
                x64!(self.ops; mov eax, DWORD [rsp + x] ; not eax)
            }
            (UnaryOp::Not, DType::I64) => x64!(self.ops; mov rax, QWORD [rsp + x] ; not rax),
            (UnaryOp::Neg, DType::I32 | DType::U8) => {
                x64!(self.ops; mov eax, DWORD [rsp + x] ; neg eax)
            }
            (UnaryOp::Neg, DType::I64) => x64!(self.ops; mov rax, QWORD [rsp + x] ; neg rax),
            (UnaryOp::Abs, DType::U8) => x64!(self.ops; mov al, BYTE [rsp + x]),
            (UnaryOp::Abs, DType::I32) => x64!(self.ops
                ; mov eax, DWORD [rsp + x] ; mov ecx, eax ; neg ecx
                ; test eax, eax ; cmovs eax, ecx),
            (UnaryOp::Abs, DType::I64) => x64!(self.ops
                ; mov rax, QWORD [rsp + x] ; mov rcx, rax ; neg rcx
                ; test rax, rax ; cmovs rax, rcx),
            _ => return Err(self.unsupported(format!("{op} on {dtype}"))),
        }
        // Integer, bool and sign-bit results are in rax; store the dtype's width.
        self.store_int(gpr::RAX, dst, dtype);
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
        self.load_int(gpr::RAX, a, dtype);
        self.load_int(gpr::RCX, b, dtype);
        let (w64, unsigned) = (dtype == DType::I64, !dtype.is_signed_integer());
        let bits: i32 = if w64 {
            64
        } else if dtype == DType::I32 {
            32
        } else {
            8
        };
        let numeric = dtype.is_numeric();
        match op {
            BinaryOp::And => x64!(self.ops; and rax, rcx),
            BinaryOp::Or => x64!(self.ops; or rax, rcx),
            BinaryOp::Xor => x64!(self.ops; xor rax, rcx),
            BinaryOp::Add if numeric => x64!(self.ops; add rax, rcx),
            BinaryOp::Sub if numeric => x64!(self.ops; sub rax, rcx),
            BinaryOp::Mul if numeric => x64!(self.ops; imul rax, rcx),
            BinaryOp::Max | BinaryOp::Min if numeric => match (op == BinaryOp::Max, unsigned) {
                (true, true) => x64!(self.ops; cmp rax, rcx ; cmovb rax, rcx),
                (false, true) => x64!(self.ops; cmp rax, rcx ; cmova rax, rcx),
                (true, false) if w64 => x64!(self.ops; cmp rax, rcx ; cmovl rax, rcx),
                (false, false) if w64 => x64!(self.ops; cmp rax, rcx ; cmovg rax, rcx),
                (true, false) => x64!(self.ops; cmp eax, ecx ; cmovl eax, ecx),
                (false, false) => x64!(self.ops; cmp eax, ecx ; cmovg eax, ecx),
            },
            BinaryOp::Div | BinaryOp::Rem if numeric => self.emit_int_div(op, dtype),
            BinaryOp::Pow if numeric => self.emit_int_pow(w64),
            BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic if numeric => {
                // Values are zero-extended (u8, i32) or full (i64), so an unsigned compare of
                // the amount against the width also catches negative amounts.
                let arithmetic = op == BinaryOp::ShrArithmetic && !unsigned;
                match (op, w64, arithmetic) {
                    (_, true, true) => x64!(self.ops
                        ; mov edx, 63 ; cmp rcx, 64 ; cmovae ecx, edx ; sar rax, cl),
                    (_, false, true) => x64!(self.ops
                        ; mov edx, 31 ; cmp ecx, 32 ; cmovae ecx, edx ; sar eax, cl),
                    (BinaryOp::Shl, true, _) => x64!(self.ops; shl rax, cl),
                    (BinaryOp::Shl, false, _) => x64!(self.ops; shl eax, cl),
                    (_, true, _) => x64!(self.ops; shr rax, cl),
                    (_, false, _) => x64!(self.ops; shr eax, cl),
                }
                if !arithmetic {
                    x64!(self.ops; xor edx, edx ; cmp rcx, bits ; cmovae rax, rdx);
                }
            }
            _ => return Err(self.unsupported(format!("{op} on {dtype}"))),
        }
        self.store_int(gpr::RAX, dst, dtype);
        Ok(())
    }

    /// Integer division or remainder of rax by rcx with the IR's rules for 0 and `MIN / -1`.
    fn emit_int_div(&mut self, op: BinaryOp, dtype: DType) {
        let rem = op == BinaryOp::Rem;
        match (dtype, rem) {
            (DType::I64, false) => x64!(self.ops
                ; test rcx, rcx ; jz >zero ; cmp rcx, -1 ; je >neg
                ; cqo ; idiv rcx ; jmp >done
                ; neg: ; neg rax ; jmp >done
                ; zero: ; xor eax, eax
                ; done:),
            (DType::I64, true) => x64!(self.ops
                ; test rcx, rcx ; jz >done ; cmp rcx, -1 ; je >zero
                ; cqo ; idiv rcx ; mov rax, rdx ; jmp >done
                ; zero: ; xor eax, eax
                ; done:),
            (DType::I32, false) => x64!(self.ops
                ; test ecx, ecx ; jz >zero ; cmp ecx, -1 ; je >neg
                ; cdq ; idiv ecx ; jmp >done
                ; neg: ; neg eax ; jmp >done
                ; zero: ; xor eax, eax
                ; done:),
            (DType::I32, true) => x64!(self.ops
                ; test ecx, ecx ; jz >done ; cmp ecx, -1 ; je >zero
                ; cdq ; idiv ecx ; mov eax, edx ; jmp >done
                ; zero: ; xor eax, eax
                ; done:),
            (_, false) => x64!(self.ops
                ; test ecx, ecx ; jz >zero ; xor edx, edx ; div ecx ; jmp >done
                ; zero: ; xor eax, eax
                ; done:),
            (_, true) => x64!(self.ops
                ; test ecx, ecx ; jz >done ; xor edx, edx ; div ecx ; mov eax, edx
                ; done:),
        }
    }

    /// `rax = pow(rax, rcx)` by square-and-multiply; a negative exponent gives 1 for base 1,
    /// ±1 for base -1 and 0 otherwise. u8 values are zero-extended, so they never look
    /// negative and share the 32-bit code.
    fn emit_int_pow(&mut self, w64: bool) {
        if w64 {
            x64!(self.ops
                ; test rcx, rcx ; jns >pos
                ; cmp rax, 1 ; je >done ; cmp rax, -1 ; jne >zero
                ; test ecx, 1 ; jnz >done ; mov eax, 1 ; jmp >done
                ; zero: ; xor eax, eax ; jmp >done
                ; pos: ; mov rdx, rcx ; mov rcx, rax ; mov eax, 1
                ; test rdx, rdx ; jz >done
                ; top: ; test edx, 1 ; jz >skip ; imul rax, rcx
                ; skip: ; imul rcx, rcx ; shr rdx, 1 ; jnz <top
                ; done:);
        } else {
            x64!(self.ops
                ; test ecx, ecx ; jns >pos
                ; cmp eax, 1 ; je >done ; cmp eax, -1 ; jne >zero
                ; test ecx, 1 ; jnz >done ; mov eax, 1 ; jmp >done
                ; zero: ; xor eax, eax ; jmp >done
                ; pos: ; mov edx, ecx ; mov ecx, eax ; mov eax, 1
                ; test edx, edx ; jz >done
                ; top: ; test edx, 1 ; jz >skip ; imul eax, ecx
                ; skip: ; imul ecx, ecx ; shr edx, 1 ; jnz <top
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
            (BinaryOp::Add, false) => x64!(self.ops; addss xmm0, xmm1),
            (BinaryOp::Add, true) => x64!(self.ops; addsd xmm0, xmm1),
            (BinaryOp::Sub, false) => x64!(self.ops; subss xmm0, xmm1),
            (BinaryOp::Sub, true) => x64!(self.ops; subsd xmm0, xmm1),
            (BinaryOp::Mul, false) => x64!(self.ops; mulss xmm0, xmm1),
            (BinaryOp::Mul, true) => x64!(self.ops; mulsd xmm0, xmm1),
            (BinaryOp::Div, false) => x64!(self.ops; divss xmm0, xmm1),
            (BinaryOp::Div, true) => x64!(self.ops; divsd xmm0, xmm1),
            (BinaryOp::Rem, _) => {
                self.call_import(if f64 { Import::RemF64 } else { Import::RemF32 })
            }
            (BinaryOp::Pow, _) => {
                self.call_import(if f64 { Import::PowF64 } else { Import::PowF32 })
            }
            // Unordered: a NaN (which one is unspecified). Equal: the values differ at most
            // in the sign of zero, and AND (max) / OR (min) of the bits picks +0 / -0.
            // Otherwise maxss/minss pick the larger/smaller.
            (BinaryOp::Max, false) => x64!(self.ops
                ; ucomiss xmm0, xmm1 ; jp >nan ; jne >ne ; andps xmm0, xmm1 ; jmp >done
                ; ne: ; maxss xmm0, xmm1 ; jmp >done
                ; nan: ; addss xmm0, xmm1
                ; done:),
            (BinaryOp::Max, true) => x64!(self.ops
                ; ucomisd xmm0, xmm1 ; jp >nan ; jne >ne ; andpd xmm0, xmm1 ; jmp >done
                ; ne: ; maxsd xmm0, xmm1 ; jmp >done
                ; nan: ; addsd xmm0, xmm1
                ; done:),
            (BinaryOp::Min, false) => x64!(self.ops
                ; ucomiss xmm0, xmm1 ; jp >nan ; jne >ne ; orps xmm0, xmm1 ; jmp >done
                ; ne: ; minss xmm0, xmm1 ; jmp >done
                ; nan: ; addss xmm0, xmm1
                ; done:),
            (BinaryOp::Min, true) => x64!(self.ops
                ; ucomisd xmm0, xmm1 ; jp >nan ; jne >ne ; orpd xmm0, xmm1 ; jmp >done
                ; ne: ; minsd xmm0, xmm1 ; jmp >done
                ; nan: ; addsd xmm0, xmm1
                ; done:),
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
            // Lt/Le compare swapped so that "above" (CF = ZF = 0) means the relation holds;
            // unordered sets ZF = PF = CF = 1, so seta/setae are false on NaN.
            let swap = matches!(op, CompareOp::Lt | CompareOp::Le);
            let (first, second) = if swap { (b, a) } else { (a, b) };
            self.load_float(0, first, dtype);
            self.load_float(1, second, dtype);
            if dtype == DType::F64 {
                x64!(self.ops; ucomisd xmm0, xmm1);
            } else {
                x64!(self.ops; ucomiss xmm0, xmm1);
            }
            match op {
                CompareOp::Eq => x64!(self.ops; sete al ; setnp cl ; and al, cl),
                CompareOp::Ne => x64!(self.ops; setne al ; setp cl ; or al, cl),
                CompareOp::Gt | CompareOp::Lt => x64!(self.ops; seta al),
                CompareOp::Ge | CompareOp::Le => x64!(self.ops; setae al),
            }
        } else {
            self.load_int(gpr::RAX, a, dtype);
            self.load_int(gpr::RCX, b, dtype);
            // Zero-extended u8/bool values compare correctly in 64 bits either way; i32 needs
            // a 32-bit compare for its sign.
            if dtype == DType::I32 {
                x64!(self.ops; cmp eax, ecx);
            } else {
                x64!(self.ops; cmp rax, rcx);
            }
            match (op, dtype.is_signed_integer()) {
                (CompareOp::Eq, _) => x64!(self.ops; sete al),
                (CompareOp::Ne, _) => x64!(self.ops; setne al),
                (CompareOp::Lt, true) => x64!(self.ops; setl al),
                (CompareOp::Le, true) => x64!(self.ops; setle al),
                (CompareOp::Gt, true) => x64!(self.ops; setg al),
                (CompareOp::Ge, true) => x64!(self.ops; setge al),
                (CompareOp::Lt, false) => x64!(self.ops; setb al),
                (CompareOp::Le, false) => x64!(self.ops; setbe al),
                (CompareOp::Gt, false) => x64!(self.ops; seta al),
                (CompareOp::Ge, false) => x64!(self.ops; setae al),
            }
        }
        x64!(self.ops; mov BYTE [rsp + dst], al);
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
