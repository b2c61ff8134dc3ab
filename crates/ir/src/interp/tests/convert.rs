//! Convert and iota.

use super::*;
use crate::{DType, Type};

fn convert(x: Tensor, to: DType) -> Tensor {
    run(&[x], |b, v| b.convert(v[0], to))
}

fn iota(dtype: DType, dims: &[u64], axis: u32) -> Tensor {
    run(&[], |b, _| b.iota(Type::new(dtype, dims), axis))
}

#[test]
fn float_to_integer_truncates_and_saturates() {
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    assert_eq!(
        convert(
            f32v(&[1.9, -1.9, nan, inf, -inf, 3e9, -3e9, -0.0]),
            DType::I32
        ),
        i32v(&[1, -1, 0, i32::MAX, i32::MIN, i32::MAX, i32::MIN, 0])
    );
    assert_eq!(
        convert(
            f32v(&[-1.5, 255.9, 256.0, 300.0, nan, 0.99, -inf]),
            DType::U8
        ),
        u8v(&[0, 255, 255, 255, 0, 0, 0])
    );
    assert_eq!(
        convert(f64v(&[9.3e18, -9.3e18, 1e300, f64::NAN, -2.5]), DType::I64),
        i64v(&[i64::MAX, i64::MIN, i64::MAX, 0, -2])
    );
    assert_eq!(
        convert(f64v(&[2_147_483_647.9, -2_147_483_648.9]), DType::I32),
        i32v(&[i32::MAX, i32::MIN])
    );
}

#[test]
fn integer_to_integer_wraps_and_extends() {
    assert_eq!(
        convert(i32v(&[256, -1, 300, 255]), DType::U8),
        u8v(&[0, 255, 44, 255])
    );
    assert_eq!(convert(u8v(&[255, 7]), DType::I32), i32v(&[255, 7]));
    assert_eq!(convert(u8v(&[255]), DType::I64), i64v(&[255]));
    assert_eq!(
        convert(i32v(&[-1, i32::MIN]), DType::I64),
        i64v(&[-1, -2_147_483_648])
    );
    assert_eq!(
        convert(
            i64v(&[(1 << 32) + 5, -1, i64::MIN, 0xFFFF_FFFF]),
            DType::I32
        ),
        i32v(&[5, -1, 0, -1])
    );
    assert_eq!(convert(i64v(&[-255, 511]), DType::U8), u8v(&[1, 255]));
}

#[test]
fn integer_and_f64_to_float_round_to_nearest_even() {
    assert_f32(
        &convert(i64v(&[16_777_217, 16_777_219, -3]), DType::F32),
        &[16_777_216.0, 16_777_220.0, -3.0],
    );
    assert_f32(&convert(i64v(&[i64::MAX]), DType::F32), &[9.223_372e18]);
    assert_f64(
        &convert(i64v(&[(1 << 53) + 1, i64::MIN]), DType::F64),
        &[9_007_199_254_740_992.0, -(2f64.powi(63))],
    );
    assert_f32(
        &convert(i32v(&[i32::MAX, -1]), DType::F32),
        &[2_147_483_648.0, -1.0],
    );
    assert_f64(&convert(u8v(&[255, 0]), DType::F64), &[255.0, 0.0]);
    let half_ulp = 2f64.powi(-24);
    assert_f32(
        &convert(
            f64v(&[
                1e300,
                -1e300,
                1.0 + half_ulp,
                1.0 + 3.0 * half_ulp,
                -0.0,
                f64::NAN,
                1e-50,
            ]),
            DType::F32,
        ),
        &[
            f32::INFINITY,
            f32::NEG_INFINITY,
            1.0,
            1.0 + 2.0 * 2f32.powi(-23),
            -0.0,
            f32::NAN,
            0.0,
        ],
    );
    assert_f64(
        &convert(f32v(&[0.1, -0.0, f32::INFINITY]), DType::F64),
        &[f64::from(0.1f32), -0.0, f64::INFINITY],
    );
}

#[test]
fn anything_to_bool_is_nonzero() {
    assert_eq!(
        convert(
            f32v(&[0.0, -0.0, f32::NAN, 0.1, f32::NEG_INFINITY, 1e-45]),
            DType::Bool
        ),
        boolv(&[false, false, true, true, true, true])
    );
    assert_eq!(
        convert(f64v(&[-0.0, 2.0]), DType::Bool),
        boolv(&[false, true])
    );
    assert_eq!(
        convert(i32v(&[0, -1, 2]), DType::Bool),
        boolv(&[false, true, true])
    );
    assert_eq!(
        convert(i64v(&[1 << 40, 0]), DType::Bool),
        boolv(&[true, false])
    );
    assert_eq!(convert(u8v(&[0, 128]), DType::Bool), boolv(&[false, true]));
}

#[test]
fn bool_to_anything_is_zero_or_one() {
    let b = boolv(&[true, false]);
    assert_f32(&convert(b.clone(), DType::F32), &[1.0, 0.0]);
    assert_f64(&convert(b.clone(), DType::F64), &[1.0, 0.0]);
    assert_eq!(convert(b.clone(), DType::I32), i32v(&[1, 0]));
    assert_eq!(convert(b.clone(), DType::I64), i64v(&[1, 0]));
    assert_eq!(convert(b.clone(), DType::U8), u8v(&[1, 0]));
    assert_eq!(convert(b.clone(), DType::Bool), b);
}

#[test]
fn same_dtype_convert_is_the_identity_bit_for_bit() {
    let odd_nan = f32::from_bits(0x7FC0_0001);
    let x = f32v(&[odd_nan, -0.0, 1.5]);
    assert_eq!(convert(x.clone(), DType::F32), x);
    let empty = Tensor::i64s(&[3, 0], vec![]);
    assert_eq!(convert(empty, DType::U8), Tensor::u8s(&[3, 0], vec![]));
    assert_eq!(
        convert(Tensor::i32s(&[], vec![-1]), DType::U8),
        Tensor::u8s(&[], vec![255])
    );
}

#[test]
fn iota_counts_along_its_axis() {
    assert_eq!(
        iota(DType::I32, &[2, 3], 1),
        Tensor::i32s(&[2, 3], vec![0, 1, 2, 0, 1, 2])
    );
    assert_eq!(
        iota(DType::I64, &[2, 3], 0),
        Tensor::i64s(&[2, 3], vec![0, 0, 0, 1, 1, 1])
    );
    assert_floats(
        &iota(DType::F32, &[2, 1, 2], 2),
        &[2, 1, 2],
        &[0.0, 1.0, 0.0, 1.0],
    );
    assert_floats(&iota(DType::F64, &[3], 0), &[3], &[0.0, 1.0, 2.0]);
    assert_eq!(iota(DType::I64, &[0, 4], 1), Tensor::i64s(&[0, 4], vec![]));
}

#[test]
fn iota_wraps_large_indices_like_convert() {
    // u8 keeps the low 8 bits of the index.
    let TensorData::U8(v) = iota(DType::U8, &[300], 0).into_data() else {
        panic!()
    };
    assert_eq!((v[0], v[255], v[256], v[299]), (0, 255, 0, 43));
}
