//! The reference scalar math of accy's float ops (internal crate; the public API is
//! `accy-session`).
//!
//! One definition of every float function whose result is not a single IEEE operation: the
//! reference interpreter (`accy_ir::interp`) evaluates the ops with these functions, the
//! runtime's import table (`accy_executable::imports`) hands exactly these functions to
//! generated code in exact mode, and tests and the accuracy tools compare vectorised
//! expansions against them. Because all three call the same code, exact mode is bit-identical
//! to the interpreter by construction instead of by keeping copies in sync.
//!
//! The functions are the platform's (`std`) implementations, `libm` for `erf` (std has none),
//! except `sigmoid`, which is written here ([`sigmoid_f32`], [`sigmoid_f64`]) so that it meets
//! the 1-ULP bound of the op and stays positive where `1 / (1 + exp(-x))` would underflow to
//! 0; the op semantics in `accy_ir::Op` name the function each op uses. Both f32 and f64 forms
//! exist for every function, through the [`Float`] trait, so generic code (the interpreter's
//! macros, sweeps in tests) reaches them by type.

#![deny(missing_docs)]

/// The reference math functions of one float type. Implemented for `f32` and `f64`; each
/// method documents the op whose semantics it is.
pub trait Float: Copy {
    /// `exp(x)`: the `exp` op.
    fn exp(self) -> Self;
    /// `ln(x)`: the `log` op.
    fn log(self) -> Self;
    /// `tanh(x)`: the `tanh` op.
    fn tanh(self) -> Self;
    /// The logistic function `1 / (1 + exp(-x))`: the `sigmoid` op. Within 1 ULP of the
    /// correctly rounded value and positive wherever that is (see [`sigmoid_f64`]).
    fn sigmoid(self) -> Self;
    /// The error function: the `erf` op (`libm`'s `erf`/`erff`).
    fn erf(self) -> Self;
    /// `sin(x)`: the `sin` op.
    fn sin(self) -> Self;
    /// `cos(x)`: the `cos` op.
    fn cos(self) -> Self;
    /// Round toward -inf: the `floor` op.
    fn floor(self) -> Self;
    /// Round toward +inf: the `ceil` op.
    fn ceil(self) -> Self;
    /// Round to nearest, ties to even: the `round` op.
    fn round(self) -> Self;
    /// C `pow(a, b)`, including its special cases: the float `pow` op.
    fn pow(self, b: Self) -> Self;
    /// C `fmod(a, b)`, exact, with the sign of `a`: the float `rem` op.
    fn rem(self, b: Self) -> Self;
    /// `a * b + c` with one rounding (IEEE fusedMultiplyAdd): the kernel `Fma` node, which
    /// generated code calls on CPUs without an FMA instruction.
    fn fma(self, b: Self, c: Self) -> Self;
}

macro_rules! float_impl {
    ($t:ident, $erf:path, $sigmoid:path) => {
        impl Float for $t {
            fn exp(self) -> $t {
                $t::exp(self)
            }
            fn log(self) -> $t {
                $t::ln(self)
            }
            fn tanh(self) -> $t {
                $t::tanh(self)
            }
            fn sigmoid(self) -> $t {
                $sigmoid(self)
            }
            fn erf(self) -> $t {
                $erf(self)
            }
            fn sin(self) -> $t {
                $t::sin(self)
            }
            fn cos(self) -> $t {
                $t::cos(self)
            }
            fn floor(self) -> $t {
                $t::floor(self)
            }
            fn ceil(self) -> $t {
                $t::ceil(self)
            }
            fn round(self) -> $t {
                $t::round_ties_even(self)
            }
            fn pow(self, b: $t) -> $t {
                $t::powf(self, b)
            }
            fn rem(self, b: $t) -> $t {
                self % b
            }
            fn fma(self, b: $t, c: $t) -> $t {
                $t::mul_add(self, b, c)
            }
        }
    };
}

float_impl!(f32, libm::erff, sigmoid_f32);
float_impl!(f64, libm::erf, sigmoid_f64);

/// The f32 logistic function, evaluated in f64 and rounded once: the f64 value is within
/// about 2^-52 relative of the true one, so the result is the correctly rounded f32 except
/// where the true value lies within that distance of a rounding boundary (then it is off by
/// at most 1 ULP). `exp(-x)` of an f32 cannot overflow to a wrong answer in f64: below
/// x ≈ -709.8 it is +inf and the result is +0, as the true value (< 2^-1000) rounds to.
pub fn sigmoid_f32(x: f32) -> f32 {
    (1.0 / (1.0 + (-f64::from(x)).exp())) as f32
}

/// The f64 logistic function, within 1 ULP and positive wherever the true value is.
///
/// `1 / (1 + exp(-x))` as written loses in two places: `exp(-x)` overflows below x ≈ -709.8,
/// giving 0 where the true value is still a (subnormal) positive number, and the rounding of
/// `1 + e` adds up to a full ULP. So with `e = exp(-|x|)`, which never overflows, this takes
/// `1 / (1 + e)` for x ≥ 0 and `e / (1 + e)` for x < 0, and corrects the quotient `q = n / s`
/// (s = 1 + e rounded) for both the division's and the addition's rounding: the exact
/// residual `n - q·s` (one FMA) minus `q·t`, where `t = e - (s - 1)` is the addition's exact
/// error (`1 ≥ e`), divided by `s`, is added to `q`. What remains is `exp`'s own error, which
/// reaches the result scaled by `1 / (1 + e) ≤ 1`, and the final rounding.
pub fn sigmoid_f64(x: f64) -> f64 {
    let e = (-x.abs()).exp();
    let s = 1.0 + e;
    let t = e - (s - 1.0);
    let n = if x < 0.0 { e } else { 1.0 };
    let q = n / s;
    let r = (-q).mul_add(s, n) - q * t;
    q + r / s
}

#[cfg(test)]
mod tests {
    use super::Float;

    #[test]
    fn special_values_follow_the_op_semantics() {
        assert_eq!(Float::exp(0.0f32), 1.0);
        assert_eq!(Float::log(1.0f64), 0.0);
        assert!(Float::log(-1.0f32).is_nan());
        assert_eq!(Float::sigmoid(f32::INFINITY), 1.0);
        assert_eq!(Float::sigmoid(f64::NEG_INFINITY), 0.0);
        assert_eq!(Float::erf(f32::INFINITY), 1.0);
        assert_eq!(Float::round(2.5f32), 2.0);
        assert_eq!(Float::round(-3.5f64), -4.0);
        assert_eq!(Float::floor(-0.5f32), -1.0);
        assert_eq!(Float::ceil(-0.5f64).to_bits(), (-0.0f64).to_bits());
        assert_eq!(Float::pow(f32::NAN, 0.0), 1.0);
        assert_eq!(Float::rem(-7.0f64, 2.0), -1.0);
        assert!(Float::rem(1.0f32, 0.0).is_nan());
        assert_eq!(Float::fma(0.1f32, 10.0, -1.0), 0.1f32.mul_add(10.0, -1.0));
        assert_ne!(Float::fma(0.1f64, 10.0, -1.0), 0.1f64 * 10.0 - 1.0);
    }

    #[test]
    fn sigmoid_stays_positive_and_meets_its_bound() {
        // Far below where exp(-x) overflows, the true value is still a positive subnormal.
        assert!(Float::sigmoid(-95.0f32) > 0.0);
        assert!((Float::sigmoid(-95.0f32) / 5.52e-42 - 1.0).abs() < 1e-3);
        assert!(Float::sigmoid(-720.0f64) > 0.0);
        assert!((Float::sigmoid(-720.0f64) / 2.0322e-313 - 1.0).abs() < 1e-3);
        assert!(Float::sigmoid(f64::NAN).is_nan() && Float::sigmoid(f32::NAN).is_nan());
        assert_eq!(Float::sigmoid(0.0f64), 0.5);
        assert_eq!(Float::sigmoid(-0.0f32), 0.5);
        assert_eq!(Float::sigmoid(800.0f64), 1.0);
        // f32: the f64 evaluation rounded once agrees with a sum written independently.
        for i in -2000..2000 {
            let x = i as f32 * 0.0517;
            let e = (-f64::from(x)).exp();
            assert_eq!(Float::sigmoid(x), (1.0 / (1.0 + e)) as f32, "x = {x}");
        }
        // f64 near 0.5 and in the tails, against a series that needs no exp of its own
        // near 0: sigmoid(x) = 1/2 + x/4 - x^3/48 + x^5/480 for tiny x.
        for &x in &[1e-6f64, -3e-6, 2.5e-5] {
            let series = 0.5 + x / 4.0 - x * x * x / 48.0 + x.powi(5) / 480.0;
            let got: f64 = Float::sigmoid(x);
            assert!(
                (got - series).abs() <= f64::EPSILON,
                "x = {x}: {got} vs {series}"
            );
        }
    }
}
