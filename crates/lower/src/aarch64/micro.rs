//! The AArch64 contraction microkernels: `mr × nr` accumulators in NEON registers, one pass
//! over k, then the accumulators stored into the buffer T (`emit/contraction.rs`).
//!
//! One shape per dtype: 8 rows × 3 vectors (12 f32 or 6 f64 columns), 24 accumulators in
//! v8–v31 (the caller saves d8–d15, which AAPCS64 makes callee-saved). Per k step: three
//! vector loads of B (v0–v2), one scalar load of A per row (v3) and three `fmla` by element
//! per row — or, in exact mode, a rounded `fmul` into v5 and an `fadd`, the interpreter's
//! `acc + a·b` bit for bit. Every accumulator sums its k terms in ascending order.
//!
//! Register use: x8–x15 walk the rows of A, x6 walks B, x7 counts k, x23 points at the panel's
//! columns of the buffer T (x2 at the output's, for a direct store); x16/x17 stay the
//! immediate scratch of `asm.rs`.

use accy_ir::DType;
#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{a64, add_imm, mov_imm, Asm};
use crate::emit::contraction::Init;

/// One microkernel shape.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Micro {
    /// f64 lanes (else f32).
    pub wide: bool,
    /// Full tile rows.
    pub mr: u64,
    /// Vectors per tile row.
    pub nv: u64,
    /// Fused multiply-add (default mode).
    pub fma: bool,
}

impl Micro {
    /// The shape for `dtype` (f32 or f64); `fma` in default mode.
    pub(crate) fn for_dtype(dtype: DType, reassociate: bool) -> Micro {
        Micro {
            wide: dtype == DType::F64,
            mr: 8,
            nv: 3,
            fma: reassociate,
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
        self.nv * 16 / self.size()
    }

    fn acc(&self, i: u64, j: u64) -> u8 {
        (8 + i * self.nv + j) as u8
    }

    /// `acc += b · a[0]` (v3 holds the A element in lane 0).
    fn step(&self, ops: &mut Asm, acc: u8, b: u8) {
        match (self.wide, self.fma) {
            (false, true) => a64!(ops; fmla V(acc).S4, V(b).S4, v3.S[0]),
            (true, true) => a64!(ops; fmla V(acc).D2, V(b).D2, v3.D[0]),
            (false, false) => {
                a64!(ops; fmul v5.S4, V(b).S4, v3.S[0] ; fadd V(acc).S4, V(acc).S4, v5.S4)
            }
            (true, false) => {
                a64!(ops; fmul v5.D2, V(b).D2, v3.D[0] ; fadd V(acc).D2, V(acc).D2, v5.D2)
            }
        }
    }

    /// The microkernel for a panel of `rows` rows (`rows ≤ mr`): with x21 at A's row panel
    /// (element `k = k0` of its first row), x22 at the B panel (`k = k0`) and x23 at the
    /// panel's place in the buffer T, computes `rows × nr` sums over `k_len` steps (starting
    /// from +0, or from the sums stored there by the previous block of k, per `init`) and
    /// stores row `i` at `x23 + i · t_row` — or, with `out` = (register, row bytes), at that
    /// register plus `i ·` row bytes (the output of a direct store; `Init::Load` still reads
    /// T). A advances `ak` bytes per step (rows are `lda` bytes apart), B `bk` bytes. Clobbers
    /// x0, x6–x16 and v0–v5, v8–v31.
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
        lda: i64,
        ak: i64,
        bk: i64,
        t_row: i64,
        out: Option<(u8, i64)>,
    ) {
        for i in 0..rows {
            for j in 0..self.nv {
                let acc = self.acc(i, j);
                match init {
                    Init::Zero => a64!(ops; movi V(acc).D2, #0),
                    Init::Load => {
                        let off = i as i64 * t_row + j as i64 * 16;
                        match u32::try_from(off) {
                            Ok(o) if o % 16 == 0 && o / 16 < 4096 => {
                                a64!(ops; ldr Q(acc), [x23, #o])
                            }
                            _ => {
                                a64!(ops; mov x0, x23);
                                add_imm(ops, 0, off);
                                a64!(ops; ldr Q(acc), [x0]);
                            }
                        }
                    }
                }
            }
        }
        if k_len > 0 {
            for i in 0..rows {
                let p = (8 + i) as u8;
                a64!(ops; mov X(p), x21);
                add_imm(ops, p, i as i64 * lda);
            }
            a64!(ops; mov x6, x22);
            mov_imm(ops, 7, k_len as i64);
            let top = ops.new_dynamic_label();
            let post = (-256..256).contains(&ak);
            a64!(ops; =>top ; ldr q0, [x6] ; ldr q1, [x6, #16] ; ldr q2, [x6, #32]);
            add_imm(ops, 6, bk);
            for i in 0..rows {
                let p = (8 + i) as u8;
                match (post, self.wide) {
                    (true, false) => a64!(ops; ldr s3, [X(p)], #ak as i32),
                    (true, true) => a64!(ops; ldr d3, [X(p)], #ak as i32),
                    (false, false) => a64!(ops; ldr s3, [X(p)]),
                    (false, true) => a64!(ops; ldr d3, [X(p)]),
                }
                for j in 0..self.nv {
                    self.step(ops, self.acc(i, j), j as u8);
                }
            }
            if !post {
                for i in 0..rows {
                    add_imm(ops, (8 + i) as u8, ak);
                }
            }
            a64!(ops; subs x7, x7, #1 ; b.ne =>top);
        }
        let (base, row) = out.unwrap_or((23, t_row));
        for i in 0..rows {
            for j in 0..self.nv {
                let off = i as i64 * row + j as i64 * 16;
                let acc = self.acc(i, j);
                match u32::try_from(off) {
                    Ok(o) if o % 16 == 0 && o / 16 < 4096 => {
                        a64!(ops; str Q(acc), [X(base), #o])
                    }
                    _ => {
                        a64!(ops; mov x0, X(base));
                        add_imm(ops, 0, off);
                        a64!(ops; str Q(acc), [x0]);
                    }
                }
            }
        }
    }
}
