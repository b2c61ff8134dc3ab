//! Named weights in files: `.safetensors` (what `accy import` writes beside a program and
//! what `--weights FILE` reads back) and `.npy` (one array per file).
//!
//! [`map_safetensors`] and [`map_npy`] give a [`Weights`] for a program without copying: the
//! file is mapped read-only with `memmap2` and each tensor is used in place, copied only when
//! its place in the file is not aligned to its element (safetensors and numpy writers align
//! data, so in practice nothing is copied). A tensor the program has no weight for, or whose
//! dtype or shape differs from the program's, is refused with both sides named
//! ([`WeightsFileError`]). [`read`] and [`write`] convert whole files to and from tensors.
//!
//! Dtypes map one to one: `F32`, `F64`, `I32`, `I64`, `U8`, `BOOL`; any other dtype in a file
//! is refused with its name. Data is little-endian and row-major, as accy's buffers are.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use accy_ir::{DType, Program, Tensor, TensorData, Type};
use accy_session::{MappedWeight, WeightError, Weights};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};

use crate::npy;

/// Why a weights file could not give a program's weights. Each variant names the file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WeightsFileError {
    /// The file could not be opened or mapped.
    #[error("reading {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The system's message.
        message: String,
    },
    /// The file is not a valid `.safetensors` or `.npy` file.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor in the file has a dtype accy does not have.
    #[error("{path}: {name:?} has dtype {dtype}; accy reads F32, F64, I32, I64, U8 and BOOL")]
    Dtype {
        /// The file.
        path: String,
        /// The tensor.
        name: String,
        /// Its dtype, as the file names it.
        dtype: String,
    },
    /// A tensor in the file is not a weight of the program.
    #[error("{path}: the program has no weight named {name:?} (its weights: {weights})")]
    Unknown {
        /// The file.
        path: String,
        /// The tensor.
        name: String,
        /// The program's weight names, comma separated.
        weights: String,
    },
    /// A tensor's dtype or shape differs from the program's weight of that name.
    #[error("{path}: {name:?} is {file} in the file, but the program's weight is {program}")]
    Mismatch {
        /// The file.
        path: String,
        /// The weight.
        name: String,
        /// Its type in the file.
        file: Box<Type>,
        /// Its type in the program.
        program: Box<Type>,
    },
    /// A bool tensor holds a byte other than 0 or 1.
    #[error("{path}: bool weight {name:?} has byte {byte} at element {index}, not 0 or 1")]
    BadBool {
        /// The file.
        path: String,
        /// The weight.
        name: String,
        /// The element.
        index: usize,
        /// The byte found.
        byte: u8,
    },
    /// The weights could not be assembled (out of memory for a copy, repeated names).
    #[error("{path}: {source}")]
    Weights {
        /// The file.
        path: String,
        /// Why.
        source: WeightError,
    },
}

/// Maps `path` read-only.
///
/// # Safety
/// As for [`map_safetensors`].
unsafe fn map(path: &Path) -> Result<Mmap, WeightsFileError> {
    let io = |e: std::io::Error| WeightsFileError::Io {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the caller promises the file is not changed or truncated while mapped.
    unsafe { Mmap::map(&file) }.map_err(io)
}

/// One tensor found in a file: its name, type and bytes in the mapping.
struct Found {
    name: String,
    ty: Type,
    range: Range<usize>,
}

/// Checks `found` against `program`'s weights (name, dtype, shape) and bool bytes, and gives
/// the mapped weights.
fn check(
    path: &Path,
    program: &Program,
    map: Mmap,
    found: Vec<Found>,
) -> Result<Weights, WeightsFileError> {
    let path_text = path.display().to_string();
    for f in &found {
        let Some((_, p)) = program.weights().find(|(_, p)| p.name == f.name) else {
            let names: Vec<&str> = program.weights().map(|(_, p)| p.name.as_str()).collect();
            return Err(WeightsFileError::Unknown {
                path: path_text,
                name: f.name.clone(),
                weights: if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                },
            });
        };
        if p.ty != f.ty {
            return Err(WeightsFileError::Mismatch {
                path: path_text,
                name: f.name.clone(),
                file: Box::new(f.ty.clone()),
                program: Box::new(p.ty.clone()),
            });
        }
        if f.ty.dtype == DType::Bool {
            if let Some((index, &byte)) = map[f.range.clone()]
                .iter()
                .enumerate()
                .find(|(_, &b)| b > 1)
            {
                return Err(WeightsFileError::BadBool {
                    path: path_text,
                    name: f.name.clone(),
                    index,
                    byte,
                });
            }
        }
    }
    let entries: Vec<MappedWeight<'_>> = found
        .iter()
        .map(|f| MappedWeight {
            name: &f.name,
            range: f.range.clone(),
            alignment: f.ty.dtype.alignment() as usize,
        })
        .collect();
    Weights::from_mapping(map, &entries).map_err(|source| WeightsFileError::Weights {
        path: path_text,
        source,
    })
}

/// The weights of `program` in the `.safetensors` file at `path`, except those named in
/// `skip`, used in place from a read-only mapping of the file (see the module
/// documentation). Every other tensor in the file must be a weight of the program with the
/// same dtype and shape; the program may have weights the file lacks.
///
/// # Safety
/// The file must not be changed or truncated while the returned weights (or any clone, or
/// anything loaded with them) live: its pages are the weights' memory.
pub unsafe fn map_safetensors(
    path: &Path,
    program: &Program,
    skip: &[&str],
) -> Result<Weights, WeightsFileError> {
    // SAFETY: the caller's promise, passed on.
    let map = unsafe { map(path) }?;
    let format = |message: String| WeightsFileError::Format {
        path: path.display().to_string(),
        message,
    };
    let file = SafeTensors::deserialize(&map)
        .map_err(|e| format(format!("not a safetensors file: {e}")))?;
    let base = map.as_ptr() as usize;
    let mut found = Vec::new();
    for (name, view) in file.iter() {
        if skip.contains(&name) {
            continue;
        }
        let dtype = from_safetensors(view.dtype()).ok_or_else(|| WeightsFileError::Dtype {
            path: path.display().to_string(),
            name: name.to_owned(),
            dtype: format!("{:?}", view.dtype()),
        })?;
        let dims: Vec<u64> = view.shape().iter().map(|&d| d as u64).collect();
        let start = view.data().as_ptr() as usize - base;
        found.push(Found {
            name: name.to_owned(),
            ty: Type::new(dtype, &dims),
            range: start..start + view.data().len(),
        });
    }
    drop(file);
    check(path, program, map, found)
}

/// The weights of `program` given as `.npy` files, one `(name, path)` per weight, each used
/// in place from a read-only mapping of its file. Each array must have the dtype and shape of
/// the program's weight of that name.
///
/// # Safety
/// As for [`map_safetensors`], for every file.
pub unsafe fn map_npy(
    files: &[(&str, &Path)],
    program: &Program,
) -> Result<Weights, WeightsFileError> {
    let mut weights = Weights::empty();
    for &(name, path) in files {
        // SAFETY: the caller's promise, passed on.
        let map = unsafe { map(path) }?;
        let array = npy::parse(&map).map_err(|e| WeightsFileError::Format {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let start = array.data.as_ptr() as usize - map.as_ptr() as usize;
        let found = vec![Found {
            name: name.to_owned(),
            ty: Type::new(array.dtype, &array.dims),
            range: start..start + array.data.len(),
        }];
        let one = check(path, program, map, found)?;
        weights = weights
            .merge(&one)
            .map_err(|source| WeightsFileError::Weights {
                path: path.display().to_string(),
                source,
            })?;
    }
    Ok(weights)
}

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

    fn program() -> Program {
        accy_ir::text::parse(
            "program {\n  %x = input \"x\" : f32[2]\n  %w = weight \"w\" : f32[2,2]\n  \
             %m = weight \"mask\" : bool[2]\n  %ids = weight \"ids\" : i64[3]\n  \
             %y = neg %x : f32[2]\n  output %y\n}\n",
        )
        .unwrap()
    }

    /// Writes `bytes` to a fresh file in the temporary directory.
    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("accy-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn tensors() -> Vec<(String, Tensor)> {
        vec![
            (
                "w".to_owned(),
                Tensor::f32s(&[2, 2], vec![1.0, -2.0, 0.5, 8.0]),
            ),
            ("ids".to_owned(), Tensor::i64s(&[3], vec![1, -1, 7])),
            ("mask".to_owned(), Tensor::bools(&[2], vec![true, false])),
        ]
    }

    #[test]
    fn safetensors_weights_are_mapped_in_place_and_checked_against_the_program() {
        let path = temp_file("ok.safetensors", &write(&tensors()).unwrap());
        // SAFETY: the test's own file, unchanged while mapped.
        let weights = unsafe { map_safetensors(&path, &program(), &[]) }.unwrap();
        assert_eq!(weights.len(), 3);
        assert_eq!(
            weights.mapped_bytes(),
            weights.given_bytes(),
            "nothing was copied"
        );
        assert_eq!(
            weights.get("w").unwrap(),
            &Tensor::f32s(&[2, 2], vec![1.0, -2.0, 0.5, 8.0])
                .data()
                .to_le_bytes()[..]
        );
        assert_eq!(weights.get("mask"), Some(&[1u8, 0][..]));
        // SAFETY: as above.
        let skipped = unsafe { map_safetensors(&path, &program(), &["ids"]) }.unwrap();
        assert_eq!(skipped.names().collect::<Vec<_>>().len(), 2);
        assert!(skipped.get("ids").is_none());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn mismatched_unknown_and_malformed_files_are_refused_naming_both_sides() {
        let mut other = tensors();
        other[0].1 = Tensor::f32s(&[4], vec![0.0; 4]);
        let path = temp_file("shape.safetensors", &write(&other).unwrap());
        // SAFETY: the test's own file, unchanged while mapped.
        let e = unsafe { map_safetensors(&path, &program(), &[]) }.unwrap_err();
        assert!(matches!(e, WeightsFileError::Mismatch { .. }), "{e}");
        assert!(
            e.to_string()
                .contains("\"w\" is f32[4] in the file, but the program's weight is f32[2,2]"),
            "{e}"
        );
        other[0].1 = Tensor::f64s(&[2, 2], vec![0.0; 4]);
        std::fs::write(&path, write(&other).unwrap()).unwrap();
        // SAFETY: as above.
        let e = unsafe { map_safetensors(&path, &program(), &[]) }.unwrap_err();
        assert!(e.to_string().contains("f64[2,2] in the file"), "{e}");
        other[0].0 = "v".into();
        std::fs::write(&path, write(&other).unwrap()).unwrap();
        // SAFETY: as above.
        let e = unsafe { map_safetensors(&path, &program(), &[]) }.unwrap_err();
        assert!(
            matches!(&e, WeightsFileError::Unknown { name, weights, .. } if name == "v" && weights == "w, mask, ids"),
            "{e}"
        );
        std::fs::write(&path, b"not a file of tensors").unwrap();
        // SAFETY: as above.
        let e = unsafe { map_safetensors(&path, &program(), &[]) }.unwrap_err();
        assert!(matches!(e, WeightsFileError::Format { .. }), "{e}");
        std::fs::remove_file(&path).unwrap();
        // SAFETY: no such file.
        let e = unsafe { map_safetensors(&path, &program(), &[]) }.unwrap_err();
        assert!(matches!(e, WeightsFileError::Io { .. }), "{e}");
    }

    #[test]
    fn npy_weights_are_mapped_in_place() {
        let w = temp_file("w.npy", &npy::write(&tensors()[0].1).unwrap());
        let ids = temp_file("ids.npy", &npy::write(&tensors()[1].1).unwrap());
        // SAFETY: the test's own files, unchanged while mapped.
        let weights =
            unsafe { map_npy(&[("w", w.as_path()), ("ids", ids.as_path())], &program()) }.unwrap();
        assert_eq!(weights.names().collect::<Vec<_>>(), vec!["w", "ids"]);
        assert_eq!(weights.mapped_bytes(), 16 + 24);
        assert_eq!(
            weights.get("ids").unwrap(),
            &tensors()[1].1.data().to_le_bytes()[..]
        );
        // SAFETY: as above.
        let e = unsafe { map_npy(&[("ids", w.as_path())], &program()) }.unwrap_err();
        assert!(
            e.to_string()
                .contains("is f32[2,2] in the file, but the program's weight is i64[3]"),
            "{e}"
        );
        std::fs::remove_file(&w).unwrap();
        std::fs::remove_file(&ids).unwrap();
    }
}
