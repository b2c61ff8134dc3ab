//! A reduction over a contiguous innermost dim on the NEON path, as `x64/vector_reduce.rs`
//! does it on AVX2: each lane of `v31` accumulates every `lanes`-th point of a run of the
//! inner loop, starting from the op's identity; after the vector loop the lanes are spilled
//! to a frame slot and combined into the scalar accumulator in lane order by the scalar
//! combine, and the scalar loop adds the remaining points.
//!
//! Which reductions qualify is `vector::plan`'s choice: wrapping integer sums and i32
//! products and float max/min give the scalar loop's bits in any order; a float sum is
//! reassociated, which default mode allows (tests bound it by `count · ε · Σ|terms|`).
//! Combining an identity lane never changes the accumulator: a sum starting at +0 never holds
//! -0, and `max(x, -inf) = x`.

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{a64, add_slot, gpr, mov_imm, str_slot, Slot};
use super::kernel::Emitter;
use super::vector::{VectorPlan, ACC_REG, SRC_SCRATCH};
use crate::emit::vector_reduction;
use crate::target::EmitError;

impl Emitter<'_> {
    /// The innermost (reduced) dim `d`, vectorized, then the scalar loop for the points left
    /// over.
    pub(crate) fn emit_vector_reduction_dim(
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
        let lanes = plan.lanes();
        let [top, check, tail] = self.emit_vector_run_start(d, plan)?;
        mov_imm(self.ops, gpr::X0, identity as i64);
        if plan.wide {
            a64!(self.ops; dup V(ACC_REG).D2, x0);
        } else {
            a64!(self.ops; dup V(ACC_REG).S4, w0);
        }
        a64!(self.ops; b =>check ; =>top);
        self.emit_vector_nodes(plan)?;
        let value = self.vsrc(plan, self.k.result, SRC_SCRATCH[0])?;
        let float = dtype.is_float();
        self.emit_vector_binary(combine, float, plan.wide, ACC_REG, ACC_REG, value)?;
        add_slot(self.ops, self.lay.counter[d], lanes);
        self.emit_map_step(d, lanes);
        self.emit_vector_loop_check(d, lanes, check, top);
        // The lanes, in order, into the scalar accumulator.
        let spill = self.lay.vec_slot(acc_slot);
        str_slot(self.ops, Slot::Q, ACC_REG, spill);
        let size = dtype.size_bytes() as i32;
        for lane in 0..lanes as i32 {
            self.emit_combine(op, dtype, self.lay.acc, spill + lane * size)?;
        }
        a64!(self.ops; =>tail);
        self.emit_counting_loop(d, Self::emit_reduction_dim)
    }
}
