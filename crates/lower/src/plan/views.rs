//! Point maps: how the movement ops (broadcast, transpose, slice, reverse, size-1 reshapes) and
//! the operand indexing of reduce, dot, gather, pad and concat turn a point of one iteration
//! space into a point of another, and how that composes with a load's [`IndexMap`] and an
//! iota's [`crate::kernel::Node::Index`].
//!
//! Every coordinate of the source space is an affine function of at most one coordinate of the
//! new space (`offset + scale * j[src]`), which is exactly what those ops need and what keeps
//! the composition affine, so a whole chain of movement ops folds into one map.
//!
//! Canonical form: a dim of extent 0 or 1 only ever takes index 0, so its stride is set to 0
//! (and an index node reading it reads no dim). This keeps strides bounded by the sizes of the
//! buffers they walk, so composing maps cannot overflow `i64` except for absurd programs,
//! which are reported as unsupported.

use accy_ir::{Dim, Dims};
use smallvec::SmallVec;

use crate::error::CompileError;
use crate::kernel::IndexMap;

/// One coordinate of the source space as a function of the new point:
/// `offset + scale * j[src]`, or just `offset` when `src` is `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Coord {
    /// The new dim read, if any.
    pub(crate) src: Option<u32>,
    /// Multiplier of that dim's index.
    pub(crate) scale: i64,
    /// Added constant.
    pub(crate) offset: i64,
}

impl Coord {
    /// `j[src]`.
    fn of(src: usize) -> Coord {
        Coord {
            src: Some(src as u32),
            scale: 1,
            offset: 0,
        }
    }

    /// Always index 0.
    const ZERO: Coord = Coord {
        src: None,
        scale: 0,
        offset: 0,
    };
}

/// A map from points of a new space (`new_dims`) to points of a source space (one [`Coord`]
/// per source dim).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PointMap {
    /// One entry per source dim.
    pub(crate) coords: SmallVec<[Coord; 8]>,
    /// The new space.
    pub(crate) new_dims: Dims,
}

fn overflow() -> CompileError {
    CompileError::unsupported("index arithmetic overflows i64")
}

fn to_i64(v: u64) -> Result<i64, CompileError> {
    i64::try_from(v).map_err(|_| overflow())
}

impl PointMap {
    /// A source space of rank `source_rank` read at `offset + j[src]` per coordinate: the
    /// general "each source dim is one new dim, shifted" map (`srcs[d] = None` for index 0).
    pub(crate) fn shifted(srcs: &[(Option<usize>, i64)], new_dims: &[Dim]) -> PointMap {
        PointMap {
            coords: srcs
                .iter()
                .map(|&(src, offset)| Coord {
                    src: src.map(|s| s as u32),
                    scale: i64::from(src.is_some()),
                    offset,
                })
                .collect(),
            new_dims: Dims::from_slice(new_dims),
        }
    }

    /// `broadcast`: operand axis `i` reads result axis `axes[i]`, or 0 where its dim is 1.
    pub(crate) fn broadcast(x_dims: &[Dim], axes: &[u32], new_dims: &[Dim]) -> PointMap {
        PointMap {
            coords: x_dims
                .iter()
                .zip(axes)
                .map(|(&d, &a)| {
                    if d == 1 {
                        Coord::ZERO
                    } else {
                        Coord::of(a as usize)
                    }
                })
                .collect(),
            new_dims: Dims::from_slice(new_dims),
        }
    }

    /// `transpose`: result axis `i` is operand axis `perm[i]`.
    pub(crate) fn transpose(perm: &[u32], new_dims: &[Dim]) -> PointMap {
        let mut coords: SmallVec<[Coord; 8]> = SmallVec::from_elem(Coord::ZERO, perm.len());
        for (i, &p) in perm.iter().enumerate() {
            if let Some(c) = coords.get_mut(p as usize) {
                *c = Coord::of(i);
            }
        }
        PointMap {
            coords,
            new_dims: Dims::from_slice(new_dims),
        }
    }

    /// `slice`: operand index `start + j * stride` per axis. On a result dim of extent 0 or 1
    /// only `j = 0` occurs, so its stride is never used and may be any `u64`.
    pub(crate) fn slice(
        start: &[Dim],
        stride: &[Dim],
        new_dims: &[Dim],
    ) -> Result<PointMap, CompileError> {
        let coords = start
            .iter()
            .zip(stride)
            .enumerate()
            .map(|(d, (&s, &st))| {
                let steps = new_dims.get(d).is_some_and(|&n| n > 1);
                Ok(Coord {
                    src: Some(d as u32),
                    scale: if steps { to_i64(st)? } else { 0 },
                    offset: to_i64(s)?,
                })
            })
            .collect::<Result<_, CompileError>>()?;
        Ok(PointMap {
            coords,
            new_dims: Dims::from_slice(new_dims),
        })
    }

    /// `reverse`: operand index `dim - 1 - j` on the reversed axes.
    pub(crate) fn reverse(dims: &[Dim], axes: &[u32]) -> Result<PointMap, CompileError> {
        let coords = dims
            .iter()
            .enumerate()
            .map(|(d, &n)| {
                Ok(if axes.contains(&(d as u32)) {
                    Coord {
                        src: Some(d as u32),
                        scale: -1,
                        offset: to_i64(n)? - 1,
                    }
                } else {
                    Coord::of(d)
                })
            })
            .collect::<Result<_, CompileError>>()?;
        Ok(PointMap {
            coords,
            new_dims: Dims::from_slice(dims),
        })
    }

    /// `reshape` as a point map, when it only inserts or removes dims of extent 1 (the other
    /// dims keep their order and extents); `None` for any other reshape.
    pub(crate) fn squeeze_reshape(old_dims: &[Dim], new_dims: &[Dim]) -> Option<PointMap> {
        let old: Vec<usize> = (0..old_dims.len()).filter(|&d| old_dims[d] != 1).collect();
        let new: Vec<usize> = (0..new_dims.len()).filter(|&d| new_dims[d] != 1).collect();
        if old.len() != new.len()
            || old
                .iter()
                .zip(&new)
                .any(|(&o, &n)| old_dims[o] != new_dims[n])
        {
            return None;
        }
        let mut coords: SmallVec<[Coord; 8]> = SmallVec::from_elem(Coord::ZERO, old_dims.len());
        for (&o, &n) in old.iter().zip(&new) {
            coords[o] = Coord::of(n);
        }
        Some(PointMap {
            coords,
            new_dims: Dims::from_slice(new_dims),
        })
    }

    /// The extent of new dim `src`, treating an out-of-range dim as extent 0.
    fn extent(&self, src: u32) -> u64 {
        self.new_dims.get(src as usize).copied().unwrap_or(0)
    }

    /// `map` (over the source space) read through this point map: a map over the new space,
    /// in canonical form.
    pub(crate) fn compose(&self, map: &IndexMap) -> Result<IndexMap, CompileError> {
        if map.strides.len() != self.coords.len() {
            return Err(CompileError::internal(format!(
                "map with {} strides composed with a point map of rank {}",
                map.strides.len(),
                self.coords.len()
            )));
        }
        let mut offset = map.offset;
        let mut strides: SmallVec<[i64; 8]> = SmallVec::from_elem(0, self.new_dims.len());
        for (&s, c) in map.strides.iter().zip(&self.coords) {
            offset = s
                .checked_mul(c.offset)
                .and_then(|v| offset.checked_add(v))
                .ok_or_else(overflow)?;
            if let Some(src) = c.src {
                if self.extent(src) > 1 {
                    let slot = strides.get_mut(src as usize).ok_or_else(|| {
                        CompileError::internal(format!("point map names new dim {src}"))
                    })?;
                    *slot = s
                        .checked_mul(c.scale)
                        .and_then(|v| slot.checked_add(v))
                        .ok_or_else(overflow)?;
                }
            }
        }
        Ok(IndexMap { offset, strides })
    }

    /// An iota-like `offset + scale * i[dim]` over the source space, seen from the new space:
    /// the same form over the new space (`dim` is `None` when it reads no dim).
    pub(crate) fn compose_index(
        &self,
        dim: Option<u32>,
        scale: i64,
        offset: i64,
    ) -> Result<(Option<u32>, i64, i64), CompileError> {
        let Some(d) = dim else {
            return Ok((None, 0, offset));
        };
        let c = self.coords.get(d as usize).ok_or_else(|| {
            CompileError::internal(format!("index dim {d} beyond a point map's source rank"))
        })?;
        let offset = scale
            .checked_mul(c.offset)
            .and_then(|v| offset.checked_add(v))
            .ok_or_else(overflow)?;
        match c.src {
            Some(src) if self.extent(src) > 1 => {
                let scale = scale.checked_mul(c.scale).ok_or_else(overflow)?;
                Ok((Some(src), scale, offset))
            }
            _ => Ok((None, 0, offset)),
        }
    }
}

/// The dense row-major map of `dims` in canonical form (stride 0 on dims of extent ≤ 1), with
/// `offset` added.
pub(crate) fn row_major(dims: &[Dim], offset: i64) -> Result<IndexMap, CompileError> {
    let mut map = IndexMap::row_major(dims).ok_or_else(overflow)?;
    map.offset = offset;
    Ok(canonical(map, dims))
}

/// `map` with the strides of dims of extent ≤ 1 set to 0 (those dims only take index 0).
pub(crate) fn canonical(mut map: IndexMap, dims: &[Dim]) -> IndexMap {
    for (s, &n) in map.strides.iter_mut().zip(dims) {
        if n <= 1 {
            *s = 0;
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_then_slice_composes() {
        // x: [4, 6] row-major. t = transpose(x) : [6, 4]; s = slice(t, start [1, 2], stride [2, 1])
        let x = row_major(&[4, 6], 0).unwrap();
        let t = PointMap::transpose(&[1, 0], &[6, 4]).compose(&x).unwrap();
        assert_eq!(t, IndexMap::new(0, &[1, 6]));
        let s = PointMap::slice(&[1, 2], &[2, 1], &[3, 2])
            .unwrap()
            .compose(&t)
            .unwrap();
        // s[i, j] = t[1 + 2i, 2 + j] = x[2 + j, 1 + 2i] = 6 * (2 + j) + 1 + 2i
        assert_eq!(s, IndexMap::new(13, &[2, 6]));
    }

    #[test]
    fn reverse_and_broadcast() {
        let x = row_major(&[3], 0).unwrap();
        let r = PointMap::reverse(&[3], &[0]).unwrap().compose(&x).unwrap();
        assert_eq!(r, IndexMap::new(2, &[-1]));
        let b = PointMap::broadcast(&[3], &[1], &[5, 3])
            .compose(&r)
            .unwrap();
        assert_eq!(b, IndexMap::new(2, &[0, -1]));
        // Broadcasting a dim of 1 reads index 0 everywhere.
        let one = row_major(&[1, 3], 0).unwrap();
        let b = PointMap::broadcast(&[1, 3], &[0, 1], &[4, 3])
            .compose(&one)
            .unwrap();
        assert_eq!(b, IndexMap::new(0, &[0, 1]));
    }

    #[test]
    fn index_composition() {
        // iota over axis 1 of [2, 5], reversed on axis 1 then sliced with stride 2.
        let r = PointMap::reverse(&[2, 5], &[1]).unwrap();
        assert_eq!(r.compose_index(Some(1), 1, 0).unwrap(), (Some(1), -1, 4));
        let s = PointMap::slice(&[0, 1], &[1, 2], &[2, 2]).unwrap();
        assert_eq!(s.compose_index(Some(1), -1, 4).unwrap(), (Some(1), -2, 3));
        // A new dim of extent 1 reads nothing.
        let s = PointMap::slice(&[0, 3], &[1, 1], &[2, 1]).unwrap();
        assert_eq!(s.compose_index(Some(1), 1, 0).unwrap(), (None, 0, 3));
    }

    #[test]
    fn squeeze_reshapes_only() {
        assert!(PointMap::squeeze_reshape(&[3, 1, 4], &[3, 4]).is_some());
        assert!(PointMap::squeeze_reshape(&[3, 4], &[1, 3, 1, 4, 1]).is_some());
        assert!(PointMap::squeeze_reshape(&[3, 4], &[4, 3]).is_none());
        assert!(PointMap::squeeze_reshape(&[2, 6], &[12]).is_none());
        let p = PointMap::squeeze_reshape(&[3, 1, 4], &[3, 4]).unwrap();
        assert_eq!(
            p.compose(&row_major(&[3, 1, 4], 0).unwrap()).unwrap(),
            IndexMap::new(0, &[4, 1])
        );
    }
}
