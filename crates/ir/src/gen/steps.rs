//! One step: pick an op kind, then operands and attributes that are valid by construction.

use smallvec::SmallVec;

use super::choices::Choices;
use super::state::Gen;
use super::OpKind;
use crate::{axes, BinaryOp, DType, Dim, Dims, Op, ReduceOp, Type, UnaryOp, ValueId};

/// How often each kind is picked, relative to the others (elementwise ops dominate real
/// programs, and they are cheap).
fn weight(kind: OpKind) -> u32 {
    match kind {
        OpKind::Unary => 10,
        OpKind::Binary => 12,
        OpKind::Compare | OpKind::Select | OpKind::Convert | OpKind::Reshape => 5,
        OpKind::Transpose | OpKind::Slice | OpKind::Dot => 5,
        OpKind::Broadcast | OpKind::Reduce => 6,
        OpKind::Concat | OpKind::Pad | OpKind::Gather => 4,
        OpKind::Constant | OpKind::Reverse => 3,
        OpKind::Iota => 2,
    }
}

fn unary_accepts(op: UnaryOp, d: DType) -> bool {
    match op {
        UnaryOp::Neg | UnaryOp::Abs => d.is_numeric(),
        UnaryOp::Not => d == DType::Bool || d.is_integer(),
        _ => d.is_float(),
    }
}

fn binary_accepts(op: BinaryOp, d: DType) -> bool {
    match op {
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => d == DType::Bool || d.is_integer(),
        BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic => d.is_integer(),
        _ => d.is_numeric(),
    }
}

fn reduce_accepts(op: ReduceOp, d: DType) -> bool {
    match op {
        ReduceOp::Sum | ReduceOp::Prod => d.is_numeric(),
        ReduceOp::Max | ReduceOp::Min => true,
    }
}

fn any_dtype(_: DType) -> bool {
    true
}

/// Every divisor of `m` (≥ 1), ascending.
fn divisors(m: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut i = 1;
    while i * i <= m {
        if m.is_multiple_of(i) {
            small.push(i);
            if i * i != m {
                large.push(m / i);
            }
        }
        i += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// `0, -1, 1, -2, 2, …` for `0, 1, 2, 3, 4, …`: pad amounts that shrink toward 0.
fn zigzag(c: usize) -> i64 {
    let h = (c / 2) as i64;
    if c.is_multiple_of(2) {
        h
    } else {
        -h - 1
    }
}

/// `start ≤ limit ≤ d` for one slice axis; non-empty unless `allow_empty` or `d` is 0.
/// Choice 0 gives the full range, the shrink target.
fn slice_range(ch: &mut Choices, d: Dim, allow_empty: bool) -> (Dim, Dim) {
    let nonempty = u64::from(!allow_empty && d > 0);
    let s = ch.below((d + 1 - nonempty) as usize) as Dim;
    let l = d - ch.below((d - s + 1 - nonempty) as usize) as Dim;
    (s, l)
}

impl Gen<'_> {
    /// Interprets one step; a step that cannot apply changes nothing (or only adds the
    /// parameters and helper values it made).
    pub(super) fn step(&mut self, nums: &[u32]) {
        let mut ch = Choices::new(nums);
        let kinds: Vec<OpKind> = OpKind::ALL
            .into_iter()
            .filter(|&k| self.allowed(k))
            .collect();
        let total: u32 = kinds.iter().map(|&k| weight(k)).sum();
        if total == 0 {
            return;
        }
        let mut r = ch.next() % total;
        let mut kind = OpKind::Unary;
        for k in kinds {
            if r < weight(k) {
                kind = k;
                break;
            }
            r -= weight(k);
        }
        let c = &mut ch;
        let _made: Option<ValueId> = match kind {
            OpKind::Unary => self.unary(c),
            OpKind::Binary => self.binary(c),
            OpKind::Compare => self.compare(c),
            OpKind::Select => self.select(c),
            OpKind::Convert => self.convert(c),
            OpKind::Constant => self.constant_step(c),
            OpKind::Iota => self.iota_step(c),
            OpKind::Broadcast => self.broadcast(c),
            OpKind::Reshape => self.reshape(c),
            OpKind::Transpose => self.transpose(c),
            OpKind::Slice => self.slice(c),
            OpKind::Concat => self.concat(c),
            OpKind::Pad => self.pad(c),
            OpKind::Reverse => self.reverse(c),
            OpKind::Reduce => self.reduce(c),
            OpKind::Dot => self.dot(c),
            OpKind::Gather => self.gather(c),
        };
    }

    fn any_operand(&mut self, ch: &mut Choices, min_rank: usize) -> Option<ValueId> {
        let max = self.cfg.max_rank;
        self.operand(ch, &any_dtype, min_rank, max)
    }

    fn unary(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let op = ch.pick(&self.cfg.unary_ops)?;
        let max = self.cfg.max_rank;
        let x = self.operand(ch, &|d| unary_accepts(op, d), 0, max)?;
        self.push(Op::Unary { op, x })
    }

    fn binary(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let op = ch.pick(&self.cfg.binary_ops)?;
        let max = self.cfg.max_rank;
        let lhs = self.operand(ch, &|d| binary_accepts(op, d), 0, max)?;
        let rhs = self.value_of_type(ch, &self.ty(lhs))?;
        let (lhs, rhs) = if ch.chance(50) {
            (rhs, lhs)
        } else {
            (lhs, rhs)
        };
        self.push(Op::Binary { op, lhs, rhs })
    }

    fn compare(&mut self, ch: &mut Choices) -> Option<ValueId> {
        if !self.has_dtype(DType::Bool) {
            return None;
        }
        let op = ch.pick(&self.cfg.compare_ops)?;
        let lhs = self.any_operand(ch, 0)?;
        let rhs = self.value_of_type(ch, &self.ty(lhs))?;
        self.push(Op::Compare { op, lhs, rhs })
    }

    fn select(&mut self, ch: &mut Choices) -> Option<ValueId> {
        if !self.has_dtype(DType::Bool) {
            return None;
        }
        let on_true = self.any_operand(ch, 0)?;
        let ty = self.ty(on_true);
        let on_false = self.value_of_type(ch, &ty)?;
        let compare = if self.allowed(OpKind::Compare) && ch.chance(40) {
            ch.pick(&self.cfg.compare_ops)
        } else {
            None
        };
        let cond = match compare {
            Some(op) => self.push(Op::Compare {
                op,
                lhs: on_true,
                rhs: on_false,
            })?,
            None => self.value_of_type(ch, &ty.with_dtype(DType::Bool))?,
        };
        self.push(Op::Select {
            cond,
            on_true,
            on_false,
        })
    }

    fn convert(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 0)?;
        let to = ch.pick(&self.cfg.dtypes)?;
        self.push(Op::Convert { x, to })
    }

    fn constant_step(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let dtypes = self.cfg.dtypes.clone();
        let ty = self.fresh_type(ch, &dtypes, 0, self.cfg.max_rank)?;
        self.constant(ch, &ty)
    }

    fn iota_step(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let dtypes = self.dtypes_where(DType::is_numeric);
        let ty = self.fresh_type(ch, &dtypes, 1, self.cfg.max_rank)?;
        self.iota(ch, &ty)
    }

    fn broadcast(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 0)?;
        let xt = self.ty(x);
        let xr = xt.rank();
        let r = xr + ch.below(self.cfg.max_rank.saturating_sub(xr) + 1);
        // The first `r - xr` entries of a permutation are the new axes; choice 0 puts them in
        // front, so the operand maps to the trailing axes as in NumPy.
        let mut new_axes = ch.permutation(r);
        new_axes.truncate(r - xr);
        let op_axes: Vec<u32> = (0..r as u32).filter(|a| !new_axes.contains(a)).collect();
        let mut dims: Dims = SmallVec::from_elem(0, r);
        let mut free: Vec<usize> = new_axes.iter().map(|&a| a as usize).collect();
        for (i, &a) in op_axes.iter().enumerate() {
            if xt.dims[i] == 1 {
                free.push(a as usize);
            } else {
                dims[a as usize] = xt.dims[i];
            }
        }
        free.sort_unstable();
        let mut picker = self.dim_picker(xt.element_count()?);
        for a in free {
            dims[a] = picker.pick(ch);
        }
        self.push(Op::Broadcast {
            x,
            dims,
            axes: axes(&op_axes),
        })
    }

    fn reshape(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 0)?;
        let n = self.ty(x).element_count()?;
        let max_rank = self.cfg.max_rank;
        let mut r = ch.below(max_rank + 1);
        let mut dims: Dims = SmallVec::new();
        if n == 0 {
            r = r.max(1);
            let zero = ch.below(r);
            let mut picker = self.dim_picker(0);
            for i in 0..r {
                dims.push(if i == zero { 0 } else { picker.pick(ch) });
            }
        } else {
            if n > 1 {
                r = r.max(1);
            }
            let mut m = n;
            for i in 0..r {
                let d = if i + 1 == r {
                    m
                } else {
                    let divs = divisors(m);
                    divs[ch.below(divs.len())]
                };
                dims.push(d);
                m /= d;
            }
        }
        self.push(Op::Reshape { x, dims })
    }

    fn transpose(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 0)?;
        let perm = ch.permutation(self.ty(x).rank());
        self.push(Op::Transpose {
            x,
            perm: axes(&perm),
        })
    }

    fn slice(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 0)?;
        let (mut start, mut limit, mut stride) = (Dims::new(), Dims::new(), Dims::new());
        // Empty results are rare on purpose: they make every later op trivially agree.
        let allow_empty = ch.chance(10);
        for &d in &self.ty(x).dims {
            let (s, l) = slice_range(ch, d, allow_empty);
            start.push(s);
            limit.push(l);
            stride.push([1, 2, 1, 3, 5][ch.below(5)]);
        }
        self.push(Op::Slice {
            x,
            start,
            limit,
            stride,
        })
    }

    fn concat(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 1)?;
        let xt = self.ty(x);
        let axis = ch.below(xt.rank());
        let mut xs: SmallVec<[ValueId; 4]> = SmallVec::from_elem(x, 1);
        for _ in 0..ch.below(4) {
            let fellows = self.candidates(|t| {
                t.dtype == xt.dtype
                    && t.rank() == xt.rank()
                    && (0..t.rank()).all(|j| j == axis || t.dims[j] == xt.dims[j])
            });
            let v = match ch.below(3) {
                0 => Self::pick_recent(ch, &fellows),
                1 if self.allowed(OpKind::Slice) => {
                    let (s, l) = slice_range(ch, xt.dims[axis], false);
                    let mut start: Dims = SmallVec::from_elem(0, xt.rank());
                    let mut limit = xt.dims.clone();
                    start[axis] = s;
                    limit[axis] = l;
                    let mut stride: Dims = SmallVec::from_elem(1, xt.rank());
                    stride[axis] = 1 + ch.below(2) as Dim;
                    self.push(Op::Slice {
                        x,
                        start,
                        limit,
                        stride,
                    })
                }
                _ => {
                    let mut dims = xt.dims.clone();
                    let others: u64 = (0..xt.rank())
                        .filter(|&j| j != axis)
                        .map(|j| xt.dims[j])
                        .product();
                    dims[axis] = self.dim_picker(others).pick(ch);
                    self.value_of_type(
                        ch,
                        &Type {
                            dtype: xt.dtype,
                            dims,
                        },
                    )
                }
            };
            match v.or_else(|| Self::pick_recent(ch, &fellows)) {
                Some(v) => xs.push(v),
                None => break,
            }
        }
        // Drop operands from the end until the result fits the element limit (`x` alone does).
        while xs.len() > 1 {
            let total: Dim = xs.iter().map(|v| self.types[v.index()].dims[axis]).sum();
            let mut dims = xt.dims.clone();
            dims[axis] = total;
            if self.fits(&Type {
                dtype: xt.dtype,
                dims,
            }) {
                break;
            }
            xs.pop();
        }
        let rotate = ch.below(xs.len());
        xs.rotate_left(rotate);
        self.push(Op::Concat {
            xs,
            axis: axis as u32,
        })
    }

    fn pad(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 0)?;
        let xt = self.ty(x);
        let value = self.value_of_type(ch, &Type::scalar(xt.dtype))?;
        let (mut low, mut high, mut interior) = (SmallVec::new(), SmallVec::new(), Dims::new());
        let mut shrunk: (SmallVec<[i64; 4]>, SmallVec<[i64; 4]>) =
            (SmallVec::new(), SmallVec::new());
        for &d in &xt.dims {
            let i = [0, 0, 1, 2][ch.below(4)];
            let base = (d + d.saturating_sub(1) * i) as i64;
            let lo = zigzag(ch.below(9)).max(-base);
            let hi = zigzag(ch.below(9)).max(-(base + lo));
            low.push(lo);
            high.push(hi);
            interior.push(i);
            // The same edges without growth, used if the padded result is too large.
            let d = d as i64;
            let slo = lo.min(0).max(-d);
            shrunk.0.push(slo);
            shrunk.1.push(hi.min(0).max(-(d + slo)));
        }
        let op = Op::Pad {
            x,
            value,
            low,
            high,
            interior: interior.clone(),
        };
        self.push(op).or_else(|| {
            self.push(Op::Pad {
                x,
                value,
                low: shrunk.0,
                high: shrunk.1,
                interior: SmallVec::from_elem(0, interior.len()),
            })
        })
    }

    fn reverse(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let x = self.any_operand(ch, 0)?;
        let rank = self.ty(x).rank();
        let mut a = ch.permutation(rank);
        a.truncate(ch.below(rank + 1));
        self.push(Op::Reverse { x, axes: axes(&a) })
    }

    fn reduce(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let op = ch.pick(&self.cfg.reduce_ops)?;
        let max = self.cfg.max_rank;
        let x = self.operand(ch, &|d| reduce_accepts(op, d), 0, max)?;
        let rank = self.ty(x).rank();
        let mut a = ch.permutation(rank);
        a.truncate(ch.below(rank + 1));
        self.push(Op::Reduce {
            op,
            x,
            axes: axes(&a),
        })
    }

    fn dot(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let max_rank = self.cfg.max_rank;
        let lhs = self.operand(ch, &DType::is_numeric, 0, max_rank)?;
        let lt = self.ty(lhs);
        let rl = lt.rank();
        let lperm = ch.permutation(rl);
        let nc = ch.below(rl + 1);
        let nb = ch.below(rl - nc + 1);
        let lfree = rl - nb - nc;
        let (lhs_batch, rest) = lperm.split_at(nb);
        let lhs_contract = &rest[..nc];
        // Both the rhs (batch + contract + free) and the result (batch + both frees) must fit
        // the rank limit.
        let rfree_max = max_rank.saturating_sub(nb + nc.max(lfree));
        let rr = nb + nc + ch.below(rfree_max + 1);
        let rperm = ch.permutation(rr);
        let (rhs_batch, rest) = rperm.split_at(nb);
        let (rhs_contract, rhs_free) = rest.split_at(nc);
        let mut rdims: Dims = SmallVec::from_elem(0, rr);
        for (&l, &r) in lhs_batch
            .iter()
            .zip(rhs_batch)
            .chain(lhs_contract.iter().zip(rhs_contract))
        {
            rdims[r as usize] = lt.dims[l as usize];
        }
        let dim = |a: &u32| lt.dims[*a as usize];
        let batch: u64 = lhs_batch.iter().map(dim).product();
        let contract: u64 = lhs_contract.iter().map(dim).product();
        let free: u64 = (0..rl as u32)
            .filter(|a| !lhs_batch.contains(a) && !lhs_contract.contains(a))
            .map(|a| dim(&a))
            .product();
        let mut picker = self.dim_picker((batch * free).max(batch * contract));
        for &a in rhs_free {
            rdims[a as usize] = picker.pick(ch);
        }
        let rhs = self.value_of_type(
            ch,
            &Type {
                dtype: lt.dtype,
                dims: rdims,
            },
        )?;
        self.push(Op::Dot {
            lhs,
            rhs,
            lhs_batch: axes(lhs_batch),
            rhs_batch: axes(rhs_batch),
            lhs_contract: axes(lhs_contract),
            rhs_contract: axes(rhs_contract),
        })
    }

    fn gather(&mut self, ch: &mut Choices) -> Option<ValueId> {
        let index_dtypes = self.dtypes_where(DType::is_integer);
        if index_dtypes.is_empty() {
            return None;
        }
        let x = self.any_operand(ch, 1)?;
        let xt = self.ty(x);
        let axis = ch.below(xt.rank());
        let empty_axis = xt.dims[axis] == 0;
        let outer: u64 = (0..xt.rank())
            .filter(|&j| j != axis)
            .map(|j| xt.dims[j])
            .product();
        let max_index_rank = self.cfg.max_rank + 1 - xt.rank();
        let max_elements = self.cfg.max_elements;
        let fitting = |t: &Type| {
            let n = t.element_count().unwrap_or(u64::MAX);
            t.dtype.is_integer()
                && t.rank() <= max_index_rank
                && (!empty_axis || n == 0)
                && n.saturating_mul(outer) <= max_elements
        };
        let cands = self.candidates(fitting);
        let indices = if !cands.is_empty() && !ch.chance(30) {
            Self::pick_recent(ch, &cands)?
        } else {
            let dtype = ch.pick(&index_dtypes)?;
            let mut rank = ch.below(max_index_rank + 1);
            if empty_axis {
                rank = rank.max(1);
            }
            let mut picker = self.dim_picker(outer.max(1));
            let mut dims: Dims = (0..rank).map(|_| picker.pick(ch)).collect();
            if empty_axis {
                let z = ch.below(rank);
                *dims.get_mut(z)? = 0;
            }
            self.value_of_type(ch, &Type { dtype, dims })?
        };
        self.push(Op::Gather {
            x,
            indices,
            axis: axis as u32,
        })
    }
}
