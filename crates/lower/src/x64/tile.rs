//! Transposing loads through tiles: a load that walks the vectorized (innermost) dim with a
//! large stride, but the dim outside it contiguously — the read side of a transpose after
//! `plan::blocking` has cut it into blocks — is read whole 64-byte lines at a time: every 16th
//! step of the outer dim, for each 8 rows of the inner run, 8 rows × 16 contiguous elements
//! are transposed in registers into 16 vectors in frame slots, one per outer step. A vector
//! iteration then reads its column from a slot instead of gathering 8 elements from 8 lines,
//! and every source line is used up by the instructions that load it, so nothing depends on a
//! line staying in the L1 cache (rows a power of two apart all fall into one of its sets).
//!
//! The vector plan admits a tile only when the inner run is whole vectors and at most
//! `MAX_TILE_RUN` long, and the outer dim's size is a multiple of 16 and it starts at 0 (see
//! `vector::tileable`): the fill at every 16th outer step covers points of the space only,
//! and the next 16 steps use it up. The inner loop's scalar tail never runs (the run is whole
//! vectors) and reads memory directly anyway.
//!
//! Each 8×4 quarter of a fill is four 128-bit row pieces paired by lane (row q low, row q+4
//! high), then a 4×4 transpose within each 128-bit lane: 16 shuffles per 64 elements, in the
//! scratch registers ymm0–ymm4 only, so vector values the plan keeps in ymm5–ymm15 across the
//! loop survive.

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::x64;
use super::kernel::Emitter;
use super::vector::{VectorPlan, TILE_COLS, TILE_ROWS};
use crate::kernel::Node;
use crate::target::EmitError;

/// How many blocks ahead a fill prefetches its source lines: on a 4096² f32 transpose
/// (Xeon, 1 thread) 1 block took 20.6 ms, 2 to 4 blocks 17-22 ms (the host's noise is
/// larger than their differences), 6 blocks 23 ms.
pub(crate) const FILL_PREFETCH_BLOCKS: i64 = 2;

/// Bytes of one vector slot.
const SLOT: i32 = 32;

/// Bytes a tile column pointer moves per vector iteration (8 inner steps): one fill group's
/// 16 columns.
pub(crate) const TILE_STEP: i64 = (SLOT as u64 * TILE_COLS) as i64;

impl Emitter<'_> {
    /// The body of the dim outside the vectorized one when tiles are read: at every 16th step
    /// (the step counter is a multiple of 16) the tile fills first, then the vectorized dim.
    pub(crate) fn emit_tiled_step(&mut self, inner: usize) -> Result<(), EmitError> {
        let outer = inner - 1;
        let skip = self.ops.new_dynamic_label();
        let counter = self.lay.counter[outer];
        x64!(self.ops; test BYTE [rsp + counter], (TILE_COLS - 1) as i8 ; jnz =>skip);
        self.emit_tile_fills(inner)?;
        x64!(self.ops; =>skip);
        self.emit_dim(inner)
    }

    /// Every tiled load's tiles at the current point (outer step `16j`, inner step 0): for
    /// each 8 rows `8v..8v+8` of the inner run, column `c` (outer step `16j + c`) goes to slot
    /// `first + 16v + c`.
    fn emit_tile_fills(&mut self, inner: usize) -> Result<(), EmitError> {
        let Some(plan) = &self.vplan else {
            return Ok(());
        };
        let mut tiles = Vec::new();
        for (i, first) in plan.tile_slot.iter().enumerate() {
            if let (Some(first), Node::Load { binding, map }) = (first, &self.k.nodes[i].node) {
                let map_slot = self.lay.map[i].ok_or_else(|| self.unsupported("a tile map"))?;
                let stride = map.strides.get(inner).copied().unwrap_or(0);
                tiles.push((*first, *binding, map_slot, stride));
            }
        }
        let groups = (self.k.dims[inner] / TILE_ROWS) as i32;
        for (first, binding, map_slot, stride) in tiles {
            let b = binding as i32 * 8;
            let base = self.lay.vec_slot(first);
            let top = self.ops.new_dynamic_label();
            self.slot_to_rax(map_slot);
            // rcx: row 8v's first element; rdx: group v's first slot; eax: groups left.
            x64!(self.ops
                ; mov rcx, QWORD [r12 + b]
                ; lea rcx, [rcx + rax * 4]
                ; lea rdx, [rsp + base]
                ; mov eax, groups
                ; =>top
            );
            // The plan bounded the stride so these displacements fit 32 bits.
            let row = |r: i64, quarter: i64| (4 * r * stride + 16 * quarter) as i32;
            // The fill [`FILL_PREFETCH_BLOCKS`] blocks later in the blocked loop order reads
            // the same columns of the rows that many runs further on: each row's line lies in a page of its own, which
            // no hardware prefetcher follows, so ask for them now, into the L2: a prefetch
            // into the L1 (`prefetcht0`) holds one of its few fill buffers for the whole trip
            // to memory and measured 20-30% slower. A prefetch never faults, also past the
            // binding's end.
            let run = self.k.dims[inner] as i64;
            for r in 0..TILE_ROWS as i64 {
                let at = row(FILL_PREFETCH_BLOCKS * run + r, 0);
                x64!(self.ops; prefetcht1 [rcx + at]);
            }
            for quarter in 0..4i64 {
                for q in 0..4u8 {
                    let (lo, hi) = (row(q as i64, quarter), row(q as i64 + 4, quarter));
                    x64!(self.ops
                        ; vmovups Rx(q), [rcx + lo]
                        ; vinsertf128 Ry(q), Ry(q), [rcx + hi], 1
                    );
                }
                // Lane by lane: t0 = ymm4, t1 = ymm0 (rows 0,1 interleaved), t2 = ymm1,
                // t3 = ymm2 (rows 2,3); column j of the quarter pairs t's halves.
                x64!(self.ops
                    ; vunpcklps ymm4, ymm0, ymm1
                    ; vunpckhps ymm0, ymm0, ymm1
                    ; vunpcklps ymm1, ymm2, ymm3
                    ; vunpckhps ymm2, ymm2, ymm3
                );
                let columns = [(4u8, 1u8, 0x44u8), (4, 1, 0xEE), (0, 2, 0x44), (0, 2, 0xEE)];
                for (j, (a, c, imm)) in columns.into_iter().enumerate() {
                    let at = SLOT * (4 * quarter as i32 + j as i32);
                    // dynasm 5.1 swaps `vshufps`'s two sources (pinned in
                    // tests/encoding.rs): this is ymm3 = shufps(ymm(a), ymm(c), imm).
                    x64!(self.ops
                        ; vshufps ymm3, Ry(c), Ry(a), imm as i8
                        ; vmovups [rdx + at], ymm3
                    );
                }
            }
            x64!(self.ops
                ; add rcx, (4 * TILE_ROWS as i64 * stride) as i32
                ; add rdx, SLOT * TILE_COLS as i32
                ; sub eax, 1
                ; jnz =>top
            );
        }
        Ok(())
    }

    /// At the start of a run of the vector loop, each tiled load's pointer to its first
    /// column (slot `first + c` for outer step `c` modulo 16), in the slot after its columns;
    /// returns those slots, which the loop pins and steps by [`TILE_STEP`].
    pub(crate) fn emit_tile_pointers(&mut self, plan: &VectorPlan) -> Vec<i32> {
        let inner = self.k.dims.len() - 1;
        let Some(outer) = inner.checked_sub(1) else {
            return Vec::new();
        };
        let columns = (self.k.dims[inner] / TILE_ROWS * TILE_COLS) as usize;
        let mut slots = Vec::new();
        for first in plan.tile_slot.iter().flatten() {
            let (base, pointer) = (
                self.lay.vec_slot(*first),
                self.lay.vec_slot(first + columns),
            );
            self.slot_to_rax(self.lay.counter[outer]);
            x64!(self.ops
                ; and eax, (TILE_COLS - 1) as i32
                ; shl eax, 5
                ; lea rax, [rsp + rax + base]
                ; mov QWORD [rsp + pointer], rax
            );
            slots.push(pointer);
        }
        slots
    }

    /// `ymm(dst) =` the current tile column of the load whose slots start at `first`, through
    /// its pointer (pinned while the vector loop runs).
    pub(crate) fn emit_tile_column(&mut self, first: usize, dst: u8) {
        let columns = (self.k.dims[self.k.dims.len() - 1] / TILE_ROWS * TILE_COLS) as usize;
        let pointer = self.lay.vec_slot(first + columns);
        match self.pinned_reg(pointer) {
            Some(reg) => x64!(self.ops; vmovups Ry(dst), [Rq(reg)]),
            None => x64!(self.ops
                ; mov rax, QWORD [rsp + pointer]
                ; vmovups Ry(dst), [rax]
            ),
        }
    }
}
