//! Unary ops.

use super::*;
use crate::UnaryOp;

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

fn unary(op: UnaryOp, x: Tensor) -> Tensor {
    run(&[x], |b, v| b.unary(op, v[0]))
}

fn both_floats(op: UnaryOp, input: &[f64], expected: &[f64]) {
    let as_f32: Vec<f32> = input.iter().map(|&x| x as f32).collect();
    let expected_f32: Vec<f32> = expected.iter().map(|&x| x as f32).collect();
    assert_f32(&unary(op, f32v(&as_f32)), &expected_f32);
    assert_f64(&unary(op, f64v(input)), expected);
}

#[test]
fn neg_flips_the_sign_bit_of_floats() {
    both_floats(
        UnaryOp::Neg,
        &[0.0, -0.0, 1.5, INF, -INF, NAN],
        &[-0.0, 0.0, -1.5, -INF, INF, NAN],
    );
    let nan = unary(UnaryOp::Neg, f32v(&[f32::NAN]));
    let TensorData::F32(v) = nan.data() else {
        panic!()
    };
    assert_eq!(v[0].to_bits(), f32::NAN.to_bits() | 0x8000_0000);
}

#[test]
fn neg_wraps_integers() {
    assert_eq!(
        unary(UnaryOp::Neg, i32v(&[0, 1, i32::MIN, i32::MAX])),
        i32v(&[0, -1, i32::MIN, -i32::MAX])
    );
    assert_eq!(
        unary(UnaryOp::Neg, i64v(&[5, i64::MIN])),
        i64v(&[-5, i64::MIN])
    );
    assert_eq!(
        unary(UnaryOp::Neg, u8v(&[0, 1, 255, 128])),
        u8v(&[0, 255, 1, 128])
    );
}

#[test]
fn abs_clears_the_sign_bit_and_wraps() {
    both_floats(
        UnaryOp::Abs,
        &[-0.0, 0.0, -2.5, 3.0, -INF, NAN],
        &[0.0, 0.0, 2.5, 3.0, INF, NAN],
    );
    let negative_nan = f32::from_bits(0xFFC0_0000);
    let TensorData::F32(v) = unary(UnaryOp::Abs, f32v(&[negative_nan])).into_data() else {
        panic!()
    };
    assert_eq!(v[0].to_bits(), 0x7FC0_0000);
    assert_eq!(
        unary(UnaryOp::Abs, i32v(&[-3, 3, i32::MIN])),
        i32v(&[3, 3, i32::MIN])
    );
    assert_eq!(
        unary(UnaryOp::Abs, i64v(&[-3, i64::MIN])),
        i64v(&[3, i64::MIN])
    );
    assert_eq!(unary(UnaryOp::Abs, u8v(&[200, 0])), u8v(&[200, 0]));
}

#[test]
fn sqrt_and_rsqrt_special_values() {
    both_floats(
        UnaryOp::Sqrt,
        &[4.0, -0.0, 0.0, -1.0, INF, -INF, NAN],
        &[2.0, -0.0, 0.0, NAN, INF, NAN, NAN],
    );
    both_floats(
        UnaryOp::Rsqrt,
        &[4.0, 0.0, -0.0, INF, -1.0, NAN],
        &[0.5, INF, -INF, 0.0, NAN, NAN],
    );
    // Two correctly rounded steps: sqrt(2) = 1.41421354 in f32, then 1 / that.
    assert_f32(
        &unary(UnaryOp::Sqrt, f32v(&[2.0])),
        &[f32::from_bits(0x3FB5_04F3)],
    );
    assert_f32(&unary(UnaryOp::Rsqrt, f32v(&[2.0])), &[0.707_106_77_f32]);
}

#[test]
fn exp_and_log() {
    both_floats(
        UnaryOp::Exp,
        &[0.0, -0.0, -INF, INF, 1000.0, NAN],
        &[1.0, 1.0, 0.0, INF, INF, NAN],
    );
    assert_close(
        &unary(UnaryOp::Exp, f64v(&[1.0, -1.0])),
        &[std::f64::consts::E, 1.0 / std::f64::consts::E],
        1e-15,
    );
    both_floats(
        UnaryOp::Log,
        &[1.0, 0.0, -0.0, -1.0, INF, -INF, NAN],
        &[0.0, -INF, -INF, NAN, INF, NAN, NAN],
    );
    assert_close(
        &unary(UnaryOp::Log, f32v(&[std::f32::consts::E, 0.5])),
        &[1.0, -std::f64::consts::LN_2],
        1e-6,
    );
}

#[test]
fn tanh_sigmoid_erf_limits_and_values() {
    both_floats(
        UnaryOp::Tanh,
        &[0.0, -0.0, INF, -INF, NAN],
        &[0.0, -0.0, 1.0, -1.0, NAN],
    );
    assert_close(
        &unary(UnaryOp::Tanh, f32v(&[0.5, -0.5])),
        &[0.462_117_157_260_009_8, -0.462_117_157_260_009_8],
        1e-7,
    );
    both_floats(
        UnaryOp::Sigmoid,
        &[0.0, -INF, INF, NAN, -1000.0],
        &[0.5, 0.0, 1.0, NAN, 0.0],
    );
    assert_close(
        &unary(UnaryOp::Sigmoid, f64v(&[2.0, -2.0])),
        &[0.880_797_077_977_882_3, 0.119_202_922_022_117_58],
        1e-15,
    );
    both_floats(
        UnaryOp::Erf,
        &[0.0, -0.0, INF, -INF, NAN],
        &[0.0, -0.0, 1.0, -1.0, NAN],
    );
    assert_close(
        &unary(UnaryOp::Erf, f64v(&[1.0, -0.5])),
        &[0.842_700_792_949_714_9, -0.520_499_877_813_046_5],
        1e-15,
    );
    assert_close(
        &unary(UnaryOp::Erf, f32v(&[1.0])),
        &[0.842_700_792_949_714_9],
        1e-7,
    );
}

#[test]
fn sin_and_cos() {
    both_floats(
        UnaryOp::Sin,
        &[0.0, -0.0, INF, -INF, NAN],
        &[0.0, -0.0, NAN, NAN, NAN],
    );
    both_floats(UnaryOp::Cos, &[0.0, INF, -INF, NAN], &[1.0, NAN, NAN, NAN]);
    assert_close(
        &unary(UnaryOp::Sin, f64v(&[std::f64::consts::FRAC_PI_2, 1.0])),
        &[1.0, 0.841_470_984_807_896_5],
        1e-15,
    );
    assert_close(
        &unary(UnaryOp::Cos, f32v(&[std::f32::consts::PI])),
        &[-1.0],
        1e-6,
    );
}

#[test]
fn floor_ceil_round_keep_the_sign_of_zero() {
    both_floats(
        UnaryOp::Floor,
        &[1.5, -1.5, -0.0, 0.5, -0.5, INF, -INF, NAN],
        &[1.0, -2.0, -0.0, 0.0, -1.0, INF, -INF, NAN],
    );
    both_floats(
        UnaryOp::Ceil,
        &[1.2, -1.5, -0.5, -0.0, 0.5, INF, NAN],
        &[2.0, -1.0, -0.0, -0.0, 1.0, INF, NAN],
    );
    both_floats(
        UnaryOp::Round,
        &[2.5, 3.5, -0.5, 0.5, -2.5, 1.4, -1.5, 1.5, -0.0, -INF, NAN],
        &[2.0, 4.0, -0.0, 0.0, -2.0, 1.0, -2.0, 2.0, -0.0, -INF, NAN],
    );
    // Just below one half rounds down, not up.
    assert_f32(
        &unary(UnaryOp::Round, f32v(&[0.499_999_97, 4_194_304.5])),
        &[0.0, 4_194_304.0],
    );
}

#[test]
fn not_is_logical_for_bool_and_bitwise_for_integers() {
    assert_eq!(
        unary(UnaryOp::Not, boolv(&[true, false])),
        boolv(&[false, true])
    );
    assert_eq!(
        unary(UnaryOp::Not, u8v(&[0, 255, 0x0F])),
        u8v(&[255, 0, 0xF0])
    );
    assert_eq!(unary(UnaryOp::Not, i32v(&[0, -1, 5])), i32v(&[-1, 0, -6]));
    assert_eq!(unary(UnaryOp::Not, i64v(&[i64::MIN])), i64v(&[i64::MAX]));
}

#[test]
fn unary_ops_keep_dims_including_empty_and_scalar() {
    let empty = Tensor::f32s(&[2, 0], vec![]);
    for &op in UnaryOp::ALL.iter().filter(|&&op| op != UnaryOp::Not) {
        assert_eq!(unary(op, empty.clone()), empty);
    }
    let scalar = Tensor::i64s(&[], vec![-7]);
    assert_eq!(unary(UnaryOp::Abs, scalar), Tensor::i64s(&[], vec![7]));
    let matrix = Tensor::f64s(&[2, 2], vec![1.0, -2.0, 3.0, -4.0]);
    assert_eq!(
        unary(UnaryOp::Neg, matrix),
        Tensor::f64s(&[2, 2], vec![-1.0, 2.0, -3.0, 4.0])
    );
}
