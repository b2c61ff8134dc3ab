//! Elementwise ops: unary, binary, compare, select and convert, each applied element by
//! element exactly as `op.rs` documents it.

use super::data::{pick, typed, with_elem_type, Elem};
use super::OpResult;
use accy_math::Float;

use crate::{BinaryOp, CompareOp, DType, TensorData, UnaryOp};

/// The per-element arithmetic of one dtype.
pub(super) trait Arith: Elem {
    /// `op(x)`, or `None` where `op` does not accept this dtype.
    fn unary(op: UnaryOp, x: Self) -> Option<Self>;
    /// `op(a, b)`, or `None` where `op` does not accept this dtype.
    fn binary(op: BinaryOp, a: Self, b: Self) -> Option<Self>;
}

// Functions that are not a single IEEE operation come from `accy_math`, the one definition the
// runtime's import table shares, so exact-mode kernels match this interpreter bit for bit.
macro_rules! float_arith {
    ($t:ident) => {
        impl Arith for $t {
            fn unary(op: UnaryOp, x: $t) -> Option<$t> {
                Some(match op {
                    UnaryOp::Neg => -x,
                    UnaryOp::Abs => x.abs(),
                    UnaryOp::Sqrt => x.sqrt(),
                    UnaryOp::Rsqrt => 1.0 / x.sqrt(),
                    UnaryOp::Exp => Float::exp(x),
                    UnaryOp::Log => Float::log(x),
                    UnaryOp::Tanh => Float::tanh(x),
                    UnaryOp::Sigmoid => Float::sigmoid(x),
                    UnaryOp::Erf => Float::erf(x),
                    UnaryOp::Sin => Float::sin(x),
                    UnaryOp::Cos => Float::cos(x),
                    UnaryOp::Floor => Float::floor(x),
                    UnaryOp::Ceil => Float::ceil(x),
                    UnaryOp::Round => Float::round(x),
                    UnaryOp::Not => return None,
                })
            }

            fn binary(op: BinaryOp, a: $t, b: $t) -> Option<$t> {
                Some(match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::Div => a / b,
                    BinaryOp::Rem => Float::rem(a, b),
                    BinaryOp::Pow => Float::pow(a, b),
                    BinaryOp::Max => {
                        if a.is_nan() || b.is_nan() {
                            $t::NAN
                        } else if a == b {
                            // Equal values differ at most in the sign of zero; +0.0 wins.
                            if a.is_sign_negative() {
                                b
                            } else {
                                a
                            }
                        } else if a > b {
                            a
                        } else {
                            b
                        }
                    }
                    BinaryOp::Min => {
                        if a.is_nan() || b.is_nan() {
                            $t::NAN
                        } else if a == b {
                            // Equal values differ at most in the sign of zero; -0.0 wins.
                            if a.is_sign_negative() {
                                a
                            } else {
                                b
                            }
                        } else if a < b {
                            a
                        } else {
                            b
                        }
                    }
                    BinaryOp::And
                    | BinaryOp::Or
                    | BinaryOp::Xor
                    | BinaryOp::Shl
                    | BinaryOp::ShrLogical
                    | BinaryOp::ShrArithmetic => return None,
                })
            }
        }
    };
}

float_arith!(f32);
float_arith!(f64);

/// The shift amount `b` as a `u32` if it lies in `0..bits`.
fn shift_amount(b: i128, bits: u32) -> Option<u32> {
    if (0..i128::from(bits)).contains(&b) {
        Some(b as u32)
    } else {
        None
    }
}

macro_rules! int_arith {
    ($t:ident, $unsigned:ident, abs: $abs:expr) => {
        impl Arith for $t {
            fn unary(op: UnaryOp, x: $t) -> Option<$t> {
                Some(match op {
                    UnaryOp::Neg => x.wrapping_neg(),
                    UnaryOp::Abs => $abs(x),
                    UnaryOp::Not => !x,
                    _ => return None,
                })
            }

            fn binary(op: BinaryOp, a: $t, b: $t) -> Option<$t> {
                Some(match op {
                    BinaryOp::Add => a.wrapping_add(b),
                    BinaryOp::Sub => a.wrapping_sub(b),
                    BinaryOp::Mul => a.wrapping_mul(b),
                    // `wrapping_div` gives MIN for MIN / -1, `wrapping_rem` gives 0 for
                    // MIN rem -1.
                    BinaryOp::Div => {
                        if b == 0 {
                            0
                        } else {
                            a.wrapping_div(b)
                        }
                    }
                    BinaryOp::Rem => {
                        if b == 0 {
                            a
                        } else {
                            a.wrapping_rem(b)
                        }
                    }
                    BinaryOp::Pow => {
                        let exponent = i128::from(b);
                        if exponent < 0 {
                            match i128::from(a) {
                                1 => 1,
                                // `a` is -1 here, the result for an odd exponent.
                                -1 if exponent % 2 != 0 => a,
                                -1 => 1,
                                _ => 0,
                            }
                        } else {
                            // Square-and-multiply: wrapping multiplication is associative
                            // modulo 2^bits, so this equals `exponent` repeated multiplications.
                            let (mut acc, mut square, mut e): ($t, $t, u128) =
                                (1, a, exponent as u128);
                            while e > 0 {
                                if e & 1 == 1 {
                                    acc = acc.wrapping_mul(square);
                                }
                                square = square.wrapping_mul(square);
                                e >>= 1;
                            }
                            acc
                        }
                    }
                    BinaryOp::Max => a.max(b),
                    BinaryOp::Min => a.min(b),
                    BinaryOp::And => a & b,
                    BinaryOp::Or => a | b,
                    BinaryOp::Xor => a ^ b,
                    BinaryOp::Shl => match shift_amount(i128::from(b), $t::BITS) {
                        Some(s) => a << s,
                        None => 0,
                    },
                    BinaryOp::ShrLogical => match shift_amount(i128::from(b), $t::BITS) {
                        Some(s) => ((a as $unsigned) >> s) as $t,
                        None => 0,
                    },
                    // `>>` is arithmetic on signed types and logical on u8, as the op says.
                    BinaryOp::ShrArithmetic => match shift_amount(i128::from(b), $t::BITS) {
                        Some(s) => a >> s,
                        None if i128::from(a) < 0 => !0,
                        None => 0,
                    },
                })
            }
        }
    };
}

int_arith!(i32, u32, abs: i32::wrapping_abs);
int_arith!(i64, u64, abs: i64::wrapping_abs);
int_arith!(u8, u8, abs: std::convert::identity);

impl Arith for bool {
    fn unary(op: UnaryOp, x: bool) -> Option<bool> {
        match op {
            UnaryOp::Not => Some(!x),
            _ => None,
        }
    }

    fn binary(op: BinaryOp, a: bool, b: bool) -> Option<bool> {
        match op {
            BinaryOp::And => Some(a && b),
            BinaryOp::Or => Some(a || b),
            BinaryOp::Xor => Some(a != b),
            _ => None,
        }
    }
}

/// The message for an op applied to a dtype it does not accept (the verifier rules this out).
pub(super) fn undefined(op: &str, dtype: DType) -> String {
    format!("{op} is not defined for {dtype}")
}

/// `op(x)` elementwise.
pub(super) fn unary(op: UnaryOp, x: &TensorData) -> OpResult {
    with_elem_type!(x.dtype(), T => {
        typed::<T>(x)?
            .iter()
            .map(|&a| T::unary(op, a))
            .collect::<Option<Vec<T>>>()
            .map(T::wrap)
            .ok_or_else(|| undefined(op.name(), x.dtype()))
    })
}

/// `op(lhs, rhs)` elementwise.
pub(super) fn binary(op: BinaryOp, lhs: &TensorData, rhs: &TensorData) -> OpResult {
    with_elem_type!(lhs.dtype(), T => {
        typed::<T>(lhs)?
            .iter()
            .zip(typed::<T>(rhs)?)
            .map(|(&a, &b)| T::binary(op, a, b))
            .collect::<Option<Vec<T>>>()
            .map(T::wrap)
            .ok_or_else(|| undefined(op.name(), lhs.dtype()))
    })
}

/// `lhs op rhs` elementwise as bool. Float `PartialOrd` is IEEE comparison (NaN unordered,
/// `-0.0 == 0.0`), u8 compares unsigned and bool orders false < true, as the op requires.
pub(super) fn compare(op: CompareOp, lhs: &TensorData, rhs: &TensorData) -> OpResult {
    with_elem_type!(lhs.dtype(), T => {
        let (lhs, rhs) = (typed::<T>(lhs)?, typed::<T>(rhs)?);
        Ok(TensorData::Bool(
            lhs.iter()
                .zip(rhs)
                .map(|(a, b)| relation(op, a, b))
                .collect(),
        ))
    })
}

/// `a op b` for one pair of elements.
pub(super) fn relation<T: PartialOrd>(op: CompareOp, a: T, b: T) -> bool {
    match op {
        CompareOp::Eq => a == b,
        CompareOp::Ne => a != b,
        CompareOp::Lt => a < b,
        CompareOp::Le => a <= b,
        CompareOp::Gt => a > b,
        CompareOp::Ge => a >= b,
    }
}

/// `cond ? on_true : on_false` elementwise.
pub(super) fn select(cond: &TensorData, on_true: &TensorData, on_false: &TensorData) -> OpResult {
    let cond = typed::<bool>(cond)?;
    pick(
        &[on_true, on_false],
        cond.iter()
            .enumerate()
            .map(|(i, &c)| (if c { 0 } else { 1 }, i)),
    )
}

/// Conversion of one element to every dtype, with Rust `as` semantics (what `convert`
/// specifies); `as` cannot produce or read bools, so those go through `!= 0` and 0/1.
pub(super) trait Cast: Copy {
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_i32(self) -> i32;
    fn to_i64(self) -> i64;
    fn to_u8(self) -> u8;
    fn to_bool(self) -> bool;
}

macro_rules! numeric_cast {
    ($($t:ty),*) => {
        $(
            impl Cast for $t {
                fn to_f32(self) -> f32 {
                    self as f32
                }
                fn to_f64(self) -> f64 {
                    self as f64
                }
                fn to_i32(self) -> i32 {
                    self as i32
                }
                fn to_i64(self) -> i64 {
                    self as i64
                }
                fn to_u8(self) -> u8 {
                    self as u8
                }
                // NaN != 0 is true and -0.0 != 0 is false, as specified.
                fn to_bool(self) -> bool {
                    self != 0 as $t
                }
            }
        )*
    };
}

numeric_cast!(f32, f64, i32, i64, u8);

impl Cast for bool {
    fn to_f32(self) -> f32 {
        f32::from(u8::from(self))
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn to_u8(self) -> u8 {
        u8::from(self)
    }
    fn to_bool(self) -> bool {
        self
    }
}

fn convert_typed<T: Cast>(x: &[T], to: DType) -> TensorData {
    match to {
        DType::F32 => TensorData::F32(x.iter().map(|a| a.to_f32()).collect()),
        DType::F64 => TensorData::F64(x.iter().map(|a| a.to_f64()).collect()),
        DType::I32 => TensorData::I32(x.iter().map(|a| a.to_i32()).collect()),
        DType::I64 => TensorData::I64(x.iter().map(|a| a.to_i64()).collect()),
        DType::U8 => TensorData::U8(x.iter().map(|a| a.to_u8()).collect()),
        DType::Bool => TensorData::Bool(x.iter().map(|a| a.to_bool()).collect()),
    }
}

/// `x` converted elementwise to `to`.
pub(super) fn convert(x: &TensorData, to: DType) -> TensorData {
    match x {
        TensorData::F32(v) => convert_typed(v, to),
        TensorData::F64(v) => convert_typed(v, to),
        TensorData::I32(v) => convert_typed(v, to),
        TensorData::I64(v) => convert_typed(v, to),
        TensorData::U8(v) => convert_typed(v, to),
        TensorData::Bool(v) => convert_typed(v, to),
    }
}
