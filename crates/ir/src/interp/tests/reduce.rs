//! Reduce.

use super::*;
use crate::ReduceOp;

fn reduce(op: ReduceOp, x: Tensor, axes: &[u32]) -> Tensor {
    run(&[x], |b, v| b.reduce(op, v[0], axes))
}

#[test]
fn sum_over_each_axis_choice() {
    let x = Tensor::i32s(&[2, 3], vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(
        reduce(ReduceOp::Sum, x.clone(), &[1]),
        Tensor::i32s(&[2], vec![6, 15])
    );
    assert_eq!(
        reduce(ReduceOp::Sum, x.clone(), &[0]),
        Tensor::i32s(&[3], vec![5, 7, 9])
    );
    assert_eq!(
        reduce(ReduceOp::Sum, x.clone(), &[0, 1]),
        Tensor::i32s(&[], vec![21])
    );
    assert_eq!(
        reduce(ReduceOp::Sum, x.clone(), &[1, 0]),
        Tensor::i32s(&[], vec![21])
    );
    assert_eq!(reduce(ReduceOp::Sum, x.clone(), &[]), x);
    let s = Tensor::f64s(&[], vec![-0.0]);
    assert_eq!(reduce(ReduceOp::Max, s.clone(), &[]), s);
}

#[test]
fn reduce_keeps_the_other_axes_in_order() {
    // x[i, j, k] = 6 i + 2 j + k over dims [2, 3, 2]; reducing axis 1 gives
    // result[i, k] = sum_j x[i, j, k] = 18 i + 6 + 3 k.
    let x = Tensor::i64s(&[2, 3, 2], (0..12).collect());
    assert_eq!(
        reduce(ReduceOp::Sum, x.clone(), &[1]),
        Tensor::i64s(&[2, 2], vec![6, 9, 24, 27])
    );
    assert_eq!(
        reduce(ReduceOp::Max, x.clone(), &[2, 0]),
        Tensor::i64s(&[3], vec![7, 9, 11])
    );
    assert_eq!(
        reduce(ReduceOp::Min, x, &[0]),
        Tensor::i64s(&[3, 2], vec![0, 1, 2, 3, 4, 5])
    );
}

#[test]
fn empty_reductions_give_the_identity() {
    let f = Tensor::f32s(&[0, 3], vec![]);
    let inf = f32::INFINITY;
    assert_floats(&reduce(ReduceOp::Sum, f.clone(), &[0]), &[3], &[0.0; 3]);
    assert_floats(&reduce(ReduceOp::Prod, f.clone(), &[0]), &[3], &[1.0; 3]);
    assert_eq!(
        reduce(ReduceOp::Max, f.clone(), &[0]),
        Tensor::f32s(&[3], vec![-inf; 3])
    );
    assert_eq!(
        reduce(ReduceOp::Min, f.clone(), &[0, 1]),
        Tensor::f32s(&[], vec![inf])
    );
    let d = Tensor::f64s(&[0], vec![]);
    assert_floats(&reduce(ReduceOp::Sum, d.clone(), &[0]), &[], &[0.0]);
    assert_floats(&reduce(ReduceOp::Max, d, &[0]), &[], &[f64::NEG_INFINITY]);
    let i = Tensor::i32s(&[2, 0], vec![]);
    assert_eq!(
        reduce(ReduceOp::Sum, i.clone(), &[1]),
        Tensor::i32s(&[2], vec![0, 0])
    );
    assert_eq!(
        reduce(ReduceOp::Prod, i.clone(), &[1]),
        Tensor::i32s(&[2], vec![1, 1])
    );
    assert_eq!(
        reduce(ReduceOp::Max, i.clone(), &[1]),
        Tensor::i32s(&[2], vec![i32::MIN; 2])
    );
    assert_eq!(
        reduce(ReduceOp::Min, i, &[1]),
        Tensor::i32s(&[2], vec![i32::MAX; 2])
    );
    let l = Tensor::i64s(&[0], vec![]);
    assert_eq!(
        reduce(ReduceOp::Max, l.clone(), &[0]),
        Tensor::i64s(&[], vec![i64::MIN])
    );
    assert_eq!(
        reduce(ReduceOp::Min, l, &[0]),
        Tensor::i64s(&[], vec![i64::MAX])
    );
    let u = Tensor::u8s(&[0], vec![]);
    assert_eq!(
        reduce(ReduceOp::Max, u.clone(), &[0]),
        Tensor::u8s(&[], vec![0])
    );
    assert_eq!(
        reduce(ReduceOp::Min, u.clone(), &[0]),
        Tensor::u8s(&[], vec![255])
    );
    assert_eq!(reduce(ReduceOp::Prod, u, &[0]), Tensor::u8s(&[], vec![1]));
    let b = Tensor::bools(&[0], vec![]);
    assert_eq!(
        reduce(ReduceOp::Max, b.clone(), &[0]),
        Tensor::bools(&[], vec![false])
    );
    assert_eq!(
        reduce(ReduceOp::Min, b, &[0]),
        Tensor::bools(&[], vec![true])
    );
}

#[test]
fn reducing_to_an_empty_result() {
    let x = Tensor::f32s(&[0, 4], vec![]);
    assert_eq!(reduce(ReduceOp::Sum, x, &[1]), Tensor::f32s(&[0], vec![]));
}

#[test]
fn float_sums_run_in_row_major_order_from_positive_zero() {
    // Sequentially: 1e8 + 1 rounds back to 1e8, then -1e8 gives 0, then + 1 gives 1.
    let x = Tensor::f32s(&[2, 2], vec![1e8, 1.0, -1e8, 1.0]);
    assert_floats(&reduce(ReduceOp::Sum, x.clone(), &[0, 1]), &[], &[1.0]);
    // The listed order of the axes does not matter: the order is row-major.
    assert_floats(&reduce(ReduceOp::Sum, x.clone(), &[1, 0]), &[], &[1.0]);
    // Column sums: 1e8 + -1e8 = 0 and 1 + 1 = 2.
    assert_floats(&reduce(ReduceOp::Sum, x, &[0]), &[2], &[0.0, 2.0]);
    // Starting from +0.0, a sum of -0.0 terms is +0.0; max and prod keep -0.0.
    let z = Tensor::f64s(&[2], vec![-0.0, -0.0]);
    assert_floats(&reduce(ReduceOp::Sum, z.clone(), &[0]), &[], &[0.0]);
    assert_floats(&reduce(ReduceOp::Max, z.clone(), &[0]), &[], &[-0.0]);
    assert_floats(&reduce(ReduceOp::Prod, z, &[0]), &[], &[0.0]);
    let p = Tensor::f32s(&[3], vec![-0.0, 2.0, 3.0]);
    assert_floats(&reduce(ReduceOp::Prod, p, &[0]), &[], &[-0.0]);
}

#[test]
fn float_max_min_propagate_nan_and_order_zeros() {
    let nan = f32::NAN;
    let x = Tensor::f32s(&[2, 3], vec![1.0, nan, 3.0, -0.0, 0.0, -0.0]);
    assert_floats(
        &reduce(ReduceOp::Max, x.clone(), &[1]),
        &[2],
        &[f64::NAN, 0.0],
    );
    assert_floats(
        &reduce(ReduceOp::Min, x.clone(), &[1]),
        &[2],
        &[f64::NAN, -0.0],
    );
    assert_floats(&reduce(ReduceOp::Sum, x, &[1]), &[2], &[f64::NAN, 0.0]);
    let infs = Tensor::f64s(&[2], vec![f64::INFINITY, f64::NEG_INFINITY]);
    assert_floats(&reduce(ReduceOp::Sum, infs.clone(), &[0]), &[], &[f64::NAN]);
    assert_floats(
        &reduce(ReduceOp::Max, infs.clone(), &[0]),
        &[],
        &[f64::INFINITY],
    );
    assert_floats(
        &reduce(ReduceOp::Min, infs, &[0]),
        &[],
        &[f64::NEG_INFINITY],
    );
}

#[test]
fn integer_sums_and_products_wrap() {
    assert_eq!(
        reduce(ReduceOp::Sum, i32v(&[i32::MAX, 1, 5]), &[0]),
        Tensor::i32s(&[], vec![i32::MIN + 5])
    );
    assert_eq!(
        reduce(ReduceOp::Sum, u8v(&[200, 100]), &[0]),
        Tensor::u8s(&[], vec![44])
    );
    assert_eq!(
        reduce(ReduceOp::Prod, u8v(&[16, 16, 3]), &[0]),
        Tensor::u8s(&[], vec![0])
    );
    assert_eq!(
        reduce(ReduceOp::Prod, i64v(&[1 << 32, 1 << 31, 2]), &[0]),
        Tensor::i64s(&[], vec![0])
    );
    assert_eq!(
        reduce(ReduceOp::Prod, i64v(&[-3, 4, -5]), &[0]),
        Tensor::i64s(&[], vec![60])
    );
    assert_eq!(
        reduce(ReduceOp::Max, u8v(&[3, 200, 7]), &[0]),
        Tensor::u8s(&[], vec![200])
    );
    assert_eq!(
        reduce(ReduceOp::Min, i32v(&[3, -200, 7]), &[0]),
        Tensor::i32s(&[], vec![-200])
    );
}

#[test]
fn bool_max_is_any_and_min_is_all() {
    let x = Tensor::bools(&[3, 2], vec![false, false, true, false, true, true]);
    assert_eq!(
        reduce(ReduceOp::Max, x.clone(), &[1]),
        Tensor::bools(&[3], vec![false, true, true])
    );
    assert_eq!(
        reduce(ReduceOp::Min, x.clone(), &[1]),
        Tensor::bools(&[3], vec![false, false, true])
    );
    assert_eq!(
        reduce(ReduceOp::Max, x.clone(), &[0]),
        Tensor::bools(&[2], vec![true, true])
    );
    assert_eq!(
        reduce(ReduceOp::Min, x, &[0]),
        Tensor::bools(&[2], vec![false, false])
    );
}
