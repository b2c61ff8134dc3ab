//! The entry checks of a loop kernel's function and its workgroup's share: the dispatch's
//! bindings against what the kernel was compiled for, dim 0's slice for this workgroup, and a
//! chain link's worker-scratch rows (see the function's shape in `kernel.rs`).

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use accy_artifact::abi::DispatchState;

use super::asm::{gpr, mov_imm, mul_imm, x64};
use super::kernel::Emitter;

impl Emitter<'_> {
    /// Refuses a dispatch whose binding count differs from the kernel's or whose binding is
    /// shorter than the bytes the kernel was compiled to access (validation proved every access
    /// lies inside `elements * size`), so a runtime/artifact mismatch cannot read or write
    /// outside the caller's memory. Uses rcx and rdx only (rsi still holds the workgroup).
    pub(crate) fn emit_binding_checks(&mut self, bad: DynamicLabel) {
        let count = self.k.bindings.len() as i32;
        x64!(self.ops
            ; cmp DWORD [rbx + DispatchState::OFFSET_BINDING_COUNT as i32], count
            ; jne =>bad
            ; mov rdx, QWORD [rbx + DispatchState::OFFSET_BINDING_LENGTHS as i32]
        );
        for (i, b) in self.k.bindings.iter().enumerate() {
            // Validation proved the byte size fits u64; compare as unsigned.
            let bytes = b.elements.wrapping_mul(b.dtype.size_bytes());
            mov_imm(self.ops, gpr::RCX, bytes as i64);
            let at = (i as u32 * DispatchState::LENGTH_STRIDE) as i32;
            x64!(self.ops; cmp QWORD [rdx + at], rcx ; jb =>bad);
        }
        if self.stream {
            // The alignment head counts whole elements to a vector boundary: refuse a store
            // binding that is not element-aligned (the runtime never passes one). Tiled
            // loops have no head and need no such check, but it costs nothing.
            let size = self.k.bindings[self.k.store.binding as usize]
                .dtype
                .size_bytes();
            let b = self.k.store.binding as i32 * DispatchState::BINDING_STRIDE as i32;
            x64!(self.ops
                ; mov rcx, QWORD [r12 + b]
                ; test cl, (size - 1) as i8
                ; jnz =>bad
            );
        }
    }

    /// Dim 0's range for this workgroup into `[tmp, hi0)`. A parallel dim 0 is split into
    /// `workgroup_count` contiguous shares, `[d0 * w / n, d0 * (w + 1) / n)`, computed in 128
    /// bits so no product overflows (with `n = 1`, directly `[0, d0)`); without parallel dims
    /// only workgroup 0 runs.
    pub(crate) fn emit_share(&mut self, done: DynamicLabel) {
        let (tmp, hi0) = (self.lay.tmp, self.lay.hi0);
        let Some(&d0) = self.k.dims.first() else {
            x64!(self.ops; test esi, esi ; jnz =>done);
            return;
        };
        let d0 = d0 as i64;
        if self.k.parallel_rank == 0 {
            x64!(self.ops; test esi, esi ; jnz =>done ; mov QWORD [rsp + tmp], 0);
            mov_imm(self.ops, gpr::RAX, d0);
            x64!(self.ops; mov QWORD [rsp + hi0], rax);
            return;
        }
        // One workgroup (every small kernel) owns the whole dim: skip the two 64-bit
        // divisions, a sixth of a tiny kernel's time.
        let (split, joined) = (self.ops.new_dynamic_label(), self.ops.new_dynamic_label());
        x64!(self.ops
            ; mov r8d, DWORD [rbx + DispatchState::OFFSET_WORKGROUP_COUNT as i32]
            ; cmp r8d, 1
            ; jne =>split
            ; mov QWORD [rsp + tmp], 0
        );
        mov_imm(self.ops, gpr::RAX, d0);
        x64!(self.ops
            ; mov QWORD [rsp + hi0], rax
            ; jmp =>joined
            ; =>split
            ; mov r9d, esi
        );
        mov_imm(self.ops, gpr::RCX, d0);
        x64!(self.ops
            ; mov rax, r9 ; mul rcx ; div r8 ; mov QWORD [rsp + tmp], rax
            ; lea rax, [r9 + 1] ; mul rcx ; div r8 ; mov QWORD [rsp + hi0], rax
            ; =>joined
        );
    }

    /// For [`crate::kernel::RowScratch`] bindings: checks the worker index, the worker
    /// scratch's size and the share's row count (`bad` otherwise), then points r12 at the
    /// frame's copy of the binding addresses, in which each such binding's address is
    /// `worker scratch + worker·stride + offset - lo0·row_bytes`: row `lo0` lands at the
    /// reservation's start, and the share's rows, at most `bytes / row_bytes` of them, inside
    /// it. Runs after the share (dim 0's start is in `tmp`); clobbers rax, rcx and rdx.
    pub(crate) fn emit_row_scratch(&mut self, bad: DynamicLabel) {
        let Some(rows) = self.lay.rows else {
            return;
        };
        let (end, most_rows) = crate::emit::frame::row_scratch_limits(self.k);
        let (tmp, hi0) = (self.lay.tmp, self.lay.hi0);
        x64!(self.ops
            ; mov eax, DWORD [rsp + rows.worker]
            ; cmp eax, DWORD [rbx + DispatchState::OFFSET_WORKER_COUNT as i32]
            ; jae =>bad
        );
        mov_imm(self.ops, gpr::RCX, end as i64);
        x64!(self.ops
            ; cmp QWORD [rbx + DispatchState::OFFSET_WORKER_SCRATCH_STRIDE as i32], rcx
            ; jb =>bad
            ; mov rax, QWORD [rsp + hi0]
            ; sub rax, QWORD [rsp + tmp]
        );
        mov_imm(self.ops, gpr::RCX, most_rows as i64);
        x64!(self.ops; cmp rax, rcx ; ja =>bad);
        for i in 0..self.k.bindings.len() as i32 {
            let at = i * DispatchState::BINDING_STRIDE as i32;
            x64!(self.ops
                ; mov rax, QWORD [r12 + at]
                ; mov QWORD [rsp + rows.bindings + at], rax
            );
        }
        for r in &self.k.row_scratch {
            let at = r.binding as i32 * DispatchState::BINDING_STRIDE as i32;
            x64!(self.ops
                ; mov eax, DWORD [rsp + rows.worker]
                ; imul rax, QWORD [rbx + DispatchState::OFFSET_WORKER_SCRATCH_STRIDE as i32]
                ; add rax, QWORD [rbx + DispatchState::OFFSET_WORKER_SCRATCH as i32]
                ; mov rcx, QWORD [rsp + tmp]
            );
            mul_imm(self.ops, gpr::RCX, r.row_bytes as i64);
            x64!(self.ops; sub rax, rcx);
            super::asm::add_imm(self.ops, gpr::RAX, r.offset as i64);
            x64!(self.ops; mov QWORD [rsp + rows.bindings + at], rax);
        }
        x64!(self.ops; lea r12, [rsp + rows.bindings]);
    }
}
