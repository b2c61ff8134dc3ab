//! `tanh` and `sigmoid`, both from the exponential core (`exp.rs`).
//!
//! `tanh`: for `|x| <` 0.65 (f32) or 0.55 (f64), the odd polynomial `x + x³ · P(x²)` (`P`
//! of degree 4 or 10, a minimax fit for relative error: `tools/remez.py tanh`, 0.12 and
//! 0.02 ULP); from there on, `1 - 2 / (e^(2|x|) + 1)` with the sign of `x`, where
//! `tanh > 0.5` so the subtraction loses nothing and the quotient's error reaches the result
//! at most halved. In f32 the exponential is `exp.rs`'s `exp_of_double`, three operations
//! cheaper than `exp` of `2|x|` and a little less accurate; the f32 split sits at 0.65
//! rather than 0.55 so that the quotient, smaller there against the result, damps that
//! error enough to keep the maximum at 1 ULP (at 0.55 it reached 2). f64 keeps the
//! general exponential (the cheaper one reached 2 ULP there).
//! `|x|` is clamped at 9.1 (f32) / 20 (f64) first, beyond which tanh rounds to ±1 and the
//! clamped formula gives exactly that (so `tanh(±inf) = ±1`). The branch is a select on
//! `split ≤ |x|`, false for NaN, so NaN takes the polynomial and stays NaN. Both forms are
//! computed on `|x|` and given `x`'s sign bit at the end (so `±0` stays `±0`).
//!
//! `sigmoid`: with `e = e^-|x|` (which never overflows), `1 / (1 + e)` for `x ≥ 0` and
//! `e / (1 + e)` for `x < 0`: as `accy_math::sigmoid_f64` does, the quotient is corrected for
//! the rounding of both the addition (whose exact error `t = e - (s - 1)` is known) and the
//! division: `y0 = n · (1/s)`, `r = (n - y0 · s) - y0 · t` (the first product inside an FMA),
//! `y = y0 + r · (1/s)`. What remains is the exponential's error, reaching the result scaled
//! by `1/(1 + e) ≤ 1`, and one rounding. Far below 0 the result is `e` itself, subnormal as
//! the true value is; NaN is passed through by a select.

use super::builder::{Builder, V};
use super::exp::{exp_of_double, exp_reaching, Reach};

const P32: [f64; 5] = [
    -0.3333325982093811,
    0.1333083063364029,
    -0.05368802323937416,
    0.02046941965818405,
    -0.005515164230018854,
];
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
/// Where the polynomial hands over to the exponential form (f32, f64).
const SPLIT: [f64; 2] = [0.65, 0.55];
/// Beyond this `|x|`, tanh rounds to ±1 (f32, f64).
const SATURATE: [f64; 2] = [9.1, 20.0];

/// `tanh x`: the `tanh` op.
pub(super) fn tanh(b: &mut Builder<'_>, x: V) -> V {
    // tanh |x|, then x's sign bit: every step is symmetric in the sign (round to nearest is),
    // so this is bit for bit what the same steps on x itself give, in fewer operations; ±0
    // keeps its sign.
    let a = b.abs(x);
    // Near 0: a + a^3 P(a^2) (≥ +0: the fma's sum at a = 0 is -0 + +0 = +0).
    let z = b.mul(a, a);
    let coefficients: &[f64] = b.pick(&P32, &P64);
    let p = b.poly(z, coefficients);
    let a3 = b.mul(a, z);
    let near = b.fma(a3, p, a);
    // Elsewhere: 1 - 2 / (e^(2|x|) + 1).
    let limit = b.f(SATURATE[usize::from(b.fmt.wide())]);
    let over = b.lt(limit, a);
    let clamped = b.select(over, limit, a);
    let e = if b.fmt.wide() {
        // The cheaper form's rounding would reach 2 ULP in f64 (at 0.56, say), and f64
        // has no spare split to move to as f32 did.
        let two_a = b.add(clamped, clamped);
        let inside = Reach {
            low: false,
            high: false,
        };
        exp_reaching(b, two_a, inside)
    } else {
        exp_of_double(b, clamped)
    };
    let (one, two) = (b.f(1.0), b.f(2.0));
    let d = b.add(e, one);
    let q = b.div(two, d);
    let far = b.sub(one, q);
    let split = b.f(SPLIT[usize::from(b.fmt.wide())]);
    let is_far = b.le(split, a);
    let magnitude = b.select(is_far, far, near);
    b.with_sign_of(magnitude, x)
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
    let nan = b.ne(x, x);
    b.select(nan, x, y)
}
