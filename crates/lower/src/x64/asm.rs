//! The assembler the x86-64 emitter writes into, and the few helpers that keep run-time values
//! away from encodings that could panic or silently truncate.
//!
//! `dynasm` types its dynamic operands (`i32` displacements and immediates, `i64` only for
//! `mov r64, QWORD imm`), so a value that does not fit an `imm32` is materialized in a register
//! first; every helper here decides that once.

use dynasmrt::x64::X64Relocation;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi, VecAssembler};

/// The assembler every x86-64 kernel is emitted into.
pub(crate) type Asm = VecAssembler<X64Relocation>;

/// `dynasm!` with `.arch x64` (it is local to one invocation, so every use repeats it).
macro_rules! x64 {
    ($ops:expr; $($t:tt)*) => {{
        #[allow(
            clippy::useless_conversion,
            reason = "dynasm! converts dynamic register numbers with `.into()`, even from u8"
        )]
        let () = dynasmrt::dynasm!($ops ; .arch x64 ; $($t)*);
    }};
}
pub(crate) use x64;

/// General registers by encoding number.
pub(crate) mod gpr {
    pub const RAX: u8 = 0;
    pub const RCX: u8 = 1;
    pub const RDX: u8 = 2;
}

/// `value` as an `i32` if it fits (then an `imm32`/`disp32` form can carry it).
pub(crate) fn fits_i32(value: i64) -> Option<i32> {
    i32::try_from(value).ok()
}

/// `reg = value` (64-bit), with the shortest encoding that holds it.
pub(crate) fn mov_imm(ops: &mut Asm, reg: u8, value: i64) {
    if value == 0 {
        x64!(ops; xor Rd(reg), Rd(reg));
    } else if let Ok(v) = u32::try_from(value) {
        // A 32-bit move zero-extends into the full register.
        x64!(ops; mov Rd(reg), v as i32);
    } else if let Some(v) = fits_i32(value) {
        x64!(ops; mov Rq(reg), v);
    } else {
        x64!(ops; mov Rq(reg), QWORD value);
    }
}

/// `QWORD [rsp + slot] += value` (wrapping), clobbering rax when `value` needs 64 bits.
pub(crate) fn add_slot(ops: &mut Asm, slot: i32, value: i64) {
    if value == 0 {
        return;
    }
    if let Some(v) = fits_i32(value) {
        x64!(ops; add QWORD [rsp + slot], v);
    } else {
        x64!(ops; mov rax, QWORD value ; add QWORD [rsp + slot], rax);
    }
}

/// `reg = reg * value` (64-bit, wrapping), clobbering rdx when `value` needs 64 bits.
pub(crate) fn mul_imm(ops: &mut Asm, reg: u8, value: i64) {
    if value == 1 {
        return;
    }
    if value == 0 {
        x64!(ops; xor Rd(reg), Rd(reg));
    } else if let Some(v) = fits_i32(value) {
        x64!(ops; imul Rq(reg), Rq(reg), v);
    } else {
        x64!(ops; mov rdx, QWORD value ; imul Rq(reg), rdx);
    }
}

/// `reg = reg + value` (64-bit, wrapping), clobbering rdx when `value` needs 64 bits.
pub(crate) fn add_imm(ops: &mut Asm, reg: u8, value: i64) {
    if value == 0 {
        return;
    }
    if let Some(v) = fits_i32(value) {
        x64!(ops; add Rq(reg), v);
    } else {
        x64!(ops; mov rdx, QWORD value ; add Rq(reg), rdx);
    }
}
