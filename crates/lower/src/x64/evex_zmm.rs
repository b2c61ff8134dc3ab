//! The 512-bit EVEX instructions of the loop kernels' zmm path (`vector_zmm.rs`), encoded
//! here because dynasm 5.1 has no EVEX support. One general encoder ([`emit`]) takes any
//! register/memory form with an optional opmask, zeroing and immediate; the opcodes are named
//! in [`zv`]. Only AVX-512F instructions appear (the tier's declared features: no BW or DQ
//! forms such as `vandps zmm` or `vpmovm2d`), which `tests/encoding.rs` checks against
//! iced-x86 along with every form's bytes.
//!
//! Memory displacements are always disp32 (or none): EVEX's compressed disp8 scales by a
//! size that depends on each instruction's tuple type, and a wrong guess would address the
//! wrong bytes without any decoder complaining.

use super::evex::Op;

/// The r/m operand of an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Zrm {
    /// A zmm register 0–31 (a general register 0–15 for the broadcast-from-GPR form).
    Reg(u8),
    /// `[base + index * scale + disp]`, general registers 0–15; `index` is `(register,
    /// scale)` with a register other than rsp.
    Mem {
        base: u8,
        index: Option<(u8, u8)>,
        disp: i32,
    },
}

impl Zrm {
    /// `[base + disp]`, general register `base` 0–15.
    pub(crate) fn at(base: u8, disp: i32) -> Self {
        Zrm::Mem {
            base,
            index: None,
            disp,
        }
    }

    /// `[rsp + disp]`: a frame slot.
    pub(crate) fn rsp(disp: i32) -> Self {
        Self::at(4, disp)
    }
}

/// One instruction: `op reg, vvvv, rm` under opmask `k` (0 for none), zeroing masked-off
/// lanes when `zero`, with an immediate when `imm` is set. `reg` is a zmm register, an opmask
/// (compares and tests) or an opcode extension (`/6` shifts); `vvvv` is 0 when unused.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Zins {
    pub op: Op,
    pub reg: u8,
    pub vvvv: u8,
    pub rm: Zrm,
    pub k: u8,
    pub zero: bool,
    pub imm: Option<u8>,
    /// EVEX.L'L: 2 for 512 bits (the default), 1 for a 256-bit ymm form, 0 for 128 bits or
    /// a scalar (`ss`/`sd`) form.
    pub len: u8,
}

impl Zins {
    /// `op reg, vvvv, rm`, unmasked, no immediate.
    pub(crate) fn new(op: Op, reg: u8, vvvv: u8, rm: Zrm) -> Self {
        Zins {
            op,
            reg,
            vvvv,
            rm,
            k: 0,
            zero: false,
            imm: None,
            len: 2,
        }
    }

    /// `op reg, vvvv, zmm(rm)`.
    pub(crate) fn rrr(op: Op, reg: u8, vvvv: u8, rm: u8) -> Self {
        Self::new(op, reg, vvvv, Zrm::Reg(rm))
    }

    /// The same with immediate `imm`.
    pub(crate) fn imm(self, imm: u8) -> Self {
        Zins {
            imm: Some(imm),
            ..self
        }
    }

    /// The same in 256-bit ymm registers (the AVX512VL form).
    pub(crate) fn ymm(self) -> Self {
        Zins { len: 1, ..self }
    }

    /// The same as a scalar (`ss`/`sd`) or 128-bit form.
    pub(crate) fn scalar(self) -> Self {
        Zins { len: 0, ..self }
    }

    /// The same under opmask `k`, zeroing (`zero`) or merging the other lanes.
    pub(crate) fn mask(self, k: u8, zero: bool) -> Self {
        Zins { k, zero, ..self }
    }
}

fn bit(v: u8, n: u8) -> u8 {
    (v >> n) & 1
}

/// Appends `i`'s bytes to `out`.
pub(crate) fn emit(out: &mut impl Extend<u8>, i: Zins) {
    let (b, x) = match i.rm {
        // A register rm extends with B (bit 3) and X (bit 4).
        Zrm::Reg(r) => (bit(r, 3), bit(r, 4)),
        Zrm::Mem { base, index, .. } => (bit(base, 3), index.map_or(0, |(r, _)| bit(r, 3))),
    };
    let op = i.op;
    let p0 = ((1 - bit(i.reg, 3)) << 7)
        | ((1 - x) << 6)
        | ((1 - b) << 5)
        | ((1 - bit(i.reg, 4)) << 4)
        | (op.map & 3);
    let p1 = (u8::from(op.w) << 7) | ((!i.vvvv & 0xF) << 3) | (1 << 2) | (op.pp & 3);
    let p2 = (u8::from(i.zero) << 7) | ((i.len & 3) << 5) | ((1 - bit(i.vvvv, 4)) << 3) | (i.k & 7);
    out.extend([0x62, p0, p1, p2, op.opcode]);
    let reg = (i.reg & 7) << 3;
    match i.rm {
        Zrm::Reg(r) => out.extend([0xC0 | reg | (r & 7)]),
        Zrm::Mem { base, index, disp } => {
            let md = if disp == 0 && base & 7 != 5 {
                0b00
            } else {
                0b10
            };
            match index {
                Some((r, scale)) => {
                    debug_assert!(matches!(scale, 1 | 2 | 4 | 8), "scale {scale}");
                    let ss = match scale {
                        1 => 0,
                        2 => 1,
                        4 => 2,
                        _ => 3,
                    };
                    out.extend([
                        (md << 6) | reg | 0b100,
                        (ss << 6) | ((r & 7) << 3) | (base & 7),
                    ]);
                }
                // rsp/r12 as a base need a SIB byte: no index, that base.
                None if base & 7 == 4 => out.extend([(md << 6) | reg | 0b100, 0x24]),
                None => out.extend([(md << 6) | reg | (base & 7)]),
            }
            if md == 0b10 {
                out.extend(disp.to_le_bytes());
            }
        }
    }
    if let Some(imm) = i.imm {
        out.extend([imm]);
    }
}

/// The opcodes; `wide` picks the 64-bit-lane form (pd / q, W1) of the 32-bit one.
pub(crate) mod zv {
    use super::Op;

    const fn op(map: u8, pp: u8, w: bool, opcode: u8) -> Op {
        Op { map, pp, w, opcode }
    }

    /// A packed-float op of map 0F: no prefix (ps) or 66 W1 (pd).
    const fn float(wide: bool, opcode: u8) -> Op {
        op(1, wide as u8, wide, opcode)
    }

    /// `vmovups`/`vmovupd zmm, m512`.
    pub(crate) const fn load(wide: bool) -> Op {
        float(wide, 0x10)
    }
    /// `vmovups`/`vmovupd m512, zmm`.
    pub(crate) const fn store(wide: bool) -> Op {
        float(wide, 0x11)
    }
    /// `vmovntps`/`vmovntpd m512, zmm`: a store that bypasses the cache (the address must be
    /// 64-byte aligned).
    pub(crate) const fn store_nt(wide: bool) -> Op {
        float(wide, 0x2b)
    }
    /// `vmovaps zmm, zmm` (a register copy; also with a merge mask).
    pub(crate) const fn mov(wide: bool) -> Op {
        float(wide, 0x28)
    }
    pub(crate) const fn add(wide: bool) -> Op {
        float(wide, 0x58)
    }
    pub(crate) const fn mul(wide: bool) -> Op {
        float(wide, 0x59)
    }
    pub(crate) const fn sub(wide: bool) -> Op {
        float(wide, 0x5C)
    }
    pub(crate) const fn min(wide: bool) -> Op {
        float(wide, 0x5D)
    }
    pub(crate) const fn div(wide: bool) -> Op {
        float(wide, 0x5E)
    }
    pub(crate) const fn max(wide: bool) -> Op {
        float(wide, 0x5F)
    }
    /// `vsqrtps`/`pd zmm, zmm` (no vvvv).
    pub(crate) const fn sqrt(wide: bool) -> Op {
        float(wide, 0x51)
    }
    /// `vcmpps`/`pd k, zmm, zmm, imm8`.
    pub(crate) const fn cmp(wide: bool) -> Op {
        float(wide, 0xC2)
    }
    /// `vcvtdq2ps zmm, zmm`.
    pub(crate) const CVTDQ2PS: Op = op(1, 0, false, 0x5B);
    /// `vcvttps2dq zmm, zmm` (F3).
    pub(crate) const CVTTPS2DQ: Op = op(1, 2, false, 0x5B);
    /// `vpandd`, `vpandnd` (`~vvvv & rm`), `vpord`, `vpxord`.
    pub(crate) const PAND: Op = op(1, 1, false, 0xDB);
    pub(crate) const PANDN: Op = op(1, 1, false, 0xDF);
    pub(crate) const POR: Op = op(1, 1, false, 0xEB);
    pub(crate) const PXOR: Op = op(1, 1, false, 0xEF);
    /// `vpord`/`vporq`: the OR with the lane width an opmask counts in.
    pub(crate) const fn por(wide: bool) -> Op {
        op(1, 1, wide, 0xEB)
    }
    pub(crate) const fn padd(wide: bool) -> Op {
        if wide {
            op(1, 1, true, 0xD4)
        } else {
            op(1, 1, false, 0xFE)
        }
    }
    pub(crate) const fn psub(wide: bool) -> Op {
        if wide {
            op(1, 1, true, 0xFB)
        } else {
            op(1, 1, false, 0xFA)
        }
    }
    /// `vpmulld`.
    pub(crate) const PMULLD: Op = op(2, 1, false, 0x40);
    /// `vpmaxsd`/`q`, `vpminsd`/`q` (signed).
    pub(crate) const fn pmaxs(wide: bool) -> Op {
        op(2, 1, wide, 0x3D)
    }
    pub(crate) const fn pmins(wide: bool) -> Op {
        op(2, 1, wide, 0x39)
    }
    /// Variable shifts: `vpsllvd`/`q`, `vpsrlvd`/`q`, `vpsravd`/`q`.
    pub(crate) const fn psllv(wide: bool) -> Op {
        op(2, 1, wide, 0x47)
    }
    pub(crate) const fn psrlv(wide: bool) -> Op {
        op(2, 1, wide, 0x45)
    }
    pub(crate) const fn psrav(wide: bool) -> Op {
        op(2, 1, wide, 0x46)
    }
    /// Shifts by an immediate, `vpslld`/`q` (`/6`) and `vpsrld`/`q` (`/2`): the destination
    /// goes in vvvv, the extension in reg.
    pub(crate) const fn pshift_imm(wide: bool) -> Op {
        if wide {
            op(1, 1, true, 0x73)
        } else {
            op(1, 1, false, 0x72)
        }
    }
    pub(crate) const SHIFT_LEFT: u8 = 6;
    pub(crate) const SHIFT_RIGHT: u8 = 2;
    /// `vpabsd`, `vpabsq`.
    pub(crate) const fn pabs(wide: bool) -> Op {
        if wide {
            op(2, 1, true, 0x1F)
        } else {
            op(2, 1, false, 0x1E)
        }
    }
    /// `vfmadd231ps`/`pd`: `reg += vvvv · rm`.
    pub(crate) const fn fmadd231(wide: bool) -> Op {
        op(2, 1, wide, 0xB8)
    }
    /// `vbroadcastss`/`sd zmm, m32`/`m64`: one element from memory into every lane.
    pub(crate) const fn broadcast(wide: bool) -> Op {
        op(2, 1, wide, if wide { 0x19 } else { 0x18 })
    }
    /// `vscalefps`/`pd`: `reg = vvvv · 2^⌊rm⌋`, rounded once.
    pub(crate) const fn scalef(wide: bool) -> Op {
        op(2, 1, wide, 0x2C)
    }
    /// `vscalefss`/`sd` (with [`Zins::scalar`]): lane 0 of `vvvv · 2^⌊rm⌋`, the rest of
    /// `vvvv` above it.
    pub(crate) const fn scalef_scalar(wide: bool) -> Op {
        op(2, 1, wide, 0x2D)
    }
    /// `vfmadd213ps`/`pd`: `reg = vvvv · reg + rm`.
    pub(crate) const fn fmadd213(wide: bool) -> Op {
        op(2, 1, wide, 0xA8)
    }
    /// `vptestmd`/`q k, zmm, zmm`: the lanes where `vvvv & rm` is not zero.
    pub(crate) const fn ptestm(wide: bool) -> Op {
        op(2, 1, wide, 0x27)
    }
    /// `vpblendmd`/`q zmm{k}, vvvv, rm`: `rm` where the mask is set, else `vvvv`.
    pub(crate) const fn pblendm(wide: bool) -> Op {
        op(2, 1, wide, 0x64)
    }
    /// `vpternlogd`/`q zmm, zmm, zmm, imm8`.
    pub(crate) const fn pternlog(wide: bool) -> Op {
        op(3, 1, wide, 0x25)
    }
    /// `vpcmpd`/`q k, zmm, zmm, imm8` (signed).
    pub(crate) const fn pcmp(wide: bool) -> Op {
        op(3, 1, wide, 0x1F)
    }
    /// `vrndscaleps`/`pd zmm, zmm, imm8`.
    pub(crate) const fn rndscale(wide: bool) -> Op {
        if wide {
            op(3, 1, true, 0x09)
        } else {
            op(3, 1, false, 0x08)
        }
    }
    /// `vrangeps`/`pd zmm, zmm, zmm, imm8` (AVX-512DQ): a max or min of each lane pair that
    /// orders `-0 < +0` but returns the other operand for a quiet NaN (see `vector_reduce.rs`).
    pub(crate) const fn range(wide: bool) -> Op {
        op(3, 1, wide, 0x50)
    }
    /// `vextractf64x4 ymm/m256, zmm, imm8`: the source goes in reg, the destination in r/m.
    pub(crate) const EXTRACTF64X4: Op = op(3, 1, true, 0x1B);
    /// `vextractf32x4 xmm/m128, zmm, imm8`: the source goes in reg, the destination in r/m.
    pub(crate) const EXTRACTF32X4: Op = op(3, 1, false, 0x19);
    /// `vinsertf32x4 zmm, zmm, xmm/m128, imm8`: the 128-bit lane `imm8` replaced.
    pub(crate) const INSERTF32X4: Op = op(3, 1, false, 0x18);
    /// `vunpcklps`/`vunpcklpd`: the low halves of each 128-bit lane's pair, interleaved.
    pub(crate) const fn unpckl(wide: bool) -> Op {
        float(wide, 0x14)
    }
    /// `vunpckhps`/`vunpckhpd`: the high halves, interleaved.
    pub(crate) const fn unpckh(wide: bool) -> Op {
        float(wide, 0x15)
    }
    /// `vshuff32x4 zmm, zmm, zmm, imm8`: 128-bit lanes 0 and 1 from the first source and 2
    /// and 3 from the second, each picked by two bits of `imm8`.
    pub(crate) const SHUFF32X4: Op = op(3, 1, false, 0x23);
    /// `vpbroadcastd zmm, r32` / `vpbroadcastq zmm, r64`.
    pub(crate) const fn pbroadcast_gpr(wide: bool) -> Op {
        op(2, 1, wide, 0x7C)
    }
    /// `vpbroadcastd zmm, m32` / `vpbroadcastq zmm, m64`.
    pub(crate) const fn pbroadcast_mem(wide: bool) -> Op {
        if wide {
            op(2, 1, true, 0x59)
        } else {
            op(2, 1, false, 0x58)
        }
    }
}
