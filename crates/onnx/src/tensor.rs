//! `TensorProto` to [`Tensor`]: dtype codes, dims, data in `raw_data`, in the typed fields or
//! in an external file beside the model.
//!
//! No allocation is sized from `dims` alone: the element count the dims imply is compared with
//! the data actually present (bytes in the input, or the length of the external file) first.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

use accy_ir::{DType, Dims, Tensor, TensorData, MAX_RANK};

use crate::error::{ErrorKind, ImportError};
use crate::schema::TensorProto;

/// The ONNX name of a `TensorProto.DataType` code, for messages.
pub(crate) fn onnx_dtype_name(code: i32) -> &'static str {
    const NAMES: [&str; 25] = [
        "undefined",
        "float",
        "uint8",
        "int8",
        "uint16",
        "int16",
        "int32",
        "int64",
        "string",
        "bool",
        "float16",
        "double",
        "uint32",
        "uint64",
        "complex64",
        "complex128",
        "bfloat16",
        "float8e4m3fn",
        "float8e4m3fnuz",
        "float8e5m2",
        "float8e5m2fnuz",
        "uint4",
        "int4",
        "float4e2m1",
        "float8e8m0",
    ];
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("an unknown data type")
}

/// The accy dtype of an ONNX `TensorProto.DataType` code, or a message saying why there is
/// none.
pub(crate) fn dtype(code: i32) -> Result<DType, String> {
    match code {
        1 => Ok(DType::F32),
        2 => Ok(DType::U8),
        6 => Ok(DType::I32),
        7 => Ok(DType::I64),
        9 => Ok(DType::Bool),
        11 => Ok(DType::F64),
        _ => Err(format!(
            "element type {} (code {code}) is not supported (accy has float, double, int32, \
             int64, uint8 and bool)",
            onnx_dtype_name(code)
        )),
    }
}

/// Converts a parsed `TensorProto` into a tensor. `what` names it in errors; `base_dir` is
/// where external data files are looked up (`None` refuses external data).
pub(crate) fn to_tensor(
    t: &TensorProto<'_>,
    what: &str,
    base_dir: Option<&Path>,
) -> Result<Tensor, ImportError> {
    let invalid = |m: String| ImportError::invalid(format!("{what}: {m}"));
    let dtype = dtype(t.data_type).map_err(|m| ImportError::unsupported(format!("{what}: {m}")))?;
    if t.segment {
        return Err(ImportError::unsupported(format!(
            "{what}: segmented tensors are not supported"
        )));
    }
    if t.dims.len() > MAX_RANK {
        return Err(ImportError::unsupported(format!(
            "{what}: rank {} exceeds accy's maximum rank {MAX_RANK}",
            t.dims.len()
        )));
    }
    let dims = t
        .dims
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| invalid(format!("negative dim {d}"))))
        .collect::<Result<Dims, _>>()?;
    let count = accy_ir::element_count(&dims)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| invalid(format!("dims {:?} have too many elements", t.dims)))?;
    let size = dtype.size_bytes() as usize;

    let data = if t.data_location == 1 {
        let bytes = read_external(t, what, base_dir, count, size)?;
        decode_le(dtype, &bytes).ok_or_else(|| invalid("external data is malformed".into()))?
    } else if let Some(raw) = t.raw_data {
        if has_typed_data(t) {
            return Err(invalid(
                "both raw_data and a typed data field are set".into(),
            ));
        }
        let expected = count.checked_mul(size);
        if expected != Some(raw.bytes.len()) {
            return Err(invalid(format!(
                "raw_data has {} bytes but dims {:?} of {} need {}",
                raw.bytes.len(),
                t.dims,
                onnx_dtype_name(t.data_type),
                count.saturating_mul(size)
            )));
        }
        decode_le(dtype, raw.bytes)
            .ok_or_else(|| invalid("raw_data holds a bool byte other than 0 or 1".into()))?
    } else {
        let data = typed_data(t, dtype).map_err(invalid)?;
        if data.len() != count {
            return Err(invalid(format!(
                "holds {} elements but dims {:?} need {count}",
                data.len(),
                t.dims
            )));
        }
        data
    };
    Tensor::new(&dims, data).map_err(|e| invalid(e.to_string()))
}

fn has_typed_data(t: &TensorProto<'_>) -> bool {
    !(t.float_data.is_empty()
        && t.int32_data.is_empty()
        && t.int64_data.is_empty()
        && t.double_data.is_empty()
        && t.uint64_data.is_empty()
        && t.string_data == 0)
}

/// Elements of `dtype` in little-endian `bytes` (length already checked).
fn decode_le(dtype: DType, bytes: &[u8]) -> Option<TensorData> {
    if dtype == DType::Bool {
        // ONNX writes bools as one byte each; any non-zero byte is true.
        return Some(TensorData::Bool(bytes.iter().map(|&b| b != 0).collect()));
    }
    TensorData::from_le_bytes(dtype, bytes)
}

/// The elements in the typed field ONNX uses for `dtype`.
fn typed_data(t: &TensorProto<'_>, dtype: DType) -> Result<TensorData, String> {
    let fields = [
        ("float_data", !t.float_data.is_empty()),
        ("int32_data", !t.int32_data.is_empty()),
        ("int64_data", !t.int64_data.is_empty()),
        ("double_data", !t.double_data.is_empty()),
        ("uint64_data", !t.uint64_data.is_empty()),
        ("string_data", t.string_data > 0),
    ];
    let expected = match dtype {
        DType::F32 => "float_data",
        DType::F64 => "double_data",
        DType::I64 => "int64_data",
        _ => "int32_data",
    };
    if let Some((name, _)) = fields.iter().find(|(n, set)| *set && *n != expected) {
        return Err(format!(
            "data is in {name}, but a {} tensor keeps it in {expected}",
            dtype.name()
        ));
    }
    let int32 = |range: std::ops::RangeInclusive<i64>| -> Result<Vec<i64>, String> {
        // int32_data holds each element as an int32 varint (sign-extended to 64 bits).
        t.int32_data
            .iter()
            .map(|&v| {
                let v = i64::from(v as i32);
                if range.contains(&v) {
                    Ok(v)
                } else {
                    Err(format!(
                        "int32_data value {v} does not fit {}",
                        dtype.name()
                    ))
                }
            })
            .collect()
    };
    Ok(match dtype {
        DType::F32 => TensorData::F32(t.float_data.iter().map(|&b| f32::from_bits(b)).collect()),
        DType::F64 => TensorData::F64(t.double_data.iter().map(|&b| f64::from_bits(b)).collect()),
        DType::I64 => TensorData::I64(t.int64_data.clone()),
        DType::I32 => TensorData::I32(
            int32(i64::from(i32::MIN)..=i64::from(i32::MAX))?
                .into_iter()
                .map(|v| v as i32)
                .collect(),
        ),
        DType::U8 => TensorData::U8(int32(0..=255)?.into_iter().map(|v| v as u8).collect()),
        _ => TensorData::Bool(int32(0..=1)?.into_iter().map(|v| v != 0).collect()),
    })
}

/// Reads a tensor's bytes from its external file, after checking that the location stays in
/// `base_dir` and that the file holds exactly the bytes the dims need.
fn read_external(
    t: &TensorProto<'_>,
    what: &str,
    base_dir: Option<&Path>,
    count: usize,
    size: usize,
) -> Result<Vec<u8>, ImportError> {
    let invalid = |m: String| ImportError::invalid(format!("{what}: external data: {m}"));
    let (mut location, mut offset, mut length) = (None, 0u64, None);
    for &(key, value) in &t.external_data {
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| invalid(format!("{key} `{value}` is not a byte count")))
        };
        match key {
            "location" => location = Some(value),
            "offset" => offset = number()?,
            "length" => length = Some(number()?),
            _ => {}
        }
    }
    let location = location.ok_or_else(|| invalid("no `location` is given".into()))?;
    let relative = Path::new(location);
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(invalid(format!(
            "location `{location}` must be a relative path inside the model's directory"
        )));
    }
    let Some(base) = base_dir else {
        return Err(ImportError::new(
            ErrorKind::Io,
            format!(
                "{what}: the data is in external file `{location}`, but the model was given as \
                 bytes without its directory"
            ),
        ));
    };
    let path = base.join(relative);
    let io = |e: std::io::Error| {
        ImportError::new(
            ErrorKind::Io,
            format!("{what}: reading external data {}: {e}", path.display()),
        )
    };
    let mut file = std::fs::File::open(&path).map_err(io)?;
    let file_len = file.metadata().map_err(io)?.len();
    let needed = (count as u64).saturating_mul(size as u64);
    let length = length.unwrap_or_else(|| file_len.saturating_sub(offset));
    if length != needed {
        return Err(invalid(format!(
            "{length} bytes are given but dims {:?} need {needed}",
            t.dims
        )));
    }
    if offset.checked_add(length).is_none_or(|end| end > file_len) {
        return Err(invalid(format!(
            "bytes {offset}..{} lie beyond the end of {} ({file_len} bytes)",
            offset.saturating_add(length),
            path.display()
        )));
    }
    let len = usize::try_from(length).map_err(|_| invalid("too large".into()))?;
    let mut bytes = vec![0u8; len];
    file.seek(SeekFrom::Start(offset)).map_err(io)?;
    file.read_exact(&mut bytes).map_err(io)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proto(dims: Vec<i64>, data_type: i32) -> TensorProto<'static> {
        TensorProto {
            dims,
            data_type,
            ..TensorProto::default()
        }
    }

    #[test]
    fn typed_and_raw_data_convert() {
        let mut t = proto(vec![2], 1);
        t.float_data = vec![1.5f32.to_bits(), (-2.0f32).to_bits()];
        assert_eq!(
            to_tensor(&t, "w", None).unwrap(),
            Tensor::f32s(&[2], vec![1.5, -2.0])
        );
        let mut t = proto(vec![3], 2);
        t.int32_data = vec![0, 255, 7];
        assert_eq!(
            to_tensor(&t, "w", None).unwrap(),
            Tensor::u8s(&[3], vec![0, 255, 7])
        );
        t.int32_data = vec![0, 256, 7];
        assert!(to_tensor(&t, "w", None)
            .unwrap_err()
            .message
            .contains("256"));
        let raw = [1i64.to_le_bytes(), (-1i64).to_le_bytes()].concat();
        let mut t = proto(vec![2, 1], 7);
        t.raw_data = Some(crate::pb::Msg::new(Box::leak(raw.into_boxed_slice())));
        assert_eq!(
            to_tensor(&t, "w", None).unwrap(),
            Tensor::i64s(&[2, 1], vec![1, -1])
        );
    }

    #[test]
    fn sizes_dtypes_and_locations_are_checked() {
        let mut t = proto(vec![1 << 40, 1 << 40], 1);
        t.raw_data = Some(crate::pb::Msg::new(&[0; 8]));
        let e = to_tensor(&t, "w", None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Invalid);
        let e = to_tensor(&proto(vec![2], 10), "w", None).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported);
        assert!(e.message.contains("float16"), "{e}");
        let e = to_tensor(&proto(vec![3], 1), "w", None).unwrap_err();
        assert!(e.message.contains("holds 0 elements"), "{e}");
        let mut t = proto(vec![2], 1);
        t.data_location = 1;
        t.external_data = vec![("location", "../secret.bin")];
        let e = to_tensor(&t, "w", Some(Path::new("/tmp"))).unwrap_err();
        assert!(e.message.contains("relative path inside"), "{e}");
        t.external_data = vec![("location", "no-such-file.bin")];
        let e = to_tensor(&t, "w", Some(Path::new("/nonexistent-dir"))).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Io);
    }
}
