//! Which values the planner proves at most zero (`plan/facts.rs`).

use super::{loops, planned};

/// `exp` of `%d`, defined by `lines` over `%x`, `%z` (f32[6,10]) and the row max `%m` of `%x`.
fn exp_of(lines: &str) -> String {
    format!(
        "program {{
  %x = input \"x\" : f32[6,10]
  %z = input \"z\" : f32[6,10]
  %m = reduce max %x, axes=[1] : f32[6]
  %n = reduce min %x, axes=[1] : f32[6]
  {lines}
  %e = exp %d : f32[6,10]
  output %e
}}"
    )
}

/// How many nodes the planned kernels list as at most zero.
fn at_most_zero(source: &str) -> usize {
    loops(&planned(source))
        .iter()
        .map(|k| k.at_most_zero.len())
        .sum()
}

#[test]
fn x_minus_its_own_max_is_at_most_zero() {
    let direct = "%mb = broadcast %m, dims=[6,10], axes=[0] : f32[6,10]
  %d = sub %x, %mb : f32[6,10]";
    assert_eq!(at_most_zero(&exp_of(direct)), 1);
    // ONNX's keepdims: the max reshaped to [6, 1], then broadcast axis for axis.
    let kept = "%mr = reshape %m, dims=[6,1] : f32[6,1]
  %mb = broadcast %mr, dims=[6,10], axes=[0,1] : f32[6,10]
  %d = sub %x, %mb : f32[6,10]";
    assert_eq!(at_most_zero(&exp_of(kept)), 1);
}

#[test]
fn other_differences_are_not() {
    for lines in [
        // The max minus x, x minus its min, another tensor minus x's max.
        "%mb = broadcast %m, dims=[6,10], axes=[0] : f32[6,10]
  %d = sub %mb, %x : f32[6,10]",
        "%nb = broadcast %n, dims=[6,10], axes=[0] : f32[6,10]
  %d = sub %x, %nb : f32[6,10]",
        "%mb = broadcast %m, dims=[6,10], axes=[0] : f32[6,10]
  %d = sub %z, %mb : f32[6,10]",
    ] {
        assert_eq!(at_most_zero(&exp_of(lines)), 0, "{lines}");
    }
    // A square matrix minus its row maxes broadcast along the other axis: `x[i, j] - m[j]`.
    let across = "program {
  %x = input \"x\" : f32[6,6]
  %m = reduce max %x, axes=[1] : f32[6]
  %mb = broadcast %m, dims=[6,6], axes=[1] : f32[6,6]
  %d = sub %x, %mb : f32[6,6]
  %e = exp %d : f32[6,6]
  output %e
}";
    assert_eq!(at_most_zero(across), 0);
}
