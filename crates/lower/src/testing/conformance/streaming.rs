//! Outputs written with non-temporal stores (`crate::streams_stores`): elementwise kernels
//! compiled for a last-level cache so small that every one of them streams, so each run of the
//! inner loop starts with the vector that brings the store address to a vector boundary, then
//! stores whole vectors past the cache. One-dimensional kernels (what the planner makes of any
//! contiguous elementwise op, split inside their only dim across workgroups) and row-by-row
//! ones; store offsets 0 to 7 elements past the binding's start (which the guard-page placement
//! puts at an address set by the binding's size) vary how far each run is from the boundary.
//! Blocked transposes read through tiles, whose runs have no alignment head: each store
//! checks its own address; also with caches that skip scattered prefetches, where each tile
//! fill checks whether its rows start on a line. A backend that ignores the hint passes as
//! well.

use accy_artifact::Blocking;
use accy_ir::{BinaryOp, DType, UnaryOp};

use super::Conformance;
use crate::emit::STREAM_MIN_RUN;
use crate::kernel::{IndexMap, LoopKernel, Node};
use crate::testing::kernels::{binary_2d, blocked_transpose, buffers_for, elementwise, node as kn};

pub(super) fn streaming_stores(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    let mut options = s.options.clone();
    options.caches = Blocking {
        llc: 32,
        ..options.caches
    };
    let mut skipping = Conformance::new(
        s.runner,
        crate::compile::Options {
            caches: Blocking {
                skip_scattered_prefetch: true,
                ..options.caches
            },
            ..options.clone()
        },
    );
    let mut suite = Conformance::new(s.runner, options);
    let run = STREAM_MIN_RUN;
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        // A second node after the loads: neg for floats, a subtraction for integers (both
        // vectorized on every vector tier).
        let op = |x: u32, y: u32| {
            if dtype.is_float() {
                Node::Unary {
                    op: UnaryOp::Neg,
                    x,
                }
            } else {
                Node::Binary {
                    op: BinaryOp::Sub,
                    lhs: x,
                    rhs: y,
                }
            }
        };
        for n in [run, run + 5, 1000, 4099] {
            let add = kn(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 0,
                    rhs: 1,
                },
                dtype,
            );
            let flat = elementwise(
                "stream_1d",
                n,
                &[dtype, dtype],
                vec![add, kn(op(2, 0), dtype)],
            );
            for offset in [0, 1, 3, 7] {
                let k = with_store_offset(&flat, offset);
                for workgroups in [1, 2, 3, 7] {
                    suite.check(&k, &buffers_for(&k, 21), workgroups)?;
                }
            }
        }
        for (rows, cols) in [(1, run + 1), (3, 300), (2, 1000), (5, run + 13)] {
            let n = rows * cols;
            // a row-major, b broadcast along each row (a uniform value of the inner loop).
            let k = binary_2d(
                [rows, cols],
                dtype,
                (n, 0, [cols as i64, 1]),
                (rows, 0, [1, 0]),
                BinaryOp::Add,
            );
            for workgroups in [1, 3] {
                suite.check(&k, &buffers_for(&k, 11), workgroups)?;
            }
            // Rows of the output 3 elements apart: each row starts at another alignment.
            let mut padded = k.clone();
            padded.store.map = IndexMap::new(2, &[cols as i64 + 3, 1]);
            padded.bindings[2].elements = rows * (cols + 3) + 2;
            suite.check(&padded, &buffers_for(&padded, 12), 2)?;
            let mut longer = k.clone();
            longer.nodes.push(kn(op(2, 0), dtype));
            longer.result = 3;
            suite.check(&longer, &buffers_for(&longer, 13), 1)?;
        }
    }
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        // A transpose blocked along the source rows into runs of `STREAM_MIN_RUN` (x64 reads
        // it through tiles and checks each store's alignment instead of aligning the run),
        // its output 0, 1 element, 16 and 32 bytes longer: the guard-page placement (the
        // buffer ends on a page, and the unpadded output is whole pages) then starts it on
        // a page, one element before a 32-byte boundary, 16 bytes past one, and on one: a
        // whole non-temporal store, an ordinary one, two halves, a whole one again (zmm
        // columns on AVX-512: a whole line, an ordinary store, four 16-byte pieces, two
        // 32-byte halves).
        let size = dtype.size_bytes();
        let block = crate::TransposeBlock {
            line_bytes: 128,
            run,
            along_rows: true,
        };
        let k = blocked_transpose(64, 2 * run, dtype, block);
        for pad in [0, 1, 16 / size, 32 / size] {
            let mut padded = k.clone();
            padded.bindings[2].elements += pad;
            for workgroups in [1, 3] {
                suite.check(&padded, &buffers_for(&padded, 14), workgroups)?;
            }
        }
        // Caches that skip scattered prefetches: the fills then test each group's first
        // row, which starts on a line, or (the source 16 bytes longer) 16 bytes past one.
        for pad in [0, 16 / size] {
            let mut padded = k.clone();
            padded.bindings[0].elements += pad;
            skipping.check(&padded, &buffers_for(&padded, 15), 2)?;
        }
    }
    s.checked += suite.checked + skipping.checked;
    Ok(())
}

/// `k` (one-dimensional) storing `offset` elements into a store binding that much longer.
fn with_store_offset(k: &LoopKernel, offset: i64) -> LoopKernel {
    let mut k = k.clone();
    k.store.map.offset = offset;
    let store = k.store.binding as usize;
    k.bindings[store].elements += offset as u64;
    k
}
