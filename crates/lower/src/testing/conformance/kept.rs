//! Reductions that store a value at every point as well ([`crate::kernel::Keep`]): the kept
//! value is the reduced one or another node, stored contiguously (vector code, with tails on
//! every tier) or transposed (scalar code), over lengths around every vector width and over
//! more than one workgroup.

use accy_artifact::Access;
use accy_ir::{BinaryOp, DType, ReduceOp};

use super::Conformance;
use crate::kernel::{IndexMap, Keep, Node};
use crate::testing::kernels::{binding, buffers_for, node, reduce_2d};

/// `sum`/`max` over rows of `p × r` points of `x + x`, which is kept (or, with `squared`,
/// `y = x + x` kept and `y · x` reduced), at `b1[r·i0 + i1]`, or at `b1[i0 + p·i1]` when
/// `transposed`.
fn kept_reduction(
    op: ReduceOp,
    dtype: DType,
    (p, r): (u64, u64),
    squared: bool,
    transposed: bool,
) -> crate::kernel::LoopKernel {
    let mut k = reduce_2d(op, dtype, p, r);
    k.name = format!("kept_{}", k.name);
    k.bindings = vec![
        binding(dtype, p * r, Access::Read),
        binding(dtype, p * r, Access::Write),
        binding(dtype, p, Access::Write),
    ];
    k.store.binding = 2;
    let binary = |op, lhs, rhs| node(Node::Binary { op, lhs, rhs }, dtype);
    k.nodes.push(binary(BinaryOp::Add, 0, 0));
    k.result = 1;
    if squared {
        k.nodes.push(binary(BinaryOp::Mul, 1, 0));
        k.result = 2;
    }
    let strides = if transposed {
        [1, p as i64]
    } else {
        [r as i64, 1]
    };
    k.keep = Some(Keep {
        node: 1,
        binding: 1,
        map: IndexMap::new(0, &strides),
    });
    k
}

/// Row sums of `c | (a & b)` over i32 that keep `a & b`: on AVX-512 an AND read only by an
/// OR becomes one bit select with it, unless the AND leaves the body as a kept value.
fn kept_and(p: u64, r: u64) -> crate::kernel::LoopKernel {
    let dtype = DType::I32;
    let mut k = reduce_2d(ReduceOp::Sum, dtype, p, r);
    k.name = format!("kept_and_{p}x{r}");
    k.bindings = vec![
        binding(dtype, p * r, Access::Read),
        binding(dtype, p * r, Access::Read),
        binding(dtype, p * r, Access::Read),
        binding(dtype, p * r, Access::Write),
        binding(dtype, p, Access::Write),
    ];
    k.store.binding = 4;
    let rows = IndexMap::new(0, &[r as i64, 1]);
    let load = |binding| {
        node(
            Node::Load {
                binding,
                map: rows.clone(),
            },
            dtype,
        )
    };
    let binary = |op, lhs, rhs| node(Node::Binary { op, lhs, rhs }, dtype);
    k.nodes = vec![
        load(0),
        load(1),
        binary(BinaryOp::And, 0, 1),
        load(2),
        binary(BinaryOp::Or, 3, 2),
    ];
    k.result = 4;
    k.keep = Some(Keep {
        node: 2,
        binding: 3,
        map: rows,
    });
    k
}

/// Every combination above for f32, f64, i32 and u8 (which no tier vectorizes), and the kept
/// AND of [`kept_and`].
pub(super) fn kept_values(s: &mut Conformance<'_>) -> Result<(), String> {
    for (p, r) in [(3, 37), (2, 64)] {
        let k = kept_and(p, r);
        k.validate().map_err(|e| e.to_string())?;
        s.check(&k, &buffers_for(&k, 13), 1)?;
    }
    let shapes = [
        (3u64, 7u64),
        (2, 19),
        (2, 149),
        (4, 16),
        (2, 64),
        (1, 1),
        (3, 0),
    ];
    for dtype in [DType::F32, DType::F64, DType::I32, DType::U8] {
        for op in [ReduceOp::Sum, ReduceOp::Max] {
            for shape in shapes {
                for (squared, transposed) in [(false, false), (true, false), (true, true)] {
                    let k = kept_reduction(op, dtype, shape, squared, transposed);
                    k.validate().map_err(|e| e.to_string())?;
                    s.check(&k, &buffers_for(&k, 11), 1)?;
                    s.check(&k, &buffers_for(&k, 12), 2)?;
                }
            }
        }
    }
    Ok(())
}
