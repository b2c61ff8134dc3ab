//! When a product's first reader becomes its epilogue, and when it must not.

use super::planned_with;
use crate::compile::Options;
use crate::kernel::Kernel;

/// The product is reshaped, and the reshape has two readers: a dot that packs it and an
/// `exp`. Fusing the packing into the product's epilogue would leave the `exp` reading a
/// buffer nothing stored (a proptest case found this).
#[test]
fn a_product_read_again_through_a_view_is_stored() {
    for exp_expanded in [false, true] {
        let options = Options {
            fma: exp_expanded,
            ..Options::default()
        };
        let (_, l) = planned_with(
            "program {
              %a = input \"a\" : f32[5,2,1,1]
              %b = input \"b\" : f32[5,1,5,2]
              %p = dot %a, %b, lhs_batch=[2], rhs_batch=[1], lhs_contract=[1,0], rhs_contract=[3,2] : f32[1,1,5]
              %r = reshape %p, dims=[5,1] : f32[5,1]
              %q = dot %a, %r, lhs_batch=[2,0], rhs_batch=[1,0], lhs_contract=[], rhs_contract=[] : f32[1,5,2,1]
              %e = exp %r : f32[5,1]
              output %e
              output %q
            }",
            &options,
        );
        assert!(l
            .kernels
            .iter()
            .any(|k| matches!(k, Kernel::Contraction(_))));
    }
}

/// A fused expression over the product with two consumers would read it twice when it is
/// recomputed by each; so it is not the product's epilogue either.
#[test]
fn a_shared_expression_over_a_product_is_no_epilogue() {
    for exp_expanded in [false, true] {
        let options = Options {
            fma: exp_expanded,
            ..Options::default()
        };
        planned_with(
            "program {
              %x = input \"x\" : f32[4,8]
              %w = input \"w\" : f32[8,16]
              %b = input \"b\" : f32[4,16]
              %p = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,16]
              %d = add %p, %b : f32[4,16]
              %e = exp %d : f32[4,16]
              %f = mul %d, %d : f32[4,16]
              output %e
              output %f
            }",
            &options,
        );
    }
}
