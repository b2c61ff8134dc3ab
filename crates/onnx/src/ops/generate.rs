//! Ops that make tensors from attributes and shapes: `Constant`, `ConstantOfShape`, `Range`,
//! `EyeLike`, `Trilu`, `OneHot`. Large results are built from `iota`/`broadcast` in the
//! program rather than materialized at import time.

use accy_ir::{BinaryOp, CompareOp, DType, Tensor, TensorData};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeError, NodeResult};
use crate::node::{norm_axis, tensor_f64s, Node};
use crate::tensor::dtype;

/// `Constant` from any of its value attributes.
pub(super) fn constant(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[
        "value",
        "value_float",
        "value_floats",
        "value_int",
        "value_ints",
    ])?;
    let t = if let Some(t) = node.tensor("value")? {
        t
    } else if node.has_attr("value_float") {
        Tensor::f32s(&[], vec![node.float("value_float", 0.0)?])
    } else if let Some(v) = node.floats("value_floats")? {
        Tensor::f32s(&[v.len() as u64], v)
    } else if node.has_attr("value_int") {
        Tensor::i64s(&[], vec![node.int("value_int", 0)?])
    } else if let Some(v) = node.ints("value_ints")? {
        Tensor::i64s(&[v.len() as u64], v)
    } else {
        return invalid("no value attribute is set");
    };
    Ok(vec![em.constant(t)])
}

/// A known shape input as dims.
fn shape_dims(em: &Emitter, node: &Node, i: usize) -> NodeResult<Vec<u64>> {
    let shape = node.const_ints(em, i, "shape")?.unwrap_or_default();
    shape
        .iter()
        .map(|&d| {
            u64::try_from(d).map_err(|_| NodeError::Invalid(format!("shape has negative dim {d}")))
        })
        .collect()
}

/// `ConstantOfShape(shape; value)`.
pub(super) fn constant_of_shape(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["value"])?;
    let dims = shape_dims(em, node, 0)?;
    let value = match node.tensor("value")? {
        Some(t) if t.data().len() == 1 => t,
        Some(_) => return invalid("`value` must hold one element"),
        None => Tensor::f32s(&[], vec![0.0]),
    };
    let scalar =
        Tensor::new(&[], value.into_data()).map_err(|e| NodeError::Invalid(e.to_string()))?;
    let s = em.constant(scalar);
    Ok(vec![em.broadcast_to(s, &dims)?])
}

/// `Range(start, limit, delta)` with known operands: `start + i * delta` for
/// `i < max(ceil((limit - start) / delta), 0)`.
pub(super) fn range(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let d = em.dtype(node.input(0)?);
    let get = |i, what| -> NodeResult<Tensor> {
        match node.const_input(em, i, what)? {
            Some(t) if t.data().len() == 1 => Ok(t.clone()),
            _ => invalid(format!("`{what}` must be a scalar")),
        }
    };
    let (start, limit, delta) = (get(0, "start")?, get(1, "limit")?, get(2, "delta")?);
    let count = match (start.data(), limit.data(), delta.data()) {
        (TensorData::I64(s), TensorData::I64(l), TensorData::I64(k)) => {
            int_count(i128::from(s[0]), i128::from(l[0]), i128::from(k[0]))?
        }
        (TensorData::I32(s), TensorData::I32(l), TensorData::I32(k)) => {
            int_count(i128::from(s[0]), i128::from(l[0]), i128::from(k[0]))?
        }
        _ if d.is_float() => {
            let f = |t: &Tensor| tensor_f64s(t).first().copied().unwrap_or(0.0);
            let (s, l, k) = (f(&start), f(&limit), f(&delta));
            if k == 0.0 || !(s.is_finite() && l.is_finite() && k.is_finite()) {
                return invalid(format!("cannot count Range({s}, {l}, {k})"));
            }
            let n = ((l - s) / k).ceil().max(0.0);
            if n > u64::MAX as f64 {
                return invalid(format!("Range({s}, {l}, {k}) is too long"));
            }
            n as u64
        }
        _ => return unsupported(format!("Range on {d}")),
    };
    let i = em.iota(d, &[count], 0)?;
    let delta = em.constant(
        Tensor::new(&[], delta.into_data()).map_err(|e| NodeError::Invalid(e.to_string()))?,
    );
    let start = em.constant(
        Tensor::new(&[], start.into_data()).map_err(|e| NodeError::Invalid(e.to_string()))?,
    );
    let scaled = em.binary(BinaryOp::Mul, i, delta)?;
    Ok(vec![em.binary(BinaryOp::Add, scaled, start)?])
}

fn int_count(s: i128, l: i128, k: i128) -> NodeResult<u64> {
    if k == 0 {
        return invalid("Range delta is 0");
    }
    let span = l - s;
    // ceil(span / k) for either sign of k.
    let n = if (span > 0) == (k > 0) && span != 0 {
        (span.abs() + k.abs() - 1) / k.abs()
    } else {
        0
    };
    u64::try_from(n).map_err(|_| NodeError::Invalid("Range is too long".into()))
}

/// `EyeLike(input; dtype, k)`: ones on the `k`-th diagonal of a 2-D tensor.
pub(super) fn eye_like(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["dtype", "k"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    if dims.len() != 2 {
        return invalid("the input must be 2-D");
    }
    let out = if node.has_attr("dtype") {
        dtype(i32::try_from(node.int("dtype", 1)?).unwrap_or(0))
            .or_else(|m| unsupported(format!("`dtype`: {m}")))?
    } else {
        em.dtype(x)
    };
    let diag = diagonal_mask(em, &dims, node.int("k", 0)?, CompareOp::Eq)?;
    let one = em.scalar(out, 1.0);
    let zero = em.scalar(out, 0.0);
    Ok(vec![em.select(diag, one, zero)?])
}

/// Bool mask over the last two axes of `dims`: `(col - row) op k`.
fn diagonal_mask(em: &mut Emitter, dims: &[u64], k: i64, op: CompareOp) -> NodeResult<Val> {
    let r = dims.len();
    let rows = em.iota(DType::I64, dims, r - 2)?;
    let cols = em.iota(DType::I64, dims, r - 1)?;
    let diff = em.binary(BinaryOp::Sub, cols, rows)?;
    let k = em.scalar_i64(k);
    em.compare(op, diff, k)
}

/// `Trilu(input, k?; upper)`: keeps the upper (`col - row >= k`) or lower (`col - row <= k`)
/// triangle of the last two axes, zeroing the rest.
pub(super) fn trilu(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["upper"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    if dims.len() < 2 {
        return invalid("the input must have at least 2 dims");
    }
    let k = node.const_scalar(em, 1, "k")?.unwrap_or(0.0) as i64;
    let op = if node.int("upper", 1)? != 0 {
        CompareOp::Ge
    } else {
        CompareOp::Le
    };
    let keep = diagonal_mask(em, &dims, k, op)?;
    let zero = em.scalar(em.dtype(x), 0.0);
    Ok(vec![em.select(keep, x, zero)?])
}

/// `OneHot(indices, depth, values; axis)`: `values[1]` where the index along the new axis
/// equals the (wrapped) index, `values[0]` elsewhere.
pub(super) fn one_hot(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis"])?;
    let indices = node.input(0)?;
    let depth = node
        .const_scalar(em, 1, "depth")?
        .ok_or_else(|| NodeError::Invalid("input `depth` is missing".into()))?;
    if !(1.0..1e15).contains(&depth) {
        return invalid(format!("depth {depth} must be at least 1"));
    }
    let depth = depth as u64;
    let values = node.input(2)?;
    if em.dims(values).as_slice() != [2] {
        return invalid("`values` must hold two elements [off, on]");
    }
    let idims = em.dims(indices);
    let axis = norm_axis(node.int("axis", -1)?, idims.len() + 1)?;
    let mut dims = idims.clone();
    dims.insert(axis, depth);
    // Indices may be floats (truncated) and negative (counted from the end).
    let idx = em.convert(indices, DType::I64)?;
    let zero = em.scalar_i64(0);
    let neg = em.compare(CompareOp::Lt, idx, zero)?;
    let depth_v = em.scalar_i64(depth as i64);
    let wrapped = em.binary(BinaryOp::Add, idx, depth_v)?;
    let idx = em.select(neg, wrapped, idx)?;
    let axes: Vec<u32> = (0..dims.len() as u32)
        .filter(|&a| a as usize != axis)
        .collect();
    let idx = em.broadcast_axes(idx, &dims, &axes)?;
    let pos = em.iota(DType::I64, &dims, axis)?;
    let hot = em.compare(CompareOp::Eq, pos, idx)?;
    let off = em.slice_axis(values, 0, 0, 1)?;
    let on = em.slice_axis(values, 0, 1, 2)?;
    let off = em.reshape(off, &[])?;
    let on = em.reshape(on, &[])?;
    Ok(vec![em.select(hot, on, off)?])
}

/// `HannWindow`, `HammingWindow`, `BlackmanWindow(size; output_datatype, periodic)`:
/// `Σ_j a_j cos(2πjn / N')` for `n < size`, with `N' = size` (periodic) or `size - 1`.
pub(super) fn window(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["output_datatype", "periodic"])?;
    let size = node
        .const_scalar(em, 0, "size")?
        .ok_or_else(|| NodeError::Invalid("input `size` is missing".into()))?;
    if !(0.0..=(1u64 << 40) as f64).contains(&size) {
        return invalid(format!("size {size} is out of range"));
    }
    let size = size as u64;
    let out = dtype(i32::try_from(node.int("output_datatype", 1)?).unwrap_or(0))
        .or_else(|m| unsupported(format!("`output_datatype`: {m}")))?;
    let denom = if node.int("periodic", 1)? != 0 {
        size as f64
    } else {
        size as f64 - 1.0
    };
    let two_pi = 2.0 * std::f64::consts::PI;
    let coeffs: &[f64] = match node.op() {
        "HannWindow" => &[0.5, -0.5],
        "HammingWindow" => &[25.0 / 46.0, -(21.0 / 46.0)],
        _ => &[0.42, -0.5, 0.08],
    };
    let n = em.iota(DType::F64, &[size], 0)?;
    let mut acc = em.full(DType::F64, &[size], coeffs[0])?;
    for (j, &c) in coeffs.iter().enumerate().skip(1) {
        let arg = em.binary_scalar(BinaryOp::Mul, n, two_pi * j as f64 / denom)?;
        let cos = em.unary(accy_ir::UnaryOp::Cos, arg)?;
        let term = em.binary_scalar(BinaryOp::Mul, cos, c)?;
        acc = em.binary(BinaryOp::Add, acc, term)?;
    }
    Ok(vec![em.convert(acc, out)?])
}
