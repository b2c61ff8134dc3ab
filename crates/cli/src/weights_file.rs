//! Named weights as a `.safetensors` file: what `accy import` writes beside a program and what
//! `--weights FILE` reads back.
//!
//! Dtypes map one to one: `F32`, `F64`, `I32`, `I64`, `U8`, `BOOL`; any other dtype in a file
//! is refused with its name. Data is little-endian and row-major, as accy's buffers are.

use accy_ir::{DType, Tensor, TensorData};
use safetensors::{Dtype, SafeTensors};

fn to_safetensors(d: DType) -> Dtype {
    match d {
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::U8 => Dtype::U8,
        _ => Dtype::BOOL,
    }
}

fn from_safetensors(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::U8 => DType::U8,
        Dtype::BOOL => DType::Bool,
        _ => return None,
    })
}

/// The `.safetensors` bytes holding `weights` (names must be unique).
pub fn write(weights: &[(String, Tensor)]) -> Result<Vec<u8>, String> {
    let bytes: Vec<(String, Vec<u8>, Vec<usize>, Dtype)> = weights
        .iter()
        .map(|(name, t)| {
            let shape = t
                .dims()
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| format!("`{name}` is too large")))
                .collect::<Result<Vec<usize>, String>>()?;
            Ok((
                name.clone(),
                t.data().to_le_bytes(),
                shape,
                to_safetensors(t.dtype()),
            ))
        })
        .collect::<Result<_, String>>()?;
    let views = bytes
        .iter()
        .map(|(name, data, shape, dtype)| {
            safetensors::tensor::TensorView::new(*dtype, shape.clone(), data)
                .map(|v| (name.as_str(), v))
                .map_err(|e| format!("`{name}`: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    safetensors::serialize(views, None).map_err(|e| e.to_string())
}

/// The tensors in `.safetensors` bytes, in the file's order.
pub fn read(bytes: &[u8]) -> Result<Vec<(String, Tensor)>, String> {
    let file =
        SafeTensors::deserialize(bytes).map_err(|e| format!("not a safetensors file: {e}"))?;
    let mut out = Vec::new();
    for (name, view) in file.iter() {
        let dtype = from_safetensors(view.dtype()).ok_or_else(|| {
            format!(
                "`{name}` has dtype {:?}; accy reads F32, F64, I32, I64, U8 and BOOL",
                view.dtype()
            )
        })?;
        let data = if dtype == DType::Bool {
            TensorData::Bool(view.data().iter().map(|&b| b != 0).collect())
        } else {
            TensorData::from_le_bytes(dtype, view.data())
                .ok_or_else(|| format!("`{name}` holds a partial element"))?
        };
        let dims: Vec<u64> = view.shape().iter().map(|&d| d as u64).collect();
        let tensor = Tensor::new(&dims, data).map_err(|e| format!("`{name}`: {e}"))?;
        out.push((name.to_owned(), tensor));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_round_trip_and_bad_files_are_refused() {
        let weights = vec![
            (
                "w".to_owned(),
                Tensor::f32s(&[2, 2], vec![1.0, -2.0, 0.5, 8.0]),
            ),
            ("ids".to_owned(), Tensor::i64s(&[3], vec![1, -1, 7])),
            ("mask".to_owned(), Tensor::bools(&[2], vec![true, false])),
            ("s".to_owned(), Tensor::f64s(&[], vec![2.5])),
        ];
        let bytes = write(&weights).unwrap();
        let mut back = read(&bytes).unwrap();
        back.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want = weights.clone();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(back, want);
        assert!(read(&[1, 2, 3]).is_err());
        assert!(read(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(read(&write(&[]).unwrap()).unwrap(), vec![]);
    }
}
