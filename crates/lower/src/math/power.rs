//! `pow(x, c)` for the constant exponents models use most (`Pow(x, 2)`, `Pow(x, 3)` in the
//! tanh form of GELU, `Pow(x, 0.5)`, `Pow(x, -1)`): products, a square root or a division,
//! which every vector path has, instead of a call per element. Each is as accurate as a
//! correctly rounded `pow` or within a fraction of an ULP of it, and gives C99's special
//! values for these exponents:
//!
//! - `c = 0`: 1 for every x, NaN included; `c = 1`: x.
//! - `c = 2`: `x · x` and `c = -1`: `1 / x`, each rounded once: correctly rounded.
//! - `c = 0.5`: `sqrt(x) + 0` (so `pow(-0, 0.5) = +0`), and `+inf` for `x = -inf`:
//!   correctly rounded.
//! - `c = 3` and `c = 4`: `x² = h + l` exactly (`l = fma(x, x, -h)`), then `h · x + l · x` or
//!   `h · h + 2 · h · l` with one rounding at the end: within 0.5 ULP plus about 2^-46
//!   relative (f32; 2^-104 f64) while `l` is not below the normal range, and ±inf exactly
//!   where the correctly rounded result overflows; where the correction term itself is not
//!   finite (a result far past the largest float, x = ±inf, NaN) the plain product `h · x` /
//!   `h · h` is the result, which is then ±inf or NaN as `pow` gives.
//!
//! Any other exponent keeps calling the import table.

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
