//! Dot.

use super::*;

type Pair<'a> = (&'a [u32], &'a [u32]);

fn dot(lhs: Tensor, rhs: Tensor, batch: Pair, contract: Pair) -> Tensor {
    run(&[lhs, rhs], |b, v| b.dot(v[0], v[1], batch, contract))
}

const NONE: Pair<'static> = (&[], &[]);

#[test]
fn matmul_of_integers() {
    let l = Tensor::i32s(&[2, 3], vec![1, 2, 3, 4, 5, 6]);
    let r = Tensor::i32s(&[3, 2], vec![7, 8, 9, 10, 11, 12]);
    assert_eq!(
        run(&[l, r], |b, v| b.matmul(v[0], v[1])),
        Tensor::i32s(&[2, 2], vec![58, 64, 139, 154])
    );
}

#[test]
fn result_dims_are_batch_then_lhs_free_then_rhs_free() {
    // lhs [m=2, k=3], rhs [n=2, k=3] contracting k: result[m, n] = row m . row n.
    let l = Tensor::i64s(&[2, 3], vec![1, 2, 3, 4, 5, 6]);
    let r = Tensor::i64s(&[2, 3], vec![1, 0, 0, 1, 1, 1]);
    assert_eq!(
        dot(l, r, NONE, (&[1], &[1])),
        Tensor::i64s(&[2, 2], vec![1, 6, 4, 15])
    );
    // No contraction: the outer product, lhs axes first.
    let l = Tensor::i32s(&[2], vec![1, 2]);
    let r = Tensor::i32s(&[3], vec![1, 10, 100]);
    assert_eq!(
        dot(l, r, NONE, NONE),
        Tensor::i32s(&[2, 3], vec![1, 10, 100, 2, 20, 200])
    );
}

#[test]
fn batch_axes_pair_up_wherever_they_are() {
    // lhs [b=2, m=1, k=2], rhs [b=2, k=2, n=1].
    let l = Tensor::i32s(&[2, 1, 2], vec![1, 2, 3, 4]);
    let r = Tensor::i32s(&[2, 2, 1], vec![5, 6, 7, 8]);
    assert_eq!(
        dot(l, r, (&[0], &[0]), (&[2], &[1])),
        Tensor::i32s(&[2, 1, 1], vec![17, 53])
    );
    // lhs [k=2, b=2], rhs [b=2, k=2]: result[b] = sum_k lhs[k, b] * rhs[b, k].
    let l = Tensor::i32s(&[2, 2], vec![1, 2, 3, 4]);
    let r = Tensor::i32s(&[2, 2], vec![10, 20, 30, 40]);
    assert_eq!(
        dot(l, r, (&[1], &[0]), (&[0], &[1])),
        Tensor::i32s(&[2], vec![70, 220])
    );
    // lhs [m=2, b=2], rhs [n=1, b=2], no contraction: result[b, m, n] = lhs[m, b] * rhs[n, b].
    let l = Tensor::i32s(&[2, 2], vec![1, 2, 3, 4]);
    let r = Tensor::i32s(&[1, 2], vec![10, 100]);
    assert_eq!(
        dot(l, r, (&[1], &[1]), NONE),
        Tensor::i32s(&[2, 2, 1], vec![10, 30, 200, 400])
    );
}

#[test]
fn contracting_axes_pair_in_list_order() {
    // lhs (i, j) pairs with rhs (j, i): a full contraction of lhs with rhs transposed.
    let l = Tensor::i32s(&[2, 3], vec![1, 2, 3, 4, 5, 6]);
    let r = Tensor::i32s(&[3, 2], vec![1, 0, 0, 1, 2, 0]);
    // sum of l[i, j] * r[j, i] = 1*1 + 2*0 + 3*2 + 4*0 + 5*1 + 6*0.
    assert_eq!(
        dot(l, r, NONE, (&[0, 1], &[1, 0])),
        Tensor::i32s(&[], vec![12])
    );
}

#[test]
fn float_accumulation_runs_over_contracting_tuples_in_row_major_order() {
    let l = Tensor::f32s(&[2, 2], vec![1e8, 1.0, -1e8, 1.0]);
    let r = Tensor::f32s(&[2, 2], vec![1.0; 4]);
    // Tuples (lhs axis 0, lhs axis 1): terms 1e8, 1, -1e8, 1 in that order give 1.
    assert_floats(
        &dot(l.clone(), r.clone(), NONE, (&[0, 1], &[0, 1])),
        &[],
        &[1.0],
    );
    // Tuples (lhs axis 1, lhs axis 0): terms 1e8, -1e8, 1, 1 give 2.
    assert_floats(&dot(l, r, NONE, (&[1, 0], &[1, 0])), &[], &[2.0]);
}

#[test]
fn empty_contraction_gives_zero() {
    let l = Tensor::f32s(&[2, 0], vec![]);
    let r = Tensor::f32s(&[0, 3], vec![]);
    assert_floats(
        &run(&[l, r], |b, v| b.matmul(v[0], v[1])),
        &[2, 3],
        &[0.0; 6],
    );
    let l = Tensor::u8s(&[0], vec![]);
    assert_eq!(
        dot(l.clone(), l, NONE, (&[0], &[0])),
        Tensor::u8s(&[], vec![0])
    );
}

#[test]
fn empty_results() {
    let l = Tensor::f64s(&[0, 3], vec![]);
    let r = Tensor::f64s(&[3, 2], vec![1.0; 6]);
    assert_eq!(
        run(&[l, r], |b, v| b.matmul(v[0], v[1])),
        Tensor::f64s(&[0, 2], vec![])
    );
    let l = Tensor::i32s(&[0, 2, 2], vec![]);
    let r = Tensor::i32s(&[0, 2, 2], vec![]);
    assert_eq!(
        dot(l, r, (&[0], &[0]), (&[2], &[1])),
        Tensor::i32s(&[0, 2, 2], vec![])
    );
}

#[test]
fn integers_wrap() {
    let l = Tensor::i32s(&[2], vec![i32::MAX, 1]);
    let r = Tensor::i32s(&[2], vec![2, 1]);
    assert_eq!(dot(l, r, NONE, (&[0], &[0])), Tensor::i32s(&[], vec![-1]));
    let l = Tensor::u8s(&[2], vec![16, 16]);
    assert_eq!(
        dot(l.clone(), l, NONE, (&[0], &[0])),
        Tensor::u8s(&[], vec![0])
    );
    let l = Tensor::i64s(&[1], vec![i64::MIN]);
    let r = Tensor::i64s(&[1], vec![-1]);
    assert_eq!(
        dot(l, r, NONE, (&[0], &[0])),
        Tensor::i64s(&[], vec![i64::MIN])
    );
}

#[test]
fn float_special_values() {
    // Products of -0.0 added to the +0.0 start give +0.0.
    let l = Tensor::f32s(&[1, 2], vec![-0.0, 0.0]);
    let r = Tensor::f32s(&[2, 1], vec![1.0, -1.0]);
    assert_floats(&run(&[l, r], |b, v| b.matmul(v[0], v[1])), &[1, 1], &[0.0]);
    let l = Tensor::f64s(&[3, 2], vec![f64::NAN, 1.0, f64::INFINITY, 1.0, 2.0, 0.5]);
    let r = Tensor::f64s(&[2], vec![0.0, 1.0]);
    // Row 0: NaN * 0 + 1; row 1: inf * 0 = NaN; row 2: 0 + 0.5.
    assert_floats(
        &dot(l, r, NONE, (&[1], &[0])),
        &[3],
        &[f64::NAN, f64::NAN, 0.5],
    );
    let l = Tensor::f32s(&[2], vec![f32::INFINITY, f32::NEG_INFINITY]);
    let r = Tensor::f32s(&[2], vec![1.0, 1.0]);
    assert_floats(&dot(l, r, NONE, (&[0], &[0])), &[], &[f64::NAN]);
}
