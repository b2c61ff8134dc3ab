//! The prefetch of the next row panel's rows of A in a contraction kernel's x86-64 code,
//! spread over the column panels of the current one (`Gemm::next_a_rows`, `NextRows`).

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::Gemm;
use crate::emit::contraction::KBlock;
use crate::target::EmitError;
use crate::x64::asm::{add_imm, mov_imm, x64, Asm};

impl Gemm<'_> {
    /// The prefetch of the next row panel's rows of A (this block of k) that the column
    /// panels spread among themselves, with r11 at its first row and r9 counting its rows —
    /// when A is copied (the AVX-512 tier: `X64Target::copies_a`; the Zen 3 runs below were
    /// made when AVX2 copied too, and read in place AVX2 is faster without the prefetch: 2048³
    /// 1.8%, 1024³ 1.1%) and its rows may not be in the L2 when the copy comes: a tile's rows of
    /// A are more than half the L2, or k is in blocks outermost in tiles of several row panels
    /// (each block of A read once per tile, long evicted when the next tile reads it). A's rows
    /// are far apart and each is read a block at a time, so the hardware prefetchers miss them
    /// (a 2048³ product once spent 15% of its time waiting in the copy). The copy's own loop
    /// asked for them before; spread over the microkernels, into the L1, the requests no longer
    /// queue behind each other: paired runs on a Zen 3 core, 1 thread, 2048³ 3-4% and 1024³
    /// 0.4-2.3% faster (every run faster), 128×768×3072 1%; into the L2 (`prefetcht1`) 1.6%
    /// slower than into the L1; issued by the last column panels instead of the first, no
    /// different.
    pub(super) fn next_a_rows(
        &mut self,
        k_len: u64,
        block: KBlock,
    ) -> Result<Option<NextRows>, EmitError> {
        let k = self.k;
        let size = k.dtype.size_bytes();
        let a_rows = k.tile_m.saturating_mul(k.k).saturating_mul(size);
        let cached = a_rows <= self.l2 / 2 && self.sched.t_rows <= self.sched.mr;
        if self.sched.pack_a.is_none() || cached {
            return Ok(None);
        }
        let stride = |d: usize| i128::from(k.lhs.map.strides.get(d).copied().unwrap_or(0));
        let lda = self.disp(stride(1) * i128::from(size as i32), "a row stride of A")?;
        let ak = self.disp(stride(2) * i128::from(size as i32), "a k stride of A")?;
        let row_bytes = self.disp(i128::from(k_len) * i128::from(size), "a block of A's row")?;
        let mr = self.sched.mr;
        let panels = k.tile_n.div_ceil(self.sched.nr).max(1);
        let per_panel = mr.div_ceil(panels);
        // r11 = A at (b, m + mr, the block's k) ; r9 = mr.
        x64!(self.ops; mov r11, r12);
        self.add_block_offset(11, ak, block);
        add_imm(self.ops, 11, i64::from(lda) * mr as i64);
        mov_imm(self.ops, 9, mr as i64);
        Ok(Some(NextRows {
            lda,
            row_bytes,
            per_panel: per_panel as i32,
        }))
    }
}

/// The prefetch of the next row panel's rows of A, `per_panel` rows before each microkernel
/// (`Gemm::next_a_rows`). `per_panel` is for a full tile's column panels: a last tile with
/// fewer leaves some rows to the copy, and the last row panel's prefetch (of rows past the tile,
/// where the next block of k starts again at its first panel) finds nothing to use. Neither
/// faults: a prefetch never does.
pub(super) struct NextRows {
    lda: i32,
    row_bytes: i32,
    per_panel: i32,
}

impl NextRows {
    /// While r9 (rows left) is positive: `prefetcht0` of every line of the next `per_panel`
    /// rows of `row_bytes` at r11, r11 stepped by `lda` per row.
    pub(super) fn emit(&self, ops: &mut Asm) {
        let skip = ops.new_dynamic_label();
        x64!(ops; test r9, r9 ; jle =>skip);
        for _ in 0..self.per_panel {
            // Every line the row's bytes touch, wherever it starts: one per 64 bytes and the
            // line of its last byte.
            for at in (0..self.row_bytes).step_by(64) {
                x64!(ops; prefetcht0 [r11 + at]);
            }
            x64!(ops
                ; prefetcht0 [r11 + self.row_bytes - 1]
                ; add r11, self.lda
            );
        }
        x64!(ops; sub r9, self.per_panel ; =>skip);
    }
}
