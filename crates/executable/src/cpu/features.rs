//! Which CPU features the host has, and the tiers that mask them down so one machine can
//! exercise every code path.
//!
//! The feature vocabulary is `accy-artifact`'s [`CpuFeature`] and [`FeatureSet`], re-exported
//! here: an artifact records the features its code needs in that same type, so the loader
//! compares `needed.missing(host)` directly, with no second list of features that could drift
//! from the first. This module adds what only a runtime knows: detecting the host's features
//! ([`detect_host_features`]) and masking them to a [`Tier`].

use std::fmt;

pub use accy_artifact::{CpuFeature, FeatureSet};

use super::CpuError;

/// How far up the feature ladder generated code may go; the `ACCY_CPU_FEATURES_MAX`
/// override selects one so tests and CI can force each code path on one machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// Only the architecture's baseline SIMD: SSE2 on x86-64, NEON on AArch64.
    Baseline,
    /// Up to AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE, POPCNT, SSE3–SSE4.2 (≈ x86-64-v3); all
    /// AArch64 extensions.
    Avx2,
    /// Up to the AVX-512 family and AVX-VNNI (≈ x86-64-v4 and the extensions newer than
    /// x86-64-v3).
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

/// The lowest [`Tier`] that keeps `feature`.
///
/// The tiers are named after x86-64 levels (baseline ≈ x86-64-v1, `avx2` ≈ x86-64-v3,
/// `avx512` ≈ x86-64-v4). AArch64 has two so far: its baseline (NEON) and everything else,
/// which counts as the middle tier — so `baseline` strips the AArch64 extensions while the
/// x86 tier names leave them alone. A feature added to [`CpuFeature`] later counts as the
/// middle tier until it is listed here, so `baseline` always strips it.
pub fn feature_tier(feature: CpuFeature) -> Tier {
    match feature {
        CpuFeature::Sse2 | CpuFeature::Neon => Tier::Baseline,
        CpuFeature::Avx512f
        | CpuFeature::Avx512cd
        | CpuFeature::Avx512bw
        | CpuFeature::Avx512dq
        | CpuFeature::Avx512vl
        | CpuFeature::Avx512vbmi
        | CpuFeature::Avx512vnni
        | CpuFeature::Avx512bf16
        | CpuFeature::Avx512fp16
        | CpuFeature::Avxvnni => Tier::Avx512,
        _ => Tier::Avx2,
    }
}

/// `features` without every feature above `tier` (see [`feature_tier`]). Masking only
/// removes: a tier never adds a feature the set lacks.
pub fn mask_to_tier(features: FeatureSet, tier: Tier) -> FeatureSet {
    features
        .iter()
        .filter(|&f| feature_tier(f) <= tier)
        .collect()
}

/// The features this host's CPU and operating system support, unmasked. A feature this
/// function does not ask the host about is reported absent, so code needing it is refused
/// rather than run on faith.
pub fn detect_host_features() -> FeatureSet {
    detect_host()
}

#[cfg(target_arch = "x86_64")]
fn detect_host() -> FeatureSet {
    use std::arch::is_x86_feature_detected as has;
    // std's detection also checks that the OS saves the wider registers (XCR0), so a
    // reported AVX/AVX-512 feature is usable, not merely present in the silicon.
    let found = [
        (CpuFeature::Sse2, has!("sse2")),
        (CpuFeature::Sse3, has!("sse3")),
        (CpuFeature::Ssse3, has!("ssse3")),
        (CpuFeature::Sse41, has!("sse4.1")),
        (CpuFeature::Sse42, has!("sse4.2")),
        (CpuFeature::Popcnt, has!("popcnt")),
        (CpuFeature::Avx, has!("avx")),
        (CpuFeature::Avx2, has!("avx2")),
        (CpuFeature::Fma, has!("fma")),
        (CpuFeature::F16c, has!("f16c")),
        (CpuFeature::Bmi1, has!("bmi1")),
        (CpuFeature::Bmi2, has!("bmi2")),
        (CpuFeature::Lzcnt, has!("lzcnt")),
        (CpuFeature::Movbe, has!("movbe")),
        (CpuFeature::Avx512f, has!("avx512f")),
        (CpuFeature::Avx512cd, has!("avx512cd")),
        (CpuFeature::Avx512bw, has!("avx512bw")),
        (CpuFeature::Avx512dq, has!("avx512dq")),
        (CpuFeature::Avx512vl, has!("avx512vl")),
        (CpuFeature::Avx512vbmi, has!("avx512vbmi")),
        (CpuFeature::Avx512vnni, has!("avx512vnni")),
        (CpuFeature::Avx512bf16, has!("avx512bf16")),
        (CpuFeature::Avx512fp16, has!("avx512fp16")),
        (CpuFeature::Avxvnni, has!("avxvnni")),
    ];
    found
        .into_iter()
        .filter(|&(_, present)| present)
        .map(|(f, _)| f)
        .collect()
}

#[cfg(target_arch = "aarch64")]
fn detect_host() -> FeatureSet {
    use std::arch::is_aarch64_feature_detected as has;
    let found = [
        (CpuFeature::Neon, has!("neon")),
        (CpuFeature::Fp16, has!("fp16")),
        (CpuFeature::Fhm, has!("fhm")),
        (CpuFeature::Dotprod, has!("dotprod")),
        (CpuFeature::I8mm, has!("i8mm")),
        (CpuFeature::Bf16, has!("bf16")),
        (CpuFeature::Rdm, has!("rdm")),
        (CpuFeature::Lse, has!("lse")),
        (CpuFeature::Crc, has!("crc")),
        (CpuFeature::Sve, has!("sve")),
        (CpuFeature::Sve2, has!("sve2")),
    ];
    found
        .into_iter()
        .filter(|&(_, present)| present)
        .map(|(f, _)| f)
        .collect()
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn detect_host() -> FeatureSet {
    FeatureSet::EMPTY
}

#[cfg(test)]
mod tests {
    use super::*;
    use accy_artifact::Arch;
    use CpuFeature::*;

    fn set(features: &[CpuFeature]) -> FeatureSet {
        FeatureSet::of(features)
    }

    #[test]
    fn every_feature_has_a_tier_and_baseline_is_one_per_arch() {
        for &f in CpuFeature::ALL {
            let tier = feature_tier(f);
            assert!(tier < Tier::Native, "{f}");
            if tier == Tier::Baseline {
                assert!(matches!(f, Sse2 | Neon), "{f} is not a baseline feature");
            }
        }
        assert_eq!(feature_tier(Avx512fp16), Tier::Avx512);
        assert_eq!(feature_tier(Sse42), Tier::Avx2);
        assert_eq!(feature_tier(Sve2), Tier::Avx2);
    }

    #[test]
    fn masking_to_each_tier() {
        let zen4 = set(&[
            Sse2, Sse3, Ssse3, Sse41, Sse42, Popcnt, Lzcnt, Bmi1, Bmi2, Avx, Avx2, Fma, F16c,
            Movbe, Avx512f, Avx512cd, Avx512bw, Avx512dq, Avx512vl, Avx512vbmi, Avx512vnni,
            Avx512bf16,
        ]);
        assert_eq!(mask_to_tier(zen4, Tier::Native), zen4);
        assert_eq!(mask_to_tier(zen4, Tier::Avx512), zen4);
        assert_eq!(
            mask_to_tier(zen4, Tier::Avx2),
            set(&[
                Sse2, Sse3, Ssse3, Sse41, Sse42, Popcnt, Lzcnt, Bmi1, Bmi2, Avx, Avx2, Fma, F16c,
                Movbe
            ])
        );
        assert_eq!(mask_to_tier(zen4, Tier::Baseline), set(&[Sse2]));
        // Masking never adds: an AVX-only machine stays AVX-only under `avx512`.
        let sandy = set(&[Sse2, Sse41, Popcnt, Avx]);
        assert_eq!(mask_to_tier(sandy, Tier::Avx512), sandy);
        // AVX-VNNI without AVX-512 (Alder Lake) is above x86-64-v3.
        let alder = set(&[Sse2, Avx2, Avxvnni]);
        assert_eq!(mask_to_tier(alder, Tier::Avx2), set(&[Sse2, Avx2]));
        // AArch64 extensions go only at `baseline`.
        let arm = set(&[Neon, Fp16, Dotprod, I8mm, Sve]);
        assert_eq!(mask_to_tier(arm, Tier::Avx2), arm);
        assert_eq!(mask_to_tier(arm, Tier::Baseline), set(&[Neon]));
        // Masking is idempotent and monotone.
        for t in [Tier::Baseline, Tier::Avx2, Tier::Avx512, Tier::Native] {
            let m = mask_to_tier(zen4, t);
            assert_eq!(mask_to_tier(m, t), m);
            assert!(m.is_subset(zen4));
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
        let host = detect_host_features();
        assert!(
            host.iter().all(|f| Some(f.arch()) == Arch::host()),
            "{host}"
        );
        #[cfg(target_arch = "x86_64")]
        {
            assert!(host.contains(Sse2), "SSE2 is part of x86-64: {host}");
            // AVX-512 sub-features imply the foundation, and AVX2 implies AVX.
            assert!(!host.contains(Avx512bw) || host.contains(Avx512f));
            assert!(!host.contains(Avx2) || host.contains(Avx));
            // An independent source: std's own answer for one feature of each tier.
            assert_eq!(
                host.contains(Avx2),
                std::arch::is_x86_feature_detected!("avx2")
            );
            assert_eq!(
                host.contains(Avx512f),
                std::arch::is_x86_feature_detected!("avx512f")
            );
        }
        #[cfg(target_arch = "aarch64")]
        assert!(host.contains(Neon), "{host}");
    }
}
