//! `tanh` and `sigmoid`: f64 `tanh` and `sigmoid` from the exponential core (`exp.rs`), f32
//! `tanh` from its own `expm1` (with `exp.rs`'s reduction constants).
//!
//! `tanh` in f32: one form for every input. With `a = min(|x|, 9.1)` (beyond 9.1 tanh rounds
//! to ±1, and the clamped form gives exactly that, so `tanh(±inf) = ±1`) and `p = e^(-2a)`,
//! `tanh a = (1 - p) / (1 + p)`. `p = 2^n (1 + m)` with `n = round(-2a log2 e)` and
//! `m = expm1(-2s)`, `s = a + n ln2_hi / 2` (exact: the halved constant is a float and the FMA
//! does not round its product; `|s| ≤ ln2 / 4`). `m = -2s + s² Q(s)`, `Q` the expm1 fit of
//! `tools/remez.py expm1` (degree 4, relative error 0.28 ULP) in the variable `-2s`, its
//! coefficients scaled by exact powers of two. Both sides of the quotient are then
//! `(1 ∓ 2^n) ∓ 2^n m`, one FMA each, rounding once, and near 0 (`n = 0`) they are `-m` and
//! `2 + m` with no cancellation, so one form keeps the relative accuracy everywhere. The error
//! is that of the numerator, the denominator and the quotient, each rounded once, plus, where
//! `n ≠ 0`, `m`'s own (the fit's 0.28 ULP and its evaluation), and, for `n ≤ -24` (`|x|` from
//! 8.14 on), the rounding of `1 ∓ 2^n` itself: there the denominator is 1 whatever `m` is.
//! Measured exhaustively, the result is at most 2 ULP from the correctly rounded one (1.93
//! ULP from the exact value at most, near 0.52, where the numerator rounds in a binade above
//! the result's; up to 1.83 where `n = -24`). `ln 2`'s low part is left out, which moves `p`
//! by a relative `n · 1.9e-9`, reaching the result scaled by `2p / (1 - p²)`, below 0.05 ULP.
//! NaN stays NaN through every step, and the sign comes from `x`'s bit at the end, so `±0`
//! stays `±0`.
//!
//! `tanh` in f64: for `|x| <` 0.55, the odd polynomial `x + x³ · P(x²)` (`P` of degree 10, a
//! minimax fit for relative error: `tools/remez.py tanh`, 0.02 ULP); from there on,
//! `1 - 2 / (e^(2|x|) + 1)` with the sign of `x`, where `tanh > 0.5` so the subtraction loses
//! nothing and the quotient's error reaches the result at most halved. `|x|` is clamped at 20
//! first. The branch is a select on `split ≤ |x|`, false for NaN, so NaN takes the polynomial
//! and stays NaN. Both forms are computed on `|x|` and given `x`'s sign bit at the end.
//!
//! `sigmoid`: with `e = e^-|x|` (which never overflows), `1 / (1 + e)` for `x ≥ 0` and
//! `e / (1 + e)` for `x < 0`: as `accy_math::sigmoid_f64` does, the quotient is corrected for
//! the rounding of both the addition (whose exact error `t = e - (s - 1)` is known) and the
//! division: `y0 = n · (1/s)`, `r = (n - y0 · s) - y0 · t` (the first product inside an FMA),
//! `y = y0 + r · (1/s)`. What remains is the exponential's error, reaching the result scaled
//! by `1/(1 + e) ≤ 1`, and one rounding. Far below 0 the result is `e` itself, subnormal as
//! the true value is; NaN is passed through by a select.

use super::builder::{Builder, V};
use super::exp::{exp_reaching, Reach, LN2_32, LOG2E};

/// `expm1(y) ≈ y + y² P(y)` for f32 on `|y| ≤ ln2 / 2` (`tools/remez.py expm1`, degree 4).
const EXPM1_P32: [f64; 5] = [
    0.4999999701976776,
    0.1666654348373413,
    0.04166720062494278,
    0.00836651399731636,
    0.0013882522471249104,
];
/// f64's `x + x³ P(x²)` near 0 (`tools/remez.py tanh`, degree 10).
const P64: [f64; 11] = [
    -0.333333333333333,
    0.13333333333326622,
    -0.053968253963760524,
    0.0218694883858539,
    -0.008863232601416079,
    0.0035920920302298016,
    -0.0014555428446698724,
    0.000588444482593557,
    -0.00023338155790096534,
    8.331643906786185e-05,
    -1.9494683554005723e-05,
];
/// Where f64's polynomial hands over to the exponential form.
const SPLIT_64: f64 = 0.55;
/// Beyond this `|x|`, f32 tanh rounds to ±1.
const SATURATE_32: f64 = 9.1;
/// Beyond this `|x|`, f64 tanh rounds to ±1.
const SATURATE_64: f64 = 20.0;
/// `log2 e` in f32.
const LOG2E_32: f64 = LOG2E[0];
/// `ln 2`'s high part in f32 (exact when halved, and in products with small integers).
const LN2_HI_32: f64 = LN2_32[0];

/// `tanh x`: the `tanh` op.
pub(super) fn tanh(b: &mut Builder<'_>, x: V) -> V {
    if !b.fmt.wide() {
        return tanh_f32(b, x);
    }
    // tanh |x|, then x's sign bit: every step is symmetric in the sign (round to nearest is),
    // so this is bit for bit what the same steps on x itself give, in fewer operations; ±0
    // keeps its sign.
    let a = b.abs(x);
    // Near 0: a + a^3 P(a^2) (≥ +0: the fma's sum at a = 0 is -0 + +0 = +0).
    let z = b.mul(a, a);
    let p = b.poly(z, &P64);
    let a3 = b.mul(a, z);
    let near = b.fma(a3, p, a);
    // Elsewhere: 1 - 2 / (e^(2|x|) + 1).
    let limit = b.f(SATURATE_64);
    let over = b.lt(limit, a);
    let clamped = b.select(over, limit, a);
    // e^(2|x|) by the general exponential (2|x| is exact).
    let two_a = b.add(clamped, clamped);
    let inside = Reach {
        low: false,
        high: false,
    };
    let e = exp_reaching(b, two_a, inside);
    let (one, two) = (b.f(1.0), b.f(2.0));
    let d = b.add(e, one);
    let q = b.div(two, d);
    let far = b.sub(one, q);
    let split = b.f(SPLIT_64);
    let is_far = b.le(split, a);
    let magnitude = b.select(is_far, far, near);
    b.with_sign_of(magnitude, x)
}

/// f32 `tanh` in one form for every input: `(1 - p) / (1 + p)` with `p = e^(-2|x|)`, both
/// sides from one `expm1` (see the module doc).
fn tanh_f32(b: &mut Builder<'_>, x: V) -> V {
    let a = b.abs(x);
    let limit = b.f(SATURATE_32);
    let over = b.lt(limit, a);
    let a = b.select(over, limit, a);
    // -2a = n ln2 - 2s: n = round(-2a log2 e) by the magic sum, s = a + n ln2_hi / 2 exactly
    // (the halved constant is a float and the FMA's product is not rounded), |s| ≤ ln2 / 4.
    let (minus_two_log2e, magic) = (b.f(-2.0 * LOG2E_32), b.f(b.fmt.magic()));
    let t = b.fma(a, minus_two_log2e, magic);
    let n = b.sub(t, magic);
    let half_ln2 = b.f(LN2_HI_32 / 2.0);
    let s = b.fma(n, half_ln2, a);
    // m = expm1(-2s) = -2s + s² Q(s): Q(s) = 4 P(-2s), exact power-of-two multiples of P's.
    let q: [f64; EXPM1_P32.len()] =
        std::array::from_fn(|k| EXPM1_P32[k] * 4.0 * (-2f64).powi(k as i32));
    let q = b.poly(s, &q);
    let s2 = b.mul(s, s);
    let minus_two = b.f(-2.0);
    let minus_two_s = b.mul(s, minus_two);
    let m = b.fma(s2, q, minus_two_s);
    // p = 2^n (1 + m), so 1 ∓ p = (1 ∓ 2^n) ∓ 2^n m, each one FMA rounding once.
    let (plus, minus) = powers_of_two(b, t, n);
    let one = b.f(1.0);
    let one_minus = b.add(one, minus);
    let one_plus = b.add(one, plus);
    let numerator = b.fma(m, minus, one_minus);
    let denominator = b.fma(m, plus, one_plus);
    let magnitude = b.div(numerator, denominator);
    b.with_sign_of(magnitude, x)
}

/// `2^n` and `-2^n` for an integer `n` in [-26, 0], `t` the magic sum that holds `n` in its
/// low bits: by `scaleb` where the target has it, else `n` shifted into the exponent field of
/// ±1.
fn powers_of_two(b: &mut Builder<'_>, t: V, n: V) -> (V, V) {
    if b.has_scale_b {
        let (one, minus_one) = (b.f(1.0), b.f(-1.0));
        return (b.scale_b(one, n), b.scale_b(minus_one, n));
    }
    let t_bits = b.bits(t);
    let exponent = b.shl(t_bits, i64::from(b.fmt.mantissa));
    let (one, minus_one) = (b.fmt.bits(1.0) as i64, b.fmt.bits(-1.0) as i64);
    let (one_bits, minus_one_bits) = (b.i(one), b.i(minus_one));
    let plus = b.add(exponent, one_bits);
    let minus = b.add(exponent, minus_one_bits);
    (b.float(plus), b.float(minus))
}

/// The logistic function `1 / (1 + e^-x)`: the `sigmoid` op.
pub(super) fn sigmoid(b: &mut Builder<'_>, x: V) -> V {
    let a = b.abs(x);
    let minus_a = b.neg(a);
    let e = exp_reaching(
        b,
        minus_a,
        Reach {
            low: true,
            high: false,
        },
    );
    let (one, zero) = (b.f(1.0), b.f(0.0));
    let negative = b.lt(x, zero);
    let n = b.select(negative, e, one);
    let s = b.add(one, e);
    let s1 = b.sub(s, one);
    let t = b.sub(e, s1);
    let inv = b.div(one, s);
    let y0 = b.mul(n, inv);
    let minus_y0 = b.neg(y0);
    let r = b.fma(minus_y0, s, n);
    let y0t = b.mul(y0, t);
    let r = b.sub(r, y0t);
    let y = b.fma(r, inv, y0);
    if b.has_scale_b {
        // A NaN argument is NaN through every step: the exponential takes it unclamped
        // (`high: false`, and the underflow test is false for it) and `scaleb` returns it.
        return y;
    }
    // Scaled through the exponent bits, a NaN argument's exponential is finite garbage.
    let nan = b.ne(x, x);
    b.select(nan, x, y)
}
