//! One contraction kernel's code on AArch64: the function around the microkernels
//! (`micro.rs`), following the schedule in `crate::emit::contraction` — the same steps as
//! `x64/gemm.rs`.
//!
//! Shape of the emitted function (`extern "C" fn(state: x0, workgroup: w1, worker: w2) -> w0`):
//!
//! ```text
//! stp x29, x30 ; save x19–x23, d8–d15 ; sub sp, frame      sp is 16-byte aligned throughout
//! ABI version, workgroup < count, worker < worker_count, worker scratch stride, binding count
//!   and lengths                                          -> the ABI's mismatch statuses
//! x19 = state ; x20 = this worker's scratch: the buffer T
//! workgroup -> (b, tile row, tile column) -> m0, n0, rows, cols (frame)
//! for each block of k (tile_k steps; the first starts the sums at 0, the others reload them
//! from T; one block when k fits):
//!     for each full row panel, then the partial one:
//!         x21 = A at (b, m, k0) ; T_ROW = the panel's rows of T
//!         for each column panel: x22 = B panel at k0, x23 = its columns in T ; microkernel
//!             (in the last block of a direct store, x2 = its columns in the output, where
//!             the microkernel stores instead)
//!         after the last block, unless the store is direct: bl the epilogue kernel for
//!             (rows, cols) with bindings at the panel origin
//! return its status, or KERNEL_OK
//! epilogue kernels: complete loop-kernel functions (`kernel.rs`), reached by bl
//! ```

use accy_artifact::abi::{
    DispatchState, ABI_VERSION, KERNEL_ABI_MISMATCH, KERNEL_BINDING_MISMATCH,
    KERNEL_WORKER_MISMATCH, MAX_BINDINGS,
};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use super::asm::{a64, add_imm, gpr, ldr_slot, mov_imm, mul_imm, str_slot, sub_sp, Asm, Slot};
use super::micro::Micro;
use super::NAME;
use crate::emit::contraction::frame::*;
use crate::emit::contraction::{k_passes, schedule, EpilogueCall, KBlock, Pass, Reloc, Schedule};
use crate::kernel::ContractionKernel;
use crate::target::EmitError;

/// The current block of k, in the loop over the blocks after the first (after the shared frame
/// slots, `frame`; offsets from sp after the frame is allocated).
const K_BLOCK: i32 = SLOTS_END;
/// The address of the current row panel's rows in the buffer `T`.
const T_ROW: i32 = K_BLOCK + 8;
/// Frame size: the slots, rounded to keep sp 16-byte aligned.
const FRAME: u32 = ((T_ROW + 8 + 15) / 16 * 16) as u32;
/// The register save area below the frame: x29/x30, x19–x23, d8–d15.
const SAVES: i32 = 128;

/// Emits `k`; returns the bytes of worker scratch it needs.
pub(crate) fn emit_contraction(
    ops: &mut Asm,
    k: &ContractionKernel,
    reassociate: bool,
) -> Result<u64, EmitError> {
    let micro = Micro::for_dtype(k.dtype, reassociate);
    let sched = schedule(k, micro.mr, micro.nr(), NAME, true)?;
    let bad = |what: String| EmitError::Unsupported {
        kernel: k.name.clone(),
        what,
        target: NAME,
    };
    if k.bindings.len() > MAX_BINDINGS {
        return Err(bad(format!("{} bindings", k.bindings.len())));
    }
    if let Some(e) = sched
        .epilogues
        .iter()
        .find(|e| e.kernel.bindings.len() > MAX_EPILOGUE_BINDINGS)
    {
        return Err(bad(format!(
            "an epilogue with {} bindings",
            e.kernel.bindings.len()
        )));
    }
    let labels: Vec<DynamicLabel> = sched
        .epilogues
        .iter()
        .map(|_| ops.new_dynamic_label())
        .collect();
    let exit = ops.new_dynamic_label();
    let mut g = Gemm {
        ops,
        k,
        sched: &sched,
        micro,
        labels: &labels,
        exit,
        bad: &bad,
    };
    g.function()?;
    for (e, &label) in sched.epilogues.iter().zip(&labels) {
        a64!(g.ops; =>label);
        super::kernel::emit_kernel(g.ops, &e.kernel, reassociate)?;
    }
    Ok(sched.worker_scratch)
}

struct Gemm<'a> {
    ops: &'a mut Asm,
    k: &'a ContractionKernel,
    sched: &'a Schedule,
    micro: Micro,
    labels: &'a [DynamicLabel],
    /// Where a status in w0 is returned from (the register restore).
    exit: DynamicLabel,
    bad: &'a dyn Fn(String) -> EmitError,
}

impl Gemm<'_> {
    /// `value` as a byte offset the microkernel can use, or an error naming `what`.
    fn bytes(&self, value: i128, what: &str) -> Result<i64, EmitError> {
        i64::try_from(value).map_err(|_| (self.bad)(format!("{what} of {value} bytes")))
    }

    fn function(&mut self) -> Result<(), EmitError> {
        let [mismatch, bad_bindings, bad_worker] = [(); 3].map(|_| self.ops.new_dynamic_label());
        let exit = self.exit;
        a64!(self.ops
            ; stp x29, x30, [sp, #-128]!
            ; mov x29, sp
            ; stp x19, x20, [sp, #16]
            ; stp x21, x22, [sp, #32]
            ; str x23, [sp, #48]
            ; stp d8, d9, [sp, #64]
            ; stp d10, d11, [sp, #80]
            ; stp d12, d13, [sp, #96]
            ; stp d14, d15, [sp, #112]
        );
        sub_sp(self.ops, FRAME);
        a64!(self.ops
            ; mov x19, x0
            ; ldr w9, [x0, #DispatchState::OFFSET_ABI_VERSION]
            ; cmp w9, #ABI_VERSION
            ; b.ne =>mismatch
            ; ldr w9, [x0, #DispatchState::OFFSET_WORKGROUP_COUNT]
            ; cmp w1, w9
            ; b.hs =>mismatch
            ; ldr w9, [x0, #DispatchState::OFFSET_WORKER_COUNT]
            ; cmp w2, w9
            ; b.hs =>bad_worker
            ; ldr x9, [x0, #DispatchState::OFFSET_WORKER_SCRATCH_STRIDE]
        );
        mov_imm(self.ops, 10, self.sched.worker_scratch as i64);
        // MAX_BINDINGS (256) fits `cmp`'s immediate; lengths' offsets the scaled field.
        let count = self.k.bindings.len() as u32;
        a64!(self.ops
            ; cmp x9, x10
            ; b.lo =>bad_worker
            ; ldr w9, [x19, #DispatchState::OFFSET_BINDING_COUNT]
            ; cmp w9, #count
            ; b.ne =>bad_bindings
            ; ldr x10, [x19, #DispatchState::OFFSET_BINDING_LENGTHS]
        );
        for (i, b) in self.k.bindings.iter().enumerate() {
            // Validation proved the byte size fits u64; compare as unsigned.
            mov_imm(
                self.ops,
                11,
                b.elements.wrapping_mul(b.dtype.size_bytes()) as i64,
            );
            let at = i as u32 * 8;
            a64!(self.ops; ldr x12, [x10, #at] ; cmp x12, x11 ; b.lo =>bad_bindings);
        }
        // x20 = worker scratch + worker * stride: this worker's buffer T.
        a64!(self.ops
            ; ldr x9, [x19, #DispatchState::OFFSET_WORKER_SCRATCH_STRIDE]
            ; mov w10, w2
            ; mul x9, x9, x10
            ; ldr x10, [x19, #DispatchState::OFFSET_WORKER_SCRATCH]
            ; add x20, x9, x10
        );
        self.tile();
        self.epilogue_state();
        self.k_blocks()?;
        a64!(self.ops
            ; mov w0, wzr
            ; b =>exit
            ; =>bad_bindings
            ; mov w0, #KERNEL_BINDING_MISMATCH
            ; b =>exit
            ; =>bad_worker
            ; mov w0, #KERNEL_WORKER_MISMATCH
            ; b =>exit
            ; =>mismatch
            ; mov w0, #KERNEL_ABI_MISMATCH
            ; =>exit
            ; mov sp, x29
            ; ldp d14, d15, [sp, #112]
            ; ldp d12, d13, [sp, #96]
            ; ldp d10, d11, [sp, #80]
            ; ldp d8, d9, [sp, #64]
            ; ldr x23, [sp, #48]
            ; ldp x21, x22, [sp, #32]
            ; ldp x19, x20, [sp, #16]
            ; ldp x29, x30, [sp], #SAVES
            ; ret
        );
        Ok(())
    }

    /// The workgroup (w1) becomes b, m0, n0, rows and cols in the frame.
    fn tile(&mut self) {
        let (tiles_m, tiles_n) = self.sched.tiles;
        let k = self.k;
        // b = wg / (tiles_m * tiles_n); r = wg % (tiles_m * tiles_n);
        // m0 = (r / tiles_n) * tile_m; n0 = (r % tiles_n) * tile_n.
        let per_batch = tiles_m.max(1).saturating_mul(tiles_n.max(1));
        a64!(self.ops; mov w9, w1);
        mov_imm(self.ops, 10, per_batch as i64);
        a64!(self.ops; udiv x11, x9, x10 ; msub x12, x11, x10, x9);
        str_slot(self.ops, Slot::X, 11, B_SLOT);
        mov_imm(self.ops, 10, tiles_n.max(1) as i64);
        a64!(self.ops; udiv x13, x12, x10 ; msub x14, x13, x10, x12);
        mov_imm(self.ops, 10, k.tile_m as i64);
        a64!(self.ops; mul x13, x13, x10);
        str_slot(self.ops, Slot::X, 13, M0);
        mov_imm(self.ops, 10, k.tile_n as i64);
        a64!(self.ops; mul x14, x14, x10);
        str_slot(self.ops, Slot::X, 14, N0);
        // rows = min(tile_m, m - m0), cols = min(tile_n, n - n0).
        for (origin, extent, tile, out) in [(M0, k.m, k.tile_m, ROWS), (N0, k.n, k.tile_n, COLS)] {
            ldr_slot(self.ops, Slot::X, 9, origin);
            mov_imm(self.ops, 10, extent as i64);
            mov_imm(self.ops, 11, tile as i64);
            a64!(self.ops
                ; sub x10, x10, x9
                ; cmp x10, x11
                ; csel x10, x11, x10, hi
            );
            str_slot(self.ops, Slot::X, 10, out);
        }
    }

    /// The parts of the epilogue's `DispatchState` that never change.
    fn epilogue_state(&mut self) {
        let s = |o: u32| STATE + o as i32;
        mov_imm(self.ops, 9, i64::from(ABI_VERSION));
        str_slot(self.ops, Slot::W, 9, s(DispatchState::OFFSET_ABI_VERSION));
        a64!(self.ops; add x9, sp, #POINTERS as u32);
        str_slot(self.ops, Slot::X, 9, s(DispatchState::OFFSET_BINDINGS));
        a64!(self.ops; add x9, sp, #LENGTHS as u32);
        str_slot(
            self.ops,
            Slot::X,
            9,
            s(DispatchState::OFFSET_BINDING_LENGTHS),
        );
        for (kind, field) in [
            (Slot::X, DispatchState::OFFSET_SCALARS),
            (Slot::W, DispatchState::OFFSET_SCALAR_COUNT),
            (Slot::X, DispatchState::OFFSET_WORKER_SCRATCH),
            (Slot::X, DispatchState::OFFSET_WORKER_SCRATCH_STRIDE),
            (Slot::W, DispatchState::OFFSET_RESERVED),
        ] {
            str_slot(self.ops, kind, 31, s(field));
        }
        a64!(self.ops; mov w9, #1);
        str_slot(
            self.ops,
            Slot::W,
            9,
            s(DispatchState::OFFSET_WORKGROUP_COUNT),
        );
        str_slot(self.ops, Slot::W, 9, s(DispatchState::OFFSET_WORKER_COUNT));
        a64!(self.ops; ldr x9, [x19, #DispatchState::OFFSET_IMPORTS]);
        str_slot(self.ops, Slot::X, 9, s(DispatchState::OFFSET_IMPORTS));
    }

    /// The blocks of k, outermost, as `k_passes` lays them out: the first starts the sums at
    /// 0, the others reload them from the buffer, and the last calls the epilogue for each row
    /// panel (or, for a direct store, its microkernels store the output).
    fn k_blocks(&mut self) -> Result<(), EmitError> {
        let passes = k_passes(self.k, self.sched.direct.is_some());
        self.row_panels(passes.first)?;
        if let Some((pass, end)) = passes.looped {
            let top = self.ops.new_dynamic_label();
            mov_imm(self.ops, 9, 1);
            str_slot(self.ops, Slot::X, 9, K_BLOCK);
            a64!(self.ops; =>top);
            self.row_panels(pass)?;
            ldr_slot(self.ops, Slot::X, 9, K_BLOCK);
            a64!(self.ops; add x9, x9, #1);
            str_slot(self.ops, Slot::X, 9, K_BLOCK);
            mov_imm(self.ops, 10, end as i64);
            a64!(self.ops; cmp x9, x10 ; b.lo =>top);
        }
        if let Some(pass) = passes.rest {
            self.row_panels(pass)?;
        }
        Ok(())
    }

    /// Every full row panel of the tile, then the partial one if the tile has it, for one
    /// block of k.
    fn row_panels(&mut self, pass: Pass) -> Result<(), EmitError> {
        let mr = self.sched.mr as i64;
        let end = self.ops.new_dynamic_label();
        ldr_slot(self.ops, Slot::X, 9, M0);
        str_slot(self.ops, Slot::X, 9, M);
        if self.sched.full_panels {
            // m_end = m0 + rows - rows % mr (the full panels).
            let [top, check] = [(); 2].map(|_| self.ops.new_dynamic_label());
            ldr_slot(self.ops, Slot::X, 10, ROWS);
            mov_imm(self.ops, 11, mr);
            a64!(self.ops; udiv x12, x10, x11 ; mul x12, x12, x11 ; add x12, x12, x9);
            str_slot(self.ops, Slot::X, 12, M_END);
            a64!(self.ops; b =>check ; =>top);
            self.row_panel(self.sched.mr, pass)?;
            ldr_slot(self.ops, Slot::X, 9, M);
            add_imm(self.ops, 9, mr);
            str_slot(self.ops, Slot::X, 9, M);
            a64!(self.ops; =>check);
            ldr_slot(self.ops, Slot::X, 9, M);
            ldr_slot(self.ops, Slot::X, 10, M_END);
            a64!(self.ops; cmp x9, x10 ; b.lo =>top);
        }
        if self.sched.rem != 0 {
            // The partial panel: only the last tile along m has one, of `rem` rows.
            ldr_slot(self.ops, Slot::X, 10, M0);
            ldr_slot(self.ops, Slot::X, 11, ROWS);
            a64!(self.ops; add x10, x10, x11 ; cmp x9, x10 ; b.hs =>end);
            self.row_panel(self.sched.rem, pass)?;
        }
        a64!(self.ops; =>end);
        Ok(())
    }

    /// `X(reg)` += the byte offset of `block` along k for a step of `step` bytes (x9 and the
    /// immediate scratch x16 clobbered).
    fn add_block_offset(&mut self, reg: u8, step: i64, block: KBlock) -> Result<(), EmitError> {
        let bytes = self.bytes(i128::from(step) * i128::from(self.k.tile_k), "a block of k")?;
        match block {
            KBlock::At(0) => {}
            KBlock::At(b) => {
                let at = self.bytes(i128::from(bytes) * i128::from(b), "a block of k")?;
                mov_imm(self.ops, 9, at);
                a64!(self.ops; add X(reg), X(reg), x9);
            }
            KBlock::Current => {
                ldr_slot(self.ops, Slot::X, 9, K_BLOCK);
                mul_imm(self.ops, 9, bytes);
                a64!(self.ops; add X(reg), X(reg), x9);
            }
        }
        Ok(())
    }

    /// One row panel of `rows` rows at row `M` of the frame, for one block of k: its rows of
    /// the buffer found (`T_ROW`), then every column panel, then the epilogue call as the pass
    /// says.
    fn row_panel(&mut self, rows: u64, pass: Pass) -> Result<(), EmitError> {
        let k = self.k;
        let size = i128::from(k.dtype.size_bytes() as i32);
        let ls = |d: usize| i128::from(k.lhs.map.strides.get(d).copied().unwrap_or(0));
        let rs = |d: usize| i128::from(k.rhs.map.strides.get(d).copied().unwrap_or(0));
        let lda = self.bytes(ls(1) * size, "a row stride of A")?;
        let ak = self.bytes(ls(2) * size, "a k stride of A")?;
        let nr = self.sched.nr as i64;
        let bk = match k.rhs.panels {
            Some(w) => self.bytes(i128::from(w as i64) * size, "a panel row")?,
            None => self.bytes(rs(1) * size, "a k stride of B")?,
        };
        let t_row = self.bytes(i128::from(self.sched.t_ld as i64) * size, "a buffer row")?;
        // x21 = A at (b, m, k0).
        self.element_address(
            21,
            k.lhs.binding,
            k.lhs.map.offset,
            [ls(0), ls(1), 0],
            Some(M),
        );
        self.add_block_offset(21, ak, pass.block)?;
        // T_ROW = x20 + (m - m0) · t_ld · size when the buffer holds the whole tile.
        if self.sched.t_rows > self.sched.mr {
            ldr_slot(self.ops, Slot::X, 9, M);
            ldr_slot(self.ops, Slot::X, 10, M0);
            a64!(self.ops; sub x9, x9, x10);
            mul_imm(self.ops, 9, t_row);
            a64!(self.ops; add x9, x9, x20);
            str_slot(self.ops, Slot::X, 9, T_ROW);
        } else {
            str_slot(self.ops, Slot::X, 20, T_ROW);
        }
        // panels = ceil(cols / nr); panel = 0.
        ldr_slot(self.ops, Slot::X, 9, COLS);
        add_imm(self.ops, 9, nr - 1);
        mov_imm(self.ops, 10, nr);
        a64!(self.ops; udiv x9, x9, x10);
        str_slot(self.ops, Slot::X, 9, PANELS);
        str_slot(self.ops, Slot::X, 31, PANEL);
        let [top, check] = [(); 2].map(|_| self.ops.new_dynamic_label());
        a64!(self.ops; b =>check ; =>top);
        // x22 = B's panel: panelled, panel (n0 / nr + panel) of batch b; else element
        // (b, 0, n0 + panel * nr).
        self.element_address(22, k.rhs.binding, k.rhs.map.offset, [rs(0), 0, 0], None);
        match k.rhs.panels {
            Some(w) => {
                let panel_bytes = self.bytes(
                    i128::from(k.k as i64) * i128::from(w as i64) * size,
                    "a panel",
                )?;
                ldr_slot(self.ops, Slot::X, 9, N0);
                mov_imm(self.ops, 10, w as i64);
                a64!(self.ops; udiv x9, x9, x10);
                ldr_slot(self.ops, Slot::X, 10, PANEL);
                a64!(self.ops; add x9, x9, x10);
                mul_imm(self.ops, 9, panel_bytes);
                a64!(self.ops; add x22, x22, x9);
            }
            None => {
                ldr_slot(self.ops, Slot::X, 9, PANEL);
                mul_imm(self.ops, 9, nr);
                ldr_slot(self.ops, Slot::X, 10, N0);
                a64!(self.ops; add x9, x9, x10);
                mul_imm(
                    self.ops,
                    9,
                    self.bytes(rs(2) * size, "a column stride of B")?,
                );
                a64!(self.ops; add x22, x22, x9);
            }
        }
        self.add_block_offset(22, bk, pass.block)?;
        // x23 = the panel's columns in the row panel's rows of the buffer.
        ldr_slot(self.ops, Slot::X, 9, PANEL);
        mul_imm(self.ops, 9, (i128::from(nr) * size) as i64);
        ldr_slot(self.ops, Slot::X, 10, T_ROW);
        a64!(self.ops; add x23, x10, x9);
        // The last block of a direct store writes the output at (b, m, n0 + panel · nr): x2,
        // rows `strides[1]` elements apart.
        let out = match (self.sched.direct, pass.epilogue) {
            (Some(d), EpilogueCall::Always) => {
                let s = d.strides.map(i128::from);
                self.element_address(2, d.binding, d.offset, s, Some(M));
                ldr_slot(self.ops, Slot::X, 9, PANEL);
                mul_imm(self.ops, 9, (i128::from(nr) * size) as i64);
                a64!(self.ops; add x2, x2, x9);
                Some((2, self.bytes(s[1] * size, "an output row")?))
            }
            _ => None,
        };
        self.micro.emit(
            self.ops, rows, pass.k_len, pass.init, lda, ak, bk, t_row, out,
        );
        ldr_slot(self.ops, Slot::X, 9, PANEL);
        a64!(self.ops; add x9, x9, #1);
        str_slot(self.ops, Slot::X, 9, PANEL);
        a64!(self.ops; =>check);
        ldr_slot(self.ops, Slot::X, 9, PANEL);
        ldr_slot(self.ops, Slot::X, 10, PANELS);
        a64!(self.ops; cmp x9, x10 ; b.lo =>top);
        match pass.epilogue {
            EpilogueCall::Never => Ok(()),
            // The microkernels stored the output themselves.
            EpilogueCall::Always if self.sched.direct.is_some() => Ok(()),
            EpilogueCall::Always => self.call_epilogue(rows),
            EpilogueCall::InBlock(last) => {
                let skip = self.ops.new_dynamic_label();
                ldr_slot(self.ops, Slot::X, 9, K_BLOCK);
                mov_imm(self.ops, 10, last as i64);
                a64!(self.ops; cmp x9, x10 ; b.ne =>skip);
                self.call_epilogue(rows)?;
                a64!(self.ops; =>skip);
                Ok(())
            }
        }
    }

    /// `reg = bindings[binding] + size · (offset + s0·b + s1·m + s2·n0)` where `m` is the frame
    /// slot `m_slot` (or 0) — the byte address of an element at the current origin. Clobbers
    /// x0, x1 and x16.
    fn element_address(
        &mut self,
        reg: u8,
        binding: u32,
        offset: i64,
        strides: [i128; 3],
        m_slot: Option<i32>,
    ) {
        let size = self
            .k
            .bindings
            .get(binding as usize)
            .map_or(1, |b| b.dtype.size_bytes() as i64);
        mov_imm(self.ops, gpr::X1, offset);
        for (stride, slot) in [
            (strides[0], Some(B_SLOT)),
            (strides[1], m_slot),
            (strides[2], Some(N0)),
        ] {
            if let (Some(slot), true) = (slot, stride != 0) {
                ldr_slot(self.ops, Slot::X, gpr::X0, slot);
                mul_imm(self.ops, gpr::X0, i64::try_from(stride).unwrap_or(i64::MAX));
                a64!(self.ops; add x1, x1, x0);
            }
        }
        mul_imm(self.ops, gpr::X1, size);
        // Below MAX_BINDINGS, so the scaled offset fits.
        let at = binding * 8;
        a64!(self.ops
            ; ldr x0, [x19, #DispatchState::OFFSET_BINDINGS]
            ; ldr X(reg), [x0, #at]
            ; add X(reg), X(reg), x1
        );
    }

    /// Calls the epilogue kernel for a panel of `rows` rows and the tile's columns (one of the
    /// schedule's column counts, chosen at run time), then returns its status if not OK.
    fn call_epilogue(&mut self, rows: u64) -> Result<(), EmitError> {
        let variants = self.sched.epilogue_variants(self.k, rows);
        let after = self.ops.new_dynamic_label();
        for (n, &(cols, e)) in variants.iter().enumerate() {
            let next = self.ops.new_dynamic_label();
            if n + 1 < variants.len() {
                ldr_slot(self.ops, Slot::X, 9, COLS);
                mov_imm(self.ops, 10, cols as i64);
                a64!(self.ops; cmp x9, x10 ; b.ne =>next);
            }
            self.call(e);
            a64!(self.ops; b =>after ; =>next);
        }
        a64!(self.ops; =>after);
        Ok(())
    }

    /// Fills the epilogue's binding tables for the current origin and calls epilogue `e`.
    fn call(&mut self, e: usize) {
        let epilogue = &self.sched.epilogues[e];
        let count = epilogue.kernel.bindings.len() as i64;
        for (i, (reloc, binding)) in epilogue
            .relocs
            .iter()
            .zip(&epilogue.kernel.bindings)
            .enumerate()
        {
            let at = i as i32 * 8;
            match reloc {
                Reloc::Tile => {
                    ldr_slot(self.ops, Slot::X, 9, T_ROW);
                    str_slot(self.ops, Slot::X, 9, POINTERS + at);
                }
                Reloc::At {
                    binding,
                    offset,
                    strides,
                    ..
                } => {
                    let s = strides.map(i128::from);
                    self.element_address(9, *binding, *offset, s, Some(M));
                    str_slot(self.ops, Slot::X, 9, POINTERS + at);
                }
            }
            let bytes = binding.elements.wrapping_mul(binding.dtype.size_bytes());
            mov_imm(self.ops, 9, bytes as i64);
            str_slot(self.ops, Slot::X, 9, LENGTHS + at);
        }
        mov_imm(self.ops, 9, count);
        str_slot(
            self.ops,
            Slot::W,
            9,
            STATE + DispatchState::OFFSET_BINDING_COUNT as i32,
        );
        let (label, exit) = (self.labels[e], self.exit);
        a64!(self.ops
            ; add x0, sp, #STATE as u32
            ; mov w1, wzr
            ; mov w2, wzr
            ; bl =>label
            ; cbnz w0, =>exit
        );
    }
}
