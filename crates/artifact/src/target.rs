//! What machine an artifact's code is for: an architecture and the exact CPU features the code
//! uses.
//!
//! A compiler picks an instruction sequence and records every feature it needs in a
//! [`TargetSpec`]; the loader compares that set with what the host reports and refuses code the
//! host cannot run (`needed.missing(host)` names what is absent). Recording *exactly* the
//! features used, not just the most advanced one, prevents the bug class where code gated on
//! FMA also uses AVX2.
//!
//! Every [`CpuFeature`] has a fixed bit in [`FeatureSet`] and a fixed name, so a set can be
//! stored in a serialized artifact and printed in messages (`avx2+fma`). Bits and names are
//! append-only: a feature, once assigned, keeps its bit and its name.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// An instruction set architecture that accy generates code for.
///
/// A caller uses it to pick an emitter and to check that an artifact's code can run on the
/// host ([`Arch::host`]). Generated code follows the platform C calling convention of the
/// architecture (System V AMD64 on x86-64, AAPCS64 on AArch64); see [`crate::abi`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arch {
    /// x86-64 (AMD64).
    X86_64,
    /// AArch64 (ARMv8-A and later, 64-bit).
    Aarch64,
}

impl Arch {
    /// Every architecture, in a fixed order.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The stable lowercase name (`x86_64`, `aarch64`), the same as Rust's `target_arch`.
    pub const fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The architecture called `name` (as printed by [`Arch::name`]), if any.
    pub fn from_name(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The architecture this process runs on, or `None` if accy generates no code for it
    /// (generated code can then be compiled and inspected, but not run).
    pub const fn host() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }

    /// The alignment, in bytes, every kernel entry point must have on this architecture:
    /// AArch64 instructions are 4-byte words, x86-64 code has no requirement. The artifact
    /// validator checks kernel offsets against it.
    pub const fn code_alignment(self) -> u32 {
        match self {
            Arch::X86_64 => 1,
            Arch::Aarch64 => 4,
        }
    }

    /// Every feature defined for this architecture, as a set. A target's features must be a
    /// subset of it.
    pub fn all_features(self) -> FeatureSet {
        CpuFeature::ALL
            .iter()
            .copied()
            .filter(|f| f.arch() == self)
            .collect()
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Defines `CpuFeature` with each variant's fixed bit, name and architecture from one table,
/// so the three can never disagree.
macro_rules! cpu_features {
    ($( $(#[doc = $doc:literal])* $variant:ident = $bit:literal, $name:literal, $arch:ident; )*) => {
        /// One optional CPU capability that generated code may use.
        ///
        /// A compiler records each feature its code uses in a [`FeatureSet`]; a loader checks
        /// them against the host. Names follow Rust's `is_x86_feature_detected!` /
        /// `is_aarch64_feature_detected!` spelling. The discriminant is the feature's bit in a
        /// [`FeatureSet`]; bits and names never change once assigned (x86-64 uses bits 0–31,
        /// AArch64 bits 32–63).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        #[non_exhaustive]
        pub enum CpuFeature {
            $( $(#[doc = $doc])* $variant = $bit, )*
        }

        impl CpuFeature {
            /// Every feature, in bit order.
            pub const ALL: &'static [CpuFeature] = &[ $( CpuFeature::$variant, )* ];

            /// The stable name, e.g. `avx2` or `dotprod`.
            pub const fn name(self) -> &'static str {
                match self { $( CpuFeature::$variant => $name, )* }
            }

            /// The architecture this feature belongs to.
            pub const fn arch(self) -> Arch {
                match self { $( CpuFeature::$variant => Arch::$arch, )* }
            }
        }
    };
}

cpu_features! {
    /// SSE2 (baseline on x86-64).
    Sse2 = 0, "sse2", X86_64;
    /// SSE3.
    Sse3 = 1, "sse3", X86_64;
    /// Supplemental SSE3.
    Ssse3 = 2, "ssse3", X86_64;
    /// SSE4.1.
    Sse41 = 3, "sse4.1", X86_64;
    /// SSE4.2.
    Sse42 = 4, "sse4.2", X86_64;
    /// POPCNT.
    Popcnt = 5, "popcnt", X86_64;
    /// AVX (256-bit float vectors, VEX encoding).
    Avx = 6, "avx", X86_64;
    /// AVX2 (256-bit integer vectors, gathers, permutes).
    Avx2 = 7, "avx2", X86_64;
    /// FMA3 fused multiply-add.
    Fma = 8, "fma", X86_64;
    /// F16C half-precision conversions.
    F16c = 9, "f16c", X86_64;
    /// BMI1.
    Bmi1 = 10, "bmi1", X86_64;
    /// BMI2.
    Bmi2 = 11, "bmi2", X86_64;
    /// LZCNT.
    Lzcnt = 12, "lzcnt", X86_64;
    /// MOVBE.
    Movbe = 13, "movbe", X86_64;
    /// AVX-512 Foundation.
    Avx512f = 14, "avx512f", X86_64;
    /// AVX-512 Conflict Detection.
    Avx512cd = 15, "avx512cd", X86_64;
    /// AVX-512 Byte and Word.
    Avx512bw = 16, "avx512bw", X86_64;
    /// AVX-512 Doubleword and Quadword.
    Avx512dq = 17, "avx512dq", X86_64;
    /// AVX-512 Vector Length extensions (128/256-bit EVEX forms, xmm16–31).
    Avx512vl = 18, "avx512vl", X86_64;
    /// AVX-512 Vector Byte Manipulation.
    Avx512vbmi = 19, "avx512vbmi", X86_64;
    /// AVX-512 Vector Neural Network Instructions.
    Avx512vnni = 20, "avx512vnni", X86_64;
    /// AVX-512 bfloat16.
    Avx512bf16 = 21, "avx512bf16", X86_64;
    /// AVX-512 half precision.
    Avx512fp16 = 22, "avx512fp16", X86_64;
    /// VEX-encoded VNNI (AVX-VNNI).
    Avxvnni = 23, "avxvnni", X86_64;
    /// Advanced SIMD (baseline on AArch64).
    Neon = 32, "neon", Aarch64;
    /// Half-precision float arithmetic (FEAT_FP16).
    Fp16 = 33, "fp16", Aarch64;
    /// Half-precision multiply-accumulate into single precision (FEAT_FHM).
    Fhm = 34, "fhm", Aarch64;
    /// Int8 dot product (FEAT_DotProd).
    Dotprod = 35, "dotprod", Aarch64;
    /// Int8 matrix multiply (FEAT_I8MM).
    I8mm = 36, "i8mm", Aarch64;
    /// bfloat16 arithmetic (FEAT_BF16).
    Bf16 = 37, "bf16", Aarch64;
    /// Rounding doubling multiply-accumulate (FEAT_RDM).
    Rdm = 38, "rdm", Aarch64;
    /// Large System Extensions atomics (FEAT_LSE).
    Lse = 39, "lse", Aarch64;
    /// CRC32 instructions.
    Crc = 40, "crc", Aarch64;
    /// Scalable Vector Extension.
    Sve = 41, "sve", Aarch64;
    /// Scalable Vector Extension 2.
    Sve2 = 42, "sve2", Aarch64;
}

impl CpuFeature {
    /// The feature's bit index in a [`FeatureSet`].
    pub const fn bit(self) -> u32 {
        self as u32
    }

    /// The feature with bit index `bit`, if one is defined.
    pub fn from_bit(bit: u32) -> Option<CpuFeature> {
        CpuFeature::ALL.iter().copied().find(|f| f.bit() == bit)
    }

    /// The feature called `name` (as printed by [`CpuFeature::name`]), if any.
    pub fn from_name(name: &str) -> Option<CpuFeature> {
        CpuFeature::ALL.iter().copied().find(|f| f.name() == name)
    }
}

impl fmt::Display for CpuFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`CpuFeature`]s, stored as a `u64` with one bit per feature.
///
/// A compiler uses it to record what its code needs; a loader uses it for what the host has and
/// asks `needed.missing(host)`. Displays as names joined by `+` in bit order (`avx2+fma`), or
/// `none` when empty, and parses from the same form.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FeatureSet(u64);

impl FeatureSet {
    /// The empty set.
    pub const EMPTY: FeatureSet = FeatureSet(0);

    /// Every defined feature's bit, so [`FeatureSet::from_bits`] can reject unknown ones.
    fn known_bits() -> u64 {
        CpuFeature::ALL
            .iter()
            .fold(0, |acc, f| acc | (1 << f.bit()))
    }

    /// The set holding exactly `features`.
    pub fn of(features: &[CpuFeature]) -> FeatureSet {
        features.iter().copied().collect()
    }

    /// The raw bits, for serialization. Bit `f.bit()` is set for each member `f`.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// The set with raw `bits`, or `Err(unknown)` with the bits that name no defined feature
    /// (an artifact from a newer accy, or corrupt data).
    pub fn from_bits(bits: u64) -> Result<FeatureSet, u64> {
        let unknown = bits & !FeatureSet::known_bits();
        if unknown == 0 {
            Ok(FeatureSet(bits))
        } else {
            Err(unknown)
        }
    }

    /// This set plus `feature`.
    #[must_use]
    pub const fn with(self, feature: CpuFeature) -> FeatureSet {
        FeatureSet(self.0 | (1 << feature.bit()))
    }

    /// Adds `feature`.
    pub fn insert(&mut self, feature: CpuFeature) {
        *self = self.with(feature);
    }

    /// Removes `feature` (no effect if absent).
    pub fn remove(&mut self, feature: CpuFeature) {
        self.0 &= !(1 << feature.bit());
    }

    /// True if `feature` is in the set.
    pub const fn contains(self, feature: CpuFeature) -> bool {
        self.0 & (1 << feature.bit()) != 0
    }

    /// Features in either set.
    #[must_use]
    pub const fn union(self, other: FeatureSet) -> FeatureSet {
        FeatureSet(self.0 | other.0)
    }

    /// Features in both sets.
    #[must_use]
    pub const fn intersection(self, other: FeatureSet) -> FeatureSet {
        FeatureSet(self.0 & other.0)
    }

    /// True if every feature of `self` is in `other` (code needing `self` runs on a host that
    /// has `other`).
    pub const fn is_subset(self, other: FeatureSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// The features of `self` that `available` lacks: empty exactly when
    /// `self.is_subset(available)`. A loader prints this set in its refusal.
    #[must_use]
    pub const fn missing(self, available: FeatureSet) -> FeatureSet {
        FeatureSet(self.0 & !available.0)
    }

    /// True if the set has no features.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Number of features in the set.
    pub const fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// The members, in bit order.
    pub fn iter(self) -> impl Iterator<Item = CpuFeature> {
        CpuFeature::ALL
            .iter()
            .copied()
            .filter(move |f| self.contains(*f))
    }
}

impl FromIterator<CpuFeature> for FeatureSet {
    fn from_iter<I: IntoIterator<Item = CpuFeature>>(iter: I) -> FeatureSet {
        iter.into_iter().fold(FeatureSet::EMPTY, FeatureSet::with)
    }
}

impl Extend<CpuFeature> for FeatureSet {
    fn extend<I: IntoIterator<Item = CpuFeature>>(&mut self, iter: I) {
        for f in iter {
            self.insert(f);
        }
    }
}

impl fmt::Display for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (i, feature) in self.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            f.write_str(feature.name())?;
        }
        Ok(())
    }
}

impl fmt::Debug for FeatureSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FeatureSet({self})")
    }
}

/// A feature name that [`FeatureSet::from_str`] did not recognise.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown CPU feature `{name}`")]
pub struct UnknownFeature {
    /// The unrecognised name, as written.
    pub name: String,
}

impl FromStr for FeatureSet {
    type Err = UnknownFeature;

    /// Parses names joined by `+` (`avx2+fma`), or `none` / the empty string for the empty set,
    /// e.g. for a configuration override that forces a lower tier.
    fn from_str(s: &str) -> Result<FeatureSet, UnknownFeature> {
        let s = s.trim();
        if s.is_empty() || s == "none" {
            return Ok(FeatureSet::EMPTY);
        }
        s.split('+')
            .map(|name| {
                let name = name.trim();
                CpuFeature::from_name(name).ok_or_else(|| UnknownFeature {
                    name: name.to_owned(),
                })
            })
            .collect()
    }
}

/// The machine an artifact's code is for: its architecture and exactly the CPU features the
/// code uses (not everything the compiling host had).
///
/// A loader runs the code only if the host's architecture equals `arch` and
/// `features.missing(host_features)` is empty. The validator checks that every feature belongs
/// to `arch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TargetSpec {
    /// The instruction set of the code.
    pub arch: Arch,
    /// The features the code uses.
    pub features: FeatureSet,
}

impl TargetSpec {
    /// A target for `arch` needing `features`.
    pub fn new(arch: Arch, features: FeatureSet) -> TargetSpec {
        TargetSpec { arch, features }
    }

    /// The features listed that do not belong to `arch` (empty for a consistent target).
    pub fn foreign_features(&self) -> FeatureSet {
        self.features.missing(self.arch.all_features())
    }
}

impl fmt::Display for TargetSpec {
    /// `x86_64+avx2+fma`, or just `x86_64` when no optional feature is needed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.arch.name())?;
        for feature in self.features.iter() {
            write!(f, "+{feature}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_and_names_are_unique_and_fit() {
        for (i, a) in CpuFeature::ALL.iter().enumerate() {
            assert!(a.bit() < 64, "{a} bit {}", a.bit());
            let range = match a.arch() {
                Arch::X86_64 => 0..32,
                Arch::Aarch64 => 32..64,
            };
            assert!(range.contains(&a.bit()), "{a} outside its arch's bit range");
            assert_eq!(CpuFeature::from_bit(a.bit()), Some(*a));
            assert_eq!(CpuFeature::from_name(a.name()), Some(*a));
            for b in &CpuFeature::ALL[i + 1..] {
                assert!(a.bit() < b.bit(), "ALL must be in bit order: {a} {b}");
                assert_ne!(a.name(), b.name());
            }
        }
        assert_eq!(CpuFeature::from_bit(63), None);
        assert_eq!(CpuFeature::from_name("avx1024"), None);
    }

    #[test]
    fn pinned_bits() {
        // Serialized artifacts depend on these numbers: changing one is a format break.
        assert_eq!(CpuFeature::Sse2.bit(), 0);
        assert_eq!(CpuFeature::Avx2.bit(), 7);
        assert_eq!(CpuFeature::Fma.bit(), 8);
        assert_eq!(CpuFeature::Avx512f.bit(), 14);
        assert_eq!(CpuFeature::Neon.bit(), 32);
        assert_eq!(CpuFeature::Dotprod.bit(), 35);
    }

    #[test]
    fn set_operations() {
        let needed = FeatureSet::of(&[CpuFeature::Fma, CpuFeature::Avx2]);
        let host = FeatureSet::of(&[CpuFeature::Avx, CpuFeature::Avx2, CpuFeature::Sse2]);
        assert!(needed.contains(CpuFeature::Fma));
        assert!(!needed.contains(CpuFeature::Avx));
        assert_eq!(needed.len(), 2);
        assert!(!needed.is_subset(host));
        assert_eq!(needed.missing(host), FeatureSet::of(&[CpuFeature::Fma]));
        assert!(needed.missing(needed.union(host)).is_empty());
        assert!(needed.is_subset(needed.union(host)));
        assert_eq!(
            needed.intersection(host),
            FeatureSet::of(&[CpuFeature::Avx2])
        );
        assert!(FeatureSet::EMPTY.is_subset(FeatureSet::EMPTY));
        assert!(FeatureSet::EMPTY.is_empty());

        let mut s = FeatureSet::EMPTY;
        s.insert(CpuFeature::Neon);
        s.extend([CpuFeature::Dotprod, CpuFeature::Neon]);
        assert_eq!(s.len(), 2);
        s.remove(CpuFeature::Neon);
        s.remove(CpuFeature::Sve);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![CpuFeature::Dotprod]);
    }

    #[test]
    fn display_and_parse() {
        let s = FeatureSet::of(&[CpuFeature::Fma, CpuFeature::Avx2]);
        assert_eq!(s.to_string(), "avx2+fma");
        assert_eq!(format!("{s:?}"), "FeatureSet(avx2+fma)");
        assert_eq!(FeatureSet::EMPTY.to_string(), "none");
        assert_eq!("avx2+fma".parse::<FeatureSet>(), Ok(s));
        assert_eq!(" fma + avx2 ".parse::<FeatureSet>(), Ok(s));
        assert_eq!("none".parse::<FeatureSet>(), Ok(FeatureSet::EMPTY));
        assert_eq!("".parse::<FeatureSet>(), Ok(FeatureSet::EMPTY));
        assert_eq!(
            "avx2+avx9".parse::<FeatureSet>(),
            Err(UnknownFeature {
                name: "avx9".into()
            })
        );
        let all: FeatureSet = CpuFeature::ALL.iter().copied().collect();
        assert_eq!(all.to_string().parse::<FeatureSet>(), Ok(all));
    }

    #[test]
    fn raw_bits_round_trip_and_reject_unknown() {
        let s = FeatureSet::of(&[CpuFeature::Sse41, CpuFeature::Neon]);
        assert_eq!(s.bits(), (1 << 3) | (1 << 32));
        assert_eq!(FeatureSet::from_bits(s.bits()), Ok(s));
        assert_eq!(FeatureSet::from_bits(s.bits() | (1 << 63)), Err(1 << 63));
        assert_eq!(FeatureSet::from_bits(1 << 24), Err(1 << 24));
    }

    #[test]
    fn arch_and_target() {
        assert_eq!(Arch::from_name("aarch64"), Some(Arch::Aarch64));
        assert_eq!(Arch::from_name("arm"), None);
        let x86 = Arch::X86_64.all_features();
        assert!(x86.contains(CpuFeature::Avx512f));
        assert!(!x86.contains(CpuFeature::Neon));
        assert!(x86.intersection(Arch::Aarch64.all_features()).is_empty());

        let t = TargetSpec::new(
            Arch::X86_64,
            FeatureSet::of(&[CpuFeature::Avx2, CpuFeature::Fma]),
        );
        assert_eq!(t.to_string(), "x86_64+avx2+fma");
        assert!(t.foreign_features().is_empty());
        let bad = TargetSpec::new(Arch::Aarch64, FeatureSet::of(&[CpuFeature::Avx2]));
        assert_eq!(bad.foreign_features(), FeatureSet::of(&[CpuFeature::Avx2]));
        assert_eq!(
            TargetSpec::new(Arch::Aarch64, FeatureSet::EMPTY).to_string(),
            "aarch64"
        );
    }

    #[test]
    fn host_arch_agrees_with_std() {
        // An independent source: std's name for the running architecture.
        assert_eq!(Arch::host(), Arch::from_name(std::env::consts::ARCH));
    }
}
