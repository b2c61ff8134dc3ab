//! Which reductions store the value they reduce as well (`plan/keep.rs`). `planned` checks
//! each plan against the interpreter.

use super::{loops, planned};

/// `e = exp(x)` over f32[6,10], stored (two consumers), and a sum of it through `sum_of`
/// (a view of `%e`, over `sum_axes`) whose result is the other output.
fn shared_exp(sum_of: &str, sum_axes: &str, sum_dims: &str) -> String {
    format!(
        "program {{
  %x = input \"x\" : f32[6,10]
  %e = exp %x : f32[6,10]
  {sum_of}
  %s = reduce sum %v, axes=[{sum_axes}] : f32[{sum_dims}]
  %y = mul %e, %x : f32[6,10]
  output %y
  output %s
}}"
    )
}

/// The number of kernels and how many keep a value.
fn kernels_and_kept(source: &str) -> (usize, usize) {
    let l = planned(source);
    let kept = loops(&l).iter().filter(|k| k.keep.is_some()).count();
    (l.kernels.len(), kept)
}

#[test]
fn a_row_sum_of_the_value_just_stored_stores_it() {
    // exp stored while summed, then the product.
    let rows = shared_exp("%v = add %e, %e : f32[6,10]", "1", "6");
    assert_eq!(kernels_and_kept(&rows), (2, 1));
    // Reduced over all of it: one kernel still.
    let all = shared_exp("%v = add %e, %e : f32[6,10]", "0,1", "");
    assert_eq!(kernels_and_kept(&all), (2, 1));
}

#[test]
fn a_sum_that_reads_the_value_elsewhere_than_where_it_was_stored_does_not() {
    // Column sums walk other dims; a reversed read takes another point's value.
    let columns = shared_exp("%v = add %e, %e : f32[6,10]", "0", "10");
    assert_eq!(kernels_and_kept(&columns), (3, 0));
    let reversed = shared_exp("%v = reverse %e, axes=[1] : f32[6,10]", "1", "6");
    assert_eq!(kernels_and_kept(&reversed), (3, 0));
}

#[test]
fn a_sum_that_would_lose_vectors_or_workers_does_not() {
    // exp of `%v`, summed by rows and multiplied by `%v`.
    let exp_of_view = |view: &str| {
        format!(
            "program {{
  {view}
  %e = exp %v : f32[6,10]
  %s = reduce sum %e, axes=[1] : f32[6]
  %y = mul %e, %v : f32[6,10]
  output %y
  output %s
}}"
        )
    };
    // A transposed read, which the fused reduction could not vectorize; a conversion from
    // f64, two lane widths in one kernel.
    for view in [
        "%x = input \"x\" : f32[10,6]
  %v = transpose %x, perm=[1,0] : f32[6,10]",
        "%x = input \"x\" : f64[6,10]
  %v = convert %x, to=f32 : f32[6,10]",
    ] {
        assert_eq!(kernels_and_kept(&exp_of_view(view)).1, 0, "{view}");
    }
    // A large tensor reduced whole: its exp would run on one worker.
    let whole = "program {
  %x = input \"x\" : f32[1048576]
  %e = exp %x : f32[1048576]
  %s = reduce sum %e, axes=[0] : f32[]
  %y = mul %e, %x : f32[1048576]
  output %y
  output %s
}";
    assert_eq!(kernels_and_kept(whole), (3, 0));
}
