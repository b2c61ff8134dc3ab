//! `erf`, the error function.
//!
//! For `|x| < 1`: `erf x = x · (2/√π + x² · Q(x²))`, `Q` a minimax fit for relative error of
//! degree 5 (f32) or 11 (f64) (`tools/remez.py erf`), the constant `2/√π` kept in two parts
//! so that its rounding adds no relative error: `x · c0_hi + x · (c0_lo + x² · Q(x²))`.
//!
//! For `|x| ≥ 1`: `erf |x| = 1 - erfc |x|`, `erfc x = e^(-x²) · G(t)` with `t = 1 / (1 + x/2)`
//! and `G` a minimax fit of `erfcx` in `t` for relative error, degree 6 (f32) or 16 (f64) on
//! `1 ≤ x ≤ 4` (f32) / `6` (f64), beyond which erf rounds to ±1 (the argument is clamped
//! there, so `erf(±inf) = ±1`). `x²` is split exactly into `hi + lo` (one FMA) and
//! `e^(-x²) = e^(-hi) · (1 - lo)`, so the square's rounding does not reach the exponential.
//! `erfc` is at most 0.16 here, so its relative error reaches `erf` scaled down by 0.19 at
//! least. Both forms are computed on `|x|` and given `x`'s sign bit last (so `±0` stays `±0`);
//! the branch is a select on `1 ≤ |x|`, false for NaN, which so stays NaN.

use super::builder::{Builder, V};
use super::exp::{exp_reaching, Reach};

/// `2/√π` in two parts.
const C0_32: [f64; 2] = [1.128379225730896, -5.8635382771399236e-08];
const C0_64: [f64; 2] = [std::f64::consts::FRAC_2_SQRT_PI, 1.533545961316588e-17];
/// The rest of `P` for f32: `P(z) = c0 + z Q(z)`.
const Q32: [f64; 6] = [
    -0.3761262893676758,
    0.11283617466688156,
    -0.02685491554439068,
    0.00519016245380044,
    -0.0008024818380363286,
    7.89869372965768e-05,
];
/// The rest of `P` for f64.
const Q64: [f64; 12] = [
    -0.3761263890318375,
    0.11283791670954908,
    -0.026866170645080147,
    0.005223977624838838,
    -0.000854832698160087,
    0.00012055331128911202,
    -1.4925595496758506e-05,
    1.6461001959801835e-06,
    -1.635031038860676e-07,
    1.4659665396813389e-08,
    -1.1372135031747847e-09,
    5.955576255741292e-11,
];
const G32: [f64; 7] = [
    0.0005366027471609414,
    0.2745126187801361,
    0.32612255215644836,
    0.11438235640525818,
    0.38357704877853394,
    -0.040836531668901443,
    -0.05907789617776871,
];
/// `G` for f64: `erfcx(x) ≈ G(1 / (1 + x/2))` on `1 ≤ x ≤ 6` (degree 16).
const G64: [f64; 17] = [
    8.091022208341185e-09,
    0.2820945203221112,
    0.2820985914055978,
    0.24680782544624696,
    0.1763186361342435,
    0.0851220299837048,
    -0.018633878637429584,
    0.027756148661283384,
    -0.40213025349748704,
    1.0531936285978907,
    -2.3418694383544514,
    4.062348265501642,
    -4.831160338102488,
    3.813091007193413,
    -1.9347856129222745,
    0.5774273615566422,
    -0.07767945604630455,
];
/// Where erf rounds to ±1 (the clamp).
const SATURATE: [f64; 2] = [4.0, 6.0];

/// `erf x`: the `erf` op.
pub(super) fn erf(b: &mut Builder<'_>, x: V) -> V {
    // erf |x|, then x's sign bit: every step is symmetric in the sign (round to nearest is),
    // so this is bit for bit what the same steps on x give, in fewer operations; ±0 keeps its
    // sign.
    let w = usize::from(b.fmt.wide());
    let a = b.abs(x);
    // |x| < 1 (≥ +0: at a = 0 the sum is +0 + +0).
    let z = b.mul(a, a);
    let (q, c0): (&[f64], [f64; 2]) = b.pick((&Q32, C0_32), (&Q64, C0_64));
    let q = b.poly(z, q);
    let (hi, lo) = (b.f(c0[0]), b.f(c0[1]));
    let inner = b.fma(z, q, lo);
    let ai = b.mul(a, inner);
    let near = b.fma(a, hi, ai);
    // |x| >= 1.
    let limit = b.f(SATURATE[w]);
    let over = b.lt(limit, a);
    let a = b.select(over, limit, a);
    let (one, half) = (b.f(1.0), b.f(0.5));
    let d = b.fma(a, half, one);
    let t = b.div(one, d);
    let g: &[f64] = b.pick(&G32, &G64);
    let g = b.poly(t, g);
    let sq = b.mul(a, a);
    let minus_sq = b.neg(sq);
    let sq_lo = b.fma(a, a, minus_sq);
    let e = exp_reaching(
        b,
        minus_sq,
        Reach {
            low: false,
            high: false,
        },
    );
    let minus_e = b.neg(e);
    let e = b.fma(minus_e, sq_lo, e);
    let erfc = b.mul(e, g);
    let far = b.sub(one, erfc);
    let is_far = b.le(one, a);
    let magnitude = b.select(is_far, far, near);
    b.with_sign_of(magnitude, x)
}
