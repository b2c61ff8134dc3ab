//! The VEX forms dynasm 5.1 encodes wrongly, written as bytes: the FMA instructions with
//! VEX.W = 1 (`vfmadd231pd`, `vfmadd231sd`) come out as their single-precision twins, so
//! every `vfmadd231` and `vfmadd213` form the loop kernels use is built here (the f32 ones
//! too, so one encoder serves all); likewise `vgatherdpd` (it comes out as `vgatherdps`).
//! `tests/encoding.rs` decodes each with iced-x86.

/// `vfmadd231{ps,pd,ss,sd} dst, b, c` (VEX.66.0F38 B8 packed / B9 scalar): `dst += b · c`,
/// rounded once. `wide` picks f64 (W = 1); `packed` picks the 256-bit packed form (ymm, L = 1)
/// over the scalar one (xmm, L = 0). Registers are 0–15.
pub(crate) fn vfmadd231(dst: u8, b: u8, c: u8, wide: bool, packed: bool) -> [u8; 5] {
    vfmadd_rr(if packed { 0xB8 } else { 0xB9 }, dst, b, c, wide, packed)
}

/// `vfmadd213{ps,pd} ymm(dst), ymm(b), ymm(c)` (VEX.256.66.0F38 A8): `dst = b · dst + c`,
/// rounded once — the form for a destination that holds a factor. `wide` picks f64 (W = 1).
/// Registers are 0–15.
pub(crate) fn vfmadd213(dst: u8, b: u8, c: u8, wide: bool) -> [u8; 5] {
    vfmadd_rr(0xA8, dst, b, c, wide, true)
}

/// An FMA with opcode `opcode`, all operands registers: ModRM.reg `dst`, VEX.vvvv `b`,
/// ModRM.rm `c`.
fn vfmadd_rr(opcode: u8, dst: u8, b: u8, c: u8, wide: bool, packed: bool) -> [u8; 5] {
    let inv = |r: u8| (!(r >> 3)) & 1;
    [
        0xC4,
        // R̄ X̄ B̄, then map 0F38.
        (inv(dst) << 7) | (1 << 6) | (inv(c) << 5) | 0b00010,
        // W, v̄vvv (the first source), L, pp = 66.
        (u8::from(wide) << 7) | ((!b & 0xF) << 3) | (u8::from(packed) << 2) | 0b01,
        opcode,
        0xC0 | ((dst & 7) << 3) | (c & 7),
    ]
}

/// `vgatherdpd ymm(dst), [rcx + xmm(index) * 8], ymm(mask)` (VEX.256.66.0F38.W1 92 /r with
/// VSIB): dynasm 5.1 drops its W = 1 and emits `vgatherdps`. Loads the f64 (or 64-bit) lane
/// `i` from `rcx + 8 · index[i]` where the mask lane's sign bit is set, and clears the mask.
/// Registers are 0–15 and must differ (the instruction faults otherwise).
pub(crate) fn vgatherdpd_rcx(dst: u8, index: u8, mask: u8) -> [u8; 6] {
    let inv = |r: u8| (!(r >> 3)) & 1;
    [
        0xC4,
        // R̄ X̄ B̄ (the base, rcx, is a low register), then map 0F38.
        (inv(dst) << 7) | (inv(index) << 6) | (1 << 5) | 0b00010,
        // W = 1, v̄vvv (the mask), L = 1, pp = 66.
        (1 << 7) | ((!mask & 0xF) << 3) | (1 << 2) | 0b01,
        0x92,
        // mod 00, reg = dst, rm = 100 (a SIB follows).
        ((dst & 7) << 3) | 0b100,
        // scale 8, index = the vector register, base = rcx.
        (0b11 << 6) | ((index & 7) << 3) | 0b001,
    ]
}

/// `vfmadd231{ps,pd} ymm(dst), ymm(b), [rsp + disp]` (VEX.256.66.0F38 B8 /r with a memory
/// operand): `dst += b · m256`, rounded once, the second factor read from the frame. `wide`
/// picks f64 (W = 1). Registers are 0–15.
pub(crate) fn vfmadd231_rsp(dst: u8, b: u8, disp: i32, wide: bool) -> [u8; 10] {
    let inv = |r: u8| (!(r >> 3)) & 1;
    let d = disp.to_le_bytes();
    [
        0xC4,
        // R̄, X̄ and B̄ (rsp, no index), then map 0F38.
        (inv(dst) << 7) | (1 << 6) | (1 << 5) | 0b00010,
        // W, v̄vvv (the first factor), L = 1, pp = 66.
        (u8::from(wide) << 7) | ((!b & 0xF) << 3) | (1 << 2) | 0b01,
        0xB8,
        // mod 10 (disp32), reg = dst, rm = 100 (a SIB follows).
        0x80 | ((dst & 7) << 3) | 0b100,
        // No index, base rsp.
        0x24,
        d[0],
        d[1],
        d[2],
        d[3],
    ]
}
