//! One kernel's code: prologue and epilogue, the loop nest with its running index-map
//! offsets, stores and reductions. The entry checks and the workgroup split are in
//! `prologue.rs`, per-node code in `scalar.rs`, `convert.rs` and the vector files.
//!
//! Shape of the emitted function (`extern "C" fn(state, workgroup) -> u32`):
//!
//! ```text
//! [a streaming transpose with a sub-striped form (`on_line.rs`): when abi_version and
//!   binding_count are as expected and the store binding's address is a multiple of 64,
//!   jump to the form's function, emitted after this one with the same shape]
//! push rbx, r12, r13 ; probe each 4 KiB page of the frame ; sub rsp, frame
//!                                                rsp is 16-byte aligned from here on
//! abi_version != ABI_VERSION or workgroup >= workgroup_count  -> return KERNEL_ABI_MISMATCH
//! binding_count != bindings compiled for, or any binding_lengths[i] shorter than the bytes
//!   binding i is compiled to access, or (with non-temporal stores) a store binding that is
//!   not element-aligned                                      -> return KERNEL_BINDING_MISMATCH
//! rbx = state, r12 = state.bindings, r13 = state.imports
//! dim 0's share [lo0, hi0): the workgroup's contiguous slice of dim 0 when it is parallel;
//!   otherwise workgroup 0 does everything and the others return at once
//! [with worker-scratch rows (`RowScratch`): worker >= worker_count, a worker scratch too
//!   small or a share of too many rows -> return KERNEL_WORKER_MISMATCH; r12 = the frame's
//!   copy of the binding addresses, those bindings pointing into the worker's scratch]
//! map offsets = offset + stride[0] * lo0 ; constants and gather lane offsets into their
//!   slots (once)
//! for each dim, outermost first (pre-tested, so an empty dim runs nothing):
//!     [the dim outside a vector dim with tiled loads: every 16th step, the tile fills]
//!     body ; counter += 1 ; every map offset += its stride for that dim
//!   after the loop, offsets -= stride * trip (dims > 0) so the next outer iteration resumes
//! at the parallel point: evaluate nodes and store, or init accumulator, loop over the
//!   reduction dims combining, then store
//! return KERNEL_OK
//! ```
//!
//! Offsets are kept with wrapping 64-bit arithmetic: every value used for an access is an exact
//! in-range offset (validation proved it), and intermediate values agree with it modulo 2^64.

use accy_artifact::abi::{
    DispatchState, ABI_VERSION, KERNEL_ABI_MISMATCH, KERNEL_BINDING_MISMATCH,
    KERNEL_WORKER_MISMATCH,
};
use accy_artifact::Blocking;
use accy_ir::DType;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use super::asm::{gpr, mov_imm, mul_imm, x64, Asm};
use super::vector::{self, VectorPlan};
use super::X64Tier;
use crate::emit::frame::{Layout, MapRef, Maps};
use crate::emit::{check_shape, identity_bits};
use crate::kernel::{LoopKernel, Node, NodeId};
use crate::target::EmitError;

/// Everything the per-node emitters need while one kernel is emitted.
pub(crate) struct Emitter<'a> {
    pub ops: &'a mut Asm,
    pub k: &'a LoopKernel,
    pub lay: &'a Layout,
    pub tier: X64Tier,
    /// Nodes the result depends on; the others are never evaluated.
    pub live: Vec<bool>,
    /// The vector plan, when the innermost parallel dim is vectorized.
    pub vplan: Option<VectorPlan>,
    /// While emitting an AVX-512 masked tail: vector loads and stores use mask `k1`.
    pub masked: bool,
    /// Frame slots held in registers while a vector loop runs (see `pin.rs`).
    pub pinned: Vec<(i32, u8)>,
    /// Whether the vector loop's whole-vector stores are non-temporal
    /// ([`crate::streams_stores`]); each run of the inner loop first moves on to a store
    /// address aligned to a vector, as those instructions require (see
    /// `emit_store_alignment_head`), except in a loop that reads tiles, whose stores check
    /// their own address (`emit_tile_run_store`, `emit_tile_run_zstore`).
    pub stream: bool,
    /// Whether tile fills prefetch the next block's lines for every group of rows (`tile.rs`),
    /// or only for groups whose first row starts off a 64-byte line: the latter where the
    /// caches' [`Blocking::skip_scattered_prefetch`] says the CPU is slower with them.
    pub fill_prefetch_always: bool,
}

/// Stack page size the frame probes step by (the smallest page size of x86-64 hosts).
const PAGE: i32 = 4096;

/// Emits `k` for `tier` at the assembler's current position; with `caches`, its stores are
/// non-temporal where [`crate::streams_stores`] says so for those caches, and its tile fills
/// prefetch only rows off a line where they say [`Blocking::skip_scattered_prefetch`]. A
/// streaming transpose may get a second function after the first, which its entry jumps to
/// when the destination starts on a 64-byte line (`on_line.rs`).
pub(crate) fn emit_kernel(
    ops: &mut Asm,
    k: &LoopKernel,
    tier: X64Tier,
    reassociate: bool,
    caches: Option<&Blocking>,
) -> Result<(), EmitError> {
    let Some(form) = caches.and_then(|c| super::on_line::form(k, tier, reassociate, c)) else {
        return emit_loop_function(ops, k, tier, reassociate, caches, None);
    };
    let on_line = ops.new_dynamic_label();
    super::on_line::emit_branch(ops, k, on_line);
    emit_loop_function(ops, k, tier, reassociate, caches, None)?;
    x64!(ops; =>on_line);
    emit_loop_function(ops, &form, tier, reassociate, caches, Some(true))
}

/// One function for `k`, with non-temporal stores where `stream` says (`None`: where
/// [`streams`] does).
fn emit_loop_function(
    ops: &mut Asm,
    k: &LoopKernel,
    tier: X64Tier,
    reassociate: bool,
    caches: Option<&Blocking>,
    stream: Option<bool>,
) -> Result<(), EmitError> {
    check_shape(k, tier.name())?;
    let live = k.live_nodes();
    let vplan = vector_plan(k, &live, tier, reassociate);
    let stream = stream.unwrap_or_else(|| streams(k, vplan.as_ref(), caches));
    let layout = Layout::new(k, vplan.as_ref().map_or(0, |p| p.slots), tier.name())?;
    let mut e = Emitter {
        ops,
        k,
        lay: &layout,
        tier,
        live,
        vplan,
        masked: false,
        pinned: Vec::new(),
        stream,
        fill_prefetch_always: !caches.is_some_and(|c| c.skip_scattered_prefetch),
    };
    e.emit_function()
}

/// The vector plan of `k` on `tier`, if its innermost parallel dim is vectorized.
pub(crate) fn vector_plan(
    k: &LoopKernel,
    live: &[bool],
    tier: X64Tier,
    reassociate: bool,
) -> Option<VectorPlan> {
    if tier.has_avx2() {
        vector::plan(k, live, reassociate, tier == X64Tier::Avx512)
    } else {
        None
    }
}

/// Whether the code for `k` with vector plan `vplan` uses non-temporal stores: only the
/// vector loop has them (with tiles, only the stores that find an aligned address).
fn streams(k: &LoopKernel, vplan: Option<&VectorPlan>, caches: Option<&Blocking>) -> bool {
    vplan.is_some() && caches.is_some_and(|c| crate::streams_stores(k, c))
}

/// Whether [`emit_kernel`] with `caches` gives `k` non-temporal stores on `tier`
/// ([`crate::Target::streams_stores`]).
pub(crate) fn uses_non_temporal_stores(
    k: &LoopKernel,
    tier: X64Tier,
    reassociate: bool,
    caches: &Blocking,
) -> bool {
    if check_shape(k, tier.name()).is_err() {
        return false;
    }
    let live = k.live_nodes();
    streams(
        k,
        vector_plan(k, &live, tier, reassociate).as_ref(),
        Some(caches),
    )
}

impl<'a> Emitter<'a> {
    /// An [`EmitError::Unsupported`] for this kernel.
    pub(crate) fn unsupported(&self, what: impl Into<String>) -> EmitError {
        EmitError::Unsupported {
            kernel: self.k.name.clone(),
            what: what.into(),
            target: self.tier.name(),
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
    pub(crate) fn maps(&self) -> Maps<'a> {
        self.lay.maps(self.k, &self.live)
    }

    /// The stride of `m` along dim `d`.
    pub(crate) fn stride(&self, m: &MapRef<'_>, d: usize) -> i64 {
        m.stride(d, self.k.parallel_rank)
    }

    fn emit_function(&mut self) -> Result<(), EmitError> {
        let size = self.lay.size;
        let (mismatch, bad_bindings, bad_worker, done, exit) = (
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
            self.ops.new_dynamic_label(),
        );
        x64!(self.ops; push rbx ; push r12 ; push r13);
        // Touch every page of the frame, nearest first, before moving rsp past it: a frame
        // larger than a page could otherwise step over the thread's stack guard page and
        // corrupt memory instead of faulting there.
        let mut probe = PAGE;
        while probe < size {
            x64!(self.ops; mov eax, DWORD [rsp - probe]);
            probe += PAGE;
        }
        x64!(self.ops
            ; sub rsp, size
            ; mov rbx, rdi
        );
        if let Some(rows) = self.lay.rows {
            // edx goes in the binding checks and the share's divisions.
            x64!(self.ops; mov DWORD [rsp + rows.worker], edx);
        }
        x64!(self.ops
            ; cmp DWORD [rdi + DispatchState::OFFSET_ABI_VERSION as i32], ABI_VERSION as i32
            ; jne =>mismatch
            ; cmp esi, DWORD [rdi + DispatchState::OFFSET_WORKGROUP_COUNT as i32]
            ; jae =>mismatch
            ; mov r12, QWORD [rdi + DispatchState::OFFSET_BINDINGS as i32]
            ; mov r13, QWORD [rdi + DispatchState::OFFSET_IMPORTS as i32]
        );
        self.emit_binding_checks(bad_bindings);
        self.emit_share(done);
        self.emit_row_scratch(bad_worker);
        self.emit_map_init();
        self.emit_consts()?;
        self.emit_dim(0)?;
        if self.stream {
            // Non-temporal stores are weakly ordered: make them visible before the
            // dispatch reports this workgroup done.
            x64!(self.ops; sfence);
        }
        x64!(self.ops
            ; =>done
            ; xor eax, eax
            ; jmp =>exit
            ; =>bad_bindings
            ; mov eax, KERNEL_BINDING_MISMATCH as i32
            ; jmp =>exit
        );
        if self.lay.rows.is_some() {
            x64!(self.ops
                ; =>bad_worker
                ; mov eax, KERNEL_WORKER_MISMATCH as i32
                ; jmp =>exit
            );
        }
        x64!(self.ops
            ; =>mismatch
            ; mov eax, KERNEL_ABI_MISMATCH as i32
            ; =>exit
        );
        if self.vplan.is_some() {
            x64!(self.ops; vzeroupper);
        }
        x64!(self.ops
            ; add rsp, size
            ; pop r13 ; pop r12 ; pop rbx
            ; ret
        );
        Ok(())
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
                mov_imm(self.ops, gpr::RAX, offset);
            } else {
                x64!(self.ops; mov rax, QWORD [rsp + tmp]);
                mul_imm(self.ops, gpr::RAX, stride0);
                super::asm::add_imm(self.ops, gpr::RAX, offset);
            }
            x64!(self.ops; mov QWORD [rsp + slot], rax);
        }
    }

    /// Constants never change, so their slots are filled once.
    fn emit_consts(&mut self) -> Result<(), EmitError> {
        for (i, n) in self.k.nodes.iter().enumerate() {
            if let (Node::Const { bits }, true) = (&n.node, self.live[i]) {
                let slot = self.lay.node[i];
                mov_imm(self.ops, gpr::RAX, *bits as i64);
                x64!(self.ops; mov QWORD [rsp + slot], rax);
            }
        }
        self.emit_gather_offsets();
        Ok(())
    }

    /// Each gathered load's lane offsets (`lane * stride` elements, a dword per lane) into its
    /// slot; the plan admitted only strides whose offsets fit.
    fn emit_gather_offsets(&mut self) {
        let Some(plan) = &self.vplan else {
            return;
        };
        let lanes = plan.lanes();
        let inner = self.k.dims.len().wrapping_sub(1);
        let mut writes = Vec::new();
        for (i, slot) in plan.gather_slot.iter().enumerate() {
            if let (Some(slot), Node::Load { map, .. }) = (slot, &self.k.nodes[i].node) {
                let stride = map.strides.get(inner).copied().unwrap_or(0);
                let at = self.lay.vec_slot(*slot);
                for lane in 0..lanes {
                    writes.push((at + 4 * lane as i32, (lane * stride) as i32));
                }
            }
        }
        for (at, offset) in writes {
            x64!(self.ops; mov DWORD [rsp + at], offset);
        }
    }

    /// The loops from dim `d` inwards.
    pub(crate) fn emit_dim(&mut self, d: usize) -> Result<(), EmitError> {
        let p = self.k.parallel_rank as usize;
        if d == p {
            return self.emit_parallel_point();
        }
        if self.vplan.is_some() && d + 1 == p && self.k.reduction.is_none() {
            return self.emit_vector_dim(d);
        }
        if d + 2 == p && self.vplan.as_ref().is_some_and(VectorPlan::tiles) {
            return self.emit_loop(d, Self::emit_tiled_step);
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
                mov_imm(self.ops, gpr::RAX, bits as i64);
                x64!(self.ops; mov QWORD [rsp + acc], rax);
                self.emit_reduction_dim(self.k.parallel_rank as usize)?;
                self.emit_store(acc)
            }
        }
    }

    /// The reduction loops from dim `d` inwards; the innermost body combines.
    pub(crate) fn emit_reduction_dim(&mut self, d: usize) -> Result<(), EmitError> {
        if self.vplan.is_some() && d + 1 == self.k.dims.len() {
            return self.emit_vector_reduction_dim(d);
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
        let (top, check) = (self.ops.new_dynamic_label(), self.ops.new_dynamic_label());
        self.emit_counter_start(d);
        x64!(self.ops; jmp =>check ; =>top);
        body(self, d + 1)?;
        let counter = self.lay.counter[d];
        x64!(self.ops; add QWORD [rsp + counter], 1);
        self.emit_map_step(d, 1);
        x64!(self.ops; =>check);
        self.emit_bound(d, gpr::RCX);
        x64!(self.ops; cmp QWORD [rsp + counter], rcx ; jb =>top);
        self.emit_map_restore(d);
        Ok(())
    }

    /// `counter[d] = ` its start (this workgroup's `lo0` for dim 0, else 0).
    pub(crate) fn emit_counter_start(&mut self, d: usize) {
        let counter = self.lay.counter[d];
        if d == 0 {
            let tmp = self.lay.tmp;
            x64!(self.ops; mov rax, QWORD [rsp + tmp] ; mov QWORD [rsp + counter], rax);
        } else {
            x64!(self.ops; mov QWORD [rsp + counter], 0);
        }
    }

    /// `reg = ` dim `d`'s exclusive bound.
    pub(crate) fn emit_bound(&mut self, d: usize, reg: u8) {
        if d == 0 {
            let hi0 = self.lay.hi0;
            x64!(self.ops; mov Rq(reg), QWORD [rsp + hi0]);
        } else {
            mov_imm(self.ops, reg, self.k.dims[d] as i64);
        }
    }

    /// Every map offset `+= stride[d] * rcx` for a run-time step count in rcx (clobbers rax
    /// and rdx).
    pub(crate) fn emit_map_step_rcx(&mut self, d: usize) {
        let steps: Vec<(i32, i64)> = self
            .maps()
            .iter()
            .map(|m| (m.slot, self.stride(m, d)))
            .filter(|&(_, s)| s != 0)
            .collect();
        for (slot, stride) in steps {
            x64!(self.ops; mov rax, rcx);
            mul_imm(self.ops, gpr::RAX, stride);
            x64!(self.ops; add QWORD [rsp + slot], rax);
        }
    }

    /// Every map offset `+= stride[d] * steps` (clobbers rax).
    pub(crate) fn emit_map_step(&mut self, d: usize, steps: i64) {
        let steps: Vec<(i32, i64)> = self
            .maps()
            .iter()
            .map(|m| (m.slot, self.stride(m, d).wrapping_mul(steps)))
            .collect();
        for (slot, delta) in steps {
            self.add_to_slot(slot, delta);
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
        let b = binding as i32 * DispatchState::BINDING_STRIDE as i32;
        let dtype = self
            .k
            .bindings
            .get(binding as usize)
            .map(|b| b.dtype)
            .ok_or_else(|| self.unsupported("a store to a missing binding"))?;
        x64!(self.ops; mov rax, QWORD [rsp + map] ; mov rcx, QWORD [r12 + b]);
        match dtype.size_bytes() {
            1 => x64!(self.ops; mov dl, BYTE [rsp + value] ; mov BYTE [rcx + rax], dl),
            4 => x64!(self.ops; mov edx, DWORD [rsp + value] ; mov DWORD [rcx + rax * 4], edx),
            _ => x64!(self.ops; mov rdx, QWORD [rsp + value] ; mov QWORD [rcx + rax * 8], rdx),
        }
        Ok(())
    }
}
