//! Scalar `convert` between every pair of dtypes, with Rust `as` semantics (what the IR's
//! `convert` specifies): float → integer truncates and saturates, NaN → 0; integer → float and
//! f64 → f32 round to nearest even; integer → integer keeps the low bits (sign-extending
//! signed sources); anything → bool is `x != 0` (NaN → true); bool → anything is 0 or 1.

use accy_ir::DType;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{gpr, mov_imm, x64};
use super::kernel::Emitter;
use crate::target::EmitError;

impl Emitter<'_> {
    /// `dst` (a `to`) = the `from` value in slot `src`, converted.
    pub(crate) fn emit_convert(
        &mut self,
        from: DType,
        src: i32,
        to: DType,
        dst: i32,
    ) -> Result<(), EmitError> {
        if from == to {
            x64!(self.ops; mov rax, QWORD [rsp + src] ; mov QWORD [rsp + dst], rax);
            return Ok(());
        }
        match from {
            DType::F32 | DType::F64 => {
                self.load_float(0, src, from);
                self.convert_from_float(from, to, dst)?;
            }
            DType::I32 => {
                x64!(self.ops; movsxd rax, DWORD [rsp + src]);
                self.convert_from_i64(to, dst)?;
            }
            DType::I64 => {
                x64!(self.ops; mov rax, QWORD [rsp + src]);
                self.convert_from_i64(to, dst)?;
            }
            DType::U8 | DType::Bool => {
                x64!(self.ops; movzx eax, BYTE [rsp + src]);
                self.convert_from_i64(to, dst)?;
            }
            _ => return Err(self.unsupported(format!("convert from {from}"))),
        }
        Ok(())
    }

    /// `dst` (a `to`) = the signed 64-bit integer in rax, converted (all integer sources are
    /// first widened to i64, which is exact, so one rounding step remains for floats).
    pub(crate) fn convert_from_i64(&mut self, to: DType, dst: i32) -> Result<(), EmitError> {
        match to {
            DType::F32 => {
                x64!(self.ops; cvtsi2ss xmm0, rax);
                self.store_float(0, dst, to);
            }
            DType::F64 => {
                x64!(self.ops; cvtsi2sd xmm0, rax);
                self.store_float(0, dst, to);
            }
            DType::Bool => {
                x64!(self.ops; test rax, rax ; setne al ; mov BYTE [rsp + dst], al);
            }
            DType::I32 | DType::I64 | DType::U8 => self.store_int(gpr::RAX, dst, to),
            _ => return Err(self.unsupported(format!("convert to {to}"))),
        }
        Ok(())
    }

    /// `dst` (a `to`) = the `from` float in xmm0, converted.
    fn convert_from_float(&mut self, from: DType, to: DType, dst: i32) -> Result<(), EmitError> {
        let f64 = from == DType::F64;
        match to {
            DType::F32 => {
                x64!(self.ops; cvtsd2ss xmm0, xmm0);
                self.store_float(0, dst, to);
            }
            DType::F64 => {
                x64!(self.ops; cvtss2sd xmm0, xmm0);
                self.store_float(0, dst, to);
            }
            DType::Bool => {
                x64!(self.ops; xorps xmm1, xmm1);
                if f64 {
                    x64!(self.ops; ucomisd xmm0, xmm1);
                } else {
                    x64!(self.ops; ucomiss xmm0, xmm1);
                }
                // Unordered (NaN) sets ZF and PF: NaN != 0 is true.
                x64!(self.ops; setne al ; setp cl ; or al, cl ; mov BYTE [rsp + dst], al);
            }
            DType::I64 | DType::I32 | DType::U8 => {
                self.float_to_i64_saturating(f64);
                match to {
                    DType::I32 => {
                        mov_imm(self.ops, gpr::RCX, i64::from(i32::MAX));
                        x64!(self.ops; cmp rax, rcx ; cmovg rax, rcx);
                        mov_imm(self.ops, gpr::RCX, i64::from(i32::MIN));
                        x64!(self.ops; cmp rax, rcx ; cmovl rax, rcx);
                    }
                    DType::U8 => {
                        x64!(self.ops
                            ; xor ecx, ecx ; test rax, rax ; cmovs rax, rcx
                            ; mov ecx, 255 ; cmp rax, rcx ; cmovg rax, rcx);
                    }
                    _ => {}
                }
                self.store_int(gpr::RAX, dst, to);
            }
            _ => return Err(self.unsupported(format!("convert to {to}"))),
        }
        Ok(())
    }

    /// rax = the float in xmm0 truncated to i64, saturating, NaN → 0. `cvtt*2si` already
    /// gives `i64::MIN` for NaN and every out-of-range value; the fixups turn `x >= 2^63`
    /// into `i64::MAX` and NaN into 0.
    fn float_to_i64_saturating(&mut self, f64: bool) {
        if f64 {
            mov_imm(self.ops, gpr::RCX, (2f64.powi(63)).to_bits() as i64);
            x64!(self.ops; cvttsd2si rax, xmm0 ; movq xmm1, rcx ; ucomisd xmm0, xmm1);
        } else {
            x64!(self.ops
                ; cvttss2si rax, xmm0 ; mov ecx, (2f32.powi(63)).to_bits() as i32
                ; movd xmm1, ecx ; ucomiss xmm0, xmm1);
        }
        mov_imm(self.ops, gpr::RCX, i64::MAX);
        // ucomis flags: x >= 2^63 → CF = 0 (ordered); NaN → PF = 1.
        x64!(self.ops; mov edx, 0 ; cmovae rax, rcx ; cmovp rax, rdx);
    }
}
