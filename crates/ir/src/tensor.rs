//! Tensors: a type plus its elements, used for constants and for the interpreter's inputs and
//! outputs.

use crate::{DType, Dim, Dims, Type};

/// The elements of a tensor in row-major order, one variant per dtype.
///
/// Equality is bitwise for floats (NaN equals a NaN with the same bits; `-0.0` differs from
/// `0.0`), so a program holding a NaN constant still compares equal to its round-tripped copy.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum TensorData {
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
    /// i32 elements.
    I32(Vec<i32>),
    /// i64 elements.
    I64(Vec<i64>),
    /// u8 elements.
    U8(Vec<u8>),
    /// bool elements.
    Bool(Vec<bool>),
}

impl TensorData {
    /// The dtype of these elements.
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
            TensorData::I32(_) => DType::I32,
            TensorData::I64(_) => DType::I64,
            TensorData::U8(_) => DType::U8,
            TensorData::Bool(_) => DType::Bool,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::I64(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `len` zero-valued elements of `dtype` (`false` for bool).
    pub fn zeros(dtype: DType, len: usize) -> TensorData {
        match dtype {
            DType::F32 => TensorData::F32(vec![0.0; len]),
            DType::F64 => TensorData::F64(vec![0.0; len]),
            DType::I32 => TensorData::I32(vec![0; len]),
            DType::I64 => TensorData::I64(vec![0; len]),
            DType::U8 => TensorData::U8(vec![0; len]),
            DType::Bool => TensorData::Bool(vec![false; len]),
        }
    }

    /// The little-endian bytes of the elements, as a caller's buffer holds them (bool as 0/1).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::U8(v) => v.clone(),
            TensorData::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
        }
    }

    /// Elements of `dtype` read from little-endian `bytes`. Returns `None` when the length is
    /// not a whole number of elements or a bool byte is neither 0 nor 1.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<TensorData> {
        fn chunks<const N: usize, T>(bytes: &[u8], f: impl Fn([u8; N]) -> T) -> Option<Vec<T>> {
            if !bytes.len().is_multiple_of(N) {
                return None;
            }
            Some(
                bytes
                    .chunks_exact(N)
                    .map(|c| {
                        let mut a = [0u8; N];
                        a.copy_from_slice(c);
                        f(a)
                    })
                    .collect(),
            )
        }
        Some(match dtype {
            DType::F32 => TensorData::F32(chunks(bytes, f32::from_le_bytes)?),
            DType::F64 => TensorData::F64(chunks(bytes, f64::from_le_bytes)?),
            DType::I32 => TensorData::I32(chunks(bytes, i32::from_le_bytes)?),
            DType::I64 => TensorData::I64(chunks(bytes, i64::from_le_bytes)?),
            DType::U8 => TensorData::U8(bytes.to_vec()),
            DType::Bool => TensorData::Bool(
                bytes
                    .iter()
                    .map(|&b| match b {
                        0 => Some(false),
                        1 => Some(true),
                        _ => None,
                    })
                    .collect::<Option<Vec<bool>>>()?,
            ),
        })
    }
}

impl PartialEq for TensorData {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TensorData::F32(a), TensorData::F32(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (TensorData::F64(a), TensorData::F64(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            }
            (TensorData::I32(a), TensorData::I32(b)) => a == b,
            (TensorData::I64(a), TensorData::I64(b)) => a == b,
            (TensorData::U8(a), TensorData::U8(b)) => a == b,
            (TensorData::Bool(a), TensorData::Bool(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for TensorData {}

/// A dense row-major tensor: dims plus elements. Used for `constant` payloads and for the
/// reference interpreter's inputs and outputs.
///
/// Invariant (checked by [`Tensor::new`], assumed by the interpreter): the number of elements
/// equals the product of `dims`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    dims: Dims,
    data: TensorData,
}

/// The element count did not match the dims.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("tensor of dims {dims:?} needs {expected:?} elements but {actual} were given")]
pub struct ShapeMismatch {
    /// The dims asked for.
    pub dims: Dims,
    /// Their product (`None` on overflow).
    pub expected: Option<u64>,
    /// The number of elements given.
    pub actual: usize,
}

impl Tensor {
    /// A tensor of `dims` holding `data`, refused when the counts disagree.
    pub fn new(dims: &[Dim], data: TensorData) -> Result<Tensor, ShapeMismatch> {
        let expected = crate::element_count(dims);
        if expected != Some(data.len() as u64) {
            return Err(ShapeMismatch {
                dims: Dims::from_slice(dims),
                expected,
                actual: data.len(),
            });
        }
        Ok(Tensor {
            dims: Dims::from_slice(dims),
            data,
        })
    }

    /// A rank-0 tensor holding one element.
    pub fn scalar(data: TensorData) -> Result<Tensor, ShapeMismatch> {
        Tensor::new(&[], data)
    }

    /// A tensor of `ty` filled with zeros, or `None` if its element count does not fit `usize`.
    pub fn zeros(ty: &Type) -> Option<Tensor> {
        let n = usize::try_from(ty.element_count()?).ok()?;
        Some(Tensor {
            dims: ty.dims.clone(),
            data: TensorData::zeros(ty.dtype, n),
        })
    }

    /// The tensor's type.
    pub fn ty(&self) -> Type {
        Type {
            dtype: self.data.dtype(),
            dims: self.dims.clone(),
        }
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// Axis lengths.
    pub fn dims(&self) -> &[Dim] {
        &self.dims
    }

    /// The elements, row-major.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// Takes the elements out.
    pub fn into_data(self) -> TensorData {
        self.data
    }
}

/// Shorthand constructors used by tests and examples.
macro_rules! typed_ctor {
    ($name:ident, $t:ty, $variant:ident) => {
        impl Tensor {
            #[doc = concat!("A `", stringify!($t), "` tensor; panics if `data.len()` does not match `dims` (for literals in tests and examples; use [`Tensor::new`] for untrusted data).")]
            pub fn $name(dims: &[Dim], data: Vec<$t>) -> Tensor {
                #[allow(clippy::expect_used, reason = "documented panic for literal tensors")]
                Tensor::new(dims, TensorData::$variant(data)).expect("literal tensor shape")
            }
        }
    };
}
typed_ctor!(f32s, f32, F32);
typed_ctor!(f64s, f64, F64);
typed_ctor!(i32s, i32, I32);
typed_ctor!(i64s, i64, I64);
typed_ctor!(u8s, u8, U8);
typed_ctor!(bools, bool, Bool);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equality_is_bitwise_for_floats() {
        let a = Tensor::f32s(&[2], vec![f32::NAN, 0.0]);
        let b = Tensor::f32s(&[2], vec![f32::NAN, 0.0]);
        let c = Tensor::f32s(&[2], vec![f32::NAN, -0.0]);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn new_checks_counts_and_bytes_round_trip() {
        assert!(Tensor::new(&[2, 2], TensorData::I32(vec![1, 2, 3])).is_err());
        assert!(Tensor::new(&[0, 5], TensorData::U8(vec![])).is_ok());
        let d = TensorData::I64(vec![-1, 7]);
        let bytes = d.to_le_bytes();
        assert_eq!(bytes.len(), 16);
        assert_eq!(TensorData::from_le_bytes(DType::I64, &bytes), Some(d));
        assert_eq!(TensorData::from_le_bytes(DType::F32, &[0; 3]), None);
        assert_eq!(TensorData::from_le_bytes(DType::Bool, &[0, 2]), None);
    }
}
