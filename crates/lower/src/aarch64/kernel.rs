//! One kernel's code: prologue and epilogue, the workgroup split, the loop nest with its
//! running index-map offsets, stores and reductions. Per-node code is in `scalar.rs` and
//! `convert.rs`; the NEON inner loop in `vector.rs`.
//!
//! Shape of the emitted function (`extern "C" fn(state: x0, workgroup: w1) -> w0`, AAPCS64):
//!
//! ```text
//! stp x29, x30, [sp, #-48]! ; mov x29, sp ; stp x19, x20 ; str x21
//! probe each 4 KiB page of the frame ; sub sp, sp, frame     sp is 16-byte aligned throughout
//! abi_version != ABI_VERSION or workgroup >= workgroup_count  -> return KERNEL_ABI_MISMATCH
//! binding_count != bindings compiled for, or any binding_lengths[i] shorter than the bytes
//!   binding i is compiled to access                          -> return KERNEL_BINDING_MISMATCH
//! x19 = state, x20 = state.bindings, x21 = state.imports   (callee-saved: survive imports)
//! dim 0's share [lo0, hi0): the workgroup's contiguous slice of dim 0 when it is parallel;
//!   otherwise workgroup 0 does everything and the others return at once
//! [with worker-scratch rows (`RowScratch`): worker >= worker_count, a worker scratch too
//!   small or a share of too many rows -> return KERNEL_WORKER_MISMATCH; x20 = the frame's
//!   copy of the binding addresses, those bindings pointing into the worker's scratch]
//! map offsets = offset + stride[0] * lo0 ; constants into their slots (once)
//! for each dim, outermost first (pre-tested, so an empty dim runs nothing):
//!     body ; counter += 1 ; every map offset += its stride for that dim
//!   after the loop, offsets -= stride * trip (dims > 0) so the next outer iteration resumes
//! at the parallel point: evaluate nodes and store, or init accumulator, loop over the
//!   reduction dims combining, then store
//! return KERNEL_OK
//! ```
//!
//! Offsets are kept with wrapping 64-bit arithmetic: every value used for an access is an exact
//! in-range offset (validation proved it), and intermediate values agree with it modulo 2^64.
//! Only x19-x21 and the frame survive an import call; every value lives in the frame.

use accy_artifact::abi::{
    DispatchState, ABI_VERSION, KERNEL_ABI_MISMATCH, KERNEL_BINDING_MISMATCH,
    KERNEL_WORKER_MISMATCH,
};
use accy_ir::DType;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use super::asm::{
    a64, add_imm, add_slot, gpr, ldr_slot, mov_imm, mul_imm, str_slot, sub_sp, Asm, Slot,
};
use super::vector::{self, VectorPlan};
use super::NAME;
use crate::emit::frame::{Layout, MapRef, Maps};
use crate::emit::{check_shape, identity_bits};
use crate::kernel::{LoopKernel, Node, NodeId};
use crate::target::EmitError;

/// Stack page size the frame probes step by (the smallest page size of AArch64 hosts; the
/// probe loop below subtracts it as `#1, lsl #12`).
const PAGE: u32 = 4096;

/// Everything the per-node emitters need while one kernel is emitted.
pub(crate) struct Emitter<'a> {
    pub ops: &'a mut Asm,
    pub k: &'a LoopKernel,
    pub lay: &'a Layout,
    /// Nodes the result depends on; the others are never evaluated.
    pub live: Vec<bool>,
    /// The vector plan, when the innermost parallel dim is vectorized.
    pub vplan: Option<VectorPlan>,
}

/// Emits `k` at the assembler's current position.
pub(crate) fn emit_kernel(
    ops: &mut Asm,
    k: &LoopKernel,
    reassociate: bool,
) -> Result<(), EmitError> {
    check_shape(k, NAME)?;
    let live = k.live_nodes();
    let vplan = vector::plan(k, &live, reassociate);
    let layout = Layout::new(k, vplan.as_ref().map_or(0, |p| p.slots), NAME)?;
    let mut e = Emitter {
        ops,
        k,
        lay: &layout,
        live,
        vplan,
    };
    e.emit_function()
}

impl<'a> Emitter<'a> {
    /// An [`EmitError::Unsupported`] for this kernel.
    pub(crate) fn unsupported(&self, what: impl Into<String>) -> EmitError {
        EmitError::Unsupported {
            kernel: self.k.name.clone(),
            what: what.into(),
            target: NAME,
        }
    }

    /// The dtype of node `id`.
    pub(crate) fn dtype(&self, id: NodeId) -> Result<DType, EmitError> {
        self.k
            .nodes
            .get(id as usize)
            .map(|n| n.dtype)
            .ok_or_else(|| self.unsupported(format!("operand {id} that is not a node")))
    }

    /// The scalar slot of node `id`.
    pub(crate) fn slot(&self, id: NodeId) -> Result<i32, EmitError> {
        self.lay
            .node
            .get(id as usize)
            .copied()
            .ok_or_else(|| self.unsupported(format!("operand {id} that is not a node")))
    }

    /// Every map the loops maintain (see [`Layout::maps`]).
    fn maps(&self) -> Maps<'a> {
        self.lay.maps(self.k, &self.live)
    }

    /// The stride of `m` along dim `d`.
    fn stride(&self, m: &MapRef<'_>, d: usize) -> i64 {
        m.stride(d, self.k.parallel_rank)
    }

    fn emit_function(&mut self) -> Result<(), EmitError> {
        let size = u32::try_from(self.lay.size).map_err(|_| self.unsupported("a frame size"))?;
        let (mismatch, bad_bindings, bad_worker, done, exit) = (
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
        );
        a64!(self.ops
            ; stp x29, x30, [sp, #-48]!
            ; mov x29, sp
            ; stp x19, x20, [sp, #16]
            ; str x21, [sp, #32]
        );
        // Touch every page of the frame, nearest first, before moving sp past it: a frame
        // larger than a page could otherwise step over the thread's stack guard page and
        // corrupt memory instead of faulting there.
        if size > PAGE {
            a64!(self.ops; mov x16, sp);
            let mut probe = PAGE;
            while probe < size {
                a64!(self.ops; sub x16, x16, #1, lsl #12 ; ldr w17, [x16]);
                probe += PAGE;
            }
        }
        sub_sp(self.ops, size);
        if let Some(rows) = self.lay.rows {
            str_slot(self.ops, Slot::W, 2, rows.worker);
        }
        a64!(self.ops
            ; mov x19, x0
            ; ldr w9, [x0, #DispatchState::OFFSET_ABI_VERSION]
            ; cmp w9, #ABI_VERSION
            ; b.ne =>mismatch
            ; ldr w9, [x0, #DispatchState::OFFSET_WORKGROUP_COUNT]
            ; cmp w1, w9
            ; b.hs =>mismatch
            ; ldr x20, [x0, #DispatchState::OFFSET_BINDINGS]
            ; ldr x21, [x0, #DispatchState::OFFSET_IMPORTS]
        );
        self.emit_binding_checks(bad_bindings);
        self.emit_share(done);
        self.emit_row_scratch(bad_worker);
        self.emit_map_init();
        self.emit_consts()?;
        self.emit_dim(0)?;
        a64!(self.ops
            ; =>done
            ; mov w0, wzr
            ; b =>exit
            ; =>bad_bindings
            ; mov w0, #KERNEL_BINDING_MISMATCH
            ; b =>exit
        );
        if self.lay.rows.is_some() {
            a64!(self.ops
                ; =>bad_worker
                ; mov w0, #KERNEL_WORKER_MISMATCH
                ; b =>exit
            );
        }
        a64!(self.ops
            ; =>mismatch
            ; mov w0, #KERNEL_ABI_MISMATCH
            ; =>exit
            ; mov sp, x29
            ; ldr x21, [sp, #32]
            ; ldp x19, x20, [sp, #16]
            ; ldp x29, x30, [sp], #48
            ; ret
        );
        Ok(())
    }

    /// Refuses a dispatch whose binding count differs from the kernel's or whose binding is
    /// shorter than the bytes the kernel was compiled to access (validation proved every access
    /// lies inside `elements * size`), so a runtime/artifact mismatch cannot read or write
    /// outside the caller's memory. Uses x9-x12 only (w1 still holds the workgroup).
    fn emit_binding_checks(&mut self, bad: DynamicLabel) {
        // check_shape bounds the count by MAX_BINDINGS (256): it fits `cmp`'s 12-bit
        // immediate, and every length's offset (< 2048) the scaled `ldr` offset field.
        let count = self.k.bindings.len() as u32;
        a64!(self.ops
            ; ldr w9, [x19, #DispatchState::OFFSET_BINDING_COUNT]
            ; cmp w9, #count
            ; b.ne =>bad
            ; ldr x10, [x19, #DispatchState::OFFSET_BINDING_LENGTHS]
        );
        for (i, b) in self.k.bindings.iter().enumerate() {
            // Validation proved the byte size fits u64; compare as unsigned.
            let bytes = b.elements.wrapping_mul(b.dtype.size_bytes());
            mov_imm(self.ops, 11, bytes as i64);
            let at = i as u32 * DispatchState::LENGTH_STRIDE;
            a64!(self.ops; ldr x12, [x10, #at] ; cmp x12, x11 ; b.lo =>bad);
        }
    }

    /// Dim 0's range for this workgroup into `[tmp, hi0)`. A parallel dim 0 is split into
    /// `workgroup_count` contiguous shares, `[d0 * w / n, d0 * (w + 1) / n)`. AArch64 has no
    /// 128-by-64-bit division, so with `d0 = q * n + r` the share start is computed as
    /// `q * w + r * w / n`, which is exact and never overflows (`r < n < 2^32`, `w <= n`);
    /// without parallel dims only workgroup 0 runs.
    fn emit_share(&mut self, done: DynamicLabel) {
        let (tmp, hi0) = (self.lay.tmp, self.lay.hi0);
        let Some(&d0) = self.k.dims.first() else {
            a64!(self.ops; cbnz w1, =>done);
            return;
        };
        let d0 = d0 as i64;
        if self.k.parallel_rank == 0 {
            a64!(self.ops; cbnz w1, =>done);
            str_slot(self.ops, Slot::X, 31, tmp);
            mov_imm(self.ops, gpr::X0, d0);
            str_slot(self.ops, Slot::X, gpr::X0, hi0);
            return;
        }
        a64!(self.ops
            ; ldr w9, [x19, #DispatchState::OFFSET_WORKGROUP_COUNT]
            ; mov w10, w1
        );
        mov_imm(self.ops, 11, d0);
        a64!(self.ops
            ; udiv x12, x11, x9
            ; msub x13, x12, x9, x11
            ; mul x14, x13, x10 ; udiv x14, x14, x9 ; madd x0, x12, x10, x14
        );
        str_slot(self.ops, Slot::X, gpr::X0, tmp);
        a64!(self.ops
            ; add x10, x10, #1
            ; mul x14, x13, x10 ; udiv x14, x14, x9 ; madd x0, x12, x10, x14
        );
        str_slot(self.ops, Slot::X, gpr::X0, hi0);
    }

    /// For [`crate::kernel::RowScratch`] bindings: checks the worker index, the worker
    /// scratch's size and the share's row count (`bad` otherwise), then points x20 at the
    /// frame's copy of the binding addresses, in which each such binding's address is
    /// `worker scratch + worker·stride + offset - lo0·row_bytes`: row `lo0` lands at the
    /// reservation's start, and the share's rows, at most `bytes / row_bytes` of them, inside
    /// it. Runs after the share (dim 0's start is in `tmp`); clobbers x9-x11, x16 and x17.
    fn emit_row_scratch(&mut self, bad: DynamicLabel) {
        let Some(rows) = self.lay.rows else {
            return;
        };
        let (end, most_rows) = crate::emit::frame::row_scratch_limits(self.k);
        let (tmp, hi0) = (self.lay.tmp, self.lay.hi0);
        ldr_slot(self.ops, Slot::W, 9, rows.worker);
        a64!(self.ops
            ; ldr w10, [x19, #DispatchState::OFFSET_WORKER_COUNT]
            ; cmp w9, w10
            ; b.hs =>bad
            ; ldr x10, [x19, #DispatchState::OFFSET_WORKER_SCRATCH_STRIDE]
        );
        mov_imm(self.ops, 11, end as i64);
        a64!(self.ops; cmp x10, x11 ; b.lo =>bad);
        ldr_slot(self.ops, Slot::X, 10, hi0);
        ldr_slot(self.ops, Slot::X, 11, tmp);
        a64!(self.ops; sub x10, x10, x11);
        mov_imm(self.ops, 11, most_rows as i64);
        a64!(self.ops; cmp x10, x11 ; b.hi =>bad);
        for i in 0..self.k.bindings.len() as u32 {
            // check_shape bounds the count by MAX_BINDINGS (256): the scaled offset fits.
            let at = i * DispatchState::BINDING_STRIDE;
            a64!(self.ops; ldr x9, [x20, #at]);
            str_slot(self.ops, Slot::X, 9, rows.bindings + at as i32);
        }
        for r in &self.k.row_scratch {
            let at = r.binding as i32 * DispatchState::BINDING_STRIDE as i32;
            ldr_slot(self.ops, Slot::W, 9, rows.worker);
            ldr_slot(self.ops, Slot::X, 11, tmp);
            a64!(self.ops
                ; ldr x10, [x19, #DispatchState::OFFSET_WORKER_SCRATCH_STRIDE]
                ; mul x9, x9, x10
                ; ldr x10, [x19, #DispatchState::OFFSET_WORKER_SCRATCH]
                ; add x9, x9, x10
            );
            mul_imm(self.ops, 11, r.row_bytes as i64);
            a64!(self.ops; sub x9, x9, x11);
            add_imm(self.ops, 9, r.offset as i64);
            str_slot(self.ops, Slot::X, 9, rows.bindings + at);
        }
        mov_imm(self.ops, 9, i64::from(rows.bindings));
        a64!(self.ops; mov x20, sp ; add x20, x20, x9);
    }

    /// Every map's offset at point (lo0, 0, …, 0).
    fn emit_map_init(&mut self) {
        let tmp = self.lay.tmp;
        let maps = self.maps();
        let inits: Vec<(i32, i64, i64)> = maps
            .iter()
            .map(|m| (m.slot, self.stride(m, 0), m.map.offset))
            .collect();
        for (slot, stride0, offset) in inits {
            if self.k.dims.is_empty() || stride0 == 0 {
                mov_imm(self.ops, gpr::X0, offset);
            } else {
                ldr_slot(self.ops, Slot::X, gpr::X0, tmp);
                mul_imm(self.ops, gpr::X0, stride0);
                add_imm(self.ops, gpr::X0, offset);
            }
            str_slot(self.ops, Slot::X, gpr::X0, slot);
        }
    }

    /// Constants never change, so their slots are filled once.
    fn emit_consts(&mut self) -> Result<(), EmitError> {
        for (i, n) in self.k.nodes.iter().enumerate() {
            if let (Node::Const { bits }, true) = (&n.node, self.live[i]) {
                let slot = self.lay.node[i];
                mov_imm(self.ops, gpr::X0, *bits as i64);
                str_slot(self.ops, Slot::X, gpr::X0, slot);
            }
        }
        Ok(())
    }

    /// The loops from dim `d` inwards.
    pub(crate) fn emit_dim(&mut self, d: usize) -> Result<(), EmitError> {
        let p = self.k.parallel_rank as usize;
        if d == p {
            return self.emit_parallel_point();
        }
        if d + 1 == p && self.k.reduction.is_none() {
            if let Some(plan) = self.vplan.take() {
                let result = self.emit_vector_dim(d, &plan);
                self.vplan = Some(plan);
                return result;
            }
        }
        self.emit_loop(d, Self::emit_dim)
    }

    /// At one parallel point: evaluate and store, or reduce and store.
    pub(crate) fn emit_parallel_point(&mut self) -> Result<(), EmitError> {
        match self.k.reduction {
            None => {
                self.emit_nodes()?;
                let result = self.slot(self.k.result)?;
                self.emit_store(result)
            }
            Some(op) => {
                let dtype = self.dtype(self.k.result)?;
                let bits = identity_bits(op, dtype)
                    .ok_or_else(|| self.unsupported(format!("reduce {op} over {dtype}")))?;
                let acc = self.lay.acc;
                mov_imm(self.ops, gpr::X0, bits as i64);
                str_slot(self.ops, Slot::X, gpr::X0, acc);
                self.emit_reduction_dim(self.k.parallel_rank as usize)?;
                self.emit_store(acc)
            }
        }
    }

    /// The reduction loops from dim `d` inwards; the innermost body combines.
    pub(crate) fn emit_reduction_dim(&mut self, d: usize) -> Result<(), EmitError> {
        if d + 1 == self.k.dims.len() {
            if let Some(plan) = self.vplan.take() {
                let result = self.emit_vector_reduction_dim(d, &plan);
                self.vplan = Some(plan);
                return result;
            }
        }
        if d < self.k.dims.len() {
            return self.emit_loop(d, Self::emit_reduction_dim);
        }
        let Some(op) = self.k.reduction else {
            return Err(self.unsupported("a reduction loop without a reduction"));
        };
        self.emit_nodes()?;
        let dtype = self.dtype(self.k.result)?;
        let result = self.slot(self.k.result)?;
        let acc = self.lay.acc;
        self.emit_combine(op, dtype, acc, result)
    }

    /// A pre-tested loop over dim `d` around `body(self, d + 1)`, keeping map offsets.
    pub(crate) fn emit_loop(
        &mut self,
        d: usize,
        body: fn(&mut Self, usize) -> Result<(), EmitError>,
    ) -> Result<(), EmitError> {
        self.emit_counter_start(d);
        self.emit_counting_loop(d, body)
    }

    /// The loop of [`Emitter::emit_loop`] from wherever `counter[d]` already is.
    pub(crate) fn emit_counting_loop(
        &mut self,
        d: usize,
        body: fn(&mut Self, usize) -> Result<(), EmitError>,
    ) -> Result<(), EmitError> {
        let (top, check) = (self.ops.new_dynamic_label(), self.ops.new_dynamic_label());
        a64!(self.ops; b =>check ; =>top);
        body(self, d + 1)?;
        let counter = self.lay.counter[d];
        add_slot(self.ops, counter, 1);
        self.emit_map_step(d, 1);
        a64!(self.ops; =>check);
        self.emit_bound(d, gpr::X1);
        ldr_slot(self.ops, Slot::X, gpr::X0, counter);
        a64!(self.ops; cmp x0, x1 ; b.lo =>top);
        self.emit_map_restore(d);
        Ok(())
    }

    /// `counter[d] = ` its start (this workgroup's `lo0` for dim 0, else 0).
    pub(crate) fn emit_counter_start(&mut self, d: usize) {
        let counter = self.lay.counter[d];
        if d == 0 {
            ldr_slot(self.ops, Slot::X, gpr::X0, self.lay.tmp);
            str_slot(self.ops, Slot::X, gpr::X0, counter);
        } else {
            // Register 31 in a store's data operand is xzr.
            str_slot(self.ops, Slot::X, 31, counter);
        }
    }

    /// `reg = ` dim `d`'s exclusive bound.
    pub(crate) fn emit_bound(&mut self, d: usize, reg: u8) {
        if d == 0 {
            ldr_slot(self.ops, Slot::X, reg, self.lay.hi0);
        } else {
            mov_imm(self.ops, reg, self.k.dims[d] as i64);
        }
    }

    /// Every map offset `+= stride[d] * steps` (clobbers x0 and x16).
    pub(crate) fn emit_map_step(&mut self, d: usize, steps: i64) {
        let steps: Vec<(i32, i64)> = self
            .maps()
            .iter()
            .map(|m| (m.slot, self.stride(m, d).wrapping_mul(steps)))
            .collect();
        for (slot, delta) in steps {
            add_slot(self.ops, slot, delta);
        }
    }

    /// After dim `d`'s loop: every map offset back to its value at `counter[d] = 0`. Dim 0 is
    /// outermost, so nothing needs it restored.
    pub(crate) fn emit_map_restore(&mut self, d: usize) {
        if d > 0 {
            let trip = self.k.dims[d] as i64;
            self.emit_map_step(d, trip.wrapping_neg());
        }
    }

    /// Every live non-constant node, in order, at the current point, then the kept value's
    /// store, if the kernel keeps one ([`crate::kernel::Keep`]).
    pub(crate) fn emit_nodes(&mut self) -> Result<(), EmitError> {
        for i in 0..self.k.nodes.len() {
            if self.live[i] && !matches!(self.k.nodes[i].node, Node::Const { .. }) {
                self.emit_node(i)?;
            }
        }
        if let (Some(keep), Some(map)) = (&self.k.keep, self.lay.keep_map) {
            let value = self.slot(keep.node)?;
            self.emit_element_store(keep.binding, map, value)?;
        }
        Ok(())
    }

    /// Stores the value in frame slot `value` at the store map's current offset.
    pub(crate) fn emit_store(&mut self, value: i32) -> Result<(), EmitError> {
        self.emit_element_store(self.k.store.binding, self.lay.store_map, value)
    }

    /// Stores the value in frame slot `value` into `binding` at the offset in frame slot
    /// `map`.
    fn emit_element_store(&mut self, binding: u32, map: i32, value: i32) -> Result<(), EmitError> {
        let b = binding * DispatchState::BINDING_STRIDE;
        let dtype = self
            .k
            .bindings
            .get(binding as usize)
            .map(|b| b.dtype)
            .ok_or_else(|| self.unsupported("a store to a missing binding"))?;
        ldr_slot(self.ops, Slot::X, gpr::X0, map);
        // check_shape bounds the binding count by MAX_BINDINGS, so `b` < 2048 fits the
        // scaled 8-byte offset field.
        a64!(self.ops; ldr x1, [x20, #b]);
        match dtype.size_bytes() {
            1 => {
                ldr_slot(self.ops, Slot::B, 2, value);
                a64!(self.ops; strb w2, [x1, x0]);
            }
            4 => {
                ldr_slot(self.ops, Slot::W, 2, value);
                a64!(self.ops; str w2, [x1, x0, lsl #2]);
            }
            _ => {
                ldr_slot(self.ops, Slot::X, 2, value);
                a64!(self.ops; str x2, [x1, x0, lsl #3]);
            }
        }
        Ok(())
    }
}
