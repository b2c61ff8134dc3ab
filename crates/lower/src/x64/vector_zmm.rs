//! The AVX-512 tier's form of the vector path: the same plan, nodes and lane semantics as
//! the AVX2 code of `vector_ops.rs`, in 512-bit zmm registers (16 × 32-bit or 8 × 64-bit
//! lanes), with zmm5–zmm31 allocatable. Masks stay all-ones/zero lanes in vector registers
//! as on AVX2: a compare writes an opmask (`k7`) and turns it into lanes with one
//! `vpternlogd {k7}{z}`; a select tests its mask lanes into `k7` and blends with
//! `vpblendmd`/`q`. A compare read only by selects skips both steps: it keeps its result in
//! one of `k2`–`k6` (see [`assign_masks`]), which its selects blend under. Scratch: zmm0–zmm2
//! for spilled operands, zmm3/zmm4 and `k7` as temporaries, written before the destination,
//! which is written last; `k1` is the masked tail's lane mask; a float max or min reduction
//! keeps its accumulators' ordered lanes in `k6`–`k3` unless the body took them
//! (`vector_reduce.rs`).
//!
//! zmm16–31 are untouched by the SSE scalar code and `vzeroupper`, and are caller-saved in
//! the SysV ABI, so they need no saving.

use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::x64;
use super::evex_zmm::{emit, zv, Zins, Zrm};
use super::kernel::Emitter;
use super::vector::{Home, SignOperand, VectorPlan};
use crate::kernel::{LoopKernel, Node};
use crate::target::EmitError;

/// The opmask a compare or a select's test writes before it is consumed at once.
const K_TMP: u8 = 7;
/// The opmasks [`assign_masks`] hands out (k1 is the masked tail's, k7 the temporary), k2
/// first: a float max or min reduction uses k6–k3 when the body leaves them free.
const MASK_POOL: [u8; 5] = [2, 3, 4, 5, 6];

/// Per node of `k`: the opmask a varying compare keeps its result in when every user is a
/// select reading it as its condition (then the select blends under that opmask, and the
/// compare needs no lanes). Handed out in node order from [`MASK_POOL`], each free again after
/// its compare's last select; a compare that finds none free gets lanes as usual. `absorbed`
/// compares (read by min/max selects only, never emitted) get none.
pub(crate) fn assign_masks(
    k: &LoopKernel,
    live: &[bool],
    uniform: &[bool],
    absorbed: &[bool],
) -> Vec<Option<u8>> {
    let n = k.nodes.len();
    let varying = |i: usize| live[i] && !uniform[i];
    // Per node: its last user, or None when some user is not a select's condition alone.
    let mut last_select: Vec<Option<usize>> = vec![None; n];
    let mut other_use = vec![false; n];
    for root in k.roots() {
        if let Some(u) = other_use.get_mut(root as usize) {
            *u = true;
        }
    }
    for (j, kn) in k.nodes.iter().enumerate() {
        if !varying(j) {
            continue;
        }
        match kn.node {
            Node::Select {
                cond,
                on_true,
                on_false,
            } => {
                last_select[cond as usize] = Some(j);
                other_use[on_true as usize] = true;
                other_use[on_false as usize] = true;
            }
            ref other => {
                for o in other.operands() {
                    other_use[o as usize] = true;
                }
            }
        }
    }
    let mut mask = vec![None; n];
    let mut free_at: Vec<(u8, usize)> = Vec::new();
    for (i, kn) in k.nodes.iter().enumerate() {
        let Some(last) = last_select[i] else {
            continue;
        };
        let compare = matches!(kn.node, Node::Compare { .. });
        if !varying(i) || other_use[i] || absorbed[i] || !compare {
            continue;
        }
        // Opmasks whose compare's last select came before this compare are free again.
        let taken: Vec<u8> = free_at
            .iter()
            .filter(|&&(_, end)| end > i)
            .map(|&(r, _)| r)
            .collect();
        if let Some(&r) = MASK_POOL.iter().find(|r| !taken.contains(r)) {
            free_at.retain(|&(q, _)| q != r);
            free_at.push((r, last));
            mask[i] = Some(r);
        }
    }
    mask
}
/// All-ones for every input combination of `vpternlogd` (a truth table of ones).
const TERNLOG_ONES: u8 = 0xFF;

/// `vpternlog` of (A, B, C) = C ? A & B : A | B, bit by bit (bit `4A + 2B + C` of the table):
/// with C the sign mask, the AND of two maxima's sign bits and the OR of their other bits.
const MAX_SIGN_AND_REST_OR: u8 = 0b1101_0100;

/// `vpcmpd`/`q` predicates for the IR's compares on (lhs, rhs), signed.
fn int_predicate(op: CompareOp) -> u8 {
    match op {
        CompareOp::Eq => 0,
        CompareOp::Lt => 1,
        CompareOp::Le => 2,
        CompareOp::Ne => 4,
        CompareOp::Ge => 5,
        CompareOp::Gt => 6,
    }
}

impl Emitter<'_> {
    /// Emits one zmm instruction.
    pub(crate) fn z(&mut self, ins: Zins) {
        emit(self.ops, ins);
    }

    /// `zmm(reg)` = `bits` in every 32-bit (or, when `wide`, 64-bit) lane.
    pub(crate) fn zconst(&mut self, reg: u8, bits: u64, wide: bool) {
        if wide {
            super::asm::mov_imm(self.ops, super::asm::gpr::RAX, bits as i64);
        } else {
            super::asm::mov_imm(self.ops, super::asm::gpr::RAX, i64::from(bits as u32));
        }
        let op = zv::pbroadcast_gpr(wide);
        self.z(Zins::rrr(op, reg, 0, super::asm::gpr::RAX));
    }

    /// `zmm(reg)` = all-ones.
    fn zones(&mut self, reg: u8) {
        let op = zv::pternlog(false);
        self.z(Zins::rrr(op, reg, reg, reg).imm(TERNLOG_ONES));
    }

    /// `zmm(reg)` = the sign bit of each lane.
    pub(crate) fn zsign_mask(&mut self, reg: u8, wide: bool) {
        self.zones(reg);
        let shift = if wide { 63 } else { 31 };
        let op = zv::pshift_imm(wide);
        self.z(Zins::rrr(op, zv::SHIFT_LEFT, reg, reg).imm(shift));
    }

    /// `zmm(dst)` = all-ones lanes (of 64 bits when `wide`) where opmask `k` is set, zero
    /// elsewhere.
    fn zmask_lanes(&mut self, wide: bool, dst: u8, k: u8) {
        let op = zv::pternlog(wide);
        self.z(Zins::rrr(op, dst, dst, dst).imm(TERNLOG_ONES).mask(k, true));
    }

    /// `zmm(dst)` = the float compare `a <predicate> b` as mask lanes.
    fn zcmp_lanes(&mut self, wide: bool, dst: u8, a: u8, b: u8, predicate: u8) {
        self.z(Zins::rrr(zv::cmp(wide), K_TMP, a, b).imm(predicate));
        self.zmask_lanes(wide, dst, K_TMP);
    }

    /// Emits varying node `i` for one vector of points.
    pub(crate) fn emit_znode(&mut self, plan: &VectorPlan, i: usize) -> Result<(), EmitError> {
        let n = self.k.nodes[i].clone();
        let w = plan.wide;
        let dst = self.vdst(plan, i);
        if let Some(sel) = plan.or_and.get(i).copied().flatten() {
            self.emit_or_and(plan, sel, dst)?;
            self.vfinish(plan, i, dst);
            return Ok(());
        }
        match n.node {
            Node::Load { binding, .. } => {
                if let Some(first) = plan.tile_slot[i] {
                    if self.masked {
                        return Err(self.unsupported("a tile in a masked tail"));
                    }
                    self.emit_tile_column(plan, first, dst);
                    self.vfinish(plan, i, dst);
                    return Ok(());
                }
                if plan.gather_slot[i].is_some() {
                    return Err(self.unsupported("a gather in zmm code"));
                }
                let map = self.lay.map[i].ok_or_else(|| self.unsupported("a load without map"))?;
                self.slot_to_rax(map);
                let b = binding as i32 * 8;
                super::asm::x64!(self.ops; mov rcx, QWORD [r12 + b]);
                let ins = Zins::new(zv::load(w), dst, 0, element(w));
                if self.masked {
                    self.z(ins.mask(1, true));
                } else {
                    self.z(ins);
                    self.emit_load_prefetch(binding, w);
                }
            }
            Node::Unary { op, x } => {
                let a = self.vsrc(plan, x, 0)?;
                self.emit_zunary(plan, op, n.dtype, a, dst)?;
            }
            Node::Binary { op, lhs, rhs } => {
                let a = self.vsrc(plan, lhs, 0)?;
                let from_slot = match plan.home.get(rhs as usize) {
                    Some(Home::Slot(s)) if n.dtype.is_float() => Some(self.vslot(plan, *s)),
                    _ => None,
                };
                match (from_slot, float_op(op, w)) {
                    (Some(at), Some(code)) => self.z(Zins::new(code, dst, a, Zrm::rsp(at))),
                    _ => {
                        let b = self.vsrc(plan, rhs, 1)?;
                        self.emit_zbinary(op, n.dtype, w, a, b, dst, plan.sign_reg())?;
                    }
                }
            }
            Node::Compare { op, lhs, rhs } => {
                let operand = self.dtype(lhs)?;
                let a = self.vsrc(plan, lhs, 0)?;
                let b = self.vsrc(plan, rhs, 1)?;
                let kreg = plan.mask_reg[i].unwrap_or(K_TMP);
                if operand.is_float() {
                    let predicate = super::vector_ops::float_predicate(op) as u8;
                    self.z(Zins::rrr(zv::cmp(w), kreg, a, b).imm(predicate));
                } else {
                    let code = zv::pcmp(w);
                    self.z(Zins::rrr(code, kreg, a, b).imm(int_predicate(op)));
                }
                if plan.mask_reg[i].is_some() {
                    return Ok(());
                }
                self.zmask_lanes(w, dst, K_TMP);
            }
            Node::Select {
                cond,
                on_true,
                on_false,
            } => {
                let kreg = match plan.mask_reg.get(cond as usize).copied().flatten() {
                    Some(kreg) => kreg,
                    None => {
                        let c = self.vsrc(plan, cond, 0)?;
                        self.z(Zins::rrr(zv::ptestm(w), K_TMP, c, c));
                        K_TMP
                    }
                };
                let t = self.vsrc(plan, on_true, 1)?;
                let f = self.vsrc(plan, on_false, 2)?;
                self.z(Zins::rrr(zv::pblendm(w), dst, f, t).mask(kreg, false));
            }
            Node::Convert { x } => {
                let from = self.dtype(x)?;
                let a = self.vsrc(plan, x, 0)?;
                self.emit_zconvert(from, n.dtype, w, a, dst)?;
            }
            Node::Fma { a, b, c } => {
                if let Some(other) = self.fma_factor_in_dst(plan, dst, a, b, c) {
                    // The destination took over a factor's register (`reuse_hints`): multiply
                    // into it.
                    let o = self.vsrc(plan, other, 1)?;
                    let addend = self.vsrc(plan, c, 2)?;
                    self.z(Zins::rrr(zv::fmadd213(w), dst, o, addend));
                } else {
                    // As on AVX2: a factor in a slot is the memory operand, the accumulator
                    // starts from c, through zmm3 when the destination is a factor's register.
                    let in_slot = |e: &Self, id: u32| match plan.home.get(id as usize) {
                        Some(Home::Slot(s)) => Some(e.vslot(plan, *s)),
                        _ => None,
                    };
                    let (first, second) = match (in_slot(self, a), in_slot(self, b)) {
                        (_, Some(at)) => (a, Zrm::rsp(at)),
                        (Some(at), None) => (b, Zrm::rsp(at)),
                        (None, None) => (a, Zrm::Reg(self.vsrc(plan, b, 1)?)),
                    };
                    let r = self.vsrc(plan, first, 0)?;
                    let clobbers = second == Zrm::Reg(dst);
                    let acc = if dst == r || clobbers { 3 } else { dst };
                    self.vsrc_into(plan, c, acc)?;
                    self.z(Zins::new(zv::fmadd231(w), acc, r, second));
                    if acc != dst {
                        self.z(Zins::rrr(zv::mov(w), dst, 0, acc));
                    }
                }
            }
            Node::ScaleB { x, n: e } => {
                let (a, b) = (self.vsrc(plan, x, 0)?, self.vsrc(plan, e, 1)?);
                self.z(Zins::rrr(zv::scalef(w), dst, a, b));
            }
            Node::Bitcast { x } => {
                let a = self.vsrc(plan, x, 0)?;
                if a != dst {
                    self.z(Zins::rrr(zv::mov(w), dst, 0, a));
                }
            }
            Node::Gather { .. } | Node::Index { .. } | Node::Const { .. } | Node::Acc => {
                return Err(self.unsupported("a varying gather, index or constant in vector code"))
            }
        }
        self.vfinish(plan, i, dst);
        Ok(())
    }

    fn emit_zunary(
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
                let ins = match self.sign_operand(plan)? {
                    SignOperand::Frame { sign, .. } if op == UnaryOp::Neg => {
                        Zins::new(zv::PXOR, dst, a, Zrm::rsp(sign))
                    }
                    SignOperand::Frame { magnitude, .. } => {
                        Zins::new(zv::PAND, dst, a, Zrm::rsp(magnitude))
                    }
                    SignOperand::Reg(r) if op == UnaryOp::Neg => Zins::rrr(zv::PXOR, dst, a, r),
                    SignOperand::Reg(r) => Zins::rrr(zv::PANDN, dst, r, a),
                };
                self.z(ins);
            }
            (UnaryOp::Sqrt, DType::F32 | DType::F64) => {
                self.z(Zins::rrr(zv::sqrt(w), dst, 0, a));
            }
            (UnaryOp::Rsqrt, DType::F32 | DType::F64) => {
                let one = if w {
                    1f64.to_bits()
                } else {
                    u64::from(1f32.to_bits())
                };
                self.zconst(4, one, w);
                self.z(Zins::rrr(zv::sqrt(w), 3, 0, a));
                self.z(Zins::rrr(zv::div(w), dst, 4, 3));
            }
            (UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round, DType::F32 | DType::F64) => {
                // Rounding mode in bits 0-1 (or nearest-even), precision exception
                // suppressed, scale 0: the vroundps modes.
                let mode = match op {
                    UnaryOp::Floor => 9,
                    UnaryOp::Ceil => 10,
                    _ => 8,
                };
                self.z(Zins::rrr(zv::rndscale(w), dst, 0, a).imm(mode));
            }
            (UnaryOp::Not, _) => {
                self.zones(3);
                self.z(Zins::rrr(zv::PXOR, dst, a, 3));
            }
            (UnaryOp::Neg, DType::I32 | DType::I64) => {
                self.z(Zins::rrr(zv::PXOR, 3, 3, 3));
                self.z(Zins::rrr(zv::psub(w), dst, 3, a));
            }
            (UnaryOp::Abs, DType::I32 | DType::I64) => {
                self.z(Zins::rrr(zv::pabs(w), dst, 0, a));
            }
            _ => return Err(self.unsupported(format!("vector {op} on {dtype}"))),
        }
        Ok(())
    }

    /// `zmm(dst) = a op b`, lane by lane, as the AVX2 code computes it. `sign` is the register
    /// holding the plan's sign mask, if it has one there (a float max is shorter with it).
    #[allow(
        clippy::too_many_arguments,
        reason = "one lane operation's operands and the plan's sign register"
    )]
    pub(crate) fn emit_zbinary(
        &mut self,
        op: BinaryOp,
        dtype: DType,
        w: bool,
        a: u8,
        b: u8,
        dst: u8,
        sign: Option<u8>,
    ) -> Result<(), EmitError> {
        use BinaryOp::*;
        if dtype.is_float() {
            if let Some(code) = float_op(op, w) {
                self.z(Zins::rrr(code, dst, a, b));
                return Ok(());
            }
        }
        // Both operand orders combined: see `vector_ops.rs`; they differ only in lanes of
        // (±0, ∓0), in the sign bit alone, and of a NaN, where one holds it. With the sign
        // mask at hand, one vpternlog takes the AND of the sign bits (+0 wins) and the OR
        // of the others (a NaN keeps every exponent bit and a nonzero fraction): three
        // operations instead of five, the compare to an opmask among them (a 4096×1024
        // row softmax: 1.83 -> 1.74 ms). `dst` may be `a` or `b`: it is
        // written after both maxima are read.
        if let (Max, true, Some(sign)) = (op, dtype.is_float(), sign) {
            self.z(Zins::rrr(zv::max(w), 4, b, a));
            self.z(Zins::rrr(zv::max(w), dst, a, b));
            self.z(Zins::rrr(zv::pternlog(w), dst, 4, sign).imm(MAX_SIGN_AND_REST_OR));
            return Ok(());
        }
        let code = match (op, dtype) {
            // Without the sign mask, the OR in the NaN lanes under an unordered compare (which
            // comes first: `dst` may be `a` or `b`).
            (Max, DType::F32 | DType::F64) => {
                self.z(Zins::rrr(zv::cmp(w), K_TMP, a, b).imm(3));
                self.z(Zins::rrr(zv::max(w), 3, a, b));
                self.z(Zins::rrr(zv::max(w), 4, b, a));
                self.z(Zins::rrr(zv::PAND, dst, 3, 4));
                self.z(Zins::rrr(zv::por(w), dst, 3, 4).mask(K_TMP, false));
                return Ok(());
            }
            (Min, DType::F32 | DType::F64) => {
                self.z(Zins::rrr(zv::min(w), 3, a, b));
                self.z(Zins::rrr(zv::min(w), 4, b, a));
                self.z(Zins::rrr(zv::POR, dst, 3, 4));
                return Ok(());
            }
            (And, _) => zv::PAND,
            (Or, _) => zv::POR,
            (Xor, _) => zv::PXOR,
            (Add, DType::I32 | DType::I64) => zv::padd(w),
            (Sub, DType::I32 | DType::I64) => zv::psub(w),
            (Mul, DType::I32) => zv::PMULLD,
            (Max, DType::I32 | DType::I64) => zv::pmaxs(w),
            (Min, DType::I32 | DType::I64) => zv::pmins(w),
            // Counts outside 0..width (negative ones included) give 0 or the sign fill, as
            // the IR says.
            (Shl, DType::I32 | DType::I64) => zv::psllv(w),
            (ShrLogical, DType::I32 | DType::I64) => zv::psrlv(w),
            (ShrArithmetic, DType::I32 | DType::I64) => zv::psrav(w),
            _ => return Err(self.unsupported(format!("vector {op} on {dtype}"))),
        };
        self.z(Zins::rrr(code, dst, a, b));
        Ok(())
    }

    fn emit_zconvert(
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
                    self.z(Zins::rrr(zv::mov(w), dst, 0, a));
                }
            }
            (DType::I32, DType::F32) => self.z(Zins::rrr(zv::CVTDQ2PS, dst, 0, a)),
            (DType::F32, DType::I32) => {
                // As on AVX2: overflow lanes (x ≥ 2^31) flip 0x8000_0000 to 0x7fff_ffff,
                // NaN lanes are cleared.
                self.zconst(4, u64::from(2f32.powi(31).to_bits()), false);
                self.z(Zins::rrr(zv::CVTTPS2DQ, 3, 0, a));
                self.zcmp_lanes(false, 4, a, 4, 0x1D);
                self.z(Zins::rrr(zv::PXOR, 3, 3, 4));
                self.zcmp_lanes(false, 4, a, a, 7);
                self.z(Zins::rrr(zv::PAND, dst, 3, 4));
            }
            (DType::Bool, DType::I32 | DType::I64) => {
                let op = zv::pshift_imm(w);
                let shift = if w { 63 } else { 31 };
                self.z(Zins::rrr(op, zv::SHIFT_RIGHT, dst, a).imm(shift));
            }
            (DType::Bool, DType::F32 | DType::F64) => {
                let one = if w {
                    1f64.to_bits()
                } else {
                    u64::from(1f32.to_bits())
                };
                self.zconst(3, one, w);
                self.z(Zins::rrr(zv::PAND, dst, a, 3));
            }
            (DType::F32 | DType::F64, DType::Bool) => {
                self.z(Zins::rrr(zv::PXOR, 3, 3, 3));
                self.zcmp_lanes(w, dst, a, 3, 4);
            }
            (DType::I32 | DType::I64, DType::Bool) => {
                self.z(Zins::rrr(zv::ptestm(w), K_TMP, a, a));
                self.zmask_lanes(w, dst, K_TMP);
            }
            _ => return Err(self.unsupported(format!("vector convert {from} to {to}"))),
        }
        Ok(())
    }

    /// Stores zmm `src` at `[rcx + rax * size]` (under `k1` in the masked tail).
    pub(crate) fn zstore(&mut self, wide: bool, src: u8) {
        let ins = Zins::new(zv::store(wide), src, 0, element(wide));
        let ins = if self.masked { ins.mask(1, false) } else { ins };
        self.z(ins);
    }
}

impl Emitter<'_> {
    /// The zmm form of `emit_tile_run_store` (`vector.rs`): a store of `zmm(src)` at the
    /// store map's offset (rcx: the binding, rax: the offset) in a loop that reads tiles,
    /// non-temporal as one 64-byte store when the address is on a line, as two 32-byte or
    /// four 16-byte pieces when it is a multiple of 32 or 16 (consecutive stores still write
    /// each line whole), else ordinary, prefetching the line `ahead` bytes on. Uses rdx and,
    /// for the pieces, zmm0 or zmm1 (scratch after the store).
    pub(crate) fn emit_tile_run_zstore(&mut self, wide: bool, src: u8, ahead: Option<i32>) {
        let [halves, quarters, ordinary, done] = [(); 4].map(|_| self.ops.new_dynamic_label());
        let piece = if src == 0 { 1 } else { 0 };
        let at = |disp| Zrm::at(super::asm::gpr::RDX, disp);
        if wide {
            x64!(self.ops; lea rdx, [rcx + rax * 8]);
        } else {
            x64!(self.ops; lea rdx, [rcx + rax * 4]);
        }
        // The `ps` forms for both lane widths: a store moves bits, whatever their type.
        x64!(self.ops; test dl, 63 ; jnz =>halves);
        self.z(Zins::new(zv::store_nt(false), src, 0, at(0)));
        x64!(self.ops; jmp =>done ; =>halves ; test dl, 31 ; jnz =>quarters);
        self.z(Zins::new(zv::store_nt(false), src, 0, at(0)).ymm());
        self.z(Zins::rrr(zv::EXTRACTF64X4, src, 0, piece).imm(1));
        self.z(Zins::new(zv::store_nt(false), piece, 0, at(32)).ymm());
        x64!(self.ops; jmp =>done ; =>quarters ; test dl, 15 ; jnz =>ordinary);
        self.z(Zins::new(zv::store_nt(false), src, 0, at(0)).scalar());
        for lane in 1..4u8 {
            self.z(Zins::rrr(zv::EXTRACTF32X4, src, 0, piece).imm(lane));
            let disp = 16 * i32::from(lane);
            self.z(Zins::new(zv::store_nt(false), piece, 0, at(disp)).scalar());
        }
        x64!(self.ops; jmp =>done ; =>ordinary);
        self.z(Zins::new(zv::store(false), src, 0, at(0)));
        if let Some(ahead) = ahead {
            x64!(self.ops; prefetcht1 [rdx + ahead]);
        }
        x64!(self.ops; =>done);
    }
}

/// `[rcx + rax * size]`: the current element of the binding whose base is in rcx.
pub(crate) fn element(wide: bool) -> Zrm {
    let scale = if wide { 8 } else { 4 };
    Zrm::Mem {
        base: super::asm::gpr::RCX,
        index: Some((super::asm::gpr::RAX, scale)),
        disp: 0,
    }
}

/// The one-instruction float arithmetic (which also takes its second operand from memory).
fn float_op(op: BinaryOp, w: bool) -> Option<super::evex::Op> {
    Some(match op {
        BinaryOp::Add => zv::add(w),
        BinaryOp::Sub => zv::sub(w),
        BinaryOp::Mul => zv::mul(w),
        BinaryOp::Div => zv::div(w),
        _ => return None,
    })
}
