//! Ops that only move or repeat elements (broadcast, reshape, transpose, slice, concat, pad,
//! reverse, gather) and iota.
//!
//! Each computes, for every result index in row-major order, which element it reads — the
//! formula in the op's doc — and [`pick`] gathers those elements whatever the dtype.

use smallvec::smallvec;

use super::data::{flat, pick, typed, RowMajor};
use super::elementwise::convert;
use super::OpResult;
use crate::{row_major_strides, DType, Dims, Tensor, TensorData, Type};

/// Reads every result element from the single source `x` at the flat index `source(j)` for
/// result index `j`.
fn from_one(x: &Tensor, out: &Type, source: impl Fn(&[u64]) -> usize) -> OpResult {
    pick(
        &[x.data()],
        RowMajor::new(&out.dims).map(|j| (0, source(&j))),
    )
}

/// `result[j] = i_axis` converted to the result dtype as `convert` from i64 does.
pub(super) fn iota(out: &Type, axis: u32) -> OpResult {
    let axis = axis as usize;
    let indices = RowMajor::new(&out.dims)
        .map(|j| j[axis] as i64)
        .collect::<Vec<i64>>();
    Ok(convert(&TensorData::I64(indices), out.dtype))
}

/// `result[j] = x[k]` with `k_i = j_{axes[i]}`, or 0 where `x`'s dim is 1.
pub(super) fn broadcast(x: &Tensor, out: &Type, axes: &[u32]) -> OpResult {
    let strides = row_major_strides(x.dims());
    from_one(x, out, |j| {
        let k: Dims = axes
            .iter()
            .zip(x.dims())
            .map(|(&a, &d)| if d == 1 { 0 } else { j[a as usize] })
            .collect();
        flat(&k, &strides)
    })
}

/// The same row-major elements under new dims.
pub(super) fn reshape(x: &Tensor) -> OpResult {
    Ok(x.data().clone())
}

/// `result[j] = x[k]` with `k_{perm[i]} = j_i`.
pub(super) fn transpose(x: &Tensor, out: &Type, perm: &[u32]) -> OpResult {
    let strides = row_major_strides(x.dims());
    from_one(x, out, |j| {
        let mut k: Dims = smallvec![0; x.dims().len()];
        for (i, &p) in perm.iter().enumerate() {
            k[p as usize] = j[i];
        }
        flat(&k, &strides)
    })
}

/// `result[j] = x[k]` with `k_i = start_i + j_i * stride_i`.
pub(super) fn slice(x: &Tensor, out: &Type, start: &[u64], stride: &[u64]) -> OpResult {
    let strides = row_major_strides(x.dims());
    from_one(x, out, |j| {
        let k: Dims = (0..j.len()).map(|i| start[i] + j[i] * stride[i]).collect();
        flat(&k, &strides)
    })
}

/// The operands one after another along `axis`: result index `j` reads operand `n` at `j`
/// with `j_axis` reduced by the `axis` dims of the operands before `n`.
pub(super) fn concat(xs: &[&Tensor], out: &Type, axis: u32) -> OpResult {
    if xs.is_empty() {
        return Err("concat without operands".into());
    }
    let axis = axis as usize;
    let strides: Vec<Dims> = xs.iter().map(|x| row_major_strides(x.dims())).collect();
    let data: Vec<&TensorData> = xs.iter().map(|x| x.data()).collect();
    let picks = RowMajor::new(&out.dims).map(|j| {
        let mut k = j.clone();
        let mut n = 0;
        // Skip whole operands until `k_axis` falls inside one; the result dim is the sum of
        // the operands' dims, so this stops at the last operand at the latest.
        while n + 1 < xs.len() && k[axis] >= xs[n].dims()[axis] {
            k[axis] -= xs[n].dims()[axis];
            n += 1;
        }
        (n, flat(&k, &strides[n]))
    });
    pick(&data, picks)
}

/// Where result coordinate `j` along one axis reads `x`: `Some(k)` for element `k`, `None`
/// for padding. Padded coordinate `t = j - low` is an element when it is a multiple of
/// `interior + 1` whose quotient is in range; negative `low` makes `t` start past 0, which
/// crops, and negative `high` shortens the result, which crops the end.
fn pad_source(j: u64, low: i64, interior: u64, dim: u64) -> Option<u64> {
    let t = i128::from(j) - i128::from(low);
    let step = i128::from(interior) + 1;
    if t < 0 || t % step != 0 {
        return None;
    }
    let k = t / step;
    (k < i128::from(dim)).then_some(k as u64)
}

/// `x` with `value` added around and between its elements (see `Op::Pad`).
pub(super) fn pad(
    x: &Tensor,
    value: &Tensor,
    out: &Type,
    low: &[i64],
    interior: &[u64],
) -> OpResult {
    let strides = row_major_strides(x.dims());
    let picks = RowMajor::new(&out.dims).map(|j| {
        let k: Option<Dims> = (0..j.len())
            .map(|i| pad_source(j[i], low[i], interior[i], x.dims()[i]))
            .collect();
        match k {
            Some(k) => (0, flat(&k, &strides)),
            None => (1, 0),
        }
    });
    pick(&[x.data(), value.data()], picks)
}

/// `result[j] = x[k]` with `k_i = dim_i - 1 - j_i` on the reversed axes and `k_i = j_i`
/// elsewhere.
pub(super) fn reverse(x: &Tensor, axes: &[u32]) -> OpResult {
    let strides = row_major_strides(x.dims());
    from_one(x, &x.ty(), |j| {
        let k: Dims = (0..j.len())
            .map(|i| {
                if axes.contains(&(i as u32)) {
                    x.dims()[i] - 1 - j[i]
                } else {
                    j[i]
                }
            })
            .collect();
        flat(&k, &strides)
    })
}

/// `result[a.., i.., b..] = x[a.., clamp(indices[i..], 0, dim - 1), b..]`.
pub(super) fn gather(x: &Tensor, indices: &Tensor, out: &Type, axis: u32) -> OpResult {
    let axis = axis as usize;
    let index_rank = indices.dims().len();
    let index_values = convert(indices.data(), DType::I64);
    let index_values = typed::<i64>(&index_values)?;
    let index_strides = row_major_strides(indices.dims());
    let strides = row_major_strides(x.dims());
    let last = x.dims()[axis] as i64 - 1;
    let picks = RowMajor::new(&out.dims).map(|j| {
        let position = flat(&j[axis..axis + index_rank], &index_strides);
        let Some(&index) = index_values.get(position) else {
            // An index that does not exist cannot be read; `pick` reports the bad position.
            return (0, usize::MAX);
        };
        let mut k: Dims = j[..axis].iter().copied().collect();
        k.push(index.min(last).max(0) as u64);
        k.extend_from_slice(&j[axis + index_rank..]);
        (0, flat(&k, &strides))
    });
    pick(&[x.data()], picks)
}
