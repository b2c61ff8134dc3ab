//! Linear quantization with uint8 (accy's only 8-bit type): `QuantizeLinear`,
//! `DequantizeLinear` (scalar, per-axis and blocked scales) and `QLinearMatMul` (scalar
//! scales), computed in the order and precision of the ONNX reference.

use accy_ir::{BinaryOp, DType, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::node::{norm_axis, Node};
use crate::ops::matmul::matmul;
use crate::tensor::dtype;

/// A scale or zero point shaped to broadcast against `x`: a scalar stays one; a 1-D value
/// lies along `axis`; with `block_size` each entry covers `block_size` consecutive elements
/// along `axis` (the last block may be short).
fn spread(em: &mut Emitter, v: Val, x_dims: &[u64], axis: i64, block: u64) -> NodeResult<Val> {
    let vd = em.dims(v);
    let count: u64 = vd.iter().product();
    if vd.is_empty() || count == 1 {
        return em.reshape(v, &[]);
    }
    let axis = norm_axis(axis, x_dims.len())?;
    if block == 0 {
        if vd.len() != 1 || vd[0] != x_dims[axis] {
            return invalid(format!(
                "a per-axis scale {vd:?} must have {} entries",
                x_dims[axis]
            ));
        }
        let mut dims = vec![1u64; x_dims.len()];
        dims[axis] = vd[0];
        return em.reshape(v, &dims);
    }
    let blocks = x_dims[axis].div_ceil(block);
    let mut want = x_dims.to_vec();
    want[axis] = blocks;
    if vd.as_slice() != want.as_slice() {
        return invalid(format!("a blocked scale {vd:?} must be {want:?}"));
    }
    // [.., blocks, ..] -> [.., blocks, block, ..] -> [.., blocks * block, ..] -> first dim.
    let mut wide = want.clone();
    wide.insert(axis + 1, block);
    let axes: Vec<u32> = (0..wide.len() as u32)
        .filter(|&a| a as usize != axis + 1)
        .collect();
    let b = em.broadcast_axes(v, &wide, &axes)?;
    let mut flat = want;
    flat[axis] = blocks * block;
    let r = em.reshape(b, &flat)?;
    em.slice_axis(r, axis, 0, x_dims[axis])
}

/// The `axis` (normalized where a scale needs it) and `block_size` attributes.
fn quant_axis(node: &Node) -> NodeResult<(i64, u64)> {
    let axis = node.int("axis", 1)?;
    let block = u64::try_from(node.int("block_size", 0)?).unwrap_or(u64::MAX);
    if block > 1 << 31 {
        return invalid(format!("block_size {block} is out of range"));
    }
    Ok((axis, block))
}

/// `DequantizeLinear(x, x_scale, x_zero_point?; axis, block_size, output_dtype)`:
/// `(f32(x) - zero_point) * scale`.
pub(super) fn dequantize(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis", "block_size", "output_dtype"])?;
    let x = node.input(0)?;
    let scale = node.input(1)?;
    if !matches!(em.dtype(x), DType::U8 | DType::I32) {
        return unsupported(format!("DequantizeLinear of {}", em.dtype(x)));
    }
    let (axis, block) = quant_axis(node)?;
    let dims = em.dims(x);
    let mut dx = em.convert(x, DType::F32)?;
    if let Some(zp) = node.opt_input(2) {
        let zp = spread(em, zp, &dims, axis, block)?;
        let zp = em.convert(zp, DType::F32)?;
        dx = em.binary(BinaryOp::Sub, dx, zp)?;
    }
    let scale = spread(em, scale, &dims, axis, block)?;
    let out = match node.int("output_dtype", 0)? {
        0 => em.dtype(scale),
        code => dtype(i32::try_from(code).unwrap_or(0))
            .or_else(|m| unsupported(format!("output_dtype: {m}")))?,
    };
    let s = em.convert(scale, DType::F32)?;
    let y = em.binary(BinaryOp::Mul, dx, s)?;
    Ok(vec![em.convert(y, out)?])
}

/// `QuantizeLinear(x, y_scale, y_zero_point?; axis, block_size, output_dtype, saturate,
/// precision)` to uint8: `clamp(round_half_even(x / scale) + zero_point, 0, 255)`.
pub(super) fn quantize(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[
        "axis",
        "block_size",
        "output_dtype",
        "saturate",
        "precision",
    ])?;
    let x = node.input(0)?;
    let d = node.expect_float(em, x)?;
    let (axis, block) = quant_axis(node)?;
    let zp = node.opt_input(2);
    let target = match (zp, node.int("output_dtype", 0)?) {
        (Some(z), _) => em.dtype(z),
        (None, 0) => DType::U8,
        (None, code) => dtype(i32::try_from(code).unwrap_or(0))
            .or_else(|m| unsupported(format!("output_dtype: {m}")))?,
    };
    if target != DType::U8 {
        return unsupported(format!("quantizing to {target} (accy quantizes to uint8)"));
    }
    let dims = em.dims(x);
    let work = match node.int("precision", 0)? {
        0 => d,
        code => dtype(i32::try_from(code).unwrap_or(0))
            .ok()
            .filter(|p| p.is_float())
            .map_or_else(|| unsupported(format!("precision {code}")), Ok)?,
    };
    let scale = spread(em, node.input(1)?, &dims, axis, block)?;
    let scale = em.convert(scale, work)?;
    let xw = em.convert(x, work)?;
    let q = em.binary(BinaryOp::Div, xw, scale)?;
    let q = em.unary(UnaryOp::Round, q)?;
    let mut q = em.convert(q, DType::I32)?;
    if let Some(z) = zp {
        let z = spread(em, z, &dims, axis, block)?;
        let z = em.convert(z, DType::I32)?;
        q = em.binary(BinaryOp::Add, q, z)?;
    }
    let q = em.binary_scalar(BinaryOp::Max, q, 0.0)?;
    let q = em.binary_scalar(BinaryOp::Min, q, 255.0)?;
    Ok(vec![em.convert(q, DType::U8)?])
}

/// `QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
/// y_zero_point)` with scalar scales and zero points:
/// `rint((a - a_zp) @ (b - b_zp) * (a_scale * b_scale / y_scale) + y_zp)`, saturated.
pub(super) fn qlinear_matmul(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let int = |em: &mut Emitter, v: Val, zp: Option<Val>| -> NodeResult<Val> {
        let v = em.convert(v, DType::I32)?;
        match zp {
            Some(z) => {
                let z = em.convert(z, DType::I32)?;
                em.binary(BinaryOp::Sub, v, z)
            }
            None => Ok(v),
        }
    };
    for i in [1, 2, 4, 5, 6, 7] {
        if let Some(v) = node.opt_input(i) {
            if em.dims(v).iter().product::<u64>() != 1 {
                return unsupported("QLinearMatMul with per-row or per-column scales");
            }
        }
    }
    let scalar = |em: &mut Emitter, i: usize| -> NodeResult<Option<Val>> {
        node.opt_input(i).map(|v| em.reshape(v, &[])).transpose()
    };
    let (a, b) = (node.input(0)?, node.input(3)?);
    let out = em.dtype(a);
    if out != DType::U8 || em.dtype(b) != DType::U8 {
        return unsupported("QLinearMatMul on types other than uint8");
    }
    let (azp, bzp, yzp) = (scalar(em, 2)?, scalar(em, 5)?, scalar(em, 7)?);
    let ai = int(em, a, azp)?;
    let bi = int(em, b, bzp)?;
    let c = matmul(em, ai, bi)?;
    let (sa, sb, sy) = (node.input(1)?, node.input(4)?, node.input(6)?);
    let (sa, sb, sy) = (
        em.reshape(sa, &[])?,
        em.reshape(sb, &[])?,
        em.reshape(sy, &[])?,
    );
    let s = em.binary(BinaryOp::Mul, sa, sb)?;
    let s = em.binary(BinaryOp::Div, s, sy)?;
    let s = em.convert(s, DType::F64)?;
    let c = em.convert(c, DType::F64)?;
    let mut dq = em.binary(BinaryOp::Mul, c, s)?;
    if let Some(z) = yzp {
        let z = em.convert(z, DType::F64)?;
        dq = em.binary(BinaryOp::Add, dq, z)?;
    }
    let r = em.unary(UnaryOp::Round, dq)?;
    let r = em.binary_scalar(BinaryOp::Max, r, 0.0)?;
    let r = em.binary_scalar(BinaryOp::Min, r, 255.0)?;
    Ok(vec![em.convert(r, out)?])
}
