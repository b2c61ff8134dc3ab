//! Building programs in Rust with type inference.

use crate::{
    infer_type, verify, Axes, BinaryOp, CompareOp, DType, Dims, Instruction, Op, Output, Param,
    ParamKind, Program, ReduceOp, Tensor, Type, TypeError, UnaryOp, ValueId, VerifyErrors,
};

/// Why a [`Builder`] call was refused. The builder is unchanged by a refused call.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// An operand id does not name a value of this builder.
    #[error("value {0} does not exist in this program")]
    UnknownValue(ValueId),
    /// The op's typing rule refused the operands or attributes.
    #[error("`{op}`: {error}")]
    Type {
        /// The op's mnemonic.
        op: &'static str,
        /// Why.
        error: TypeError,
    },
    /// `finish` found the program invalid (bad names, donation, no outputs, …).
    #[error(transparent)]
    Invalid(#[from] VerifyErrors),
}

/// Builds a [`Program`] one value at a time, inferring each result type.
///
/// Parameters may be added at any point: they are placed before all instructions and the ids
/// handed out so far stay valid, because [`Builder::finish`] renumbers them consistently.
/// Every method checks its operands and returns an error instead of panicking.
///
/// ```
/// use accy_ir::{Builder, DType, Type};
/// let mut b = Builder::new();
/// let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
/// let y = b.unary(accy_ir::UnaryOp::Exp, x).unwrap();
/// b.output(y).unwrap();
/// let program = b.finish().unwrap();
/// assert_eq!(program.instructions.len(), 1);
/// ```
#[derive(Debug, Default)]
pub struct Builder {
    /// Every value in creation order: a parameter or an instruction.
    values: Vec<Slot>,
    outputs: Vec<Output>,
}

#[derive(Debug)]
enum Slot {
    Param(Param),
    Inst(Instruction),
}

impl Slot {
    fn ty(&self) -> &Type {
        match self {
            Slot::Param(p) => &p.ty,
            Slot::Inst(i) => &i.ty,
        }
    }
}

impl Builder {
    /// An empty program.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// The type of a value made so far.
    pub fn type_of(&self, v: ValueId) -> Result<&Type, BuildError> {
        self.values
            .get(v.index())
            .map(Slot::ty)
            .ok_or(BuildError::UnknownValue(v))
    }

    /// Adds a caller-supplied input named `name`.
    pub fn input(&mut self, name: &str, ty: Type) -> Result<ValueId, BuildError> {
        self.param(ParamKind::Input, name, ty)
    }

    /// Adds a named weight.
    pub fn weight(&mut self, name: &str, ty: Type) -> Result<ValueId, BuildError> {
        self.param(ParamKind::Weight, name, ty)
    }

    fn param(&mut self, kind: ParamKind, name: &str, ty: Type) -> Result<ValueId, BuildError> {
        crate::infer::check_type(&ty).map_err(|error| BuildError::Type { op: "param", error })?;
        self.values.push(Slot::Param(Param {
            kind,
            name: name.to_owned(),
            ty,
        }));
        Ok(ValueId(self.values.len() as u32 - 1))
    }

    /// Appends any op, inferring its type.
    pub fn push(&mut self, op: Op) -> Result<ValueId, BuildError> {
        let operands = op.operands();
        let types = operands
            .iter()
            .map(|&v| self.type_of(v))
            .collect::<Result<Vec<_>, _>>()?;
        let ty = infer_type(&op, &types).map_err(|error| BuildError::Type {
            op: op.mnemonic(),
            error,
        })?;
        self.values.push(Slot::Inst(Instruction { op, ty }));
        Ok(ValueId(self.values.len() as u32 - 1))
    }

    /// `op(x)`.
    pub fn unary(&mut self, op: UnaryOp, x: ValueId) -> Result<ValueId, BuildError> {
        self.push(Op::Unary { op, x })
    }

    /// `op(lhs, rhs)`.
    pub fn binary(
        &mut self,
        op: BinaryOp,
        lhs: ValueId,
        rhs: ValueId,
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Binary { op, lhs, rhs })
    }

    /// `lhs op rhs` as bool.
    pub fn compare(
        &mut self,
        op: CompareOp,
        lhs: ValueId,
        rhs: ValueId,
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Compare { op, lhs, rhs })
    }

    /// `cond ? on_true : on_false`.
    pub fn select(
        &mut self,
        cond: ValueId,
        on_true: ValueId,
        on_false: ValueId,
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Select {
            cond,
            on_true,
            on_false,
        })
    }

    /// `x` converted to `to`.
    pub fn convert(&mut self, x: ValueId, to: DType) -> Result<ValueId, BuildError> {
        self.push(Op::Convert { x, to })
    }

    /// A literal.
    pub fn constant(&mut self, t: Tensor) -> Result<ValueId, BuildError> {
        self.push(Op::Constant(t))
    }

    /// Indices along `axis` as values of `ty`.
    pub fn iota(&mut self, ty: Type, axis: u32) -> Result<ValueId, BuildError> {
        self.push(Op::Iota { ty, axis })
    }

    /// `x` expanded to `dims`, operand axis `i` becoming result axis `axes[i]`.
    pub fn broadcast(
        &mut self,
        x: ValueId,
        dims: &[u64],
        axes: &[u32],
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Broadcast {
            x,
            dims: Dims::from_slice(dims),
            axes: Axes::from_slice(axes),
        })
    }

    /// NumPy-style broadcast of `x` to `dims`: axes align from the right and each operand dim
    /// must be 1 or equal to the result dim. Returns `x` itself when the dims already match.
    pub fn broadcast_to(&mut self, x: ValueId, dims: &[u64]) -> Result<ValueId, BuildError> {
        let rank = self.type_of(x)?.rank();
        if self.type_of(x)?.dims.as_slice() == dims {
            return Ok(x);
        }
        let offset = dims
            .len()
            .checked_sub(rank)
            .ok_or_else(|| BuildError::Type {
                op: "broadcast",
                error: TypeError(format!(
                    "cannot broadcast rank {rank} to rank {}",
                    dims.len()
                )),
            })?;
        let axes: Vec<u32> = (0..rank).map(|i| (offset + i) as u32).collect();
        self.broadcast(x, dims, &axes)
    }

    /// `x` with new dims of the same element count.
    pub fn reshape(&mut self, x: ValueId, dims: &[u64]) -> Result<ValueId, BuildError> {
        self.push(Op::Reshape {
            x,
            dims: Dims::from_slice(dims),
        })
    }

    /// `x` with axes permuted.
    pub fn transpose(&mut self, x: ValueId, perm: &[u32]) -> Result<ValueId, BuildError> {
        self.push(Op::Transpose {
            x,
            perm: Axes::from_slice(perm),
        })
    }

    /// A strided sub-range of `x`.
    pub fn slice(
        &mut self,
        x: ValueId,
        start: &[u64],
        limit: &[u64],
        stride: &[u64],
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Slice {
            x,
            start: Dims::from_slice(start),
            limit: Dims::from_slice(limit),
            stride: Dims::from_slice(stride),
        })
    }

    /// `xs` joined along `axis`.
    pub fn concat(&mut self, xs: &[ValueId], axis: u32) -> Result<ValueId, BuildError> {
        self.push(Op::Concat {
            xs: xs.iter().copied().collect(),
            axis,
        })
    }

    /// `x` padded with the scalar `value`.
    pub fn pad(
        &mut self,
        x: ValueId,
        value: ValueId,
        low: &[i64],
        high: &[i64],
        interior: &[u64],
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Pad {
            x,
            value,
            low: low.iter().copied().collect(),
            high: high.iter().copied().collect(),
            interior: Dims::from_slice(interior),
        })
    }

    /// `x` reversed along `axes`.
    pub fn reverse(&mut self, x: ValueId, axes: &[u32]) -> Result<ValueId, BuildError> {
        self.push(Op::Reverse {
            x,
            axes: Axes::from_slice(axes),
        })
    }

    /// `x` reduced over `axes` with `op`.
    pub fn reduce(
        &mut self,
        op: ReduceOp,
        x: ValueId,
        axes: &[u32],
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Reduce {
            op,
            x,
            axes: Axes::from_slice(axes),
        })
    }

    /// General batched contraction; see [`Op::Dot`].
    pub fn dot(
        &mut self,
        lhs: ValueId,
        rhs: ValueId,
        batch: (&[u32], &[u32]),
        contract: (&[u32], &[u32]),
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Dot {
            lhs,
            rhs,
            lhs_batch: Axes::from_slice(batch.0),
            rhs_batch: Axes::from_slice(batch.1),
            lhs_contract: Axes::from_slice(contract.0),
            rhs_contract: Axes::from_slice(contract.1),
        })
    }

    /// Matrix product of `[m, k]` and `[k, n]` operands.
    pub fn matmul(&mut self, lhs: ValueId, rhs: ValueId) -> Result<ValueId, BuildError> {
        self.dot(lhs, rhs, (&[], &[]), (&[1], &[0]))
    }

    /// Slices of `x` along `axis` picked by `indices`.
    pub fn gather(
        &mut self,
        x: ValueId,
        indices: ValueId,
        axis: u32,
    ) -> Result<ValueId, BuildError> {
        self.push(Op::Gather { x, indices, axis })
    }

    /// Marks `v` as the next output.
    pub fn output(&mut self, v: ValueId) -> Result<(), BuildError> {
        self.type_of(v)?;
        self.outputs.push(Output {
            value: v,
            donates: None,
        });
        Ok(())
    }

    /// Marks `v` as the next output, written in place of input number `input` (see
    /// [`Output::donates`]); checked by `finish`.
    pub fn output_donating(&mut self, v: ValueId, input: u32) -> Result<(), BuildError> {
        self.type_of(v)?;
        self.outputs.push(Output {
            value: v,
            donates: Some(input),
        });
        Ok(())
    }

    /// The verified program, with parameters moved before the instructions.
    pub fn finish(self) -> Result<Program, BuildError> {
        // New id of each builder value: parameters first (in creation order), then instructions.
        let n_params = self
            .values
            .iter()
            .filter(|s| matches!(s, Slot::Param(_)))
            .count() as u32;
        let mut renumber = Vec::with_capacity(self.values.len());
        let (mut next_param, mut next_inst) = (0u32, n_params);
        for s in &self.values {
            let counter = match s {
                Slot::Param(_) => &mut next_param,
                Slot::Inst(_) => &mut next_inst,
            };
            renumber.push(ValueId(*counter));
            *counter += 1;
        }
        let map = |v: ValueId| renumber[v.index()];
        let mut program = Program::default();
        for s in self.values {
            match s {
                Slot::Param(p) => program.params.push(p),
                Slot::Inst(mut inst) => {
                    remap_operands(&mut inst.op, map);
                    program.instructions.push(inst);
                }
            }
        }
        program.outputs = self
            .outputs
            .into_iter()
            .map(|o| Output {
                value: map(o.value),
                donates: o.donates,
            })
            .collect();
        verify(&program)?;
        Ok(program)
    }
}

/// Rewrites every operand id of `op` through `map`.
pub(crate) fn remap_operands(op: &mut Op, map: impl Fn(ValueId) -> ValueId) {
    match op {
        Op::Unary { x, .. }
        | Op::Convert { x, .. }
        | Op::Broadcast { x, .. }
        | Op::Reshape { x, .. }
        | Op::Transpose { x, .. }
        | Op::Slice { x, .. }
        | Op::Reverse { x, .. }
        | Op::Reduce { x, .. } => *x = map(*x),
        Op::Binary { lhs, rhs, .. } | Op::Compare { lhs, rhs, .. } | Op::Dot { lhs, rhs, .. } => {
            *lhs = map(*lhs);
            *rhs = map(*rhs);
        }
        Op::Select {
            cond,
            on_true,
            on_false,
        } => {
            *cond = map(*cond);
            *on_true = map(*on_true);
            *on_false = map(*on_false);
        }
        Op::Constant(_) | Op::Iota { .. } => {}
        Op::Concat { xs, .. } => xs.iter_mut().for_each(|x| *x = map(*x)),
        Op::Pad { x, value, .. } => {
            *x = map(*x);
            *value = map(*value);
        }
        Op::Gather { x, indices, .. } => {
            *x = map(*x);
            *indices = map(*indices);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_added_late_are_renumbered_first() {
        let mut b = Builder::new();
        let x = b.input("x", Type::new(DType::F32, &[2])).unwrap();
        let e = b.unary(UnaryOp::Exp, x).unwrap();
        let w = b.weight("w", Type::new(DType::F32, &[2])).unwrap();
        let s = b.binary(BinaryOp::Add, e, w).unwrap();
        b.output(s).unwrap();
        let p = b.finish().unwrap();
        assert_eq!(p.params.len(), 2);
        assert_eq!(
            p.instructions[1].op,
            Op::Binary {
                op: BinaryOp::Add,
                lhs: ValueId(2),
                rhs: ValueId(1)
            }
        );
        assert_eq!(p.outputs[0].value, ValueId(3));
    }

    #[test]
    fn misuse_is_an_error_not_a_panic() {
        let mut b = Builder::new();
        let x = b.input("x", Type::new(DType::F32, &[2])).unwrap();
        let i = b.input("i", Type::new(DType::I32, &[2])).unwrap();
        assert!(matches!(
            b.binary(BinaryOp::Add, x, i),
            Err(BuildError::Type { op: "add", .. })
        ));
        assert_eq!(
            b.unary(UnaryOp::Exp, ValueId(9)),
            Err(BuildError::UnknownValue(ValueId(9)))
        );
        assert!(b.reshape(x, &[3]).is_err());
        assert!(b.broadcast_to(x, &[]).is_err());
        assert!(matches!(
            Builder::new().finish(),
            Err(BuildError::Invalid(_))
        ));
    }

    #[test]
    fn broadcast_to_aligns_right() {
        let mut b = Builder::new();
        let x = b.input("x", Type::new(DType::F32, &[3])).unwrap();
        let y = b.broadcast_to(x, &[2, 3]).unwrap();
        assert_eq!(b.type_of(y).unwrap(), &Type::new(DType::F32, &[2, 3]));
        assert_eq!(b.broadcast_to(x, &[3]).unwrap(), x);
    }
}
