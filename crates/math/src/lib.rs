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
//! The functions are the platform's (`std`) implementations, `libm` for `erf` (std has none);
//! the op semantics in `accy_ir::Op` name the function each op uses. Both f32 and f64 forms
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
    /// `1 / (1 + exp(-x))`: the `sigmoid` op.
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
}

macro_rules! float_impl {
    ($t:ident, $erf:path) => {
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
                1.0 / (1.0 + $t::exp(-self))
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
        }
    };
}

float_impl!(f32, libm::erff);
float_impl!(f64, libm::erf);

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
    }
}
