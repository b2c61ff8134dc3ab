//! Shape and layout ops: `Reshape`, `Flatten`, `Squeeze`, `Unsqueeze`, `Expand`,
//! `Transpose`, `Identity`, `Dropout` (inference), `Concat`, `Split`, `Tile`, `Shape`,
//! `Size`, `DepthToSpace`, `SpaceToDepth`.

use accy_ir::{element_count, Dims};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::helpers::broadcast_shape;
use crate::node::{norm_axes, norm_axis, Node};

fn product(dims: &[u64]) -> NodeResult<u64> {
    element_count(dims).map_or_else(|| invalid(format!("dims {dims:?} overflow")), Ok)
}

/// `Reshape(data, shape; allowzero)`.
pub(super) fn reshape(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["allowzero"])?;
    let x = node.input(0)?;
    let shape = node
        .const_ints(em, 1, "shape")?
        .ok_or_else(|| crate::error::NodeError::Invalid("input `shape` is missing".into()))?;
    let allow_zero = node.int("allowzero", 0)? != 0;
    let from = em.dims(x);
    let mut dims = Dims::new();
    let mut infer = None;
    for (i, &s) in shape.iter().enumerate() {
        dims.push(match s {
            0 if !allow_zero => match from.get(i) {
                Some(&d) => d,
                None => return invalid(format!("shape entry {i} copies a dim the input lacks")),
            },
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            s if s >= 0 => s as u64,
            s => return invalid(format!("shape {shape:?} has an invalid entry {s}")),
        });
    }
    let total = product(&from)?;
    if let Some(i) = infer {
        let known = product(&dims)?;
        if known == 0 || total % known != 0 {
            return invalid(format!(
                "cannot infer the -1 in {shape:?} for input dims {from:?}"
            ));
        }
        dims[i] = total / known;
    }
    if product(&dims)? != total {
        return invalid(format!("cannot reshape {from:?} to {shape:?}"));
    }
    Ok(vec![em.reshape(x, &dims)?])
}

/// `Flatten(input; axis)`: a 2-D view splitting the dims at `axis`.
pub(super) fn flatten(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let axis = node.int("axis", 1)?;
    let r = dims.len() as i64;
    if axis < -r || axis > r {
        return invalid(format!("axis {axis} is out of range for rank {r}"));
    }
    let axis = if axis < 0 { axis + r } else { axis } as usize;
    let outer = product(&dims[..axis])?;
    let inner = product(&dims[axis..])?;
    Ok(vec![em.reshape(x, &[outer, inner])?])
}

/// The `axes` of `Squeeze`/`Unsqueeze`/reductions: an input from opset 13 (`ReduceSum`,
/// `Squeeze`, `Unsqueeze`) or 18 (other reductions), an attribute before.
pub(super) fn axes_operand(
    em: &Emitter,
    node: &Node,
    input_since: i64,
) -> NodeResult<Option<Vec<i64>>> {
    if node.opset >= input_since {
        node.const_ints(em, 1, "axes")
    } else {
        node.ints("axes")
    }
}

/// `Squeeze(data, axes?)`: removes the given size-1 axes, or every size-1 axis.
pub(super) fn squeeze(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let axes = match axes_operand(em, node, 13)? {
        Some(a) => norm_axes(&a, dims.len())?,
        None => (0..dims.len()).filter(|&i| dims[i] == 1).collect(),
    };
    if let Some(&a) = axes.iter().find(|&&a| dims[a] != 1) {
        return invalid(format!("cannot squeeze axis {a} of size {}", dims[a]));
    }
    let out: Dims = (0..dims.len())
        .filter(|i| !axes.contains(i))
        .map(|i| dims[i])
        .collect();
    Ok(vec![em.reshape(x, &out)?])
}

/// `Unsqueeze(data, axes)`: inserts size-1 axes at the given output positions.
pub(super) fn unsqueeze(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let Some(axes) = axes_operand(em, node, 13)? else {
        return invalid("input `axes` is missing");
    };
    let rank = dims.len() + axes.len();
    let axes = norm_axes(&axes, rank)?;
    let mut rest = dims.iter();
    let out: Dims = (0..rank)
        .map(|i| {
            if axes.contains(&i) {
                1
            } else {
                rest.next().copied().unwrap_or(1)
            }
        })
        .collect();
    Ok(vec![em.reshape(x, &out)?])
}

/// `Expand(input, shape)`: broadcast to the NumPy broadcast of both shapes.
pub(super) fn expand(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let x = node.input(0)?;
    let shape = node.const_ints(em, 1, "shape")?.unwrap_or_default();
    if let Some(&s) = shape.iter().find(|&&s| s < 0) {
        return invalid(format!("shape has a negative entry {s}"));
    }
    let shape: Vec<u64> = shape.iter().map(|&s| s as u64).collect();
    let dims = broadcast_shape(&em.dims(x), &shape)?;
    Ok(vec![em.broadcast_to(x, &dims)?])
}

/// `Transpose(data; perm)`, reversing the axes by default.
pub(super) fn transpose(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["perm"])?;
    let x = node.input(0)?;
    let rank = em.rank(x);
    let perm: Vec<u32> = match node.ints("perm")? {
        Some(p) => {
            let p = norm_axes(&p, rank)?;
            if p.len() != rank {
                return invalid(format!("perm {p:?} is not a permutation of {rank} axes"));
            }
            p.into_iter().map(|a| a as u32).collect()
        }
        None => (0..rank as u32).rev().collect(),
    };
    Ok(vec![em.transpose(x, &perm)?])
}

/// `Identity`, and `Dropout` in inference mode (the output is the input, the mask all true).
pub(super) fn identity(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let x = node.input(0)?;
    if node.op() == "Dropout" {
        node.check_attrs(&["seed"])?;
        let training = node.const_scalar(em, 2, "training_mode")?.unwrap_or(0.0);
        let ratio = node.const_scalar(em, 1, "ratio")?.unwrap_or(0.5);
        if training != 0.0 && ratio != 0.0 {
            return unsupported("training mode (random dropout) is not supported");
        }
        let mask = em.full(accy_ir::DType::Bool, &em.dims(x), 1.0)?;
        return Ok(vec![x, mask]);
    }
    node.check_attrs(&[])?;
    Ok(vec![x])
}

/// `Concat(inputs...; axis)`.
pub(super) fn concat(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis"])?;
    let xs = (0..node.input_count())
        .map(|i| node.input(i))
        .collect::<NodeResult<Vec<_>>>()?;
    let Some(&first) = xs.first() else {
        return invalid("needs at least one input");
    };
    let axis = norm_axis(node.int("axis", 0)?, em.rank(first))?;
    Ok(vec![em.concat(&xs, axis)?])
}

/// `Split(input, split?; axis, num_outputs)`.
pub(super) fn split(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["axis", "num_outputs"])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let axis = norm_axis(node.int("axis", 0)?, dims.len())?;
    let d = dims[axis];
    let outputs = node.proto.outputs.len() as u64;
    let sizes: Vec<u64> = match node.const_ints(em, 1, "split")? {
        Some(s) => {
            if s.iter().any(|&v| v < 0) || s.iter().sum::<i64>() as u64 != d {
                return invalid(format!("split {s:?} does not add up to dim {d}"));
            }
            s.iter().map(|&v| v as u64).collect()
        }
        None => {
            let n = if node.has_attr("num_outputs") {
                u64::try_from(node.int("num_outputs", 0)?).unwrap_or(0)
            } else {
                outputs
            };
            if n == 0 || n != outputs {
                return invalid(format!("{outputs} outputs but num_outputs is {n}"));
            }
            // From opset 18 the last chunk may be smaller; before, the split must be even.
            let chunk = d.div_ceil(n);
            if node.opset < 18 && !d.is_multiple_of(n) {
                return invalid(format!("dim {d} does not split evenly into {n}"));
            }
            (0..n)
                .map(|i| chunk.min(d.saturating_sub(i * chunk)))
                .collect()
        }
    };
    if sizes.len() as u64 != outputs {
        return invalid(format!("{} split sizes but {outputs} outputs", sizes.len()));
    }
    let mut start = 0;
    let mut out = Vec::new();
    for s in sizes {
        out.push(em.slice_axis(x, axis, start, start + s)?);
        start += s;
    }
    Ok(out)
}

/// `Tile(input, repeats)`: each axis repeated whole.
pub(super) fn tile(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let repeats = node.const_ints(em, 1, "repeats")?.unwrap_or_default();
    if repeats.len() != dims.len() || repeats.iter().any(|&r| r < 0) {
        return invalid(format!(
            "repeats {repeats:?} must be {} counts ≥ 0",
            dims.len()
        ));
    }
    // x[d0, d1] -> broadcast to [r0, d0, r1, d1] -> reshape to [r0*d0, r1*d1].
    let mut wide = Dims::new();
    let mut axes = Vec::new();
    let mut out = Dims::new();
    for (i, (&d, &r)) in dims.iter().zip(&repeats).enumerate() {
        wide.push(r as u64);
        wide.push(d);
        axes.push(2 * i as u32 + 1);
        out.push((r as u64).checked_mul(d).ok_or_else(|| {
            crate::error::NodeError::Invalid(format!("repeats {repeats:?} overflow"))
        })?);
    }
    let b = em.broadcast_axes(x, &wide, &axes)?;
    Ok(vec![em.reshape(b, &out)?])
}

/// `Shape(data; start, end)` and `Size(data)`, known at import time.
pub(super) fn shape(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let dims = em.dims(node.input(0)?);
    let as_i64 = |d: u64| i64::try_from(d).unwrap_or(i64::MAX);
    if node.op() == "Size" {
        node.check_attrs(&[])?;
        let n = product(&dims)?;
        return Ok(vec![em.scalar_i64(as_i64(n))]);
    }
    node.check_attrs(&["start", "end"])?;
    let r = dims.len() as i64;
    let clamp = |v: i64| if v < 0 { (v + r).max(0) } else { v.min(r) } as usize;
    let start = clamp(node.int("start", 0)?);
    let end = clamp(node.int("end", r)?);
    let picked: Vec<i64> = dims
        .get(start..end.max(start))
        .unwrap_or(&[])
        .iter()
        .map(|&d| as_i64(d))
        .collect();
    Ok(vec![em.vector_i64(&picked)])
}

/// `DepthToSpace(input; blocksize, mode)` and `SpaceToDepth(input; blocksize)` on NCHW.
pub(super) fn depth_space(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let to_space = node.op() == "DepthToSpace";
    node.check_attrs(if to_space {
        &["blocksize", "mode"]
    } else {
        &["blocksize"]
    })?;
    let x = node.input(0)?;
    let &[n, c, h, w] = em.dims(x).as_slice() else {
        return invalid("the input must be 4-D (NCHW)");
    };
    let b = node.int("blocksize", 0)?;
    if b <= 0 {
        return invalid(format!("blocksize {b} must be positive"));
    }
    let b = b as u64;
    let (Some(bb), Some(hb), Some(wb)) = (b.checked_mul(b), h.checked_mul(b), w.checked_mul(b))
    else {
        return invalid(format!("blocksize {b} is too large"));
    };
    let out = if to_space {
        if c % bb != 0 {
            return invalid(format!(
                "channels {c} are not a multiple of blocksize² {bb}"
            ));
        }
        let c2 = c / bb;
        let (split, perm): (Vec<u64>, [u32; 6]) = match node.string("mode", "DCR")?.as_str() {
            "DCR" => (vec![n, b, b, c2, h, w], [0, 3, 4, 1, 5, 2]),
            "CRD" => (vec![n, c2, b, b, h, w], [0, 1, 4, 2, 5, 3]),
            m => return invalid(format!("mode `{m}` must be DCR or CRD")),
        };
        let r = em.reshape(x, &split)?;
        let t = em.transpose(r, &perm)?;
        em.reshape(t, &[n, c2, hb, wb])?
    } else {
        if h % b != 0 || w % b != 0 {
            return invalid(format!("spatial dims {h}x{w} are not multiples of {b}"));
        }
        let r = em.reshape(x, &[n, c, h / b, b, w / b, b])?;
        let t = em.transpose(r, &[0, 3, 5, 1, 2, 4])?;
        em.reshape(t, &[n, c * bb, h / b, w / b])?
    };
    Ok(vec![out])
}
