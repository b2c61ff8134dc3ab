//! Reading and writing NumPy `.npy` files for accy's dtypes.
//!
//! A small reader and writer written to the format's specification (numpy's
//! `numpy/lib/format.py`, versions 1.0 to 3.0) rather than the `npyz` crate: accy needs only
//! little-endian, C-order arrays of six dtypes, and `npyz` parses headers through a general
//! Python-literal parser (`py_literal`, built on `pest`) whose build cost outweighs the
//! ~150 lines here. The header is one Python dict literal with the keys `descr`,
//! `fortran_order` and `shape`, which is all this reader accepts.
//!
//! Dtypes: f32 `<f4`, f64 `<f8`, i32 `<i4`, i64 `<i8`, u8 `|u1`, bool `|b1` (one byte, 0 or
//! 1). The writer emits version 1.0 headers padded so the data starts at a multiple of 64
//! bytes, as numpy does. Big-endian data, Fortran order, object arrays and other dtypes are
//! refused with an error naming what was found.

use accy_ir::{DType, Tensor, TensorData};

/// Why bytes are not a `.npy` array this module reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NpyError {
    /// The file does not start with the `\x93NUMPY` magic.
    #[error("not a .npy file (no \\x93NUMPY magic)")]
    NotNpy,
    /// A format version other than 1.0, 2.0 or 3.0.
    #[error("unsupported .npy format version {0}.{1}")]
    Version(u8, u8),
    /// The file ends before its header or data does.
    #[error("truncated .npy file: {0}")]
    Truncated(String),
    /// Bytes follow the data the header describes (a concatenated or mislabelled file).
    #[error(
        "{} trailing bytes after the data: the header's shape needs {expected} data bytes, \
         the file has {found}",
        .found - .expected
    )]
    TrailingBytes {
        /// Data bytes the header's dtype and shape need.
        expected: usize,
        /// Data bytes the file has.
        found: usize,
    },
    /// The header dict is malformed or lacks a key.
    #[error("bad .npy header: {0}")]
    Header(String),
    /// A dtype accy has no equivalent for (or big-endian data).
    #[error("unsupported .npy dtype {0:?}: accy reads <f4, <f8, <i4, <i8, |u1 and |b1")]
    Dtype(String),
    /// The array is stored in Fortran (column-major) order.
    #[error("Fortran-order arrays are not supported; save a C-order copy (np.ascontiguousarray)")]
    FortranOrder,
    /// A bool byte other than 0 or 1.
    #[error("bool element {index} has byte {byte}, not 0 or 1")]
    BadBool {
        /// Element position.
        index: usize,
        /// The byte found.
        byte: u8,
    },
}

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The `descr` numpy writes for `dtype`, or `None` for a dtype this module cannot store.
pub fn descr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
        _ => return None,
    })
}

fn dtype_of(descr: &str) -> Option<DType> {
    Some(match descr {
        "<f4" => DType::F32,
        "<f8" => DType::F64,
        "<i4" => DType::I32,
        "<i8" => DType::I64,
        "|u1" | "<u1" | "u1" => DType::U8,
        "|b1" | "<b1" | "b1" => DType::Bool,
        _ => return None,
    })
}

/// The `.npy` bytes of `tensor` (version 1.0, C order, little-endian). A rank-0 tensor is
/// written with shape `()`, as numpy writes a 0-d array. Fails only for a dtype `.npy` files
/// of this module cannot hold.
pub fn write(tensor: &Tensor) -> Result<Vec<u8>, NpyError> {
    let mut out = header(tensor.dtype(), tensor.dims())?;
    out.extend_from_slice(&tensor.data().to_le_bytes());
    Ok(out)
}

/// The header of a `.npy` file (version 1.0, C order) holding an array of `dtype` and `dims`:
/// followed by the elements' little-endian bytes in row-major order, it is a whole file. For
/// writing large arrays straight from their buffers, without building the file in memory.
/// Fails only for a dtype `.npy` files of this module cannot hold.
pub fn header(dtype: DType, dims: &[u64]) -> Result<Vec<u8>, NpyError> {
    let descr = descr(dtype).ok_or_else(|| NpyError::Dtype(dtype.to_string()))?;
    let shape = match dims {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        _ => {
            let parts: Vec<String> = dims.iter().map(u64::to_string).collect();
            format!("({})", parts.join(", "))
        }
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // magic (6) + version (2) + header length (2) + dict + padding + '\n' ≡ 0 (mod 64).
    let unpadded = MAGIC.len() + 4 + dict.len() + 1;
    let padding = unpadded.next_multiple_of(64) - unpadded;
    let header_len = dict.len() + padding + 1;
    let mut out = Vec::with_capacity(unpadded + padding);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    // A dict of at most 8 dims of u64 is far below 65535 bytes, the v1.0 limit.
    out.extend_from_slice(&(header_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.extend(std::iter::repeat_n(b' ', padding));
    out.push(b'\n');
    Ok(out)
}

/// An array in `.npy` bytes, its data not yet copied out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Array<'a> {
    /// The element type.
    pub dtype: DType,
    /// The dims, outermost first.
    pub dims: Vec<u64>,
    /// The elements' little-endian bytes in row-major order (bools checked to be 0 or 1).
    pub data: &'a [u8],
}

/// The array in `bytes`: its dtype, dims and elements. Trailing bytes after the data are an
/// error (a truncated or concatenated file should not pass silently).
pub fn read(bytes: &[u8]) -> Result<Tensor, NpyError> {
    let array = parse(bytes)?;
    let elements = TensorData::from_le_bytes(array.dtype, array.data)
        .ok_or_else(|| NpyError::Truncated("data is not a whole number of elements".into()))?;
    Tensor::new(&array.dims, elements).map_err(|e| NpyError::Header(e.to_string()))
}

/// As [`read`], without copying the data: the array's dtype, dims and a view of its bytes.
pub fn parse(bytes: &[u8]) -> Result<Array<'_>, NpyError> {
    let rest = bytes.strip_prefix(MAGIC).ok_or(NpyError::NotNpy)?;
    let (&[major, minor], rest) = rest
        .split_first_chunk::<2>()
        .ok_or_else(|| NpyError::Truncated("no version".into()))?;
    let (header_len, rest) = match major {
        1 => {
            let (len, rest) = rest
                .split_first_chunk::<2>()
                .ok_or_else(|| NpyError::Truncated("no header length".into()))?;
            (usize::from(u16::from_le_bytes(*len)), rest)
        }
        2 | 3 => {
            let (len, rest) = rest
                .split_first_chunk::<4>()
                .ok_or_else(|| NpyError::Truncated("no header length".into()))?;
            let len = usize::try_from(u32::from_le_bytes(*len))
                .map_err(|_| NpyError::Header("header length overflows".into()))?;
            (len, rest)
        }
        _ => return Err(NpyError::Version(major, minor)),
    };
    if rest.len() < header_len {
        return Err(NpyError::Truncated(format!(
            "header of {header_len} bytes, {} present",
            rest.len()
        )));
    }
    let (header, data) = rest.split_at(header_len);
    let header = std::str::from_utf8(header)
        .map_err(|_| NpyError::Header("the header is not UTF-8 text".into()))?;
    let (dtype, fortran, dims) = parse_header(header)?;
    if fortran {
        return Err(NpyError::FortranOrder);
    }
    let count = dims
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .and_then(|n| n.checked_mul(dtype.size_bytes()))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| NpyError::Header(format!("shape {dims:?} is too large")))?;
    if data.len() > count {
        return Err(NpyError::TrailingBytes {
            expected: count,
            found: data.len(),
        });
    }
    if data.len() < count {
        return Err(NpyError::Truncated(format!(
            "shape {dims:?} of {dtype} needs {count} data bytes, the file has {}",
            data.len()
        )));
    }
    if dtype == DType::Bool {
        if let Some((index, &byte)) = data.iter().enumerate().find(|(_, &b)| b > 1) {
            return Err(NpyError::BadBool { index, byte });
        }
    }
    Ok(Array { dtype, dims, data })
}

/// `descr`, `fortran_order` and `shape` of a header dict such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }` followed by padding.
fn parse_header(header: &str) -> Result<(DType, bool, Vec<u64>), NpyError> {
    let bad = |what: &str| NpyError::Header(format!("{what} in {:?}", header.trim_end()));
    let body = header
        .trim_end()
        .strip_prefix('{')
        .and_then(|h| h.strip_suffix('}'))
        .ok_or_else(|| bad("expected a {…} dict"))?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    let mut rest = body.trim_start();
    while !rest.is_empty() {
        let (key, after) = quoted(rest).ok_or_else(|| bad("expected a quoted key"))?;
        let after = after
            .trim_start()
            .strip_prefix(':')
            .ok_or_else(|| bad("expected `:` after a key"))?
            .trim_start();
        let after = match key {
            "descr" => {
                let (value, after) = quoted(after).ok_or_else(|| bad("descr is not a string"))?;
                descr = Some(dtype_of(value).ok_or_else(|| NpyError::Dtype(value.into()))?);
                after
            }
            "fortran_order" => {
                let (value, after) = if let Some(a) = after.strip_prefix("False") {
                    (false, a)
                } else if let Some(a) = after.strip_prefix("True") {
                    (true, a)
                } else {
                    return Err(bad("fortran_order is not True or False"));
                };
                fortran = Some(value);
                after
            }
            "shape" => {
                let inner = after
                    .strip_prefix('(')
                    .ok_or_else(|| bad("shape is not a tuple"))?;
                let end = inner.find(')').ok_or_else(|| bad("unclosed shape tuple"))?;
                let dims = inner[..end]
                    .split(',')
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .map(|d| d.trim_end_matches('L').parse::<u64>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| bad("a shape entry is not a non-negative integer"))?;
                shape = Some(dims);
                &inner[end + 1..]
            }
            other => return Err(bad(&format!("unexpected key {other:?}"))),
        };
        let after = after.trim_start();
        rest = match after.strip_prefix(',') {
            Some(a) => a.trim_start(),
            None if after.is_empty() => after,
            None => return Err(bad("expected `,` between entries")),
        };
    }
    match (descr, fortran, shape) {
        (Some(d), Some(f), Some(s)) => Ok((d, f, s)),
        _ => Err(bad("missing descr, fortran_order or shape")),
    }
}

/// The contents of a `'…'` or `"…"` string at the start of `s`, and what follows it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = &s[1..];
    let end = inner.find(quote)?;
    Some((&inner[..end], &inner[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_round_trips_every_dtype() {
        let tensors = [
            Tensor::new(
                &[2, 3],
                TensorData::F32(vec![1.0, -2.5, 0.0, 3.0, 4.0, 5.0]),
            ),
            Tensor::new(&[], TensorData::F64(vec![std::f64::consts::PI])),
            Tensor::new(&[3], TensorData::I32(vec![-1, 0, i32::MAX])),
            Tensor::new(&[1, 2], TensorData::I64(vec![i64::MIN, 7])),
            Tensor::new(&[0], TensorData::U8(vec![])),
            Tensor::new(&[2], TensorData::Bool(vec![true, false])),
        ];
        for t in tensors {
            let t = t.unwrap();
            let bytes = write(&t).unwrap();
            let data_start = bytes.len() - t.data().to_le_bytes().len();
            assert_eq!(data_start % 64, 0);
            assert_eq!(read(&bytes).unwrap(), t);
        }
    }

    /// `bytes` with the first occurrence of `from` replaced by `to` (same length).
    fn patched(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
        let at = bytes
            .windows(from.len())
            .position(|w| w == from.as_bytes())
            .unwrap();
        let mut out = bytes.to_vec();
        out[at..at + to.len()].copy_from_slice(to.as_bytes());
        out
    }

    #[test]
    fn bad_files_are_refused_with_reasons() {
        let t = Tensor::new(&[2], TensorData::F32(vec![1.0, 2.0])).unwrap();
        let good = write(&t).unwrap();
        assert_eq!(read(b"hello"), Err(NpyError::NotNpy));
        assert!(matches!(
            read(&good[..good.len() - 1]),
            Err(NpyError::Truncated(_))
        ));
        let long = [good.as_slice(), &[0, 0, 0]].concat();
        assert_eq!(
            read(&long),
            Err(NpyError::TrailingBytes {
                expected: 8,
                found: 11
            })
        );
        assert_eq!(
            NpyError::TrailingBytes {
                expected: 8,
                found: 11
            }
            .to_string(),
            "3 trailing bytes after the data: the header's shape needs 8 data bytes, the file has 11"
        );
        assert_eq!(
            read(&patched(&good, "<f4", ">f4")),
            Err(NpyError::Dtype(">f4".into()))
        );
        assert_eq!(
            read(&patched(&good, "False", "True ")),
            Err(NpyError::FortranOrder)
        );
        assert!(matches!(
            read(&patched(&good, "'shape'", "'shapa'")),
            Err(NpyError::Header(_))
        ));
        let mut v9 = good;
        v9[6] = 9;
        assert_eq!(read(&v9), Err(NpyError::Version(9, 0)));
        let b = write(&Tensor::new(&[1], TensorData::U8(vec![2])).unwrap()).unwrap();
        assert_eq!(
            read(&patched(&b, "|u1", "|b1")),
            Err(NpyError::BadBool { index: 0, byte: 2 })
        );
    }
}
