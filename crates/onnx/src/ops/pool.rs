//! Pooling: `MaxPool` (with its `Indices` output), `AveragePool`, `LpPool`, and the global
//! average and max pools — over window patches (see `window.rs`), counting padding and the
//! `ceil_mode` overhang as the ONNX reference implementation does.

use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, Tensor, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::helpers::lowest;
use crate::node::Node;
use crate::ops::window::{geometry, pad_for, patches, taps, Axis, Rule};

/// The most output positions along one axis for which an import-time table is built.
const MAX_TABLE: u64 = 1 << 20;

const WINDOW_ATTRS: [&str; 6] = [
    "auto_pad",
    "ceil_mode",
    "dilations",
    "kernel_shape",
    "pads",
    "strides",
];

/// Checks the window attributes plus `extra`, and returns the input, the window geometry
/// from `kernel_shape`, and the windows of the input padded with `fill(dtype)`
/// (`[N, C, K, out…]`).
fn windows(
    em: &mut Emitter,
    node: &Node,
    extra: &str,
    fill: fn(DType) -> f64,
) -> NodeResult<(Val, Vec<Axis>, Val)> {
    let mut attrs = WINDOW_ATTRS.to_vec();
    attrs.push(extra);
    node.check_attrs(&attrs)?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let kernel: Vec<u64> = node
        .ints("kernel_shape")?
        .unwrap_or_default()
        .iter()
        .map(|&k| u64::try_from(k).unwrap_or(0))
        .collect();
    let axes = geometry(node, &dims, &kernel, Rule::Pool)?;
    let value = em.scalar(em.dtype(x), fill(em.dtype(x)));
    let padded = pad_for(em, x, value, &axes)?;
    let p = patches(em, padded, &axes)?;
    Ok((x, axes, p))
}

/// Which window taps an average divides by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    /// Taps on input elements.
    Valid,
    /// Taps on input elements or explicit padding (not the `ceil_mode` overhang).
    WithPads,
}

/// How many taps of window `o` along `a` `count` accepts: the `k < kernel` with
/// `o * stride + k * dilation` in `[from, to)`.
fn taps_in(a: &Axis, o: u64, count: Count) -> u64 {
    let (from, to) = match count {
        Count::Valid => (a.low, a.limit.min(a.low + a.input)),
        Count::WithPads => (0, a.limit),
    };
    let start = o * a.stride;
    // k >= ceil((from - start) / d) and k <= floor((to - 1 - start) / d).
    let first = from.saturating_sub(start).div_ceil(a.dilation);
    if to <= start {
        return 0;
    }
    let last = ((to - 1 - start) / a.dilation).min(a.kernel - 1);
    (last + 1).saturating_sub(first)
}

/// `[1, 1, out…]` of `d`: per output position, the number of window taps `count` accepts
/// (a product of one small per-axis table per spatial axis).
fn counts(em: &mut Emitter, axes: &[Axis], d: DType, count: Count) -> NodeResult<Val> {
    let rank = axes.len() + 2;
    let mut acc: Option<Val> = None;
    for (i, a) in axes.iter().enumerate() {
        if a.out > MAX_TABLE {
            return unsupported(format!(
                "a pooled axis of {} outputs (the limit is {MAX_TABLE})",
                a.out
            ));
        }
        let c: Vec<f64> = (0..a.out).map(|o| taps_in(a, o, count) as f64).collect();
        let mut dims = vec![1u64; rank];
        dims[i + 2] = a.out;
        let v = em.constant(Tensor::f64s(&dims, c));
        let v = em.convert(v, d)?;
        acc = Some(match acc {
            None => v,
            Some(p) => em.binary(BinaryOp::Mul, p, v)?,
        });
    }
    acc.ok_or_else(|| crate::error::NodeError::Invalid("no spatial axes".into()))
}

/// `MaxPool(X; …, storage_order)` → `(Y, Indices)`.
pub(super) fn max_pool(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let (x, axes, p) = windows(em, node, "storage_order", lowest)?;
    let y = em.reduce(ReduceOp::Max, p, &[2])?;
    let indices = max_indices(em, node, x, p, &axes)?;
    Ok(vec![y, indices])
}

/// The flat input index of each window's first maximum (row-major, or column-major over the
/// spatial axes with `storage_order=1`), as `MaxPool`'s second output.
fn max_indices(em: &mut Emitter, node: &Node, x: Val, p: Val, axes: &[Axis]) -> NodeResult<Val> {
    let dims = em.dims(x);
    let column_major = node.int("storage_order", 0)? != 0;
    let spatial: Vec<u64> = dims[2..].to_vec();
    // Strides of the spatial axes within one (n, c) plane.
    let mut strides = vec![1u64; spatial.len()];
    if column_major {
        for i in 1..spatial.len() {
            strides[i] = strides[i - 1] * spatial[i - 1];
        }
    } else {
        for i in (0..spatial.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * spatial[i + 1];
        }
    }
    let plane: u64 = spatial.iter().product();
    let out: Vec<u64> = axes.iter().map(|a| a.out).collect();
    let n = axes.len();
    // local[k…, o…] = Σ_i clamp(o_i s_i + k_i d_i - low_i, 0, in_i - 1) * stride_i: where each
    // tap reads (padding never wins the maximum, so its clamped index is never picked).
    let mut table_dims: Vec<u64> = axes.iter().map(|a| a.kernel).collect();
    table_dims.extend(&out);
    let mut local: Option<Val> = None;
    for (i, a) in axes.iter().enumerate() {
        let ko = [a.kernel, a.out];
        let k = em.iota(DType::I64, &ko, 0)?;
        let o = em.iota(DType::I64, &ko, 1)?;
        let k = em.binary_scalar(BinaryOp::Mul, k, a.dilation as f64)?;
        let o = em.binary_scalar(BinaryOp::Mul, o, a.stride as f64)?;
        let p = em.binary(BinaryOp::Add, o, k)?;
        let p = em.binary_scalar(BinaryOp::Sub, p, a.low as f64)?;
        let p = em.binary_scalar(BinaryOp::Max, p, 0.0)?;
        let p = em.binary_scalar(BinaryOp::Min, p, (a.input - 1) as f64)?;
        let p = em.binary_scalar(BinaryOp::Mul, p, strides[i] as f64)?;
        let p = em.broadcast_axes(p, &table_dims, &[i as u32, (n + i) as u32])?;
        local = Some(match local {
            None => p,
            Some(l) => em.binary(BinaryOp::Add, l, p)?,
        });
    }
    let mut shape = vec![taps(axes).len() as u64];
    shape.extend(&out);
    let local = match local {
        Some(l) => em.reshape(l, &shape)?,
        None => return invalid("no spatial axes"),
    };
    // Pick the first tap equal to the window maximum.
    let m = em.reduce_keep(ReduceOp::Max, p, &[2])?;
    let hit = em.compare(CompareOp::Eq, p, m)?;
    let pd = em.dims(p);
    let mut local_dims = vec![1u64, 1];
    local_dims.extend(&shape);
    let local = em.reshape(local, &local_dims)?;
    let local = em.broadcast_to(local, &pd)?;
    let never = em.scalar_i64(i64::MAX);
    let cand = em.select(hit, local, never)?;
    let first = em.reduce(ReduceOp::Min, cand, &[2])?;
    // Add the (n, c) plane offset.
    let mut full = vec![dims[0], dims[1]];
    full.extend(&out);
    let n = em.iota(DType::I64, &full, 0)?;
    let c = em.iota(DType::I64, &full, 1)?;
    let nc = em.binary_scalar(BinaryOp::Mul, n, dims[1] as f64)?;
    let nc = em.binary(BinaryOp::Add, nc, c)?;
    let base = em.binary_scalar(BinaryOp::Mul, nc, plane as f64)?;
    em.binary(BinaryOp::Add, first, base)
}

/// `AveragePool(X; …, count_include_pad)`.
pub(super) fn average_pool(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let (x, axes, p) = windows(em, node, "count_include_pad", |_| 0.0)?;
    let d = node.expect_float(em, x)?;
    let sum = em.reduce(ReduceOp::Sum, p, &[2])?;
    let count = if node.int("count_include_pad", 0)? != 0 {
        Count::WithPads
    } else {
        Count::Valid
    };
    let n = counts(em, &axes, d, count)?;
    Ok(vec![em.binary(BinaryOp::Div, sum, n)?])
}

/// `LpPool(X; …, p)`: `(Σ |x|^p)^(1/p)` over each window.
pub(super) fn lp_pool(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let (x, _, w) = windows(em, node, "p", |_| 0.0)?;
    node.expect_float(em, x)?;
    let p = node.int("p", 2)?;
    if p <= 0 {
        return invalid(format!("p {p} must be positive"));
    }
    let a = em.unary(UnaryOp::Abs, w)?;
    let powered = em.binary_scalar(BinaryOp::Pow, a, p as f64)?;
    let s = em.reduce(ReduceOp::Sum, powered, &[2])?;
    Ok(vec![em.binary_scalar(BinaryOp::Pow, s, 1.0 / p as f64)?])
}

/// `GlobalAveragePool` and `GlobalMaxPool`: over every spatial axis, kept as size 1.
pub(super) fn global_pool(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let x = node.input(0)?;
    let rank = em.rank(x);
    if rank < 3 {
        return invalid("the input must be at least 3-D (N, C, D1, …)");
    }
    let axes: Vec<u32> = (2..rank as u32).collect();
    let out = if node.op() == "GlobalMaxPool" {
        em.reduce_keep(ReduceOp::Max, x, &axes)?
    } else {
        node.expect_float(em, x)?;
        crate::ops::norm::mean_keepdims(em, x, &axes)?
    };
    Ok(vec![out])
}
