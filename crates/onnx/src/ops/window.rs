//! Sliding-window geometry shared by pooling and convolution: output sizes and paddings from
//! the ONNX attributes (`kernel_shape`, `strides`, `dilations`, `pads`, `auto_pad`,
//! `ceil_mode`), and the window patches of a padded `[N, C, spatial…]` tensor gathered by
//! strided slices into one `[N, C, K, out…]` tensor (K = kernel positions, row-major).

use accy_ir::Dims;

use crate::emit::{Emitter, Val};
use crate::error::{invalid, NodeResult};
use crate::node::Node;

/// The geometry of one spatial axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Axis {
    /// Input size.
    pub(super) input: u64,
    /// Kernel size.
    pub(super) kernel: u64,
    /// Stride.
    pub(super) stride: u64,
    /// Dilation.
    pub(super) dilation: u64,
    /// Output size.
    pub(super) out: u64,
    /// Elements of padding before the input in the padded tensor the windows slide over.
    pub(super) low: u64,
    /// Window positions at or past this index of the padded tensor are not part of any
    /// window (the overhang `ceil_mode` adds beyond the explicit pads).
    pub(super) limit: u64,
}

impl Axis {
    /// The padded length the windows cover: `(out - 1) * stride + (kernel - 1) * dilation + 1`.
    pub(super) fn extent(&self) -> u64 {
        (self.out.saturating_sub(1)) * self.stride + (self.kernel - 1) * self.dilation + 1
    }
}

/// The largest kernel size, stride, dilation or pad accepted: it keeps every window
/// computation far inside `u64` (dims themselves are below 2^63, the verifier's byte limit).
pub(super) const MAX_WINDOW_ATTR: i64 = 1 << 31;

/// The most kernel positions a window may have: each becomes one slice in the program.
pub(super) const MAX_TAPS: usize = 4096;

/// Reads a per-axis attribute of `n` values in `min..=MAX_WINDOW_ATTR` (default `default`).
pub(super) fn per_axis(
    node: &Node,
    name: &str,
    n: usize,
    default: u64,
    min: i64,
) -> NodeResult<Vec<u64>> {
    match node.ints(name)? {
        None => Ok(vec![default; n]),
        Some(v) if v.len() == n && v.iter().all(|&x| (min..=MAX_WINDOW_ATTR).contains(&x)) => {
            Ok(v.iter().map(|&x| x as u64).collect())
        }
        Some(v) => invalid(format!(
            "`{name}` {v:?} must be {n} values from {min} to {MAX_WINDOW_ATTR}"
        )),
    }
}

/// Which rule sizes the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// Pooling, as the ONNX reference pools (floor or ceil mode; SAME pads ignore dilation).
    Pool,
    /// Convolution (SAME pads account for dilation; no ceil mode).
    Conv,
}

/// The geometry of every spatial axis for input dims `[N, C, spatial…]` and `kernel`.
pub(super) fn geometry(
    node: &Node,
    dims: &[u64],
    kernel: &[u64],
    rule: Rule,
) -> NodeResult<Vec<Axis>> {
    let n = dims.len().saturating_sub(2);
    let taps = kernel.iter().try_fold(1u64, |acc, &k| acc.checked_mul(k));
    if n == 0
        || kernel.len() != n
        || kernel.iter().any(|&k| k == 0 || k > MAX_WINDOW_ATTR as u64)
        || dims[2..].contains(&0)
    {
        return invalid(format!("kernel {kernel:?} does not fit input {dims:?}"));
    }
    if taps.is_none_or(|t| t > MAX_TAPS as u64) {
        return crate::error::unsupported(format!(
            "kernel {kernel:?} has more than {MAX_TAPS} positions"
        ));
    }
    let strides = per_axis(node, "strides", n, 1, 1)?;
    let dilations = per_axis(node, "dilations", n, 1, 1)?;
    let pads = per_axis(node, "pads", 2 * n, 0, 0)?;
    let auto_pad = node.string("auto_pad", "NOTSET")?;
    let ceil = node.int("ceil_mode", 0)? != 0;
    let mut axes = Vec::with_capacity(n);
    for i in 0..n {
        let (input, k, s, d) = (dims[i + 2], kernel[i], strides[i], dilations[i]);
        let span = (k - 1) * d + 1;
        let (out, lo, hi) = match auto_pad.as_str() {
            "NOTSET" => {
                let (lo, hi) = (pads[i], pads[i + n]);
                let padded = input + lo + hi;
                if padded < span {
                    return invalid(format!(
                        "the window ({span}) exceeds the padded axis ({padded})"
                    ));
                }
                let mut out = (padded - span) / s + 1;
                if ceil && rule == Rule::Pool {
                    out = (padded - span).div_ceil(s) + 1;
                    // The last window must start inside the input or its low padding.
                    if (out - 1) * s >= input + lo {
                        out -= 1;
                    }
                }
                (out, lo, hi)
            }
            "SAME_UPPER" | "SAME_LOWER" => {
                let out = input.div_ceil(s);
                let window = if rule == Rule::Pool { k } else { span };
                let total = ((out - 1) * s + window).saturating_sub(input);
                let small = total / 2;
                let (lo, hi) = if auto_pad == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                };
                (out, lo, hi)
            }
            "VALID" => {
                if input < span {
                    return invalid(format!("the window ({span}) exceeds the axis ({input})"));
                }
                ((input - span) / s + 1, 0, 0)
            }
            other => return invalid(format!("auto_pad `{other}`")),
        };
        let mut axis = Axis {
            input,
            kernel: k,
            stride: s,
            dilation: d,
            out,
            low: lo,
            limit: input + lo + hi,
        };
        // Windows reaching past the pads (ceil mode) shift the start by half the overhang,
        // as the reference implementation pads.
        let extra = axis.extent().saturating_sub(input + lo + hi);
        axis.low += extra / 2;
        axis.limit += extra / 2;
        axes.push(axis);
    }
    Ok(axes)
}

/// `x` (`[N, C, spatial…]`) padded with the rank-0 `fill` so the windows of `axes` fit.
pub(super) fn pad_for(em: &mut Emitter, x: Val, fill: Val, axes: &[Axis]) -> NodeResult<Val> {
    let mut low = vec![0i64; axes.len() + 2];
    let mut high = vec![0i64; axes.len() + 2];
    for (i, a) in axes.iter().enumerate() {
        low[i + 2] = a.low as i64;
        high[i + 2] = a.extent() as i64 - a.input as i64 - a.low as i64;
    }
    em.pad(x, fill, &low, &high)
}

/// Every kernel position of `axes` (row-major), as per-axis taps.
pub(super) fn taps(axes: &[Axis]) -> Vec<Vec<u64>> {
    let mut all = vec![Vec::new()];
    for a in axes {
        all = all
            .into_iter()
            .flat_map(|t| {
                (0..a.kernel).map(move |k| {
                    let mut t = t.clone();
                    t.push(k);
                    t
                })
            })
            .collect();
    }
    all
}

/// The windows of the padded `x` (`[N, C, padded…]`) as `[N, C, K, out…]`.
pub(super) fn patches(em: &mut Emitter, x: Val, axes: &[Axis]) -> NodeResult<Val> {
    let dims = em.dims(x);
    let rank = dims.len();
    let mut slices = Vec::new();
    for t in taps(axes) {
        let mut start = Dims::from_elem(0, rank);
        let mut limit = dims.clone();
        let mut stride = Dims::from_elem(1, rank);
        for (i, (a, &k)) in axes.iter().zip(&t).enumerate() {
            start[i + 2] = k * a.dilation;
            limit[i + 2] = start[i + 2] + (a.out.saturating_sub(1)) * a.stride + 1;
            stride[i + 2] = a.stride;
        }
        let s = em.slice(x, &start, &limit, &stride)?;
        let mut one = em.dims(s);
        one.insert(2, 1);
        slices.push(em.reshape(s, &one)?);
    }
    em.concat(&slices, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_are_row_major() {
        let a = Axis {
            input: 4,
            kernel: 2,
            stride: 1,
            dilation: 1,
            out: 3,
            low: 0,
            limit: 4,
        };
        let b = Axis { kernel: 3, ..a };
        assert_eq!(
            taps(&[a, b]),
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        assert_eq!(a.extent(), 4);
        assert_eq!(
            Axis {
                out: 2,
                stride: 2,
                dilation: 2,
                ..b
            }
            .extent(),
            7
        );
    }
}
