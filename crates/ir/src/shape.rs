//! Tensor types: a dtype and static dimensions.

use std::fmt;

use smallvec::SmallVec;

use crate::DType;

/// The largest rank (number of axes) a value may have. The verifier and the decoders refuse
/// anything larger, so code that walks axes can use fixed-size arrays of this length.
pub const MAX_RANK: usize = 8;

/// One axis length. Dims are static, and zero is a legal length (the tensor is then empty).
pub type Dim = u64;

/// The axis lengths of a tensor, outermost first (row-major: the last axis is contiguous).
pub type Dims = SmallVec<[Dim; 4]>;

/// The type of a value: element type and dims. Rank 0 is a scalar with one element.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// Element type.
    pub dtype: DType,
    /// Axis lengths, outermost first.
    pub dims: Dims,
}

impl Type {
    /// A type from a dtype and any list of dims.
    pub fn new(dtype: DType, dims: &[Dim]) -> Type {
        Type {
            dtype,
            dims: Dims::from_slice(dims),
        }
    }

    /// A rank-0 (one element) type.
    pub fn scalar(dtype: DType) -> Type {
        Type {
            dtype,
            dims: Dims::new(),
        }
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Number of elements, or `None` if the product overflows `u64`.
    pub fn element_count(&self) -> Option<u64> {
        element_count(&self.dims)
    }

    /// Bytes a dense row-major buffer of this type occupies, or `None` on overflow.
    pub fn byte_size(&self) -> Option<u64> {
        self.element_count()?.checked_mul(self.dtype.size_bytes())
    }

    /// The same dims with another dtype.
    pub fn with_dtype(&self, dtype: DType) -> Type {
        Type {
            dtype,
            dims: self.dims.clone(),
        }
    }
}

/// The product of `dims`, or `None` if it overflows `u64`. The empty product is 1, and any
/// zero dim makes it 0 whatever the other dims are.
pub fn element_count(dims: &[Dim]) -> Option<u64> {
    if dims.contains(&0) {
        return Some(0);
    }
    dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// Row-major strides in elements for `dims` (the last axis has stride 1). Callers use it only on
/// types whose element count is known to fit, so the products cannot overflow.
pub fn row_major_strides(dims: &[Dim]) -> Dims {
    let mut strides: Dims = SmallVec::from_elem(1, dims.len());
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1].wrapping_mul(dims[i + 1]);
    }
    strides
}

impl fmt::Display for Type {
    /// Prints `f32[2,3]`, or `f32[]` for a scalar: the spelling the text format uses.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sizes_and_overflow() {
        let t = Type::new(DType::F32, &[2, 3, 4]);
        assert_eq!(t.element_count(), Some(24));
        assert_eq!(t.byte_size(), Some(96));
        assert_eq!(Type::scalar(DType::I64).byte_size(), Some(8));
        assert_eq!(Type::new(DType::U8, &[0, 7]).element_count(), Some(0));
        assert_eq!(
            Type::new(DType::U8, &[1 << 32, 1 << 32]).element_count(),
            None
        );
        assert_eq!(Type::new(DType::F64, &[1 << 62]).byte_size(), None);
        // A zero dim anywhere makes the count 0, whatever comes before it.
        assert_eq!(element_count(&[1 << 63, 2, 0]), Some(0));
        assert_eq!(element_count(&[0, 1 << 63, 2]), Some(0));
        assert_eq!(t.to_string(), "f32[2,3,4]");
        assert_eq!(Type::scalar(DType::Bool).to_string(), "bool[]");
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(row_major_strides(&[2, 3, 4]).as_slice(), &[12, 4, 1]);
        assert!(row_major_strides(&[]).is_empty());
    }
}
