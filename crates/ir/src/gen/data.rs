//! Element values biased toward edge cases: for constants (derived from a seed) and for
//! arguments (proptest strategies that shrink toward small, plain numbers).

use proptest::prelude::*;

use super::choices::splitmix64;
use crate::{DType, Tensor, TensorData, Type};

/// Floats where implementations disagree: signed zeros and NaNs, infinities, subnormals,
/// rounding ties, overflow-prone magnitudes.
const F64_SPECIALS: [f64; 25] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f64::NAN,
    -f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    0.5,
    -0.5,
    2.5,
    -2.5,
    f64::MIN_POSITIVE,
    f64::from_bits(1),
    -f64::from_bits(1),
    f64::from_bits(0x000F_FFFF_FFFF_FFFF),
    1e300,
    -1e300,
    f64::MAX,
    f64::MIN,
    f64::EPSILON,
    0.1,
    710.0,
    -745.5,
    9.007_199_254_740_993e15,
];

const F32_SPECIALS: [f32; 25] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f32::NAN,
    -f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.5,
    -0.5,
    2.5,
    -2.5,
    f32::MIN_POSITIVE,
    f32::from_bits(1),
    -f32::from_bits(1),
    f32::from_bits(0x007F_FFFF),
    1e30,
    -1e30,
    f32::MAX,
    f32::MIN,
    f32::EPSILON,
    0.1,
    89.0,
    -104.0,
    16_777_217.0,
];

/// Integers at the wrap-around edges and at the shift-amount boundaries.
const I64_SPECIALS: [i64; 21] = [
    0,
    1,
    -1,
    2,
    -2,
    3,
    7,
    8,
    63,
    64,
    65,
    -64,
    i64::MIN,
    i64::MAX,
    i64::MIN + 1,
    i64::MAX - 1,
    255,
    256,
    1 << 32,
    i32::MAX as i64 + 1,
    i32::MIN as i64,
];

const I32_SPECIALS: [i32; 19] = [
    0,
    1,
    -1,
    2,
    -2,
    3,
    7,
    8,
    31,
    32,
    33,
    -32,
    i32::MIN,
    i32::MAX,
    i32::MIN + 1,
    i32::MAX - 1,
    255,
    256,
    1 << 16,
];

const U8_SPECIALS: [u8; 11] = [0, 1, 2, 3, 7, 8, 9, 127, 128, 254, 255];

/// Picks from a table by hash.
fn table<T: Copy>(t: &[T], h: u64) -> T {
    t[(h % t.len() as u64) as usize]
}

/// Small integers: shift amounts and gather indices that are mostly in range, some negative.
fn small(h: u64) -> i64 {
    (h % 13) as i64 - 4
}

fn f64_from(h: u64) -> f64 {
    match h % 10 {
        0..=3 => table(&F64_SPECIALS, h >> 8),
        4..=5 => small(h >> 8) as f64,
        6 => f64::from_bits(h.rotate_right(7)),
        _ => ((h >> 8) % 20_001) as f64 / 1000.0 - 10.0,
    }
}

fn f32_from(h: u64) -> f32 {
    match h % 10 {
        0..=3 => table(&F32_SPECIALS, h >> 8),
        4..=5 => small(h >> 8) as f32,
        6 => f32::from_bits((h >> 32) as u32),
        _ => ((h >> 8) % 20_001) as f32 / 1000.0 - 10.0,
    }
}

fn i64_from(h: u64) -> i64 {
    match h % 10 {
        0..=3 => table(&I64_SPECIALS, h >> 8),
        4..=6 => small(h >> 8),
        7 => h.rotate_right(7) as i64,
        _ => ((h >> 8) % 201) as i64 - 100,
    }
}

fn i32_from(h: u64) -> i32 {
    match h % 10 {
        0..=3 => table(&I32_SPECIALS, h >> 8),
        4..=6 => small(h >> 8) as i32,
        7 => (h >> 32) as i32,
        _ => ((h >> 8) % 201) as i32 - 100,
    }
}

fn u8_from(h: u64) -> u8 {
    match h % 10 {
        0..=3 => table(&U8_SPECIALS, h >> 8),
        4..=6 => ((h >> 8) % 9) as u8,
        _ => (h >> 8) as u8,
    }
}

/// `n` elements of `dtype` derived from `seed`, biased toward edge cases; seed 0 gives zeros.
pub(super) fn constant_data(dtype: DType, n: usize, seed: u64) -> TensorData {
    if seed == 0 {
        return TensorData::zeros(dtype, n);
    }
    let mut s = seed;
    let mut next = move || splitmix64(&mut s);
    match dtype {
        DType::F32 => TensorData::F32((0..n).map(|_| f32_from(next())).collect()),
        DType::F64 => TensorData::F64((0..n).map(|_| f64_from(next())).collect()),
        DType::I32 => TensorData::I32((0..n).map(|_| i32_from(next())).collect()),
        DType::I64 => TensorData::I64((0..n).map(|_| i64_from(next())).collect()),
        DType::U8 => TensorData::U8((0..n).map(|_| u8_from(next())).collect()),
        DType::Bool => TensorData::Bool((0..n).map(|_| next() & 1 == 1).collect()),
    }
}

fn f32_elem() -> impl Strategy<Value = f32> {
    prop_oneof![
        2 => (-4i32..=8).prop_map(|i| i as f32),
        3 => -10.0f32..10.0,
        3 => prop::sample::select(F32_SPECIALS.to_vec()),
        1 => prop::num::f32::ANY,
    ]
}

fn f64_elem() -> impl Strategy<Value = f64> {
    prop_oneof![
        2 => (-4i32..=8).prop_map(f64::from),
        3 => -10.0f64..10.0,
        3 => prop::sample::select(F64_SPECIALS.to_vec()),
        1 => prop::num::f64::ANY,
    ]
}

fn i32_elem() -> impl Strategy<Value = i32> {
    prop_oneof![
        3 => -4i32..=8,
        3 => prop::sample::select(I32_SPECIALS.to_vec()),
        2 => -1000i32..1000,
        1 => any::<i32>(),
    ]
}

fn i64_elem() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => -4i64..=8,
        3 => prop::sample::select(I64_SPECIALS.to_vec()),
        2 => -1000i64..1000,
        1 => any::<i64>(),
    ]
}

fn u8_elem() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => 0u8..=8,
        3 => prop::sample::select(U8_SPECIALS.to_vec()),
        2 => any::<u8>(),
    ]
}

/// Tensors of exactly `ty`, elements biased toward edge cases as [`super::arb_args`]
/// describes. Meant for small types: it materialises every element.
pub fn arb_tensor(ty: &Type) -> BoxedStrategy<Tensor> {
    // A count that does not fit `usize` cannot be materialised; asking for 0 elements makes
    // `Tensor::new` refuse every value, so the strategy rejects instead of panicking.
    let n = ty
        .element_count()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let dims = ty.dims.clone();
    macro_rules! tensor_of {
        ($elem:expr, $variant:ident) => {
            prop::collection::vec($elem, n)
                .prop_filter_map("element count must match the dims", move |v| {
                    Tensor::new(&dims, TensorData::$variant(v)).ok()
                })
                .boxed()
        };
    }
    match ty.dtype {
        DType::F32 => tensor_of!(f32_elem(), F32),
        DType::F64 => tensor_of!(f64_elem(), F64),
        DType::I32 => tensor_of!(i32_elem(), I32),
        DType::I64 => tensor_of!(i64_elem(), I64),
        DType::U8 => tensor_of!(u8_elem(), U8),
        DType::Bool => tensor_of!(any::<bool>(), Bool),
    }
}
