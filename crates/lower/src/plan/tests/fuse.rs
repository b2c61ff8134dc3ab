//! When a product's first reader becomes its epilogue, and when it must not.

use super::planned_with;
use crate::compile::Options;
use crate::kernel::Kernel;
use accy_artifact::Blocking;

/// The product is reshaped, and the reshape has two readers: a dot that packs it and an
/// `exp`. Fusing the packing into the product's epilogue would leave the `exp` reading a
/// buffer nothing stored (a proptest case found this).
#[test]
fn a_product_read_again_through_a_view_is_stored() {
    for exp_expanded in [false, true] {
        // Expanded with one-instruction scaling and an L2 too small to keep it, a shared exp
        // is recomputed by each consumer (`plan/mod.rs`); called out, it is stored.
        let options = Options {
            fma: exp_expanded,
            scale_b: exp_expanded,
            ..Options::default()
        }
        .with_caches(Blocking {
            l1d: 0,
            l2: 64,
            llc: 0,
            ..Default::default()
        });
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
        // Expanded with one-instruction scaling and an L2 too small to keep it, a shared exp
        // is recomputed by each consumer (`plan/mod.rs`); called out, it is stored.
        let options = Options {
            fma: exp_expanded,
            scale_b: exp_expanded,
            ..Options::default()
        }
        .with_caches(Blocking {
            l1d: 0,
            l2: 64,
            llc: 0,
            ..Default::default()
        });
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

/// A product whose epilogue is read by two kernels — a value returned twice, a concat of a
/// value and a view of it — is stored once and read by both, not fused into the first and
/// left unwritten for the second (found by the plan differential test).
#[test]
fn a_product_read_by_two_kernels_of_one_instruction_is_stored() {
    super::planned(
        "program {
          %a = input \"a\" : f32[3,3]
          %b = input \"b\" : f32[3,7]
          %d = dot %a, %b, lhs_batch=[0], rhs_batch=[0], lhs_contract=[], rhs_contract=[] : f32[3,3,7]
          %t = transpose %d, perm=[2,1,0] : f32[7,3,3]
          output %t
          output %t
        }",
    );
    super::planned(
        "program {
          %w = input \"w\" : f32[3,1]
          %c = constant [[0.5], [-2.25]] : f32[2,1]
          %d = dot %w, %c, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[1] : f32[3,2]
          %wb = broadcast %w, dims=[3,2], axes=[0,1] : f32[3,2]
          %s = add %wb, %d : f32[3,2]
          %h = slice %s, start=[0,0], limit=[3,1], stride=[1,2] : f32[3,1]
          %y = concat %s, %h, axis=1 : f32[3,3]
          output %y
        }",
    );
}

/// A product whose epilogue's value has another consumer outside the kernel that stores it
/// (a transpose returned and also read by `exp`; a sum reshaped on demand and also read by
/// `exp`) is stored, not fused into that kernel and left unwritten for the other.
#[test]
fn a_product_read_outside_the_storing_kernel_is_stored() {
    super::planned(
        "program {
          %a = input \"a\" : f32[3,4]
          %b = input \"b\" : f32[4,5]
          %p = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[3,5]
          %t = transpose %p, perm=[1,0] : f32[5,3]
          %u = exp %t : f32[5,3]
          output %t
          output %u
        }",
    );
    super::planned(
        "program {
          %a = input \"a\" : f32[3,4]
          %b = input \"b\" : f32[4,6]
          %p = dot %a, %b, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[3,6]
          %c = constant 0.5 : f32[]
          %cb = broadcast %c, dims=[3,6], axes=[] : f32[3,6]
          %s = add %cb, %p : f32[3,6]
          %u = exp %s : f32[3,6]
          %r = reshape %s, dims=[2,9] : f32[2,9]
          output %u
          output %r
        }",
    );
}
