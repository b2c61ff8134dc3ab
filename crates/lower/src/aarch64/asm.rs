//! The assembler the AArch64 emitter writes into, and the few helpers that keep run-time values
//! away from encodings that could panic.
//!
//! `dynasm`'s AArch64 encoder panics at run time when a dynamic immediate or offset does not
//! fit its field, so every run-time value goes through a helper here that checks the range
//! first: constants are built with `movz`/`movk`, frame offsets too far for a scaled `ldr`/`str`
//! are formed in `x17` first, and arithmetic immediates outside `0..4096` go through `x16`.
//! `x16`/`x17` (the AAPCS64 intra-procedure-call scratch registers) are reserved for this.

use dynasmrt::aarch64::Aarch64Relocation;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi, VecAssembler};

/// The assembler every AArch64 kernel is emitted into.
pub(crate) type Asm = VecAssembler<Aarch64Relocation>;

/// `dynasm!` with `.arch aarch64` (it is local to one invocation, so every use repeats it).
macro_rules! a64 {
    ($ops:expr; $($t:tt)*) => {{
        #[allow(
            clippy::useless_conversion,
            reason = "dynasm! converts dynamic register numbers with `.into()`, even from u8"
        )]
        let () = dynasmrt::dynasm!($ops ; .arch aarch64 ; $($t)*);
    }};
}
pub(crate) use a64;

/// General registers by number.
pub(crate) mod gpr {
    /// Scratch 0 (the first argument and result register).
    pub const X0: u8 = 0;
    /// Scratch 1.
    pub const X1: u8 = 1;
    /// Scratch for immediates (`add_imm`, `mul_imm`).
    pub const X16: u8 = 16;
}

/// The width and register file of one frame access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A 64-bit general register (`ldr x`).
    X,
    /// A 32-bit general register (`ldr w`, zero-extending).
    W,
    /// One byte into a 32-bit general register (`ldrb`, zero-extending).
    B,
    /// A 32-bit float register (`ldr s`).
    S,
    /// A 64-bit float register (`ldr d`).
    D,
    /// A 128-bit vector register (`ldr q`).
    Q,
}

impl Slot {
    fn size(self) -> u32 {
        match self {
            Slot::Q => 16,
            Slot::X | Slot::D => 8,
            Slot::W | Slot::S => 4,
            Slot::B => 1,
        }
    }
}

/// The scaled unsigned 12-bit offset form for an access of `kind` at `offset`, if it fits.
fn scaled(kind: Slot, offset: i32) -> Option<u32> {
    let off = u32::try_from(offset).ok()?;
    (off.is_multiple_of(kind.size()) && off / kind.size() < 4096).then_some(off)
}

/// `x17 = sp + offset` for a frame offset below 2^24 (always true: frames are < 64 KiB).
fn far_address(ops: &mut Asm, offset: i32) {
    let off = u32::try_from(offset).unwrap_or(0) & 0x00ff_ffff;
    let (lo, hi) = (off & 0xfff, off >> 12);
    a64!(ops; add x17, sp, #lo);
    if hi != 0 {
        a64!(ops; add x17, x17, #hi, lsl #12);
    }
}

/// Register `reg` (of `kind`) = the frame value at `sp + offset`.
pub(crate) fn ldr_slot(ops: &mut Asm, kind: Slot, reg: u8, offset: i32) {
    match scaled(kind, offset) {
        Some(off) => match kind {
            Slot::X => a64!(ops; ldr X(reg), [sp, #off]),
            Slot::W => a64!(ops; ldr W(reg), [sp, #off]),
            Slot::B => a64!(ops; ldrb W(reg), [sp, #off]),
            Slot::S => a64!(ops; ldr S(reg), [sp, #off]),
            Slot::D => a64!(ops; ldr D(reg), [sp, #off]),
            Slot::Q => a64!(ops; ldr Q(reg), [sp, #off]),
        },
        None => {
            far_address(ops, offset);
            match kind {
                Slot::X => a64!(ops; ldr X(reg), [x17]),
                Slot::W => a64!(ops; ldr W(reg), [x17]),
                Slot::B => a64!(ops; ldrb W(reg), [x17]),
                Slot::S => a64!(ops; ldr S(reg), [x17]),
                Slot::D => a64!(ops; ldr D(reg), [x17]),
                Slot::Q => a64!(ops; ldr Q(reg), [x17]),
            }
        }
    }
}

/// The frame value at `sp + offset` = register `reg` (of `kind`; `B` stores the low byte).
pub(crate) fn str_slot(ops: &mut Asm, kind: Slot, reg: u8, offset: i32) {
    match scaled(kind, offset) {
        Some(off) => match kind {
            Slot::X => a64!(ops; str X(reg), [sp, #off]),
            Slot::W => a64!(ops; str W(reg), [sp, #off]),
            Slot::B => a64!(ops; strb W(reg), [sp, #off]),
            Slot::S => a64!(ops; str S(reg), [sp, #off]),
            Slot::D => a64!(ops; str D(reg), [sp, #off]),
            Slot::Q => a64!(ops; str Q(reg), [sp, #off]),
        },
        None => {
            far_address(ops, offset);
            match kind {
                Slot::X => a64!(ops; str X(reg), [x17]),
                Slot::W => a64!(ops; str W(reg), [x17]),
                Slot::B => a64!(ops; strb W(reg), [x17]),
                Slot::S => a64!(ops; str S(reg), [x17]),
                Slot::D => a64!(ops; str D(reg), [x17]),
                Slot::Q => a64!(ops; str Q(reg), [x17]),
            }
        }
    }
}

/// `sp -= bytes` (`bytes` below 2^24, a multiple of 16).
pub(crate) fn sub_sp(ops: &mut Asm, bytes: u32) {
    let (lo, hi) = (bytes & 0xfff, (bytes >> 12) & 0xfff);
    if hi != 0 {
        a64!(ops; sub sp, sp, #hi, lsl #12);
    }
    if lo != 0 {
        a64!(ops; sub sp, sp, #lo);
    }
}

/// `reg = value` (64-bit) with `movz`/`movn` and `movk`, skipping halfwords that the first
/// instruction already set.
pub(crate) fn mov_imm(ops: &mut Asm, reg: u8, value: i64) {
    let v = value as u64;
    let halves = [0u32, 1, 2, 3].map(|i| ((v >> (16 * i)) & 0xffff) as u32);
    let ones = halves.iter().filter(|&&h| h == 0xffff).count();
    let zeros = halves.iter().filter(|&&h| h == 0).count();
    if zeros == 4 {
        a64!(ops; mov X(reg), xzr);
        return;
    }
    // movn fills with ones: better when more halfwords are all-ones than all-zeros.
    let fill = if ones > zeros { 0xffff } else { 0 };
    let mut first = true;
    for (i, &h) in halves.iter().enumerate() {
        if h == fill {
            continue;
        }
        if first {
            first = false;
            if fill == 0 {
                match i {
                    0 => a64!(ops; movz X(reg), #h),
                    1 => a64!(ops; movz X(reg), #h, lsl #16),
                    2 => a64!(ops; movz X(reg), #h, lsl #32),
                    _ => a64!(ops; movz X(reg), #h, lsl #48),
                }
            } else {
                let n = !h & 0xffff;
                match i {
                    0 => a64!(ops; movn X(reg), #n),
                    1 => a64!(ops; movn X(reg), #n, lsl #16),
                    2 => a64!(ops; movn X(reg), #n, lsl #32),
                    _ => a64!(ops; movn X(reg), #n, lsl #48),
                }
            }
        } else {
            match i {
                0 => a64!(ops; movk X(reg), #h),
                1 => a64!(ops; movk X(reg), #h, lsl #16),
                2 => a64!(ops; movk X(reg), #h, lsl #32),
                _ => a64!(ops; movk X(reg), #h, lsl #48),
            }
        }
    }
    if first {
        // Every halfword is all-ones.
        a64!(ops; movn X(reg), #0);
    }
}

/// The frame value `[sp + slot] += value` (64-bit, wrapping); clobbers x0 and x16.
pub(crate) fn add_slot(ops: &mut Asm, slot: i32, value: i64) {
    if value == 0 {
        return;
    }
    ldr_slot(ops, Slot::X, gpr::X0, slot);
    add_imm(ops, gpr::X0, value);
    str_slot(ops, Slot::X, gpr::X0, slot);
}

/// `reg = reg * value` (64-bit, wrapping); clobbers x16. `reg` must not be x16.
pub(crate) fn mul_imm(ops: &mut Asm, reg: u8, value: i64) {
    if value == 1 {
        return;
    }
    if value == 0 {
        a64!(ops; mov X(reg), xzr);
    } else {
        mov_imm(ops, gpr::X16, value);
        a64!(ops; mul X(reg), X(reg), x16);
    }
}

/// `reg = reg + value` (64-bit, wrapping); clobbers x16. `reg` must not be x16.
pub(crate) fn add_imm(ops: &mut Asm, reg: u8, value: i64) {
    if value == 0 {
        return;
    }
    if (1..4096).contains(&value) {
        let v = value as u32;
        a64!(ops; add XSP(reg), XSP(reg), #v);
    } else if (-4095..0).contains(&value) {
        let v = value.unsigned_abs() as u32;
        a64!(ops; sub XSP(reg), XSP(reg), #v);
    } else {
        mov_imm(ops, gpr::X16, value);
        a64!(ops; add X(reg), X(reg), x16);
    }
}
