//! One-line summaries of tensors for `accy run`: type, first values and statistics.
//!
//! A summary reads the tensor's bytes in one pass and allocates only its text, so an output of
//! any size is summarised in place, without a copy.

use std::fmt::Display;

use accy_ir::{DType, Type};

/// `f32[2,3] = [0.5, -1.25, …] (6 values) min -1.25 max 3 mean 0.4`: the type, the first
/// `first` elements in row-major order, and for numeric dtypes the min, max and mean of all
/// elements (NaNs are skipped and counted); for bool the number of `true`s. `bytes` are the
/// elements of `dtype` and `dims`, little-endian, row-major; a trailing partial element is
/// ignored.
pub fn summarize(dtype: DType, dims: &[u64], bytes: &[u8], first: usize) -> String {
    let ty = Type::new(dtype, dims);
    match dtype {
        DType::F32 => numeric(&ty, bytes, first, f32::from_le_bytes, f64::from),
        DType::F64 => numeric(&ty, bytes, first, f64::from_le_bytes, |x| x),
        DType::I32 => numeric(&ty, bytes, first, i32::from_le_bytes, f64::from),
        DType::I64 => numeric(&ty, bytes, first, i64::from_le_bytes, |x| x as f64),
        DType::U8 => numeric(&ty, bytes, first, u8::from_le_bytes, f64::from),
        DType::Bool => {
            let mut line = head(&ty, bytes.len(), first, bytes.iter().map(|&b| b != 0));
            let trues = bytes.iter().filter(|&&b| b != 0).count();
            line.push_str(&format!(" true {trues} of {}", bytes.len()));
            line
        }
        _ => head(&ty, 0, first, std::iter::empty::<u8>()),
    }
}

/// `type = [v0, v1, …] (n values)`.
fn head<T: Display>(ty: &Type, n: usize, first: usize, values: impl Iterator<Item = T>) -> String {
    let shown: Vec<String> = values.take(first).map(|v| v.to_string()).collect();
    let more = if n > first { ", …" } else { "" };
    let mut line = format!("{ty} = [{}{more}]", shown.join(", "));
    if n > first {
        line.push_str(&format!(" ({n} values)"));
    }
    line
}

/// The summary of a numeric tensor whose elements are `N`-byte values read by `read`.
fn numeric<T: Copy + Display, const N: usize>(
    ty: &Type,
    bytes: &[u8],
    first: usize,
    read: fn([u8; N]) -> T,
    to_f64: fn(T) -> f64,
) -> String {
    let values = || {
        bytes
            .chunks_exact(N)
            .map(move |c| read(c.try_into().unwrap_or([0; N])))
    };
    let mut line = head(ty, bytes.len() / N, first, values());
    // One pass, in element order: the same sum a collected `Iterator::sum` would give.
    let (mut min, mut max, mut sum, mut finite, mut nans) =
        (None::<f64>, None::<f64>, -0.0, 0u64, 0u64);
    for x in values().map(to_f64) {
        if x.is_nan() {
            nans += 1;
            continue;
        }
        min = Some(min.map_or(x, |m| m.min(x)));
        max = Some(max.map_or(x, |m| m.max(x)));
        sum += x;
        finite += 1;
    }
    if let (Some(min), Some(max)) = (min, max) {
        let mean = sum / finite as f64;
        line.push_str(&format!(" min {min:.6} max {max:.6} mean {mean:.6}"));
    }
    if nans > 0 {
        line.push_str(&format!(" ({nans} NaN)"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_type_values_and_statistics() {
        let bytes: Vec<u8> = [1.0f32, -2.0, 3.0, f32::NAN]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        assert_eq!(
            summarize(DType::F32, &[2, 2], &bytes, 2),
            "f32[2,2] = [1, -2, …] (4 values) min -2.000000 max 3.000000 mean 0.666667 (1 NaN)"
        );
        assert_eq!(
            summarize(DType::Bool, &[3], &[1, 0, 1], 8),
            "bool[3] = [true, false, true] true 2 of 3"
        );
        let ints: Vec<u8> = [7i64, -3].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(
            summarize(DType::I64, &[2], &ints, 8),
            "i64[2] = [7, -3] min -3.000000 max 7.000000 mean 2.000000"
        );
        assert_eq!(summarize(DType::U8, &[0], &[], 8), "u8[0] = []");
    }
}
