//! Softmax family and normalizations: `Softmax`, `LogSoftmax`, `Hardmax`,
//! `LayerNormalization`, `RMSNormalization`, `BatchNormalization` (inference),
//! `InstanceNormalization`, `GroupNormalization`, `MeanVarianceNormalization`,
//! `LpNormalization`, `LRN` — each as the composition its ONNX function body or spec formula
//! gives.

use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::node::{norm_axis, Node};
use crate::ops::reduce::arg_extreme;
use crate::tensor::dtype;

/// The mean over `axes`, keeping them as size 1.
pub(super) fn mean_keepdims(em: &mut Emitter, x: Val, axes: &[u32]) -> NodeResult<Val> {
    let dims = em.dims(x);
    let count: u64 = axes.iter().map(|&a| dims[a as usize]).product();
    let s = em.reduce_keep(ReduceOp::Sum, x, axes)?;
    em.binary_scalar(BinaryOp::Div, s, count as f64)
}

/// `softmax(x)` along `axis`: `exp(x - max) / sum(exp(x - max))`.
pub(super) fn softmax_axis(em: &mut Emitter, x: Val, axis: usize) -> NodeResult<Val> {
    let a = [axis as u32];
    let m = em.reduce_keep(ReduceOp::Max, x, &a)?;
    let s = em.binary(BinaryOp::Sub, x, m)?;
    let e = em.unary(UnaryOp::Exp, s)?;
    let sum = em.reduce_keep(ReduceOp::Sum, e, &a)?;
    em.binary(BinaryOp::Div, e, sum)
}

/// `log_softmax(x)` along `axis`: `(x - max) - log(sum(exp(x - max)))`.
pub(super) fn log_softmax_axis(em: &mut Emitter, x: Val, axis: usize) -> NodeResult<Val> {
    let a = [axis as u32];
    let m = em.reduce_keep(ReduceOp::Max, x, &a)?;
    let s = em.binary(BinaryOp::Sub, x, m)?;
    let e = em.unary(UnaryOp::Exp, s)?;
    let sum = em.reduce_keep(ReduceOp::Sum, e, &a)?;
    let l = em.unary(UnaryOp::Log, sum)?;
    em.binary(BinaryOp::Sub, s, l)
}

/// `Softmax`, `LogSoftmax`, `Hardmax` (opset 13 semantics: one axis).
pub(super) fn softmax(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis"])?;
    let x = node.input(0)?;
    let d = node.expect_float(em, x)?;
    let dims = em.dims(x);
    let axis = norm_axis(node.int("axis", -1)?, dims.len())?;
    let out = match node.op() {
        "Softmax" => softmax_axis(em, x, axis)?,
        "LogSoftmax" => log_softmax_axis(em, x, axis)?,
        _ => {
            if dims[axis] == 0 {
                return Ok(vec![x]);
            }
            let first = arg_extreme(em, x, axis, true, false)?;
            let idx = em.iota(DType::I64, &dims, axis)?;
            let hot = em.compare(CompareOp::Eq, idx, first)?;
            let one = em.scalar(d, 1.0);
            let zero = em.scalar(d, 0.0);
            em.select(hot, one, zero)?
        }
    };
    Ok(vec![out])
}

/// The computation dtype a `stash_type` attribute names.
fn stash_dtype(node: &Node) -> NodeResult<DType> {
    let code = node.int("stash_type", 1)?;
    match dtype(i32::try_from(code).unwrap_or(0)) {
        Ok(d) if d.is_float() => Ok(d),
        _ => unsupported(format!("stash_type {code}")),
    }
}

/// What `LayerNormalization` and `RMSNormalization` share: the input's dtype, the input
/// converted to the `stash_type`, the axes from `axis` to the last, and `epsilon`.
fn last_axes_norm(em: &mut Emitter, node: &Node) -> NodeResult<(DType, Val, Vec<u32>, f64)> {
    node.check_attrs(&["axis", "epsilon", "stash_type"])?;
    let x = node.input(0)?;
    let d = node.expect_float(em, x)?;
    let rank = em.rank(x);
    let axis = norm_axis(node.int("axis", -1)?, rank)?;
    let axes: Vec<u32> = (axis as u32..rank as u32).collect();
    let eps = f64::from(node.float("epsilon", 1e-5)?);
    let xs = em.convert(x, stash_dtype(node)?)?;
    Ok((d, xs, axes, eps))
}

/// `LayerNormalization(X, Scale, B?; axis, epsilon, stash_type)` with its optional `Mean`
/// and `InvStdDev` outputs.
pub(super) fn layer_norm(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let (d, xs, axes, eps) = last_axes_norm(em, node)?;
    let stash = em.dtype(xs);
    let mean = mean_keepdims(em, xs, &axes)?;
    let dev = em.binary(BinaryOp::Sub, xs, mean)?;
    let sq = em.binary(BinaryOp::Mul, dev, dev)?;
    let var = mean_keepdims(em, sq, &axes)?;
    let var = em.binary_scalar(BinaryOp::Add, var, eps)?;
    let std = em.unary(UnaryOp::Sqrt, var)?;
    let one = em.scalar(stash, 1.0);
    let inv = em.binary(BinaryOp::Div, one, std)?;
    let normed = em.binary(BinaryOp::Mul, dev, inv)?;
    let normed = em.convert(normed, d)?;
    let mut y = em.binary(BinaryOp::Mul, normed, node.input(1)?)?;
    if let Some(b) = node.opt_input(2) {
        y = em.binary(BinaryOp::Add, y, b)?;
    }
    Ok(vec![y, mean, inv])
}

/// `RMSNormalization(X, scale; axis, epsilon, stash_type)`:
/// `X / sqrt(mean(X²) + epsilon) * scale`.
pub(super) fn rms_norm(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let (d, xs, axes, eps) = last_axes_norm(em, node)?;
    let sq = em.binary(BinaryOp::Mul, xs, xs)?;
    let ms = mean_keepdims(em, sq, &axes)?;
    let ms = em.binary_scalar(BinaryOp::Add, ms, eps)?;
    let rms = em.unary(UnaryOp::Sqrt, ms)?;
    let normed = em.binary(BinaryOp::Div, xs, rms)?;
    let normed = em.convert(normed, d)?;
    Ok(vec![em.binary(BinaryOp::Mul, normed, node.input(1)?)?])
}

/// A per-channel parameter `[C]` shaped to broadcast against `[N, C, …]` of rank `rank`.
fn per_channel(em: &mut Emitter, p: Val, rank: usize) -> NodeResult<Val> {
    let c = em.dims(p);
    let mut dims = c.clone();
    dims.extend(std::iter::repeat_n(1, rank.saturating_sub(2)));
    em.reshape(p, &dims)
}

/// `(x - mean) / sqrt(var + eps)` over `axes` (biased variance).
fn standardize(em: &mut Emitter, x: Val, axes: &[u32], eps: f64) -> NodeResult<Val> {
    let mean = mean_keepdims(em, x, axes)?;
    let dev = em.binary(BinaryOp::Sub, x, mean)?;
    let sq = em.binary(BinaryOp::Mul, dev, dev)?;
    let var = mean_keepdims(em, sq, axes)?;
    let var = em.binary_scalar(BinaryOp::Add, var, eps)?;
    let std = em.unary(UnaryOp::Sqrt, var)?;
    em.binary(BinaryOp::Div, dev, std)
}

/// `BatchNormalization` in inference mode: `(X - mean) / sqrt(var + eps) * scale + B`.
pub(super) fn batch_norm(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["epsilon", "momentum", "training_mode"])?;
    if node.int("training_mode", 0)? != 0 {
        return unsupported("training_mode=1 (running statistics updates) is not supported");
    }
    let x = node.input(0)?;
    node.expect_float(em, x)?;
    let rank = em.rank(x);
    if rank < 2 {
        return invalid("the input must be at least 2-D (N, C, …)");
    }
    let eps = f64::from(node.float("epsilon", 1e-5)?);
    let [scale, b, mean, var] = [1, 2, 3, 4].map(|i| node.input(i));
    let (scale, b, mean, var) = (scale?, b?, mean?, var?);
    let mean = per_channel(em, mean, rank)?;
    let var = per_channel(em, var, rank)?;
    let scale = per_channel(em, scale, rank)?;
    let b = per_channel(em, b, rank)?;
    let dev = em.binary(BinaryOp::Sub, x, mean)?;
    let v = em.binary_scalar(BinaryOp::Add, var, eps)?;
    let std = em.unary(UnaryOp::Sqrt, v)?;
    let n = em.binary(BinaryOp::Div, dev, std)?;
    let y = em.binary(BinaryOp::Mul, n, scale)?;
    Ok(vec![em.binary(BinaryOp::Add, y, b)?])
}

/// `InstanceNormalization(input, scale, B; epsilon)`: per (N, C), over the spatial axes.
pub(super) fn instance_norm(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["epsilon"])?;
    let x = node.input(0)?;
    node.expect_float(em, x)?;
    let rank = em.rank(x);
    if rank < 3 {
        return invalid("the input must be at least 3-D (N, C, D1, …)");
    }
    let eps = f64::from(node.float("epsilon", 1e-5)?);
    let axes: Vec<u32> = (2..rank as u32).collect();
    let n = standardize(em, x, &axes, eps)?;
    let scale = per_channel(em, node.input(1)?, rank)?;
    let b = per_channel(em, node.input(2)?, rank)?;
    let y = em.binary(BinaryOp::Mul, n, scale)?;
    Ok(vec![em.binary(BinaryOp::Add, y, b)?])
}

/// `GroupNormalization(X, scale, bias; epsilon, num_groups, stash_type)`: channels split into
/// groups, each standardized over its channels and the spatial axes; `scale`/`bias` are per
/// group before opset 21 and per channel from 21.
pub(super) fn group_norm(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["epsilon", "num_groups", "stash_type"])?;
    let x = node.input(0)?;
    let d = node.expect_float(em, x)?;
    let dims = em.dims(x);
    if dims.len() < 2 {
        return invalid("the input must be at least 2-D (N, C, …)");
    }
    let g = u64::try_from(node.int("num_groups", 0)?).unwrap_or(0);
    let (n, c) = (dims[0], dims[1]);
    if g == 0 || c % g != 0 {
        return invalid(format!("{c} channels do not split into {g} groups"));
    }
    let rest: u64 = dims[2..].iter().product();
    let eps = f64::from(node.float("epsilon", 1e-5)?);
    let stash = if node.opset >= 21 {
        stash_dtype(node)?
    } else {
        d
    };
    let xs = em.convert(x, stash)?;
    let grouped = em.reshape(xs, &[n, g, (c / g) * rest])?;
    let normed = standardize(em, grouped, &[2], eps)?;
    let normed = em.convert(normed, d)?;
    let (scale, bias) = (node.input(1)?, node.input(2)?);
    let y = if node.opset >= 21 {
        let y = em.reshape(normed, &dims)?;
        let scale = per_channel(em, scale, dims.len())?;
        let bias = per_channel(em, bias, dims.len())?;
        let y = em.binary(BinaryOp::Mul, y, scale)?;
        em.binary(BinaryOp::Add, y, bias)?
    } else {
        let scale = em.reshape(scale, &[g, 1])?;
        let bias = em.reshape(bias, &[g, 1])?;
        let y = em.binary(BinaryOp::Mul, normed, scale)?;
        let y = em.binary(BinaryOp::Add, y, bias)?;
        em.reshape(y, &dims)?
    };
    Ok(vec![y])
}

/// `MeanVarianceNormalization(X; axes)`, by its function body:
/// `(X - E[X]) / (sqrt(E[X²] - E[X]²) + 1e-9)`.
pub(super) fn mvn(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axes"])?;
    let x = node.input(0)?;
    node.expect_float(em, x)?;
    let rank = em.rank(x);
    let axes = node.ints("axes")?.unwrap_or_else(|| vec![0, 2, 3]);
    let axes: Vec<u32> = crate::node::norm_axes(&axes, rank)?
        .into_iter()
        .map(|a| a as u32)
        .collect();
    let mean = mean_keepdims(em, x, &axes)?;
    let mean_sq = em.binary(BinaryOp::Mul, mean, mean)?;
    let sq = em.binary(BinaryOp::Mul, x, x)?;
    let sq_mean = mean_keepdims(em, sq, &axes)?;
    let var = em.binary(BinaryOp::Sub, sq_mean, mean_sq)?;
    let std = em.unary(UnaryOp::Sqrt, var)?;
    let std = em.binary_scalar(BinaryOp::Add, std, 1e-9)?;
    let dev = em.binary(BinaryOp::Sub, x, mean)?;
    Ok(vec![em.binary(BinaryOp::Div, dev, std)?])
}

/// `LpNormalization(input; axis, p)`: `x / ||x||_p` along `axis`, p = 1 or 2.
pub(super) fn lp_norm(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis", "p"])?;
    let x = node.input(0)?;
    node.expect_float(em, x)?;
    let axis = norm_axis(node.int("axis", -1)?, em.rank(x))?;
    let a = [axis as u32];
    let norm = match node.int("p", 2)? {
        1 => {
            let abs = em.unary(UnaryOp::Abs, x)?;
            em.reduce_keep(ReduceOp::Sum, abs, &a)?
        }
        2 => {
            let sq = em.binary(BinaryOp::Mul, x, x)?;
            let s = em.reduce_keep(ReduceOp::Sum, sq, &a)?;
            em.unary(UnaryOp::Sqrt, s)?
        }
        p => return invalid(format!("p must be 1 or 2, not {p}")),
    };
    Ok(vec![em.binary(BinaryOp::Div, x, norm)?])
}

/// `LRN(X; size, alpha, beta, bias)`: `x / (bias + alpha / size * Σ x²)^beta`, the sum over
/// a window of `size` channels around each channel.
pub(super) fn lrn(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["size", "alpha", "beta", "bias"])?;
    let x = node.input(0)?;
    let d = node.expect_float(em, x)?;
    let dims = em.dims(x);
    if dims.len() < 3 {
        return invalid("the input must be at least 3-D (N, C, D1, …)");
    }
    let size = node.int("size", 0)?;
    if !(1..=1024).contains(&size) {
        return invalid(format!("size {size} must be from 1 to 1024"));
    }
    let (alpha, beta, bias) = (
        f64::from(node.float("alpha", 1e-4)?),
        f64::from(node.float("beta", 0.75)?),
        f64::from(node.float("bias", 1.0)?),
    );
    let c = dims[1];
    let sq = em.binary(BinaryOp::Mul, x, x)?;
    let mut low = vec![0i64; dims.len()];
    let mut high = vec![0i64; dims.len()];
    low[1] = (size - 1) / 2;
    high[1] = size - 1 - low[1];
    let zero = em.scalar(d, 0.0);
    let padded = em.pad(sq, zero, &low, &high)?;
    let mut sum = None;
    for i in 0..size as u64 {
        let w = em.slice_axis(padded, 1, i, i + c)?;
        sum = Some(match sum {
            None => w,
            Some(s) => em.binary(BinaryOp::Add, s, w)?,
        });
    }
    let Some(sum) = sum else {
        return invalid("empty window");
    };
    let scaled = em.binary_scalar(BinaryOp::Mul, sum, alpha / size as f64)?;
    let base = em.binary_scalar(BinaryOp::Add, scaled, bias)?;
    let den = em.binary_scalar(BinaryOp::Pow, base, beta)?;
    Ok(vec![em.binary(BinaryOp::Div, x, den)?])
}
