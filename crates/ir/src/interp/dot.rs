//! `dot`: batched tensor contraction (XLA `DotGeneral`).

use smallvec::smallvec;

use super::data::{flat, typed, with_elem_type, RowMajor};
use super::elementwise::undefined;
use super::reduce::Reduce;
use super::OpResult;
use crate::{row_major_strides, Axes, BinaryOp, Dims, ReduceOp, Tensor, Type};

/// The axes of a rank-`rank` operand named in neither `batch` nor `contract`, in order.
fn free_axes(rank: usize, batch: &[u32], contract: &[u32]) -> Axes {
    (0..rank as u32)
        .filter(|a| !batch.contains(a) && !contract.contains(a))
        .collect()
}

/// The batch and contracting axes of one operand.
#[derive(Debug)]
pub(super) struct DotAxes<'a> {
    /// Batch axes, paired in order with the other operand's.
    pub(super) batch: &'a [u32],
    /// Contracting axes, paired in order with the other operand's.
    pub(super) contract: &'a [u32],
}

/// Result element `[b.., l.., r..]` (batch, lhs free, rhs free) is the sum, over every
/// contracting index tuple `c` in row-major order, of `lhs[b, l, c] * rhs[b, r, c]` (each
/// operand's index assembled from the parts on its own axes).
///
/// The sum starts from 0 (so an empty contraction gives 0, and floats start from +0.0: a
/// contraction whose products are all -0.0 gives +0.0) and adds one product at a time in the
/// operand dtype: integers wrap, floats round after every multiply and every add (no FMA).
pub(super) fn dot(lhs: &Tensor, rhs: &Tensor, l: DotAxes, r: DotAxes, out: &Type) -> OpResult {
    with_elem_type!(lhs.dtype(), T => dot_typed::<T>(lhs, rhs, l, r, out))
}

/// Writes `parts[n]` into `index[axes[n]]` for every `n`.
fn place(index: &mut Dims, axes: &[u32], parts: &[u64]) {
    for (&a, &p) in axes.iter().zip(parts) {
        index[a as usize] = p;
    }
}

fn dot_typed<T: Reduce>(
    lhs: &Tensor,
    rhs: &Tensor,
    l: DotAxes,
    r: DotAxes,
    out: &Type,
) -> OpResult {
    let bad_dtype = || undefined("dot", lhs.dtype());
    let (lhs_elements, rhs_elements) = (typed::<T>(lhs.data())?, typed::<T>(rhs.data())?);
    let (lhs_strides, rhs_strides) = (row_major_strides(lhs.dims()), row_major_strides(rhs.dims()));
    let lhs_free = free_axes(lhs.dims().len(), l.batch, l.contract);
    let rhs_free = free_axes(rhs.dims().len(), r.batch, r.contract);
    let contract_dims: Dims = l.contract.iter().map(|&a| lhs.dims()[a as usize]).collect();
    let zero = T::identity(ReduceOp::Sum).ok_or_else(bad_dtype)?;

    let mut result = Vec::new();
    for j in RowMajor::new(&out.dims) {
        let (batch, free) = j.split_at(l.batch.len());
        let (lhs_part, rhs_part) = free.split_at(lhs_free.len());
        let mut lhs_index: Dims = smallvec![0; lhs.dims().len()];
        let mut rhs_index: Dims = smallvec![0; rhs.dims().len()];
        place(&mut lhs_index, l.batch, batch);
        place(&mut rhs_index, r.batch, batch);
        place(&mut lhs_index, &lhs_free, lhs_part);
        place(&mut rhs_index, &rhs_free, rhs_part);
        let mut acc = zero;
        for c in RowMajor::new(&contract_dims) {
            place(&mut lhs_index, l.contract, &c);
            place(&mut rhs_index, r.contract, &c);
            let a = lhs_elements.get(flat(&lhs_index, &lhs_strides));
            let b = rhs_elements.get(flat(&rhs_index, &rhs_strides));
            let (Some(&a), Some(&b)) = (a, b) else {
                return Err("dot operand index out of range".into());
            };
            let product = T::binary(BinaryOp::Mul, a, b).ok_or_else(bad_dtype)?;
            acc = T::binary(BinaryOp::Add, acc, product).ok_or_else(bad_dtype)?;
        }
        result.push(acc);
    }
    Ok(T::wrap(result))
}
