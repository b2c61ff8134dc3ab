//! Scalar `convert` between every pair of dtypes, with Rust `as` semantics (what the IR's
//! `convert` specifies): float → integer truncates and saturates, NaN → 0; integer → float and
//! f64 → f32 round to nearest even; integer → integer keeps the low bits (sign-extending
//! signed sources); anything → bool is `x != 0` (NaN → true); bool → anything is 0 or 1.
//!
//! AArch64's `fcvtzs`/`fcvtzu` already truncate, saturate and map NaN to 0, so float → i32
//! and → i64 are one instruction, and → u8 is `fcvtzu` (negative → 0) clamped to 255.

use accy_ir::DType;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{a64, gpr, ldr_slot, str_slot, Slot};
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
            ldr_slot(self.ops, Slot::X, gpr::X0, src);
            str_slot(self.ops, Slot::X, gpr::X0, dst);
            return Ok(());
        }
        match from {
            DType::F32 | DType::F64 => {
                self.load_float(0, src, from);
                self.convert_from_float(from, to, dst)?;
            }
            DType::I32 => {
                ldr_slot(self.ops, Slot::W, gpr::X0, src);
                a64!(self.ops; sxtw x0, w0);
                self.convert_from_i64(to, dst)?;
            }
            DType::I64 => {
                ldr_slot(self.ops, Slot::X, gpr::X0, src);
                self.convert_from_i64(to, dst)?;
            }
            DType::U8 | DType::Bool => {
                ldr_slot(self.ops, Slot::B, gpr::X0, src);
                self.convert_from_i64(to, dst)?;
            }
            _ => return Err(self.unsupported(format!("convert from {from}"))),
        }
        Ok(())
    }

    /// `dst` (a `to`) = the signed 64-bit integer in x0, converted (all integer sources are
    /// first widened to i64, which is exact, so one rounding step remains for floats).
    pub(crate) fn convert_from_i64(&mut self, to: DType, dst: i32) -> Result<(), EmitError> {
        match to {
            DType::F32 => {
                a64!(self.ops; scvtf s0, x0);
                self.store_float(0, dst, to);
            }
            DType::F64 => {
                a64!(self.ops; scvtf d0, x0);
                self.store_float(0, dst, to);
            }
            DType::Bool => {
                a64!(self.ops; cmp x0, #0 ; cset w0, ne);
                str_slot(self.ops, Slot::B, gpr::X0, dst);
            }
            DType::I32 | DType::I64 | DType::U8 => self.store_int(gpr::X0, dst, to),
            _ => return Err(self.unsupported(format!("convert to {to}"))),
        }
        Ok(())
    }

    /// `dst` (a `to`) = the `from` float in s0/d0, converted.
    fn convert_from_float(&mut self, from: DType, to: DType, dst: i32) -> Result<(), EmitError> {
        let f64 = from == DType::F64;
        match (to, f64) {
            (DType::F32, _) => {
                a64!(self.ops; fcvt s0, d0);
                self.store_float(0, dst, to);
            }
            (DType::F64, _) => {
                a64!(self.ops; fcvt d0, s0);
                self.store_float(0, dst, to);
            }
            (DType::Bool, _) => {
                // Unordered (NaN) compares "not equal": NaN != 0 is true.
                if f64 {
                    a64!(self.ops; fmov d1, xzr ; fcmp d0, d1);
                } else {
                    a64!(self.ops; fmov s1, wzr ; fcmp s0, s1);
                }
                a64!(self.ops; cset w0, ne);
                str_slot(self.ops, Slot::B, gpr::X0, dst);
            }
            (DType::I64, false) => a64!(self.ops; fcvtzs x0, s0),
            (DType::I64, true) => a64!(self.ops; fcvtzs x0, d0),
            (DType::I32, false) => a64!(self.ops; fcvtzs w0, s0),
            (DType::I32, true) => a64!(self.ops; fcvtzs w0, d0),
            (DType::U8, _) => {
                if f64 {
                    a64!(self.ops; fcvtzu w0, d0);
                } else {
                    a64!(self.ops; fcvtzu w0, s0);
                }
                a64!(self.ops; mov w1, #255 ; cmp w0, w1 ; csel w0, w1, w0, hi);
            }
            _ => return Err(self.unsupported(format!("convert to {to}"))),
        }
        if matches!(to, DType::I64 | DType::I32 | DType::U8) {
            self.store_int(gpr::X0, dst, to);
        }
        Ok(())
    }
}
