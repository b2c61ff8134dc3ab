//! Building blocks the op importers share: NumPy broadcasting made explicit, scalar constants,
//! and one method per IR op that skips the op when it would do nothing.

use accy_ir::{
    Axes, BinaryOp, CompareOp, DType, Dims, Op, ReduceOp, Tensor, TensorData, Type, UnaryOp,
};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, NodeResult};

/// The NumPy (ONNX multidirectional) broadcast of two shapes: aligned from the right, each dim
/// equal or 1.
pub(crate) fn broadcast_shape(a: &[u64], b: &[u64]) -> NodeResult<Dims> {
    let rank = a.len().max(b.len());
    let mut out = Dims::new();
    for i in 0..rank {
        let da = (i + a.len()).checked_sub(rank).map_or(1, |j| a[j]);
        let db = (i + b.len()).checked_sub(rank).map_or(1, |j| b[j]);
        out.push(match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return invalid(format!("shapes {a:?} and {b:?} do not broadcast")),
        });
    }
    Ok(out)
}

/// A rank-0 tensor of `dtype` holding `x` (converted as `as` does; bool is `x != 0`).
pub(crate) fn scalar_tensor(dtype: DType, x: f64) -> Tensor {
    let data = match dtype {
        DType::F32 => TensorData::F32(vec![x as f32]),
        DType::F64 => TensorData::F64(vec![x]),
        DType::I32 => TensorData::I32(vec![x as i32]),
        DType::I64 => TensorData::I64(vec![x as i64]),
        DType::U8 => TensorData::U8(vec![x as u8]),
        _ => TensorData::Bool(vec![x != 0.0]),
    };
    Tensor::scalar(data).unwrap_or_else(|_| Tensor::f32s(&[], vec![0.0]))
}

/// The smallest value of `dtype` (the identity of a maximum; padding that never wins one).
pub(crate) fn lowest(dtype: DType) -> f64 {
    match dtype {
        DType::I32 => f64::from(i32::MIN),
        DType::I64 => i64::MIN as f64,
        DType::U8 => 0.0,
        _ => f64::NEG_INFINITY,
    }
}

/// The largest value of `dtype` (the identity of a minimum).
pub(crate) fn highest(dtype: DType) -> f64 {
    match dtype {
        DType::I32 => f64::from(i32::MAX),
        // Rounds up to 2^63, which `scalar_tensor` saturates to i64::MAX.
        DType::I64 => i64::MAX as f64,
        DType::U8 => 255.0,
        _ => f64::INFINITY,
    }
}

impl Emitter {
    /// A rank-0 known value of `dtype` holding `x`.
    pub(crate) fn scalar(&mut self, dtype: DType, x: f64) -> Val {
        self.constant(scalar_tensor(dtype, x))
    }

    /// A rank-0 known i64.
    pub(crate) fn scalar_i64(&mut self, x: i64) -> Val {
        self.constant(Tensor::i64s(&[], vec![x]))
    }

    /// A known 1-D i64 tensor.
    pub(crate) fn vector_i64(&mut self, xs: &[i64]) -> Val {
        self.constant(Tensor::i64s(&[xs.len() as u64], xs.to_vec()))
    }

    /// `x` broadcast NumPy-style (axes aligned from the right) to `dims`.
    pub(crate) fn broadcast_to(&mut self, x: Val, dims: &[u64]) -> NodeResult<Val> {
        let from = self.dims(x);
        if from.as_slice() == dims {
            return Ok(x);
        }
        let Some(offset) = dims.len().checked_sub(from.len()) else {
            return invalid(format!("cannot broadcast {from:?} to {dims:?}"));
        };
        let axes: Axes = (0..from.len()).map(|i| (offset + i) as u32).collect();
        let dims = Dims::from_slice(dims);
        self.apply(&[x], |ids| Op::Broadcast {
            x: ids[0],
            dims: dims.clone(),
            axes: axes.clone(),
        })
    }

    /// `x` broadcast to `dims`, its axis `i` becoming result axis `axes[i]`.
    pub(crate) fn broadcast_axes(&mut self, x: Val, dims: &[u64], axes: &[u32]) -> NodeResult<Val> {
        let (dims, axes) = (Dims::from_slice(dims), Axes::from_slice(axes));
        self.apply(&[x], |ids| Op::Broadcast {
            x: ids[0],
            dims: dims.clone(),
            axes: axes.clone(),
        })
    }

    /// Every value broadcast to their common shape.
    pub(crate) fn broadcast_all(&mut self, xs: &[Val]) -> NodeResult<Vec<Val>> {
        let mut dims = Dims::new();
        for &x in xs {
            dims = broadcast_shape(&dims, &self.dims(x))?;
        }
        xs.iter().map(|&x| self.broadcast_to(x, &dims)).collect()
    }

    /// `op(x)`.
    pub(crate) fn unary(&mut self, op: UnaryOp, x: Val) -> NodeResult<Val> {
        self.apply(&[x], |ids| Op::Unary { op, x: ids[0] })
    }

    /// `op(a, b)` with broadcasting.
    pub(crate) fn binary(&mut self, op: BinaryOp, a: Val, b: Val) -> NodeResult<Val> {
        let ab = self.broadcast_all(&[a, b])?;
        self.apply(&ab, |ids| Op::Binary {
            op,
            lhs: ids[0],
            rhs: ids[1],
        })
    }

    /// `op(a, s)` for a float constant `s` of `a`'s dtype.
    pub(crate) fn binary_scalar(&mut self, op: BinaryOp, a: Val, s: f64) -> NodeResult<Val> {
        let c = self.scalar(self.dtype(a), s);
        self.binary(op, a, c)
    }

    /// `a op b` as bool, with broadcasting.
    pub(crate) fn compare(&mut self, op: CompareOp, a: Val, b: Val) -> NodeResult<Val> {
        let ab = self.broadcast_all(&[a, b])?;
        self.apply(&ab, |ids| Op::Compare {
            op,
            lhs: ids[0],
            rhs: ids[1],
        })
    }

    /// `cond ? t : f` with broadcasting.
    pub(crate) fn select(&mut self, cond: Val, t: Val, f: Val) -> NodeResult<Val> {
        let all = self.broadcast_all(&[cond, t, f])?;
        self.apply(&all, |ids| Op::Select {
            cond: ids[0],
            on_true: ids[1],
            on_false: ids[2],
        })
    }

    /// `x` converted to `to` (nothing when it already is).
    pub(crate) fn convert(&mut self, x: Val, to: DType) -> NodeResult<Val> {
        if self.dtype(x) == to {
            return Ok(x);
        }
        self.apply(&[x], |ids| Op::Convert { x: ids[0], to })
    }

    /// `x` with new dims of the same element count (nothing when they are equal).
    pub(crate) fn reshape(&mut self, x: Val, dims: &[u64]) -> NodeResult<Val> {
        if self.dims(x).as_slice() == dims {
            return Ok(x);
        }
        let dims = Dims::from_slice(dims);
        self.apply(&[x], |ids| Op::Reshape {
            x: ids[0],
            dims: dims.clone(),
        })
    }

    /// `x` with axes permuted (nothing for the identity).
    pub(crate) fn transpose(&mut self, x: Val, perm: &[u32]) -> NodeResult<Val> {
        if perm.iter().enumerate().all(|(i, &p)| p as usize == i) {
            return Ok(x);
        }
        let perm = Axes::from_slice(perm);
        self.apply(&[x], |ids| Op::Transpose {
            x: ids[0],
            perm: perm.clone(),
        })
    }

    /// A strided slice (nothing when it is the whole tensor).
    pub(crate) fn slice(
        &mut self,
        x: Val,
        start: &[u64],
        limit: &[u64],
        stride: &[u64],
    ) -> NodeResult<Val> {
        let dims = self.dims(x);
        if start.iter().all(|&s| s == 0)
            && limit == dims.as_slice()
            && stride.iter().all(|&s| s == 1)
        {
            return Ok(x);
        }
        let (start, limit, stride) = (
            Dims::from_slice(start),
            Dims::from_slice(limit),
            Dims::from_slice(stride),
        );
        self.apply(&[x], |ids| Op::Slice {
            x: ids[0],
            start: start.clone(),
            limit: limit.clone(),
            stride: stride.clone(),
        })
    }

    /// `x[.., from..to, ..]` along `axis`.
    pub(crate) fn slice_axis(
        &mut self,
        x: Val,
        axis: usize,
        from: u64,
        to: u64,
    ) -> NodeResult<Val> {
        let dims = self.dims(x);
        let mut start = Dims::from_elem(0, dims.len());
        let mut limit = dims.clone();
        start[axis] = from;
        limit[axis] = to;
        self.slice(x, &start, &limit, &Dims::from_elem(1, dims.len()))
    }

    /// `xs` joined along `axis` (the value itself when there is one).
    pub(crate) fn concat(&mut self, xs: &[Val], axis: usize) -> NodeResult<Val> {
        if let [x] = xs {
            return Ok(*x);
        }
        self.apply(xs, |ids| Op::Concat {
            xs: ids.iter().copied().collect(),
            axis: axis as u32,
        })
    }

    /// `x` reduced over `axes` with `op` (nothing for no axes).
    pub(crate) fn reduce(&mut self, op: ReduceOp, x: Val, axes: &[u32]) -> NodeResult<Val> {
        if axes.is_empty() {
            return Ok(x);
        }
        let axes = Axes::from_slice(axes);
        self.apply(&[x], |ids| Op::Reduce {
            op,
            x: ids[0],
            axes: axes.clone(),
        })
    }

    /// `x` reduced over `axes` with `op`, the axes kept as size 1.
    pub(crate) fn reduce_keep(&mut self, op: ReduceOp, x: Val, axes: &[u32]) -> NodeResult<Val> {
        let dims = self.dims(x);
        let r = self.reduce(op, x, axes)?;
        let kept: Dims = dims
            .iter()
            .enumerate()
            .map(|(i, &d)| if axes.contains(&(i as u32)) { 1 } else { d })
            .collect();
        self.reshape(r, &kept)
    }

    /// Slices of `x` along `axis` picked by (clamped) `indices`.
    pub(crate) fn gather(&mut self, x: Val, indices: Val, axis: usize) -> NodeResult<Val> {
        self.apply(&[x, indices], |ids| Op::Gather {
            x: ids[0],
            indices: ids[1],
            axis: axis as u32,
        })
    }

    /// Batched contraction; see `accy_ir::Op::Dot`.
    pub(crate) fn dot(
        &mut self,
        lhs: Val,
        rhs: Val,
        batch: (&[u32], &[u32]),
        contract: (&[u32], &[u32]),
    ) -> NodeResult<Val> {
        let (lb, rb) = (Axes::from_slice(batch.0), Axes::from_slice(batch.1));
        let (lc, rc) = (Axes::from_slice(contract.0), Axes::from_slice(contract.1));
        self.apply(&[lhs, rhs], |ids| Op::Dot {
            lhs: ids[0],
            rhs: ids[1],
            lhs_batch: lb.clone(),
            rhs_batch: rb.clone(),
            lhs_contract: lc.clone(),
            rhs_contract: rc.clone(),
        })
    }

    /// `x` padded with the rank-0 `value`.
    pub(crate) fn pad(&mut self, x: Val, value: Val, low: &[i64], high: &[i64]) -> NodeResult<Val> {
        if low.iter().chain(high).all(|&p| p == 0) {
            return Ok(x);
        }
        let (low, high) = (low.to_vec(), high.to_vec());
        let interior = Dims::from_elem(0, low.len());
        self.apply(&[x, value], |ids| Op::Pad {
            x: ids[0],
            value: ids[1],
            low: low.iter().copied().collect(),
            high: high.iter().copied().collect(),
            interior: interior.clone(),
        })
    }

    /// `x` reversed along `axes`.
    pub(crate) fn reverse(&mut self, x: Val, axes: &[u32]) -> NodeResult<Val> {
        if axes.is_empty() {
            return Ok(x);
        }
        let axes = Axes::from_slice(axes);
        self.apply(&[x], |ids| Op::Reverse {
            x: ids[0],
            axes: axes.clone(),
        })
    }

    /// Indices along `axis` of a tensor of `dims`, as `dtype`.
    pub(crate) fn iota(&mut self, dtype: DType, dims: &[u64], axis: usize) -> NodeResult<Val> {
        let ty = Type::new(dtype, dims);
        self.apply(&[], |_| Op::Iota {
            ty: ty.clone(),
            axis: axis as u32,
        })
    }

    /// A tensor of `dims` and `dtype` filled with `x`.
    pub(crate) fn full(&mut self, dtype: DType, dims: &[u64], x: f64) -> NodeResult<Val> {
        let s = self.scalar(dtype, x);
        self.broadcast_to(s, dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_broadcasting_rules() {
        assert_eq!(
            broadcast_shape(&[2, 1, 3], &[4, 1]).unwrap().as_slice(),
            &[2, 4, 3]
        );
        assert_eq!(broadcast_shape(&[], &[5]).unwrap().as_slice(), &[5]);
        assert_eq!(broadcast_shape(&[0], &[1]).unwrap().as_slice(), &[0]);
        assert!(broadcast_shape(&[2], &[3]).is_err());
    }
}
