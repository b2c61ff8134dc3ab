//! Which shared values are recomputed by each consumer rather than stored and reread.

use super::planned_with;
use crate::compile::Options;
use crate::kernel::{Kernel, Node};
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
fn softmax_recomputes_its_exp_only_where_exp_is_expanded() {
    let expanded = Options {
        fma: true,
        ..Options::default()
    };
    // max, sum of exp, exp / sum: the exp is computed by both of its consumers.
    let (_, l) = planned_with(SOFTMAX, &expanded);
    assert_eq!(kernels_and_exps(&l.kernels), (3, 2));
    // Called out per element (exact mode, or no FMA to expand with): stored once, reread.
    for options in [
        expanded.clone().with_reassociate(false),
        Options {
            fma: false,
            ..Options::default()
        },
    ] {
        let (_, l) = planned_with(SOFTMAX, &options);
        assert_eq!(kernels_and_exps(&l.kernels), (4, 1));
    }
}
