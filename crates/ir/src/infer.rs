//! The typing rule of every op: given the operand types, the result type or why there is none.

use crate::{BinaryOp, DType, Dim, Dims, Op, ReduceOp, Type, UnaryOp, MAX_RANK};

/// Why an op cannot be typed. The message names the offending operand or attribute and the
/// numbers involved; the verifier adds which instruction it was.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TypeError(pub String);

macro_rules! bail {
    ($($arg:tt)*) => { return Err(TypeError(format!($($arg)*))) };
}

/// The largest byte size a value may have: sizes must fit `isize` on 64-bit hosts.
const MAX_BYTES: u64 = i64::MAX as u64;

/// Checks that a type can exist: rank ≤ [`MAX_RANK`], and the product of its non-zero dims
/// times the element size fits in `isize`. Ignoring zero dims makes the rule independent of
/// axis order (a transpose of a valid type is valid) and keeps every row-major stride of a
/// valid type within `i64`, even for an empty tensor — which holds 0 bytes, so its error
/// says so rather than calling it large.
pub(crate) fn check_type(ty: &Type) -> Result<(), TypeError> {
    if ty.rank() > MAX_RANK {
        bail!("rank {} exceeds the maximum of {MAX_RANK}", ty.rank());
    }
    let extent = ty
        .dims
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(ty.dtype.size_bytes(), |acc, &d| acc.checked_mul(d));
    match extent {
        Some(b) if b <= MAX_BYTES => Ok(()),
        _ if ty.dims.contains(&0) => bail!(
            "type {ty} holds 0 bytes, but its non-zero dims alone would need more than \
             {MAX_BYTES} bytes (the dims of an empty type must fit as if it were not empty, so \
             its strides fit i64)"
        ),
        _ => bail!("type {ty} is larger than {MAX_BYTES} bytes"),
    }
}

/// The result type of `op` applied to operands of `operands` types (one per entry of
/// [`Op::operands`], in order), following the rules documented on each [`Op`] variant.
///
/// Builders call it to fill in types; the verifier calls it to check declared ones.
pub fn infer_type(op: &Op, operands: &[&Type]) -> Result<Type, TypeError> {
    let expected = op.operands().len();
    if operands.len() != expected {
        bail!(
            "{} takes {expected} operands, got {}",
            op.mnemonic(),
            operands.len()
        );
    }
    let ty = infer_unchecked(op, operands)?;
    check_type(&ty)?;
    Ok(ty)
}

fn infer_unchecked(op: &Op, t: &[&Type]) -> Result<Type, TypeError> {
    match op {
        Op::Unary { op, .. } => {
            let x = t[0];
            let ok = match op {
                UnaryOp::Neg | UnaryOp::Abs => x.dtype.is_numeric(),
                UnaryOp::Not => x.dtype == DType::Bool || x.dtype.is_integer(),
                _ => x.dtype.is_float(),
            };
            if !ok {
                bail!("{op} does not accept {}", x.dtype);
            }
            Ok(x.clone())
        }
        Op::Binary { op, .. } => {
            same_type(op.name(), t[0], t[1])?;
            let d = t[0].dtype;
            let ok = match op {
                BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => d == DType::Bool || d.is_integer(),
                BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic => d.is_integer(),
                _ => d.is_numeric(),
            };
            if !ok {
                bail!("{op} does not accept {d}");
            }
            Ok(t[0].clone())
        }
        Op::Compare { op, .. } => {
            same_type(op.name(), t[0], t[1])?;
            Ok(t[0].with_dtype(DType::Bool))
        }
        Op::Select { .. } => {
            if t[0].dtype != DType::Bool {
                bail!("select condition must be bool, got {}", t[0]);
            }
            same_type("select", t[1], t[2])?;
            if t[0].dims != t[1].dims {
                bail!(
                    "select condition {} and branches {} differ in dims",
                    t[0],
                    t[1]
                );
            }
            Ok(t[1].clone())
        }
        Op::Convert { to, .. } => Ok(t[0].with_dtype(*to)),
        Op::Constant(tensor) => Ok(tensor.ty()),
        Op::Iota { ty, axis } => {
            if !ty.dtype.is_numeric() {
                bail!("iota does not accept {}", ty.dtype);
            }
            if *axis as usize >= ty.rank() {
                bail!("iota axis {axis} out of range for rank {}", ty.rank());
            }
            Ok(ty.clone())
        }
        Op::Broadcast { dims, axes, .. } => {
            let x = t[0];
            if axes.len() != x.rank() {
                bail!(
                    "broadcast needs one axis per operand axis: {} axes for {}",
                    axes.len(),
                    x
                );
            }
            for (i, &a) in axes.iter().enumerate() {
                if a as usize >= dims.len() {
                    bail!(
                        "broadcast axis {a} out of range for result rank {}",
                        dims.len()
                    );
                }
                if i > 0 && a <= axes[i - 1] {
                    bail!("broadcast axes {axes:?} must be strictly increasing");
                }
                let (od, rd) = (x.dims[i], dims[a as usize]);
                if od != rd && od != 1 {
                    bail!("broadcast operand axis {i} has dim {od}, result axis {a} has {rd}");
                }
            }
            Ok(Type {
                dtype: x.dtype,
                dims: dims.clone(),
            })
        }
        Op::Reshape { dims, .. } => {
            let x = t[0];
            let to = Type {
                dtype: x.dtype,
                dims: dims.clone(),
            };
            if x.element_count() != to.element_count() {
                bail!("reshape from {x} to {to} changes the element count");
            }
            Ok(to)
        }
        Op::Transpose { perm, .. } => {
            let x = t[0];
            check_permutation(perm, x.rank())?;
            let dims = perm.iter().map(|&p| x.dims[p as usize]).collect();
            Ok(Type {
                dtype: x.dtype,
                dims,
            })
        }
        Op::Slice {
            start,
            limit,
            stride,
            ..
        } => {
            let x = t[0];
            let r = x.rank();
            if start.len() != r || limit.len() != r || stride.len() != r {
                bail!(
                    "slice of {x} needs {r} start/limit/stride entries, got {}/{}/{}",
                    start.len(),
                    limit.len(),
                    stride.len()
                );
            }
            let mut dims = Dims::new();
            for i in 0..r {
                let (s, l, st, d) = (start[i], limit[i], stride[i], x.dims[i]);
                if st == 0 {
                    bail!("slice stride on axis {i} is 0");
                }
                if s > l || l > d {
                    bail!("slice axis {i}: need start {s} <= limit {l} <= dim {d}");
                }
                dims.push((l - s).div_ceil(st));
            }
            Ok(Type {
                dtype: x.dtype,
                dims,
            })
        }
        Op::Concat { axis, .. } => {
            let Some(&first) = t.first() else {
                bail!("concat needs at least one operand");
            };
            let a = *axis as usize;
            if a >= first.rank() {
                bail!("concat axis {axis} out of range for {first}");
            }
            let mut total: Dim = 0;
            for (i, x) in t.iter().enumerate() {
                if x.dtype != first.dtype || x.rank() != first.rank() {
                    bail!("concat operand {i} is {x}, operand 0 is {first}");
                }
                for j in 0..first.rank() {
                    if j != a && x.dims[j] != first.dims[j] {
                        bail!(
                            "concat operand {i} ({x}) differs from operand 0 ({first}) on axis {j}"
                        );
                    }
                }
                total = match total.checked_add(x.dims[a]) {
                    Some(v) => v,
                    None => bail!("concat result dim overflows"),
                };
            }
            let mut dims = first.dims.clone();
            dims[a] = total;
            Ok(Type {
                dtype: first.dtype,
                dims,
            })
        }
        Op::Pad {
            low,
            high,
            interior,
            ..
        } => {
            let (x, v) = (t[0], t[1]);
            if v.dtype != x.dtype || v.rank() != 0 {
                bail!("pad value must be a {}[] scalar, got {v}", x.dtype);
            }
            let r = x.rank();
            if low.len() != r || high.len() != r || interior.len() != r {
                bail!(
                    "pad of {x} needs {r} low/high/interior entries, got {}/{}/{}",
                    low.len(),
                    high.len(),
                    interior.len()
                );
            }
            let mut dims = Dims::new();
            for i in 0..r {
                let d = i128::from(x.dims[i]);
                // Each term is below 2^64 in magnitude, so only the product can overflow i128.
                let n = (d - 1)
                    .max(0)
                    .checked_mul(i128::from(interior[i]))
                    .and_then(|gaps| {
                        gaps.checked_add(i128::from(low[i]) + i128::from(high[i]) + d)
                    });
                match n {
                    Some(n) if (0..=i128::from(u64::MAX)).contains(&n) => dims.push(n as u64),
                    Some(n) => bail!("pad axis {i} gives dim {n}"),
                    None => bail!("pad axis {i} overflows"),
                }
            }
            Ok(Type {
                dtype: x.dtype,
                dims,
            })
        }
        Op::Reverse { axes, .. } => {
            check_distinct_axes("reverse", axes, t[0].rank())?;
            Ok(t[0].clone())
        }
        Op::Reduce { op, axes, .. } => {
            let x = t[0];
            if matches!(op, ReduceOp::Sum | ReduceOp::Prod) && !x.dtype.is_numeric() {
                bail!("reduce {op} does not accept {}", x.dtype);
            }
            check_distinct_axes("reduce", axes, x.rank())?;
            let dims = (0..x.rank())
                .filter(|i| !axes.contains(&(*i as u32)))
                .map(|i| x.dims[i])
                .collect();
            Ok(Type {
                dtype: x.dtype,
                dims,
            })
        }
        Op::Dot {
            lhs_batch,
            rhs_batch,
            lhs_contract,
            rhs_contract,
            ..
        } => {
            let (l, r) = (t[0], t[1]);
            if l.dtype != r.dtype || !l.dtype.is_numeric() {
                bail!("dot needs operands of one numeric dtype, got {l} and {r}");
            }
            if lhs_batch.len() != rhs_batch.len() || lhs_contract.len() != rhs_contract.len() {
                bail!("dot batch/contracting axis lists must pair up");
            }
            let mut lhs_axes = lhs_batch.clone();
            lhs_axes.extend_from_slice(lhs_contract);
            let mut rhs_axes = rhs_batch.clone();
            rhs_axes.extend_from_slice(rhs_contract);
            check_distinct_axes("dot lhs", &lhs_axes, l.rank())?;
            check_distinct_axes("dot rhs", &rhs_axes, r.rank())?;
            for (&a, &b) in lhs_axes.iter().zip(&rhs_axes) {
                let (da, db) = (l.dims[a as usize], r.dims[b as usize]);
                if da != db {
                    bail!("dot pairs lhs axis {a} (dim {da}) with rhs axis {b} (dim {db})");
                }
            }
            let mut dims: Dims = lhs_batch.iter().map(|&a| l.dims[a as usize]).collect();
            dims.extend(
                (0..l.rank())
                    .filter(|i| !lhs_axes.contains(&(*i as u32)))
                    .map(|i| l.dims[i]),
            );
            dims.extend(
                (0..r.rank())
                    .filter(|i| !rhs_axes.contains(&(*i as u32)))
                    .map(|i| r.dims[i]),
            );
            Ok(Type {
                dtype: l.dtype,
                dims,
            })
        }
        Op::Gather { axis, .. } => {
            let (x, idx) = (t[0], t[1]);
            let a = *axis as usize;
            if a >= x.rank() {
                bail!("gather axis {axis} out of range for {x}");
            }
            if !idx.dtype.is_integer() {
                bail!("gather indices must be an integer dtype, got {idx}");
            }
            if x.dims[a] == 0 && idx.element_count() != Some(0) {
                bail!("gather from empty axis {axis} of {x} with non-empty indices {idx}");
            }
            let mut dims: Dims = x.dims[..a].iter().copied().collect();
            dims.extend_from_slice(&idx.dims);
            dims.extend_from_slice(&x.dims[a + 1..]);
            if dims.len() > MAX_RANK {
                bail!("gather result rank {} exceeds {MAX_RANK}", dims.len());
            }
            Ok(Type {
                dtype: x.dtype,
                dims,
            })
        }
    }
}

fn same_type(what: &str, a: &Type, b: &Type) -> Result<(), TypeError> {
    if a != b {
        bail!("{what} needs operands of identical type, got {a} and {b}");
    }
    Ok(())
}

fn check_distinct_axes(what: &str, axes: &[u32], rank: usize) -> Result<(), TypeError> {
    for (i, &a) in axes.iter().enumerate() {
        if a as usize >= rank {
            bail!("{what} axis {a} out of range for rank {rank}");
        }
        if axes[..i].contains(&a) {
            bail!("{what} axis {a} listed twice");
        }
    }
    Ok(())
}

fn check_permutation(perm: &[u32], rank: usize) -> Result<(), TypeError> {
    if perm.len() != rank {
        bail!("transpose permutation {perm:?} must have {rank} entries");
    }
    check_distinct_axes("transpose", perm, rank)
}
