//! Reductions at the edge of their semantics: float max and min whose result is a signed
//! zero, which the vector code's two operand orders must settle as the interpreter does.

use accy_ir::{DType, ReduceOp};

use super::Conformance;
use crate::testing::kernels::{bits_of, edge_values, reduce_2d};

/// Float max and min reductions whose result is a zero: rows of every edge value on one side
/// of zero, both zeros among them (max +0, min -0), or only the zero of that side's sign;
/// the first row again with a NaN last; the preferred zero followed by the other alone; the
/// first row with one NaN (of either sign) at each of eight places within the first 64
/// points, so that on every tier some row's NaN reaches each accumulator of an unrolled loop
/// alone. 150 points a row, so every accumulator of every tier holds both zeros, and the NaN
/// reaches one accumulator only.
pub(super) fn signed_zero_extremes(s: &mut Conformance<'_>) -> Result<(), String> {
    for dtype in [DType::F32, DType::F64] {
        let value = |bytes: &[u8]| {
            if dtype == DType::F32 {
                f64::from(f32::from_bits(bits_of(bytes) as u32))
            } else {
                f64::from_bits(bits_of(bytes))
            }
        };
        let nan = if dtype == DType::F32 {
            f32::NAN.to_le_bytes().to_vec()
        } else {
            f64::NAN.to_le_bytes().to_vec()
        };
        let negative_nan = if dtype == DType::F32 {
            (-f32::NAN).to_le_bytes().to_vec()
        } else {
            (-f64::NAN).to_le_bytes().to_vec()
        };
        for op in [ReduceOp::Max, ReduceOp::Min] {
            // The side of zero each row keeps: at most 0 for max, at least 0 for min.
            let side = |v: f64| {
                if op == ReduceOp::Max {
                    v <= 0.0
                } else {
                    v >= 0.0
                }
            };
            let edges = edge_values(dtype);
            let both: Vec<Vec<u8>> = edges.iter().filter(|b| side(value(b))).cloned().collect();
            // The row without the zero the reduction prefers (+0 in a max, -0 in a min).
            let wins = |b: &[u8]| {
                value(b) == 0.0 && (value(b).is_sign_negative() == (op == ReduceOp::Min))
            };
            let one: Vec<Vec<u8>> = both.iter().filter(|b| !wins(b)).cloned().collect();
            let cols = 150usize;
            let row = |values: &[Vec<u8>]| -> Vec<u8> {
                (0..cols)
                    .flat_map(|i| values[i % values.len()].clone())
                    .collect()
            };
            let mut with_nan = row(&both);
            let size = dtype.size_bytes() as usize;
            with_nan.truncate((cols - 1) * size);
            with_nan.extend_from_slice(&nan);
            // The preferred zero first, then only the other: the accumulator lane that takes
            // it meets the other zero next, and every other lane holds only the other.
            let first = both.iter().find(|b| wins(b)).cloned().unwrap_or_default();
            let other = one
                .iter()
                .find(|b| value(b) == 0.0)
                .cloned()
                .unwrap_or_default();
            let mut zeros = first;
            zeros.extend(other.repeat(cols - 1));
            let mut input = [row(&both), row(&one), with_nan, zeros].concat();
            // Vector j of the row goes to accumulator j mod 4 of a 4-way unrolled loop: at
            // 4, 8 or 16 lanes, these places reach every one of them.
            let places = [1usize, 9, 17, 25, 33, 41, 49, 57];
            for (n, &at) in places.iter().enumerate() {
                let mut r = row(&both);
                let which = if n % 2 == 0 { &nan } else { &negative_nan };
                r[at * size..(at + 1) * size].copy_from_slice(which);
                input.extend(r);
            }
            let rows = 4 + places.len() as u64;
            let k = reduce_2d(op, dtype, rows, cols as u64);
            let out = vec![0xA5; rows as usize * size];
            s.check(&k, &[input, out], 1)?;
        }
    }
    Ok(())
}
