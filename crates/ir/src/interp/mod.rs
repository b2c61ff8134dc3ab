//! The reference interpreter: runs a [`Program`] on concrete tensors, slowly but obviously
//! correctly. It is the oracle every compiled kernel is tested against, so each op is written
//! to read like its documentation in `op.rs` rather than to be fast.
//!
//! [`eval`] verifies the program first, so no program — valid or not — can make it panic.
//! [`eval_with_limits`] bounds the work with a fuel budget, so fuzzers can discard programs
//! too large to run.
//!
//! Floating-point order of evaluation, which the op docs leave to the interpreter: `reduce`
//! sums and products and `dot` accumulations start from the identity (+0.0 for sums, so a sum
//! of only -0.0 terms is +0.0) and add one term at a time in row-major order of the reduced or
//! contracting indices, rounding after every step.

mod data;
mod dot;
mod elementwise;
mod movement;
mod reduce;
pub mod scalar;

#[cfg(test)]
mod tests;

use std::borrow::Cow;

use crate::{Op, Program, Tensor, TensorData, Type, VerifyErrors};

/// What one op evaluation gives: the result's elements, or a message describing a broken
/// interpreter invariant (reported as [`EvalError::Internal`]).
type OpResult = Result<TensorData, String>;

/// Bounds on the work one evaluation may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Limits {
    /// The most elements the evaluation may materialise, summed over every instruction's
    /// result. A `dot` also counts one element per multiply-add it performs, since its work
    /// can far exceed the size of its result. Arguments are not counted.
    pub max_elements: u64,
}

impl Limits {
    /// The limits [`eval`] uses: 2^28 elements, at most 2 GiB of f64 results.
    pub const DEFAULT: Limits = Limits {
        max_elements: 1 << 28,
    };
}

impl Default for Limits {
    fn default() -> Limits {
        Limits::DEFAULT
    }
}

/// Why a program could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The program failed verification; nothing was evaluated.
    #[error("invalid program: {0}")]
    Invalid(VerifyErrors),
    /// The number of arguments differs from the number of parameters.
    #[error("the program has {expected} parameters but {actual} arguments were given")]
    ArgumentCount {
        /// Number of parameters (inputs and weights).
        expected: usize,
        /// Number of arguments given.
        actual: usize,
    },
    /// An argument's type differs from its parameter's.
    #[error("argument {index} must be {expected}, got {actual}")]
    ArgumentType {
        /// Position of the argument (and parameter).
        index: usize,
        /// The parameter's type.
        expected: Type,
        /// The argument's type.
        actual: Type,
    },
    /// Evaluating instruction `instruction` would exceed [`Limits::max_elements`]; the
    /// evaluation stopped before doing that instruction's work.
    #[error("instruction {instruction} would exceed the limit of {limit} elements")]
    LimitExceeded {
        /// Index of the instruction in `program.instructions`.
        instruction: usize,
        /// The limit in force.
        limit: u64,
    },
    /// The interpreter broke one of its own invariants on a verified program: a bug in
    /// accy-ir, never the caller's fault. Reported instead of panicking.
    #[error("interpreter bug at instruction {instruction}: {message}")]
    Internal {
        /// Index of the instruction in `program.instructions` (`instructions.len()` when the
        /// fault was in collecting the outputs).
        instruction: usize,
        /// What went wrong.
        message: String,
    },
}

/// Evaluates `program` on `args` (one per entry of `program.params`, inputs and weights alike,
/// in order) within [`Limits::DEFAULT`], returning one tensor per output in order.
///
/// Output donation does not change results: donated outputs are returned like any other and
/// the arguments are never modified.
pub fn eval(program: &Program, args: &[Tensor]) -> Result<Vec<Tensor>, EvalError> {
    eval_with_limits(program, args, &Limits::DEFAULT)
}

/// [`eval`] with an explicit work budget. With a very large `max_elements` the host may run
/// out of memory; fuzzers should pick a budget their machine can hold.
pub fn eval_with_limits(
    program: &Program,
    args: &[Tensor],
    limits: &Limits,
) -> Result<Vec<Tensor>, EvalError> {
    crate::verify(program).map_err(EvalError::Invalid)?;
    if args.len() != program.params.len() {
        return Err(EvalError::ArgumentCount {
            expected: program.params.len(),
            actual: args.len(),
        });
    }
    for (index, (arg, param)) in args.iter().zip(&program.params).enumerate() {
        if arg.ty() != param.ty {
            return Err(EvalError::ArgumentType {
                index,
                expected: param.ty.clone(),
                actual: arg.ty(),
            });
        }
    }

    let mut values: Vec<Cow<'_, Tensor>> = args.iter().map(Cow::Borrowed).collect();
    let mut used: u64 = 0;
    for (k, inst) in program.instructions.iter().enumerate() {
        let internal = |message: String| EvalError::Internal {
            instruction: k,
            message,
        };
        used = used.saturating_add(cost(program, &inst.op, &inst.ty));
        if used > limits.max_elements {
            return Err(EvalError::LimitExceeded {
                instruction: k,
                limit: limits.max_elements,
            });
        }
        let operands = inst
            .op
            .operands()
            .iter()
            .map(|v| values.get(v.index()).map(|t| t.as_ref()))
            .collect::<Option<Vec<&Tensor>>>()
            .ok_or_else(|| internal("an operand has no value".into()))?;
        let data = eval_op(&inst.op, &inst.ty, &operands).map_err(internal)?;
        // Holding every result to its declared type checks the interpreter against the typing
        // rules, which were written separately.
        let result = Tensor::new(&inst.ty.dims, data).map_err(|e| internal(e.to_string()))?;
        if result.dtype() != inst.ty.dtype {
            return Err(internal(format!(
                "result is {} but the instruction declares {}",
                result.dtype(),
                inst.ty.dtype
            )));
        }
        values.push(Cow::Owned(result));
    }

    program
        .outputs
        .iter()
        .map(|out| {
            values
                .get(out.value.index())
                .map(|t| t.clone().into_owned())
                .ok_or_else(|| EvalError::Internal {
                    instruction: program.instructions.len(),
                    message: format!("output value {} does not exist", out.value),
                })
        })
        .collect()
}

/// The fuel an instruction of result type `ty` uses: its result's element count, plus one per
/// multiply-add for `dot`.
fn cost(program: &Program, op: &Op, ty: &Type) -> u64 {
    let elements = ty.element_count().unwrap_or(u64::MAX);
    let Op::Dot {
        lhs, lhs_contract, ..
    } = op
    else {
        return elements;
    };
    let contraction = program
        .value_type(*lhs)
        .and_then(|t| {
            lhs_contract
                .iter()
                .try_fold(1u64, |acc, &a| acc.checked_mul(*t.dims.get(a as usize)?))
        })
        .unwrap_or(u64::MAX);
    elements.saturating_add(elements.saturating_mul(contraction))
}

/// The elements of `op` applied to `operands` (one per [`Op::operands`] entry), producing a
/// result of the verified type `ty`.
pub(super) fn eval_op(op: &Op, ty: &Type, operands: &[&Tensor]) -> OpResult {
    let operand = |i: usize| {
        operands
            .get(i)
            .copied()
            .ok_or_else(|| format!("operand {i} is missing"))
    };
    match op {
        Op::Unary { op, .. } => elementwise::unary(*op, operand(0)?.data()),
        Op::Binary { op, .. } => elementwise::binary(*op, operand(0)?.data(), operand(1)?.data()),
        Op::Compare { op, .. } => elementwise::compare(*op, operand(0)?.data(), operand(1)?.data()),
        Op::Select { .. } => {
            elementwise::select(operand(0)?.data(), operand(1)?.data(), operand(2)?.data())
        }
        Op::Convert { to, .. } => Ok(elementwise::convert(operand(0)?.data(), *to)),
        Op::Constant(tensor) => Ok(tensor.data().clone()),
        Op::Iota { axis, .. } => movement::iota(ty, *axis),
        Op::Broadcast { axes, .. } => movement::broadcast(operand(0)?, ty, axes),
        Op::Reshape { .. } => movement::reshape(operand(0)?),
        Op::Transpose { perm, .. } => movement::transpose(operand(0)?, ty, perm),
        Op::Slice { start, stride, .. } => movement::slice(operand(0)?, ty, start, stride),
        Op::Concat { axis, .. } => movement::concat(operands, ty, *axis),
        Op::Pad { low, interior, .. } => movement::pad(operand(0)?, operand(1)?, ty, low, interior),
        Op::Reverse { axes, .. } => movement::reverse(operand(0)?, axes),
        Op::Reduce { op, axes, .. } => reduce::reduce(*op, operand(0)?, axes, ty),
        Op::Dot {
            lhs_batch,
            rhs_batch,
            lhs_contract,
            rhs_contract,
            ..
        } => dot::dot(
            operand(0)?,
            operand(1)?,
            dot::DotAxes {
                batch: lhs_batch,
                contract: lhs_contract,
            },
            dot::DotAxes {
                batch: rhs_batch,
                contract: rhs_contract,
            },
            ty,
        ),
        Op::Gather { axis, .. } => movement::gather(operand(0)?, operand(1)?, ty, *axis),
    }
}
