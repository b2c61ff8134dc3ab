//! Cache blocking of transposing kernels: the same points, visited in square blocks.
//!
//! An elementwise kernel that stores contiguously along its innermost dim while a load walks
//! that dim with a large stride (a transpose, or any permute that moves the last axis) touches
//! a new cache line — and, at 4 KiB rows, a new page — for every element it loads. Splitting
//! the innermost dim into blocks of [`ROWS`] and the dim the load walks contiguously into
//! blocks of one cache line, and visiting block by block, keeps a block's `ROWS` source lines
//! in the L1 cache while they are used up: each loaded line serves a line's worth of elements
//! instead of one. `ROWS` stays below the L1's associativity, because source rows a power of
//! two apart all fall into one cache set; the destination's half lines are completed by the
//! next block, while they are still in the cache. A target whose code reads each source line
//! whole when it first touches it (x64's AVX2 tiles) asks for a longer inner block instead
//! and more lines per row ([`crate::Target::transpose_block`]): nothing has to stay cached,
//! the loops' overhead is spread over more elements, and each visit to a source row's page
//! reads more of it. Such a target may also order the blocks along the source rows
//! ([`crate::TransposeBlock::along_rows`]): each block then reads the next lines of the same
//! rows, and each destination row gets a whole run of lines per block, which suits
//! non-temporal stores.
//!
//! Only the visiting order changes: every point's loads and store are the same, and an
//! elementwise kernel whose store map is injective (every stride non-zero) computes each point
//! independently, so the result cannot change.

use accy_ir::MAX_RANK;
use smallvec::SmallVec;

use crate::kernel::{IndexMap, LoopKernel, Node};
use crate::target::TransposeBlock;

/// Source rows per block (the innermost dim's block): fewer than any L1's 8 to 12 ways.
pub(crate) const ROWS: u64 = 8;

/// Bytes of a cache line: the block along the dim the load walks contiguously.
const LINE: u64 = 64;

/// The blocks of code that uses up each loaded line while it stays cached: a line by
/// [`ROWS`].
pub(crate) const LINE_BY_ROWS: TransposeBlock = TransposeBlock {
    line_bytes: LINE,
    run: ROWS,
    along_rows: false,
};

/// A load stride (in elements) from which every step along the innermost dim is a new line.
const FAR: i64 = 16;

/// Reorders `k` into blocks when it is a transposing elementwise kernel (see the module
/// documentation), otherwise leaves it as it is. The blocks are those `block` asks for (the
/// target's [`crate::Target::transpose_block`]) when every value is 4 bytes, or every value
/// 8 bytes, and the dims divide into them, or the largest halving of them that the dims
/// divide into; else one line by [`ROWS`]. The blocks follow `block`'s order when a run
/// is at least a line, else the order along the source columns.
pub(crate) fn block_transposes(k: &mut LoopKernel, block: TransposeBlock) {
    let rank = k.dims.len();
    if k.reduction.is_some() || rank < 2 || rank + 2 > MAX_RANK || k.parallel_rank as usize != rank
    {
        return;
    }
    let last = rank - 1;
    let store = &k.store.map.strides;
    if store.len() != rank || store[last] != 1 || store.contains(&0) {
        return;
    }
    let mut inner: Option<usize> = None;
    for n in &k.nodes {
        match &n.node {
            Node::Index { .. } | Node::Gather { .. } => return,
            Node::Load { map, .. } if map.strides.get(last).is_some_and(|s| s.abs() >= FAR) => {
                // The dim this load walks contiguously becomes the other blocked dim.
                if let Some(d) = (0..last).rev().find(|&d| map.strides[d].abs() == 1) {
                    inner.get_or_insert(d);
                }
            }
            _ => {}
        }
    }
    let Some(d) = inner else {
        return;
    };
    let size = k
        .nodes
        .get(k.result as usize)
        .map_or(4, |n| n.dtype.size_bytes().max(1));
    let fits = |n: u64, b: u64| n.is_multiple_of(b) && n >= 2 * b;
    let fits_both = |(line, rows): (u64, u64)| fits(k.dims[d], line) && fits(k.dims[last], rows);
    // The target's blocks are for code that reads whole lines of 4- or 8-byte values; a
    // kernel with values of several sizes (a convert, say) may run element by element.
    let uniform_size =
        (size == 4 || size == 8) && k.nodes.iter().all(|n| n.dtype.size_bytes() == size);
    let lines = ((LINE / size).max(1), ROWS);
    // The target's block (whatever its size), or the largest halving of it (lines first,
    // then rows) that the dims divide into, down to a line by [`ROWS`].
    let mut asked = Vec::new();
    if uniform_size {
        asked.push(((block.line_bytes / size).max(1), block.run.max(1)));
    }
    let mut line_bytes = block.line_bytes;
    while uniform_size && line_bytes > LINE {
        let mut run = block.run;
        while run >= ROWS {
            asked.push(((line_bytes / size).max(1), run));
            run /= 2;
        }
        line_bytes /= 2;
    }
    let Some((line, rows)) = asked.into_iter().chain([lines]).find(|&b| fits_both(b)) else {
        return;
    };
    let (bd, bl) = (line as i64, rows as i64);
    // Along the rows, each destination row's lines must be written whole within a block: a
    // part line would be completed only a stripe later, long after it left the cache.
    let along_rows = block.along_rows && rows * size >= LINE;
    let reorder = |strides: &SmallVec<[i64; 8]>| -> SmallVec<[i64; 8]> {
        let mut out: SmallVec<[i64; 8]> =
            (0..last).filter(|&i| i != d).map(|i| strides[i]).collect();
        let blocks = [strides[d] * bd, strides[last] * bl];
        out.extend(if along_rows {
            [blocks[1], blocks[0]]
        } else {
            blocks
        });
        out.extend([strides[d], strides[last]]);
        out
    };
    let mut dims: SmallVec<[u64; 8]> = (0..last).filter(|&i| i != d).map(|i| k.dims[i]).collect();
    let blocks = [k.dims[d] / line, k.dims[last] / rows];
    dims.extend(if along_rows {
        [blocks[1], blocks[0]]
    } else {
        blocks
    });
    dims.extend([line, rows]);
    for n in &mut k.nodes {
        if let Node::Load { map, .. } = &mut n.node {
            *map = IndexMap {
                offset: map.offset,
                strides: reorder(&map.strides),
            };
        }
    }
    k.store.map.strides = reorder(&k.store.map.strides);
    k.dims = dims.into_iter().collect();
    k.parallel_rank = (rank + 2) as u32;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{KernelBinding, KernelNode, Store};
    use accy_artifact::Access;
    use accy_ir::DType;

    fn transpose(n: u64) -> LoopKernel {
        let binding = |access| KernelBinding {
            dtype: DType::F32,
            elements: n * n,
            access,
        };
        LoopKernel {
            name: "t".into(),
            dims: [n, n].into_iter().collect(),
            parallel_rank: 2,
            bindings: vec![binding(Access::Read), binding(Access::Write)],
            nodes: vec![KernelNode {
                node: Node::Load {
                    binding: 0,
                    map: IndexMap::new(0, &[1, n as i64]),
                },
                dtype: DType::F32,
            }],
            result: 0,
            store: Store {
                binding: 1,
                map: IndexMap::new(0, &[n as i64, 1]),
            },
            reduction: None,
            prefetch: None,
            row_scratch: Vec::new(),
            keep: None,
            at_most_zero: Vec::new(),
        }
    }

    #[test]
    fn a_transpose_is_blocked_and_computes_the_same() {
        let n = 96u64;
        let plain = transpose(n);
        let mut blocked = plain.clone();
        block_transposes(&mut blocked, LINE_BY_ROWS);
        assert_eq!(blocked.dims.as_slice(), &[6, 12, 16, 8]);
        assert_eq!(blocked.store.map.strides.as_slice(), &[16 * 96, 8, 96, 1]);
        blocked.validate().unwrap();
        let input: Vec<u8> = (0..n * n).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let run = |k: &LoopKernel| {
            let mut src = input.clone();
            let mut dst = vec![0u8; input.len()];
            crate::kernel::run_kernel(k, &mut [&mut src, &mut dst]).unwrap();
            dst
        };
        assert_eq!(run(&plain), run(&blocked));
        // Along the rows: 3 stripes of 32 source rows, each 6 blocks of a line.
        let along = TransposeBlock {
            line_bytes: 64,
            run: 32,
            along_rows: true,
        };
        let mut rows_first = plain.clone();
        block_transposes(&mut rows_first, along);
        assert_eq!(rows_first.dims.as_slice(), &[3, 6, 16, 32]);
        assert_eq!(
            rows_first.store.map.strides.as_slice(),
            &[32, 16 * 96, 96, 1]
        );
        rows_first.validate().unwrap();
        assert_eq!(run(&plain), run(&rows_first));
        // A run shorter than a line keeps the order along the columns.
        let mut short = plain.clone();
        block_transposes(&mut short, TransposeBlock { run: 8, ..along });
        assert_eq!(short, blocked);
    }

    /// A target block the dims do not divide into is halved (lines first, then rows) until
    /// they do, before falling back to a line by [`ROWS`].
    #[test]
    fn a_block_too_large_for_the_dims_is_halved() {
        let big = TransposeBlock {
            line_bytes: 1024,
            run: 32,
            along_rows: false,
        };
        let blocks = |n: u64| {
            let mut k = transpose(n);
            block_transposes(&mut k, big);
            k.validate().unwrap();
            k.dims.as_slice()[2..].to_vec()
        };
        // 512 f32 a row: 256 a line, 32 rows.
        assert_eq!(blocks(512), [256, 32]);
        // 320 = 5 · 64 = 10 · 32: lines of 64 f32 (256 bytes), 32 rows.
        assert_eq!(blocks(320), [64, 32]);
        // 96 = 3 · 32: lines of 32 f32 (128 bytes), 32 rows.
        assert_eq!(blocks(96), [32, 32]);
        // A block the dims divide is taken as it is, however small.
        let small = |n: u64, run: u64| {
            let mut k = transpose(n);
            let block = TransposeBlock {
                line_bytes: 64,
                run,
                along_rows: false,
            };
            block_transposes(&mut k, block);
            k.dims.as_slice()[2..].to_vec()
        };
        assert_eq!(small(96, 4), [16, 4]);
        assert_eq!(small(96, 12), [16, 12]);
        // 48 = 3 · 16: not twice any halving of 32 rows or 128 bytes: a line by 8 rows.
        assert_eq!(blocks(48), [16, 8]);
    }

    #[test]
    fn small_contiguous_and_reducing_kernels_stay_as_they_are() {
        for n in [16, 100] {
            let mut k = transpose(n);
            block_transposes(&mut k, LINE_BY_ROWS);
            assert_eq!(k, transpose(n), "{n}: not a multiple of 16 or too small");
        }
        let mut copy = transpose(64);
        if let Node::Load { map, .. } = &mut copy.nodes[0].node {
            *map = IndexMap::new(0, &[64, 1]);
        }
        let before = copy.clone();
        block_transposes(&mut copy, LINE_BY_ROWS);
        assert_eq!(copy, before);
    }
}
