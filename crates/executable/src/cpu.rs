//! What this CPU can run and how big its caches are: [`CpuInfo`].
//!
//! Detection happens when a `CpuInfo` is constructed, never lazily behind a process-wide
//! global (STYLE.md item 18): each owner detects once and keeps its value, which is
//! `Clone + Send + Sync`. [`CpuInfo::detect`] honours the `ACCY_CPU_FEATURES_MAX` override
//! ([`Tier`]) so tests and CI can force every code path on one machine; an emitter's
//! constructor checks the features it needs against [`CpuInfo::features`] (STYLE.md item 5).
//!
//! Architectures and features are `accy-artifact`'s [`Arch`] and [`FeatureSet`] (re-exported
//! here), the same types an artifact's [`accy_artifact::TargetSpec`] records, so checking an
//! artifact against the host is a set difference with nothing to convert.

mod cache;
mod features;

pub use accy_artifact::Arch;
pub use cache::{CacheInfo, CacheLevel, CacheSource, LLC_PER_SHARER_MAX};
pub use features::{
    detect_host_features, feature_tier, mask_to_tier, CpuFeature, FeatureSet, Tier,
};

/// Why CPU information could not be produced.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CpuError {
    /// `ACCY_CPU_FEATURES_MAX` (or a tier name given elsewhere) is not one this crate knows:
    /// a configuration mistake, reported so a typo does not silently test the wrong path.
    #[error(
        "unknown CPU tier {value:?}: expected baseline (or sse2, neon), avx2, avx512 or native"
    )]
    InvalidTier {
        /// The text that was given.
        value: String,
    },
}

/// The host CPU's capabilities, as generated code and its planner need them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuInfo {
    arch: Option<Arch>,
    detected: FeatureSet,
    max_tier: Tier,
    features: FeatureSet,
    caches: CacheInfo,
    logical_cores: usize,
    preferred_buffer_alignment: usize,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CpuInfo>();
};

impl CpuInfo {
    /// Detects the host, masked to the tier `ACCY_CPU_FEATURES_MAX` names (unset: no mask).
    /// Fails only on an unknown tier name in that variable.
    pub fn detect() -> Result<CpuInfo, CpuError> {
        Ok(CpuInfo::detect_with_max_tier(Tier::from_env()?))
    }

    /// Detects the host and keeps only the features at or below `max_tier`; ignores the
    /// environment.
    pub fn detect_with_max_tier(max_tier: Tier) -> CpuInfo {
        let detected = detect_host_features();
        let features = mask_to_tier(detected, max_tier);
        let caches = CacheInfo::detect();
        CpuInfo {
            arch: Arch::host(),
            detected,
            max_tier,
            features,
            caches,
            logical_cores: std::thread::available_parallelism().map_or(1, usize::from),
            preferred_buffer_alignment: preferred_alignment(features, caches.line_size),
        }
    }

    /// The architecture, or `None` on a host accy generates no code for (then no artifact
    /// can be loaded; the host's name is `std::env::consts::ARCH`).
    pub fn arch(&self) -> Option<Arch> {
        self.arch
    }

    /// The features generated code may use: those detected, masked to [`max_tier`](Self::max_tier).
    pub fn features(&self) -> FeatureSet {
        self.features
    }

    /// Whether generated code may use `feature` (it is detected and not masked away).
    pub fn has(&self, feature: CpuFeature) -> bool {
        self.features.contains(feature)
    }

    /// Everything the CPU and operating system support, before masking.
    pub fn detected_features(&self) -> FeatureSet {
        self.detected
    }

    /// The tier the features were masked to ([`Tier::Native`] when not masked).
    pub fn max_tier(&self) -> Tier {
        self.max_tier
    }

    /// Cache sizes and where they came from.
    pub fn caches(&self) -> &CacheInfo {
        &self.caches
    }

    /// The logical CPUs this process may run on (affinity and cgroup quota respected; at
    /// least 1).
    pub fn logical_cores(&self) -> usize {
        self.logical_cores
    }

    /// The buffer alignment generated code runs best with: the larger of the cache-line size
    /// and the widest usable vector (16, 32 or 64 bytes), e.g. 64. A hint for allocating
    /// scratch and for callers who want speed — never a requirement: the session requires
    /// only each element's natural alignment, because generated code uses unaligned loads.
    pub fn preferred_buffer_alignment(&self) -> usize {
        self.preferred_buffer_alignment
    }
}

/// The larger of the cache line and the widest vector register `features` allow, as a power
/// of two between 16 and 4096.
fn preferred_alignment(features: FeatureSet, line_size: u32) -> usize {
    let vector = if features.contains(CpuFeature::Avx512f) {
        64
    } else if features.contains(CpuFeature::Avx) {
        32
    } else {
        16
    };
    let line = usize::try_from(line_size)
        .unwrap_or(64)
        .clamp(16, 4096)
        .next_power_of_two();
    line.max(vector)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_consistent() {
        let full = CpuInfo::detect_with_max_tier(Tier::Native);
        assert_eq!(full.arch(), Arch::host());
        assert_eq!(full.features(), full.detected_features());
        assert!(full.logical_cores() >= 1);
        let a = full.preferred_buffer_alignment();
        assert!(a.is_power_of_two() && (16..=4096).contains(&a), "{a}");
        #[cfg(target_arch = "x86_64")]
        assert!(full.has(CpuFeature::Sse2));

        let base = CpuInfo::detect_with_max_tier(Tier::Baseline);
        assert_eq!(base.detected_features(), full.detected_features());
        assert_eq!(
            base.features(),
            mask_to_tier(full.features(), Tier::Baseline)
        );
        assert_eq!(base.max_tier(), Tier::Baseline);
        assert!(base
            .features()
            .iter()
            .all(|f| feature_tier(f) == Tier::Baseline));
        #[cfg(target_arch = "x86_64")]
        assert!(!base.has(CpuFeature::Avx2));
        // Clone + Send: the value travels to another thread intact.
        let moved = std::thread::spawn({
            let base = base.clone();
            move || base
        })
        .join()
        .unwrap();
        assert_eq!(moved, base);
    }

    #[test]
    fn detect_honours_the_environment_variable() {
        // Read-only use of the environment: whatever the test runner set must be obeyed.
        match Tier::from_env() {
            Ok(tier) => assert_eq!(CpuInfo::detect().unwrap().max_tier(), tier),
            Err(e) => assert_eq!(CpuInfo::detect().unwrap_err(), e),
        }
    }

    #[test]
    fn alignment_follows_vectors_and_lines() {
        let avx512 = FeatureSet::EMPTY.with(CpuFeature::Avx512f);
        let avx = FeatureSet::EMPTY.with(CpuFeature::Avx);
        assert_eq!(preferred_alignment(FeatureSet::EMPTY, 64), 64);
        assert_eq!(preferred_alignment(avx512, 32), 64);
        assert_eq!(preferred_alignment(avx, 0), 32);
        assert_eq!(preferred_alignment(FeatureSet::EMPTY, 128), 128);
        assert_eq!(preferred_alignment(FeatureSet::EMPTY, 100), 128);
        assert_eq!(preferred_alignment(FeatureSet::EMPTY, u32::MAX), 4096);
    }

    #[test]
    fn names_and_errors() {
        let e = CpuError::InvalidTier {
            value: "avx3".into(),
        };
        assert!(e.to_string().contains("\"avx3\""), "{e}");
    }
}
