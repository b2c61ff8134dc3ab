//! One contraction kernel's code on x86-64: the function around the microkernels
//! (`micro.rs`), following the schedule in `crate::emit::contraction`.
//!
//! Shape of the emitted function (`extern "C" fn(state, workgroup, worker) -> u32`):
//!
//! ```text
//! push rbx, rbp, r12–r15 ; sub rsp, frame               rsp is 16-byte aligned from here on
//! ABI version, workgroup < count, worker < worker_count, worker scratch stride, binding count
//!   and lengths                                          -> the ABI's mismatch statuses
//! rbx = state ; r14 = this worker's scratch: the buffer T, then A's copy (if made)
//! workgroup -> (b, tile row, tile column) -> m0, n0, rows, cols (frame)
//! for each block of k (tile_k steps; the first starts the sums at 0, the others reload them
//! from T; one block when k fits):
//!     for each full row panel, then the partial one:
//!         r12 = A at (b, m, 0) ; T_ROW = the panel's rows of T ; copy A's block (PackA,
//!             where the schedule makes one: `copy_a`, row-major A, several column panels, k
//!             of 32 or more; else the microkernels read A in place)
//!         r13 = B's first panel, rbp = A's block, r15 = the first panel's columns in T (in
//!             the last block of a direct store, r10 = its columns in the output, where the
//!             microkernels store instead): computed once, stepped by a constant per panel
//!         for each column panel: (where A is copied and its rows may not be cached) prefetch
//!             a few of the next row panel's rows of A (r11, r9: `next_a.rs`) ;
//!             rdi = r13, rsi = rbp ; microkernel
//!         after the last block, unless the store is direct: vzeroupper ; call the epilogue
//!             kernel for (rows, cols) with bindings at the panel origin
//! return its status, or KERNEL_OK
//! epilogue kernels: complete loop-kernel functions (`kernel.rs`), reached by call (the calls:
//!     `gemm/epilogue.rs`)
//! ```
//!
//! The frame holds the epilogue's `DispatchState` and binding tables and the loop state,
//! which must survive the calls (only rbx, rbp, r12–r15 and the frame do).

use accy_artifact::abi::{
    DispatchState, ABI_VERSION, KERNEL_ABI_MISMATCH, KERNEL_BINDING_MISMATCH,
    KERNEL_WORKER_MISMATCH, MAX_BINDINGS,
};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use super::asm::{add_imm, gpr, mov_imm, mul_imm, x64, Asm};
use super::micro::Micro;
use super::X64Tier;
use crate::emit::contraction::frame::*;
use crate::emit::contraction::{k_passes, schedule, EpilogueCall, KBlock, Pass, Schedule};
use crate::kernel::ContractionKernel;
use crate::target::EmitError;

/// The current block of k, in the loop over the blocks after the first (after the shared frame
/// slots, `frame`; offsets from rsp).
const K_BLOCK: i32 = SLOTS_END;
/// The address of the current row panel's rows in the buffer `T`.
const T_ROW: i32 = K_BLOCK + 8;
/// Frame size: the slots, rounded so that rsp is 16-byte aligned after six pushes.
const FRAME: i32 = (T_ROW + 8 + 15) / 16 * 16 + 8;

const R12: u8 = 12;

mod epilogue;
mod next_a;

/// Emits `k` for `tier`; returns the bytes of worker scratch it needs.
pub(crate) fn emit_contraction(
    ops: &mut Asm,
    k: &ContractionKernel,
    tier: X64Tier,
    options: &crate::Options,
) -> Result<u64, EmitError> {
    let reassociate = options.reassociate;
    let micro = Micro::for_tier(tier, k.dtype, reassociate);
    let sched = schedule(k, micro.mr, micro.nr(), tier.name(), true)?;
    let bad = |what: String| EmitError::Unsupported {
        kernel: k.name.clone(),
        what,
        target: tier.name(),
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
    let mut g = Gemm {
        ops,
        k,
        sched: &sched,
        micro,
        tier,
        labels: &labels,
        bad: &bad,
        l2: options.caches.l2,
    };
    g.function()?;
    for (e, &label) in sched.epilogues.iter().zip(&labels) {
        x64!(g.ops; =>label);
        // An epilogue writes one tile while its inputs are in cache: ordinary stores.
        super::kernel::emit_kernel(g.ops, &e.kernel, tier, reassociate, None)?;
    }
    Ok(sched.worker_scratch)
}

struct Gemm<'a> {
    ops: &'a mut Asm,
    k: &'a ContractionKernel,
    sched: &'a Schedule,
    micro: Micro,
    tier: X64Tier,
    labels: &'a [DynamicLabel],
    bad: &'a dyn Fn(String) -> EmitError,
    /// The L2 cache size the kernels are blocked for (`Options::caches`).
    l2: u64,
}

impl Gemm<'_> {
    /// `value` as a displacement, or an error naming `what`.
    fn disp(&self, value: i128, what: &str) -> Result<i32, EmitError> {
        i32::try_from(value).map_err(|_| (self.bad)(format!("{what} of {value} bytes")))
    }

    fn function(&mut self) -> Result<(), EmitError> {
        let [mismatch, bad_bindings, bad_worker, exit] =
            [(); 4].map(|_| self.ops.new_dynamic_label());
        x64!(self.ops
            ; push rbx ; push rbp ; push r12 ; push r13 ; push r14 ; push r15
            ; sub rsp, FRAME
            ; mov rbx, rdi
            ; cmp DWORD [rdi + DispatchState::OFFSET_ABI_VERSION as i32], ABI_VERSION as i32
            ; jne =>mismatch
            ; cmp esi, DWORD [rdi + DispatchState::OFFSET_WORKGROUP_COUNT as i32]
            ; jae =>mismatch
            ; cmp edx, DWORD [rdi + DispatchState::OFFSET_WORKER_COUNT as i32]
            ; jae =>bad_worker
        );
        mov_imm(self.ops, gpr::RAX, self.sched.worker_scratch as i64);
        x64!(self.ops
            ; cmp QWORD [rdi + DispatchState::OFFSET_WORKER_SCRATCH_STRIDE as i32], rax
            ; jb =>bad_worker
            ; cmp DWORD [rdi + DispatchState::OFFSET_BINDING_COUNT as i32], self.k.bindings.len() as i32
            ; jne =>bad_bindings
            ; mov r8, QWORD [rdi + DispatchState::OFFSET_BINDING_LENGTHS as i32]
        );
        for (i, b) in self.k.bindings.iter().enumerate() {
            // Validation proved the byte size fits u64; compare as unsigned.
            mov_imm(
                self.ops,
                gpr::RAX,
                b.elements.wrapping_mul(b.dtype.size_bytes()) as i64,
            );
            x64!(self.ops; cmp QWORD [r8 + i as i32 * 8], rax ; jb =>bad_bindings);
        }
        // r14 = worker scratch + worker * stride: this worker's buffer T.
        x64!(self.ops
            ; mov eax, edx
            ; imul rax, QWORD [rbx + DispatchState::OFFSET_WORKER_SCRATCH_STRIDE as i32]
            ; add rax, QWORD [rbx + DispatchState::OFFSET_WORKER_SCRATCH as i32]
            ; mov r14, rax
        );
        self.tile()?;
        self.epilogue_state();
        self.k_blocks()?;
        x64!(self.ops
            ; xor eax, eax
            ; jmp =>exit
            ; =>bad_bindings
            ; mov eax, KERNEL_BINDING_MISMATCH as i32
            ; jmp =>exit
            ; =>bad_worker
            ; mov eax, KERNEL_WORKER_MISMATCH as i32
            ; jmp =>exit
            ; =>mismatch
            ; mov eax, KERNEL_ABI_MISMATCH as i32
            ; =>exit
        );
        if self.tier != X64Tier::Sse2 {
            x64!(self.ops; vzeroupper);
        }
        x64!(self.ops
            ; add rsp, FRAME
            ; pop r15 ; pop r14 ; pop r13 ; pop r12 ; pop rbp ; pop rbx
            ; ret
        );
        Ok(())
    }

    /// The workgroup (esi) becomes b, m0, n0, rows and cols in the frame.
    fn tile(&mut self) -> Result<(), EmitError> {
        let (tiles_m, tiles_n) = self.sched.tiles;
        let k = self.k;
        // b = wg / (tiles_m * tiles_n); r = wg % (tiles_m * tiles_n);
        // m0 = (r / tiles_n) * tile_m; n0 = (r % tiles_n) * tile_n.
        let per_batch = tiles_m.max(1).saturating_mul(tiles_n.max(1));
        x64!(self.ops; mov eax, esi ; xor edx, edx);
        mov_imm(self.ops, gpr::RCX, per_batch as i64);
        x64!(self.ops; div rcx ; mov QWORD [rsp + B_SLOT], rax ; mov rax, rdx ; xor edx, edx);
        mov_imm(self.ops, gpr::RCX, tiles_n.max(1) as i64);
        x64!(self.ops; div rcx ; mov r8, rdx);
        mul_imm(self.ops, gpr::RAX, k.tile_m as i64);
        x64!(self.ops; mov QWORD [rsp + M0], rax ; mov rax, r8);
        mul_imm(self.ops, gpr::RAX, k.tile_n as i64);
        x64!(self.ops; mov QWORD [rsp + N0], rax);
        // rows = min(tile_m, m - m0), cols = min(tile_n, n - n0).
        for (origin, extent, tile, out) in [(M0, k.m, k.tile_m, ROWS), (N0, k.n, k.tile_n, COLS)] {
            mov_imm(self.ops, gpr::RAX, extent as i64);
            mov_imm(self.ops, gpr::RCX, tile as i64);
            x64!(self.ops
                ; sub rax, QWORD [rsp + origin]
                ; cmp rax, rcx
                ; cmova rax, rcx
                ; mov QWORD [rsp + out], rax
            );
        }
        Ok(())
    }

    /// The blocks of k, outermost, as `k_passes` lays them out: the first starts the sums at
    /// 0, the others reload them from the buffer, and the last calls the epilogue for each row
    /// panel (or, for a direct store, its microkernels store the output).
    fn k_blocks(&mut self) -> Result<(), EmitError> {
        let passes = k_passes(self.k, self.sched.direct.is_some());
        self.row_panels(passes.first)?;
        if let Some((pass, end)) = passes.looped {
            let top = self.ops.new_dynamic_label();
            x64!(self.ops; mov QWORD [rsp + K_BLOCK], 1 ; =>top);
            self.row_panels(pass)?;
            mov_imm(self.ops, gpr::RAX, end as i64);
            x64!(self.ops
                ; add QWORD [rsp + K_BLOCK], 1
                ; cmp QWORD [rsp + K_BLOCK], rax
                ; jb =>top
            );
        }
        if let Some(pass) = passes.rest {
            self.row_panels(pass)?;
        }
        Ok(())
    }

    /// Every full row panel of the tile, then the partial one if the tile has it, for one
    /// block of k; with the epilogue call after each as `epilogue` says.
    fn row_panels(&mut self, pass: Pass) -> Result<(), EmitError> {
        let mr = self.sched.mr as i64;
        let end = self.ops.new_dynamic_label();
        x64!(self.ops
            ; mov rax, QWORD [rsp + M0]
            ; mov QWORD [rsp + M], rax
        );
        if self.sched.full_panels {
            // m_end = m0 + rows - rows % mr (the full panels).
            let [top, check] = [(); 2].map(|_| self.ops.new_dynamic_label());
            x64!(self.ops
                ; mov rax, QWORD [rsp + ROWS]
                ; xor edx, edx
            );
            mov_imm(self.ops, gpr::RCX, mr);
            x64!(self.ops
                ; div rcx
                ; imul rax, rcx
                ; add rax, QWORD [rsp + M0]
                ; mov QWORD [rsp + M_END], rax
                ; jmp =>check
                ; =>top
            );
            self.row_panel(self.sched.mr, pass)?;
            x64!(self.ops
                ; add QWORD [rsp + M], mr as i32
                ; =>check
                ; mov rax, QWORD [rsp + M]
                ; cmp rax, QWORD [rsp + M_END]
                ; jb =>top
            );
        }
        if self.sched.rem != 0 {
            // The partial panel: only the last tile along m has one, of `rem` rows.
            x64!(self.ops
                ; mov rax, QWORD [rsp + M0]
                ; add rax, QWORD [rsp + ROWS]
                ; cmp QWORD [rsp + M], rax
                ; jae =>end
            );
            self.row_panel(self.sched.rem, pass)?;
        }
        x64!(self.ops; =>end);
        Ok(())
    }

    /// One row panel of `rows` rows at row `M` of the frame, for one block of k: its rows of
    /// the buffer found (`T_ROW`), then A's block and every column panel, then the epilogue
    /// call as `epilogue` says.
    fn row_panel(&mut self, rows: u64, pass: Pass) -> Result<(), EmitError> {
        let k = self.k;
        let ls = |d: usize| i128::from(k.lhs.map.strides.get(d).copied().unwrap_or(0));
        // r12 = A at (b, m, 0).
        self.element_address(
            R12,
            k.lhs.binding,
            k.lhs.map.offset,
            [ls(0), ls(1), 0],
            Some(M),
        );
        // T_ROW = r14 + (m - m0) · t_ld · size when the buffer holds the whole tile.
        if self.sched.t_rows > self.sched.mr {
            let row = i128::from(self.sched.t_ld as i64) * i128::from(k.dtype.size_bytes() as i64);
            let row = i64::try_from(row)
                .map_err(|_| (self.bad)(format!("a buffer row of {row} bytes")))?;
            x64!(self.ops; mov rax, QWORD [rsp + M] ; sub rax, QWORD [rsp + M0]);
            mul_imm(self.ops, gpr::RAX, row);
            x64!(self.ops; add rax, r14 ; mov QWORD [rsp + T_ROW], rax);
        } else {
            x64!(self.ops; mov QWORD [rsp + T_ROW], r14);
        }
        if self.sched.pack_a.is_some() {
            self.pack_a(rows, pass.k_len, pass.block)?;
        }
        self.column_panels(rows, pass)?;
        match pass.epilogue {
            EpilogueCall::Never => {}
            // The microkernels stored the output themselves.
            EpilogueCall::Always if self.sched.direct.is_some() => {}
            EpilogueCall::Always => self.call_epilogue(rows)?,
            EpilogueCall::InBlock(last) => {
                let skip = self.ops.new_dynamic_label();
                mov_imm(self.ops, gpr::RAX, last as i64);
                x64!(self.ops; cmp QWORD [rsp + K_BLOCK], rax ; jne =>skip);
                self.call_epilogue(rows)?;
                x64!(self.ops; =>skip);
            }
        }
        Ok(())
    }

    /// Register `reg` += the byte offset of `block` along k for a step of `step` bytes (rax
    /// clobbered).
    fn add_block_offset(&mut self, reg: u8, step: i32, block: KBlock) {
        let bytes = i64::try_from(i128::from(step) * i128::from(self.k.tile_k)).unwrap_or(i64::MAX);
        match block {
            KBlock::At(0) => {}
            KBlock::At(b) => {
                mov_imm(self.ops, gpr::RAX, bytes.saturating_mul(b as i64));
                x64!(self.ops; add Rq(reg), rax);
            }
            KBlock::Current => {
                x64!(self.ops; mov rax, QWORD [rsp + K_BLOCK]);
                mul_imm(self.ops, gpr::RAX, bytes);
                x64!(self.ops; add Rq(reg), rax);
            }
        }
    }

    /// Copies the row panel's `rows × k_len` block of A (row-major, from `r12`) into the
    /// worker scratch's packed rows (`PackA`).
    fn pack_a(&mut self, rows: u64, k_len: u64, block: KBlock) -> Result<(), EmitError> {
        let Some(pack) = self.sched.pack_a else {
            return Ok(());
        };
        let k = self.k;
        let size = k.dtype.size_bytes() as i64;
        let lda = self.disp(
            i128::from(k.lhs.map.strides.get(1).copied().unwrap_or(0)) * i128::from(size),
            "a row stride of A",
        )?;
        let offset = self.disp(i128::from(pack.offset), "a packed block's offset")?;
        let row_bytes = self.disp(i128::from(pack.row_bytes), "a packed row")?;
        x64!(self.ops; mov rsi, r12);
        self.add_block_offset(6, size as i32, block);
        x64!(self.ops; lea rdi, [r14 + offset]);
        mov_imm(self.ops, 2, rows as i64);
        let row = self.ops.new_dynamic_label();
        x64!(self.ops; =>row ; mov r8, rsi ; mov r9, rdi);
        let bytes = k_len as i64 * size;
        let vb = self.micro.vbytes() as i64;
        let vectors = bytes / vb;
        if vectors > 0 {
            let copy = self.ops.new_dynamic_label();
            mov_imm(self.ops, gpr::RCX, vectors);
            x64!(self.ops; =>copy);
            self.micro.load(self.ops, 0, 8, 0);
            self.micro.store(self.ops, 9, 0, 0);
            x64!(self.ops
                ; add r8, vb as i32
                ; add r9, vb as i32
                ; sub rcx, 1
                ; jnz =>copy
            );
        }
        let mut at = 0i32;
        let mut tail = bytes % vb;
        while tail >= 8 {
            x64!(self.ops; mov rax, QWORD [r8 + at] ; mov QWORD [r9 + at], rax);
            at += 8;
            tail -= 8;
        }
        if tail >= 4 {
            x64!(self.ops; mov eax, DWORD [r8 + at] ; mov DWORD [r9 + at], eax);
        }
        x64!(self.ops
            ; add rsi, lda
            ; add rdi, row_bytes
            ; sub rdx, 1
            ; jnz =>row
        );
        Ok(())
    }

    /// Every column panel of the tile for the pass's block of k (`k_len` steps, block `block`
    /// of `tile_k` steps from k = 0), with `r12` at A's row panel.
    fn column_panels(&mut self, rows: u64, pass: Pass) -> Result<(), EmitError> {
        let Pass {
            k_len,
            init,
            block,
            epilogue,
        } = pass;
        let k = self.k;
        let size = i128::from(k.dtype.size_bytes() as i32);
        let ls = |d: usize| i128::from(k.lhs.map.strides.get(d).copied().unwrap_or(0));
        let rs = |d: usize| i128::from(k.rhs.map.strides.get(d).copied().unwrap_or(0));
        let lda = self.disp(ls(1) * size, "a row stride of A")?;
        let ak = self.disp(ls(2) * size, "a k stride of A")?;
        self.disp(
            i128::from(lda) * i128::from(self.sched.mr as i32),
            "a row panel of A",
        )?;
        let nr = self.sched.nr as i64;
        let bk = match k.rhs.panels {
            Some(w) => self.disp(i128::from(w as i32) * size, "a panel row")?,
            None => self.disp(rs(1) * size, "a k stride of B")?,
        };
        let t_row = self.disp(i128::from(self.sched.t_ld as i32) * size, "a buffer row")?;
        // panels = ceil(cols / nr); panel = 0.
        x64!(self.ops; mov rax, QWORD [rsp + COLS]);
        add_imm(self.ops, gpr::RAX, nr - 1);
        x64!(self.ops; xor edx, edx);
        mov_imm(self.ops, gpr::RCX, nr);
        x64!(self.ops
            ; div rcx
            ; mov QWORD [rsp + PANELS], rax
            ; mov QWORD [rsp + PANEL], 0
        );
        // Every address the loop needs is computed here, for panel 0, and stepped by a
        // constant after each microkernel: r13 = B's panel (with the block's offset), r15 = its
        // columns in the buffer, rbp = A's block, r10 = the output's columns (a direct
        // store's last block). Computing them per panel (a division among them) put tens of
        // cycles before every microkernel's first load.
        // r13 = B's panel 0: panelled, panel n0 / nr of batch b; else element (b, 0, n0).
        let b_step = match k.rhs.panels {
            Some(w) => {
                let panel_bytes = i128::from(k.k as i64) * i128::from(w as i64) * size;
                let panel_bytes = i64::try_from(panel_bytes)
                    .map_err(|_| (self.bad)(format!("a panel of {panel_bytes} bytes")))?;
                self.element_address(13, k.rhs.binding, k.rhs.map.offset, [rs(0), 0, 0], None);
                x64!(self.ops ; mov rax, QWORD [rsp + N0] ; xor edx, edx);
                mov_imm(self.ops, gpr::RCX, w as i64);
                x64!(self.ops; div rcx);
                mul_imm(self.ops, gpr::RAX, panel_bytes);
                x64!(self.ops; add r13, rax);
                panel_bytes
            }
            None => {
                self.element_address(13, k.rhs.binding, k.rhs.map.offset, [rs(0), 0, 0], None);
                let col_bytes = i64::try_from(rs(2) * size).unwrap_or(i64::MAX);
                x64!(self.ops; mov rax, QWORD [rsp + N0]);
                mul_imm(self.ops, gpr::RAX, col_bytes);
                x64!(self.ops; add r13, rax);
                i64::try_from(i128::from(col_bytes) * i128::from(nr))
                    .map_err(|_| (self.bad)("a panel step of B beyond 64 bits".to_owned()))?
            }
        };
        self.add_block_offset(13, bk, block);
        let t_step = (nr as i128 * size) as i32;
        x64!(self.ops; mov r15, QWORD [rsp + T_ROW]);
        let (lda, ak) = match self.sched.pack_a {
            Some(pack) => {
                let offset = self.disp(i128::from(pack.offset), "a packed block's offset")?;
                x64!(self.ops; lea rbp, [r14 + offset]);
                let row = self.disp(i128::from(pack.row_bytes), "a packed row")?;
                (row, size as i32)
            }
            None => {
                x64!(self.ops; mov rbp, r12);
                self.add_block_offset(5, ak, block);
                (lda, ak)
            }
        };
        // With k in blocks and several row panels a tile (T then holds the tile), in every
        // block but a last one of its own (the loop's final pass asks for lines past the
        // panel's k, which costs a prefetch and faults nothing): B's panel for the next block,
        // tile_k steps ahead, so that the next block's first row panel finds it in the L2
        // cache. A tile of one row panel (a few rows: 1x768x3072) streams each block of B
        // once, and the prefetches only add to its memory instructions: 10% slower with them.
        // Only on the AVX-512 tier, where it was measured to help (an AVX-512 EPYC: the first
        // row panel of each block waited on B for 22% of a 2048³ product without it). On a
        // Zen 3 core the hardware prefetchers bring B's contiguous panels in time and the
        // prefetches only cost: paired runs, 1 thread, without them AVX2 2048³ 2.8-3.5%,
        // 128×768×3072 2.8%, 64×784×512 1.9%, 512×1024×512 1.2% faster, 1024³ 0-0.5%; SSE2
        // 1024³ 2.1%, 128×768×3072 1% faster.
        let prefetch_b = (self.tier == X64Tier::Avx512
            && epilogue != EpilogueCall::Always
            && self.sched.t_rows > self.sched.mr)
            .then(|| i32::try_from(i128::from(bk) * i128::from(k.tile_k)).ok())
            .flatten();
        // The last block of a direct store writes the output at (b, m, n0 + panel · nr):
        // r10, rows `strides[1]` elements apart.
        let out = match (self.sched.direct, epilogue) {
            (Some(d), EpilogueCall::Always) => {
                let s = d.strides.map(i128::from);
                self.element_address(10, d.binding, d.offset, s, Some(M));
                // `direct_store` bounded a panel's rows to 32-bit displacements.
                Some((10, self.disp(s[1] * size, "an output row")?))
            }
            _ => None,
        };
        let next_a = self.next_a_rows(k_len, block)?;
        let [top, check] = [(); 2].map(|_| self.ops.new_dynamic_label());
        x64!(self.ops; jmp =>check ; =>top);
        if let Some(next) = next_a {
            next.emit(self.ops);
        }
        x64!(self.ops; mov rdi, r13 ; mov rsi, rbp);
        self.micro.emit(
            self.ops, rows, k_len, init, lda, ak, bk, t_row, prefetch_b, out,
        );
        add_imm(self.ops, 13, b_step);
        x64!(self.ops; add r15, t_step);
        if out.is_some() {
            x64!(self.ops; add r10, t_step);
        }
        x64!(self.ops
            ; add QWORD [rsp + PANEL], 1
            ; =>check
            ; mov rax, QWORD [rsp + PANEL]
            ; cmp rax, QWORD [rsp + PANELS]
            ; jb =>top
        );
        Ok(())
    }

    /// `reg = bindings[binding] + size · (offset + s0·b + s1·m + s2·n0)` where `m` is the frame
    /// slot `m_slot` (or 0) — the byte address of an element at the current origin.
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
        mov_imm(self.ops, gpr::RCX, offset);
        for (stride, slot) in [
            (strides[0], Some(B_SLOT)),
            (strides[1], m_slot),
            (strides[2], Some(N0)),
        ] {
            if let (Some(slot), true) = (slot, stride != 0) {
                x64!(self.ops; mov rax, QWORD [rsp + slot]);
                mul_imm(
                    self.ops,
                    gpr::RAX,
                    i64::try_from(stride).unwrap_or(i64::MAX),
                );
                x64!(self.ops; add rcx, rax);
            }
        }
        mul_imm(self.ops, gpr::RCX, size);
        x64!(self.ops
            ; mov rax, QWORD [rbx + DispatchState::OFFSET_BINDINGS as i32]
            ; mov Rq(reg), QWORD [rax + binding as i32 * 8]
            ; add Rq(reg), rcx
        );
    }
}
