//! Transposing loads through tiles: a load that walks the vectorized (innermost) dim with a
//! large stride, but the dim outside it contiguously — the read side of a transpose after
//! `plan::blocking` has cut it into blocks — is read whole 64-byte lines at a time. At every
//! `cols`-th step of the outer dim (16 for 32-bit lanes, 8 for 64-bit ones), for each group of
//! `rows` rows of the inner run (a vector's lanes: 8 or 4), `rows × cols` contiguous elements
//! are transposed in registers into `cols` vectors in frame slots, one per outer step
//! ([`TileShape`]). A vector iteration then reads its column from a slot instead of gathering
//! its lanes from as many lines, and every source line is used up within its fill group, so
//! nothing depends on a line staying in the L1 cache longer than that (rows a power of two
//! apart all fall into one of its sets: a group keeps at most 8 such lines in flight, or loads
//! each whole once).
//!
//! The vector plan admits a tile only when the inner run is whole vectors and at most
//! `MAX_TILE_RUN` long, and the outer dim's size is a multiple of `cols` and it starts at 0
//! (see [`tileable`]): the fill at every `cols`-th outer step covers points of the
//! space only, and the next `cols` steps use it up. The inner loop's scalar tail never runs
//! (the run is whole vectors) and reads memory directly anyway.
//!
//! 32-bit lanes: each 8×4 quarter of a fill is four 128-bit row pieces paired by lane (row q
//! low, row q+4 high), then a 4×4 transpose within each 128-bit lane: 16 shuffles per 64
//! elements. 64-bit lanes: each 4×2 piece is rows 0/2 and 1/3 paired by lane, then one unpack
//! per column. Both use the scratch registers ymm0–ymm4 only (no vector value lives across a
//! fill, which comes between the runs of the vector loop, but these fills never needed more).
//!
//! The AVX-512 tier reads tiles in zmm vectors (16 or 8 lanes, so a fill group is 16 or 8
//! rows). For 32-bit lanes it loads each of the 16 rows' 64 bytes in one instruction into
//! zmm16–31 and transposes them in registers (`emit_zfill_group_32`): loaded a quarter at a
//! time, 16 lines in one L1 set (8 to 12 ways on AVX-512 cores) were evicted between their
//! quarters. For 64-bit lanes, the ymm path's pieces, each register four 128-bit row pieces
//! (rows r, r+2, r+4, r+6: 8 lines), the same in-lane shuffles. Both give 64-byte columns.
//! Each column is a whole line of the frame (the tiles start at the first 64-byte boundary
//! of their slots), so the fill's stores and the loop's loads never split a line,
//! and each store of the loop covers 64 bytes of the destination: a whole line when the
//! address is on one (non-temporal when streaming; pieces, or an ordinary store, otherwise:
//! `emit_tile_run_zstore`).

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynasmApi, DynasmLabelApi};

use super::asm::{gpr, x64};
use super::evex_zmm::{zv, Zins, Zrm};
use super::kernel::Emitter;
use super::vector::VectorPlan;
use crate::kernel::{LoopKernel, Node};
use crate::target::EmitError;

/// How many blocks ahead a fill prefetches its source lines (steps of the dim outside the
/// two tiled ones). On a 4096² f32 transpose
/// (Xeon, 1 thread, blocks that read the same lines of the next rows) 1 block took 20.6 ms,
/// 2 to 4 blocks 17-22 ms (the host's noise is larger than their differences), 6 blocks 23
/// ms. With blocks that read the next lines of the same rows (EPYC, 1 thread, 256-byte
/// lines, buffers 16 bytes past a cache line), the next fill's lines (a quarter block)
/// measured 6.4-6.7 ms, 1 block 6.4-7.2 ms, 2 blocks 7.3-7.7 ms, none 7.6-7.7 ms; with
/// buffers on a line, a quarter to a whole block 7.1-8.2 ms, none 7.8-9.1 ms (noisier).
/// With zmm tiles (buffers on a line, min of 3): 1 block 6.4-8.8 ms, 2 blocks 7.5-9.4 ms.
/// On an Intel Xeon guest (zmm tiles, blocks along the rows, 1 thread, three alternating
/// rounds), every distance was slower than none: 6.7-7.1 GB/s at 1 block, 7.7-8.2 at half a
/// block, 7.2-7.9 at a quarter, 6.7-8.0 prefetching only a quarter of the lines, against
/// 9.1-9.7 GB/s with none (ymm tiles alike: 6.1-6.5 against 8.4); at 2 threads alike
/// (19.1-20.5 against 19.8-21.5 GB/s), but rows 16 bytes past a line were slower without
/// (17-18 against 19 ms; 2 threads 5.8 against 8-9.5 ms). So where the caches say
/// [`accy_artifact::Blocking::skip_scattered_prefetch`] (set for Intel processors) a fill
/// prefetches only when its rows start off a line.
pub(crate) const FILL_PREFETCH_BLOCKS: i64 = 1;

/// How many blocks ahead a blocked transpose prefetches its destination lines: on a 4096²
/// f32 transpose (Xeon, 1 thread) none took 42-45 ms, 1 block 24-25 ms, 2 blocks 18-21 ms,
/// 4 blocks 22 ms.
const STORE_PREFETCH_BLOCKS: i64 = 2;

/// The longest inner run read through tiles: its tiles take `run / rows · cols` columns
/// (16 KiB, plus the alignment pad and pointer of [`TileShape::units`]).
const MAX_TILE_RUN: u64 = 256;
/// The frame bytes all of a kernel's tiles may take: one run of [`MAX_TILE_RUN`] with its
/// column pointer (the frame holds at most 48 KiB, and the tiles are reread from the L1
/// cache); further strided loads gather.
pub(crate) const TILE_BUDGET: usize = 20 << 10;

/// Whether a strided load of `k` (its map `strides`) can be read through tiles of `shape`:
/// an innermost dim of whole vectors (at least one: the fill loop runs at least
/// once), short enough for its tiles to sit in the frame; a contiguous read along the dim
/// outside it, whose size is a multiple of a fill's columns and which starts at 0 (it is not
/// dim 0, the one workgroups split), so every tile lies inside the space.
pub(crate) fn tileable(k: &LoopKernel, strides: &[i64], shape: TileShape) -> bool {
    let rank = k.dims.len();
    let (Some(inner), Some(outer)) = (rank.checked_sub(1), rank.checked_sub(2)) else {
        return false;
    };
    outer > 0
        && k.dims[inner] >= shape.rows
        && k.dims[inner].is_multiple_of(shape.rows)
        && k.dims[inner] <= MAX_TILE_RUN
        && k.dims[outer].is_multiple_of(shape.cols)
        && strides.get(outer) == Some(&1)
        && strides.get(inner).is_some_and(|&s| {
            // A group's rows and the fill's prefetches fit a displacement.
            let group = s.unsigned_abs().checked_mul(shape.elem as u64 * shape.rows);
            let ahead = fill_prefetch_ahead(k, strides)
                .unsigned_abs()
                .checked_mul(shape.elem as u64);
            group
                .zip(ahead)
                .and_then(|(g, a)| g.checked_add(a))
                .is_some_and(|bytes| bytes <= (i32::MAX - 64) as u64)
        })
}

/// Per node: whether the strided load marked in `gathered` reads through tiles of `shape`.
/// In node order, each tileable one gets tiles while their frame bytes stay within
/// [`TILE_BUDGET`]; the others gather.
pub(crate) fn tiled(k: &LoopKernel, gathered: &[bool], shape: TileShape) -> Vec<bool> {
    let bytes = 32 * shape.units(k.dims.last().copied().unwrap_or(0));
    let mut used = 0;
    k.nodes
        .iter()
        .zip(gathered)
        .map(|(kn, &g)| {
            let fits = match &kn.node {
                Node::Load { map, .. } if g => {
                    tileable(k, &map.strides, shape) && used + bytes <= TILE_BUDGET
                }
                _ => false,
            };
            if fits {
                used += bytes;
            }
            fits
        })
        .collect()
}

/// Elements from a fill's source rows to those the fill [`FILL_PREFETCH_BLOCKS`] blocks on
/// reads: along the load's stride in the dim outside the two tiled ones (a tiled load has
/// one: [`tileable`] asks for rank 3 or more), which for a blocked transpose is the block
/// step, whichever way the blocks go. Saturates: [`tileable`] then refuses the load.
fn fill_prefetch_ahead(k: &LoopKernel, strides: &[i64]) -> i64 {
    let block = k
        .dims
        .len()
        .checked_sub(3)
        .and_then(|d| strides.get(d).copied())
        .unwrap_or(0);
    block.saturating_mul(FILL_PREFETCH_BLOCKS)
}

/// Bytes of one frame unit (the vector plan counts its slots in these).
const UNIT: usize = 32;

/// The shape of the tiles for one lane width and vector size: a fill group is `rows` rows (one
/// vector's lanes) by `cols` columns (a 64-byte line of each row).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TileShape {
    /// Rows per fill group: the lanes of a vector.
    pub rows: u64,
    /// Columns per fill: one 64-byte line.
    pub cols: u64,
    /// Bytes per element.
    pub elem: i64,
    /// Whether the columns are zmm vectors (64 bytes) rather than ymm ones (32).
    pub zmm: bool,
}

impl TileShape {
    /// The shape for 64-bit lanes (`wide`) or 32-bit lanes, in zmm vectors (`zmm`) or ymm.
    pub(crate) fn of(wide: bool, zmm: bool) -> TileShape {
        let elem: i64 = if wide { 8 } else { 4 };
        let vector: i64 = if zmm { 64 } else { 32 };
        TileShape {
            rows: (vector / elem) as u64,
            cols: (64 / elem) as u64,
            elem,
            zmm,
        }
    }

    /// Bytes of one column: a vector.
    pub(crate) fn column_bytes(self) -> i32 {
        if self.zmm {
            64
        } else {
            32
        }
    }

    /// The frame units the tiles of an inner run of `run` elements take: their columns, for
    /// zmm columns the units that let the first start on a 64-byte boundary (the frame is
    /// only 16-byte aligned), and last the column pointer.
    pub(crate) fn units(self, run: u64) -> usize {
        let columns = (run / self.rows * self.cols) as usize;
        let pad = if self.zmm { 2 } else { 0 };
        columns * self.column_bytes() as usize / UNIT + pad + 1
    }

    /// Bytes a column pointer moves per vector iteration: one fill group's columns.
    pub(crate) fn step(self) -> i64 {
        i64::from(self.column_bytes()) * self.cols as i64
    }
}

impl Emitter<'_> {
    /// The body of the dim outside the vectorized one when tiles are read: at every
    /// `cols`-th step (16 or 8) the tile fills first, then the vectorized dim.
    pub(crate) fn emit_tiled_step(&mut self, inner: usize) -> Result<(), EmitError> {
        let outer = inner - 1;
        let Some(shape) = self.vplan.as_ref().map(VectorPlan::tile_shape) else {
            return Err(self.unsupported("tiles without a vector plan"));
        };
        let skip = self.ops.new_dynamic_label();
        let counter = self.lay.counter[outer];
        x64!(self.ops; test BYTE [rsp + counter], (shape.cols - 1) as i8 ; jnz =>skip);
        self.emit_tile_fills(inner, shape)?;
        x64!(self.ops; =>skip);
        self.emit_dim(inner)
    }

    /// Every tiled load's tiles at the current point (outer step `cols · j`, inner step 0):
    /// for each group of `rows` rows `rows · v ..` of the inner run, column `c` (outer step
    /// `cols · j + c`) goes to column `cols · v + c` of the tiles, whose first column is at
    /// frame unit `first` (ymm) or at the first 64-byte boundary from it (zmm,
    /// [`Emitter::emit_tile_base`]).
    fn emit_tile_fills(&mut self, inner: usize, shape: TileShape) -> Result<(), EmitError> {
        let Some(plan) = &self.vplan else {
            return Ok(());
        };
        let mut tiles = Vec::new();
        for (i, first) in plan.tile_slot.iter().enumerate() {
            if let (Some(first), Node::Load { binding, map }) = (first, &self.k.nodes[i].node) {
                let map_slot = self.lay.map[i].ok_or_else(|| self.unsupported("a tile map"))?;
                let stride = map.strides.get(inner).copied().unwrap_or(0);
                let ahead = fill_prefetch_ahead(self.k, &map.strides);
                tiles.push((*first, *binding, map_slot, stride, ahead));
            }
        }
        let groups = (self.k.dims[inner] / shape.rows) as i32;
        for (first, binding, map_slot, stride, ahead) in tiles {
            let b = binding as i32 * 8;
            let base = self.lay.vec_slot(first);
            let top = self.ops.new_dynamic_label();
            self.slot_to_rax(map_slot);
            x64!(self.ops; mov rcx, QWORD [r12 + b]);
            if shape.elem == 8 {
                x64!(self.ops; lea rcx, [rcx + rax * 8]);
            } else {
                x64!(self.ops; lea rcx, [rcx + rax * 4]);
            }
            // rcx: the group's first row; rdx: the group's first column; eax: groups left.
            self.emit_tile_base(gpr::RDX, base, shape);
            x64!(self.ops
                ; mov eax, groups
                ; =>top
            );
            // The plan bounded the stride so these displacements fit 32 bits.
            let row = |r: i64, bytes: i64| (shape.elem * r * stride + bytes) as i32;
            // The fill [`FILL_PREFETCH_BLOCKS`] blocks later in the blocked loop order reads
            // the lines `ahead` elements on: each row's line lies in a page of its own, or
            // among dozens of rows read a line at a time, which no hardware prefetcher
            // follows, so ask for them now,
            // into the L2: a prefetch into the L1 (`prefetcht0`) holds one of its few fill
            // buffers for the whole trip to memory and measured 20-30% slower. A prefetch
            // never faults, also past the binding's end. On CPUs that are slower with such
            // prefetches (`Emitter::fill_prefetch_always`), only where the group's first row
            // starts off a line, so that its pieces straddle two lines.
            let aligned = self.ops.new_dynamic_label();
            if !self.fill_prefetch_always {
                x64!(self.ops; test cl, 63 ; jz =>aligned);
            }
            for r in 0..shape.rows as i64 {
                let at = row(r, shape.elem * ahead);
                x64!(self.ops; prefetcht1 [rcx + at]);
            }
            x64!(self.ops; =>aligned);
            match (shape.zmm, shape.elem == 8) {
                (false, false) => self.emit_fill_group_32(row),
                (false, true) => self.emit_fill_group_64(row),
                (true, false) => self.emit_zfill_group_32(row),
                (true, true) => self.emit_zfill_group_64(row),
            }
            x64!(self.ops
                ; add rcx, row(shape.rows as i64, 0)
                ; add rdx, shape.step() as i32
                ; sub eax, 1
                ; jnz =>top
            );
        }
        Ok(())
    }

    /// One group of 8 rows × 16 f32 columns at rcx (row `r`, byte `o` at `row(r, o)`) into
    /// the 16 slots at rdx.
    fn emit_fill_group_32(&mut self, row: impl Fn(i64, i64) -> i32) {
        for quarter in 0..4i64 {
            for q in 0..4u8 {
                let (lo, hi) = (row(q as i64, 16 * quarter), row(q as i64 + 4, 16 * quarter));
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
                let at = 32 * (4 * quarter as i32 + j as i32);
                // dynasm 5.1 swaps `vshufps`'s two sources (pinned in tests/encoding.rs):
                // this is ymm3 = shufps(ymm(a), ymm(c), imm).
                x64!(self.ops
                    ; vshufps ymm3, Ry(c), Ry(a), imm as i8
                    ; vmovups [rdx + at], ymm3
                );
            }
        }
    }

    /// One group of 4 rows × 8 f64 columns at rcx into the 8 slots at rdx: per pair of
    /// columns, rows 0 and 2 (and 1 and 3) paired by lane, then one unpack per column.
    fn emit_fill_group_64(&mut self, row: impl Fn(i64, i64) -> i32) {
        for pair in 0..4i64 {
            let o = 16 * pair;
            // (Not named r0..r3: inside `x64!` those are register names.)
            let (at0, at1, at2, at3) = (row(0, o), row(1, o), row(2, o), row(3, o));
            let (lo, hi) = (32 * 2 * pair as i32, 32 * (2 * pair as i32 + 1));
            x64!(self.ops
                ; vmovups xmm0, [rcx + at0]
                ; vinsertf128 ymm0, ymm0, [rcx + at2], 1
                ; vmovups xmm1, [rcx + at1]
                ; vinsertf128 ymm1, ymm1, [rcx + at3], 1
                ; vunpcklpd ymm2, ymm0, ymm1
                ; vunpckhpd ymm3, ymm0, ymm1
                ; vmovups [rdx + lo], ymm2
                ; vmovups [rdx + hi], ymm3
            );
        }
    }

    /// One group of 16 rows × 16 f32 columns at rcx into the 16 zmm columns at rdx. Each
    /// row's 64 bytes are loaded by one instruction into zmm16–zmm31 (one line, or two when
    /// the rows start off a line): the 16 rows lie a power of two apart, so they all fall
    /// into one set of the L1 cache, which holds fewer lines than that (8 to 12 ways on
    /// AVX-512 cores), and a fill that came back to a line for each of its four quarters
    /// found it evicted by the other rows. Then a 16×16 transpose in registers: pairs of rows
    /// interleaved by element (`vunpcklps`/`vunpckhps`, into zmm0–15), then by pairs of
    /// elements (`vunpcklpd`/`vunpckhpd`, back into zmm16–31), so that zmm`16 + 4j + c`
    /// holds, in 128-bit lane `L`, rows `4j..4j + 3` of column `4L + c`; last, for each `c`,
    /// a 4×4 transpose of those lanes across zmm`16 + c`, `20 + c`, `24 + c` and `28 + c` (two
    /// rounds of `vshuff32x4`) gives columns `c`, `4 + c`, `8 + c` and `12 + c`. It may take
    /// every vector register: fills come between the runs of the vector loop, where none holds
    /// a value (each run sets up its own, and zmm16–31 are caller-saved).
    fn emit_zfill_group_32(&mut self, row: impl Fn(i64, i64) -> i32) {
        const ROWS: u8 = 16;
        for r in 0..16u8 {
            self.z(Zins::new(
                zv::load(false),
                ROWS + r,
                0,
                Zrm::at(gpr::RCX, row(r as i64, 0)),
            ));
        }
        for pair in (0..16u8).step_by(2) {
            let (a, b) = (ROWS + pair, ROWS + pair + 1);
            self.z(Zins::rrr(zv::unpckl(false), pair, a, b));
            self.z(Zins::rrr(zv::unpckh(false), pair + 1, a, b));
        }
        for quad in (0..16u8).step_by(4) {
            let [t0, t1, t2, t3] = [quad, quad + 1, quad + 2, quad + 3];
            self.z(Zins::rrr(zv::unpckl(true), ROWS + quad, t0, t2));
            self.z(Zins::rrr(zv::unpckh(true), ROWS + quad + 1, t0, t2));
            self.z(Zins::rrr(zv::unpckl(true), ROWS + quad + 2, t1, t3));
            self.z(Zins::rrr(zv::unpckh(true), ROWS + quad + 3, t1, t3));
        }
        for c in 0..4u8 {
            let u = |j: u8| ROWS + 4 * j + c;
            self.z(Zins::rrr(zv::SHUFF32X4, 0, u(0), u(1)).imm(0x44));
            self.z(Zins::rrr(zv::SHUFF32X4, 1, u(0), u(1)).imm(0xEE));
            self.z(Zins::rrr(zv::SHUFF32X4, 2, u(2), u(3)).imm(0x44));
            self.z(Zins::rrr(zv::SHUFF32X4, 3, u(2), u(3)).imm(0xEE));
            let outputs = [(0u8, 2u8, 0x88u8), (0, 2, 0xDD), (1, 3, 0x88), (1, 3, 0xDD)];
            for (lane, (a, b, imm)) in outputs.into_iter().enumerate() {
                let column = 4 * lane as i32 + c as i32;
                self.z(Zins::rrr(zv::SHUFF32X4, 4, a, b).imm(imm));
                self.z(Zins::new(
                    zv::store(false),
                    4,
                    0,
                    Zrm::at(gpr::RDX, 64 * column),
                ));
            }
        }
    }

    /// One group of 8 rows × 8 f64 columns at rcx into the 8 zmm columns at rdx: per pair of
    /// columns, zmm0 holds rows 0, 2, 4, 6 and zmm1 rows 1, 3, 5, 7 (16 bytes each, lane by
    /// lane), and one unpack per column interleaves them into rows 0 to 7.
    fn emit_zfill_group_64(&mut self, row: impl Fn(i64, i64) -> i32) {
        for pair in 0..4i64 {
            let o = 16 * pair;
            for r in 0..2u8 {
                let first = row(r as i64, o);
                x64!(self.ops; vmovups Rx(r), [rcx + first]);
                for lane in 1..4u8 {
                    let at = row(r as i64 + 2 * lane as i64, o);
                    self.z(Zins::new(zv::INSERTF32X4, r, r, Zrm::at(gpr::RCX, at)).imm(lane));
                }
            }
            let (lo, hi) = (64 * 2 * pair as i32, 64 * (2 * pair as i32 + 1));
            self.z(Zins::rrr(zv::unpckl(true), 2, 0, 1));
            self.z(Zins::new(zv::store(true), 2, 0, Zrm::at(gpr::RDX, lo)));
            self.z(Zins::rrr(zv::unpckh(true), 3, 0, 1));
            self.z(Zins::new(zv::store(true), 3, 0, Zrm::at(gpr::RDX, hi)));
        }
    }

    /// At the start of a run of the vector loop, each tiled load's pointer to its first
    /// column (column `c` for outer step `c` modulo `cols`), in the last unit of its tiles
    /// ([`TileShape::units`]); returns those slots, which the loop pins and steps by
    /// [`TileShape::step`].
    pub(crate) fn emit_tile_pointers(&mut self, plan: &VectorPlan) -> Vec<i32> {
        let inner = self.k.dims.len() - 1;
        let Some(outer) = inner.checked_sub(1) else {
            return Vec::new();
        };
        let shape = plan.tile_shape();
        let shift = shape.column_bytes().trailing_zeros() as i8;
        let mut slots = Vec::new();
        for &first in plan.tile_slot.iter().flatten() {
            let (base, pointer) = (self.lay.vec_slot(first), self.tile_pointer(plan, first));
            self.emit_tile_base(gpr::RDX, base, shape);
            self.slot_to_rax(self.lay.counter[outer]);
            x64!(self.ops
                ; and eax, (shape.cols - 1) as i32
                ; shl eax, shift
                ; add rax, rdx
                ; mov QWORD [rsp + pointer], rax
            );
            slots.push(pointer);
        }
        slots
    }

    /// `reg =` the address of the first column of the tiles whose slots start at frame offset
    /// `base`: zmm columns start at the first 64-byte boundary (see [`TileShape::units`]).
    fn emit_tile_base(&mut self, reg: u8, base: i32, shape: TileShape) {
        x64!(self.ops; lea Rq(reg), [rsp + base]);
        if shape.zmm {
            x64!(self.ops; add Rq(reg), 63 ; and Rq(reg), -64);
        }
    }

    /// The frame offset of the column pointer of the tiles whose units start at `first`: their
    /// last unit, after the columns (and the zmm alignment pad).
    fn tile_pointer(&self, plan: &VectorPlan, first: usize) -> i32 {
        let run = self.k.dims.last().copied().unwrap_or(0);
        self.lay.vec_slot(first + plan.tile_shape().units(run) - 1)
    }

    /// `ymm(dst)` (`zmm(dst)` in a zmm plan) `=` the current tile column of the load whose
    /// slots start at `first`, through its pointer (pinned while the vector loop runs). `plan`
    /// is passed in: while the vector loop is emitted, `self.vplan` is taken out.
    pub(crate) fn emit_tile_column(&mut self, plan: &VectorPlan, first: usize, dst: u8) {
        let pointer = self.tile_pointer(plan, first);
        let reg = match self.pinned_reg(pointer) {
            Some(reg) => reg,
            None => {
                x64!(self.ops; mov rax, QWORD [rsp + pointer]);
                gpr::RAX
            }
        };
        if plan.zmm {
            self.z(Zins::new(zv::load(plan.wide), dst, 0, Zrm::at(reg, 0)));
        } else {
            x64!(self.ops; vmovups Ry(dst), [Rq(reg)]);
        }
    }

    /// For a blocked transpose read through tiles, the bytes from a store to the same place
    /// [`STORE_PREFETCH_BLOCKS`] blocks on (steps of the dim outside the two tiled dims): each
    /// run writes a few lines of one destination row, and the block that many steps on
    /// writes the lines at the same place from its own start (the next lines of the same
    /// rows, or lines of rows further down, as the blocks go), a pattern no hardware
    /// prefetcher catches in time, so the store waits for each line;
    /// asking for it (into the L2, as the tile fills do) ahead overlaps that wait. A prefetch
    /// never faults, also past the end. (`prefetchw` would also ask for ownership, but it is
    /// a feature of its own that the tiers do not declare.)
    pub(crate) fn store_prefetch_distance(&self, plan: &VectorPlan) -> Option<i32> {
        let rank = self.k.dims.len();
        if !plan.tiles() || rank < 3 {
            return None;
        }
        let stride = *self.k.store.map.strides.get(rank - 3)?;
        let elem = plan.tile_shape().elem;
        i32::try_from(stride.checked_mul(elem * STORE_PREFETCH_BLOCKS)?).ok()
    }
}
