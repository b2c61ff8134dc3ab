//! The vector path's code: the innermost dim, 8 (32-bit lanes) or 4 (64-bit lanes) points
//! per iteration in ymm registers on the AVX2 tier, then a scalar tail. The AVX-512 tier runs
//! the same plan in zmm registers, 16 or 8 points per iteration (`vector_zmm.rs`), and ends
//! it with one `k1`-masked iteration instead of the tail (see
//! [`Emitter::emit_masked_tail`]); a run of whole vectors known at compile time has neither.
//! Which kernels qualify and where values live is the plan's (`vector_plan.rs`).
//!
//! Nodes that do not vary along the dim ("uniform": constants, stride-0 loads, indices of
//! outer dims, and anything computed only from those) are evaluated once per run of the inner
//! loop by the scalar code, before it starts, and broadcast; so even an `exp` of a broadcast
//! operand costs one import call per row.
//!
//! Bounds: the vector loop runs while `counter + lanes <= bound`, so it touches only points of
//! the space; the tail finishes the remaining points one at a time. Nothing reads or writes
//! past a binding's end.

use accy_ir::DType;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use super::asm::{gpr, x64};
use super::evex_zmm::{zv, Zins, Zrm};
use super::kernel::Emitter;
pub(crate) use super::vector_plan::{plan, MinMax, SignMask, VectorPlan, ACC_REG};

/// Where a float `neg`/`abs` finds the sign-bit mask (see [`Emitter::sign_operand`]).
pub(crate) enum SignOperand {
    /// In this register.
    Reg(u8),
    /// In the frame: the sign mask at `sign`, its complement at `magnitude`.
    Frame { sign: i32, magnitude: i32 },
}
use super::X64Tier;
pub(crate) use crate::emit::vregs::Home;
use crate::kernel::Node;
use crate::target::EmitError;

impl Emitter<'_> {
    /// The innermost parallel dim `d`, vectorized, with its tail (scalar or masked) where the
    /// run may leave one.
    pub(crate) fn emit_vector_dim(&mut self, d: usize) -> Result<(), EmitError> {
        let Some(plan) = self.vplan.take() else {
            return self.emit_loop(d, |e, _| e.emit_parallel_point());
        };
        let result = self.emit_vector_loops(d, &plan);
        self.vplan = Some(plan);
        result
    }

    fn emit_vector_loops(&mut self, d: usize, plan: &VectorPlan) -> Result<(), EmitError> {
        let counter = self.lay.counter[d];
        let lanes = plan.lanes();
        let [end, vtop, vcheck, ttop, tcheck] = [(); 5].map(|_| self.ops.new_dynamic_label());
        self.emit_counter_start(d);
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; cmp QWORD [rsp + counter], rcx ; jae =>end);
        self.emit_uniform_prefix(plan)?;
        let tile_pointers = self.emit_tile_pointers(plan);
        let head = self.stream && !plan.tiles();
        if head {
            // Tiles fix which column each vector iteration reads, so a run cannot start with
            // a shorter step: its stores check their own alignment instead.
            self.emit_store_alignment_head(d, plan)?;
        }
        self.pin_loop_state(d, &tile_pointers);
        // A run of whole vectors known at compile time (an inner dim: dim 0's run is the
        // workgroup's share) whose moving state is all in registers leaves nothing for a
        // tail, and its slots still hold the run's start, which is what the restore would
        // give back: the registers are dropped, not written back, and the tail and the
        // restore are left out. For a short row (a 32-float row of a GEMM's packed B) they
        // were a chain of store-forwarded writes of the same slots, row after row.
        let whole = tile_pointers.is_empty() && !head && self.whole_pinned_run(d, lanes);
        x64!(self.ops; jmp =>vcheck ; =>vtop);
        self.emit_vector_body(plan)?;
        self.emit_vstore(plan)?;
        self.add_to_slot(counter, lanes);
        for &slot in &tile_pointers {
            self.add_to_slot(slot, plan.tile_shape().step());
        }
        self.emit_map_step(d, lanes);
        x64!(self.ops; =>vcheck);
        self.emit_vector_loop_check(d, lanes, vtop);
        if whole {
            self.drop_pins();
            // Later code may call imports compiled as SSE code (the next run's uniform
            // prefix, say).
            x64!(self.ops; vzeroupper ; =>end);
            return Ok(());
        }
        self.unpin();
        if self.tier == X64Tier::Avx512 && !plan.needs_scalar_tail() {
            let done = self.ops.new_dynamic_label();
            self.emit_masked_tail(d, done, |e| {
                e.emit_vector_body(plan)?;
                e.emit_vstore(plan)
            })?;
            // Later code may call imports compiled as SSE code.
            x64!(self.ops; =>done ; vzeroupper ; =>end);
            self.emit_map_restore(d);
            return Ok(());
        }
        x64!(self.ops
            // The tail may call imports compiled as SSE code.
            ; vzeroupper
            ; jmp =>tcheck ; =>ttop
        );
        self.emit_parallel_point()?;
        x64!(self.ops; add QWORD [rsp + counter], 1);
        self.emit_map_step(d, 1);
        x64!(self.ops; =>tcheck);
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; cmp QWORD [rsp + counter], rcx ; jb =>ttop ; =>end);
        self.emit_map_restore(d);
        Ok(())
    }

    /// A vector store of `ymm(src)` at the store map's offset (rcx: the binding, rax: the
    /// offset) by a loop that reads tiles, whose runs have no alignment head: non-temporal as
    /// one store when the address is a multiple of 32 bytes, as two halves when it is a
    /// multiple of 16 (a buffer from `malloc`: each line is still written whole, by
    /// consecutive stores), otherwise ordinary. The branch goes the same way at every store
    /// of a run whose steps are multiples of 8 elements, as a blocked transpose's are. The
    /// ordinary store prefetches the line `ahead` bytes on, as the loop does without streams
    /// ([`Emitter::store_prefetch_distance`]). Uses rdx and, for the upper half, ymm0 or
    /// ymm1 (scratch after the store).
    fn emit_tile_run_store(&mut self, wide: bool, src: u8, ahead: Option<i32>) {
        let [halves, ordinary, done] = [(); 3].map(|_| self.ops.new_dynamic_label());
        let upper = if src == 0 { 1 } else { 0 };
        if wide {
            x64!(self.ops; lea rdx, [rcx + rax * 8]);
        } else {
            x64!(self.ops; lea rdx, [rcx + rax * 4]);
        }
        // The `ps` forms for both lane widths: a store moves bits, whatever their type.
        x64!(self.ops
            ; test dl, 31 ; jnz =>halves
            ; vmovntps [rdx], Ry(src)
            ; jmp =>done
            ; =>halves
            ; test dl, 15 ; jnz =>ordinary
            ; vmovntps [rdx], Rx(src)
            ; vextractf128 Rx(upper), Ry(src), 1
            ; vmovntps [rdx + 16], Rx(upper)
        );
        x64!(self.ops
            ; jmp =>done
            ; =>ordinary
            ; vmovups [rdx], Ry(src)
        );
        if let Some(ahead) = ahead {
            x64!(self.ops; prefetcht1 [rdx + ahead]);
        }
        x64!(self.ops; =>done);
    }

    /// Makes the store address of the vector loop's first iteration a multiple of the vector
    /// size, as the non-temporal stores require: when the run is misaligned and holds at least
    /// a vector, one vector of points is computed and stored with an ordinary store, and the
    /// run moves on by only as many points as reach the next aligned address; the loop (or
    /// the tail) then stores the rest of that vector again, which is harmless since no node
    /// reads the store binding ([`crate::streams_stores`]): the last store of a point wins.
    /// Runs after the uniform prefix and before the loop state is pinned, like the masked
    /// tail.
    fn emit_store_alignment_head(&mut self, d: usize, plan: &VectorPlan) -> Result<(), EmitError> {
        let counter = self.lay.counter[d];
        let skip = self.ops.new_dynamic_label();
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops
            ; sub rcx, QWORD [rsp + counter]
            ; cmp rcx, plan.lanes() as i32
            ; jb =>skip
        );
        self.emit_points_to_alignment(plan);
        x64!(self.ops; jz =>skip);
        self.stream = false;
        let stored = self
            .emit_vector_body(plan)
            .and_then(|()| self.emit_vstore(plan));
        self.stream = true;
        stored?;
        // The maps have not moved: the same count again.
        self.emit_points_to_alignment(plan);
        x64!(self.ops; add QWORD [rsp + counter], rcx);
        self.emit_map_step_rcx(d);
        x64!(self.ops; =>skip);
        Ok(())
    }

    /// rcx = the points from the current store address to the next multiple of the vector
    /// size (0 when it is one; ZF set then). The store binding is element-aligned (checked
    /// on entry), so that many points reach it exactly. Clobbers rax.
    fn emit_points_to_alignment(&mut self, plan: &VectorPlan) {
        let vector_bytes = if plan.zmm { 64 } else { 32 };
        let b = self.k.store.binding as i32 * 8;
        self.slot_to_rax(self.lay.store_map);
        x64!(self.ops; mov rcx, QWORD [r12 + b]);
        if plan.wide {
            x64!(self.ops; lea rcx, [rcx + rax * 8] ; neg rcx ; and ecx, vector_bytes - 1 ; shr ecx, 3);
        } else {
            x64!(self.ops; lea rcx, [rcx + rax * 4] ; neg rcx ; and ecx, vector_bytes - 1 ; shr ecx, 2);
        }
        x64!(self.ops; test ecx, ecx);
    }

    /// Jumps to `top` while another whole vector fits in dim `d` (counter + lanes <= bound):
    /// against a constant bound of at least a vector as counter <= bound - lanes on the
    /// pinned counter, one compare.
    pub(crate) fn emit_vector_loop_check(&mut self, d: usize, lanes: i64, top: DynamicLabel) {
        let counter = self.lay.counter[d];
        let last_start = (d > 0)
            .then(|| self.k.dims[d].checked_sub(lanes as u64))
            .flatten()
            .and_then(|b| i32::try_from(b).ok());
        match (last_start, self.pinned_reg(counter)) {
            (Some(last), Some(reg)) => x64!(self.ops; cmp Rq(reg), last ; jbe =>top),
            _ => {
                self.emit_bound(d, gpr::RCX);
                self.slot_to_rax(counter);
                x64!(self.ops; add rax, lanes as i32 ; cmp rax, rcx ; jbe =>top);
            }
        }
    }

    /// The uniform values at the first point of a run of the inner loop (they hold for all of
    /// it), computed by the scalar code and broadcast to their vector homes.
    pub(crate) fn emit_uniform_prefix(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        for i in 0..self.k.nodes.len() {
            let konst = matches!(self.k.nodes[i].node, Node::Const { .. });
            if self.live[i] && plan.uniform[i] && !konst {
                self.emit_node(i)?;
            }
        }
        for i in 0..self.k.nodes.len() {
            if plan.uniform[i] && plan.home[i] != Home::None {
                self.emit_broadcast(plan, i)?;
            }
        }
        match plan.sign {
            Some(SignMask::Reg(reg)) if plan.zmm => self.zsign_mask(reg, plan.wide),
            Some(SignMask::Reg(reg)) => self.vsign_mask(reg, plan.wide),
            Some(SignMask::Slot(slot)) => {
                let (sign, magnitude) = self.sign_slots(plan, slot);
                if plan.zmm {
                    self.zsign_mask(3, plan.wide);
                    self.z(Zins::new(zv::store(false), 3, 0, Zrm::rsp(sign)));
                    self.z(Zins::rrr(zv::pternlog(false), 3, 3, 3).imm(0x0F));
                    self.z(Zins::new(zv::store(false), 3, 0, Zrm::rsp(magnitude)));
                } else {
                    self.vsign_mask(3, plan.wide);
                    x64!(self.ops
                        ; vmovups [rsp + sign], ymm3
                        ; vpcmpeqd ymm4, ymm4, ymm4
                        ; vpxor ymm3, ymm3, ymm4
                        ; vmovups [rsp + magnitude], ymm3
                    );
                }
            }
            None => {}
        }
        Ok(())
    }

    /// The frame offsets of the sign mask and the magnitude mask kept from 32-byte slot
    /// `slot` (see [`SignMask::Slot`]).
    pub(crate) fn sign_slots(&self, plan: &VectorPlan, slot: usize) -> (i32, i32) {
        let sign = self.lay.vec_slot(slot);
        (sign, sign + plan.vector_bytes())
    }

    /// Every varying node for one vector of points.
    pub(crate) fn emit_vector_body(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        for i in 0..self.k.nodes.len() {
            if !self.live[i] || plan.uniform[i] || plan.absorbed[i] {
                // An absorbed compare is read by min/max selects only, an absorbed AND by
                // its bit select: nothing to compute.
                continue;
            }
            if let Some(min_max) = plan.min_max[i] {
                self.emit_min_max(plan, i, min_max)?;
            } else if plan.zmm {
                self.emit_znode(plan, i)?;
            } else {
                self.emit_vnode(plan, i)?;
            }
        }
        self.emit_keep_vstore(plan)
    }

    /// Stores the kept value's vector ([`crate::kernel::Keep`]) at its map's offset, if the
    /// kernel keeps one: ordinary stores, masked in a masked tail, since the kept values are
    /// read again soon (a softmax's division). Uses ymm0/zmm0, rax and rcx.
    fn emit_keep_vstore(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        let (Some(keep), Some(map)) = (&self.k.keep, self.lay.keep_map) else {
            return Ok(());
        };
        let (node, b) = (keep.node, keep.binding as i32 * 8);
        let src = self.vsrc(plan, node, 0)?;
        self.slot_to_rax(map);
        x64!(self.ops; mov rcx, QWORD [r12 + b]);
        self.emit_plain_vstore(plan, src);
        Ok(())
    }

    /// Select `i`, which is `minps`/`maxps` of its operands (see [`MinMax`]).
    fn emit_min_max(&mut self, plan: &VectorPlan, i: usize, mm: MinMax) -> Result<(), EmitError> {
        let dst = self.vdst(plan, i);
        let a = self.vsrc(plan, mm.first, 0)?;
        let b = self.vsrc(plan, mm.second, 1)?;
        let w = plan.wide;
        if plan.zmm {
            let op = if mm.max { zv::max(w) } else { zv::min(w) };
            self.z(Zins::rrr(op, dst, a, b));
        } else {
            match (mm.max, w) {
                (false, false) => x64!(self.ops; vminps Ry(dst), Ry(a), Ry(b)),
                (false, true) => x64!(self.ops; vminpd Ry(dst), Ry(a), Ry(b)),
                (true, false) => x64!(self.ops; vmaxps Ry(dst), Ry(a), Ry(b)),
                (true, true) => x64!(self.ops; vmaxpd Ry(dst), Ry(a), Ry(b)),
            }
        }
        self.vfinish(plan, i, dst);
        Ok(())
    }

    /// The sign-bit mask a float `neg`/`abs` of `plan` reads: the register keeping it, or the
    /// frame offsets of the sign and magnitude masks (see [`SignMask`]).
    pub(crate) fn sign_operand(&self, plan: &VectorPlan) -> Result<SignOperand, EmitError> {
        match plan.sign {
            Some(SignMask::Reg(r)) => Ok(SignOperand::Reg(r)),
            Some(SignMask::Slot(slot)) => {
                let (sign, magnitude) = self.sign_slots(plan, slot);
                Ok(SignOperand::Frame { sign, magnitude })
            }
            None => Err(self.unsupported("a float neg or abs without a sign mask in the plan")),
        }
    }

    /// The points left after the vector loop (fewer than a vector's worth), as one iteration
    /// with mask `k1` covering exactly them: `body` runs with masked loads and stores, then
    /// the map offsets advance by the remaining count. Jumps to `done` when none remain.
    pub(crate) fn emit_masked_tail(
        &mut self,
        d: usize,
        done: DynamicLabel,
        body: impl FnOnce(&mut Self) -> Result<(), EmitError>,
    ) -> Result<(), EmitError> {
        let counter = self.lay.counter[d];
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops
            ; sub rcx, QWORD [rsp + counter] ; jz =>done
            ; mov eax, 1 ; shl eax, cl ; sub eax, 1
        );
        self.ops.extend(super::evex::kmovw_from_gpr(1, gpr::RAX));
        self.masked = true;
        let result = body(self);
        self.masked = false;
        result?;
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; sub rcx, QWORD [rsp + counter]);
        self.emit_map_step_rcx(d);
        Ok(())
    }

    /// Stores the result vector at the store map's offset.
    fn emit_vstore(&mut self, plan: &VectorPlan) -> Result<(), EmitError> {
        let src = self.vsrc(plan, self.k.result, 0)?;
        let map = self.lay.store_map;
        let b = self.k.store.binding as i32 * 8;
        self.slot_to_rax(map);
        x64!(self.ops; mov rcx, QWORD [r12 + b]);
        if self.stream && !self.masked && plan.tiles() {
            let ahead = self.store_prefetch_distance(plan);
            if plan.zmm {
                self.emit_tile_run_zstore(plan.wide, src, ahead);
            } else {
                self.emit_tile_run_store(plan.wide, src, ahead);
            }
        } else if self.stream && !self.masked {
            // Aligned by the run's head (`emit_store_alignment_head`).
            if plan.zmm {
                let to = super::vector_zmm::element(plan.wide);
                self.z(Zins::new(zv::store_nt(plan.wide), src, 0, to));
            } else if plan.wide {
                x64!(self.ops; vmovntpd [rcx + rax * 8], Ry(src));
            } else {
                x64!(self.ops; vmovntps [rcx + rax * 4], Ry(src));
            }
        } else {
            self.emit_plain_vstore(plan, src);
            if let (false, Some(ahead)) = (self.masked, self.store_prefetch_distance(plan)) {
                if plan.wide {
                    x64!(self.ops; prefetcht1 [rcx + rax * 8 + ahead]);
                } else {
                    x64!(self.ops; prefetcht1 [rcx + rax * 4 + ahead]);
                }
            }
        }
        Ok(())
    }

    /// An ordinary store of vector register `src` at element `rax` of the binding at `rcx`,
    /// masked by `k1` in a masked tail.
    fn emit_plain_vstore(&mut self, plan: &VectorPlan, src: u8) {
        if plan.zmm {
            self.zstore(plan.wide, src);
        } else if self.masked {
            let (lanes, mem) = super::vector_ops::masked_operand(plan.wide);
            self.ops
                .extend(super::evex::store_masked(lanes, src, mem, 1));
        } else if plan.wide {
            x64!(self.ops; vmovups [rcx + rax * 8], Ry(src));
        } else {
            x64!(self.ops; vmovups [rcx + rax * 4], Ry(src));
        }
    }

    /// Node `i`'s scalar value, broadcast to every lane of its home (a bool becomes a mask).
    fn emit_broadcast(&mut self, plan: &VectorPlan, i: usize) -> Result<(), EmitError> {
        let (slot, dtype) = (self.lay.node[i], self.k.nodes[i].dtype);
        let dst = self.vdst(plan, i);
        let from = if dtype == DType::Bool {
            let tmp = self.lay.tmp;
            x64!(self.ops; movzx eax, BYTE [rsp + slot] ; neg rax ; mov QWORD [rsp + tmp], rax);
            tmp
        } else {
            slot
        };
        // dynasm 5.1 encodes `vbroadcastss ymm, m32` with VEX.L = 0 (an xmm broadcast), so
        // the 32-bit case uses AVX2's `vpbroadcastd`, which it encodes correctly.
        if plan.zmm {
            let op = zv::pbroadcast_mem(plan.wide);
            self.z(Zins::new(op, dst, 0, Zrm::rsp(from)));
        } else if plan.wide {
            x64!(self.ops; vbroadcastsd Ry(dst), QWORD [rsp + from]);
        } else {
            x64!(self.ops; vpbroadcastd Ry(dst), DWORD [rsp + from]);
        }
        self.vfinish(plan, i, dst);
        Ok(())
    }

    /// The register holding node `id`'s vector value, loading it into `scratch` from its
    /// slot if it lives in memory.
    pub(crate) fn vsrc(
        &mut self,
        plan: &VectorPlan,
        id: u32,
        scratch: u8,
    ) -> Result<u8, EmitError> {
        match plan.home.get(id as usize) {
            Some(Home::Reg(r)) => Ok(*r),
            Some(Home::Slot(s)) => {
                let at = self.vslot(plan, *s);
                if plan.zmm {
                    self.z(Zins::new(zv::load(plan.wide), scratch, 0, Zrm::rsp(at)));
                } else {
                    x64!(self.ops; vmovups Ry(scratch), [rsp + at]);
                }
                Ok(scratch)
            }
            _ => Err(self.unsupported(format!("node {id} has no vector value"))),
        }
    }

    /// For an FMA `a · b + c` whose destination register `dst` is the home of factor `a`
    /// (or `b`) but not of the addend: the other factor, which the `213` form multiplies
    /// into `dst`. `None` when the usual `231` form (accumulating into `dst`) applies.
    pub(crate) fn fma_factor_in_dst(
        &self,
        plan: &VectorPlan,
        dst: u8,
        a: u32,
        b: u32,
        c: u32,
    ) -> Option<u32> {
        let in_dst = |id: u32| plan.home.get(id as usize) == Some(&Home::Reg(dst));
        if in_dst(c) {
            None
        } else if in_dst(a) {
            Some(b)
        } else if in_dst(b) {
            Some(a)
        } else {
            None
        }
    }

    /// Puts node `id`'s vector value in register `reg` (a move from its register, or a load
    /// from its slot).
    pub(crate) fn vsrc_into(
        &mut self,
        plan: &VectorPlan,
        id: u32,
        reg: u8,
    ) -> Result<(), EmitError> {
        match plan.home.get(id as usize) {
            Some(Home::Reg(r)) => {
                if *r != reg && plan.zmm {
                    self.z(Zins::rrr(zv::mov(plan.wide), reg, 0, *r));
                } else if *r != reg {
                    x64!(self.ops; vmovaps Ry(reg), Ry(*r));
                }
                Ok(())
            }
            Some(Home::Slot(s)) => {
                let at = self.vslot(plan, *s);
                if plan.zmm {
                    self.z(Zins::new(zv::load(plan.wide), reg, 0, Zrm::rsp(at)));
                } else {
                    x64!(self.ops; vmovups Ry(reg), [rsp + at]);
                }
                Ok(())
            }
            _ => Err(self.unsupported(format!("node {id} has no vector value"))),
        }
    }

    /// The register node `i`'s vector result is computed into (its home, or register 0 when
    /// it lives in a slot; `vfinish` then stores it).
    pub(crate) fn vdst(&self, plan: &VectorPlan, i: usize) -> u8 {
        match plan.home.get(i) {
            Some(Home::Reg(r)) => *r,
            _ => 0,
        }
    }

    /// Stores `reg` to node `i`'s slot if that is where it lives.
    pub(crate) fn vfinish(&mut self, plan: &VectorPlan, i: usize, reg: u8) {
        if let Some(Home::Slot(s)) = plan.home.get(i) {
            let at = self.vslot(plan, *s);
            if plan.zmm {
                self.z(Zins::new(zv::store(plan.wide), reg, 0, Zrm::rsp(at)));
            } else {
                x64!(self.ops; vmovups [rsp + at], Ry(reg));
            }
        }
    }

    /// The frame offset of vector home slot `s` (zmm homes take two 32-byte slots).
    pub(crate) fn vslot(&self, plan: &VectorPlan, s: usize) -> i32 {
        self.lay.vec_slot(s * (plan.vector_bytes() / 32) as usize)
    }
}
