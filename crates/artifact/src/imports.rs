//! The runtime's import table: math functions generated code calls instead of inlining them.
//!
//! Emitters call an import where an instruction sequence of their own would be long or would
//! not match the reference interpreter bit for bit (transcendentals, `fmod`, and rounding or
//! fused multiply-add on ISA tiers without an instruction for it). The runtime implements each import with the same
//! Rust functions the interpreter uses, so results are identical. Imports are reached through
//! [`crate::DispatchState::imports`], never through absolute addresses in code, so artifacts
//! stay position-independent.
//!
//! Indices are part of the ABI: new imports are appended, never reordered.

/// One import. `index()` is its entry in the table; the doc of each variant gives its C
/// signature and meaning (the matching IR op's semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Import {
    /// `f32 exp(f32)`
    ExpF32,
    /// `f64 exp(f64)`
    ExpF64,
    /// `f32 log(f32)`
    LogF32,
    /// `f64 log(f64)`
    LogF64,
    /// `f32 tanh(f32)`
    TanhF32,
    /// `f64 tanh(f64)`
    TanhF64,
    /// `f32 sigmoid(f32)`: the logistic function (`accy_math::sigmoid_f32`)
    SigmoidF32,
    /// `f64 sigmoid(f64)`
    SigmoidF64,
    /// `f32 erf(f32)`
    ErfF32,
    /// `f64 erf(f64)`
    ErfF64,
    /// `f32 sin(f32)`
    SinF32,
    /// `f64 sin(f64)`
    SinF64,
    /// `f32 cos(f32)`
    CosF32,
    /// `f64 cos(f64)`
    CosF64,
    /// `f32 floor(f32)`
    FloorF32,
    /// `f64 floor(f64)`
    FloorF64,
    /// `f32 ceil(f32)`
    CeilF32,
    /// `f64 ceil(f64)`
    CeilF64,
    /// `f32 round(f32)`, ties to even
    RoundF32,
    /// `f64 round(f64)`, ties to even
    RoundF64,
    /// `f32 pow(f32, f32)`
    PowF32,
    /// `f64 pow(f64, f64)`
    PowF64,
    /// `f32 rem(f32, f32)`: `fmod`
    RemF32,
    /// `f64 rem(f64, f64)`: `fmod`
    RemF64,
    /// `f32 fma(f32 a, f32 b, f32 c)`: `a * b + c` rounded once (the kernel `Fma` node on
    /// CPUs without an FMA instruction)
    FmaF32,
    /// `f64 fma(f64 a, f64 b, f64 c)`
    FmaF64,
}

impl Import {
    /// Every import, in index order.
    pub const ALL: [Import; 26] = [
        Import::ExpF32,
        Import::ExpF64,
        Import::LogF32,
        Import::LogF64,
        Import::TanhF32,
        Import::TanhF64,
        Import::SigmoidF32,
        Import::SigmoidF64,
        Import::ErfF32,
        Import::ErfF64,
        Import::SinF32,
        Import::SinF64,
        Import::CosF32,
        Import::CosF64,
        Import::FloorF32,
        Import::FloorF64,
        Import::CeilF32,
        Import::CeilF64,
        Import::RoundF32,
        Import::RoundF64,
        Import::PowF32,
        Import::PowF64,
        Import::RemF32,
        Import::RemF64,
        Import::FmaF32,
        Import::FmaF64,
    ];

    /// Number of entries in the table.
    pub const COUNT: usize = Import::ALL.len();

    /// The entry of this import in the table.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Byte offset of this import's entry in the table.
    pub const fn table_offset(self) -> u32 {
        self as u32 * crate::DispatchState::IMPORT_STRIDE
    }

    /// True for the two-argument imports (`pow`, `rem`).
    pub const fn is_binary(self) -> bool {
        matches!(
            self,
            Import::PowF32 | Import::PowF64 | Import::RemF32 | Import::RemF64
        )
    }

    /// True for the three-argument imports (`fma`).
    pub const fn is_ternary(self) -> bool {
        matches!(self, Import::FmaF32 | Import::FmaF64)
    }

    /// True when the arguments and result are f64 (otherwise f32).
    pub const fn is_f64(self) -> bool {
        self as u16 % 2 == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_dense_and_widths_alternate() {
        for (i, import) in Import::ALL.iter().enumerate() {
            assert_eq!(import.index(), i);
            assert_eq!(import.is_f64(), i % 2 == 1);
        }
        assert_eq!(Import::RemF64.table_offset(), 23 * 8);
    }
}
