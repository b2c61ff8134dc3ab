//! The float functions whose accuracy is measured: the op, the bound it must meet in default
//! mode (the one `accy_ir::UnaryOp` and `docs/accuracy.md` state), and the references.
//!
//! The f32 reference is the function evaluated in f64 and rounded to f32 (the libm and
//! `accy_math` f64 functions are within about 1 f64 ULP, 2^-29 of an f32 ULP, so this is the
//! correctly rounded f32 value except where the exact value lies within that distance of a
//! rounding boundary). The f64 reference is MPFR's correctly rounded result (`mpfr.rs`).

use accy_ir::{BinaryOp, UnaryOp};

use crate::mpfr::Mpfr;

/// Which op a function is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A unary op.
    Unary(UnaryOp),
    /// A binary op (`pow`).
    Binary(BinaryOp),
}

/// One measured function.
#[derive(Clone, Copy, Debug)]
pub struct Function {
    /// Its name (the op's mnemonic).
    pub name: &'static str,
    /// The op.
    pub op: Op,
    /// The largest error allowed, in ULPs of the correctly rounded result.
    pub bound: u64,
    /// The bound holds for `|x| ≤ within` (sin and cos: 10^4); beyond, the error is measured
    /// and reported apart.
    pub within: f64,
    /// The f32 reference of `f(a)` or `f(a, b)` (see the module doc).
    pub reference32: fn(f32, f32) -> f32,
    /// Draws an f64 argument pair from 64 random bits (the second is ignored by unary
    /// functions): the region where the function's result is neither trivially 0, 1, inf nor
    /// NaN, plus a share of arbitrary bit patterns.
    pub sample64: fn(u64, u64) -> (f64, f64),
}

impl Function {
    /// The function called `name`.
    pub fn named(name: &str) -> Option<&'static Function> {
        FUNCTIONS.iter().find(|f| f.name == name)
    }

    /// True for `pow`.
    pub fn is_binary(&self) -> bool {
        matches!(self.op, Op::Binary(_))
    }

    /// The correctly rounded f64 result of the function at `(a, b)` from MPFR.
    pub fn reference64(&self, mpfr: &Mpfr, a: f64, b: f64) -> f64 {
        mpfr.eval(self.name, a, b)
    }
}

/// A uniform f64 in `[lo, hi)` from random bits.
fn uniform(bits: u64, lo: f64, hi: f64) -> f64 {
    let unit = (bits >> 11) as f64 * 2f64.powi(-53);
    lo + (hi - lo) * unit
}

/// One time in eight an arbitrary bit pattern (every exponent, NaNs, infinities, subnormals),
/// otherwise a uniform value in `[lo, hi)` with random low bits.
fn mostly(bits: u64, lo: f64, hi: f64) -> f64 {
    if bits & 7 == 0 {
        f64::from_bits(bits.rotate_left(17))
    } else {
        uniform(bits, lo, hi)
    }
}

fn sample_pow(a: u64, b: u64) -> (f64, f64) {
    if a & 15 == 0 {
        return (f64::from_bits(a.rotate_left(9)), f64::from_bits(b));
    }
    // x = m · 2^e over every binade of positive normal numbers (negative x one time in four,
    // with an integral y then), y so that |y · log2 x| < 1100: most results are finite.
    let e = (a >> 52) as i64 % 2040 - 1020;
    let x = uniform(a, 1.0, 2.0) * 2f64.powi(e as i32);
    let l = x.log2().abs().max(1e-300);
    let mut y = uniform(b, -1100.0, 1100.0) / l;
    let mut x = x;
    if a & 0x30 == 0 {
        x = -x;
        y = y.round();
    }
    (x, y)
}

fn r32(f: fn(f64) -> f64) -> impl Fn(f32) -> f32 {
    move |x| f(f64::from(x)) as f32
}

/// Every measured function, in the order of the table in `docs/accuracy.md`.
pub const FUNCTIONS: &[Function] = &[
    Function {
        name: "exp",
        op: Op::Unary(UnaryOp::Exp),
        bound: 1,
        within: f64::INFINITY,
        reference32: |x, _| r32(f64::exp)(x),
        sample64: |a, _| (mostly(a, -750.0, 712.0), 0.0),
    },
    Function {
        name: "log",
        op: Op::Unary(UnaryOp::Log),
        bound: 1,
        within: f64::INFINITY,
        reference32: |x, _| r32(f64::ln)(x),
        sample64: |a, _| (f64::from_bits(a >> 1), 0.0),
    },
    Function {
        name: "sigmoid",
        op: Op::Unary(UnaryOp::Sigmoid),
        bound: 1,
        within: f64::INFINITY,
        reference32: |x, _| accy_math::sigmoid_f32(x),
        sample64: |a, _| (mostly(a, -750.0, 40.0), 0.0),
    },
    Function {
        name: "tanh",
        op: Op::Unary(UnaryOp::Tanh),
        bound: 2,
        within: f64::INFINITY,
        reference32: |x, _| r32(f64::tanh)(x),
        sample64: |a, _| (mostly(a, -20.0, 20.0), 0.0),
    },
    Function {
        name: "erf",
        op: Op::Unary(UnaryOp::Erf),
        bound: 2,
        within: f64::INFINITY,
        reference32: |x, _| r32(libm::erf)(x),
        sample64: |a, _| (mostly(a, -6.5, 6.5), 0.0),
    },
    Function {
        name: "sin",
        op: Op::Unary(UnaryOp::Sin),
        bound: 2,
        within: 1e4,
        reference32: |x, _| r32(f64::sin)(x),
        sample64: |a, _| (mostly(a, -1e4, 1e4), 0.0),
    },
    Function {
        name: "cos",
        op: Op::Unary(UnaryOp::Cos),
        bound: 2,
        within: 1e4,
        reference32: |x, _| r32(f64::cos)(x),
        sample64: |a, _| (mostly(a, -1e4, 1e4), 0.0),
    },
    Function {
        name: "pow",
        op: Op::Binary(BinaryOp::Pow),
        bound: 2,
        within: f64::INFINITY,
        reference32: |x, y| f64::from(x).powf(f64::from(y)) as f32,
        sample64: sample_pow,
    },
    Function {
        name: "sqrt",
        op: Op::Unary(UnaryOp::Sqrt),
        bound: 0,
        within: f64::INFINITY,
        reference32: |x, _| r32(f64::sqrt)(x),
        sample64: |a, _| (f64::from_bits(a), 0.0),
    },
    Function {
        name: "rsqrt",
        op: Op::Unary(UnaryOp::Rsqrt),
        bound: 1,
        within: f64::INFINITY,
        reference32: |x, _| r32(|v| 1.0 / v.sqrt())(x),
        sample64: |a, _| (f64::from_bits(a), 0.0),
    },
];
