//! `reduce`: combining elements over axes, starting from the op's identity.

use super::data::{flat, typed, with_elem_type, RowMajor};
use super::elementwise::{undefined, Arith};
use super::OpResult;
use crate::{row_major_strides, BinaryOp, Dims, ReduceOp, Tensor, Type};

/// How one dtype reduces.
pub(super) trait Reduce: Arith {
    /// The value an empty reduction gives, or `None` where `op` does not accept this dtype.
    fn identity(op: ReduceOp) -> Option<Self>;
    /// The accumulator after combining it with one more element.
    fn combine(op: ReduceOp, acc: Self, x: Self) -> Option<Self>;
}

macro_rules! numeric_reduce {
    ($t:ident, zero: $zero:expr, one: $one:expr, lowest: $lowest:expr, highest: $highest:expr) => {
        impl Reduce for $t {
            fn identity(op: ReduceOp) -> Option<$t> {
                Some(match op {
                    ReduceOp::Sum => $zero,
                    ReduceOp::Prod => $one,
                    ReduceOp::Max => $lowest,
                    ReduceOp::Min => $highest,
                })
            }

            // The combining steps are the binary ops, so NaN propagation, integer wrap and the
            // ordering of -0.0 below +0.0 are exactly those of `add`, `mul`, `max` and `min`.
            fn combine(op: ReduceOp, acc: $t, x: $t) -> Option<$t> {
                let binary = match op {
                    ReduceOp::Sum => BinaryOp::Add,
                    ReduceOp::Prod => BinaryOp::Mul,
                    ReduceOp::Max => BinaryOp::Max,
                    ReduceOp::Min => BinaryOp::Min,
                };
                Self::binary(binary, acc, x)
            }
        }
    };
}

numeric_reduce!(f32, zero: 0.0, one: 1.0, lowest: f32::NEG_INFINITY, highest: f32::INFINITY);
numeric_reduce!(f64, zero: 0.0, one: 1.0, lowest: f64::NEG_INFINITY, highest: f64::INFINITY);
numeric_reduce!(i32, zero: 0, one: 1, lowest: i32::MIN, highest: i32::MAX);
numeric_reduce!(i64, zero: 0, one: 1, lowest: i64::MIN, highest: i64::MAX);
numeric_reduce!(u8, zero: 0, one: 1, lowest: u8::MIN, highest: u8::MAX);

/// Bool max is "any" and min is "all"; bool has no sum or product.
impl Reduce for bool {
    fn identity(op: ReduceOp) -> Option<bool> {
        match op {
            ReduceOp::Max => Some(false),
            ReduceOp::Min => Some(true),
            ReduceOp::Sum | ReduceOp::Prod => None,
        }
    }

    fn combine(op: ReduceOp, acc: bool, x: bool) -> Option<bool> {
        match op {
            ReduceOp::Max => Some(acc || x),
            ReduceOp::Min => Some(acc && x),
            ReduceOp::Sum | ReduceOp::Prod => None,
        }
    }
}

/// `x` reduced over `axes` with `op`: each result element starts at the identity and is
/// combined with its reduced elements one at a time, in row-major order of the reduced indices.
///
/// Float sums therefore start from +0.0, so a sum of only -0.0 elements is +0.0 (as an
/// accumulator register zeroed by generated code gives).
pub(super) fn reduce(op: ReduceOp, x: &Tensor, axes: &[u32], out: &Type) -> OpResult {
    with_elem_type!(x.dtype(), T => reduce_typed::<T>(op, x, axes, out))
}

fn reduce_typed<T: Reduce>(op: ReduceOp, x: &Tensor, axes: &[u32], out: &Type) -> OpResult {
    let elements = typed::<T>(x.data())?;
    let identity = T::identity(op).ok_or_else(|| undefined(op.name(), x.dtype()))?;
    let out_count = out.element_count().ok_or("result size overflows")? as usize;
    let mut acc = vec![identity; out_count];
    let kept: Vec<usize> = (0..x.dims().len())
        .filter(|&a| !axes.contains(&(a as u32)))
        .collect();
    let out_strides = row_major_strides(&out.dims);
    // Walking all of `x` in row-major order meets the elements of each result position in
    // row-major order of their reduced indices, which is the order the op specifies.
    for (element, k) in elements.iter().zip(RowMajor::new(x.dims())) {
        let o: Dims = kept.iter().map(|&a| k[a]).collect();
        let slot = acc
            .get_mut(flat(&o, &out_strides))
            .ok_or("reduce result position out of range")?;
        *slot = T::combine(op, *slot, *element).ok_or_else(|| undefined(op.name(), x.dtype()))?;
    }
    Ok(T::wrap(acc))
}
