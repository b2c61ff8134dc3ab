//! The epilogue calls of a contraction kernel's x86-64 code: the `DispatchState` the
//! contraction builds on its stack for its epilogue kernels, and each call with the bindings
//! relocated to the row panel's origin (`crate::emit::contraction::Reloc`).

use accy_artifact::abi::{DispatchState, ABI_VERSION};
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::{Gemm, FRAME, T_ROW};
use crate::emit::contraction::frame::*;
use crate::emit::contraction::Reloc;
use crate::target::EmitError;
use crate::x64::asm::{gpr, mov_imm, x64};
use crate::x64::X64Tier;

impl Gemm<'_> {
    /// The parts of the epilogue's `DispatchState` that never change.
    pub(super) fn epilogue_state(&mut self) {
        let s = |o: u32| STATE + o as i32;
        x64!(self.ops
            ; mov DWORD [rsp + s(DispatchState::OFFSET_ABI_VERSION)], ABI_VERSION as i32
            ; lea rax, [rsp + POINTERS]
            ; mov QWORD [rsp + s(DispatchState::OFFSET_BINDINGS)], rax
            ; lea rax, [rsp + LENGTHS]
            ; mov QWORD [rsp + s(DispatchState::OFFSET_BINDING_LENGTHS)], rax
            ; mov QWORD [rsp + s(DispatchState::OFFSET_SCALARS)], 0
            ; mov DWORD [rsp + s(DispatchState::OFFSET_SCALAR_COUNT)], 0
            ; mov DWORD [rsp + s(DispatchState::OFFSET_WORKGROUP_COUNT)], 1
            ; mov rax, QWORD [rbx + DispatchState::OFFSET_IMPORTS as i32]
            ; mov QWORD [rsp + s(DispatchState::OFFSET_IMPORTS)], rax
            ; mov QWORD [rsp + s(DispatchState::OFFSET_WORKER_SCRATCH)], 0
            ; mov QWORD [rsp + s(DispatchState::OFFSET_WORKER_SCRATCH_STRIDE)], 0
            ; mov DWORD [rsp + s(DispatchState::OFFSET_WORKER_COUNT)], 1
            ; mov DWORD [rsp + s(DispatchState::OFFSET_RESERVED)], 0
        );
    }

    /// Calls the epilogue kernel for a panel of `rows` rows and the tile's columns (one of the
    /// schedule's column counts, chosen at run time), then returns its status if not OK.
    pub(super) fn call_epilogue(&mut self, rows: u64) -> Result<(), EmitError> {
        let variants = self.sched.epilogue_variants(self.k, rows);
        let after = self.ops.new_dynamic_label();
        for (n, &(cols, e)) in variants.iter().enumerate() {
            let next = self.ops.new_dynamic_label();
            if n + 1 < variants.len() {
                mov_imm(self.ops, gpr::RAX, cols as i64);
                x64!(self.ops; cmp QWORD [rsp + COLS], rax ; jne =>next);
            }
            self.call(e)?;
            x64!(self.ops; jmp =>after ; =>next);
        }
        x64!(self.ops; =>after);
        Ok(())
    }

    /// Fills the epilogue's binding tables for the current origin and calls epilogue `e`.
    fn call(&mut self, e: usize) -> Result<(), EmitError> {
        let epilogue = &self.sched.epilogues[e];
        let count = epilogue.kernel.bindings.len();
        for (i, (reloc, binding)) in epilogue
            .relocs
            .iter()
            .zip(&epilogue.kernel.bindings)
            .enumerate()
        {
            let at = i as i32 * 8;
            match reloc {
                Reloc::Tile => x64!(self.ops
                    ; mov rax, QWORD [rsp + T_ROW]
                    ; mov QWORD [rsp + POINTERS + at], rax
                ),
                Reloc::At {
                    binding,
                    offset,
                    strides,
                    ..
                } => {
                    let s = strides.map(i128::from);
                    self.element_address(0, *binding, *offset, s, Some(M));
                    x64!(self.ops; mov QWORD [rsp + POINTERS + at], rax);
                }
            }
            let bytes = binding.elements.wrapping_mul(binding.dtype.size_bytes());
            mov_imm(self.ops, gpr::RAX, bytes as i64);
            x64!(self.ops; mov QWORD [rsp + LENGTHS + at], rax);
        }
        let label = self.labels[e];
        x64!(self.ops
            ; mov DWORD [rsp + STATE + DispatchState::OFFSET_BINDING_COUNT as i32], count as i32
        );
        if self.tier != X64Tier::Sse2 {
            x64!(self.ops; vzeroupper);
        }
        x64!(self.ops
            ; lea rdi, [rsp + STATE]
            ; xor esi, esi
            ; xor edx, edx
            ; call =>label
            ; test eax, eax
            ; jz >ok
            ; add rsp, FRAME
            ; pop r15 ; pop r14 ; pop r13 ; pop r12 ; pop rbp ; pop rbx
            ; ret
            ; ok:
        );
        Ok(())
    }
}
