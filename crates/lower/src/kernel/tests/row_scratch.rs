//! Validation rule 7: which `RowScratch` entries a kernel may carry.

use super::*;

/// `exp_kernel` (2×3 f32, rows of 12 bytes) with `entries`.
fn with(entries: &[(u32, u64, u64, u64)]) -> LoopKernel {
    let mut k = exp_kernel();
    k.row_scratch = entries
        .iter()
        .map(|&(binding, offset, row_bytes, bytes)| RowScratch {
            binding,
            offset,
            row_bytes,
            bytes,
        })
        .collect();
    k
}

#[test]
fn row_partitioned_bindings_with_whole_aligned_reservations_pass() {
    // The store (binding 1) and the input (binding 0), one row each or both rows.
    with(&[(1, 0, 12, 12)]).validate().unwrap();
    with(&[(1, 0, 12, 24), (0, 64, 12, 24)]).validate().unwrap();
    assert_eq!(
        exp_kernel().rows_of(&exp_kernel().live_nodes(), 1),
        Rows::Partitioned { bytes: 12 }
    );
}

#[test]
fn every_other_entry_is_refused() {
    let refused = |entries: &[(u32, u64, u64, u64)], why: &str| {
        let err = with(entries).validate().unwrap_err();
        assert!(
            matches!(&err, KernelError::RowScratch { why: w, .. } if w.contains(why)),
            "{entries:?}: {err}"
        );
    };
    refused(&[(1, 0, 8, 16)], "not partitioned");
    refused(&[(2, 0, 12, 12)], "not partitioned");
    refused(&[(1, 32, 12, 12)], "aligned offset");
    refused(&[(1, 0, 12, 18)], "whole rows");
    refused(&[(1, 0, 12, 0)], "whole rows");
    refused(&[(1, 1 << 30, 12, 12)], "in range");
    refused(&[(1, 0, 12, 24), (1, 64, 12, 12)], "named twice");
    refused(&[(1, 0, 12, 120), (0, 64, 12, 12)], "overlaps");
    // A transpose's input is not row-partitioned along dim 0.
    let mut k = with(&[(0, 0, 12, 12)]);
    k.nodes[0].node = load(0, 0, &[1, 2]);
    assert!(matches!(k.validate(), Err(KernelError::RowScratch { .. })));
    // No parallel dim to split rows by.
    let mut k = with(&[(1, 0, 12, 12)]);
    k.parallel_rank = 0;
    k.reduction = Some(ReduceOp::Sum);
    k.store.map = IndexMap::new(0, &[]);
    k.bindings[1].elements = 1;
    assert!(k.validate().is_err());
}
