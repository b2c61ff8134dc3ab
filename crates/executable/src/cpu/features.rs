//! The CPU features generated code may depend on, as a small enum plus a bitset, and the
//! tiers that mask them down so one machine can exercise every code path.
//!
//! `accy-artifact` defines the `FeatureSet` an artifact records; this crate keeps its own
//! type because it must not depend on the artifact format. The two convert through the
//! stable names ([`CpuFeature::name`], [`CpuFeatures::from_names`]), which follow the names
//! `std::arch::is_*_feature_detected!` and LLVM use ("avx2", "fma", "avx512f", "sse4.1").

use std::fmt;

use super::{Arch, CpuError};

/// One instruction-set extension that some generated code needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CpuFeature {
    /// x86-64 SSE2 (part of the x86-64 baseline).
    Sse2,
    /// x86 SSE4.1 (`roundps`, `pmulld`, blends).
    Sse41,
    /// x86 `popcnt`.
    Popcnt,
    /// x86 `lzcnt`.
    Lzcnt,
    /// x86 BMI1 (`tzcnt`, `andn`).
    Bmi1,
    /// x86 BMI2 (`bzhi`, `shlx`, `pdep`).
    Bmi2,
    /// x86 AVX (256-bit floating point).
    Avx,
    /// x86 AVX2 (256-bit integers, gathers).
    Avx2,
    /// x86 FMA3 (fused multiply-add).
    Fma,
    /// x86 F16C (half-precision conversion).
    F16c,
    /// x86 AVX-512 Foundation (zmm registers, mask registers).
    Avx512f,
    /// x86 AVX-512 byte and word instructions.
    Avx512bw,
    /// x86 AVX-512 doubleword and quadword instructions.
    Avx512dq,
    /// x86 AVX-512 vector-length extensions (EVEX on xmm/ymm).
    Avx512vl,
    /// x86 AVX-512 vector neural-network instructions (`vpdpbusd`).
    Avx512vnni,
    /// AArch64 Advanced SIMD (part of the AArch64 baseline).
    Neon,
    /// AArch64 half-precision arithmetic (FEAT_FP16).
    Fp16,
    /// AArch64 dot product (`sdot`/`udot`, FEAT_DotProd).
    Dotprod,
    /// AArch64 8-bit integer matrix multiply (FEAT_I8MM).
    I8mm,
}

impl CpuFeature {
    /// Every feature, in a fixed order (the order [`CpuFeatures::iter`] yields them).
    pub const ALL: [CpuFeature; 19] = [
        CpuFeature::Sse2,
        CpuFeature::Sse41,
        CpuFeature::Popcnt,
        CpuFeature::Lzcnt,
        CpuFeature::Bmi1,
        CpuFeature::Bmi2,
        CpuFeature::Avx,
        CpuFeature::Avx2,
        CpuFeature::Fma,
        CpuFeature::F16c,
        CpuFeature::Avx512f,
        CpuFeature::Avx512bw,
        CpuFeature::Avx512dq,
        CpuFeature::Avx512vl,
        CpuFeature::Avx512vnni,
        CpuFeature::Neon,
        CpuFeature::Fp16,
        CpuFeature::Dotprod,
        CpuFeature::I8mm,
    ];

    /// The stable name, as `std::arch::is_*_feature_detected!` spells it. Never changes.
    pub fn name(self) -> &'static str {
        match self {
            CpuFeature::Sse2 => "sse2",
            CpuFeature::Sse41 => "sse4.1",
            CpuFeature::Popcnt => "popcnt",
            CpuFeature::Lzcnt => "lzcnt",
            CpuFeature::Bmi1 => "bmi1",
            CpuFeature::Bmi2 => "bmi2",
            CpuFeature::Avx => "avx",
            CpuFeature::Avx2 => "avx2",
            CpuFeature::Fma => "fma",
            CpuFeature::F16c => "f16c",
            CpuFeature::Avx512f => "avx512f",
            CpuFeature::Avx512bw => "avx512bw",
            CpuFeature::Avx512dq => "avx512dq",
            CpuFeature::Avx512vl => "avx512vl",
            CpuFeature::Avx512vnni => "avx512vnni",
            CpuFeature::Neon => "neon",
            CpuFeature::Fp16 => "fp16",
            CpuFeature::Dotprod => "dotprod",
            CpuFeature::I8mm => "i8mm",
        }
    }

    /// The feature with this stable name, if any.
    pub fn from_name(name: &str) -> Option<CpuFeature> {
        CpuFeature::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The architecture the feature belongs to.
    pub fn arch(self) -> Arch {
        match self {
            CpuFeature::Neon | CpuFeature::Fp16 | CpuFeature::Dotprod | CpuFeature::I8mm => {
                Arch::Aarch64
            }
            _ => Arch::X86_64,
        }
    }

    /// The lowest [`Tier`] that keeps this feature.
    ///
    /// The tiers are named after x86-64 levels (baseline ≈ x86-64-v1, `avx2` ≈ x86-64-v3,
    /// `avx512` ≈ x86-64-v4). AArch64 has two so far: its baseline (NEON) and everything
    /// else, which counts as the middle tier — so `baseline` strips the AArch64 extensions
    /// while the x86 tier names leave them alone.
    pub fn tier(self) -> Tier {
        match self {
            CpuFeature::Sse2 | CpuFeature::Neon => Tier::Baseline,
            CpuFeature::Avx512f
            | CpuFeature::Avx512bw
            | CpuFeature::Avx512dq
            | CpuFeature::Avx512vl
            | CpuFeature::Avx512vnni => Tier::Avx512,
            _ => Tier::Avx2,
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

impl fmt::Display for CpuFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`CpuFeature`]s (a bitset; `Copy`).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CpuFeatures(u32);

impl CpuFeatures {
    /// The empty set.
    pub const EMPTY: CpuFeatures = CpuFeatures(0);

    /// Whether `feature` is in the set.
    pub fn contains(self, feature: CpuFeature) -> bool {
        self.0 & feature.bit() != 0
    }

    /// Whether every feature of `other` is in the set (a kernel needing `other` can run).
    pub fn contains_all(self, other: CpuFeatures) -> bool {
        self.0 & other.0 == other.0
    }

    /// The set with `feature` added.
    #[must_use]
    pub fn with(self, feature: CpuFeature) -> CpuFeatures {
        CpuFeatures(self.0 | feature.bit())
    }

    /// The set with `feature` removed.
    #[must_use]
    pub fn without(self, feature: CpuFeature) -> CpuFeatures {
        CpuFeatures(self.0 & !feature.bit())
    }

    /// The features in both sets.
    #[must_use]
    pub fn intersection(self, other: CpuFeatures) -> CpuFeatures {
        CpuFeatures(self.0 & other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The number of features in the set.
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The features in the set, in [`CpuFeature::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = CpuFeature> {
        CpuFeature::ALL
            .into_iter()
            .filter(move |&f| self.contains(f))
    }

    /// The stable names of the features in the set, in [`CpuFeature::ALL`] order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        self.iter().map(CpuFeature::name)
    }

    /// The set named by `names` (e.g. an artifact's recorded features). An unknown name is
    /// [`CpuError::UnknownFeature`]: code built for a feature this crate cannot detect must
    /// not be assumed runnable.
    pub fn from_names<'a>(
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<CpuFeatures, CpuError> {
        names.into_iter().try_fold(CpuFeatures::EMPTY, |set, name| {
            CpuFeature::from_name(name)
                .map(|f| set.with(f))
                .ok_or_else(|| CpuError::UnknownFeature {
                    name: name.to_owned(),
                })
        })
    }

    /// The features this host's CPU and operating system support, unmasked.
    pub fn detect_host() -> CpuFeatures {
        detect_host()
    }
}

impl FromIterator<CpuFeature> for CpuFeatures {
    fn from_iter<I: IntoIterator<Item = CpuFeature>>(iter: I) -> CpuFeatures {
        iter.into_iter().fold(CpuFeatures::EMPTY, CpuFeatures::with)
    }
}

impl fmt::Display for CpuFeatures {
    /// Comma-separated stable names, e.g. `sse2,avx,avx2,fma`; empty for the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, name) in self.names().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(name)?;
        }
        Ok(())
    }
}

impl fmt::Debug for CpuFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

/// How far up the feature ladder generated code may go; the `ACCY_CPU_FEATURES_MAX`
/// override selects one so tests and CI can force each code path on one machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Only the architecture's baseline SIMD: SSE2 on x86-64, NEON on AArch64.
    Baseline,
    /// Up to AVX2, FMA, BMI1/2, F16C, LZCNT, POPCNT, SSE4.1 (≈ x86-64-v3); all AArch64
    /// extensions.
    Avx2,
    /// Up to the AVX-512 subset listed in [`CpuFeature`] (≈ x86-64-v4).
    Avx512,
    /// No masking: everything detected.
    Native,
}

impl Tier {
    /// The environment variable [`Tier::from_env`] reads.
    pub const ENV_VAR: &'static str = "ACCY_CPU_FEATURES_MAX";

    /// Parses a tier name: `baseline` (also `sse2` or `neon`), `avx2`, `avx512` or `native`.
    pub fn parse(text: &str) -> Result<Tier, CpuError> {
        match text.trim() {
            "baseline" | "sse2" | "neon" => Ok(Tier::Baseline),
            "avx2" => Ok(Tier::Avx2),
            "avx512" => Ok(Tier::Avx512),
            "native" => Ok(Tier::Native),
            _ => Err(CpuError::InvalidTier {
                value: text.to_owned(),
            }),
        }
    }

    /// The tier's canonical name (accepted by [`Tier::parse`]).
    pub fn name(self) -> &'static str {
        match self {
            Tier::Baseline => "baseline",
            Tier::Avx2 => "avx2",
            Tier::Avx512 => "avx512",
            Tier::Native => "native",
        }
    }

    /// The tier that `ACCY_CPU_FEATURES_MAX` asks for: [`Tier::Native`] when it is unset or
    /// empty, an error when it holds anything [`Tier::parse`] does not accept (a typo must
    /// not silently test the wrong code path).
    pub fn from_env() -> Result<Tier, CpuError> {
        match std::env::var(Tier::ENV_VAR) {
            Err(std::env::VarError::NotPresent) => Ok(Tier::Native),
            Err(std::env::VarError::NotUnicode(value)) => Err(CpuError::InvalidTier {
                value: value.to_string_lossy().into_owned(),
            }),
            Ok(value) if value.trim().is_empty() => Ok(Tier::Native),
            Ok(value) => Tier::parse(&value),
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `features` without every feature above `tier` (see [`CpuFeature::tier`]). Masking only
/// removes: a tier never adds a feature the set lacks.
pub fn mask_to_tier(features: CpuFeatures, tier: Tier) -> CpuFeatures {
    features.iter().filter(|f| f.tier() <= tier).collect()
}

#[cfg(target_arch = "x86_64")]
fn detect_host() -> CpuFeatures {
    use std::arch::is_x86_feature_detected as has;
    // std's detection also checks that the OS saves the wider registers (XCR0), so a
    // reported AVX/AVX-512 feature is usable, not merely present in the silicon.
    let found = [
        (CpuFeature::Sse2, has!("sse2")),
        (CpuFeature::Sse41, has!("sse4.1")),
        (CpuFeature::Popcnt, has!("popcnt")),
        (CpuFeature::Lzcnt, has!("lzcnt")),
        (CpuFeature::Bmi1, has!("bmi1")),
        (CpuFeature::Bmi2, has!("bmi2")),
        (CpuFeature::Avx, has!("avx")),
        (CpuFeature::Avx2, has!("avx2")),
        (CpuFeature::Fma, has!("fma")),
        (CpuFeature::F16c, has!("f16c")),
        (CpuFeature::Avx512f, has!("avx512f")),
        (CpuFeature::Avx512bw, has!("avx512bw")),
        (CpuFeature::Avx512dq, has!("avx512dq")),
        (CpuFeature::Avx512vl, has!("avx512vl")),
        (CpuFeature::Avx512vnni, has!("avx512vnni")),
    ];
    found
        .into_iter()
        .filter(|&(_, present)| present)
        .map(|(f, _)| f)
        .collect()
}

#[cfg(target_arch = "aarch64")]
fn detect_host() -> CpuFeatures {
    use std::arch::is_aarch64_feature_detected as has;
    let found = [
        (CpuFeature::Neon, has!("neon")),
        (CpuFeature::Fp16, has!("fp16")),
        (CpuFeature::Dotprod, has!("dotprod")),
        (CpuFeature::I8mm, has!("i8mm")),
    ];
    found
        .into_iter()
        .filter(|&(_, present)| present)
        .map(|(f, _)| f)
        .collect()
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect_host() -> CpuFeatures {
    CpuFeatures::EMPTY
}

#[cfg(test)]
mod tests {
    use super::*;
    use CpuFeature::*;

    fn set(features: &[CpuFeature]) -> CpuFeatures {
        features.iter().copied().collect()
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        for f in CpuFeature::ALL {
            assert_eq!(CpuFeature::from_name(f.name()), Some(f));
        }
        let mut names: Vec<_> = CpuFeature::ALL.iter().map(|f| f.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), CpuFeature::ALL.len());
        assert_eq!(CpuFeature::from_name("avx512"), None);
        // ALL is in declaration order, so `bit` gives each feature its own bit.
        assert!(CpuFeature::ALL
            .iter()
            .enumerate()
            .all(|(i, &f)| f as usize == i));
    }

    #[test]
    fn set_operations() {
        let s = set(&[Sse2, Avx2, Fma]);
        assert!(s.contains(Avx2) && !s.contains(Avx));
        assert_eq!(s.len(), 3);
        assert!(s.contains_all(set(&[Sse2, Fma])));
        assert!(!s.contains_all(set(&[Sse2, Avx512f])));
        assert!(s.contains_all(CpuFeatures::EMPTY));
        assert_eq!(s.without(Fma), set(&[Sse2, Avx2]));
        assert_eq!(s.intersection(set(&[Fma, Neon])), set(&[Fma]));
        assert_eq!(s.to_string(), "sse2,avx2,fma");
        assert_eq!(format!("{s:?}"), r#"{"sse2", "avx2", "fma"}"#);
        assert_eq!(CpuFeatures::EMPTY.to_string(), "");
        assert!(CpuFeatures::default().is_empty());
    }

    #[test]
    fn from_names_converts_and_refuses_unknown() {
        assert_eq!(
            CpuFeatures::from_names(["fma", "sse4.1"]),
            Ok(set(&[Fma, Sse41]))
        );
        assert_eq!(
            CpuFeatures::from_names(["avx2", "amx-tile"]),
            Err(CpuError::UnknownFeature {
                name: "amx-tile".into()
            })
        );
        let all: CpuFeatures = CpuFeature::ALL.into_iter().collect();
        assert_eq!(CpuFeatures::from_names(all.names()), Ok(all));
    }

    #[test]
    fn masking_to_each_tier() {
        let zen4 = set(&[
            Sse2, Sse41, Popcnt, Lzcnt, Bmi1, Bmi2, Avx, Avx2, Fma, F16c, Avx512f, Avx512bw,
            Avx512dq, Avx512vl, Avx512vnni,
        ]);
        assert_eq!(mask_to_tier(zen4, Tier::Native), zen4);
        assert_eq!(mask_to_tier(zen4, Tier::Avx512), zen4);
        assert_eq!(
            mask_to_tier(zen4, Tier::Avx2),
            set(&[Sse2, Sse41, Popcnt, Lzcnt, Bmi1, Bmi2, Avx, Avx2, Fma, F16c])
        );
        assert_eq!(mask_to_tier(zen4, Tier::Baseline), set(&[Sse2]));
        // Masking never adds: an AVX-only machine stays AVX-only under `avx512`.
        let sandy = set(&[Sse2, Sse41, Popcnt, Avx]);
        assert_eq!(mask_to_tier(sandy, Tier::Avx512), sandy);
        // AArch64 extensions go only at `baseline`.
        let arm = set(&[Neon, Fp16, Dotprod, I8mm]);
        assert_eq!(mask_to_tier(arm, Tier::Avx2), arm);
        assert_eq!(mask_to_tier(arm, Tier::Baseline), set(&[Neon]));
        // Masking is idempotent and monotone.
        for t in [Tier::Baseline, Tier::Avx2, Tier::Avx512, Tier::Native] {
            let m = mask_to_tier(zen4, t);
            assert_eq!(mask_to_tier(m, t), m);
            assert!(zen4.contains_all(m));
        }
    }

    #[test]
    fn tier_names() {
        for t in [Tier::Baseline, Tier::Avx2, Tier::Avx512, Tier::Native] {
            assert_eq!(Tier::parse(t.name()), Ok(t));
        }
        assert_eq!(Tier::parse("sse2"), Ok(Tier::Baseline));
        assert_eq!(Tier::parse(" neon\n"), Ok(Tier::Baseline));
        assert_eq!(
            Tier::parse("avx-512"),
            Err(CpuError::InvalidTier {
                value: "avx-512".into()
            })
        );
        assert!(Tier::Baseline < Tier::Avx2 && Tier::Avx512 < Tier::Native);
    }

    #[test]
    fn host_detection_matches_the_architecture() {
        let host = CpuFeatures::detect_host();
        assert!(host.iter().all(|f| f.arch() == Arch::host()), "{host}");
        #[cfg(target_arch = "x86_64")]
        {
            assert!(host.contains(Sse2), "SSE2 is part of x86-64: {host}");
            // AVX-512 sub-features imply the foundation, and AVX2 implies AVX.
            assert!(!host.contains(Avx512bw) || host.contains(Avx512f));
            assert!(!host.contains(Avx2) || host.contains(Avx));
        }
        #[cfg(target_arch = "aarch64")]
        assert!(host.contains(Neon), "{host}");
    }
}
