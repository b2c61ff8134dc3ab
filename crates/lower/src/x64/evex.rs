//! The few AVX-512 instructions the AVX-512 tier emits, encoded here because dynasm 5.1 has
//! no EVEX support (no zmm, no xmm16–31, no mask registers): masked 256-bit loads and stores
//! (AVX-512F + VL) and mask-register moves and ANDs for loop kernels, and the 512-bit loads,
//! stores, FMAs, multiplies and adds (with embedded broadcasts) of the contraction microkernels
//! ([`zmm`], [`zop`]). The bytes are spliced into the dynasm stream;
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

/// `kandw k(dst), k(a), k(b)` (VEX, AVX-512F).
pub(crate) fn kandw(dst: u8, a: u8, b: u8) -> [u8; 4] {
    // VEX.L1.0F.W0 41 /r: R̄ set, vvvv the inverted `a`, L = 1, no prefix.
    let vvvv = (!a & 0xF) << 3;
    [
        0xC5,
        0x80 | vvvv | 0x04,
        0x41,
        0xC0 | ((dst & 7) << 3) | (b & 7),
    ]
}

/// Which opcode map, mandatory prefix and `W` bit an EVEX instruction has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Op {
    /// 1 = 0F, 2 = 0F38, 3 = 0F3A.
    pub map: u8,
    /// 0 = none, 1 = 66, 2 = F3, 3 = F2.
    pub pp: u8,
    /// EVEX.W.
    pub w: bool,
    /// The opcode byte.
    pub opcode: u8,
}

/// The register/memory operand of a 512-bit EVEX instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rm {
    /// zmm0–31.
    Reg(u8),
    /// `[base + disp]` (base a general register 0–15), with an embedded broadcast of one
    /// `element`-byte value when `broadcast` (then disp8 scales by the element size; else by
    /// the full 64 bytes).
    Mem {
        base: u8,
        disp: i32,
        broadcast: bool,
        element: u8,
    },
}

/// `op zmm(reg), zmm(vvvv), rm` as 512-bit EVEX (`L'L = 10`), no masking, as bytes. `vvvv`
/// is `None` for two-operand forms (loads and stores). Registers may be 0–31.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn zmm(op: Op, reg: u8, vvvv: Option<u8>, rm: Rm) -> smallvec::SmallVec<[u8; 16]> {
    let mut out = smallvec::SmallVec::new();
    emit_zmm(&mut out, op, reg, vvvv, rm);
    out
}

/// [`zmm`] appended to `out` directly. The microkernels emit thousands of these per compile,
/// and building each in a small buffer first cost a store-forwarding stall per instruction
/// (bytes stored one by one, then copied as one 16-byte load): a fifth of a GEMM's compile.
pub(crate) fn emit_zmm(out: &mut impl Extend<u8>, op: Op, reg: u8, vvvv: Option<u8>, rm: Rm) {
    let v = vvvv.unwrap_or(0);
    let (b_ext, x_ext, bcast) = match rm {
        // A register rm extends with B (bit 3) and X (bit 4).
        Rm::Reg(r) => (bit(r, 3), bit(r, 4), 0),
        Rm::Mem {
            base, broadcast, ..
        } => (bit(base, 3), 0, u8::from(broadcast)),
    };
    let p0 = ((1 - bit(reg, 3)) << 7)
        | ((1 - x_ext) << 6)
        | ((1 - b_ext) << 5)
        | ((1 - bit(reg, 4)) << 4)
        | (op.map & 3);
    let p1 = (u8::from(op.w) << 7) | ((!v & 0xF) << 3) | (1 << 2) | (op.pp & 3);
    let p2 = (0b10 << 5) | (bcast << 4) | ((1 - bit(v, 4)) << 3);
    out.extend([0x62, p0, p1, p2, op.opcode]);
    match rm {
        Rm::Reg(r) => out.extend([0xC0 | ((reg & 7) << 3) | (r & 7)]),
        Rm::Mem {
            base,
            disp,
            broadcast,
            element,
        } => {
            let n = if broadcast { i32::from(element) } else { 64 };
            let (md, disp8) = if disp == 0 && base & 7 != 5 {
                (0b00, None)
            } else if disp % n == 0 && i8::try_from(disp / n).is_ok() {
                (0b01, Some((disp / n) as i8))
            } else {
                (0b10, None)
            };
            out.extend([(md << 6) | ((reg & 7) << 3) | (base & 7)]);
            if base & 7 == 4 {
                // rsp/r12 as a base need a SIB byte: no index, base.
                out.extend([0x24]);
            }
            match md {
                0b01 => out.extend([disp8.unwrap_or(0) as u8]),
                0b10 => out.extend(disp.to_le_bytes()),
                _ => {}
            }
        }
    }
}

/// The 512-bit instructions the AVX-512 contraction microkernels use; `wide` selects the f64
/// form (66, W1) of the f32 one.
pub(crate) mod zop {
    use super::Op;

    /// `vmovups`/`vmovupd zmm, m512` (load).
    pub(crate) fn load(wide: bool) -> Op {
        Op {
            map: 1,
            pp: u8::from(wide),
            w: wide,
            opcode: 0x10,
        }
    }

    /// `vmovups`/`vmovupd m512, zmm` (store).
    pub(crate) fn store(wide: bool) -> Op {
        Op {
            opcode: 0x11,
            ..load(wide)
        }
    }

    /// `vfmadd231ps`/`pd zmm1, zmm2, zmm3/m/bcst`: `zmm1 += zmm2 · zmm3`.
    pub(crate) fn fmadd231(wide: bool) -> Op {
        Op {
            map: 2,
            pp: 1,
            w: wide,
            opcode: 0xB8,
        }
    }

    /// `vmulps`/`pd zmm1, zmm2, zmm3/m/bcst`.
    pub(crate) fn mul(wide: bool) -> Op {
        Op {
            opcode: 0x59,
            ..load(wide)
        }
    }

    /// `vaddps`/`pd zmm1, zmm2, zmm3/m/bcst`.
    pub(crate) fn add(wide: bool) -> Op {
        Op {
            opcode: 0x58,
            ..load(wide)
        }
    }

    /// `vpxord zmm1, zmm2, zmm3`: zeroing a register (AVX-512F, unlike `vxorps zmm`).
    pub(crate) fn pxor() -> Op {
        Op {
            map: 1,
            pp: 1,
            w: false,
            opcode: 0xEF,
        }
    }
}
