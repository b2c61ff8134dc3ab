//! `pow`: [`pow`], the general f32 expansion (f64 keeps calling the import table), and
//! [`pow_by_constant`] for the constant exponents models use most (`Pow(x, 2)`, `Pow(x, 3)` in
//! the tanh form of GELU, `Pow(x, 0.5)`, `Pow(x, -1)`), f32 and f64: products, a square root
//! or a division, cheaper than the general form and as accurate as a correctly rounded `pow`
//! or within a fraction of an ULP of it, with C99's special values for these exponents:
//!
//! - `c = 0`: 1 for every x, NaN included; `c = 1`: x.
//! - `c = 2`: `x · x` and `c = -1`: `1 / x`, each rounded once: correctly rounded.
//! - `c = 0.5`: `sqrt(x) + 0` (so `pow(-0, 0.5) = +0`), and `+inf` for `x = -inf`:
//!   correctly rounded.
//! - `c = 3` and `c = 4`: `x² = h + l` exactly (`l = fma(x, x, -h)`), then `h · x + l · x` or
//!   `h · h + 2 · h · l`, the sum rounded once: the nearest float but for a rare case within
//!   2^-46 (f32) / 2^-104 (f64) relative of a midpoint, while the correction term is a normal
//!   number (results above about 2^-100 (f32) / 2^-968 (f64); below, its own rounding may
//!   cost an ULP), and ±inf where the nearest result overflows; where the correction term is
//!   not finite (a result far past the largest float, x = ±inf, NaN) the plain product
//!   `h · x` / `h · h` is the result, which is then ±inf or NaN as `pow` gives.

use super::builder::{Builder, V};

/// Whether `pow(x, c)` has an expansion here.
pub(super) fn supports(c: f64) -> bool {
    [0.0, 1.0, 2.0, 3.0, 4.0, 0.5, -1.0].contains(&c)
}

/// The expansion of `pow(x, c)`, if `c` is one of the exponents above.
pub(super) fn pow_by_constant(b: &mut Builder<'_>, x: V, c: f64) -> Option<V> {
    Some(match c {
        0.0 => b.f(1.0),
        1.0 => x,
        2.0 => b.mul(x, x),
        -1.0 => {
            let one = b.f(1.0);
            b.div(one, x)
        }
        0.5 => {
            let root = b.sqrt(x);
            let zero = b.f(0.0);
            let root = b.add(root, zero);
            let ninf = b.f(f64::NEG_INFINITY);
            let minus_inf = b.eq(x, ninf);
            let inf = b.f(f64::INFINITY);
            b.select(minus_inf, inf, root)
        }
        3.0 | 4.0 => {
            let h = b.mul(x, x);
            let minus_h = b.neg(h);
            let l = b.fma(x, x, minus_h);
            // The correction `l · x` (`2 · h · l`) is far below the result, so it is finite
            // whenever the result is, and then one rounding of the exact sum gives the right
            // result, ±inf past the threshold included; where it is not (x⁴ or x³ far past
            // the largest float, x = ±inf, NaN), the plain product is ±inf or NaN as it should.
            let (correction, lead) = if c == 3.0 {
                (b.mul(l, x), x)
            } else {
                let two_h = b.add(h, h);
                (b.mul(two_h, l), h)
            };
            let compensated = b.fma(h, lead, correction);
            let plain = b.mul(h, lead);
            let inf = b.f(f64::INFINITY);
            let magnitude = b.abs(correction);
            let finite = b.lt(magnitude, inf);
            b.select(finite, compensated, plain)
        }
        _ => return None,
    })
}

/// `ln 2` in two parts for `e · ln 2` with `|e| ≤ 256`: 15 significant bits, so the product
/// with the exponent is exact, then the nearest float to the rest.
const LN2_SHORT: [f64; 2] = [0.693145751953125, 1.4286068203094173e-06];
/// `2/3` as the nearest float and the nearest float to the rest.
const TWO_THIRDS: [f64; 2] = [0.6666666865348816, -1.9868215517249155e-08];
/// `2 / (2k + 1)` for k = 2..=6: the rest of `2 atanh(s) = 2s + s³ (2/3 + s² Q(s²))`.
const ATANH_REST: [f64; 5] = [
    0.4,
    0.2857142857142857,
    0.2222222222222222,
    0.18181818181818182,
    0.15384615384615385,
];

/// `x^y` for f32 (`None` for f64, which keeps calling the import table): `|x|^y` as
/// `e^(y · ln|x|)` with `ln|x|` and the product carried as double-words, so the exponential's
/// argument is accurate to about 2^-34 relative (0.08 ULP of the result at most, where the
/// argument nears ±104) and the exponential rounds its result once, as `exp`'s does; then the
/// sign for a negative `x` and an integer `y`, and C99's special cases by selects.
///
/// `ln|x|`: `|x| = m · 2^e` with `m` in `[√½, √2)` (`log.rs`), `f = m - 1` exact, and
/// `ln m = 2 atanh(s)` with `s = f / (2 + f)` as a double-word (`2 + f` is a double-word
/// too, by Fast2Sum), `2 atanh(s) = 2s + s³ (2/3 + s² Q(s²))` with `s²`, `s³` and the sum
/// with `2/3` carried as double-words (`|s| ≤ 0.1716`, so the Taylor terms to `s^13` leave
/// under 2^-34); `e · ln 2` with `ln 2` in a 15-bit and a float part, the first product
/// exact.
pub(super) fn pow(b: &mut Builder<'_>, x: V, y: V) -> Option<V> {
    if b.fmt.wide() {
        return None;
    }
    let a = b.abs(x);
    let (s_hi, s_lo, e) = half_log_ratio(b, a);
    let s = Dw { hi: s_hi, lo: s_lo };
    // s² and s³ as double-words.
    let s2 = mul(b, s, s);
    let s3 = mul(b, s2, s);
    // c = 2/3 + s² Q(s²) as a double-word (the 2/3 dominates).
    let q = b.poly(s2.hi, &ATANH_REST);
    let t = b.mul(s2.hi, q);
    let two_thirds = Dw {
        hi: b.f(TWO_THIRDS[0]),
        lo: b.f(TWO_THIRDS[1]),
    };
    let c = add_dominated(b, two_thirds, t);
    // ln m = 2s + s³ c (|2s| ≥ |s³ c|).
    let tail = mul(b, s3, c);
    let two_s = Dw {
        hi: b.add(s.hi, s.hi),
        lo: b.add(s.lo, s.lo),
    };
    let ln_m = add_dominated(b, two_s, tail.hi);
    let ln_m = Dw {
        hi: ln_m.hi,
        lo: b.add(ln_m.lo, tail.lo),
    };
    // + e · ln 2: e · ln2_hi is exact, and |e ln 2| ≥ 0.69 > |ln m| unless e = 0, when the
    // sum is exact anyway.
    let (ln2_hi, ln2_lo) = (b.f(LN2_SHORT[0]), b.f(LN2_SHORT[1]));
    let e_ln2 = Dw {
        hi: b.mul(e, ln2_hi),
        lo: b.mul(e, ln2_lo),
    };
    let sum = add_dominated(b, e_ln2, ln_m.hi);
    let ln_lo = b.add(sum.lo, ln_m.lo);
    let ln_x = Dw {
        hi: sum.hi,
        lo: ln_lo,
    };
    // y · ln|x| as a double-word, then its exponential.
    let zero = b.f(0.0);
    let l = mul(b, Dw { hi: y, lo: zero }, ln_x);
    let reach = super::exp::Reach {
        low: true,
        high: true,
    };
    let magnitude = super::exp::exp_of_sum(b, l.hi, Some(l.lo), reach);
    Some(special_cases(b, x, y, a, magnitude))
}

/// A double-word: the value `hi + lo`, `lo` small next to `hi` (a few ULPs of it at most;
/// for `ln|x|` with `e ≠ 0`, `e · ln2_lo` makes it up to about 2^-19 of `hi`).
#[derive(Clone, Copy)]
struct Dw {
    hi: V,
    lo: V,
}

/// `a · c` as a double-word: the leading product's rounding error exactly (an FMA), plus the
/// cross terms; the product of the low parts is below the precision kept.
fn mul(b: &mut Builder<'_>, a: Dw, c: Dw) -> Dw {
    let hi = b.mul(a.hi, c.hi);
    let minus = b.neg(hi);
    let err = b.fma(a.hi, c.hi, minus);
    let err = b.fma(a.hi, c.lo, err);
    let lo = b.fma(a.lo, c.hi, err);
    Dw { hi, lo }
}

/// `a + t` as a double-word for `|a.hi| ≥ |t|` (or `a.hi = 0`): Fast2Sum's exact rounding
/// error of `a.hi + t`, plus `a.lo`.
fn add_dominated(b: &mut Builder<'_>, a: Dw, t: V) -> Dw {
    let hi = b.add(a.hi, t);
    let err = b.sub(a.hi, hi);
    let err = b.add(err, t);
    let lo = b.add(err, a.lo);
    Dw { hi, lo }
}

/// `(s_hi, s_lo, e)`: `|x| = m · 2^e` and `s = (m - 1) / (m + 1)` as the double-word
/// `s_hi + s_lo`.
fn half_log_ratio(b: &mut Builder<'_>, a: V) -> (V, V, V) {
    let (e, m) = super::log::exponent_and_mantissa(b, a);
    let (one, two) = (b.f(1.0), b.f(2.0));
    let f = b.sub(m, one);
    // 2 + f = d + d_lo exactly (Fast2Sum; d - 2 is exact by Sterbenz).
    let d = b.add(two, f);
    let d_less_two = b.sub(d, two);
    let d_lo = b.sub(f, d_less_two);
    let s_hi = b.div(f, d);
    // f - s_hi · (d + d_lo), the first product inside an FMA, divided by d.
    let minus_s = b.neg(s_hi);
    let rest = b.fma(minus_s, d, f);
    let rest = b.fma(minus_s, d_lo, rest);
    let s_lo = b.div(rest, d);
    (s_hi, s_lo, e)
}

/// C99's `pow` around `magnitude = |x|^y` (finite garbage where x is ±0, ±inf or NaN): the
/// sign for a negative `x`, NaN for a negative `x` and a non-integer `y`, `y = ±inf`, `x = ±0`
/// or `±inf`, NaN operands, and 1 for `y = ±0` or `x = 1` whatever the other operand. Only
/// selects of float values (no boolean arithmetic), which every vector path has.
fn special_cases(b: &mut Builder<'_>, x: V, y: V, a: V, magnitude: V) -> V {
    let (zero, one) = (b.f(0.0), b.f(1.0));
    let (inf, nan) = (b.f(f64::INFINITY), b.f(f64::NAN));
    // Whether y is an integer, and an odd one: below 2^23, adding 2^23 rounds |y| to an
    // integer whose parity is the sum's last bit (`exact` when that integer is |y|); from
    // 2^23 on every float is an integer, odd only below 2^24 with its last bit set.
    let ay = b.abs(y);
    let two23 = b.f(8_388_608.0);
    let small = b.lt(ay, two23);
    let v = b.add(ay, two23);
    let back = b.sub(v, two23);
    let exact = b.eq(back, ay);
    let parity_of = b.select(small, v, ay);
    let bits = b.bits(parity_of);
    let low = b.i(1);
    let last = b.and(bits, low);
    let odd_bit = b.eq(last, low);
    let two24 = b.f(16_777_216.0);
    let below = b.lt(ay, two24);
    // `when_odd ? odd_value : even_value` for an integer y, `other` for a non-integer one.
    let by_parity = |b: &mut Builder<'_>, odd_value: V, even_value: V, other: V| {
        let t = b.select(odd_bit, odd_value, even_value);
        let t = b.select(below, t, even_value);
        let small_case = b.select(exact, t, other);
        b.select(small, small_case, t)
    };
    // Negative x: the sign of an odd power, NaN for a non-integer y.
    let negative = b.lt(x, zero);
    let flipped = b.neg(magnitude);
    let signed = by_parity(b, flipped, magnitude, nan);
    let r = b.select(negative, signed, magnitude);
    // y = ±inf: 0, 1 or inf from the sign of (|x| - 1) · sign(y).
    let am1 = b.sub(a, one);
    let y_negative = b.lt(y, zero);
    let flipped_am1 = b.neg(am1);
    let efx = b.select(y_negative, flipped_am1, am1);
    let efx_negative = b.lt(efx, zero);
    let efx_zero = b.eq(efx, zero);
    let big = b.select(efx_zero, one, inf);
    let at_inf_y = b.select(efx_negative, zero, big);
    let y_inf = b.eq(ay, inf);
    let r = b.select(y_inf, at_inf_y, r);
    // x = ±0 or ±inf: 0 or inf as the sign of y (flipped for a zero x), with x's sign for an
    // odd y.
    let x_zero = b.eq(a, zero);
    let x_inf = b.eq(a, inf);
    let minus_y = b.neg(y);
    let toward = b.select(x_zero, minus_y, y);
    let vanishes = b.lt(toward, zero);
    let edge = b.select(vanishes, zero, inf);
    let with_sign = b.with_sign_of(edge, x);
    let edge = by_parity(b, with_sign, edge, edge);
    let at_edge = b.select(x_inf, edge, r);
    let r = b.select(x_zero, edge, at_edge);
    // NaN operands, then the two cases that are 1 whatever the other operand is.
    let x_nan = b.ne(x, x);
    let y_nan = b.ne(y, y);
    let r = b.select(x_nan, nan, r);
    let r = b.select(y_nan, nan, r);
    let y_zero = b.eq(y, zero);
    let x_one = b.eq(x, one);
    let r = b.select(y_zero, one, r);
    b.select(x_one, one, r)
}
