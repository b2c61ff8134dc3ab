//! `ScatterElements`, `ScatterND` and `TopK`, which the IR has no direct op for, built from
//! comparisons: a scatter matches every output position against every update's target (so it
//! costs output × updates elements, bounded by [`MAX_PAIRS`]); `TopK` picks the first
//! extreme `k` times.

use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::helpers::{highest, lowest};
use crate::node::{norm_axis, Node};
use crate::ops::index::{linear_index, wrap_negative};

/// The largest output × updates match table a scatter may build.
const MAX_PAIRS: u64 = 1 << 24;

/// The largest `k` `TopK` unrolls.
const MAX_K: u64 = 256;

/// `data` with `updates` written (or combined by `reduction`) at the flat positions
/// `targets` (same shape as `updates`). With `none`, the last update to a position wins.
fn scatter_flat(
    em: &mut Emitter,
    data: Val,
    targets: Val,
    updates: Val,
    reduction: &str,
) -> NodeResult<Val> {
    let dims = em.dims(data);
    let n: u64 = dims.iter().product();
    let u: u64 = em.dims(updates).iter().product();
    if n.checked_mul(u).is_none_or(|p| p > MAX_PAIRS) {
        return unsupported(format!(
            "a scatter of {u} updates into {n} elements (the limit is {MAX_PAIRS} pairs)"
        ));
    }
    let d = em.dtype(data);
    let flat = em.reshape(data, &[n])?;
    let t = em.reshape(targets, &[u])?;
    let upd = em.reshape(updates, &[u])?;
    let pos = em.iota(DType::I64, &[n, u], 0)?;
    let t = em.broadcast_axes(t, &[n, u], &[1])?;
    let hit = em.compare(CompareOp::Eq, pos, t)?;
    let upd2 = em.broadcast_axes(upd, &[n, u], &[1])?;
    let combined = |em: &mut Emitter, op: ReduceOp, identity: f64| -> NodeResult<Val> {
        let id = em.scalar(d, identity);
        let v = em.select(hit, upd2, id)?;
        em.reduce(op, v, &[1])
    };
    let out = match reduction {
        "none" => {
            let which = em.iota(DType::I64, &[n, u], 1)?;
            let none = em.scalar_i64(-1);
            let cand = em.select(hit, which, none)?;
            let last = em.reduce(ReduceOp::Max, cand, &[1])?;
            let got = em.gather(upd, last, 0)?;
            let zero = em.scalar_i64(0);
            let any = em.compare(CompareOp::Ge, last, zero)?;
            em.select(any, got, flat)?
        }
        "add" => {
            let s = combined(em, ReduceOp::Sum, 0.0)?;
            em.binary(BinaryOp::Add, flat, s)?
        }
        "mul" => {
            let p = combined(em, ReduceOp::Prod, 1.0)?;
            em.binary(BinaryOp::Mul, flat, p)?
        }
        "max" | "min" => {
            let (op, bin, id) = if reduction == "max" {
                (ReduceOp::Max, BinaryOp::Max, lowest(d))
            } else {
                (ReduceOp::Min, BinaryOp::Min, highest(d))
            };
            let m = combined(em, op, id)?;
            // Positions without an update keep their value (the identity never wins).
            em.binary(bin, flat, m)?
        }
        r => {
            return invalid(format!(
                "reduction `{r}` must be none, add, mul, max or min"
            ))
        }
    };
    em.reshape(out, &dims)
}

/// `ScatterElements(data, indices, updates; axis, reduction)`.
pub(super) fn scatter_elements(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis", "reduction"])?;
    let (data, idx, upd) = (node.input(0)?, node.input(1)?, node.input(2)?);
    if em.dims(idx) != em.dims(upd) {
        return invalid("indices and updates must have the same shape");
    }
    let axis = norm_axis(node.int("axis", 0)?, em.rank(data))?;
    let targets = linear_index(em, &em.dims(data), idx, axis)?;
    let reduction = node.string("reduction", "none")?;
    Ok(vec![scatter_flat(em, data, targets, upd, &reduction)?])
}

/// `ScatterND(data, indices, updates; reduction)`: `indices[..., k]` names slices of `data`
/// (its first k axes), which `updates[..., rest…]` fill.
pub(super) fn scatter_nd(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["reduction"])?;
    let (data, idx, upd) = (node.input(0)?, node.input(1)?, node.input(2)?);
    let dims = em.dims(data);
    let idims = em.dims(idx);
    let Some(&k) = idims.last() else {
        return invalid("indices must have rank ≥ 1");
    };
    let k = k as usize;
    if k > dims.len() {
        return invalid(format!(
            "index depth {k} exceeds the data rank {}",
            dims.len()
        ));
    }
    let outer: Vec<u64> = idims[..idims.len() - 1].to_vec();
    let inner: Vec<u64> = dims[k..].to_vec();
    let mut want = outer.clone();
    want.extend(&inner);
    if em.dims(upd).as_slice() != want.as_slice() {
        return invalid(format!("updates must be {want:?}"));
    }
    let q: u64 = outer.iter().product();
    let inner_n: u64 = inner.iter().product();
    let idx = em.convert(idx, DType::I64)?;
    let idx = em.reshape(idx, &[q, k as u64])?;
    let strides = accy_ir::row_major_strides(&dims);
    let mut base: Option<Val> = None;
    for j in 0..k {
        let c = em.slice_axis(idx, 1, j as u64, j as u64 + 1)?;
        let c = em.reshape(c, &[q])?;
        let c = wrap_negative(em, c, dims[j])?;
        let c = em.binary_scalar(BinaryOp::Mul, c, strides[j] as f64)?;
        base = Some(match base {
            None => c,
            Some(b) => em.binary(BinaryOp::Add, b, c)?,
        });
    }
    let base = match base {
        Some(b) => b,
        None => em.full(DType::I64, &[q], 0.0)?,
    };
    let base = em.broadcast_axes(base, &[q, inner_n], &[0])?;
    let offset = em.iota(DType::I64, &[q, inner_n], 1)?;
    let targets = em.binary(BinaryOp::Add, base, offset)?;
    let reduction = node.string("reduction", "none")?;
    Ok(vec![scatter_flat(em, data, targets, upd, &reduction)?])
}

/// `TopK(X, K; axis, largest, sorted)`: the `k` largest (or smallest) values along `axis`
/// and their indices, extreme first, equal values by ascending index.
pub(super) fn top_k(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis", "largest", "sorted"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let axis = norm_axis(node.int("axis", -1)?, dims.len())?;
    let k = node
        .const_ints(em, 1, "K")?
        .and_then(|v| v.first().copied())
        .ok_or_else(|| crate::error::NodeError::Invalid("input `K` is missing".into()))?;
    let k = u64::try_from(k)
        .map_err(|_| crate::error::NodeError::Invalid(format!("K {k} is negative")))?;
    if k > dims[axis] {
        return invalid(format!("K {k} exceeds the axis size {}", dims[axis]));
    }
    if k > MAX_K {
        return unsupported(format!("TopK with K {k} (accy unrolls at most {MAX_K})"));
    }
    let largest = node.int("largest", 1)? != 0;
    let d = em.dtype(x);
    let (op, fill) = if largest {
        (ReduceOp::Max, lowest(d))
    } else {
        (ReduceOp::Min, highest(d))
    };
    let a = [axis as u32];
    let n = dims[axis];
    let idx = em.iota(DType::I64, &dims, axis)?;
    let fill = em.scalar(d, fill);
    let never = em.scalar_i64(n as i64);
    let mut taken = em.full(DType::Bool, &dims, 0.0)?;
    let (mut values, mut indices) = (Vec::new(), Vec::new());
    for _ in 0..k {
        let cand = em.select(taken, fill, x)?;
        let m = em.reduce_keep(op, cand, &a)?;
        let mut hit = em.compare(CompareOp::Eq, cand, m)?;
        if d.is_float() {
            let nan = em.compare(CompareOp::Ne, cand, cand)?;
            hit = em.binary(BinaryOp::Or, hit, nan)?;
        }
        let free = em.unary(accy_ir::UnaryOp::Not, taken)?;
        let hit = em.binary(BinaryOp::And, hit, free)?;
        let c = em.select(hit, idx, never)?;
        let first = em.reduce_keep(ReduceOp::Min, c, &a)?;
        let this = em.compare(CompareOp::Eq, idx, first)?;
        taken = em.binary(BinaryOp::Or, taken, this)?;
        values.push(m);
        indices.push(first);
    }
    if k == 0 {
        let mut empty = dims.clone();
        empty[axis] = 0;
        let v = em.slice_axis(x, axis, 0, 0)?;
        let i = em.full(DType::I64, &empty, 0.0)?;
        return Ok(vec![v, i]);
    }
    Ok(vec![em.concat(&values, axis)?, em.concat(&indices, axis)?])
}
