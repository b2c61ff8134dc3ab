//! Indexing: `Gather`, `GatherElements`, `GatherND` (as one `gather` on a flattened view
//! with computed linear indices), `Compress` (known condition), `CumSum`.
//!
//! ONNX counts negative indices from the end; they are wrapped explicitly. Out-of-range
//! indices are an error in ONNX (undefined behaviour in practice); accy's `gather` clamps them.

use accy_ir::{BinaryOp, CompareOp, DType, Dims, Tensor};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, NodeError, NodeResult};
use crate::node::{norm_axis, tensor_ints, Node};

/// `idx < 0 ? idx + dim : idx`, in the indices' own dtype.
pub(crate) fn wrap_negative(em: &mut Emitter, idx: Val, dim: u64) -> NodeResult<Val> {
    let d = em.dtype(idx);
    if d == DType::U8 {
        return Ok(idx);
    }
    if let Some(t) = em.value(idx) {
        if tensor_ints(t).is_some_and(|v| v.iter().all(|&i| i >= 0)) {
            return Ok(idx);
        }
    }
    let zero = em.scalar(d, 0.0);
    let neg = em.compare(CompareOp::Lt, idx, zero)?;
    let dim = em.scalar(d, dim as f64);
    let shifted = em.binary(BinaryOp::Add, idx, dim)?;
    em.select(neg, shifted, idx)
}

fn index_input(em: &Emitter, node: &Node) -> NodeResult<Val> {
    let idx = node.input(1)?;
    if !matches!(em.dtype(idx), DType::I32 | DType::I64) {
        return invalid(format!(
            "indices must be int32 or int64, got {}",
            em.dtype(idx)
        ));
    }
    Ok(idx)
}

/// `Gather(data, indices; axis)`.
pub(super) fn gather(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let axis = norm_axis(node.int("axis", 0)?, dims.len())?;
    let idx = index_input(em, node)?;
    let idx = wrap_negative(em, idx, dims[axis])?;
    Ok(vec![em.gather(x, idx, axis)?])
}

/// Row-major strides of `dims` (the products fit: the tensor exists).
fn strides(dims: &[u64]) -> Vec<u64> {
    accy_ir::row_major_strides(dims).to_vec()
}

/// `acc + v * scale` in i64 (`v` when there is no `acc`).
fn add_scaled(em: &mut Emitter, acc: Option<Val>, v: Val, scale: u64) -> NodeResult<Val> {
    let v = if scale == 1 {
        v
    } else {
        em.binary_scalar(BinaryOp::Mul, v, scale as f64)?
    };
    match acc {
        None => Ok(v),
        Some(a) => em.binary(BinaryOp::Add, a, v),
    }
}

/// `GatherElements(data, indices; axis)`: `out[i] = data[i with i_axis = indices[i]]`.
pub(super) fn gather_elements(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis"])?;
    let x = node.input(0)?;
    let axis = norm_axis(node.int("axis", 0)?, em.rank(x))?;
    let idx = index_input(em, node)?;
    Ok(vec![take_along_axis(em, x, idx, axis)?])
}

/// `out[i] = x[i with i_axis = idx[i]]` (negative indices wrapped): one `gather` from `x`
/// flattened, at the linear indices of [`linear_index`].
pub(crate) fn take_along_axis(em: &mut Emitter, x: Val, idx: Val, axis: usize) -> NodeResult<Val> {
    let dims = em.dims(x);
    let flat = linear_index(em, &dims, idx, axis)?;
    let n = accy_ir::element_count(&dims).unwrap_or(0);
    let data = em.reshape(x, &[n])?;
    em.gather(data, flat, 0)
}

/// For a tensor of `dims`, the row-major linear index of every position of `idx` with its
/// `axis` coordinate replaced by the (wrapped) value of `idx` there, as i64 of `idx`'s dims.
pub(crate) fn linear_index(
    em: &mut Emitter,
    dims: &[u64],
    idx: Val,
    axis: usize,
) -> NodeResult<Val> {
    let idims = em.dims(idx);
    if idims.len() != dims.len() {
        return invalid("data and indices must have the same rank");
    }
    if let Some(a) = (0..dims.len()).find(|&a| a != axis && idims[a] > dims[a]) {
        return invalid(format!(
            "indices dim {} exceeds data dim {} at axis {a}",
            idims[a], dims[a]
        ));
    }
    let idx = em.convert(idx, DType::I64)?;
    let idx = wrap_negative(em, idx, dims[axis])?;
    let mut flat = None;
    for (a, &stride) in strides(dims).iter().enumerate() {
        let coord = if a == axis {
            idx
        } else {
            em.iota(DType::I64, &idims, a)?
        };
        flat = Some(add_scaled(em, flat, coord, stride)?);
    }
    flat.map_or_else(|| invalid("indices must have rank ≥ 1"), Ok)
}

/// `GatherND(data, indices; batch_dims)`.
pub(super) fn gather_nd(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["batch_dims"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let idx = index_input(em, node)?;
    let idims = em.dims(idx);
    let b = usize::try_from(node.int("batch_dims", 0)?).unwrap_or(usize::MAX);
    let Some(&k) = idims.last() else {
        return invalid("indices must have rank ≥ 1");
    };
    let k = k as usize;
    let q = idims.len();
    if b >= q || b + k > dims.len() || dims[..b] != idims[..b] {
        return invalid(format!(
            "batch_dims {b} and an index depth {k} do not fit data {dims:?} and indices {idims:?}"
        ));
    }
    let outer: Dims = idims[..q - 1].iter().copied().collect();
    let batch: u64 = dims[..b].iter().product();
    let picked: u64 = dims[b..b + k].iter().product();
    let rest: Dims = dims[b + k..].iter().copied().collect();
    let mut flat_dims = Dims::from_slice(&[batch * picked]);
    flat_dims.extend_from_slice(&rest);
    let data = em.reshape(x, &flat_dims)?;
    let idx = em.convert(idx, DType::I64)?;
    let mut flat = None;
    // Batch coordinates come from the position in `indices`.
    for (a, &stride) in strides(&dims[..b]).iter().enumerate() {
        let coord = em.iota(DType::I64, &outer, a)?;
        flat = Some(add_scaled(em, flat, coord, stride * picked)?);
    }
    for (j, &stride) in strides(&dims[b..b + k]).iter().enumerate() {
        let comp = em.slice_axis(idx, q - 1, j as u64, j as u64 + 1)?;
        let comp = em.reshape(comp, &outer)?;
        let comp = wrap_negative(em, comp, dims[b + j])?;
        flat = Some(add_scaled(em, flat, comp, stride)?);
    }
    let flat = match flat {
        Some(f) => f,
        None => em.full(DType::I64, &outer, 0.0)?,
    };
    Ok(vec![em.gather(data, flat, 0)?])
}

/// `Compress(input, condition; axis)` with a known condition: the slices where it is true
/// (the input flattened when there is no axis).
pub(super) fn compress(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis"])?;
    let mut x = node.input(0)?;
    let cond = node
        .const_ints(em, 1, "condition")?
        .ok_or_else(|| NodeError::Invalid("input `condition` is missing".into()))?;
    let axis = if node.has_attr("axis") {
        norm_axis(node.int("axis", 0)?, em.rank(x))?
    } else {
        let n = accy_ir::element_count(&em.dims(x)).unwrap_or(0);
        x = em.reshape(x, &[n])?;
        0
    };
    let d = em.dims(x)[axis];
    if cond.len() as u64 > d {
        return invalid(format!(
            "condition has {} entries but the axis only {d}",
            cond.len()
        ));
    }
    let picked: Vec<i64> = (0..cond.len() as i64)
        .filter(|&i| cond[i as usize] != 0)
        .collect();
    let idx = em.constant(Tensor::i64s(&[picked.len() as u64], picked));
    Ok(vec![em.gather(x, idx, axis)?])
}

/// `CumSum(x, axis; exclusive, reverse)` as a log-depth scan: `y += y shifted by 2^k`.
/// Integer results are exact; float sums are reassociated (within the usual sum bound).
pub(super) fn cumsum(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["exclusive", "reverse"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let axis = node
        .const_scalar(em, 1, "axis")?
        .ok_or_else(|| NodeError::Invalid("input `axis` is missing".into()))?;
    let axis = norm_axis(axis as i64, dims.len())?;
    let n = dims[axis];
    let reverse = node.int("reverse", 0)? != 0;
    let a = [axis as u32];
    let mut y = if reverse { em.reverse(x, &a)? } else { x };
    let zero = em.scalar(em.dtype(x), 0.0);
    let shifted = |em: &mut Emitter, y: Val, by: u64| -> NodeResult<Val> {
        let kept = em.slice_axis(y, axis, 0, n - by)?;
        let mut low = vec![0i64; dims.len()];
        low[axis] = by as i64;
        let high = vec![0i64; dims.len()];
        em.pad(kept, zero, &low, &high)
    };
    if node.int("exclusive", 0)? != 0 && n > 0 {
        y = shifted(em, y, 1)?;
    }
    let mut by = 1;
    while by < n {
        let s = shifted(em, y, by)?;
        y = em.binary(BinaryOp::Add, y, s)?;
        by *= 2;
    }
    if reverse {
        y = em.reverse(y, &a)?;
    }
    Ok(vec![y])
}
