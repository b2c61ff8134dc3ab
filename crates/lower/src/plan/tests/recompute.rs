//! Which shared values are recomputed by each consumer rather than stored and reread.

use super::planned_with;
use crate::compile::Options;
use crate::kernel::{Kernel, Node};
use accy_artifact::Blocking;
use accy_ir::UnaryOp;

const SOFTMAX: &str = "program {
  %x = input \"x\" : f32[16,40]
  %m = reduce max %x, axes=[1] : f32[16]
  %mb = broadcast %m, dims=[16,40], axes=[0] : f32[16,40]
  %d = sub %x, %mb : f32[16,40]
  %e = exp %d : f32[16,40]
  %s = reduce sum %e, axes=[1] : f32[16]
  %sb = broadcast %s, dims=[16,40], axes=[0] : f32[16,40]
  %y = div %e, %sb : f32[16,40]
  output %y
}";

/// How many kernels of `kernels` there are, and how many `exp` nodes they hold in all.
fn kernels_and_exps(kernels: &[Kernel]) -> (usize, usize) {
    let exps = kernels
        .iter()
        .filter_map(Kernel::as_loop)
        .flat_map(|k| &k.nodes)
        .filter(|n| {
            matches!(
                n.node,
                Node::Unary {
                    op: UnaryOp::Exp,
                    ..
                }
            )
        })
        .count();
    (kernels.len(), exps)
}

#[test]
fn softmax_recomputes_its_exp_only_where_scaled_in_one_instruction_and_not_kept_in_a_cache() {
    let expanded = Options {
        fma: true,
        scale_b: true,
        ..Options::default()
    };
    let caches = |l2, llc| Blocking {
        l1d: 0,
        l2,
        llc,
        ..Default::default()
    };
    // 16×40 f32 is 2560 bytes. Where a store and a reread would not stay in the L2, an exp
    // expanded with one-instruction scaling is computed by both of its consumers (max, sum
    // of exp, exp / sum): above an L2 that small, unless the value is at least half the LLC,
    // the size from which its passes are chained and its rows kept in worker scratch.
    let tiny_l2 = expanded.clone().with_caches(caches(2048, 0));
    let (_, l) = planned_with(SOFTMAX, &tiny_l2);
    assert_eq!(kernels_and_exps(&l.kernels), (3, 2));
    let streamed = expanded.clone().with_caches(caches(4096, 5120));
    let (_, l) = planned_with(SOFTMAX, &streamed);
    assert_eq!(kernels_and_exps(&l.kernels), (3, 1));
    // The exp's writer, which sums it as well, and the division keep its rows in worker
    // scratch.
    let in_scratch = l
        .kernels
        .iter()
        .filter_map(Kernel::as_loop)
        .filter(|k| !k.row_scratch.is_empty())
        .count();
    assert_eq!(in_scratch, 2, "{:#?}", l.kernels);
    // Stored once (max, exp stored while summed, division): at exactly the L2's size and just
    // below half the LLC, with the default caches; and, above the L2 or at half the LLC,
    // when the expansion scales with exponent-field arithmetic or exp is called out per element
    // (exact mode, or no FMA to expand with).
    for options in [
        expanded.clone().with_caches(caches(2560, 5121)),
        expanded.clone(),
        Options {
            scale_b: false,
            ..tiny_l2.clone()
        },
        Options {
            scale_b: false,
            ..streamed.clone()
        },
        streamed.clone(),
        tiny_l2.clone().with_reassociate(false),
        Options {
            fma: false,
            ..tiny_l2
        },
    ] {
        let (_, l) = planned_with(SOFTMAX, &options);
        assert_eq!(kernels_and_exps(&l.kernels), (3, 1));
    }
}
