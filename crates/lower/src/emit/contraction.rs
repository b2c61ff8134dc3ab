//! How every backend runs a [`ContractionKernel`]: the schedule its emitted code follows, and
//! the epilogue loop kernels it calls. Only instruction selection is left to the ISA folders
//! (`x64/gemm.rs`, `aarch64/gemm.rs`).
//!
//! One workgroup computes one tile of one batch. When k fits one block (`tile_k ≥ k`):
//!
//! ```text
//! for each row panel of the tile (mr rows; the tile's last panel may have fewer, `rem` rows):
//!     copy the panel's rows of A into worker scratch, when the schedule says (`PackA`)
//!     for each column panel of the tile (nr columns):
//!         microkernel: acc[mr][nr] = Σ_k A[m.., k] · B[k, n..]       (registers)
//!         store acc into the buffer T[mr][t_ld] at the panel's columns
//!     call the epilogue kernel for (rows, cols) on T: evaluate the epilogue at every element of
//!         the row panel and store it into the output — once
//! ```
//!
//! When k takes several blocks, they are the outermost loop, and T holds the whole tile
//! (`T[tile_m][t_ld]`, [`Schedule::t_rows`]): one block of B's panels is then reused by every
//! row panel of the tile while it stays in the L2 cache, and the tile's partial sums wait in
//! T between blocks:
//!
//! ```text
//! for each block of k (`tile_k` steps):
//!     for each row panel of the tile:
//!         copy the panel's block of A into worker scratch, when the schedule says (`PackA`)
//!         for each column panel of the tile:
//!             microkernel: acc = (0 for the first block, else T's panel)
//!                 + Σ_k in block A[m.., k] · B[k, n..]; store acc into T's panel
//!         after the last block: call the epilogue kernel for the row panel's rows of T
//! ```
//!
//! Each output element still sums its k terms in ascending order, block after block, so both
//! orders give the same bits in exact mode.
//!
//! Column panels are always whole: the planner gives a panelled right operand (zero-padded
//! past `n`) unless every tile is a multiple of `nr` columns wide, so microkernels never need a
//! column edge; the epilogue kernel, a plain [`LoopKernel`] over `[rows, cols]`, stores only the
//! real columns. Row edges get their own microkernel variant (`rem` rows).
//!
//! The epilogue kernels are compiled by the backend's own loop-kernel emitter and called as
//! functions through the dispatch ABI, on a `DispatchState` the contraction builds on its stack
//! whose bindings point at the panel's origin in each buffer ([`Reloc`]). So every node an
//! epilogue may hold runs on every tier, scalar or vector, exactly as in a loop kernel. The
//! accumulators reach it through `T` in the worker's scratch (one row panel, a few KiB that
//! stay in L1 unless k is short and n long, or with k in blocks the tile, up to half the L2);
//! the output is written once, by the epilogue. Where the epilogue is the sum alone and the
//! output takes whole column panels row-major, a backend may instead have the last block's
//! microkernels store into the output directly ([`DirectStore`]; both backends do): no
//! epilogue kernels, no calls, the same bits.

use accy_artifact::Access;
use accy_ir::DType;
use smallvec::smallvec;

/// The frame slots every backend's contraction code keeps (byte offsets from the stack
/// pointer once the frame is allocated): the epilogue's `DispatchState`, its binding pointer
/// and length tables, then the loop state. A backend adds its own slots from [`frame::SLOTS_END`].
pub(crate) mod frame {
    use accy_artifact::abi::DispatchState;

    pub(crate) const STATE: i32 = 0;
    pub(crate) const POINTERS: i32 = DispatchState::SIZE as i32;
    /// The most bindings an epilogue kernel may have (its tables live in the frame).
    pub(crate) const MAX_EPILOGUE_BINDINGS: usize = 32;
    pub(crate) const LENGTHS: i32 = POINTERS + 8 * MAX_EPILOGUE_BINDINGS as i32;
    pub(crate) const B_SLOT: i32 = LENGTHS + 8 * MAX_EPILOGUE_BINDINGS as i32;
    pub(crate) const M0: i32 = B_SLOT + 8;
    pub(crate) const N0: i32 = M0 + 8;
    pub(crate) const ROWS: i32 = N0 + 8;
    pub(crate) const COLS: i32 = ROWS + 8;
    pub(crate) const M: i32 = COLS + 8;
    pub(crate) const M_END: i32 = M + 8;
    pub(crate) const PANEL: i32 = M_END + 8;
    pub(crate) const PANELS: i32 = PANEL + 8;
    /// The first offset past the shared slots.
    pub(crate) const SLOTS_END: i32 = PANELS + 8;
}

use crate::kernel::{
    ContractionKernel, IndexMap, KernelBinding, KernelNode, LoopKernel, Node, Store,
};
use crate::target::EmitError;

/// How one binding of an epilogue kernel is found at run time from the contraction's: the
/// byte address `base(binding) + size · (offset + b·sb + m·sm + n·sn)`, or the buffer `T`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reloc {
    /// The current row panel's rows of the buffer `T` (which starts the worker's scratch).
    Tile,
    /// A binding of the contraction, at the element of the panel's origin.
    At {
        /// The contraction's binding.
        binding: u32,
        /// Element size in bytes.
        size: u64,
        /// The map's offset.
        offset: i64,
        /// Strides along b, m and n.
        strides: [i64; 3],
    },
}

/// One epilogue kernel: the loop kernel for a `rows × cols` panel, how each of its bindings is
/// found, and the byte length each must be given.
#[derive(Clone, Debug)]
pub(crate) struct Epilogue {
    /// Rows of the panel.
    pub rows: u64,
    /// Columns of the panel.
    pub cols: u64,
    /// The kernel (dims `[rows, cols]`).
    pub kernel: LoopKernel,
    /// Per binding of `kernel`: where it starts.
    pub relocs: Vec<Reloc>,
}

/// Everything a backend needs to emit one contraction.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    /// Rows of a full microkernel tile.
    pub mr: u64,
    /// Columns of a microkernel tile (a multiple of the vector width).
    pub nr: u64,
    /// Rows of the tile's last, partial row panel when `m` is not a multiple of `mr` (else 0).
    pub rem: u64,
    /// Whether any tile has a full row panel (`m ≥ mr`). Without one (a batch of one row,
    /// as in a batch-1 MLP) the backends emit no full-panel microkernel: it could never run.
    pub full_panels: bool,
    /// Row stride of the buffer `T`, in elements: the tile's width rounded up to `nr`.
    pub t_ld: u64,
    /// Rows of the buffer `T`: `mr` (one row panel at a time) when k fits one block, else the
    /// tile's `tile_m` (see the module documentation).
    pub t_rows: u64,
    /// Bytes of worker scratch the kernel needs (the buffer `T`, then A's copy if made).
    pub worker_scratch: u64,
    /// Tiles along m and n of one batch.
    pub tiles: (u64, u64),
    /// Columns of the last tile along n.
    pub last_cols: u64,
    /// The epilogue kernels, one per (rows, cols) a panel can have.
    pub epilogues: Vec<Epilogue>,
    /// Where the row panel's block of A is copied before the column panels read it, if it is.
    pub pack_a: Option<PackA>,
    /// Where the last block's microkernels store their sums, when the epilogue is the sum
    /// alone and the backend asked for it ([`DirectStore`]); there are then no epilogue
    /// kernels.
    pub direct: Option<DirectStore>,
}

/// The output of a contraction whose epilogue is its sum alone, stored row-major by whole
/// column panels: the last block of k's microkernels store their accumulators there
/// themselves, instead of into `T` for an epilogue kernel to copy (a call per row panel:
/// 8% of a 16×64×64 product's time). Element `(b, m, n)` is at `base(binding) + size ·
/// (offset + b·strides[0] + m·strides[1] + n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirectStore {
    /// The contraction's output binding.
    pub binding: u32,
    /// The store map's offset.
    pub offset: i64,
    /// The store map's strides along b, m and n (`strides[2]` is 1).
    pub strides: [i64; 3],
}

/// A row panel's block of A (`rows × k block`, row-major A only) copied into worker scratch,
/// where the kernel asks for it ([`ContractionKernel::copy_a`]): the column panels of the tile
/// then read it from the L1 cache, and rows a power of two apart in the caller's A no longer
/// fall into one cache set. That matters for register tiles with more rows than an L1 set has
/// ways (`crate::Target::copies_a`); the 4 and 6 rows of x64's SSE2 and AVX2 tiles are faster
/// read in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PackA {
    /// Byte offset of the copy in the worker's scratch.
    pub offset: u64,
    /// Bytes from one copied row to the next: an odd number of cache lines, so the rows of a
    /// panel land in different sets.
    pub row_bytes: u64,
}

impl Schedule {
    /// The epilogue for a `rows × cols` panel.
    pub(crate) fn epilogue(&self, rows: u64, cols: u64) -> Option<usize> {
        self.epilogues
            .iter()
            .position(|e| e.rows == rows && e.cols == cols)
    }

    /// The epilogues a panel of `rows` rows of `k` may need, as `(columns, epilogue)`: a
    /// full tile's columns, then the last tile's when they differ. The emitted code compares
    /// the tile's columns with each but the last, which it calls unconditionally.
    pub(crate) fn epilogue_variants(&self, k: &ContractionKernel, rows: u64) -> Vec<(u64, usize)> {
        let full = k.tile_n.min(k.n).max(1);
        [full, self.last_cols]
            .into_iter()
            .filter_map(|cols| Some((cols, self.epilogue(rows, cols)?)))
            .collect()
    }
}

/// How a microkernel starts its accumulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Init {
    /// At +0: the first (or only) block of k.
    Zero,
    /// With the partial sums a previous block of k stored in the buffer `T`.
    Load,
}

/// Which block of k a pass over the row panels computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KBlock {
    /// Block number `b` (a constant).
    At(u64),
    /// The block numbered in a frame slot the loop over blocks keeps.
    Current,
}

/// Whether a pass over the row panels calls the epilogue after each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EpilogueCall {
    /// Not in this block of k.
    Never,
    /// In this block of k: the last, or the only one.
    Always,
    /// In the loop over blocks: when the current block is this one, the last.
    InBlock(u64),
}

/// One pass over a tile's row panels: a block of `k_len` steps of k.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    /// Steps of k.
    pub k_len: u64,
    /// How the microkernels start.
    pub init: Init,
    /// Which block.
    pub block: KBlock,
    /// Whether the epilogue follows each row panel.
    pub epilogue: EpilogueCall,
}

/// The passes a tile makes over k, in order (see the module documentation): the first (block
/// 0, or all of k in one block); then, if any, one pass the code loops over for blocks
/// `1..end`, the block number kept in a frame slot; then, if any, a last, shorter block. When
/// every block has `tile_k` steps the loop holds the last block, whose epilogue calls the
/// code chooses at run time — two copies of the microkernels, not three — unless the stores
/// are direct: the last block is then always a pass of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct KPasses {
    /// Block 0, or the only block.
    pub first: Pass,
    /// The pass looped over blocks `1..end`, with `end`.
    pub looped: Option<(Pass, u64)>,
    /// A last block shorter than `tile_k` (or, with direct stores, the last block).
    pub rest: Option<Pass>,
}

/// The passes of `k`'s tiles over k. With `direct` stores (the schedule's
/// [`Schedule::direct`]) the last block is always a pass of its own, since its microkernels
/// store elsewhere than the others'.
pub(crate) fn k_passes(k: &ContractionKernel, direct: bool) -> KPasses {
    let kc = k.tile_k.max(1);
    if kc >= k.k {
        return KPasses {
            first: Pass {
                k_len: k.k,
                init: Init::Zero,
                block: KBlock::At(0),
                epilogue: EpilogueCall::Always,
            },
            looped: None,
            rest: None,
        };
    }
    // kc < k: at least two blocks.
    let (full, rest) = (k.k / kc, k.k % kc);
    let pass = |k_len, init, block, epilogue| Pass {
        k_len,
        init,
        block,
        epilogue,
    };
    // The loop's end, and the last pass's length and block when it has one: a shorter last
    // block, or with direct stores the last whole one.
    let (end, last) = if rest > 0 {
        (full, Some((rest, full)))
    } else if direct {
        (full - 1, Some((kc, full - 1)))
    } else {
        (full, None)
    };
    let looped = (end > 1).then(|| {
        let epilogue = match last {
            Some(_) => EpilogueCall::Never,
            None => EpilogueCall::InBlock(full - 1),
        };
        (pass(kc, Init::Load, KBlock::Current, epilogue), end)
    });
    KPasses {
        first: pass(kc, Init::Zero, KBlock::At(0), EpilogueCall::Never),
        looped,
        rest: last.map(|(len, b)| pass(len, Init::Load, KBlock::At(b), EpilogueCall::Always)),
    }
}

/// The schedule of `k` for a backend whose microkernels hold `mr × nr` accumulators. Fails when
/// `k` does not fit the shape backends rely on: tiles that are a multiple of `mr` rows and
/// `nr` columns wide (or a panelled right operand of width `nr`), and epilogue maps with
/// non-negative row and column strides. A backend whose microkernels can store into the
/// output (`direct_stores`) gets [`Schedule::direct`] where the kernel allows it.
pub(crate) fn schedule(
    k: &ContractionKernel,
    mr: u64,
    nr: u64,
    target: &'static str,
    direct_stores: bool,
) -> Result<Schedule, EmitError> {
    let bad = |what: String| EmitError::Unsupported {
        kernel: k.name.clone(),
        what,
        target,
    };
    if !k.tile_m.is_multiple_of(mr) || !k.tile_n.is_multiple_of(nr) {
        return Err(bad(format!(
            "a {}x{} tile with a {mr}x{nr} microkernel",
            k.tile_m, k.tile_n
        )));
    }
    match k.rhs.panels {
        Some(w) if w != nr => return Err(bad(format!("panels of width {w}, not {nr}"))),
        None if !k.n.is_multiple_of(nr) => {
            return Err(bad(format!(
                "an unpanelled right operand with {} columns",
                k.n
            )))
        }
        _ => {}
    }
    let (tiles_m, tiles_n) = k.tiles();
    let last_cols = k.n - (tiles_n.max(1) - 1) * k.tile_n;
    let rem = k.m % mr;
    let t_ld = k.tile_n;
    let size = k.dtype.size_bytes();
    let t_rows = if k.tile_k < k.k { k.tile_m } else { mr };
    let t_bytes = t_rows
        .checked_mul(t_ld)
        .and_then(|e| e.checked_mul(size))
        .ok_or_else(|| bad("a partial sums buffer beyond u64".into()))?;
    // Copy A's blocks where the kernel asks and the copy fits; it costs a few percent of one
    // panel's work.
    let k_block = k.tile_k.clamp(1, k.k.max(1));
    let pack_a = (k.copy_a && k.a_copy_fits(nr)).then(|| {
        let lines = (k_block * size).div_ceil(64);
        PackA {
            offset: t_bytes.next_multiple_of(64),
            row_bytes: (lines | 1) * 64,
        }
    });
    let worker_scratch = match pack_a {
        Some(p) => p
            .row_bytes
            .checked_mul(mr)
            .and_then(|b| b.checked_add(p.offset))
            .ok_or_else(|| bad("a packed block of A beyond u64".into()))?,
        None => t_bytes,
    };
    // Full panels occur when the tile holds mr rows; a partial one in the last tile.
    let full_panels = k.m >= mr;
    let mut rows = Vec::new();
    if full_panels {
        rows.push(mr);
    }
    if rem != 0 {
        rows.push(rem);
    }
    let mut cols = vec![k.tile_n.min(k.n).max(1)];
    if !cols.contains(&last_cols) && last_cols > 0 {
        cols.push(last_cols);
    }
    let direct = direct_stores.then(|| direct_store(k, mr, nr)).flatten();
    let mut epilogues = Vec::new();
    for &r in rows.iter().filter(|_| direct.is_none()) {
        for &c in &cols {
            let (kernel, relocs) = epilogue_kernel(k, r, c, t_ld, epilogues.len()).map_err(&bad)?;
            epilogues.push(Epilogue {
                rows: r,
                cols: c,
                kernel,
                relocs,
            });
        }
    }
    Ok(Schedule {
        mr,
        nr,
        rem,
        full_panels,
        t_ld,
        t_rows,
        worker_scratch,
        tiles: (tiles_m, tiles_n),
        last_cols,
        epilogues,
        pack_a,
        direct,
    })
}

/// `k`'s output as a [`DirectStore`], when its epilogue is the sum alone, stored in its own
/// type, row-major with unit column stride, and every column panel is whole in it (`n` a
/// multiple of `nr`): then each microkernel of the last block writes exactly the elements
/// the epilogue kernel would, with the same bits. A panel's rows must be a 32-bit
/// displacement apart in all (`mr` rows), as the microkernels address them.
fn direct_store(k: &ContractionKernel, mr: u64, nr: u64) -> Option<DirectStore> {
    let plain = matches!(k.epilogue.as_slice(), [KernelNode { node: Node::Acc, dtype }]
        if *dtype == k.dtype)
        && k.result == 0;
    let output = k.bindings.get(k.store.binding as usize)?;
    let size = k.dtype.size_bytes();
    let s = &k.store.map.strides;
    let strides = [*s.first()?, *s.get(1)?, *s.get(2)?];
    (plain
        && output.dtype == k.dtype
        && strides[2] == 1
        && strides[0] >= 0
        && strides[1] >= 0
        && k.n.is_multiple_of(nr)
        && i128::from(strides[1]) * i128::from(mr as i64 + 1) * i128::from(size as i64)
            <= i128::from(i32::MAX))
    .then_some(DirectStore {
        binding: k.store.binding,
        offset: k.store.map.offset,
        strides,
    })
}

/// The loop kernel evaluating `k`'s epilogue over a `rows × cols` panel whose accumulators are
/// in `T` (row stride `t_ld`), with one binding per buffer it touches, each relocated to the
/// panel's origin.
fn epilogue_kernel(
    k: &ContractionKernel,
    rows: u64,
    cols: u64,
    t_ld: u64,
    number: usize,
) -> Result<(LoopKernel, Vec<Reloc>), String> {
    let reach = |sm: i64, sn: i64| -> Result<u64, String> {
        if sm < 0 || sn < 0 {
            return Err(format!("an epilogue map with strides {sm}, {sn}"));
        }
        // Validation bounded every access of the whole space, so these fit.
        Ok((sm as u64) * (rows - 1) + (sn as u64) * (cols - 1) + 1)
    };
    let mut bindings = vec![KernelBinding {
        dtype: k.dtype,
        elements: t_ld * (rows - 1) + cols,
        access: Access::Read,
    }];
    let mut relocs = vec![Reloc::Tile];
    let mut nodes = Vec::with_capacity(k.epilogue.len());
    for kn in &k.epilogue {
        let node = match &kn.node {
            Node::Acc => Node::Load {
                binding: 0,
                map: IndexMap::new(0, &[t_ld as i64, 1]),
            },
            Node::Load { binding, map } => {
                let s = |d: usize| map.strides.get(d).copied().unwrap_or(0);
                let elements = reach(s(1), s(2))?;
                // One epilogue binding per (binding, map): the relocation fixes both.
                let r = reloc(k, *binding, map);
                let at = match relocs.iter().position(|x| *x == r) {
                    Some(at) => at,
                    None => {
                        bindings.push(read(kn.dtype, elements));
                        relocs.push(r);
                        bindings.len() - 1
                    }
                };
                Node::Load {
                    binding: at as u32,
                    map: IndexMap::new(0, &[s(1), s(2)]),
                }
            }
            Node::Gather { .. } | Node::Index { .. } => {
                return Err("a gather or index in an epilogue".into())
            }
            other => other.clone(),
        };
        nodes.push(KernelNode {
            node,
            dtype: kn.dtype,
        });
    }
    let s = |d: usize| k.store.map.strides.get(d).copied().unwrap_or(0);
    let result_dtype = k
        .epilogue
        .get(k.result as usize)
        .map(|n| n.dtype)
        .ok_or("no result node")?;
    bindings.push(KernelBinding {
        dtype: result_dtype,
        elements: reach(s(1), s(2))?,
        access: Access::Write,
    });
    relocs.push(reloc(k, k.store.binding, &k.store.map));
    let kernel = LoopKernel {
        name: format!("{}.epilogue{number}", k.name),
        dims: smallvec![rows, cols],
        parallel_rank: 2,
        store: Store {
            binding: bindings.len() as u32 - 1,
            map: IndexMap::new(0, &[s(1), s(2)]),
        },
        bindings,
        nodes,
        result: k.result,
        reduction: None,
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    kernel.validate().map_err(|e| e.to_string())?;
    Ok((kernel, relocs))
}

fn read(dtype: DType, elements: u64) -> KernelBinding {
    KernelBinding {
        dtype,
        elements,
        access: Access::Read,
    }
}

fn reloc(k: &ContractionKernel, binding: u32, map: &IndexMap) -> Reloc {
    let s = |d: usize| map.strides.get(d).copied().unwrap_or(0);
    Reloc::At {
        binding,
        size: k
            .bindings
            .get(binding as usize)
            .map_or(1, |b| b.dtype.size_bytes()),
        offset: map.offset,
        strides: [s(0), s(1), s(2)],
    }
}
