//! AVX2 code for each varying node of a vectorized kernel (which nodes qualify is decided in
//! `vector.rs`). Lanes are 32-bit (f32, i32, bool masks) or 64-bit (f64, i64, bool masks).
//!
//! Operands come from their homes (or scratch ymm0–ymm2 when spilled); multi-instruction
//! sequences use ymm3/ymm4 as temporaries and write the destination last, so a destination
//! that shares a scratch register with an operand is never read after it is written. The
//! results equal the scalar code's lane by lane: max/min compute both operand orders and
//! combine them (so `-0.0 < +0.0` holds on ties, and a NaN operand gives a NaN: min ORs the
//! two, max ORs in an unordered mask, all-ones); float → i32 conversion fixes
//! `vcvttps2dq`'s overflow and NaN lanes. A NaN result need not be the scalar code's NaN: the
//! IR promises a NaN, not its bits (a signaling NaN operand may come out signaling).

use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{gpr, x64};
use super::evex::{self, Lanes, Mem};
use super::kernel::Emitter;
use super::vector::{Home, SignOperand, VectorPlan};
use crate::kernel::Node;
use crate::target::EmitError;

/// `vcmpps`/`vcmppd` predicates (quiet, ordered except `ne`).
pub(crate) fn float_predicate(op: CompareOp) -> i8 {
    match op {
        CompareOp::Eq => 0x00,
        CompareOp::Ne => 0x04,
        CompareOp::Lt => 0x11,
        CompareOp::Le => 0x12,
        CompareOp::Gt => 0x1E,
        CompareOp::Ge => 0x1D,
    }
}

/// The lane width and the `[rcx + rax * size]` operand of a masked element access.
pub(crate) fn masked_operand(wide: bool) -> (Lanes, Mem) {
    let (lanes, scale) = if wide {
        (Lanes::Qword, 8)
    } else {
        (Lanes::Dword, 4)
    };
    let mem = Mem {
        base: gpr::RCX,
        index: gpr::RAX,
        scale,
    };
    (lanes, mem)
}

impl Emitter<'_> {
    /// `ymm(dst) = cmp(ymm(a), ymm(b), predicate)` lane by lane (`vcmpps`, or `vcmppd` when
    /// `wide`). dynasm 5.1 encodes the two sources of `vcmpps`/`vcmppd` swapped (its operand
    /// table puts the second source in VEX.vvvv), so they are passed in reverse here; the
    /// encoding test pins this against an independent decoder.
    fn vcmp(&mut self, wide: bool, dst: u8, a: u8, b: u8, predicate: i8) {
        if wide {
            x64!(self.ops; vcmppd Ry(dst), Ry(b), Ry(a), predicate);
        } else {
            x64!(self.ops; vcmpps Ry(dst), Ry(b), Ry(a), predicate);
        }
    }

    /// `ymm(reg)` = `bits` in every 32-bit (or, when `wide`, 64-bit) lane.
    pub(crate) fn vconst(&mut self, reg: u8, bits: u64, wide: bool) {
        if wide {
            super::asm::mov_imm(self.ops, gpr::RAX, bits as i64);
            x64!(self.ops; vmovq Rx(reg), rax ; vpbroadcastq Ry(reg), Rx(reg));
        } else {
            x64!(self.ops; mov eax, bits as u32 as i32 ; vmovd Rx(reg), eax ; vpbroadcastd Ry(reg), Rx(reg));
        }
    }

    /// `reg` = the sign bit of each 32-bit or (`wide`) 64-bit lane, made from all-ones by one
    /// shift: two ALU instructions where a broadcast constant takes three, one of them a
    /// shuffle-port broadcast. (Only left shifts: dynasm 5.1 encodes `vpsrlq ymm, ymm, imm` as
    /// the xmm form; `tests/encoding.rs` pins that and the forms used here.)
    pub(crate) fn vsign_mask(&mut self, reg: u8, wide: bool) {
        x64!(self.ops; vpcmpeqd Ry(reg), Ry(reg), Ry(reg));
        if wide {
            x64!(self.ops; vpsllq Ry(reg), Ry(reg), 63);
        } else {
            x64!(self.ops; vpslld Ry(reg), Ry(reg), 31);
        }
    }

    /// After a whole-vector load of `binding` from `[rcx + rax * lane size]`: the kernel's
    /// prefetch hint for that binding, if it has one whose distance fits a displacement
    /// (`prefetcht0`: the lines are read soon, by the next workgroup's first pass or by this
    /// loop a little later).
    pub(crate) fn emit_load_prefetch(&mut self, binding: u32, wide: bool) {
        let lane = if wide { 8 } else { 4 };
        let Some(ahead) = self
            .k
            .prefetch_bytes(binding, lane)
            .and_then(|a| i32::try_from(a).ok())
        else {
            return;
        };
        if wide {
            x64!(self.ops; prefetcht0 [rcx + rax * 8 + ahead]);
        } else {
            x64!(self.ops; prefetcht0 [rcx + rax * 4 + ahead]);
        }
    }

    /// Emits varying node `i` for one vector of points.
    pub(crate) fn emit_vnode(&mut self, plan: &VectorPlan, i: usize) -> Result<(), EmitError> {
        let n = self.k.nodes[i].clone();
        let w = plan.wide;
        let dst = self.vdst(plan, i);
        match n.node {
            Node::Load { binding, .. } => {
                let map = self.lay.map[i].ok_or_else(|| self.unsupported("a load without map"))?;
                let b = binding as i32 * 8;
                if let Some(first) = plan.tile_slot.get(i).copied().flatten() {
                    if self.masked {
                        return Err(self.unsupported("a tile in a masked tail"));
                    }
                    self.emit_tile_column(plan, first, dst);
                    self.vfinish(plan, i, dst);
                    return Ok(());
                }
                self.slot_to_rax(map);
                x64!(self.ops; mov rcx, QWORD [r12 + b]);
                if let Some(slot) = plan.gather_slot.get(i).copied().flatten() {
                    if self.masked {
                        return Err(self.unsupported("a gather in a masked tail"));
                    }
                    // Lane offsets in ymm2, an all-ones mask (the gather clears it) in ymm3.
                    let at = self.lay.vec_slot(slot);
                    x64!(self.ops
                        ; vmovups Ry(2), [rsp + at]
                        ; vpcmpeqd Ry(3), Ry(3), Ry(3)
                    );
                    // The vector index takes the SIB's index field: the first lane's
                    // address goes to rcx.
                    if w {
                        x64!(self.ops; lea rcx, [rcx + rax * 8]);
                        self.ops.extend(super::vex::vgatherdpd_rcx(dst, 2, 3));
                    } else {
                        x64!(self.ops
                            ; lea rcx, [rcx + rax * 4]
                            ; vgatherdps Ry(dst), [rcx + Ry(2) * 4], Ry(3)
                        );
                    }
                } else if self.masked {
                    let (lanes, mem) = masked_operand(w);
                    self.ops.extend(evex::load_masked(lanes, dst, mem, 1));
                } else {
                    if w {
                        x64!(self.ops; vmovups Ry(dst), [rcx + rax * 8]);
                    } else {
                        x64!(self.ops; vmovups Ry(dst), [rcx + rax * 4]);
                    }
                    self.emit_load_prefetch(binding, w);
                }
            }
            Node::Unary { op, x } => {
                let a = self.vsrc(plan, x, 0)?;
                self.emit_vunary(plan, op, n.dtype, a, dst)?;
            }
            Node::Binary { op, lhs, rhs } => {
                let a = self.vsrc(plan, lhs, 0)?;
                if !self.emit_vbinary_from_slot(plan, op, n.dtype, a, rhs, dst) {
                    let b = self.vsrc(plan, rhs, 1)?;
                    self.emit_vbinary(op, n.dtype, w, a, b, dst)?;
                }
            }
            Node::Compare { op, lhs, rhs } => {
                let operand = self.dtype(lhs)?;
                let a = self.vsrc(plan, lhs, 0)?;
                let b = self.vsrc(plan, rhs, 1)?;
                self.emit_vcompare(op, operand, w, a, b, dst)?;
            }
            Node::Select {
                cond,
                on_true,
                on_false,
            } => {
                let c = self.vsrc(plan, cond, 0)?;
                let t = self.vsrc(plan, on_true, 1)?;
                let f = self.vsrc(plan, on_false, 2)?;
                if w {
                    x64!(self.ops; vblendvpd Ry(dst), Ry(f), Ry(t), Ry(c));
                } else {
                    x64!(self.ops; vblendvps Ry(dst), Ry(f), Ry(t), Ry(c));
                }
            }
            Node::Convert { x } => {
                let from = self.dtype(x)?;
                let a = self.vsrc(plan, x, 0)?;
                self.emit_vconvert(from, n.dtype, w, a, dst)?;
            }
            Node::Fma { a, b, c } => {
                if let Some(other) = self.fma_factor_in_dst(plan, dst, a, b, c) {
                    // The destination took over a factor's register (`reuse_hints`): multiply
                    // into it.
                    let o = self.vsrc(plan, other, 1)?;
                    let addend = self.vsrc(plan, c, 2)?;
                    self.ops.extend(super::vex::vfmadd213(dst, o, addend, w));
                } else {
                    // A factor that lives in a slot is read as the memory operand; otherwise both
                    // come from registers.
                    enum Second {
                        Reg(u8),
                        Frame(i32),
                    }
                    let in_slot = |id: u32| match plan.home.get(id as usize) {
                        Some(Home::Slot(s)) => Some(self.lay.vec_slot(*s)),
                        _ => None,
                    };
                    let (first, second) = match (in_slot(a), in_slot(b)) {
                        (_, Some(at)) => (a, Second::Frame(at)),
                        (Some(at), None) => (b, Second::Frame(at)),
                        (None, None) => (a, Second::Reg(self.vsrc(plan, b, 1)?)),
                    };
                    let r = self.vsrc(plan, first, 0)?;
                    // vfmadd231 accumulates into its destination: start it from c (loaded straight
                    // into it when c lives in a slot, as the constants of a polynomial do), unless
                    // the destination is a factor's register (a scratch register shared with a
                    // spilled operand), then go through ymm3.
                    let clobbers = matches!(second, Second::Reg(rb) if rb == dst);
                    let acc = if dst == r || clobbers { 3 } else { dst };
                    self.vsrc_into(plan, c, acc)?;
                    match second {
                        Second::Reg(rb) => {
                            self.ops.extend(super::vex::vfmadd231(acc, r, rb, w, true))
                        }
                        Second::Frame(at) => {
                            self.ops.extend(super::vex::vfmadd231_rsp(acc, r, at, w))
                        }
                    }
                    if acc != dst {
                        x64!(self.ops; vmovaps Ry(dst), Ry(acc));
                    }
                }
            }
            Node::ScaleB { x, n: e } => {
                // The AVX512VL form: only the AVX-512 tier's expansions produce the node.
                if self.tier != super::X64Tier::Avx512 {
                    return Err(self.unsupported("scaleb below the AVX-512 tier"));
                }
                let (a, b) = (self.vsrc(plan, x, 0)?, self.vsrc(plan, e, 1)?);
                let op = super::evex_zmm::zv::scalef(w);
                self.z(super::evex_zmm::Zins::rrr(op, dst, a, b).ymm());
            }
            Node::Bitcast { x } => {
                let a = self.vsrc(plan, x, 0)?;
                if a != dst {
                    x64!(self.ops; vmovaps Ry(dst), Ry(a));
                }
            }
            Node::Gather { .. } | Node::Index { .. } | Node::Const { .. } | Node::Acc => {
                return Err(self.unsupported("a varying gather, index or constant in vector code"))
            }
        }
        self.vfinish(plan, i, dst);
        Ok(())
    }

    fn emit_vunary(
        &mut self,
        plan: &VectorPlan,
        op: UnaryOp,
        dtype: DType,
        a: u8,
        dst: u8,
    ) -> Result<(), EmitError> {
        let w = plan.wide;
        match (op, dtype) {
            (UnaryOp::Neg | UnaryOp::Abs, DType::F32 | DType::F64) => {
                let neg = op == UnaryOp::Neg;
                match self.sign_operand(plan)? {
                    SignOperand::Frame { sign, .. } if neg => {
                        x64!(self.ops; vxorps Ry(dst), Ry(a), [rsp + sign])
                    }
                    SignOperand::Frame { magnitude, .. } => {
                        x64!(self.ops; vandps Ry(dst), Ry(a), [rsp + magnitude])
                    }
                    SignOperand::Reg(r) if neg => x64!(self.ops; vxorps Ry(dst), Ry(a), Ry(r)),
                    SignOperand::Reg(r) => x64!(self.ops; vandnps Ry(dst), Ry(r), Ry(a)),
                }
            }
            (UnaryOp::Sqrt | UnaryOp::Rsqrt, DType::F32) => {
                if op == UnaryOp::Sqrt {
                    x64!(self.ops; vsqrtps Ry(dst), Ry(a));
                } else {
                    self.vconst(4, u64::from(1f32.to_bits()), false);
                    x64!(self.ops; vsqrtps ymm3, Ry(a) ; vdivps Ry(dst), ymm4, ymm3);
                }
            }
            (UnaryOp::Sqrt | UnaryOp::Rsqrt, DType::F64) => {
                if op == UnaryOp::Sqrt {
                    x64!(self.ops; vsqrtpd Ry(dst), Ry(a));
                } else {
                    self.vconst(4, 1f64.to_bits(), true);
                    x64!(self.ops; vsqrtpd ymm3, Ry(a) ; vdivpd Ry(dst), ymm4, ymm3);
                }
            }
            (UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round, DType::F32 | DType::F64) => {
                let mode: i8 = match op {
                    UnaryOp::Floor => 9,
                    UnaryOp::Ceil => 10,
                    _ => 8,
                };
                if w {
                    x64!(self.ops; vroundpd Ry(dst), Ry(a), mode);
                } else {
                    x64!(self.ops; vroundps Ry(dst), Ry(a), mode);
                }
            }
            (UnaryOp::Not, _) => {
                x64!(self.ops; vpcmpeqd ymm3, ymm3, ymm3 ; vpxor Ry(dst), Ry(a), ymm3);
            }
            (UnaryOp::Neg, DType::I32) => {
                x64!(self.ops; vpxor ymm3, ymm3, ymm3 ; vpsubd Ry(dst), ymm3, Ry(a));
            }
            (UnaryOp::Neg, DType::I64) => {
                x64!(self.ops; vpxor ymm3, ymm3, ymm3 ; vpsubq Ry(dst), ymm3, Ry(a));
            }
            (UnaryOp::Abs, DType::I32) => x64!(self.ops; vpabsd Ry(dst), Ry(a)),
            (UnaryOp::Abs, DType::I64) => {
                // s = (0 > a) ? -1 : 0 ; |a| = (a ^ s) - s, wrapping at MIN.
                x64!(self.ops
                    ; vpxor ymm4, ymm4, ymm4 ; vpcmpgtq ymm3, ymm4, Ry(a)
                    ; vpxor ymm4, Ry(a), ymm3 ; vpsubq Ry(dst), ymm4, ymm3);
            }
            _ => return Err(self.unsupported(format!("vector {op} on {dtype}"))),
        }
        Ok(())
    }

    /// `dst = a op rhs` with `rhs` read from its slot by the instruction itself, for the float
    /// arithmetic whose second operand may be memory (a spilled constant, most often); false
    /// (nothing emitted) when `rhs` lives in a register or the op has no such form here.
    fn emit_vbinary_from_slot(
        &mut self,
        plan: &VectorPlan,
        op: BinaryOp,
        dtype: DType,
        a: u8,
        rhs: u32,
        dst: u8,
    ) -> bool {
        let Some(Home::Slot(s)) = plan.home.get(rhs as usize) else {
            return false;
        };
        let at = self.lay.vec_slot(*s);
        match (op, dtype) {
            (BinaryOp::Add, DType::F32) => x64!(self.ops; vaddps Ry(dst), Ry(a), [rsp + at]),
            (BinaryOp::Sub, DType::F32) => x64!(self.ops; vsubps Ry(dst), Ry(a), [rsp + at]),
            (BinaryOp::Mul, DType::F32) => x64!(self.ops; vmulps Ry(dst), Ry(a), [rsp + at]),
            (BinaryOp::Div, DType::F32) => x64!(self.ops; vdivps Ry(dst), Ry(a), [rsp + at]),
            (BinaryOp::Add, DType::F64) => x64!(self.ops; vaddpd Ry(dst), Ry(a), [rsp + at]),
            (BinaryOp::Sub, DType::F64) => x64!(self.ops; vsubpd Ry(dst), Ry(a), [rsp + at]),
            (BinaryOp::Mul, DType::F64) => x64!(self.ops; vmulpd Ry(dst), Ry(a), [rsp + at]),
            (BinaryOp::Div, DType::F64) => x64!(self.ops; vdivpd Ry(dst), Ry(a), [rsp + at]),
            _ => return false,
        }
        true
    }

    pub(crate) fn emit_vbinary(
        &mut self,
        op: BinaryOp,
        dtype: DType,
        w: bool,
        a: u8,
        b: u8,
        dst: u8,
    ) -> Result<(), EmitError> {
        use BinaryOp::*;
        match (op, dtype) {
            (Add, DType::F32) => x64!(self.ops; vaddps Ry(dst), Ry(a), Ry(b)),
            (Sub, DType::F32) => x64!(self.ops; vsubps Ry(dst), Ry(a), Ry(b)),
            (Mul, DType::F32) => x64!(self.ops; vmulps Ry(dst), Ry(a), Ry(b)),
            (Div, DType::F32) => x64!(self.ops; vdivps Ry(dst), Ry(a), Ry(b)),
            (Add, DType::F64) => x64!(self.ops; vaddpd Ry(dst), Ry(a), Ry(b)),
            (Sub, DType::F64) => x64!(self.ops; vsubpd Ry(dst), Ry(a), Ry(b)),
            (Mul, DType::F64) => x64!(self.ops; vmulpd Ry(dst), Ry(a), Ry(b)),
            (Div, DType::F64) => x64!(self.ops; vdivpd Ry(dst), Ry(a), Ry(b)),
            // maxps/minps return their second operand on ties and NaNs, so the two orders
            // differ only in the lanes of (±0, ∓0), where they hold both zeros, and of a NaN,
            // where one or both hold it. Min: their OR is -0 in the first, and a NaN in the
            // second (every exponent bit and a nonzero fraction kept). Max: their AND is +0
            // in the first, and the unordered mask turns the second all-ones.
            (Max, DType::F32) => x64!(self.ops
                ; vmaxps ymm3, Ry(a), Ry(b) ; vmaxps ymm4, Ry(b), Ry(a) ; vandps ymm3, ymm3, ymm4
                ;; self.vcmp(false, 4, a, b, 3)
                ; vorps Ry(dst), ymm3, ymm4),
            (Min, DType::F32) => x64!(self.ops
                ; vminps ymm3, Ry(a), Ry(b) ; vminps ymm4, Ry(b), Ry(a) ; vorps Ry(dst), ymm3, ymm4),
            (Max, DType::F64) => x64!(self.ops
                ; vmaxpd ymm3, Ry(a), Ry(b) ; vmaxpd ymm4, Ry(b), Ry(a) ; vandpd ymm3, ymm3, ymm4
                ;; self.vcmp(true, 4, a, b, 3)
                ; vorpd Ry(dst), ymm3, ymm4),
            (Min, DType::F64) => x64!(self.ops
                ; vminpd ymm3, Ry(a), Ry(b) ; vminpd ymm4, Ry(b), Ry(a) ; vorpd Ry(dst), ymm3, ymm4),
            (And, _) => x64!(self.ops; vpand Ry(dst), Ry(a), Ry(b)),
            (Or, _) => x64!(self.ops; vpor Ry(dst), Ry(a), Ry(b)),
            (Xor, _) => x64!(self.ops; vpxor Ry(dst), Ry(a), Ry(b)),
            (Add, DType::I32) => x64!(self.ops; vpaddd Ry(dst), Ry(a), Ry(b)),
            (Sub, DType::I32) => x64!(self.ops; vpsubd Ry(dst), Ry(a), Ry(b)),
            (Mul, DType::I32) => x64!(self.ops; vpmulld Ry(dst), Ry(a), Ry(b)),
            (Max, DType::I32) => x64!(self.ops; vpmaxsd Ry(dst), Ry(a), Ry(b)),
            (Min, DType::I32) => x64!(self.ops; vpminsd Ry(dst), Ry(a), Ry(b)),
            // Variable shifts give 0 (or sign fill for vpsravd) for any count outside 0..32
            // read as unsigned, negative counts included: exactly the IR's rule.
            (Shl, DType::I32) => x64!(self.ops; vpsllvd Ry(dst), Ry(a), Ry(b)),
            (ShrLogical, DType::I32) => x64!(self.ops; vpsrlvd Ry(dst), Ry(a), Ry(b)),
            (ShrArithmetic, DType::I32) => x64!(self.ops; vpsravd Ry(dst), Ry(a), Ry(b)),
            (Add, DType::I64) => x64!(self.ops; vpaddq Ry(dst), Ry(a), Ry(b)),
            (Sub, DType::I64) => x64!(self.ops; vpsubq Ry(dst), Ry(a), Ry(b)),
            (Shl, DType::I64) => x64!(self.ops; vpsllvq Ry(dst), Ry(a), Ry(b)),
            (ShrLogical, DType::I64) => x64!(self.ops; vpsrlvq Ry(dst), Ry(a), Ry(b)),
            (Max, DType::I64) => x64!(self.ops
                ; vpcmpgtq ymm3, Ry(a), Ry(b) ; vblendvpd Ry(dst), Ry(b), Ry(a), ymm3),
            (Min, DType::I64) => x64!(self.ops
                ; vpcmpgtq ymm3, Ry(a), Ry(b) ; vblendvpd Ry(dst), Ry(a), Ry(b), ymm3),
            _ => return Err(self.unsupported(format!("vector {op} on {dtype}"))),
        }
        let _ = w;
        Ok(())
    }

    fn emit_vcompare(
        &mut self,
        op: CompareOp,
        operand: DType,
        w: bool,
        a: u8,
        b: u8,
        dst: u8,
    ) -> Result<(), EmitError> {
        if operand.is_float() {
            self.vcmp(w, dst, a, b, float_predicate(op));
            return Ok(());
        }
        // Integers and bool masks: eq / gt and their swaps; the rest are complements.
        let (first, second, swap, negate) = match op {
            CompareOp::Eq => (a, b, false, false),
            CompareOp::Ne => (a, b, false, true),
            CompareOp::Gt => (a, b, true, false),
            CompareOp::Lt => (b, a, true, false),
            CompareOp::Le => (a, b, true, true),
            CompareOp::Ge => (b, a, true, true),
        };
        let target = if negate { 3 } else { dst };
        match (swap, w) {
            (false, false) => x64!(self.ops; vpcmpeqd Ry(target), Ry(first), Ry(second)),
            (false, true) => x64!(self.ops; vpcmpeqq Ry(target), Ry(first), Ry(second)),
            (true, false) => x64!(self.ops; vpcmpgtd Ry(target), Ry(first), Ry(second)),
            (true, true) => x64!(self.ops; vpcmpgtq Ry(target), Ry(first), Ry(second)),
        }
        if negate {
            x64!(self.ops; vpcmpeqd ymm4, ymm4, ymm4 ; vpxor Ry(dst), ymm3, ymm4);
        }
        Ok(())
    }

    fn emit_vconvert(
        &mut self,
        from: DType,
        to: DType,
        w: bool,
        a: u8,
        dst: u8,
    ) -> Result<(), EmitError> {
        match (from, to) {
            _ if from == to => {
                if a != dst {
                    x64!(self.ops; vmovaps Ry(dst), Ry(a));
                }
            }
            (DType::I32, DType::F32) => x64!(self.ops; vcvtdq2ps Ry(dst), Ry(a)),
            (DType::F32, DType::I32) => {
                // Overflow and NaN lanes come out as 0x8000_0000; flip x >= 2^31 lanes to
                // 0x7fff_ffff and clear NaN lanes.
                self.vconst(4, u64::from(2f32.powi(31).to_bits()), false);
                x64!(self.ops; vcvttps2dq ymm3, Ry(a));
                self.vcmp(false, 4, a, 4, 0x1D);
                x64!(self.ops; vpxor ymm3, ymm3, ymm4);
                self.vcmp(false, 4, a, a, 7);
                x64!(self.ops; vpand Ry(dst), ymm3, ymm4);
            }
            (DType::Bool, DType::I32) => x64!(self.ops; vpsrld Ry(dst), Ry(a), 31),
            // 0 - mask: dynasm 5.1 encodes `vpsrlq ymm, ymm, imm` as an xmm shift.
            (DType::Bool, DType::I64) => {
                x64!(self.ops; vpxor ymm3, ymm3, ymm3 ; vpsubq Ry(dst), ymm3, Ry(a))
            }
            (DType::Bool, DType::F32 | DType::F64) => {
                let one = if w {
                    1f64.to_bits()
                } else {
                    u64::from(1f32.to_bits())
                };
                self.vconst(3, one, w);
                x64!(self.ops; vandps Ry(dst), Ry(a), ymm3);
            }
            (DType::F32 | DType::F64, DType::Bool) => {
                x64!(self.ops; vxorps ymm3, ymm3, ymm3);
                self.vcmp(w, dst, a, 3, 4);
            }
            (DType::I32 | DType::I64, DType::Bool) => {
                x64!(self.ops; vpxor ymm3, ymm3, ymm3);
                if w {
                    x64!(self.ops; vpcmpeqq ymm3, Ry(a), ymm3);
                } else {
                    x64!(self.ops; vpcmpeqd ymm3, Ry(a), ymm3);
                }
                x64!(self.ops; vpcmpeqd ymm4, ymm4, ymm4 ; vpxor Ry(dst), ymm3, ymm4);
            }
            _ => return Err(self.unsupported(format!("vector convert {from} to {to}"))),
        }
        Ok(())
    }
}
