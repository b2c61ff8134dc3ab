//! Typed access to tensor elements and row-major index arithmetic, shared by every op.
//!
//! Each op is written once as a generic function over [`Elem`] and instantiated per dtype with
//! [`with_elem_type!`], so the per-dtype code cannot drift apart.

use smallvec::smallvec;

use crate::{Dim, Dims, TensorData};

/// An element type of one [`TensorData`] variant.
pub(super) trait Elem: Copy + PartialOrd + 'static {
    /// The elements of `data` if it is this dtype's variant.
    fn slice(data: &TensorData) -> Option<&[Self]>;
    /// Wraps elements in this dtype's variant.
    fn wrap(v: Vec<Self>) -> TensorData;
}

macro_rules! impl_elem {
    ($($t:ty => $variant:ident),* $(,)?) => {
        $(
            impl Elem for $t {
                fn slice(data: &TensorData) -> Option<&[$t]> {
                    match data {
                        TensorData::$variant(v) => Some(v),
                        _ => None,
                    }
                }

                fn wrap(v: Vec<$t>) -> TensorData {
                    TensorData::$variant(v)
                }
            }
        )*
    };
}

impl_elem!(f32 => F32, f64 => F64, i32 => I32, i64 => I64, u8 => U8, bool => Bool);

/// Evaluates `$body` with the type alias `$T` bound to the element type of the dtype `$dtype`.
macro_rules! with_elem_type {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::DType::Bool => {
                type $T = bool;
                $body
            }
        }
    };
}
pub(super) use with_elem_type;

/// The elements of `data` as `T`, or an error naming the dtype mismatch (which a verified
/// program cannot produce).
pub(super) fn typed<T: Elem>(data: &TensorData) -> Result<&[T], String> {
    T::slice(data).ok_or_else(|| {
        format!(
            "expected {} elements, found {}",
            std::any::type_name::<T>(),
            data.dtype()
        )
    })
}

/// Every index of a tensor of `dims`, in row-major order (the last axis varies fastest): one
/// empty index for rank 0 and none at all when some dim is 0.
#[derive(Debug)]
pub(super) struct RowMajor {
    dims: Dims,
    next: Option<Dims>,
}

impl RowMajor {
    /// The indices of `dims`.
    pub(super) fn new(dims: &[Dim]) -> RowMajor {
        let next = if dims.contains(&0) {
            None
        } else {
            Some(smallvec![0; dims.len()])
        };
        RowMajor {
            dims: Dims::from_slice(dims),
            next,
        }
    }
}

impl Iterator for RowMajor {
    type Item = Dims;

    fn next(&mut self) -> Option<Dims> {
        let current = self.next.take()?;
        let mut successor = current.clone();
        for axis in (0..self.dims.len()).rev() {
            successor[axis] += 1;
            if successor[axis] < self.dims[axis] {
                self.next = Some(successor);
                break;
            }
            successor[axis] = 0;
        }
        // When every axis wrapped around, `next` stays `None`: `current` was the last index.
        Some(current)
    }
}

/// The position of `index` in a row-major buffer with element strides `strides`.
pub(super) fn flat(index: &[Dim], strides: &[Dim]) -> usize {
    index.iter().zip(strides).map(|(i, s)| i * s).sum::<u64>() as usize
}

/// Builds the elements `sources[s][i]` for each `(s, i)` of `picks`, in order: every op that
/// only moves elements (broadcast, transpose, pad, select, …) is a choice of `picks`.
/// All sources must have one dtype.
pub(super) fn pick(
    sources: &[&TensorData],
    picks: impl Iterator<Item = (usize, usize)>,
) -> Result<TensorData, String> {
    let first = sources.first().ok_or("pick without sources")?;
    with_elem_type!(first.dtype(), T => pick_typed::<T>(sources, picks))
}

fn pick_typed<T: Elem>(
    sources: &[&TensorData],
    picks: impl Iterator<Item = (usize, usize)>,
) -> Result<TensorData, String> {
    let sources = sources
        .iter()
        .map(|s| typed::<T>(s))
        .collect::<Result<Vec<&[T]>, String>>()?;
    picks
        .map(|(s, i)| {
            sources
                .get(s)
                .and_then(|source| source.get(i))
                .copied()
                .ok_or_else(|| format!("element {i} of source {s} does not exist"))
        })
        .collect::<Result<Vec<T>, String>>()
        .map(T::wrap)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_walks_last_axis_fastest() {
        let all: Vec<Vec<u64>> = RowMajor::new(&[2, 3]).map(|i| i.to_vec()).collect();
        assert_eq!(
            all,
            vec![
                vec![0, 0],
                vec![0, 1],
                vec![0, 2],
                vec![1, 0],
                vec![1, 1],
                vec![1, 2]
            ]
        );
        assert_eq!(RowMajor::new(&[]).count(), 1);
        assert_eq!(RowMajor::new(&[3, 0, 2]).count(), 0);
        assert_eq!(RowMajor::new(&[1, 1, 1]).count(), 1);
        assert_eq!(RowMajor::new(&[2, 1, 3, 1, 2]).count(), 12);
    }

    #[test]
    fn flat_uses_strides() {
        assert_eq!(flat(&[1, 2], &[3, 1]), 5);
        assert_eq!(flat(&[], &[]), 0);
    }

    #[test]
    fn pick_reports_bad_indices_instead_of_panicking() {
        let a = TensorData::I32(vec![1, 2]);
        let b = TensorData::I32(vec![9]);
        assert_eq!(
            pick(&[&a, &b], [(1, 0), (0, 1)].into_iter()),
            Ok(TensorData::I32(vec![9, 2]))
        );
        assert!(pick(&[&a], [(0, 2)].into_iter()).is_err());
        assert!(pick(&[&a], [(1, 0)].into_iter()).is_err());
        assert!(pick(&[&a, &TensorData::U8(vec![1])], [(0, 0)].into_iter()).is_err());
        assert!(pick(&[], [(0, 0)].into_iter()).is_err());
    }
}
