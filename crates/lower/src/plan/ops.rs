//! The lowering of each IR op: elementwise ops build expressions, movement ops remap them,
//! and reduce, dot, gather, pad and concat emit kernels (see the parent module's doc).

use accy_ir::interp::scalar::Scalar;
use accy_ir::{Axes, DType, Dim, Op, ReduceOp, Tensor, TensorData, Type, ValueId, MAX_RANK};

use super::expr::{BufId, ExprId, ExprKind};
use super::views::{self, PointMap};
use super::{elements, Planner};
use crate::error::CompileError;
use crate::kernel::IndexMap;

/// The bits of element `i` of `data` as [`crate::kernel::Node::Const`] encodes them.
fn element_bits(data: &TensorData, i: usize) -> Option<u64> {
    let s = match data {
        TensorData::F32(v) => Scalar::F32(*v.get(i)?),
        TensorData::F64(v) => Scalar::F64(*v.get(i)?),
        TensorData::I32(v) => Scalar::I32(*v.get(i)?),
        TensorData::I64(v) => Scalar::I64(*v.get(i)?),
        TensorData::U8(v) => Scalar::U8(*v.get(i)?),
        TensorData::Bool(v) => Scalar::Bool(*v.get(i)?),
        _ => return None,
    };
    Some(s.to_bits())
}

/// The `Fill` pattern and width writing the value `bits` of `dtype` everywhere, if one exists.
pub(super) fn fill_pattern(dtype: DType, bits: u64) -> Option<(u32, u8)> {
    match dtype.size_bytes() {
        1 => Some((bits as u32 & 0xff, 1)),
        4 => Some((bits as u32, 4)),
        8 if bits >> 32 == bits & 0xffff_ffff => Some((bits as u32, 4)),
        _ => None,
    }
}

fn to_i64(v: u64) -> Result<i64, CompileError> {
    i64::try_from(v).map_err(|_| CompileError::unsupported("a dim exceeds i64"))
}

impl<'p> Planner<'p> {
    /// The dims of value `v`.
    pub(super) fn dims(&self, v: ValueId) -> Result<&'p [Dim], CompileError> {
        Ok(&self.ty(v)?.dims)
    }

    /// The expression of value `v` seen through `pm`.
    fn remap(&mut self, v: ValueId, pm: &PointMap) -> Result<ExprId, CompileError> {
        let e = self.val(v)?;
        self.exprs.remap(e, pm)
    }

    /// The expression (or buffer) of instruction value `v`, whose op is `op` and type `ty`,
    /// which has at least one element.
    pub(super) fn lower(&mut self, v: ValueId, op: &Op, ty: &Type) -> Result<ExprId, CompileError> {
        let dtype = ty.dtype;
        match op {
            Op::Unary { op, x } => {
                let x = self.val(*x)?;
                self.exprs.push(ExprKind::Unary { op: *op, x }, dtype)
            }
            Op::Binary { op, lhs, rhs } => {
                let minus_own_max = *op == accy_ir::BinaryOp::Sub
                    && super::facts::is_minus_own_max(self.program, *lhs, *rhs);
                let (lhs, rhs) = (self.val(*lhs)?, self.val(*rhs)?);
                let id = self
                    .exprs
                    .push(ExprKind::Binary { op: *op, lhs, rhs }, dtype)?;
                if minus_own_max {
                    self.exprs.mark_at_most_zero(id);
                }
                Ok(id)
            }
            Op::Compare { op, lhs, rhs } => {
                let (lhs, rhs) = (self.val(*lhs)?, self.val(*rhs)?);
                self.exprs
                    .push(ExprKind::Compare { op: *op, lhs, rhs }, dtype)
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                let kind = ExprKind::Select {
                    cond: self.val(*cond)?,
                    on_true: self.val(*on_true)?,
                    on_false: self.val(*on_false)?,
                };
                self.exprs.push(kind, dtype)
            }
            Op::Convert { x, .. } => {
                let x = self.val(*x)?;
                self.exprs.push(ExprKind::Convert { x }, dtype)
            }
            Op::Constant(t) => self.constant(t),
            Op::Iota { axis, .. } => {
                let extent = ty.dims.get(*axis as usize).copied().unwrap_or(0);
                let kind = ExprKind::Index {
                    dim: (extent > 1).then_some(*axis),
                    scale: i64::from(extent > 1),
                    offset: 0,
                };
                self.exprs.push(kind, dtype)
            }
            Op::Broadcast { x, axes, .. } => {
                let pm = PointMap::broadcast(self.dims(*x)?, axes, &ty.dims);
                self.remap(*x, &pm)
            }
            Op::Transpose { x, perm } => self.remap(*x, &PointMap::transpose(perm, &ty.dims)),
            Op::Slice {
                x, start, stride, ..
            } => self.remap(*x, &PointMap::slice(start, stride, &ty.dims)?),
            Op::Reverse { x, axes } => {
                let pm = PointMap::reverse(self.dims(*x)?, axes)?;
                self.remap(*x, &pm)
            }
            Op::Reshape { x, .. } => self.reshape(*x, ty),
            Op::Reduce { op, x, axes } => self.reduce(v, *op, *x, axes),
            Op::Dot {
                lhs,
                rhs,
                lhs_batch,
                rhs_batch,
                lhs_contract,
                rhs_contract,
            } if ty.dtype.is_float() => self.contraction(
                v,
                (*lhs, lhs_batch, lhs_contract),
                (*rhs, rhs_batch, rhs_contract),
            ),
            Op::Dot {
                lhs,
                rhs,
                lhs_batch,
                rhs_batch,
                lhs_contract,
                rhs_contract,
            } => self.dot(
                v,
                (*lhs, lhs_batch, lhs_contract),
                (*rhs, rhs_batch, rhs_contract),
            ),
            Op::Gather { x, indices, axis } => self.gather(*x, *indices, *axis, ty),
            Op::Pad {
                x,
                value,
                low,
                interior,
                ..
            } => self.pad(v, *x, *value, low, interior),
            Op::Concat { xs, axis } => self.concat(v, xs, *axis),
            _ => Err(CompileError::unsupported(format!(
                "op `{}` cannot be lowered",
                op.mnemonic()
            ))),
        }
    }

    /// A constant: inline when all its elements are equal (rank 0 included), otherwise a
    /// constant slot holding its payload.
    fn constant(&mut self, t: &Tensor) -> Result<ExprId, CompileError> {
        let data = t.data();
        let bits = element_bits(data, 0)
            .ok_or_else(|| CompileError::unsupported(format!("constants of {}", t.dtype())))?;
        let splat = (1..data.len()).all(|i| element_bits(data, i) == Some(bits));
        if splat {
            return self.exprs.push(ExprKind::Const { bits }, t.dtype());
        }
        let ty = t.ty();
        let align = ty.dtype.alignment();
        let offset = (self.constants.len() as u64).next_multiple_of(align);
        self.constants.resize(offset as usize, 0);
        self.constants.extend_from_slice(&data.to_le_bytes());
        let buf = self.fixed_buffer(accy_artifact::SlotRole::Constant { offset }, &ty)?;
        self.view_of(buf, &ty)
    }

    /// `reshape`: a view when the operand is a contiguous row-major view or the reshape only
    /// inserts or removes dims of 1; otherwise the operand is materialized first.
    fn reshape(&mut self, x: ValueId, ty: &Type) -> Result<ExprId, CompileError> {
        let x_dims = self.dims(x)?;
        if let Some(pm) = PointMap::squeeze_reshape(x_dims, &ty.dims) {
            return self.remap(x, &pm);
        }
        let mut e = self.val(x)?;
        if self.exprs.is_uniform(e)? {
            return Ok(e);
        }
        if !self.is_contiguous(e, x_dims)? {
            e = self.materialize(x)?;
        }
        match &self.exprs.get(e)?.kind {
            ExprKind::Load { binding: buf, map } => {
                let (buf, offset) = (*buf, map.offset);
                let map = views::row_major(&ty.dims, offset)?;
                self.exprs
                    .push(ExprKind::Load { binding: buf, map }, ty.dtype)
            }
            _ => Err(CompileError::internal("a materialized value is not a view")),
        }
    }

    /// True when `e` is a load of consecutive elements in row-major order of `dims`.
    fn is_contiguous(&self, e: ExprId, dims: &[Dim]) -> Result<bool, CompileError> {
        Ok(match &self.exprs.get(e)?.kind {
            ExprKind::Load { map, .. } => *map == views::row_major(dims, map.offset)?,
            _ => false,
        })
    }

    /// `reduce`: one kernel over the kept dims (parallel) then the reduced axes in increasing
    /// order (the interpreter's row-major order), the operand fused in.
    fn reduce(
        &mut self,
        v: ValueId,
        op: ReduceOp,
        x: ValueId,
        axes: &[u32],
    ) -> Result<ExprId, CompileError> {
        let x_dims = self.dims(x)?;
        let kept: Vec<usize> = (0..x_dims.len())
            .filter(|&d| !axes.contains(&(d as u32)))
            .collect();
        let reduced: Vec<usize> = (0..x_dims.len())
            .filter(|&d| axes.contains(&(d as u32)))
            .collect();
        let dims: Vec<Dim> = kept.iter().chain(&reduced).map(|&d| x_dims[d]).collect();
        let mut srcs = vec![(None, 0i64); x_dims.len()];
        for (position, &d) in kept.iter().chain(&reduced).enumerate() {
            srcs[d] = (Some(position), 0);
        }
        let root = self.remap(x, &PointMap::shifted(&srcs, &dims))?;
        self.reduction_kernel(v, &dims, kept.len(), root, op)
    }

    /// Computes `root` over `dims` reduced with `op` over all but the first `parallel` dims
    /// into the buffer of `v`, and returns `v`'s view.
    fn reduction_kernel(
        &mut self,
        v: ValueId,
        dims: &[Dim],
        parallel: usize,
        root: ExprId,
        op: ReduceOp,
    ) -> Result<ExprId, CompileError> {
        let ty = self.ty(v)?;
        let dst = self.destination(v)?;
        let map = views::row_major(&ty.dims, 0)?;
        self.kernel(dims, parallel, root, Some(op), dst, map)?;
        self.view_of(dst, ty)
    }

    /// `dot`: one kernel over batch, lhs free and rhs free dims (parallel) then the
    /// contracting dims in `lhs_contract` order, summing `lhs * rhs` from 0. The operands are
    /// read from buffers so nothing is recomputed per product.
    fn dot(
        &mut self,
        v: ValueId,
        lhs: (ValueId, &Axes, &Axes),
        rhs: (ValueId, &Axes, &Axes),
    ) -> Result<ExprId, CompileError> {
        let free = |rank: usize, batch: &Axes, contract: &Axes| -> Vec<usize> {
            (0..rank)
                .filter(|&a| !batch.contains(&(a as u32)) && !contract.contains(&(a as u32)))
                .collect()
        };
        let (l_dims, r_dims) = (self.dims(lhs.0)?, self.dims(rhs.0)?);
        let l_free = free(l_dims.len(), lhs.1, lhs.2);
        let r_free = free(r_dims.len(), rhs.1, rhs.2);
        let (nb, nl, nr) = (lhs.1.len(), l_free.len(), r_free.len());
        let at = |dims: &[Dim], a: usize| dims.get(a).copied().unwrap_or(0);
        let mut dims: Vec<Dim> = lhs.1.iter().map(|&a| at(l_dims, a as usize)).collect();
        dims.extend(l_free.iter().map(|&a| at(l_dims, a)));
        dims.extend(r_free.iter().map(|&a| at(r_dims, a)));
        dims.extend(lhs.2.iter().map(|&a| at(l_dims, a as usize)));

        let operand =
            |rank: usize, batch: &Axes, own_free: &[usize], free_base: usize, contract: &Axes| {
                let mut srcs = vec![(None, 0i64); rank];
                for (i, &a) in batch.iter().enumerate() {
                    if let Some(s) = srcs.get_mut(a as usize) {
                        *s = (Some(i), 0);
                    }
                }
                for (i, &a) in own_free.iter().enumerate() {
                    if let Some(s) = srcs.get_mut(a) {
                        *s = (Some(free_base + i), 0);
                    }
                }
                for (i, &a) in contract.iter().enumerate() {
                    if let Some(s) = srcs.get_mut(a as usize) {
                        *s = (Some(nb + nl + nr + i), 0);
                    }
                }
                srcs
            };
        let l_srcs = operand(l_dims.len(), lhs.1, &l_free, nb, lhs.2);
        let r_srcs = operand(r_dims.len(), rhs.1, &r_free, nb + nl, rhs.2);
        let (l, r) = if dims.len() > MAX_RANK {
            // Too many dims for one kernel: pack each operand as [batch, free, contract] so
            // that each group walks as one dim and coalescing brings the kernel to at most
            // four dims.
            let l_order: Vec<usize> = lhs
                .1
                .iter()
                .map(|&a| a as usize)
                .chain(l_free.iter().copied())
                .chain(lhs.2.iter().map(|&a| a as usize))
                .collect();
            let r_order: Vec<usize> = rhs
                .1
                .iter()
                .map(|&a| a as usize)
                .chain(r_free.iter().copied())
                .chain(rhs.2.iter().map(|&a| a as usize))
                .collect();
            (
                self.packed(lhs.0, &l_order, &l_srcs, &dims)?,
                self.packed(rhs.0, &r_order, &r_srcs, &dims)?,
            )
        } else {
            let l = self.buffered(lhs.0)?;
            let r = self.buffered(rhs.0)?;
            (
                self.exprs.remap(l, &PointMap::shifted(&l_srcs, &dims))?,
                self.exprs.remap(r, &PointMap::shifted(&r_srcs, &dims))?,
            )
        };
        let dtype = self.ty(v)?.dtype;
        let product = self.exprs.push(
            ExprKind::Binary {
                op: accy_ir::BinaryOp::Mul,
                lhs: l,
                rhs: r,
            },
            dtype,
        )?;
        self.reduction_kernel(v, &dims, nb + nl + nr, product, ReduceOp::Sum)
    }

    /// Operand `x` of a dot copied into a scratch buffer with its axes in `order`, read over
    /// the dot's kernel `dims` as `srcs` says (one entry per axis of `x`).
    fn packed(
        &mut self,
        x: ValueId,
        order: &[usize],
        srcs: &[(Option<usize>, i64)],
        dims: &[Dim],
    ) -> Result<ExprId, CompileError> {
        let x_dims = self.dims(x)?;
        let e = self.val(x)?;
        if self.exprs.is_uniform(e)? {
            return self.exprs.remap(e, &PointMap::shifted(&[], dims));
        }
        let packed_dims: Vec<Dim> = order
            .iter()
            .map(|&a| x_dims.get(a).copied().unwrap_or(0))
            .collect();
        // x's axis order[p] is packed axis p.
        let mut to_x = vec![(None, 0i64); x_dims.len()];
        for (p, &a) in order.iter().enumerate() {
            if let Some(s) = to_x.get_mut(a) {
                *s = (Some(p), 0);
            }
        }
        let root = self
            .exprs
            .remap(e, &PointMap::shifted(&to_x, &packed_dims))?;
        let ty = self.ty(x)?;
        let buf = self.add_buffer(super::Buffer {
            dtype: ty.dtype,
            elements: elements(ty)?,
            home: super::Home::Scratch,
        })?;
        self.store_all(&packed_dims, root, buf)?;
        let view = self.view_of(buf, &Type::new(ty.dtype, &packed_dims))?;
        // Packed axis p is x's axis order[p], read from kernel dim srcs[order[p]].
        let from_kernel: Vec<(Option<usize>, i64)> = order
            .iter()
            .map(|&a| srcs.get(a).copied().unwrap_or((None, 0)))
            .collect();
        self.exprs
            .remap(view, &PointMap::shifted(&from_kernel, dims))
    }

    /// `gather`: a gather node reading the (materialized) tensor, its index expression fused.
    fn gather(
        &mut self,
        x: ValueId,
        indices: ValueId,
        axis: u32,
        ty: &Type,
    ) -> Result<ExprId, CompileError> {
        let axis = axis as usize;
        let index_rank = self.dims(indices)?.len();
        let x_dims = self.dims(x)?;
        let axis_len = x_dims.get(axis).copied().unwrap_or(0);
        let base = self.val(x)?;
        if self.exprs.is_uniform(base)? {
            // Every element is the same value, whatever the index picks.
            return Ok(base);
        }
        let base = self.buffered(x)?;
        let (buf, map) = match &self.exprs.get(base)?.kind {
            ExprKind::Load { binding: buf, map } => (*buf, map.clone()),
            _ => {
                return Err(CompileError::internal(
                    "gather from a tensor that is not in memory",
                ))
            }
        };
        let stride = |d: usize| map.strides.get(d).copied().unwrap_or(0);
        let axis_stride = stride(axis);
        let mut strides: Vec<i64> = (0..axis).map(stride).collect();
        strides.extend(std::iter::repeat_n(0, index_rank));
        strides.extend((axis + 1..x_dims.len()).map(stride));
        let map = views::canonical(IndexMap::new(map.offset, &strides), &ty.dims);
        let srcs: Vec<(Option<usize>, i64)> =
            (0..index_rank).map(|t| (Some(axis + t), 0)).collect();
        let index = self.remap(indices, &PointMap::shifted(&srcs, &ty.dims))?;
        self.exprs.push(
            ExprKind::Gather {
                binding: buf,
                map,
                index,
                axis_len,
                axis_stride,
            },
            ty.dtype,
        )
    }

    /// `pad`: the padding value everywhere (a fill when its bytes repeat, else a kernel), then
    /// one kernel storing the part of the operand that lands in the result at its strided
    /// positions.
    fn pad(
        &mut self,
        v: ValueId,
        x: ValueId,
        value: ValueId,
        low: &[i64],
        interior: &[u64],
    ) -> Result<ExprId, CompileError> {
        let ty = self.ty(v)?;
        let x_dims = self.dims(x)?;
        let out_strides = views::row_major(&ty.dims, 0)?;
        // Per axis, operand indices k0..k1 land at low + k * step inside 0..out_dim.
        let mut srcs = Vec::with_capacity(x_dims.len());
        let mut counts = Vec::with_capacity(x_dims.len());
        let mut store = IndexMap::new(0, &[]);
        let mut covers_all = true;
        for (d, &n) in x_dims.iter().enumerate() {
            let (low, step) = (
                i128::from(low.get(d).copied().unwrap_or(0)),
                i128::from(interior.get(d).copied().unwrap_or(0)) + 1,
            );
            let out = i128::from(ty.dims.get(d).copied().unwrap_or(0));
            let k0 = if low >= 0 {
                0
            } else {
                (-low + step - 1) / step
            };
            let k1 = if out - low > 0 {
                ((out - low + step - 1) / step).min(i128::from(n))
            } else {
                0
            };
            let count = (k1 - k0).max(0);
            let to = |v: i128| {
                i64::try_from(v).map_err(|_| CompileError::unsupported("pad offset exceeds i64"))
            };
            let s = i128::from(out_strides.strides.get(d).copied().unwrap_or(0));
            counts.push(count as u64);
            // Every result position holds an operand element only if the operand lands
            // densely from position 0 to the end.
            covers_all &= low + k0 * step == 0 && (step == 1 || count <= 1) && count == out;
            if count == 0 {
                // Nothing lands on this axis, so no kernel copies the operand and these maps
                // are never used; with offsets near ±2^63 their numbers need not fit i64.
                srcs.push((Some(d), 0));
                store.strides.push(0);
                continue;
            }
            // Now `k0 < n` and `0 <= low + k0 * step < out`, so both fit i64 (times `s`).
            srcs.push((Some(d), to(k0)?));
            store.offset = store
                .offset
                .checked_add(to((low + k0 * step) * s)?)
                .ok_or_else(|| CompileError::unsupported("pad offset exceeds i64"))?;
            // One landing element never steps; two or more step within `out`.
            store
                .strides
                .push(if count > 1 { to(step * s)? } else { 0 });
        }
        let dst = self.destination(v)?;
        if !covers_all {
            self.fill_value(value, &ty.dims, dst)?;
        }
        if !counts.contains(&0) {
            let root = self.remap(x, &PointMap::shifted(&srcs, &counts))?;
            let store = views::canonical(store, &counts);
            self.kernel(&counts, counts.len(), root, None, dst, store)?;
        }
        self.view_of(dst, ty)
    }

    /// Writes the rank-0 value `value` at every element of `dst`, a buffer of `dims`.
    fn fill_value(&mut self, value: ValueId, dims: &[Dim], dst: BufId) -> Result<(), CompileError> {
        let e = self.val(value)?;
        let everywhere = self.exprs.remap(e, &PointMap::shifted(&[], dims))?;
        self.store_all(dims, everywhere, dst)
    }

    /// `concat`: one kernel per non-empty operand, storing it at its offset along `axis`.
    fn concat(&mut self, v: ValueId, xs: &[ValueId], axis: u32) -> Result<ExprId, CompileError> {
        let ty = self.ty(v)?;
        let axis = axis as usize;
        let out = views::row_major(&ty.dims, 0)?;
        let axis_stride = out.strides.get(axis).copied().unwrap_or(0);
        let dst = self.destination(v)?;
        // An operand listed twice is copied by two kernels, but counts as one use (`uses`
        // counts an instruction's distinct operands), so the fusion check cannot see the
        // second copy: a waiting contraction fused into the first copy would leave nothing
        // stored for the second to read, so waiting products are emitted first. Operands that
        // are views of one another (`concat %s, slice(%s)`) are separate uses, which
        // `fuse::read_by_another_kernel` counts.
        if xs.iter().enumerate().any(|(i, x)| xs[..i].contains(x)) {
            self.flush_all()?;
        }
        let mut start: u64 = 0;
        for &x in xs {
            let x_dims = self.dims(x)?;
            let len = x_dims.get(axis).copied().unwrap_or(0);
            if elements(self.ty(x)?)? > 0 {
                let offset = to_i64(start)?
                    .checked_mul(axis_stride)
                    .ok_or_else(|| CompileError::unsupported("concat offset exceeds i64"))?;
                let store = views::canonical(IndexMap::new(offset, &out.strides), x_dims);
                let root = self.val(x)?;
                self.kernel(x_dims, x_dims.len(), root, None, dst, store)?;
            }
            start = start.saturating_add(len);
        }
        self.view_of(dst, ty)
    }
}
