//! A reduction over a contiguous innermost dim, vectorized on the AVX2 and AVX-512 tiers.
//!
//! Each lane accumulates every `lanes`-th point of a run of the inner loop in `ymm15` (`zmm15`
//! on AVX-512), starting from the op's identity. A short body (a max over a load) would wait
//! on the combine's latency, so it gets up to three more accumulators in free registers
//! (`VectorPlan::extra_accs`), filled round robin by an unrolled loop and folded into the
//! first before the rest of the run. After the vector loop the lanes are folded
//! pairwise in registers (upper half onto lower half until one lane is left), that lane into
//! the scalar accumulator with the scalar combine step (or, when the dim is the only reduced
//! one, into the accumulator as it is: it still holds the identity), and a scalar tail (or
//! the AVX-512 masked iteration) adds the remaining points, if a run of whole vectors known
//! at compile time leaves any.
//!
//! A float max or min on AVX-512 combines each vector in two instructions on two ports
//! (the range form) instead of three: `vrangeps` orders `-0 < +0` as the IR's max and min
//! do, but returns the other operand where one is a quiet NaN, so an ordered compare
//! (`vcmpordps`) into an opmask per accumulator, merge-masked by itself, keeps which lanes
//! have seen only ordered values. The extra accumulators fold into the first with the AND of
//! their opmasks, and before the first's lanes are folded, those its opmask clears become
//! NaN. (A 4096×1024 row softmax, whose max pass this is: 1.82-1.84 → 1.80-1.81 ms, `accy
//! bench`, 1 thread, min latency, three alternating rounds.)
//!
//! Integer sums and products wrap, and max/min give the same value in
//! any order, so those results are bit-exact; a float sum is reassociated (allowed by the
//! kernel semantics), so it may differ from the row-major sum by rounding — tests compare it
//! with a bound of `count · ε · Σ|terms|`. Folding an identity lane never changes the
//! accumulator: a sum starting at +0 never holds -0, and `max(x, -inf) = x`.

use accy_ir::BinaryOp;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{gpr, x64};
use super::evex::{move_merge, Lanes};
use super::evex_zmm::{zv, Zins};
use super::kernel::Emitter;
use super::vector::{VectorPlan, ACC_REG};
use super::X64Tier;
use crate::emit::vector_reduction;
use crate::target::EmitError;

/// The opmasks of the range form's accumulators: [`ACC_REG`]'s, then the extra ones', in
/// order. They come from the top of the body's mask pool (`vector_zmm.rs`), which hands out
/// k2 first; a body that takes one of them keeps the three-instruction form.
const ORDERED_MASKS: [u8; 4] = [6, 5, 4, 3];

/// `vcmpps`/`pd`'s predicate for "neither operand is NaN".
const ORDERED: u8 = 7;

/// `vrangeps`'s immediates: bits 1:0 select the max (01) or the min (00), bits 3:2 take the
/// sign from the selected value (01).
const RANGE_MAX: u8 = 0b0101;
const RANGE_MIN: u8 = 0b0100;

/// `vrangeps`'s immediate for a max, or else a min.
fn range_imm(combine: BinaryOp) -> u8 {
    if combine == BinaryOp::Max {
        RANGE_MAX
    } else {
        RANGE_MIN
    }
}

/// Whether a vector reduction combining with `combine` over `dtype` has the range form (see
/// the module doc): a float max or min in zmm code whose body keeps no compare in one of
/// [`ORDERED_MASKS`] (`mask_reg`, the plan's). The plan asks before it has its accumulators:
/// the range form needs no sign mask.
pub(crate) fn has_range_form(
    zmm: bool,
    combine: BinaryOp,
    dtype: accy_ir::DType,
    mask_reg: &[Option<u8>],
) -> bool {
    let float = matches!(dtype, accy_ir::DType::F32 | accy_ir::DType::F64);
    let taken = mask_reg.iter().flatten().any(|m| ORDERED_MASKS.contains(m));
    zmm && float && matches!(combine, BinaryOp::Max | BinaryOp::Min) && !taken
}

/// The accumulators of a vector reduction and their range-form opmasks, if it has the range
/// form ([`has_range_form`]; at most [`ORDERED_MASKS`]' count of accumulators).
fn range_form(
    plan: &VectorPlan,
    combine: BinaryOp,
    dtype: accy_ir::DType,
) -> Option<Vec<(u8, u8)>> {
    if !has_range_form(plan.zmm, combine, dtype, &plan.mask_reg) {
        return None;
    }
    let accs: Vec<(u8, u8)> = std::iter::once(ACC_REG)
        .chain(plan.extra_accs.iter().copied())
        .zip(ORDERED_MASKS)
        .collect();
    (accs.len() == plan.extra_accs.len() + 1).then_some(accs)
}

impl Emitter<'_> {
    /// The innermost (reduced) dim `d`, vectorized, with its scalar tail.
    pub(crate) fn emit_vector_reduction_dim(&mut self, d: usize) -> Result<(), EmitError> {
        let Some(plan) = self.vplan.take() else {
            return self.emit_loop(d, Self::emit_reduction_dim);
        };
        let result = self.emit_vector_reduction_loops(d, &plan);
        self.vplan = Some(plan);
        result
    }

    fn emit_vector_reduction_loops(
        &mut self,
        d: usize,
        plan: &VectorPlan,
    ) -> Result<(), EmitError> {
        let dtype = self.dtype(self.k.result)?;
        let (Some((op, combine, identity)), Some(acc_slot)) =
            (vector_reduction(self.k, dtype), plan.acc_slot)
        else {
            return Err(self.unsupported(format!("a vector reduction over {dtype}")));
        };
        let (counter, acc) = (self.lay.counter[d], self.lay.acc);
        let lanes = plan.lanes();
        let [end, vtop, vcheck, ttop, tcheck] = [(); 5].map(|_| self.ops.new_dynamic_label());
        self.emit_counter_start(d);
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; cmp QWORD [rsp + counter], rcx ; jae =>end);
        self.emit_uniform_prefix(plan)?;
        for &acc in std::iter::once(&ACC_REG).chain(&plan.extra_accs) {
            if plan.zmm {
                self.zconst(acc, identity, plan.wide);
            } else {
                self.vconst(acc, identity, plan.wide);
            }
        }
        if let Some(accs) = range_form(plan, combine, dtype) {
            // Every lane ordered so far.
            x64!(self.ops; mov eax, -1);
            for (_, k) in accs {
                self.ops.extend(super::evex::kmovw_from_gpr(k, gpr::RAX));
            }
        }
        self.pin_loop_state(d, &[]);
        if !plan.extra_accs.is_empty() {
            // Unrolled: one vector into each accumulator per iteration, while a whole round
            // fits; then the accumulators fold into ACC_REG and the loop below takes the rest.
            let accs: Vec<u8> = std::iter::once(ACC_REG)
                .chain(plan.extra_accs.iter().copied())
                .collect();
            let [utop, ucheck] = [(); 2].map(|_| self.ops.new_dynamic_label());
            x64!(self.ops; jmp =>ucheck ; =>utop);
            for &acc in &accs {
                self.emit_vector_step(d, plan, combine, dtype, acc)?;
            }
            x64!(self.ops; =>ucheck);
            self.emit_vector_loop_check(d, lanes * accs.len() as i64, utop);
            let ranged = range_form(plan, combine, dtype);
            for (i, &acc) in plan.extra_accs.iter().enumerate() {
                match &ranged {
                    // Same lanes: the opmasks combine as they are.
                    Some(accs) => {
                        let (k, extra_k) = (accs[0].1, accs[i + 1].1);
                        self.emit_range(plan, combine, ACC_REG, acc);
                        self.ops.extend(super::evex::kandw(k, k, extra_k));
                    }
                    None => self.emit_combine_vector(plan, combine, dtype, acc, ACC_REG)?,
                }
            }
        }
        x64!(self.ops; jmp =>vcheck ; =>vtop);
        self.emit_vector_step(d, plan, combine, dtype, ACC_REG)?;
        x64!(self.ops; =>vcheck);
        let spill = self.vslot(plan, acc_slot);
        self.emit_vector_loop_check(d, lanes, vtop);
        // A whole pinned run drops its registers, and the tail and the restore are left out
        // (once per row of a softmax's max and sum).
        let whole = self.whole_pinned_run(d, lanes);
        if whole {
            self.drop_pins();
        } else {
            self.unpin();
        }
        let avx512 = self.tier == X64Tier::Avx512;
        if avx512 && !whole {
            // The remaining points as one masked iteration; masked-off lanes combine the
            // identity (merged into ymm2), so they change nothing.
            let fold = self.ops.new_dynamic_label();
            self.emit_masked_tail(d, fold, |e| {
                e.emit_vector_body(plan)?;
                let value = e.vsrc(plan, e.k.result, 0)?;
                if plan.zmm {
                    e.zconst(2, identity, plan.wide);
                    e.z(Zins::rrr(zv::mov(plan.wide), 2, 0, value).mask(1, false));
                } else {
                    e.vconst(2, identity, plan.wide);
                    let lanes = if plan.wide {
                        Lanes::Qword
                    } else {
                        Lanes::Dword
                    };
                    e.ops.extend(move_merge(lanes, 2, value, 1));
                }
                e.emit_combine_vector(plan, combine, dtype, 2, ACC_REG)
            })?;
            x64!(self.ops; =>fold);
        }
        self.emit_unordered_to_nan(plan, combine, dtype);
        self.emit_fold_lanes(plan, combine, dtype)?;
        x64!(self.ops; vmovups [rsp + spill], Ry(ACC_REG));
        // The fold and the tail are SSE code (and may call imports).
        x64!(self.ops; vzeroupper);
        if d == self.k.parallel_rank as usize {
            // The only reduced dim: the accumulator still holds the identity, which combines
            // with the lanes' result to that result exactly (a float sum's lanes never hold
            // -0, see the module doc), so it takes the result as it is, without the scalar
            // combine's compare and branches (once per row of a softmax's max and sum).
            x64!(self.ops; mov rax, QWORD [rsp + spill] ; mov QWORD [rsp + acc], rax);
        } else {
            self.emit_combine(op, dtype, acc, spill)?;
        }
        if whole {
            x64!(self.ops; =>end);
            return Ok(());
        }
        if avx512 {
            x64!(self.ops; =>end);
            self.emit_map_restore(d);
            return Ok(());
        }
        x64!(self.ops; jmp =>tcheck ; =>ttop);
        self.emit_nodes()?;
        let result = self.slot(self.k.result)?;
        self.emit_combine(op, dtype, acc, result)?;
        x64!(self.ops; add QWORD [rsp + counter], 1);
        self.emit_map_step(d, 1);
        x64!(self.ops; =>tcheck);
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; cmp QWORD [rsp + counter], rcx ; jb =>ttop ; =>end);
        self.emit_map_restore(d);
        Ok(())
    }

    /// One vector of points: the body, its value combined into `acc`, the counter and maps
    /// moved on.
    fn emit_vector_step(
        &mut self,
        d: usize,
        plan: &VectorPlan,
        combine: BinaryOp,
        dtype: accy_ir::DType,
        acc: u8,
    ) -> Result<(), EmitError> {
        self.emit_vector_body(plan)?;
        let value = self.vsrc(plan, self.k.result, 0)?;
        self.emit_combine_vector(plan, combine, dtype, value, acc)?;
        let lanes = plan.lanes();
        self.add_to_slot(self.lay.counter[d], lanes);
        self.emit_map_step(d, lanes);
        Ok(())
    }

    /// `acc = acc combine value` in the plan's vector width.
    fn emit_combine_vector(
        &mut self,
        plan: &VectorPlan,
        combine: BinaryOp,
        dtype: accy_ir::DType,
        value: u8,
        acc: u8,
    ) -> Result<(), EmitError> {
        let ranged = range_form(plan, combine, dtype);
        if let Some(&(_, k)) = ranged.iter().flatten().find(|&&(a, _)| a == acc) {
            let w = plan.wide;
            self.z(Zins::rrr(zv::cmp(w), k, value, value)
                .imm(ORDERED)
                .mask(k, false));
            self.emit_range(plan, combine, acc, value);
            Ok(())
        } else if plan.zmm {
            self.emit_zbinary(combine, dtype, plan.wide, acc, value, acc, plan.sign_reg())
        } else {
            self.emit_vbinary(combine, dtype, plan.wide, acc, value, acc)
        }
    }

    /// `acc = vrangeps(acc, value)`: the max or min of each lane pair, a quiet NaN passed over.
    fn emit_range(&mut self, plan: &VectorPlan, combine: BinaryOp, acc: u8, value: u8) {
        let imm = range_imm(combine);
        self.z(Zins::rrr(zv::range(plan.wide), acc, acc, value).imm(imm));
    }

    /// In the range form, NaN in the lanes of [`ACC_REG`] that have seen a NaN (its opmask's
    /// clear lanes, the extra accumulators' ANDed in), so that folding its lanes propagates
    /// them; nothing otherwise. zmm3 holds the NaN (all ones).
    fn emit_unordered_to_nan(
        &mut self,
        plan: &VectorPlan,
        combine: BinaryOp,
        dtype: accy_ir::DType,
    ) {
        if let Some(&(acc, k)) = range_form(plan, combine, dtype)
            .as_ref()
            .and_then(|a| a.first())
        {
            self.z(Zins::rrr(zv::pternlog(false), 3, 3, 3).imm(0xFF));
            self.z(Zins::rrr(zv::pblendm(plan.wide), acc, 3, acc).mask(k, false));
        }
    }

    /// Combines the accumulator's lanes pairwise in registers, halving the live width each
    /// step (zmm to ymm, ymm to xmm, then 64-bit and 32-bit halves), into its lane 0: a
    /// handful of vector instructions where a lane-by-lane scalar fold took one
    /// store-forwarded combine per lane. ymm1 holds each step's upper half.
    fn emit_fold_lanes(
        &mut self,
        plan: &VectorPlan,
        combine: BinaryOp,
        dtype: accy_ir::DType,
    ) -> Result<(), EmitError> {
        let w = plan.wide;
        let step = |e: &mut Self| e.emit_vbinary(combine, dtype, w, ACC_REG, 1, ACC_REG);
        if plan.zmm {
            // vextractf64x4 ymm1, zmm15, 1 (the source in ModRM.reg, the destination in r/m).
            self.z(Zins::rrr(zv::EXTRACTF64X4, ACC_REG, 0, 1).imm(1));
            step(self)?;
        }
        x64!(self.ops; vextractf128 xmm1, Ry(ACC_REG), 1);
        step(self)?;
        x64!(self.ops; vmovhlps xmm1, Rx(ACC_REG), Rx(ACC_REG));
        step(self)?;
        if !w {
            x64!(self.ops; vmovshdup xmm1, Rx(ACC_REG));
            step(self)?;
        }
        Ok(())
    }
}
