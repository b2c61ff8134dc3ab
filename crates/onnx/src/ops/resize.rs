//! `Resize` with known scales or sizes: every mode (`nearest`, `linear`, `cubic`, antialiased
//! or not) and coordinate transformation is separable, so for each resized axis the importer
//! computes, per output index, the input indices and weights of its taps (in f64, as the ONNX
//! reference does), and the program applies them as `gather`s and weighted sums along that
//! axis. `nearest` is pure gathering (exact for every dtype).

use accy_ir::{BinaryOp, DType, Tensor};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeError, NodeResult};
use crate::node::{norm_axes, tensor_f64s, Node};

/// The most output indices along one axis whose taps the importer computes.
const MAX_OUTPUTS: u64 = 1 << 20;

/// The most taps per output index (antialiased downscaling widens the filter).
const MAX_TAPS: f64 = 4096.0;

/// The settings that decide the taps.
struct Settings {
    mode: String,
    nearest_mode: String,
    transform: String,
    cubic_a: f64,
    exclude_outside: bool,
    antialias: bool,
}

/// One output index's taps: (input index, weight), or `None` when it lies outside the
/// crop region of `tf_crop_and_resize` (it takes the extrapolation value).
type Taps = Option<Vec<(u64, f64)>>;

fn nearest_coeffs(ratio: f64, mode: &str) -> NodeResult<Vec<f64>> {
    let b = |x: bool| if x { 1.0 } else { 0.0 };
    Ok(if ratio.fract() == 0.0 {
        vec![0.0, 1.0]
    } else {
        match mode {
            "round_prefer_floor" => vec![b(ratio <= 0.5), b(ratio > 0.5)],
            "round_prefer_ceil" => vec![b(ratio < 0.5), b(ratio >= 0.5)],
            "floor" => vec![1.0, 0.0],
            "ceil" => vec![0.0, 1.0],
            m => return invalid(format!("nearest_mode `{m}`")),
        }
    })
}

fn cubic_coeffs(ratio: f64, a: f64) -> Vec<f64> {
    let (r, s) = (ratio, 1.0 - ratio);
    vec![
        ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
        ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
        ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0,
        ((a * (s + 1.0) - 5.0 * a) * (s + 1.0) + 8.0 * a) * (s + 1.0) - 4.0 * a,
    ]
}

fn cubic_coeffs_antialias(ratio: f64, scale: f64, a: f64) -> Vec<f64> {
    let scale = scale.min(1.0);
    let coeff = |x: f64| {
        let x = x.abs();
        let (x2, x3) = (x * x, x * x * x);
        if x <= 1.0 {
            (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0
        } else if x < 2.0 {
            a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a
        } else {
            0.0
        }
    };
    let start = (-2.0 / scale).floor() as i64 + 1;
    let c: Vec<f64> = (start..2 - start)
        .map(|i| coeff(scale * (i as f64 - ratio)))
        .collect();
    let sum: f64 = c.iter().sum();
    c.iter().map(|x| x / sum).collect()
}

fn linear_coeffs_antialias(ratio: f64, scale: f64) -> Vec<f64> {
    let scale = scale.min(1.0);
    let start = (-1.0 / scale).floor() as i64 + 1;
    let footprint = 2 - 2 * start;
    let c: Vec<f64> = (start..start + footprint)
        .map(|i| (1.0 - ((i as f64 - ratio) * scale).abs()).clamp(0.0, 1.0))
        .collect();
    let sum: f64 = c.iter().sum();
    c.iter().map(|x| x / sum).collect()
}

/// The `n` integers nearest to `x` (ties to the smaller), ascending.
fn neighbours(x: f64, n: usize) -> Vec<i64> {
    let base = x.floor() as i64;
    let mut c: Vec<i64> = (base - n as i64 - 1..=base + n as i64 + 1).collect();
    c.sort_by(|&a, &b| {
        let (da, db) = ((x - a as f64).abs(), (x - b as f64).abs());
        da.total_cmp(&db).then(a.cmp(&b))
    });
    c.truncate(n);
    c.sort_unstable();
    c
}

/// The taps of every output index along one axis.
fn axis_taps(
    s: &Settings,
    input: u64,
    out: u64,
    scale: f64,
    roi: (f64, f64),
) -> NodeResult<Vec<Taps>> {
    let (inp, width) = (input as f64, scale * input as f64);
    (0..out)
        .map(|x| {
            let x = x as f64;
            let x_ori = match s.transform.as_str() {
                "align_corners" if width == 1.0 => 0.0,
                "align_corners" => x * (inp - 1.0) / (width - 1.0),
                "asymmetric" => x / scale,
                "tf_crop_and_resize" => {
                    let o = if width == 1.0 {
                        (roi.1 - roi.0) * (inp - 1.0) / 2.0
                    } else {
                        x * (roi.1 - roi.0) * (inp - 1.0) / (width - 1.0)
                    } + roi.0 * (inp - 1.0);
                    if o < 0.0 || o > inp - 1.0 {
                        return Ok(None);
                    }
                    o
                }
                "pytorch_half_pixel" if width == 1.0 => -0.5,
                "pytorch_half_pixel" | "half_pixel" => (x + 0.5) / scale - 0.5,
                "half_pixel_symmetric" => {
                    let offset = inp / 2.0 * (1.0 - out as f64 / width);
                    offset + (x + 0.5) / scale - 0.5
                }
                t => return invalid(format!("coordinate_transformation_mode `{t}`")),
            };
            if x_ori.is_nan() || x_ori.abs() >= 1e15 {
                return invalid(format!("output index {x} maps to input coordinate {x_ori}"));
            }
            let ratio = if x_ori.fract() == 0.0 {
                1.0
            } else {
                x_ori - x_ori.floor()
            };
            let mut coeffs = match (s.mode.as_str(), s.antialias) {
                ("nearest", _) => nearest_coeffs(ratio, &s.nearest_mode)?,
                ("linear", false) => vec![1.0 - ratio, ratio],
                ("linear", true) => linear_coeffs_antialias(ratio, scale),
                ("cubic", false) => cubic_coeffs(ratio, s.cubic_a),
                ("cubic", true) => cubic_coeffs_antialias(ratio, scale, s.cubic_a),
                (m, _) => return invalid(format!("mode `{m}`")),
            };
            let idx = neighbours(x_ori, coeffs.len());
            if s.exclude_outside {
                for (c, &i) in coeffs.iter_mut().zip(&idx) {
                    if i < 0 || i >= input as i64 {
                        *c = 0.0;
                    }
                }
                let sum: f64 = coeffs.iter().sum();
                coeffs.iter_mut().for_each(|c| *c /= sum);
            }
            // Indices outside the input read its edge (the reference pads in `edge` mode).
            let last = input as i64 - 1;
            Ok(Some(
                idx.iter()
                    .zip(&coeffs)
                    .filter(|(_, &c)| c != 0.0)
                    .map(|(&i, &c)| (i.clamp(0, last) as u64, c))
                    .collect(),
            ))
        })
        .collect()
}

/// Applies the taps of `axis`: `Σ_t gather(x, idx_t) * w_t`, with `extrapolate` marking the
/// output indices that take the extrapolation value.
fn apply_axis(
    em: &mut Emitter,
    x: Val,
    axis: usize,
    taps: &[Taps],
) -> NodeResult<(Val, Vec<bool>)> {
    let rank = em.rank(x);
    let out = taps.len() as u64;
    let n = taps.iter().flatten().map(Vec::len).max().unwrap_or(1);
    let mut acc: Option<Val> = None;
    let pure_gather = taps.iter().flatten().all(|t| t.len() == 1 && t[0].1 == 1.0);
    for t in 0..n {
        let (idx, w): (Vec<i64>, Vec<f64>) = taps
            .iter()
            .map(|tp| match tp.as_ref().and_then(|v| v.get(t)) {
                Some(&(i, w)) => (i as i64, w),
                None => (0, 0.0),
            })
            .unzip();
        let idx = em.constant(Tensor::i64s(&[out], idx));
        let g = em.gather(x, idx, axis)?;
        if pure_gather {
            acc = Some(g);
            break;
        }
        let mut wd = vec![1u64; rank];
        wd[axis] = out;
        let w = em.constant(Tensor::f64s(&wd, w));
        let term = em.binary(BinaryOp::Mul, g, w)?;
        acc = Some(match acc {
            None => term,
            Some(a) => em.binary(BinaryOp::Add, a, term)?,
        });
    }
    let acc = acc.ok_or_else(|| NodeError::Invalid("no taps".into()))?;
    Ok((acc, taps.iter().map(Option::is_none).collect()))
}

/// `Resize(X, roi?, scales?, sizes?; …)` with known `roi`, `scales` and `sizes`.
pub(super) fn resize(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[
        "antialias",
        "axes",
        "coordinate_transformation_mode",
        "cubic_coeff_a",
        "exclude_outside",
        "extrapolation_value",
        "keep_aspect_ratio_policy",
        "mode",
        "nearest_mode",
    ])?;
    let x = node.input(0)?;
    let dims = em.dims(x);
    let rank = dims.len();
    let s = Settings {
        mode: node.string("mode", "nearest")?,
        nearest_mode: node.string("nearest_mode", "round_prefer_floor")?,
        transform: node.string("coordinate_transformation_mode", "half_pixel")?,
        cubic_a: f64::from(node.float("cubic_coeff_a", -0.75)?),
        exclude_outside: node.int("exclude_outside", 0)? != 0,
        antialias: node.int("antialias", 0)? != 0,
    };
    let axes = match node.ints("axes")? {
        Some(a) => norm_axes(&a, rank)?,
        None => (0..rank).collect(),
    };
    let roi_given = node
        .const_input(em, 1, "roi")?
        .map(tensor_f64s)
        .unwrap_or_default();
    let scales = node
        .const_input(em, 2, "scales")?
        .map(tensor_f64s)
        .filter(|v| !v.is_empty());
    let sizes = node.const_ints(em, 3, "sizes")?.filter(|v| !v.is_empty());
    let mut roi: Vec<(f64, f64)> = vec![(0.0, 1.0); rank];
    if roi_given.len() == 2 * axes.len() {
        for (i, &a) in axes.iter().enumerate() {
            roi[a] = (roi_given[i], roi_given[i + axes.len()]);
        }
    }
    let mut scale = vec![1.0f64; rank];
    let mut out: Vec<u64> = dims.to_vec();
    match (scales, sizes) {
        (Some(sc), None) if sc.len() == axes.len() => {
            for (&a, &f) in axes.iter().zip(&sc) {
                if !(f > 0.0 && f < 1e9) {
                    return invalid(format!("scale {f} must be positive"));
                }
                scale[a] = f;
                out[a] = (f * dims[a] as f64) as u64;
            }
        }
        (None, Some(sz)) if sz.len() == axes.len() => {
            for (&a, &n) in axes.iter().zip(&sz) {
                scale[a] = n as f64 / dims[a] as f64;
            }
            let policy = node.string("keep_aspect_ratio_policy", "stretch")?;
            let pick = |f: fn(f64, f64) -> f64| axes.iter().map(|&a| scale[a]).reduce(f);
            let common = match policy.as_str() {
                "stretch" => None,
                "not_larger" => pick(f64::min),
                "not_smaller" => pick(f64::max),
                p => return invalid(format!("keep_aspect_ratio_policy `{p}`")),
            };
            for (&a, &n) in axes.iter().zip(&sz) {
                match common {
                    Some(c) => {
                        scale[a] = c;
                        out[a] = (c * dims[a] as f64 + 0.5) as u64;
                    }
                    None => out[a] = u64::try_from(n).unwrap_or(0),
                }
            }
        }
        _ => {
            return invalid("exactly one of `scales` and `sizes` must be given, one value per axis")
        }
    }
    let d = em.dtype(x);
    let mut y = if s.mode == "nearest" {
        x
    } else {
        em.convert(x, DType::F64)?
    };
    let mut outside: Vec<(usize, Vec<bool>)> = Vec::new();
    for a in 0..rank {
        if out[a] == dims[a] && scale[a] == 1.0 && s.transform != "tf_crop_and_resize" {
            continue;
        }
        if dims[a] == 0 {
            return invalid(format!("cannot resize the empty axis {a}"));
        }
        // Import-time tables: one entry per output index and tap.
        let taps_per_output = if s.antialias && scale[a] < 1.0 {
            4.0 / scale[a]
        } else {
            4.0
        };
        if out[a] > MAX_OUTPUTS || taps_per_output > MAX_TAPS {
            return unsupported(format!(
                "resizing axis {a} to {} (scale {}) needs tables beyond the importer's limits",
                out[a], scale[a]
            ));
        }
        let taps = axis_taps(&s, dims[a], out[a], scale[a], roi[a])?;
        let (r, mask) = apply_axis(em, y, a, &taps)?;
        y = r;
        if mask.iter().any(|&m| m) {
            outside.push((a, mask));
        }
    }
    if !outside.is_empty() {
        let value = f64::from(node.float("extrapolation_value", 0.0)?);
        let yd = em.dims(y);
        let mut any: Option<Val> = None;
        for (a, mask) in outside {
            let mut md = vec![1u64; rank];
            md[a] = mask.len() as u64;
            let m = em.constant(Tensor::bools(&md, mask));
            let m = em.broadcast_to(m, &yd)?;
            any = Some(match any {
                None => m,
                Some(prev) => em.binary(BinaryOp::Or, prev, m)?,
            });
        }
        if let Some(mask) = any {
            let v = em.scalar(em.dtype(y), value);
            y = em.select(mask, v, y)?;
        }
    }
    Ok(vec![em.convert(y, d)?])
}
