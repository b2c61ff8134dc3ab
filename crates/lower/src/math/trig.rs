//! `sin` and `cos`.
//!
//! Reduction: `n = round(x · 2/π)` by the magic-number trick (its low bits are the quadrant),
//! then `r = x - n · π/2` by three FMAs with `π/2` split in three (the first is exact, as in
//! `exp.rs`; the three parts carry 72 (f32) / 159 (f64) bits, enough for the cancellation of
//! every argument up to the limit below), so `|r| ≤ π/4`. Polynomials on `|r| ≤ π/4`:
//! `sin r = r + r³ · S(r²)` and `cos r = 1 + r² · (-1/2 + r² · C(r²))`, `S` and `C` minimax
//! fits of degree 2 (f32) or 5 (f64) for relative error (`tools/remez.py trig`). The quadrant
//! `q = n mod 4` (`n + 1` for cos) picks `cos r` over `sin r` when odd and flips the sign
//! bit when `q & 2`: `sin x = (sin r, cos r, -sin r, -cos r)[q]`.
//!
//! Range: the reduction is accurate while `|x · 2/π| < 2^22` (f32) / `2^51` (f64), which the
//! magic trick needs; `docs/accuracy.md` gives the measured error up to there. Beyond that
//! (`|x| > 6.5e6` f32, `3.5e15` f64) the result is NaN rather than a silently wrong number.
//! `sin(±0) = ±0`, `sin(±inf) = cos(±inf) = NaN`, NaN stays NaN.

use super::builder::{Builder, V};

const S32: [f64; 3] = [
    -0.16666655242443085,
    0.00833216030150652,
    -0.00019515282474458218,
];
const C32: [f64; 3] = [
    0.04166664555668831,
    -0.0013887316454201937,
    2.44331567955669e-05,
];
const S64: [f64; 6] = [
    -0.1666666666666663,
    0.008333333333322118,
    -0.00019841269829589498,
    2.755731362137093e-06,
    -2.5050747760434995e-08,
    1.5896230011522176e-10,
];
const C64: [f64; 6] = [
    0.041666666666666595,
    -0.0013888888888873056,
    2.480158728885167e-05,
    -2.755731417928639e-07,
    2.087570084050479e-09,
    -1.1358536442131931e-11,
];
/// `π/2` in three parts (each the nearest float to what the previous ones leave).
const PI_2_32: [f64; 3] = [
    1.5707963705062866,
    -4.371138828673793e-08,
    -1.7151245100058819e-15,
];
const PI_2_64: [f64; 3] = [
    std::f64::consts::FRAC_PI_2,
    6.123233995736766e-17,
    -1.4973849048591698e-33,
];
/// `2/π` in each format.
const TWO_PI: [f64; 2] = [0.6366197466850281, std::f64::consts::FRAC_2_PI];

/// `sin x`: the `sin` op.
pub(super) fn sin(b: &mut Builder<'_>, x: V) -> V {
    sin_or_cos(b, x, 0)
}

/// `cos x`: the `cos` op (`sin` a quadrant on).
pub(super) fn cos(b: &mut Builder<'_>, x: V) -> V {
    sin_or_cos(b, x, 1)
}

fn sin_or_cos(b: &mut Builder<'_>, x: V, quadrant: i64) -> V {
    let fmt = b.fmt;
    let w = usize::from(fmt.wide());
    let (two_pi, magic) = (b.f(TWO_PI[w]), b.f(fmt.magic()));
    let t = b.fma(x, two_pi, magic);
    let n = b.sub(t, magic);
    let parts = b.pick(PI_2_32, PI_2_64);
    let mut r = x;
    for p in parts {
        let minus_p = b.f(-p);
        r = b.fma(n, minus_p, r);
    }
    let z = b.mul(r, r);
    let (s_coefficients, c_coefficients): (&[f64], &[f64]) = b.pick((&S32, &C32), (&S64, &C64));
    let s = b.poly(z, s_coefficients);
    let r3 = b.mul(r, z);
    let sine = b.fma(r3, s, r);
    let c = b.poly(z, c_coefficients);
    let minus_half = b.f(-0.5);
    let c = b.fma(z, c, minus_half);
    let one = b.f(1.0);
    let cosine = b.fma(z, c, one);
    let q = b.bits(t);
    let q = if quadrant == 0 {
        q
    } else {
        let k = b.i(quadrant);
        b.add(q, k)
    };
    let (bit0, zero) = (b.i(1), b.i(0));
    let odd = b.and(q, bit0);
    let odd = b.ne(odd, zero);
    let y = b.select(odd, cosine, sine);
    let bit1 = b.i(2);
    let sign = b.and(q, bit1);
    let sign = b.shl(sign, if fmt.wide() { 62 } else { 30 });
    let y_bits = b.bits(y);
    let y_bits = b.xor(y_bits, sign);
    let mut y = b.float(y_bits);
    // ±0: the polynomial's sum turns -0 into +0, but sin keeps the sign (cos(±0) = 1 comes
    // out of the polynomial already).
    if quadrant == 0 {
        let zero = b.f(0.0);
        let is_zero = b.eq(x, zero);
        y = b.select(is_zero, x, y);
    }
    // Past the reach of the reduction: NaN (see the module doc).
    let limit = b.f(if fmt.wide() {
        2f64.powi(51)
    } else {
        2f64.powi(22)
    } * 1.5);
    let a = b.abs(x);
    let inside = b.le(a, limit);
    let nan = b.f(f64::NAN);
    b.select(inside, y, nan)
}
