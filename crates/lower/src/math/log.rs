//! `log`: the natural logarithm.
//!
//! Reduction: `x = m · 2^e` with `m` in `[√½, √2)`, read from the bits (subnormal `x` are
//! first scaled by 2^25 / 2^54): subtracting the bits of `√½` from those of `x` makes the
//! exponent field `e` exactly when `m ≥ √½`, and the mantissa bits plus those of `√½` are
//! `m`'s; the bias is added first so the subtraction never goes negative and a logical shift
//! extracts `e + bias`, which OR-ed into the magic number `1.5 · 2^mantissa` gives `e` as a
//! float. Then `f = m - 1` (exact), `s = f / (2 + f)`, and
//! `log(1 + f) = f - f²/2 + s · (f²/2 + R(s²))` with `R(z) = z · U(z)` the rest of
//! `2 atanh(s) - 2s`, `U` a minimax fit of degree 2 (f32) or 6 (f64) on `z ≤ 0.0295`
//! (`tools/remez.py log`: 0.015 and 0.016 ULP). The terms are combined so that the large ones
//! (`f`, `e · ln2_hi`) enter last, each addition rounding a small correction:
//! `e · ln2_hi + (f - (f²/2 - (s · (f²/2 + R) + e · ln2_lo)))`, the first product inside an FMA.
//!
//! Special values by selects at the end: `log(±0) = -inf`, `log(+inf) = +inf`, and NaN for
//! x < 0 or NaN.

use super::builder::{Builder, V};

const U32: [f64; 3] = [0.6666677594184875, 0.3997754156589508, 0.29871729016304016];
const U64: [f64; 7] = [
    0.6666666666666734,
    0.3999999999941467,
    0.2857142874238908,
    0.22222198573035476,
    0.18183564333941515,
    0.15314050348543337,
    0.1479595178103603,
];
/// `ln 2` split: the nearest float, then the nearest float to the rest.
const LN2_32: [f64; 2] = [0.6931471824645996, -1.9046542121259336e-09];
const LN2_64: [f64; 2] = [std::f64::consts::LN_2, 2.3190468138462996e-17];

/// `ln x`: the `log` op.
pub(super) fn log(b: &mut Builder<'_>, x: V) -> V {
    let (e, m) = exponent_and_mantissa(b, x);
    let one = b.f(1.0);
    let f = b.sub(m, one);
    let two = b.f(2.0);
    let d = b.add(two, f);
    let s = b.div(f, d);
    let z = b.mul(s, s);
    let coefficients: &[f64] = b.pick(&U32, &U64);
    let u = b.poly(z, coefficients);
    let r = b.mul(z, u);
    let half = b.f(0.5);
    let ff = b.mul(f, f);
    let hfsq = b.mul(ff, half);
    let ln2 = b.pick(LN2_32, LN2_64);
    let (hi, lo) = (b.f(ln2[0]), b.f(ln2[1]));
    let t1 = b.add(hfsq, r);
    let elo = b.mul(e, lo);
    let t2 = b.fma(s, t1, elo);
    let t3 = b.sub(hfsq, t2);
    let t4 = b.sub(f, t3);
    let y = b.fma(e, hi, t4);
    // Special values.
    let (inf, zero) = (b.f(f64::INFINITY), b.f(0.0));
    let ninf = b.f(f64::NEG_INFINITY);
    let nan = b.f(f64::NAN);
    let is_inf = b.eq(x, inf);
    let y = b.select(is_inf, inf, y);
    let is_zero = b.eq(x, zero);
    let y = b.select(is_zero, ninf, y);
    let in_domain = b.le(zero, x);
    b.select(in_domain, y, nan)
}

/// `(e, m)` with `x = m · 2^e`, `m` in `[√½, √2)` and `e` as a float, for positive finite
/// `x` (other values give finite garbage, which callers replace).
pub(super) fn exponent_and_mantissa(b: &mut Builder<'_>, x: V) -> (V, V) {
    let fmt = b.fmt;
    let mant = i64::from(fmt.mantissa);
    let (min_normal, k) = if fmt.wide() {
        (f64::MIN_POSITIVE, 54)
    } else {
        (f64::from(f32::MIN_POSITIVE), 25)
    };
    let min = b.f(min_normal);
    let sub = b.lt(x, min);
    let up = b.f(2f64.powi(k));
    let scaled = b.mul(x, up);
    let xs = b.select(sub, scaled, x);
    let (minus_k, zero) = (b.f(-f64::from(k)), b.f(0.0));
    let e_adjust = b.select(sub, minus_k, zero);
    let sqrt_half = fmt.bits(std::f64::consts::FRAC_1_SQRT_2) as i64;
    let ix = b.bits(xs);
    let offset = b.i((fmt.bias << mant) - sqrt_half);
    let u = b.add(ix, offset);
    let biased = b.shr(u, mant);
    let mask = b.i((1i64 << mant) - 1);
    let low = b.and(u, mask);
    let base = b.i(sqrt_half);
    let m_bits = b.add(low, base);
    let m = b.float(m_bits);
    let magic_bits = b.i(fmt.bits(fmt.magic()) as i64);
    let e_bits = b.or(biased, magic_bits);
    let e_magic = b.float(e_bits);
    let unbias = b.f(fmt.magic() + fmt.bias as f64);
    let e = b.sub(e_magic, unbias);
    (b.add(e, e_adjust), m)
}
