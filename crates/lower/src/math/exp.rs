//! `exp`, and the exponential core the other expansions build on (f64 `tanh`, `sigmoid`,
//! `erf`, `pow`).
//!
//! Reduction: `n = round(x · log2 e)` through the magic-number trick (one FMA adds
//! `1.5 · 2^mantissa`, so the sum's low bits hold `n` and subtracting the magic gives `n` as a
//! float), then `r = x - n · ln 2` in two FMAs with `ln 2` split in two (the first is exact,
//! see below), so `|r| ≤ ln 2 / 2`. Polynomial: `e^r = 1 + r + r² · P(r)`, `P` a minimax fit
//! of degree 4 (f32) or 9 (f64) to `(e^r - 1 - r) / r²` for relative error (`tools/remez.py`:
//! 0.06 and 0.10 ULP), evaluated by Horner with FMAs; the last addition of 1 rounds once.
//! Scaling by `2^n`: `n` (taken from the magic sum's bits) is shifted into the exponent field
//! and added to the bits of `e^r`, which is exact while the result is a normal number. To keep
//! it so, the bits get `n - 1` and the result is multiplied by 2 (so `n = 128` (f32) still
//! works and a true overflow rounds to ±inf by itself); where `2^(n-1)` would fall below the
//! normal range, they get `n + K` and the result is multiplied by `2^-K` (K = 64 or 128),
//! so a subnormal result is rounded once, correctly, by that multiplication.
//!
//! On targets that scale by a power of two in one instruction (AVX-512's `vscalefps`,
//! [`crate::kernel::Node::ScaleB`]), that instruction does all of this, rounding a subnormal
//! result once as the multiplication by `2^-K` does: the result is the same.
//!
//! Why `x - n · ln2_hi` is exact: with FMA the product is not rounded, `|r| ≤ 0.35`, and both
//! terms are multiples of the smaller of `ulp(x)` and `ulp(ln2_hi)`, so `r` needs fewer
//! significant bits than the format has.
//!
//! Special values: below the underflow threshold (`x < -104` f32, `-746` f64; also -inf) the
//! argument is clamped there, where the result rounds to +0. Above the overflow threshold
//! (the largest x whose correctly rounded `e^x` is finite) and for +inf the result is
//! `x · inf` = +inf, and NaN stays NaN (`x · inf` too); with `scaleb`, which keeps a NaN
//! NaN and rounds a result past the largest float to +inf, the argument is clamped at 89
//! (710) instead, one `min` before the reduction (see [`SCALE_B_CLAMP`]), except for an
//! argument with a tail (`pow`'s), which keeps a select of +inf after the scaling. Callers
//! that know their argument stays inside (tanh, erf, and the `exp` of an argument the
//! planner proved at most zero or NaN, `LoopKernel::at_most_zero`) skip those guards.

use super::builder::{Builder, V};

/// `P` for f32: `e^r ≈ 1 + r + r² P(r)` on `|r| ≤ ln2/2` (tools/remez.py `exp`, degree 4).
const P32: [f64; 5] = [
    0.4999999403953552,
    0.1666652113199234,
    0.04166838899254799,
    0.008368710055947304,
    0.0013814613921567798,
];
/// `P` for f64 (degree 9).
const P64: [f64; 10] = [
    0.5000000000000011,
    0.16666666666666413,
    0.041666666666530267,
    0.00833333333349434,
    0.001388888894359789,
    0.00019841269506762916,
    2.480149313594894e-05,
    2.755758628212554e-06,
    2.7630234016258445e-07,
    2.5000067167501987e-08,
];
/// `ln 2` split: the nearest float, then the nearest float to the rest.
pub(super) const LN2_32: [f64; 2] = [0.6931471824645996, -1.9046542121259336e-09];
const LN2_64: [f64; 2] = [std::f64::consts::LN_2, 2.3190468138462996e-17];
/// `log2 e` in each format.
pub(super) const LOG2E: [f64; 2] = [1.4426950216293335, std::f64::consts::LOG2_E];
/// Below this, `e^x` rounds to +0 (and the argument is clamped here).
const UNDERFLOW: [f64; 2] = [-104.0, -746.0];
/// The largest x whose correctly rounded `e^x` is finite.
const OVERFLOW: [f64; 2] = [88.72283172607422, 709.782712893384];
/// The guard's threshold for an argument with a tail: the high part alone may lie a little
/// past [`OVERFLOW`] while the sum does not, so the guard only catches arguments whose `n`
/// would exceed the largest exponent plus one (128, 1024); below, the scaling overflows to
/// ±inf by itself exactly where the rounded result does.
const OVERFLOW_WITH_TAIL: [f64; 2] = [89.0, 710.0];
/// Where `scaleb` targets clamp an argument that can overflow: every argument from just past
/// [`OVERFLOW`] to here scales to +inf by itself, so larger ones (+inf too, whose reduction
/// would give NaN, and huge ones, whose reduced argument would be garbage) are brought here.
/// Why: `n` is 128 (1024) on the whole stretch, and `ln2_hi · 128` (`· 1024`) is the first
/// float past [`OVERFLOW`] (in f64, [`OVERFLOW`] itself), so past it `r` is positive, `e^r`
/// at least 1 and `e^r · 2^n` at least `2^128` (`2^1024`): +inf, rounded once by `vscalef`.
/// At [`OVERFLOW`] `r` is negative and the result finite, as before. Not for an argument with
/// a tail (`pow`'s): the tail may be large where the argument is (about -1.2 at `x` = 2.6e7,
/// or -inf where `x` overflowed to +inf), and would take a clamped argument back below the
/// threshold or to NaN, so such an argument keeps a guard after the scaling.
const SCALE_B_CLAMP: [f64; 2] = [89.0, 710.0];

/// Which ends of the range an argument can reach, so the guards for the others are left out.
#[derive(Clone, Copy, Debug)]
pub(super) struct Reach {
    /// The argument can go below the normal range of the result (or be -inf).
    pub low: bool,
    /// The argument can exceed the overflow threshold or be +inf, or (without `scaleb`,
    /// whose scaling keeps NaN NaN by itself) be NaN.
    pub high: bool,
}

/// `e^x`: the `exp` op.
pub(super) fn exp(b: &mut Builder<'_>, x: V) -> V {
    exp_reaching(
        b,
        x,
        Reach {
            low: true,
            high: true,
        },
    )
}

/// `e^x` for an `x` that stays where `reach` says (see the module doc).
pub(super) fn exp_reaching(b: &mut Builder<'_>, x: V, reach: Reach) -> V {
    exp_of_sum(b, x, None, reach)
}

/// `e^(x + tail)` for a `tail` small next to `x` (the low part of a double-word argument, as
/// `pow` has; a few hundred times below `x`'s ULP or less), added to the reduced argument so
/// the result is rounded once. The underflow clamp looks at `x` alone and drops the tail; the
/// overflow guard, also on `x` alone, sits where it cannot cut off a finite result
/// ([`OVERFLOW_WITH_TAIL`]).
pub(super) fn exp_of_sum(b: &mut Builder<'_>, x: V, tail: Option<V>, reach: Reach) -> V {
    let w = usize::from(b.fmt.wide());
    // With `scaleb`, arguments past the overflow threshold need no guard after the scaling,
    // only a clamp before it (one min instruction on the vector paths; a NaN passes), unless
    // a tail comes with them: see [`SCALE_B_CLAMP`].
    let clamped = b.has_scale_b && reach.high && tail.is_none();
    let x = if clamped {
        let limit = b.f(SCALE_B_CLAMP[w]);
        let beyond = b.lt(limit, x);
        b.select(beyond, limit, x)
    } else {
        x
    };
    let (x_in, tail) = if reach.low {
        let lo = b.f(UNDERFLOW[w]);
        let below = b.lt(x, lo);
        // A clamped argument drops its tail, which may be large in absolute terms there.
        let tail = tail.map(|t| {
            let zero = b.f(0.0);
            b.select(below, zero, t)
        });
        (b.select(below, lo, x), tail)
    } else {
        (x, tail)
    };
    let (log2e, magic) = (b.f(LOG2E[w]), b.f(b.fmt.magic()));
    let t = b.fma(x_in, log2e, magic);
    let n = b.sub(t, magic);
    let ln2 = if b.fmt.wide() { LN2_64 } else { LN2_32 };
    let (hi, lo) = (b.f(-ln2[0]), b.f(-ln2[1]));
    let r = b.fma(n, hi, x_in);
    let r = b.fma(n, lo, r);
    let r = match tail {
        Some(t) => b.add(r, t),
        None => r,
    };
    let coefficients: &[f64] = b.pick(&P32, &P64);
    let p = b.poly(r, coefficients);
    let r2 = b.mul(r, r);
    let q = b.fma(r2, p, r);
    let one = b.f(1.0);
    let er = b.add(q, one);
    let y = if b.has_scale_b {
        // One rounding, of a subnormal result too; past the threshold, +inf (see
        // [`SCALE_B_CLAMP`]; with a tail, the guard below).
        b.scale_b(er, n)
    } else {
        scale(b, er, t, n, reach.low)
    };
    if !reach.high || clamped {
        return y;
    }
    let limit = if tail.is_some() {
        OVERFLOW_WITH_TAIL[w]
    } else {
        OVERFLOW[w]
    };
    let (limit, inf) = (b.f(limit), b.f(f64::INFINITY));
    if b.has_scale_b {
        // An argument with a tail, not clamped: past the limit the result is +inf whatever
        // the tail; `scaleb` keeps a NaN argument's y NaN.
        let beyond = b.lt(limit, x);
        return b.select(beyond, inf, y);
    }
    // NaN is not inside either: scaled through the bits (targets without `scaleb`), a NaN
    // argument's y is finite garbage, so NaN must come from `x · inf`, not from y.
    let inside = b.le(x, limit);
    let beyond = b.mul(x, inf);
    b.select(inside, y, beyond)
}

/// `m · 2^n` for `m` in [0.5, 2), with `n` the integer in the low bits of `t` (the magic sum)
/// and also the float `n`; `low` when `n` can fall below the normal exponents.
fn scale(b: &mut Builder<'_>, m: V, t: V, n: V, low: bool) -> V {
    let fmt = b.fmt;
    let (adjust, factor) = if low {
        let (k, min) = if fmt.wide() {
            (128, -1019.5)
        } else {
            (64, -123.5)
        };
        let min = b.f(min);
        let tiny = b.lt(n, min);
        let (k_up, minus_one) = (b.f(f64::from(k)), b.f(-1.0));
        let adjust = b.select(tiny, k_up, minus_one);
        let (down, two) = (b.f(2f64.powi(-k)), b.f(2.0));
        (adjust, b.select(tiny, down, two))
    } else {
        (b.f(-1.0), b.f(2.0))
    };
    let t = b.add(t, adjust);
    let shifted = b.bits(t);
    let shifted = b.shl(shifted, i64::from(fmt.mantissa));
    let m_bits = b.bits(m);
    let sum = b.add(m_bits, shifted);
    let scaled = b.float(sum);
    b.mul(scaled, factor)
}
