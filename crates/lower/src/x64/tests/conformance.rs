//! The shared kernel conformance suite (`crate::testing::conformance`) on every x86-64 tier
//! this host runs: in default mode on each tier, and in exact mode on the vector tiers (which
//! are the ones that could reassociate). A tier the CPU lacks prints a skip line.

use super::host::HostRunner;
use crate::compile::Options;
use crate::x64::X64Tier;

crate::conformance_tests!(
    sse2,
    HostRunner::for_tier(X64Tier::Sse2),
    Options::default(),
    1500
);
crate::conformance_tests!(
    avx2,
    HostRunner::for_tier(X64Tier::Avx2),
    Options::default(),
    2000
);
crate::conformance_tests!(
    avx512,
    HostRunner::for_tier(X64Tier::Avx512),
    Options::default(),
    1000
);
crate::conformance_tests!(
    avx2_exact,
    HostRunner::for_tier(X64Tier::Avx2),
    Options::default().with_reassociate(false),
    500
);
crate::conformance_tests!(
    avx512_exact,
    HostRunner::for_tier(X64Tier::Avx512),
    Options::default().with_reassociate(false),
    500
);
