//! The x86-64 contraction microkernels: `mr × nr` accumulators in vector registers, one pass
//! over k, then the accumulators stored into the buffer T (`emit/contraction.rs`), or into the
//! output itself for the last block of a direct store.
//!
//! One shape per tier and dtype ([`Micro::for_tier`]):
//!
//! | tier | vectors | f32 tile | f64 tile | accumulators | per k |
//! |---|---|---|---|---|---|
//! | SSE2 | xmm | 4 × 8 | 4 × 4 | xmm0–7 | 2 loads of B, 4 broadcasts, 8 mul + 8 add |
//! | AVX2 | ymm | 6 × 16 | 6 × 8 | ymm0–11 | 2 loads of B, 6 broadcasts, 12 FMAs |
//! | AVX-512 | zmm | 14 × 32 | 14 × 16 | zmm0–27 | 2 loads of B, 14 broadcasts, 28 FMAs |
//!
//! A broadcast into a register, not an FMA with an embedded broadcast operand: the operand form
//! loads A's element once per FMA, 30 loads per step of k where the load ports take 2 a cycle
//! — more cycles than the 28 FMAs need; broadcasting once per row makes it 16.
//!
//! In exact mode (and always on SSE2, which has no FMA) each step is a rounded multiply into a
//! temporary, then an add — the interpreter's `acc + a·b`, bit for bit, every accumulator
//! summing its k terms in ascending order; in default mode a fused multiply-add, and a panel
//! of few rows spreads the steps of k over several sets of accumulators ([`Micro::sets`]),
//! added at the end.
//!
//! Register use: `rsi` walks A (one row per `lda` bytes), `rdi` walks B, `rcx` counts k, `r15`
//! points at the panel's columns of the buffer T (and `r10` at the output's, for a direct
//! store). The AVX-512 forms are encoded by
//! `evex.rs` (dynasm has no EVEX).

use accy_ir::DType;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{x64, Asm};
use super::evex::{self, zop, Rm};
use super::X64Tier;
use crate::emit::contraction::Init;

/// The vector register file a microkernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Vx {
    /// 128-bit xmm, SSE2 encodings.
    Sse,
    /// 256-bit ymm, VEX encodings.
    Avx,
    /// 512-bit zmm, EVEX encodings.
    Zmm,
}

/// One microkernel shape.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Micro {
    pub vx: Vx,
    /// f64 lanes (else f32).
    pub wide: bool,
    /// Full tile rows.
    pub mr: u64,
    /// Vectors per tile row.
    pub nv: u64,
    /// Fused multiply-add (default mode on FMA tiers).
    pub fma: bool,
}

const RSI: u8 = 6;
const RDI: u8 = 7;
const R15: u8 = 15;

impl Micro {
    /// The shape for `tier` and `dtype` (f32 or f64); `fma` in default mode where the tier has
    /// FMA.
    pub(crate) fn for_tier(tier: X64Tier, dtype: DType, reassociate: bool) -> Micro {
        let wide = dtype == DType::F64;
        match tier {
            X64Tier::Sse2 => Micro {
                vx: Vx::Sse,
                wide,
                mr: 4,
                nv: 2,
                fma: false,
            },
            X64Tier::Avx2 => Micro {
                vx: Vx::Avx,
                wide,
                mr: 6,
                nv: 2,
                fma: reassociate,
            },
            X64Tier::Avx512 => Micro {
                vx: Vx::Zmm,
                wide,
                mr: 14,
                nv: 2,
                fma: reassociate,
            },
        }
    }

    /// Bytes of one step of B in a panel: `nr` elements.
    fn nr_bytes(&self) -> i32 {
        (self.nv * self.vbytes()) as i32
    }

    /// Bytes of one vector register.
    pub(crate) fn vbytes(&self) -> u64 {
        match self.vx {
            Vx::Sse => 16,
            Vx::Avx => 32,
            Vx::Zmm => 64,
        }
    }

    /// Bytes of one element.
    pub(crate) fn size(&self) -> u64 {
        if self.wide {
            8
        } else {
            4
        }
    }

    /// Columns of a tile.
    pub(crate) fn nr(&self) -> u64 {
        self.nv * self.vbytes() / self.size()
    }

    /// The accumulator register of row `i`, vector `j`.
    fn acc(&self, i: u64, j: u64) -> u8 {
        (i * self.nv + j) as u8
    }

    /// How many sets of accumulators a panel of `rows` rows sums k into, round robin, in
    /// default mode: a short panel has too few accumulators to hide the FMA's latency (a
    /// 2-row AVX-512 panel waited 4 cycles per step of k on its 4 chains), so steps of k
    /// alternate between sets, added together at the end — a split of k, which the default
    /// mode's bound allows. Exact mode sums each output in ascending k: one set.
    fn sets(&self, rows: u64) -> u64 {
        if !self.fma || rows == 0 {
            return 1;
        }
        let chains = (rows * self.nv).max(1);
        IN_FLIGHT
            .div_ceil(chains)
            .min(self.mr / rows)
            .clamp(1, UNROLL)
    }

    /// `acc += other`, lane by lane (a set of partial sums into the first).
    fn add(&self, ops: &mut Asm, acc: u8, other: u8) {
        match (self.vx, self.wide) {
            (Vx::Sse, false) => x64!(ops; addps Rx(acc), Rx(other)),
            (Vx::Sse, true) => x64!(ops; addpd Rx(acc), Rx(other)),
            (Vx::Avx, false) => x64!(ops; vaddps Ry(acc), Ry(acc), Ry(other)),
            (Vx::Avx, true) => x64!(ops; vaddpd Ry(acc), Ry(acc), Ry(other)),
            (Vx::Zmm, wide) => {
                evex::emit_zmm(ops, zop::add(wide), acc, Some(acc), Rm::Reg(other));
            }
        }
    }

    /// The register holding vector `j` of the current B row.
    fn b(&self, j: u64) -> u8 {
        (self.mr * self.nv + j) as u8
    }

    /// The register A's element is broadcast into.
    fn a(&self) -> u8 {
        (self.mr * self.nv + self.nv) as u8
    }

    /// The product temporary of exact mode.
    fn tmp(&self) -> u8 {
        self.a() + 1
    }

    fn zero(&self, ops: &mut Asm, r: u8) {
        match self.vx {
            Vx::Sse => x64!(ops; xorps Rx(r), Rx(r)),
            Vx::Avx => x64!(ops; vxorps Ry(r), Ry(r), Ry(r)),
            Vx::Zmm => evex::emit_zmm(ops, zop::pxor(), r, Some(r), Rm::Reg(r)),
        }
    }

    /// `r = ` the vector at `[base + disp]`.
    pub(crate) fn load(&self, ops: &mut Asm, r: u8, base: u8, disp: i32) {
        match self.vx {
            Vx::Sse => x64!(ops; movups Rx(r), [Rq(base) + disp]),
            Vx::Avx => x64!(ops; vmovups Ry(r), [Rq(base) + disp]),
            Vx::Zmm => evex::emit_zmm(ops, zop::load(self.wide), r, None, mem(base, disp)),
        }
    }

    /// The vector at `[base + disp] = r`.
    pub(crate) fn store(&self, ops: &mut Asm, base: u8, disp: i32, r: u8) {
        match self.vx {
            Vx::Sse => x64!(ops; movups [Rq(base) + disp], Rx(r)),
            Vx::Avx => x64!(ops; vmovups [Rq(base) + disp], Ry(r)),
            Vx::Zmm => evex::emit_zmm(ops, zop::store(self.wide), r, None, mem(base, disp)),
        }
    }

    /// `a() = A element at [base + disp]` in every lane (SSE and AVX).
    fn broadcast(&self, ops: &mut Asm, base: u8, disp: i32) {
        let a = self.a();
        match (self.vx, self.wide) {
            (Vx::Sse, false) => {
                x64!(ops; movss Rx(a), DWORD [Rq(base) + disp] ; shufps Rx(a), Rx(a), 0)
            }
            (Vx::Sse, true) => {
                x64!(ops; movsd Rx(a), QWORD [Rq(base) + disp] ; unpcklpd Rx(a), Rx(a))
            }
            // dynasm 5.1 encodes `vbroadcastss ymm, m32` as the xmm form; AVX2's vpbroadcastd
            // moves the same bits.
            (Vx::Avx, false) => x64!(ops; vpbroadcastd Ry(a), DWORD [Rq(base) + disp]),
            (Vx::Avx, true) => x64!(ops; vbroadcastsd Ry(a), QWORD [Rq(base) + disp]),
            (Vx::Zmm, wide) => {
                let op = super::evex_zmm::zv::broadcast(wide);
                let mem = super::evex_zmm::Zrm::Mem {
                    base,
                    index: None,
                    disp,
                };
                super::evex_zmm::emit(ops, super::evex_zmm::Zins::new(op, a, 0, mem));
            }
        }
    }

    /// `acc += b · a` where `a` is the broadcast register.
    fn step(&self, ops: &mut Asm, acc: u8, b: u8) {
        let a = self.a();
        let t = self.tmp();
        match (self.vx, self.wide, self.fma) {
            (Vx::Sse, false, _) => {
                x64!(ops; movaps Rx(t), Rx(b) ; mulps Rx(t), Rx(a) ; addps Rx(acc), Rx(t))
            }
            (Vx::Sse, true, _) => {
                x64!(ops; movapd Rx(t), Rx(b) ; mulpd Rx(t), Rx(a) ; addpd Rx(acc), Rx(t))
            }
            (Vx::Avx, false, true) => x64!(ops; vfmadd231ps Ry(acc), Ry(b), Ry(a)),
            (Vx::Avx, true, true) => ops.extend(vfmadd231pd(acc, b, a)),
            (Vx::Avx, false, false) => {
                x64!(ops; vmulps Ry(t), Ry(b), Ry(a) ; vaddps Ry(acc), Ry(acc), Ry(t))
            }
            (Vx::Avx, true, false) => {
                x64!(ops; vmulpd Ry(t), Ry(b), Ry(a) ; vaddpd Ry(acc), Ry(acc), Ry(t))
            }
            (Vx::Zmm, wide, fma) => {
                let a = Rm::Reg(a);
                if fma {
                    evex::emit_zmm(ops, zop::fmadd231(wide), acc, Some(b), a);
                } else {
                    // The product rounds into zmm`t` (zmm31 for a full tile), then the add.
                    evex::emit_zmm(ops, zop::mul(wide), t, Some(b), a);
                    evex::emit_zmm(ops, zop::add(wide), acc, Some(acc), Rm::Reg(t));
                }
            }
        }
    }

    /// The microkernel for a panel of `rows` rows (`rows ≤ mr`): with `rsi` at A's row panel
    /// (element `k = k0` of its first row), `rdi` at the B panel (`k = k0`), `r15` at the
    /// panel's place in the buffer T, computes `rows × nr` sums over `k_len` steps
    /// (starting from +0, or from the sums stored there by the previous block of k, per
    /// `init`) and stores them at `r15 + i · t_row` (row `i`). A advances `ak` bytes per step
    /// (rows are `lda` bytes apart), B `bk` bytes. With `prefetch_b`, each step also asks for
    /// the lines of the panel's B (`nr` elements) that many bytes ahead of its own, into the
    /// L2 cache. With `out` = (register, row bytes), the sums are stored there instead (the
    /// output of a direct store; `Init::Load` still reads `T`). Clobbers rsi, rdi, rcx and the
    /// vector registers.
    #[allow(
        clippy::too_many_arguments,
        reason = "the static shape of one microkernel call"
    )]
    pub(crate) fn emit(
        &self,
        ops: &mut Asm,
        rows: u64,
        k_len: u64,
        init: Init,
        lda: i32,
        ak: i32,
        bk: i32,
        t_row: i32,
        prefetch_b: Option<i32>,
        out: Option<(u8, i32)>,
    ) {
        let vb = self.vbytes() as i32;
        let sets = self.sets(rows);
        let set_regs = (rows * self.nv) as u8;
        for i in 0..rows {
            for j in 0..self.nv {
                match init {
                    Init::Zero => self.zero(ops, self.acc(i, j)),
                    Init::Load => {
                        self.load(ops, self.acc(i, j), R15, i as i32 * t_row + j as i32 * vb)
                    }
                }
                for s in 1..sets as u8 {
                    self.zero(ops, self.acc(i, j) + s * set_regs);
                }
            }
        }
        // UNROLL steps per iteration (fewer loop instructions per FMA), then the rest.
        let iterations = k_len / UNROLL;
        if iterations > 0 {
            let top = ops.new_dynamic_label();
            super::asm::mov_imm(ops, 1, iterations as i64);
            x64!(ops; =>top);
            for step in 0..UNROLL as i32 {
                let set = step as u64 % sets;
                self.step_all(ops, rows, lda, step * ak, step * bk, set);
                prefetch(ops, step * bk, self.nr_bytes(), prefetch_b);
            }
            x64!(ops
                ; add rsi, UNROLL as i32 * ak
                ; add rdi, UNROLL as i32 * bk
                ; sub rcx, 1
                ; jnz =>top
            );
        }
        for step in 0..(k_len % UNROLL) as i32 {
            let set = step as u64 % sets;
            self.step_all(ops, rows, lda, step * ak, step * bk, set);
            prefetch(ops, step * bk, self.nr_bytes(), prefetch_b);
        }
        for i in 0..rows {
            for j in 0..self.nv {
                for s in 1..sets as u8 {
                    self.add(ops, self.acc(i, j), self.acc(i, j) + s * set_regs);
                }
            }
        }
        let (base, row) = out.unwrap_or((R15, t_row));
        for i in 0..rows {
            for j in 0..self.nv {
                self.store(ops, base, i as i32 * row + j as i32 * vb, self.acc(i, j));
            }
        }
    }
}

/// `prefetcht1` of each line of the `bytes` of B at `rdi + b_at + ahead`, if `ahead`.
fn prefetch(ops: &mut Asm, b_at: i32, bytes: i32, ahead: Option<i32>) {
    let Some(ahead) = ahead else {
        return;
    };
    for line in (0..bytes.max(1)).step_by(64) {
        x64!(ops; prefetcht1 [rdi + b_at.saturating_add(ahead).saturating_add(line)]);
    }
}

/// Steps of k per microkernel loop iteration.
const UNROLL: u64 = 4;

/// Independent FMAs that keep both FMA ports busy through the instruction's latency (4
/// cycles × 2 ports on current x86 cores).
const IN_FLIGHT: u64 = 8;

impl Micro {
    /// One step of k: B's vectors at `rdi + b_at`, each row's A element at
    /// `rsi + a_at + i · lda`, into every accumulator of set `set` (see [`Micro::sets`]).
    fn step_all(&self, ops: &mut Asm, rows: u64, lda: i32, a_at: i32, b_at: i32, set: u64) {
        let offset = (set * rows * self.nv) as u8;
        let vb = self.vbytes() as i32;
        for j in 0..self.nv {
            self.load(ops, self.b(j), RDI, b_at + j as i32 * vb);
        }
        for i in 0..rows {
            let disp = a_at + i as i32 * lda;
            self.broadcast(ops, RSI, disp);
            for j in 0..self.nv {
                self.step(ops, self.acc(i, j) + offset, self.b(j));
            }
        }
    }
}

/// `vfmadd231pd ymm(acc), ymm(b), ymm(a)` (VEX.256.66.0F38.W1 B8): dynasm 5.1 drops the W bit
/// and encodes `vfmadd231ps` (pinned in `tests/encoding.rs`), so the bytes are written here.
pub(crate) fn vfmadd231pd(acc: u8, b: u8, a: u8) -> [u8; 5] {
    let inv = |r: u8| (!(r >> 3)) & 1;
    [
        0xC4,
        (inv(acc) << 7) | (1 << 6) | (inv(a) << 5) | 0b00010,
        (1 << 7) | ((!b & 0xF) << 3) | (1 << 2) | 0b01,
        0xB8,
        0xC0 | ((acc & 7) << 3) | (a & 7),
    ]
}

/// A memory operand `[base + disp]` for a full-vector EVEX access.
fn mem(base: u8, disp: i32) -> Rm {
    Rm::Mem {
        base,
        disp,
        broadcast: false,
        element: 4,
    }
}
