//! Reductions (`ReduceSum`, `Mean`, `Max`, `Min`, `Prod`, `L1`, `L2`, `LogSum`, `LogSumExp`,
//! `SumSquare`) and `ArgMax`/`ArgMin`.
//!
//! Each reduction is the composition its ONNX function body gives: an elementwise map, a
//! `reduce`, and a final map (so with `noop_with_empty_axes` the maps still apply, as the
//! bodies say). Reducing nothing gives the identity (`-inf` for max, `+inf` for min, 0 for
//! sums), and the mean of nothing is NaN, as NumPy's.

use accy_ir::{BinaryOp, CompareOp, DType, Dims, ReduceOp, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::node::{norm_axes, norm_axis, Node};
use crate::ops::shape::axes_operand;

/// The axes a reduction reduces (sorted), or `None` for "no reduction" (`noop_with_empty_axes`
/// with no axes).
fn reduce_axes(em: &Emitter, node: &Node, x: Val) -> NodeResult<Option<Vec<u32>>> {
    let since = if node.op() == "ReduceSum" { 13 } else { 18 };
    if node.opset >= since && node.has_attr("axes") {
        return invalid(format!(
            "from opset {since}, axes are an input, not an attribute"
        ));
    }
    let rank = em.rank(x);
    let axes = axes_operand(em, node, since)?.unwrap_or_default();
    if axes.is_empty() {
        if node.int("noop_with_empty_axes", 0)? != 0 {
            return Ok(None);
        }
        return Ok(Some((0..rank as u32).collect()));
    }
    let mut a: Vec<u32> = norm_axes(&axes, rank)?
        .into_iter()
        .map(|a| a as u32)
        .collect();
    a.sort_unstable();
    Ok(Some(a))
}

/// `reduce` over `axes`, the axes kept as size 1 when `keepdims`.
fn reduce_keep(
    em: &mut Emitter,
    op: ReduceOp,
    x: Val,
    axes: &[u32],
    keepdims: bool,
) -> NodeResult<Val> {
    if keepdims {
        em.reduce_keep(op, x, axes)
    } else {
        em.reduce(op, x, axes)
    }
}

/// The `Reduce*` family.
pub(super) fn reduce(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axes", "keepdims", "noop_with_empty_axes"])?;
    let x = node.input(0)?;
    let keep = node.int("keepdims", 1)? != 0;
    let axes = reduce_axes(em, node, x)?;
    let d = em.dtype(x);
    // Functions without an integer meaning are computed in f64 for integers and converted
    // back, as NumPy's `astype` does.
    let work = |em: &mut Emitter, v: Val| -> NodeResult<Val> {
        if d.is_float() {
            Ok(v)
        } else {
            em.convert(v, DType::F64)
        }
    };
    let sum = |em: &mut Emitter, v: Val| -> NodeResult<Val> {
        match &axes {
            None => Ok(v),
            Some(a) => reduce_keep(em, ReduceOp::Sum, v, a, keep),
        }
    };
    let plain = |em: &mut Emitter, op: ReduceOp| -> NodeResult<Val> {
        match &axes {
            None => Ok(x),
            Some(a) => reduce_keep(em, op, x, a, keep),
        }
    };
    let out = match node.op() {
        "ReduceSum" => plain(em, ReduceOp::Sum)?,
        "ReduceMax" => plain(em, ReduceOp::Max)?,
        "ReduceMin" => plain(em, ReduceOp::Min)?,
        "ReduceProd" => plain(em, ReduceOp::Prod)?,
        "ReduceMean" => {
            let s = plain(em, ReduceOp::Sum)?;
            let dims = em.dims(x);
            let count: u64 = match &axes {
                None => 1,
                Some(a) => a.iter().map(|&i| dims[i as usize]).product(),
            };
            em.binary_scalar(BinaryOp::Div, s, count as f64)?
        }
        "ReduceL1" => {
            let a = em.unary(UnaryOp::Abs, x)?;
            sum(em, a)?
        }
        "ReduceSumSquare" => {
            let sq = em.binary(BinaryOp::Mul, x, x)?;
            sum(em, sq)?
        }
        "ReduceL2" => {
            let sq = em.binary(BinaryOp::Mul, x, x)?;
            let s = sum(em, sq)?;
            let s = work(em, s)?;
            let r = em.unary(UnaryOp::Sqrt, s)?;
            em.convert(r, d)?
        }
        "ReduceLogSum" => {
            let s = sum(em, x)?;
            let s = work(em, s)?;
            let r = em.unary(UnaryOp::Log, s)?;
            em.convert(r, d)?
        }
        "ReduceLogSumExp" => {
            let xf = work(em, x)?;
            let r = log_sum_exp(em, xf, axes.as_deref(), keep)?;
            em.convert(r, d)?
        }
        other => return unsupported(format!("`{other}` has no importer")),
    };
    Ok(vec![out])
}

/// `log(sum(exp(x - m))) + m` with `m` the maximum of the finite… elements as the ONNX
/// reference computes it (infinities count as `-inf` for `m`).
fn log_sum_exp(em: &mut Emitter, x: Val, axes: Option<&[u32]>, keep: bool) -> NodeResult<Val> {
    let Some(axes) = axes else {
        return Ok(x);
    };
    let d = em.dtype(x);
    let inf = em.scalar(d, f64::INFINITY);
    let minus_inf = em.scalar(d, f64::NEG_INFINITY);
    let abs = em.unary(UnaryOp::Abs, x)?;
    let is_inf = em.compare(CompareOp::Eq, abs, inf)?;
    let finite = em.select(is_inf, minus_inf, x)?;
    let m = reduce_keep(em, ReduceOp::Max, finite, axes, true)?;
    let shifted = em.binary(BinaryOp::Sub, x, m)?;
    let e = em.unary(UnaryOp::Exp, shifted)?;
    let s = reduce_keep(em, ReduceOp::Sum, e, axes, true)?;
    let l = em.unary(UnaryOp::Log, s)?;
    let r = em.binary(BinaryOp::Add, l, m)?;
    if keep {
        return Ok(r);
    }
    let dims: Dims = em
        .dims(x)
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(&(*i as u32)))
        .map(|(_, &d)| d)
        .collect();
    em.reshape(r, &dims)
}

/// The index of the first (or last) maximum or minimum of `x` along `axis` as i64, with the
/// axis kept as size 1. A NaN counts as the extreme, as NumPy's `argmax` says.
pub(super) fn arg_extreme(
    em: &mut Emitter,
    x: Val,
    axis: usize,
    max: bool,
    last: bool,
) -> NodeResult<Val> {
    let dims = em.dims(x);
    let n = dims[axis];
    let op = if max { ReduceOp::Max } else { ReduceOp::Min };
    let m = reduce_keep(em, op, x, &[axis as u32], true)?;
    let mut hit = em.compare(CompareOp::Eq, x, m)?;
    if em.dtype(x).is_float() {
        let nan = em.compare(CompareOp::Ne, x, x)?;
        hit = em.binary(BinaryOp::Or, hit, nan)?;
    }
    let idx = em.iota(DType::I64, &dims, axis)?;
    let (miss, pick) = if last {
        (-1.0, ReduceOp::Max)
    } else {
        (n as f64, ReduceOp::Min)
    };
    let miss = em.scalar(DType::I64, miss);
    let cand = em.select(hit, idx, miss)?;
    reduce_keep(em, pick, cand, &[axis as u32], true)
}

/// `ArgMax` / `ArgMin(data; axis, keepdims, select_last_index)`.
pub(super) fn arg(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis", "keepdims", "select_last_index"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let axis = norm_axis(node.int("axis", 0)?, dims.len())?;
    if dims[axis] == 0 {
        return invalid("cannot take the arg-extreme of an empty axis");
    }
    let last = node.int("select_last_index", 0)? != 0;
    let r = arg_extreme(em, x, axis, node.op() == "ArgMax", last)?;
    if node.int("keepdims", 1)? != 0 {
        return Ok(vec![r]);
    }
    let mut out = dims.clone();
    out.remove(axis);
    Ok(vec![em.reshape(r, &out)?])
}
