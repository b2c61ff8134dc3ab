//! `Slice` (negative steps through `reverse`), `Pad` in every mode, and `CenterCropPad`.

use accy_ir::Dims;

use crate::emit::{Emitter, Val};
use crate::error::{invalid, NodeError, NodeResult};
use crate::helpers::scalar_tensor;
use crate::node::{norm_axes, Node};

/// The IR slice of one axis of size `d` for ONNX `start`, `end`, `step`: whether the axis is
/// reversed first, then start, limit and stride on the (possibly reversed) axis.
fn axis_slice(d: u64, start: i64, end: i64, step: i64) -> NodeResult<(bool, u64, u64, u64)> {
    if step == 0 {
        return invalid("a slice step is 0");
    }
    let (d, start, end, step) = (
        i128::from(d),
        i128::from(start),
        i128::from(end),
        i128::from(step),
    );
    let wrap = |v: i128| if v < 0 { v + d } else { v };
    let (s, e) = (wrap(start), wrap(end));
    Ok(if step > 0 {
        let s = s.clamp(0, d);
        let e = e.clamp(s, d);
        (false, s as u64, e as u64, step as u64)
    } else {
        let s = s.clamp(0, (d - 1).max(0));
        let e = e.clamp(-1, d - 1);
        if s <= e || d == 0 {
            return Ok((false, 0, 0, 1));
        }
        // Index i of the reversed axis is d - 1 - i of the original.
        (true, (d - 1 - s) as u64, (d - 1 - e) as u64, (-step) as u64)
    })
}

/// `Slice(data, starts, ends, axes?, steps?)`.
pub(super) fn slice(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let rank = dims.len();
    let starts = node.const_ints(em, 1, "starts")?.unwrap_or_default();
    let ends = node.const_ints(em, 2, "ends")?.unwrap_or_default();
    let axes = match node.const_ints(em, 3, "axes")? {
        Some(a) => norm_axes(&a, rank)?,
        // Without axes, starts[i] is for axis i: there must be no more than the input has.
        None if starts.len() <= rank => (0..starts.len()).collect(),
        None => {
            return invalid(format!(
                "{} starts without axes for an input of rank {rank}",
                starts.len()
            ))
        }
    };
    let steps = node
        .const_ints(em, 4, "steps")?
        .unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return invalid("starts, ends, axes and steps differ in length");
    }
    let mut start = Dims::from_elem(0, rank);
    let mut limit = dims.clone();
    let mut stride = Dims::from_elem(1, rank);
    let mut reversed = Vec::new();
    for (i, &a) in axes.iter().enumerate() {
        let (rev, s, l, k) = axis_slice(dims[a], starts[i], ends[i], steps[i])?;
        if rev {
            reversed.push(a as u32);
        }
        (start[a], limit[a], stride[a]) = (s, l, k);
    }
    let r = em.reverse(x, &reversed)?;
    Ok(vec![em.slice(r, &start, &limit, &stride)?])
}

/// `Pad(data, pads, constant_value?, axes?; mode)`.
pub(super) fn pad(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["mode"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let rank = dims.len();
    let pads = node.const_ints(em, 1, "pads")?.unwrap_or_default();
    let axes = match node.const_ints(em, 3, "axes")? {
        Some(a) => norm_axes(&a, rank)?,
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return invalid(format!("{} pads for {} axes", pads.len(), axes.len()));
    }
    let mut low = vec![0i64; rank];
    let mut high = vec![0i64; rank];
    for (i, &a) in axes.iter().enumerate() {
        low[a] = pads[i];
        high[a] = pads[i + axes.len()];
    }
    let mode = node.string("mode", "constant")?;
    let out = if mode == "constant" {
        let value = match node.opt_input(2) {
            Some(v) => {
                if em.value(v).is_some_and(|t| t.data().is_empty()) {
                    em.scalar(em.dtype(x), 0.0)
                } else {
                    em.reshape(v, &[])?
                }
            }
            None => em.scalar(em.dtype(x), 0.0),
        };
        em.pad(x, value, &low, &high)?
    } else {
        let mut y = x;
        for a in 0..rank {
            y = pad_axis(em, y, a, low[a], high[a], &mode)?;
        }
        y
    };
    Ok(vec![out])
}

/// Pads (or crops, for negative amounts) one axis in `edge`, `reflect` or `wrap` mode.
fn pad_axis(
    em: &mut Emitter,
    x: Val,
    axis: usize,
    lo: i64,
    hi: i64,
    mode: &str,
) -> NodeResult<Val> {
    let d = em.dims(x)[axis];
    // Crop first: negative pads remove elements in every mode.
    let from = if lo < 0 { lo.unsigned_abs() } else { 0 };
    let to = if hi < 0 {
        d.saturating_sub(hi.unsigned_abs())
    } else {
        d
    };
    if from > to {
        return invalid(format!(
            "pads {lo}, {hi} remove more than the {d} elements of axis {axis}"
        ));
    }
    let mut x = em.slice_axis(x, axis, from, to)?;
    let d = to - from;
    let (lo, hi) = (lo.max(0) as u64, hi.max(0) as u64);
    if lo == 0 && hi == 0 {
        return Ok(x);
    }
    if d == 0 {
        return invalid(format!("cannot pad an empty axis {axis} in {mode} mode"));
    }
    let mut dims = em.dims(x);
    let part = |em: &mut Emitter, x: Val, a: u64, b: u64, reverse: bool| -> NodeResult<Val> {
        let s = em.slice_axis(x, axis, a, b)?;
        if reverse {
            em.reverse(s, &[axis as u32])
        } else {
            Ok(s)
        }
    };
    let (before, after) = match mode {
        "edge" => {
            let first = em.slice_axis(x, axis, 0, 1)?;
            let last = em.slice_axis(x, axis, d - 1, d)?;
            dims[axis] = lo;
            let b = em.broadcast_to(first, &dims)?;
            dims[axis] = hi;
            let a = em.broadcast_to(last, &dims)?;
            (b, a)
        }
        "reflect" => {
            if lo >= d || hi >= d {
                return invalid(format!(
                    "reflect pads {lo}, {hi} must be smaller than the axis size {d}"
                ));
            }
            (
                part(em, x, 1, lo + 1, true)?,
                part(em, x, d - 1 - hi, d - 1, true)?,
            )
        }
        "wrap" => {
            if lo > d || hi > d {
                return invalid(format!("wrap pads {lo}, {hi} exceed the axis size {d}"));
            }
            (part(em, x, d - lo, d, false)?, part(em, x, 0, hi, false)?)
        }
        m => {
            return invalid(format!(
                "mode `{m}` must be constant, reflect, edge or wrap"
            ))
        }
    };
    let pieces: Vec<Val> = [(lo, before), (d, x), (hi, after)]
        .into_iter()
        .filter(|&(n, _)| n > 0)
        .map(|(_, v)| v)
        .collect();
    x = em.concat(&pieces, axis)?;
    Ok(x)
}

/// `CenterCropPad(input, shape; axes)`: crops or zero-pads each axis around its centre.
pub(super) fn center_crop_pad(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axes"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let shape = node.const_ints(em, 1, "shape")?.unwrap_or_default();
    let axes = match node.ints("axes")? {
        Some(a) => norm_axes(&a, dims.len())?,
        None => (0..dims.len()).collect(),
    };
    if shape.len() != axes.len() || shape.iter().any(|&s| s < 0) {
        return invalid(format!("shape {shape:?} does not fit axes {axes:?}"));
    }
    let mut low = vec![0i64; dims.len()];
    let mut high = vec![0i64; dims.len()];
    for (&a, &s) in axes.iter().zip(&shape) {
        let d = i64::try_from(dims[a])
            .map_err(|_| NodeError::Invalid(format!("dim {} is too large", dims[a])))?;
        let diff = s - d;
        // Cropping removes floor(diff/2) in front; padding adds floor(diff/2) in front.
        let front = if diff < 0 { -((-diff) / 2) } else { diff / 2 };
        low[a] = front;
        high[a] = diff - front;
    }
    let zero = em.constant(scalar_tensor(em.dtype(x), 0.0));
    Ok(vec![em.pad(x, zero, &low, &high)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_follow_onnx_clamping() {
        assert_eq!(axis_slice(10, 0, 3, 1).unwrap(), (false, 0, 3, 1));
        assert_eq!(axis_slice(10, -3, i64::MAX, 1).unwrap(), (false, 7, 10, 1));
        assert_eq!(axis_slice(10, 5, 2, 1).unwrap(), (false, 5, 5, 1));
        // 9, 7, 5, 3 (end 1 exclusive): reversed axis indices 0, 2, 4, 6.
        assert_eq!(axis_slice(10, -1, 1, -2).unwrap(), (true, 0, 8, 2));
        // The whole axis backwards.
        assert_eq!(axis_slice(4, -1, i64::MIN, -1).unwrap(), (true, 0, 4, 1));
        assert_eq!(axis_slice(4, 0, 3, -1).unwrap(), (false, 0, 0, 1));
        assert!(axis_slice(4, 0, 3, 0).is_err());
    }
}
