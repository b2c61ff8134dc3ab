//! Binary ops, comparisons and select.

use super::*;
use crate::{BinaryOp, CompareOp};

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

fn binary(op: BinaryOp, lhs: Tensor, rhs: Tensor) -> Tensor {
    run(&[lhs, rhs], |b, v| b.binary(op, v[0], v[1]))
}

fn compare(op: CompareOp, lhs: Tensor, rhs: Tensor) -> Tensor {
    run(&[lhs, rhs], |b, v| b.compare(op, v[0], v[1]))
}

/// Checks `op` on f32 and f64 operands against the same hand-computed results.
fn both_floats(op: BinaryOp, lhs: &[f64], rhs: &[f64], expected: &[f64]) {
    let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    assert_f32(&binary(op, f32v(&f(lhs)), f32v(&f(rhs))), &f(expected));
    assert_f64(&binary(op, f64v(lhs), f64v(rhs)), expected);
}

#[test]
fn integer_add_sub_mul_wrap() {
    let (max, min) = (i32::MAX, i32::MIN);
    assert_eq!(
        binary(BinaryOp::Add, i32v(&[max, min, 2]), i32v(&[1, -1, 3])),
        i32v(&[min, max, 5])
    );
    assert_eq!(
        binary(BinaryOp::Sub, i32v(&[min, 5]), i32v(&[1, 7])),
        i32v(&[max, -2])
    );
    assert_eq!(
        binary(BinaryOp::Mul, i32v(&[max, 65536, -3]), i32v(&[2, 65536, 4])),
        i32v(&[-2, 0, -12])
    );
    assert_eq!(
        binary(BinaryOp::Add, i64v(&[i64::MAX]), i64v(&[1])),
        i64v(&[i64::MIN])
    );
    assert_eq!(
        binary(BinaryOp::Mul, i64v(&[1 << 32, 3]), i64v(&[1 << 32, -5])),
        i64v(&[0, -15])
    );
    assert_eq!(
        binary(BinaryOp::Add, u8v(&[250, 1]), u8v(&[10, 2])),
        u8v(&[4, 3])
    );
    assert_eq!(binary(BinaryOp::Sub, u8v(&[3]), u8v(&[5])), u8v(&[254]));
    assert_eq!(
        binary(BinaryOp::Mul, u8v(&[16, 15]), u8v(&[16, 17])),
        u8v(&[0, 255])
    );
}

#[test]
fn float_add_sub_mul_follow_ieee() {
    both_floats(
        BinaryOp::Add,
        &[1.5, INF, -0.0, 0.0, NAN, INF],
        &[2.25, -INF, -0.0, -0.0, 1.0, 1.0],
        &[3.75, NAN, -0.0, 0.0, NAN, INF],
    );
    both_floats(
        BinaryOp::Sub,
        &[1.0, 0.0, -0.0, INF],
        &[3.0, 0.0, 0.0, INF],
        &[-2.0, 0.0, -0.0, NAN],
    );
    both_floats(
        BinaryOp::Mul,
        &[1.5, -0.0, INF, -2.0],
        &[-2.0, 5.0, 0.0, -0.0],
        &[-3.0, -0.0, NAN, 0.0],
    );
    // f32 arithmetic rounds in f32: 2^24 + 1 is not representable.
    assert_f32(
        &binary(BinaryOp::Add, f32v(&[16_777_216.0]), f32v(&[1.0])),
        &[16_777_216.0],
    );
}

#[test]
fn integer_div_truncates_and_never_traps() {
    let min = i32::MIN;
    assert_eq!(
        binary(
            BinaryOp::Div,
            i32v(&[7, -7, 7, -7, 5, min, min, 0]),
            i32v(&[2, 2, -2, -2, 0, -1, 0, 0])
        ),
        i32v(&[3, -3, -3, 3, 0, min, 0, 0])
    );
    assert_eq!(
        binary(BinaryOp::Div, i64v(&[i64::MIN, -9]), i64v(&[-1, 0])),
        i64v(&[i64::MIN, 0])
    );
    assert_eq!(
        binary(BinaryOp::Div, u8v(&[7, 200, 255]), u8v(&[2, 0, 3])),
        u8v(&[3, 0, 85])
    );
}

#[test]
fn integer_rem_has_the_dividends_sign_and_never_traps() {
    let min = i32::MIN;
    assert_eq!(
        binary(
            BinaryOp::Rem,
            i32v(&[7, -7, 7, -7, 5, min, min, -5]),
            i32v(&[2, 2, -2, -2, 0, -1, 0, 0])
        ),
        i32v(&[1, -1, 1, -1, 5, 0, min, -5])
    );
    assert_eq!(
        binary(BinaryOp::Rem, i64v(&[i64::MIN, -9]), i64v(&[-1, 0])),
        i64v(&[0, -9])
    );
    assert_eq!(
        binary(BinaryOp::Rem, u8v(&[7, 200, 255]), u8v(&[2, 0, 16])),
        u8v(&[1, 200, 15])
    );
}

#[test]
fn integer_div_and_rem_satisfy_the_identity_everywhere() {
    let edge = [
        i32::MIN,
        i32::MIN + 1,
        -7,
        -2,
        -1,
        0,
        1,
        2,
        7,
        i32::MAX - 1,
        i32::MAX,
    ];
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for &x in &edge {
        for &y in &edge {
            xs.push(x);
            ys.push(y);
        }
    }
    let q = binary(BinaryOp::Div, i32v(&xs), i32v(&ys));
    let r = binary(BinaryOp::Rem, i32v(&xs), i32v(&ys));
    let (TensorData::I32(q), TensorData::I32(r)) = (q.data(), r.data()) else {
        panic!()
    };
    for i in 0..xs.len() {
        assert_eq!(
            q[i].wrapping_mul(ys[i]).wrapping_add(r[i]),
            xs[i],
            "{} / {}",
            xs[i],
            ys[i]
        );
    }
}

#[test]
fn float_div_and_rem() {
    both_floats(
        BinaryOp::Div,
        &[1.0, -1.0, 0.0, 1.0, 7.0, INF],
        &[0.0, 0.0, 0.0, -0.0, 2.0, INF],
        &[INF, -INF, NAN, -INF, 3.5, NAN],
    );
    both_floats(
        BinaryOp::Rem,
        &[5.5, -5.5, 5.5, 1.0, INF, 3.0, -3.0, -0.0, 4.0, NAN],
        &[2.0, 2.0, -2.0, 0.0, 2.0, INF, -INF, 1.0, 2.0, 1.0],
        &[1.5, -1.5, 1.5, NAN, NAN, 3.0, -3.0, -0.0, 0.0, NAN],
    );
    // fmod is exact: 1e20 is a multiple of 3 plus 1 (a naive x - trunc(x/y)*y gives 0 or 4).
    assert_f64(
        &binary(BinaryOp::Rem, f64v(&[1e20, -7.25]), f64v(&[3.0, 2.0])),
        &[1.0, -1.25],
    );
    // -4 rem 2 is -0.0: the result has the dividend's sign.
    assert_f64(&binary(BinaryOp::Rem, f64v(&[-4.0]), f64v(&[2.0])), &[-0.0]);
}

#[test]
fn float_pow_follows_c() {
    both_floats(
        BinaryOp::Pow,
        &[2.0, NAN, 1.0, -8.0, 0.0, -2.0, 2.0, -0.0, INF, 0.5],
        &[10.0, 0.0, NAN, 0.5, -1.0, 3.0, -1.0, 3.0, -1.0, INF],
        &[1024.0, 1.0, 1.0, NAN, INF, -8.0, 0.5, -0.0, 0.0, 0.0],
    );
}

#[test]
fn integer_pow_wraps_and_handles_negative_exponents() {
    let (min, max) = (i32::MIN, i32::MAX);
    assert_eq!(
        binary(
            BinaryOp::Pow,
            i32v(&[2, 3, 0, 0, 1, -1, -1, 2, 5, -2, 2, 2, 3, -1, 0, 7]),
            i32v(&[10, 0, 0, -1, -5, -3, -4, -1, 1, 3, 31, 32, max, min, max, -2])
        ),
        i32v(&[
            1024,
            1,
            1,
            0,
            1,
            -1,
            1,
            0,
            5,
            -8,
            min,
            0,
            -1_431_655_765,
            1,
            0,
            0
        ])
    );
    assert_eq!(
        binary(
            BinaryOp::Pow,
            i64v(&[2, 2, 3, -1, 7, -1]),
            i64v(&[63, 64, i64::MAX, -1, -2, i64::MAX])
        ),
        i64v(&[i64::MIN, 0, -6_148_914_691_236_517_205, -1, 0, -1])
    );
    assert_eq!(
        binary(
            BinaryOp::Pow,
            u8v(&[2, 3, 3, 0, 255, 255, 1]),
            u8v(&[8, 5, 6, 0, 255, 2, 200])
        ),
        u8v(&[0, 243, 217, 1, 255, 1, 1])
    );
}

#[test]
fn float_max_min_propagate_nan_and_order_zeros() {
    both_floats(
        BinaryOp::Max,
        &[NAN, 1.0, -0.0, 0.0, -0.0, 0.0, -INF, 1.0, -3.0],
        &[1.0, NAN, 0.0, -0.0, -0.0, 0.0, -INF, 2.0, INF],
        &[NAN, NAN, 0.0, 0.0, -0.0, 0.0, -INF, 2.0, INF],
    );
    both_floats(
        BinaryOp::Min,
        &[NAN, 1.0, -0.0, 0.0, -0.0, 0.0, INF, 1.0, -3.0],
        &[1.0, NAN, 0.0, -0.0, -0.0, 0.0, INF, 2.0, INF],
        &[NAN, NAN, -0.0, -0.0, -0.0, 0.0, INF, 1.0, -3.0],
    );
}

#[test]
fn integer_max_min_compare_values() {
    assert_eq!(
        binary(
            BinaryOp::Max,
            i32v(&[i32::MIN, 5, -1]),
            i32v(&[i32::MAX, -5, -1])
        ),
        i32v(&[i32::MAX, 5, -1])
    );
    assert_eq!(
        binary(BinaryOp::Min, i64v(&[i64::MIN, 5]), i64v(&[i64::MAX, -5])),
        i64v(&[i64::MIN, -5])
    );
    // u8 is unsigned: 200 > 100.
    assert_eq!(
        binary(BinaryOp::Max, u8v(&[200, 0]), u8v(&[100, 255])),
        u8v(&[200, 255])
    );
    assert_eq!(
        binary(BinaryOp::Min, u8v(&[200, 0]), u8v(&[100, 255])),
        u8v(&[100, 0])
    );
}

#[test]
fn logic_ops_on_bool_and_integers() {
    let (l, r) = (
        boolv(&[false, false, true, true]),
        boolv(&[false, true, false, true]),
    );
    assert_eq!(
        binary(BinaryOp::And, l.clone(), r.clone()),
        boolv(&[false, false, false, true])
    );
    assert_eq!(
        binary(BinaryOp::Or, l.clone(), r.clone()),
        boolv(&[false, true, true, true])
    );
    assert_eq!(
        binary(BinaryOp::Xor, l, r),
        boolv(&[false, true, true, false])
    );
    assert_eq!(
        binary(BinaryOp::And, u8v(&[0xF0, 0xFF]), u8v(&[0x3C, 0x01])),
        u8v(&[0x30, 0x01])
    );
    assert_eq!(
        binary(BinaryOp::Or, i32v(&[0x0F, i32::MIN]), i32v(&[0xF0, 1])),
        i32v(&[0xFF, i32::MIN + 1])
    );
    assert_eq!(
        binary(BinaryOp::Xor, i64v(&[-1, 6]), i64v(&[1, 3])),
        i64v(&[-2, 5])
    );
}

#[test]
fn shl_gives_zero_out_of_range() {
    assert_eq!(
        binary(
            BinaryOp::Shl,
            i32v(&[1, 1, 1, 1, -1, 3, 3]),
            i32v(&[0, 31, 32, -1, 4, 33, i32::MIN])
        ),
        i32v(&[1, i32::MIN, 0, 0, -16, 0, 0])
    );
    assert_eq!(
        binary(BinaryOp::Shl, i64v(&[1, 1, 1, 5]), i64v(&[63, 64, -64, 1])),
        i64v(&[i64::MIN, 0, 0, 10])
    );
    // A u8 amount is its unsigned value: 200 is out of range, not negative.
    assert_eq!(
        binary(BinaryOp::Shl, u8v(&[1, 1, 255, 1]), u8v(&[7, 8, 4, 200])),
        u8v(&[128, 0, 240, 0])
    );
}

#[test]
fn shr_logical_shifts_in_zeros() {
    assert_eq!(
        binary(
            BinaryOp::ShrLogical,
            i32v(&[-1, -1, -1, 16, -8, i32::MIN]),
            i32v(&[28, 32, -1, 2, 0, 31])
        ),
        i32v(&[15, 0, 0, 4, -8, 1])
    );
    assert_eq!(
        binary(
            BinaryOp::ShrLogical,
            i64v(&[-1, -1, -1]),
            i64v(&[60, 64, -1])
        ),
        i64v(&[15, 0, 0])
    );
    assert_eq!(
        binary(
            BinaryOp::ShrLogical,
            u8v(&[255, 128, 255, 255]),
            u8v(&[4, 7, 8, 255])
        ),
        u8v(&[15, 1, 0, 0])
    );
}

#[test]
fn shr_arithmetic_shifts_in_sign_bits() {
    assert_eq!(
        binary(
            BinaryOp::ShrArithmetic,
            i32v(&[-16, -16, 16, -1, 5, -5, 7, i32::MIN]),
            i32v(&[2, 32, 32, 100, -1, -1, 31, 31])
        ),
        i32v(&[-4, -1, 0, -1, 0, -1, 0, -1])
    );
    assert_eq!(
        binary(
            BinaryOp::ShrArithmetic,
            i64v(&[i64::MIN, i64::MIN, 5, -5]),
            i64v(&[63, 64, -3, i64::MIN])
        ),
        i64v(&[-1, -1, 0, -1])
    );
    // u8 has no sign bit: the same as a logical shift, 0 out of range.
    assert_eq!(
        binary(
            BinaryOp::ShrArithmetic,
            u8v(&[255, 128, 200, 200]),
            u8v(&[4, 7, 8, 255])
        ),
        u8v(&[15, 1, 0, 0])
    );
}

#[test]
fn binary_ops_on_empty_and_scalar_operands() {
    let empty = Tensor::i32s(&[0, 3], vec![]);
    assert_eq!(binary(BinaryOp::Div, empty.clone(), empty.clone()), empty);
    let scalar = |x| Tensor::u8s(&[], vec![x]);
    assert_eq!(binary(BinaryOp::Sub, scalar(1), scalar(2)), scalar(255));
}

#[test]
fn float_comparisons_follow_ieee() {
    let lhs = [1.0, 1.0, 2.0, NAN, -0.0, NAN, -INF];
    let rhs = [1.0, 2.0, 1.0, 1.0, 0.0, NAN, INF];
    let (t, f) = (true, false);
    let table = [
        (CompareOp::Eq, [t, f, f, f, t, f, f]),
        (CompareOp::Ne, [f, t, t, t, f, t, t]),
        (CompareOp::Lt, [f, t, f, f, f, f, t]),
        (CompareOp::Le, [t, t, f, f, t, f, t]),
        (CompareOp::Gt, [f, f, t, f, f, f, f]),
        (CompareOp::Ge, [t, f, t, f, t, f, f]),
    ];
    let lhs32: Vec<f32> = lhs.iter().map(|&x| x as f32).collect();
    let rhs32: Vec<f32> = rhs.iter().map(|&x| x as f32).collect();
    for (op, expected) in table {
        assert_eq!(
            compare(op, f64v(&lhs), f64v(&rhs)),
            boolv(&expected),
            "{op}"
        );
        assert_eq!(
            compare(op, f32v(&lhs32), f32v(&rhs32)),
            boolv(&expected),
            "{op}"
        );
    }
}

#[test]
fn integer_and_bool_comparisons() {
    let (t, f) = (true, false);
    assert_eq!(
        compare(CompareOp::Lt, u8v(&[200, 1, 5]), u8v(&[100, 2, 5])),
        boolv(&[f, t, f])
    );
    assert_eq!(
        compare(
            CompareOp::Lt,
            i32v(&[-1, i32::MIN, 3]),
            i32v(&[1, i32::MAX, 3])
        ),
        boolv(&[t, t, f])
    );
    assert_eq!(
        compare(
            CompareOp::Ge,
            i64v(&[-1, i64::MIN, 3]),
            i64v(&[1, i64::MAX, 3])
        ),
        boolv(&[f, f, t])
    );
    let (l, r) = (boolv(&[f, t, f, t]), boolv(&[f, f, t, t]));
    let table = [
        (CompareOp::Eq, [t, f, f, t]),
        (CompareOp::Ne, [f, t, t, f]),
        (CompareOp::Lt, [f, f, t, f]),
        (CompareOp::Le, [t, f, t, t]),
        (CompareOp::Gt, [f, t, f, f]),
        (CompareOp::Ge, [t, t, f, t]),
    ];
    for (op, expected) in table {
        assert_eq!(compare(op, l.clone(), r.clone()), boolv(&expected), "{op}");
    }
    let empty = Tensor::f32s(&[0], vec![]);
    assert_eq!(
        compare(CompareOp::Eq, empty.clone(), empty),
        Tensor::bools(&[0], vec![])
    );
}

#[test]
fn select_picks_per_element() {
    let select =
        |c: Tensor, t: Tensor, f: Tensor| run(&[c, t, f], |b, v| b.select(v[0], v[1], v[2]));
    assert_eq!(
        select(
            boolv(&[true, false, true]),
            i32v(&[1, 2, 3]),
            i32v(&[10, 20, 30])
        ),
        i32v(&[1, 20, 3])
    );
    // Elements move unchanged, NaN payloads and zero signs included.
    let odd_nan = f32::from_bits(0xFFC0_1234);
    let picked = select(
        boolv(&[true, false]),
        f32v(&[odd_nan, 1.0]),
        f32v(&[0.0, -0.0]),
    );
    let TensorData::F32(v) = picked.data() else {
        panic!()
    };
    assert_eq!(v[0].to_bits(), 0xFFC0_1234);
    assert_eq!(v[1].to_bits(), (-0.0f32).to_bits());
    assert_eq!(
        select(
            Tensor::bools(&[], vec![false]),
            Tensor::bools(&[], vec![true]),
            Tensor::bools(&[], vec![false])
        ),
        Tensor::bools(&[], vec![false])
    );
    assert_eq!(
        select(
            Tensor::bools(&[2, 0], vec![]),
            Tensor::u8s(&[2, 0], vec![]),
            Tensor::u8s(&[2, 0], vec![])
        ),
        Tensor::u8s(&[2, 0], vec![])
    );
}
