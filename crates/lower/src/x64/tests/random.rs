//! Random small kernels (random node DAGs over random dtypes, maps, shapes, reductions and
//! workgroup counts that pass `validate`), each run on every tier and compared bit for bit
//! with `run_kernel` (any NaN equals any NaN). Float sums and products match exactly too,
//! because no tier reassociates reductions yet.
//!
//! A case is built from a proptest seed by the deterministic generator in
//! `crate::testing::kernels` (shared with the AArch64 emulator tests), so a failure
//! prints the seed and the whole kernel (`check` panics with it).

use proptest::prelude::*;

use super::harness::{check, host_target};
use crate::kernel::{LoopKernel, Node};
use crate::testing::kernels::{data, random_kernel};
use crate::x64::X64Tier;

/// Checks `cases` random kernels on `tier`, or nothing if this host cannot run it.
fn random_kernels_on(tier: X64Tier, cases: u32) {
    let Some(target) = host_target(tier) else {
        return;
    };
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(seed in any::<u64>())| {
        if let Some((kernel, workgroups)) = random_kernel(seed) {
            let buffers: Vec<Vec<u8>> = kernel
                .bindings
                .iter()
                .enumerate()
                .map(|(i, b)| data(b.dtype, b.elements as usize, seed ^ i as u64))
                .collect();
            check(&target, &kernel, &buffers, workgroups);
        }
    });
}

#[test]
fn generator_produces_mostly_valid_kernels_of_every_kind() {
    let kernels: Vec<LoopKernel> = (0..400u64)
        .filter_map(|s| random_kernel(s * 7919 + 1).map(|(k, _)| k))
        .collect();
    let count = |f: &dyn Fn(&LoopKernel) -> bool| kernels.iter().filter(|k| f(k)).count();
    let vectorized = count(&|k| {
        crate::x64::vector::vector_lanes(k)
            .is_some_and(|lanes| k.dims.last().is_some_and(|&n| n >= lanes as u64))
    });
    let reductions = count(&|k| k.reduction.is_some());
    let vector_reductions = count(&|k| {
        k.reduction.is_some()
            && crate::x64::vector::vector_lanes(k)
                .is_some_and(|lanes| k.dims.last().is_some_and(|&n| n >= lanes as u64))
    });
    let gathers = count(&|k| {
        k.nodes
            .iter()
            .any(|n| matches!(n.node, Node::Gather { .. }))
    });
    let stats = format!(
        "{} valid, {vectorized} vectorized ({vector_reductions} reductions), \
         {reductions} reductions, {gathers} gathers",
        kernels.len()
    );
    assert!(kernels.len() > 200, "{stats}");
    assert!(
        vectorized > 60 && vector_reductions > 10 && reductions > 20 && gathers > 15,
        "{stats}"
    );
}

#[test]
fn random_kernels_sse2() {
    random_kernels_on(X64Tier::Sse2, 1500);
}

#[test]
fn random_kernels_avx2() {
    random_kernels_on(X64Tier::Avx2, 2000);
}

#[test]
fn random_kernels_avx512() {
    random_kernels_on(X64Tier::Avx512, 1000);
}
