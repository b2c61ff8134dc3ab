//! One-line summaries of tensors for `accy run`: type, first values and statistics.

use accy_ir::{Tensor, TensorData};

/// `f32[2,3] = [0.5, -1.25, …] (6 values) min -1.25 max 3 mean 0.4`: the type, the first
/// `first` elements in row-major order, and for numeric dtypes the min, max and mean of all
/// elements (NaNs are skipped and counted); for bool the number of `true`s.
pub fn summarize(t: &Tensor, first: usize) -> String {
    let n = t.data().len();
    let shown: Vec<String> = match t.data() {
        TensorData::F32(v) => v.iter().take(first).map(|x| format!("{x}")).collect(),
        TensorData::F64(v) => v.iter().take(first).map(|x| format!("{x}")).collect(),
        TensorData::I32(v) => v.iter().take(first).map(|x| x.to_string()).collect(),
        TensorData::I64(v) => v.iter().take(first).map(|x| x.to_string()).collect(),
        TensorData::U8(v) => v.iter().take(first).map(|x| x.to_string()).collect(),
        TensorData::Bool(v) => v.iter().take(first).map(|x| x.to_string()).collect(),
        _ => Vec::new(),
    };
    let more = if n > first { ", …" } else { "" };
    let mut line = format!("{} = [{}{more}]", t.ty(), shown.join(", "));
    if n > first {
        line.push_str(&format!(" ({n} values)"));
    }
    if let TensorData::Bool(v) = t.data() {
        let trues = v.iter().filter(|&&b| b).count();
        line.push_str(&format!(" true {trues} of {n}"));
        return line;
    }
    let values: Vec<f64> = match t.data() {
        TensorData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        TensorData::F64(v) => v.clone(),
        TensorData::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        TensorData::I64(v) => v.iter().map(|&x| x as f64).collect(),
        TensorData::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
        _ => Vec::new(),
    };
    let finite: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if let (Some(min), Some(max)) = (
        finite.iter().copied().reduce(f64::min),
        finite.iter().copied().reduce(f64::max),
    ) {
        let mean = finite.iter().sum::<f64>() / finite.len() as f64;
        line.push_str(&format!(" min {min:.6} max {max:.6} mean {mean:.6}"));
    }
    let nans = values.len() - finite.len();
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
        let t = Tensor::new(&[2, 2], TensorData::F32(vec![1.0, -2.0, 3.0, f32::NAN])).unwrap();
        assert_eq!(
            summarize(&t, 2),
            "f32[2,2] = [1, -2, …] (4 values) min -2.000000 max 3.000000 mean 0.666667 (1 NaN)"
        );
        let b = Tensor::new(&[3], TensorData::Bool(vec![true, false, true])).unwrap();
        assert_eq!(
            summarize(&b, 8),
            "bool[3] = [true, false, true] true 2 of 3"
        );
    }
}
