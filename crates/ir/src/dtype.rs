//! Element types.

use std::fmt;

/// The element type of a tensor. A caller uses it to size buffers (`size_bytes`) and to pick
/// which ops apply (`is_float`, `is_integer`).
///
/// The set is closed for this version of the IR but marked `#[non_exhaustive]`: f16 and bf16
/// are planned, and their wire codes are already reserved (see `docs/wire-format.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary64.
    F64,
    /// Two's-complement 32-bit signed integer.
    I32,
    /// Two's-complement 64-bit signed integer.
    I64,
    /// 8-bit unsigned integer.
    U8,
    /// A truth value, stored as one byte that is 0 (false) or 1 (true).
    Bool,
}

impl DType {
    /// Every dtype, in a fixed order (tests and generators iterate over it).
    pub const ALL: [DType; 6] = [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::Bool,
    ];

    /// Bytes one element occupies in a buffer.
    pub const fn size_bytes(self) -> u64 {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::U8 | DType::Bool => 1,
        }
    }

    /// The element's natural alignment in bytes: the alignment a caller's buffer needs.
    pub const fn alignment(self) -> u64 {
        self.size_bytes()
    }

    /// True for f32 and f64.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// True for i32, i64 and u8.
    pub const fn is_integer(self) -> bool {
        matches!(self, DType::I32 | DType::I64 | DType::U8)
    }

    /// True for i32 and i64 (the integer types whose arithmetic is two's-complement signed).
    pub const fn is_signed_integer(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }

    /// True for every dtype arithmetic applies to: floats and integers, not bool.
    pub const fn is_numeric(self) -> bool {
        !matches!(self, DType::Bool)
    }

    /// The name used by the text format and in messages (`f32`, `i64`, `bool`, …).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }

    /// The dtype a name from [`DType::name`] stands for, or `None` for any other string.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == name)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes_are_natural() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(d.alignment(), d.size_bytes());
        }
        assert_eq!(DType::from_name("f16"), None);
        assert_eq!(DType::F64.size_bytes(), 8);
        assert!(DType::U8.is_integer() && !DType::U8.is_signed_integer());
        assert!(!DType::Bool.is_numeric());
    }
}
