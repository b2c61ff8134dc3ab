//! The per-element semantics of the elementwise ops and of `reduce`'s combining step, on one
//! value at a time.
//!
//! Other executors of the same semantics (the kernel interpreter in `accy-lower`) call these
//! functions instead of re-implementing the op rules, so they cannot drift from [`super::eval`]:
//! every function here is the very code the interpreter runs per element (the [`Arith`],
//! [`Reduce`] and [`Cast`] implementations), only without the tensor around it.

use super::elementwise::{relation, Arith, Cast};
use super::reduce::Reduce;
use crate::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};

/// One element of any dtype.
///
/// Equality is bitwise for floats (as for [`crate::TensorData`]): `-0.0 != 0.0`, and a NaN
/// equals a NaN with the same bits.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    /// An f32 element.
    F32(f32),
    /// An f64 element.
    F64(f64),
    /// An i32 element.
    I32(i32),
    /// An i64 element.
    I64(i64),
    /// A u8 element.
    U8(u8),
    /// A bool element.
    Bool(bool),
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Scalar) -> bool {
        self.dtype() == other.dtype() && self.to_bits() == other.to_bits()
    }
}

impl Eq for Scalar {}

impl Scalar {
    /// The element's dtype.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::F32(_) => DType::F32,
            Scalar::F64(_) => DType::F64,
            Scalar::I32(_) => DType::I32,
            Scalar::I64(_) => DType::I64,
            Scalar::U8(_) => DType::U8,
            Scalar::Bool(_) => DType::Bool,
        }
    }

    /// The little-endian bits of the value zero-extended to 64 bits (bool: 0 or 1), the
    /// encoding a kernel's constant uses.
    pub fn to_bits(self) -> u64 {
        match self {
            Scalar::F32(v) => u64::from(v.to_bits()),
            Scalar::F64(v) => v.to_bits(),
            Scalar::I32(v) => u64::from(v as u32),
            Scalar::I64(v) => v as u64,
            Scalar::U8(v) => u64::from(v),
            Scalar::Bool(v) => u64::from(v),
        }
    }

    /// The value of `dtype` whose bits are the low bits of `bits` (the inverse of
    /// [`Scalar::to_bits`]; higher bits are ignored, and a bool is true when its low byte is
    /// non-zero).
    pub fn from_bits(dtype: DType, bits: u64) -> Scalar {
        match dtype {
            DType::F32 => Scalar::F32(f32::from_bits(bits as u32)),
            DType::F64 => Scalar::F64(f64::from_bits(bits)),
            DType::I32 => Scalar::I32(bits as u32 as i32),
            DType::I64 => Scalar::I64(bits as i64),
            DType::U8 => Scalar::U8(bits as u8),
            DType::Bool => Scalar::Bool(bits as u8 != 0),
        }
    }

    /// The value of `dtype` stored little-endian in `bytes`, or `None` unless `bytes` holds
    /// exactly one element (`dtype.size_bytes()` bytes). A bool byte is true when non-zero.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<Scalar> {
        if bytes.len() as u64 != dtype.size_bytes() {
            return None;
        }
        let mut raw = [0u8; 8];
        raw.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(Scalar::from_bits(dtype, u64::from_le_bytes(raw)))
    }

    /// Writes the value little-endian into `out`, which must hold exactly one element of the
    /// value's dtype; returns false (writing nothing) otherwise. Bools are written as 0 or 1.
    pub fn write_le_bytes(self, out: &mut [u8]) -> bool {
        let bytes = self.to_bits().to_le_bytes();
        match bytes.get(..out.len()) {
            Some(src) if out.len() as u64 == self.dtype().size_bytes() => {
                out.copy_from_slice(src);
                true
            }
            _ => false,
        }
    }
}

/// `op(x)` as the `unary` op computes it, or `None` where `op` does not accept the dtype.
pub fn unary(op: UnaryOp, x: Scalar) -> Option<Scalar> {
    Some(match x {
        Scalar::F32(v) => Scalar::F32(f32::unary(op, v)?),
        Scalar::F64(v) => Scalar::F64(f64::unary(op, v)?),
        Scalar::I32(v) => Scalar::I32(i32::unary(op, v)?),
        Scalar::I64(v) => Scalar::I64(i64::unary(op, v)?),
        Scalar::U8(v) => Scalar::U8(u8::unary(op, v)?),
        Scalar::Bool(v) => Scalar::Bool(bool::unary(op, v)?),
    })
}

/// `op(a, b)` as the binary op computes it, or `None` where the dtypes differ or `op` does not
/// accept them.
pub fn binary(op: BinaryOp, a: Scalar, b: Scalar) -> Option<Scalar> {
    Some(match (a, b) {
        (Scalar::F32(a), Scalar::F32(b)) => Scalar::F32(f32::binary(op, a, b)?),
        (Scalar::F64(a), Scalar::F64(b)) => Scalar::F64(f64::binary(op, a, b)?),
        (Scalar::I32(a), Scalar::I32(b)) => Scalar::I32(i32::binary(op, a, b)?),
        (Scalar::I64(a), Scalar::I64(b)) => Scalar::I64(i64::binary(op, a, b)?),
        (Scalar::U8(a), Scalar::U8(b)) => Scalar::U8(u8::binary(op, a, b)?),
        (Scalar::Bool(a), Scalar::Bool(b)) => Scalar::Bool(bool::binary(op, a, b)?),
        _ => return None,
    })
}

/// `a op b` as `compare` computes it (IEEE for floats, unsigned u8, false < true), or `None`
/// where the dtypes differ.
pub fn compare(op: CompareOp, a: Scalar, b: Scalar) -> Option<bool> {
    Some(match (a, b) {
        (Scalar::F32(a), Scalar::F32(b)) => relation(op, a, b),
        (Scalar::F64(a), Scalar::F64(b)) => relation(op, a, b),
        (Scalar::I32(a), Scalar::I32(b)) => relation(op, a, b),
        (Scalar::I64(a), Scalar::I64(b)) => relation(op, a, b),
        (Scalar::U8(a), Scalar::U8(b)) => relation(op, a, b),
        (Scalar::Bool(a), Scalar::Bool(b)) => relation(op, a, b),
        _ => return None,
    })
}

fn cast<T: Cast>(x: T, to: DType) -> Scalar {
    match to {
        DType::F32 => Scalar::F32(x.to_f32()),
        DType::F64 => Scalar::F64(x.to_f64()),
        DType::I32 => Scalar::I32(x.to_i32()),
        DType::I64 => Scalar::I64(x.to_i64()),
        DType::U8 => Scalar::U8(x.to_u8()),
        DType::Bool => Scalar::Bool(x.to_bool()),
    }
}

/// `x` converted to `to` as `convert` does.
pub fn convert(x: Scalar, to: DType) -> Scalar {
    match x {
        Scalar::F32(v) => cast(v, to),
        Scalar::F64(v) => cast(v, to),
        Scalar::I32(v) => cast(v, to),
        Scalar::I64(v) => cast(v, to),
        Scalar::U8(v) => cast(v, to),
        Scalar::Bool(v) => cast(v, to),
    }
}

/// The value `reduce` with `op` starts from (and gives for zero elements) for `dtype`, or
/// `None` where `op` does not accept the dtype (bool `sum`/`prod`).
pub fn reduce_identity(op: ReduceOp, dtype: DType) -> Option<Scalar> {
    Some(match dtype {
        DType::F32 => Scalar::F32(f32::identity(op)?),
        DType::F64 => Scalar::F64(f64::identity(op)?),
        DType::I32 => Scalar::I32(i32::identity(op)?),
        DType::I64 => Scalar::I64(i64::identity(op)?),
        DType::U8 => Scalar::U8(u8::identity(op)?),
        DType::Bool => Scalar::Bool(bool::identity(op)?),
    })
}

/// The accumulator `acc` after `reduce` with `op` combines it with one more element `x`, or
/// `None` where the dtypes differ or `op` does not accept them.
pub fn reduce_combine(op: ReduceOp, acc: Scalar, x: Scalar) -> Option<Scalar> {
    Some(match (acc, x) {
        (Scalar::F32(a), Scalar::F32(b)) => Scalar::F32(f32::combine(op, a, b)?),
        (Scalar::F64(a), Scalar::F64(b)) => Scalar::F64(f64::combine(op, a, b)?),
        (Scalar::I32(a), Scalar::I32(b)) => Scalar::I32(i32::combine(op, a, b)?),
        (Scalar::I64(a), Scalar::I64(b)) => Scalar::I64(i64::combine(op, a, b)?),
        (Scalar::U8(a), Scalar::U8(b)) => Scalar::U8(u8::combine(op, a, b)?),
        (Scalar::Bool(a), Scalar::Bool(b)) => Scalar::Bool(bool::combine(op, a, b)?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_and_bytes() {
        for s in [
            Scalar::F32(-0.0),
            Scalar::F64(f64::NAN),
            Scalar::I32(-5),
            Scalar::I64(i64::MIN),
            Scalar::U8(200),
            Scalar::Bool(true),
        ] {
            assert_eq!(Scalar::from_bits(s.dtype(), s.to_bits()), s);
            let mut buf = vec![0u8; s.dtype().size_bytes() as usize];
            assert!(s.write_le_bytes(&mut buf));
            assert_eq!(Scalar::from_le_bytes(s.dtype(), &buf), Some(s));
        }
        assert_eq!(Scalar::I32(-1).to_bits(), 0xffff_ffff);
        assert!(!Scalar::I32(1).write_le_bytes(&mut [0u8; 8]));
        assert_eq!(Scalar::from_le_bytes(DType::I32, &[1, 2]), None);
        assert_ne!(Scalar::F32(0.0), Scalar::F32(-0.0));
    }

    #[test]
    fn ops_follow_the_documented_rules() {
        assert_eq!(
            binary(BinaryOp::Div, Scalar::I32(i32::MIN), Scalar::I32(-1)),
            Some(Scalar::I32(i32::MIN))
        );
        assert_eq!(
            binary(BinaryOp::Rem, Scalar::I64(7), Scalar::I64(0)),
            Some(Scalar::I64(7))
        );
        assert_eq!(binary(BinaryOp::Add, Scalar::I64(7), Scalar::I32(0)), None);
        assert_eq!(unary(UnaryOp::Exp, Scalar::I32(1)), None);
        assert_eq!(
            unary(UnaryOp::Neg, Scalar::F32(0.0)),
            Some(Scalar::F32(-0.0))
        );
        assert_eq!(
            compare(CompareOp::Ne, Scalar::F64(f64::NAN), Scalar::F64(1.0)),
            Some(true)
        );
        assert_eq!(convert(Scalar::F32(f32::NAN), DType::I32), Scalar::I32(0));
        assert_eq!(convert(Scalar::F32(-0.0), DType::Bool), Scalar::Bool(false));
        assert_eq!(
            reduce_identity(ReduceOp::Min, DType::U8),
            Some(Scalar::U8(255))
        );
        assert_eq!(reduce_identity(ReduceOp::Sum, DType::Bool), None);
        assert_eq!(
            reduce_combine(ReduceOp::Sum, Scalar::F32(0.0), Scalar::F32(-0.0)),
            Some(Scalar::F32(0.0))
        );
        assert_eq!(
            reduce_combine(ReduceOp::Max, Scalar::Bool(false), Scalar::Bool(true)),
            Some(Scalar::Bool(true))
        );
    }
}
