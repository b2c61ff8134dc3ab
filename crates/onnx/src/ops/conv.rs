//! `Conv` and `ConvTranspose` as one batched `dot` over window patches (im2col built from
//! strided slices of the zero-padded input). A transposed convolution is the convolution of
//! the input spread out by `stride` (interior padding) with the flipped kernel.

use accy_ir::{BinaryOp, Dims};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeError, NodeResult};
use crate::node::Node;
use crate::ops::window::{
    geometry, pad_for, patches, per_axis, Axis, Rule, MAX_TAPS, MAX_WINDOW_ATTR,
};

/// The kernel's spatial dims: `kernel_shape` if given (checked against `w`), else `w`'s.
fn kernel(node: &Node, w: &[u64]) -> NodeResult<Vec<u64>> {
    let from_w: Vec<u64> = w.get(2..).unwrap_or(&[]).to_vec();
    match node.ints("kernel_shape")? {
        Some(k) if k.iter().map(|&x| x as u64).ne(from_w.iter().copied()) => invalid(format!(
            "kernel_shape {k:?} disagrees with the weight's {from_w:?}"
        )),
        _ => Ok(from_w),
    }
}

fn group(node: &Node) -> NodeResult<u64> {
    let g = node.int("group", 1)?;
    u64::try_from(g)
        .ok()
        .filter(|&g| g >= 1)
        .ok_or_else(|| NodeError::Invalid(format!("group {g} must be positive")))
}

/// `Σ_{c,k} patches[n, g, c, k, out…] · w[g, m, c, k]` as `[N, G·M, out…]`, plus the bias.
/// `p` is `[N, C, K, out…]`; `w` is `[G, M, C/G, K]`.
fn contract(em: &mut Emitter, p: Val, w: Val, g: u64, bias: Option<Val>) -> NodeResult<Val> {
    let pd = em.dims(p);
    let wd = em.dims(w);
    let (n, c, k) = (pd[0], pd[1], pd[2]);
    let out: Vec<u64> = pd[3..].to_vec();
    let mut grouped = vec![n, g, c / g, k];
    grouped.extend(&out);
    let p = em.reshape(p, &grouped)?;
    // [G, N, out…, M]
    let y = em.dot(p, w, (&[1], &[0]), (&[2, 3], &[2, 3]))?;
    let r = out.len() as u32;
    let mut perm = vec![1, 0, r + 2];
    perm.extend(2..2 + r);
    let y = em.transpose(y, &perm)?;
    let m = g
        .checked_mul(wd[1])
        .ok_or_else(|| NodeError::Invalid(format!("{g} groups of {} channels overflow", wd[1])))?;
    let mut dims = vec![n, m];
    dims.extend(&out);
    let mut y = em.reshape(y, &dims)?;
    if let Some(b) = bias {
        let mut bd = vec![m];
        bd.extend(std::iter::repeat_n(1, out.len()));
        let b = em.reshape(b, &bd)?;
        y = em.binary(BinaryOp::Add, y, b)?;
    }
    Ok(y)
}

const ATTRS: [&str; 6] = [
    "auto_pad",
    "dilations",
    "group",
    "kernel_shape",
    "pads",
    "strides",
];

/// `Conv(X, W, B?; auto_pad, dilations, group, kernel_shape, pads, strides)`.
pub(super) fn conv(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&ATTRS)?;
    let (x, w) = (node.input(0)?, node.input(1)?);
    node.expect_float(em, x)?;
    let (xd, wd) = (em.dims(x), em.dims(w));
    let g = group(node)?;
    if xd.len() < 3 || wd.len() != xd.len() || Some(xd[1]) != wd[1].checked_mul(g) || wd[0] % g != 0
    {
        return invalid(format!(
            "input {xd:?}, weight {wd:?} and group {g} do not fit"
        ));
    }
    let axes = geometry(node, &xd, &kernel(node, &wd)?, Rule::Conv)?;
    let zero = em.scalar(em.dtype(x), 0.0);
    let padded = pad_for(em, x, zero, &axes)?;
    let p = patches(em, padded, &axes)?;
    let k: u64 = wd[2..].iter().product();
    let w = em.reshape(w, &[g, wd[0] / g, wd[1], k])?;
    Ok(vec![contract(em, p, w, g, node.opt_input(2))?])
}

/// `ConvTranspose(X, W, B?; auto_pad, dilations, group, kernel_shape, output_padding,
/// output_shape, pads, strides)`.
pub(super) fn conv_transpose(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let mut attrs = ATTRS.to_vec();
    attrs.extend(["output_padding", "output_shape"]);
    node.check_attrs(&attrs)?;
    let (x, w) = (node.input(0)?, node.input(1)?);
    node.expect_float(em, x)?;
    let (xd, wd) = (em.dims(x), em.dims(w));
    let g = group(node)?;
    let n = xd.len().saturating_sub(2);
    if n == 0 || wd.len() != xd.len() || wd[0] != xd[1] || xd[1] % g != 0 {
        return invalid(format!(
            "input {xd:?}, weight {wd:?} and group {g} do not fit"
        ));
    }
    let k = kernel(node, &wd)?;
    let strides = per_axis(node, "strides", n, 1, 1)?;
    let dilations = per_axis(node, "dilations", n, 1, 1)?;
    let out_pad = per_axis(node, "output_padding", n, 0, 0)?;
    let auto_pad = node.string("auto_pad", "NOTSET")?;
    if k.iter().any(|&k| k == 0 || k > MAX_WINDOW_ATTR as u64) || xd[2..].contains(&0) {
        return invalid(format!("kernel {k:?} does not fit input {xd:?}"));
    }
    if k.iter()
        .try_fold(1u64, |a, &b| a.checked_mul(b))
        .is_none_or(|t| t > MAX_TAPS as u64)
    {
        return unsupported(format!("kernel {k:?} has more than {MAX_TAPS} positions"));
    }
    // The full output size `s (in - 1) + output_padding + (k - 1) d + 1`, checked.
    let full = (0..n)
        .map(|i| {
            strides[i]
                .checked_mul(xd[i + 2] - 1)
                .and_then(|v| v.checked_add(out_pad[i] + (k[i] - 1) * dilations[i] + 1))
                .and_then(|v| i64::try_from(v).ok())
                .ok_or_else(|| NodeError::Invalid(format!("output dims of {xd:?} overflow")))
        })
        .collect::<NodeResult<Vec<i64>>>()?;
    let target: Option<Vec<i64>> = match node.ints("output_shape")? {
        Some(s) => {
            let s = if s.len() == n + 2 { s[2..].to_vec() } else { s };
            if s.len() != n || s.iter().any(|&x| !(1..=i64::MAX / 2).contains(&x)) {
                return invalid(format!(
                    "output_shape {s:?} must give {n} positive spatial dims"
                ));
            }
            Some(s)
        }
        None if auto_pad.starts_with("SAME") => {
            Some((0..n).map(|i| (xd[i + 2] * strides[i]) as i64).collect())
        }
        None => None,
    };
    // Begin and end padding, and the output size, as the ONNX reference derives them:
    // explicit pads win; otherwise the padding that yields the target size is split with
    // the larger half at the end for SAME_UPPER and at the beginning otherwise.
    let (pads, out): (Vec<i64>, Vec<i64>) = match (node.ints("pads")?, &target) {
        (Some(p), _) if p.len() == 2 * n && p.iter().all(|x| x.abs() <= MAX_WINDOW_ATTR) => {
            let out = (0..n)
                .map(|i| target.as_ref().map_or(full[i] - p[i] - p[i + n], |t| t[i]))
                .collect();
            (p, out)
        }
        (Some(p), _) => return invalid(format!("`pads` {p:?} must be {} values", 2 * n)),
        (None, Some(t)) => {
            let mut pads = vec![0i64; 2 * n];
            for i in 0..n {
                let total = full[i] - t[i];
                let half = total.div_euclid(2);
                (pads[i], pads[i + n]) = if auto_pad == "SAME_UPPER" {
                    (half, total - half)
                } else {
                    (total - half, half)
                };
            }
            (pads, t.clone())
        }
        (None, None) => (vec![0; 2 * n], full.clone()),
    };
    // Spread the input by the strides, then pad so a stride-1 correlation with the flipped
    // kernel gives each output: low (k-1)d - pad_begin, high the rest (negative crops).
    let mut axes = Vec::with_capacity(n);
    let mut low = vec![0i64; n + 2];
    let mut high = vec![0i64; n + 2];
    let mut interior = Dims::from_elem(0, n + 2);
    for i in 0..n {
        let out = u64::try_from(out[i])
            .ok()
            .filter(|&o| o > 0)
            .ok_or_else(|| NodeError::Invalid(format!("pads {pads:?} leave no output")))?;
        let span = (k[i] - 1) * dilations[i];
        let spread = (xd[i + 2] - 1) * strides[i] + 1;
        interior[i + 2] = strides[i] - 1;
        low[i + 2] = span as i64 - pads[i];
        high[i + 2] = (out + span) as i64 - spread as i64 - low[i + 2];
        axes.push(Axis {
            input: out + span,
            kernel: k[i],
            stride: 1,
            dilation: dilations[i],
            out,
            low: 0,
            limit: out + span,
        });
    }
    let zero = em.scalar(em.dtype(x), 0.0);
    let (lo, hi, int) = (low.clone(), high.clone(), interior.clone());
    let spread = em.apply(&[x, zero], |ids| accy_ir::Op::Pad {
        x: ids[0],
        value: ids[1],
        low: lo.iter().copied().collect(),
        high: hi.iter().copied().collect(),
        interior: int.clone(),
    })?;
    let p = patches(em, spread, &axes)?;
    // W [C, M/G, k…] → flipped, [G, M/G, C/G, K].
    let spatial: Vec<u32> = (2..wd.len() as u32).collect();
    let flipped = em.reverse(w, &spatial)?;
    let kk: u64 = k.iter().product();
    let m = wd[1];
    let r = em.reshape(flipped, &[g, xd[1] / g, m, kk])?;
    let w = em.transpose(r, &[0, 2, 1, 3])?;
    Ok(vec![contract(em, p, w, g, node.opt_input(2))?])
}
