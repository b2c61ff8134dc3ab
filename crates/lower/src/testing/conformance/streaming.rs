//! Outputs written with non-temporal stores (`crate::streams_stores`): the same kernels as
//! the elementwise groups, compiled for a last-level cache so small that every one of them
//! streams, so each run of the inner loop starts with the scalar head that aligns the store
//! address — at every alignment the guard-page placement and the row strides give — and
//! then stores whole vectors past the cache. A backend that ignores the hint passes as well.

use accy_artifact::Blocking;
use accy_ir::{BinaryOp, DType, UnaryOp};

use super::Conformance;
use crate::emit::STREAM_MIN_RUN;
use crate::kernel::{IndexMap, Node};
use crate::testing::kernels::{binary_2d, buffers_for, node as kn};

pub(super) fn streaming_stores(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    let mut options = s.options.clone();
    options.caches = Blocking {
        llc: 32,
        ..options.caches
    };
    let mut suite = Conformance::new(s.runner, options);
    let run = STREAM_MIN_RUN;
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        for (rows, cols) in [(1, run), (1, run + 1), (3, 300), (2, 1000), (5, run + 13)] {
            let n = rows * cols;
            // a row-major, b broadcast along each row (a uniform value of the inner loop).
            let k = binary_2d(
                [rows, cols],
                dtype,
                (n, 0, [cols as i64, 1]),
                (rows, 0, [1, 0]),
                BinaryOp::Add,
            );
            for workgroups in [1, 2, 3] {
                suite.check(&k, &buffers_for(&k, 11), workgroups)?;
            }
            // Rows of the output 3 elements apart: each row starts at another alignment.
            let mut padded = k.clone();
            padded.store.map = IndexMap::new(2, &[cols as i64 + 3, 1]);
            padded.bindings[2].elements = rows * (cols + 3) + 2;
            suite.check(&padded, &buffers_for(&padded, 12), 2)?;
            // A body with more than one node after the loads.
            let mut longer = k.clone();
            let neg = if dtype.is_float() {
                Node::Unary {
                    op: UnaryOp::Neg,
                    x: 2,
                }
            } else {
                Node::Binary {
                    op: BinaryOp::Mul,
                    lhs: 2,
                    rhs: 0,
                }
            };
            longer.nodes.push(kn(neg, dtype));
            longer.result = 3;
            suite.check(&longer, &buffers_for(&longer, 13), 1)?;
        }
    }
    s.checked += suite.checked;
    Ok(())
}
