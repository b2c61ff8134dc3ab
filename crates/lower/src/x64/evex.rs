//! The few AVX-512 instructions the AVX-512 tier emits, encoded here because dynasm 5.1 has
//! no EVEX support (no zmm, no xmm16–31, no mask registers): masked 256-bit loads and stores
//! (AVX-512F + VL) and mask-register moves. The bytes are spliced into the dynasm stream;
//! labels and branches stay with dynasm. Every form is checked against iced-x86's decoder in
//! `tests/encoding.rs`.
//!
//! EVEX layout used: `62 P0 P1 P2 opcode ModRM [SIB]` with
//! `P0 = R̄ X̄ B̄ R̄' 0 0 m m` (map 0F: `mm = 01`), `P1 = W v̄v̄v̄v̄ 1 p p` (no vvvv operand:
//! `1111`), `P2 = z L'L b V̄' a a a` (256-bit: `L'L = 01`). Registers are 0–15, so `R̄'`, `V̄'`
//! are always 1, and memory operands are `[base + index * scale]` without displacement (the
//! base is never rbp/r13, which would need one).

/// A memory operand `[base + index * scale]` (general registers 0–15, base not rbp/r13).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mem {
    pub base: u8,
    pub index: u8,
    /// 1, 2, 4 or 8.
    pub scale: u8,
}

/// Element width of a masked move: each mask bit covers one 32-bit or 64-bit lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lanes {
    /// `vmovups`/`vmovaps` (W0, no prefix): 8 × 32-bit lanes in a ymm.
    Dword,
    /// `vmovupd`/`vmovapd` (W1, 66): 4 × 64-bit lanes in a ymm.
    Qword,
}

fn bit(v: u8, n: u8) -> u8 {
    (v >> n) & 1
}

/// The EVEX prefix for a 256-bit map-0F instruction with ModRM register `reg`, index `x`
/// and base/rm `b` (their bit 3 goes into the inverted R/X/B bits), mask `k`, zeroing `z`.
fn prefix(lanes: Lanes, reg: u8, x: u8, b: u8, k: u8, z: bool) -> [u8; 4] {
    let p0 = ((1 - bit(reg, 3)) << 7)
        | ((1 - bit(x, 3)) << 6)
        | ((1 - bit(b, 3)) << 5)
        | (1 << 4)
        | 0b01;
    let (w, pp) = match lanes {
        Lanes::Dword => (0, 0b00),
        Lanes::Qword => (1, 0b01),
    };
    let p1 = (w << 7) | (0b1111 << 3) | (1 << 2) | pp;
    let p2 = (u8::from(z) << 7) | (0b01 << 5) | (1 << 3) | (k & 7);
    [0x62, p0, p1, p2]
}

fn modrm_sib(reg: u8, mem: Mem) -> [u8; 2] {
    let ss = match mem.scale {
        1 => 0,
        2 => 1,
        4 => 2,
        _ => 3,
    };
    [
        ((reg & 7) << 3) | 0b100,
        (ss << 6) | ((mem.index & 7) << 3) | (mem.base & 7),
    ]
}

/// `vmovups/vmovupd ymm(dst){k}{z}, [mem]`: loads the lanes whose mask bit is set and zeroes
/// the others; masked-off lanes are never accessed (no fault even past a buffer's end).
pub(crate) fn load_masked(lanes: Lanes, dst: u8, mem: Mem, k: u8) -> [u8; 7] {
    let [a, b, c, d] = prefix(lanes, dst, mem.index, mem.base, k, true);
    let [m, s] = modrm_sib(dst, mem);
    [a, b, c, d, 0x10, m, s]
}

/// `vmovups/vmovupd [mem]{k}, ymm(src)`: stores only the lanes whose mask bit is set.
pub(crate) fn store_masked(lanes: Lanes, src: u8, mem: Mem, k: u8) -> [u8; 7] {
    let [a, b, c, d] = prefix(lanes, src, mem.index, mem.base, k, false);
    let [m, s] = modrm_sib(src, mem);
    [a, b, c, d, 0x11, m, s]
}

/// `vmovaps/vmovapd ymm(dst){k}, ymm(src)`: merges `src` into the lanes of `dst` whose mask
/// bit is set.
pub(crate) fn move_merge(lanes: Lanes, dst: u8, src: u8, k: u8) -> [u8; 6] {
    // Register-direct rm: B̄ extends it, X̄ would be its bit 4 (always 1 here).
    let [a, b, c, d] = prefix(lanes, dst, 0, src, k, false);
    [a, b, c, d, 0x28, 0xC0 | ((dst & 7) << 3) | (src & 7)]
}

/// `kmovw k(k), r32(src)` (VEX, AVX-512F), for general registers 0–7.
pub(crate) fn kmovw_from_gpr(k: u8, src: u8) -> [u8; 4] {
    [0xC5, 0xF8, 0x92, 0xC0 | ((k & 7) << 3) | (src & 7)]
}
