//! Whole programs, argument checking, invalid programs and the work limit.

use super::*;
use crate::interp::{eval_with_limits, EvalError, Limits};
use crate::{
    BinaryOp, DType, Instruction, Op, Output, Param, ParamKind, Program, ReduceOp, Type, UnaryOp,
};

fn f32_type(dims: &[u64]) -> Type {
    Type::new(DType::F32, dims)
}

/// `x + w` for f32[2] input `x` and weight `w`.
fn add_program() -> Program {
    let mut b = Builder::new();
    let x = b.input("x", f32_type(&[2])).unwrap();
    let w = b.weight("w", f32_type(&[2])).unwrap();
    let s = b.binary(BinaryOp::Add, x, w).unwrap();
    b.output(s).unwrap();
    b.finish().unwrap()
}

#[test]
fn programs_chain_values_and_mix_inputs_weights_and_constants() {
    // out0 = sum(exp(x) * w + 1), out1 = y, out2 = y (a parameter returned twice).
    let mut b = Builder::new();
    let x = b.input("x", f32_type(&[2])).unwrap();
    let w = b.weight("w", f32_type(&[2])).unwrap();
    let y = b.input("y", Type::new(DType::I32, &[])).unwrap();
    let e = b.unary(UnaryOp::Exp, x).unwrap();
    let m = b.binary(BinaryOp::Mul, e, w).unwrap();
    let one = b.constant(Tensor::f32s(&[], vec![1.0])).unwrap();
    let ones = b.broadcast(one, &[2], &[]).unwrap();
    let s = b.binary(BinaryOp::Add, m, ones).unwrap();
    let total = b.reduce(ReduceOp::Sum, s, &[0]).unwrap();
    b.output(total).unwrap();
    b.output(y).unwrap();
    b.output(y).unwrap();
    let program = b.finish().unwrap();
    let args = [
        f32v(&[0.0, 0.0]),
        f32v(&[2.0, 3.0]),
        Tensor::i32s(&[], vec![-4]),
    ];
    let out = eval(&program, &args).unwrap();
    assert_eq!(
        out,
        vec![
            Tensor::f32s(&[], vec![7.0]),
            Tensor::i32s(&[], vec![-4]),
            Tensor::i32s(&[], vec![-4])
        ]
    );
}

#[test]
fn donation_does_not_change_results_or_arguments() {
    let mut b = Builder::new();
    let x = b.input("x", f32_type(&[2])).unwrap();
    let n = b.unary(UnaryOp::Neg, x).unwrap();
    b.output_donating(n, 0).unwrap();
    b.output(x).unwrap();
    let program = b.finish().unwrap();
    let args = [f32v(&[1.0, -2.0])];
    let out = eval(&program, &args).unwrap();
    assert_eq!(out, vec![f32v(&[-1.0, 2.0]), f32v(&[1.0, -2.0])]);
    assert_eq!(args[0], f32v(&[1.0, -2.0]));
}

#[test]
fn constants_are_returned_as_written() {
    let c = Tensor::f64s(&[2, 0], vec![]);
    assert_eq!(run(&[], |b, _| b.constant(c.clone())), c);
    let c = Tensor::f32s(&[2], vec![f32::from_bits(0xFFC0_0001), -0.0]);
    assert_eq!(run(&[], |b, _| b.constant(c.clone())), c);
}

#[test]
fn wrong_argument_count_is_reported() {
    let program = add_program();
    assert_eq!(
        eval(&program, &[f32v(&[1.0, 2.0])]),
        Err(EvalError::ArgumentCount {
            expected: 2,
            actual: 1
        })
    );
    let three = [f32v(&[1.0, 2.0]), f32v(&[1.0, 2.0]), f32v(&[1.0, 2.0])];
    let err = eval(&program, &three).unwrap_err();
    assert_eq!(
        err,
        EvalError::ArgumentCount {
            expected: 2,
            actual: 3
        }
    );
    assert!(err.to_string().contains("2 parameters"), "{err}");
}

#[test]
fn wrong_argument_type_names_the_argument() {
    let program = add_program();
    assert_eq!(
        eval(&program, &[f32v(&[1.0, 2.0]), f64v(&[1.0, 2.0])]),
        Err(EvalError::ArgumentType {
            index: 1,
            expected: f32_type(&[2]),
            actual: Type::new(DType::F64, &[2]),
        })
    );
    let err = eval(&program, &[f32v(&[1.0, 2.0, 3.0]), f32v(&[1.0, 2.0])]).unwrap_err();
    assert_eq!(
        err,
        EvalError::ArgumentType {
            index: 0,
            expected: f32_type(&[2]),
            actual: f32_type(&[3]),
        }
    );
    assert!(err.to_string().contains("f32[2]"), "{err}");
}

#[test]
fn invalid_programs_are_refused_not_run() {
    assert!(matches!(
        eval(&Program::default(), &[]),
        Err(EvalError::Invalid(_))
    ));
    // An operand that does not exist, and an output that does not exist.
    let program = Program {
        params: vec![],
        instructions: vec![Instruction {
            op: Op::Unary {
                op: UnaryOp::Exp,
                x: ValueId(7),
            },
            ty: f32_type(&[1]),
        }],
        outputs: vec![Output {
            value: ValueId(9),
            donates: None,
        }],
    };
    let Err(EvalError::Invalid(errors)) = eval(&program, &[]) else {
        panic!("expected Invalid")
    };
    assert_eq!(errors.0.len(), 2);
    // A declared type that the op does not give.
    let mut program = add_program();
    program.instructions[0].ty = f32_type(&[3]);
    assert!(matches!(
        eval(&program, &[f32v(&[1.0, 2.0]), f32v(&[1.0, 2.0])]),
        Err(EvalError::Invalid(_))
    ));
    // A parameter type too large to exist.
    let program = Program {
        params: vec![Param {
            kind: ParamKind::Input,
            name: "x".into(),
            ty: Type::new(DType::F64, &[1 << 62, 4]),
        }],
        instructions: vec![],
        outputs: vec![Output {
            value: ValueId(0),
            donates: None,
        }],
    };
    assert!(matches!(eval(&program, &[]), Err(EvalError::Invalid(_))));
}

#[test]
fn the_limit_counts_every_result_element() {
    // broadcast: 1000 elements, then reduce: 10 more.
    let mut b = Builder::new();
    let x = b.input("x", f32_type(&[10])).unwrap();
    let wide = b.broadcast(x, &[10, 100], &[0]).unwrap();
    let sums = b.reduce(ReduceOp::Sum, wide, &[1]).unwrap();
    b.output(sums).unwrap();
    let program = b.finish().unwrap();
    let args = [f32v(&[1.0; 10])];
    let with = |max_elements| eval_with_limits(&program, &args, &Limits { max_elements });
    assert_eq!(
        with(999),
        Err(EvalError::LimitExceeded {
            instruction: 0,
            limit: 999
        })
    );
    assert_eq!(
        with(1009),
        Err(EvalError::LimitExceeded {
            instruction: 1,
            limit: 1009
        })
    );
    assert_eq!(with(1010), Ok(vec![f32v(&[100.0; 10])]));
}

#[test]
fn the_limit_counts_dot_multiply_adds() {
    let mut b = Builder::new();
    let l = b.input("l", f32_type(&[1, 100])).unwrap();
    let r = b.input("r", f32_type(&[100, 1])).unwrap();
    let p = b.matmul(l, r).unwrap();
    b.output(p).unwrap();
    let program = b.finish().unwrap();
    let args = [
        Tensor::f32s(&[1, 100], vec![1.0; 100]),
        Tensor::f32s(&[100, 1], vec![2.0; 100]),
    ];
    let with = |max_elements| eval_with_limits(&program, &args, &Limits { max_elements });
    assert!(matches!(
        with(100),
        Err(EvalError::LimitExceeded { instruction: 0, .. })
    ));
    assert_eq!(with(101), Ok(vec![Tensor::f32s(&[1, 1], vec![200.0])]));
}

#[test]
fn the_default_limit_refuses_huge_results_before_allocating() {
    assert_eq!(Limits::default(), Limits::DEFAULT);
    let mut b = Builder::new();
    let x = b.input("x", Type::scalar(DType::F64)).unwrap();
    let huge = b.broadcast(x, &[1 << 20, 1 << 20], &[]).unwrap();
    b.output(huge).unwrap();
    let program = b.finish().unwrap();
    let err = eval(&program, &[Tensor::f64s(&[], vec![1.0])]).unwrap_err();
    assert_eq!(
        err,
        EvalError::LimitExceeded {
            instruction: 0,
            limit: Limits::DEFAULT.max_elements
        }
    );
    assert!(err.to_string().contains("limit"), "{err}");
}

#[test]
fn broken_invariants_are_errors_not_panics() {
    use crate::interp::eval_op;
    use crate::{axes, CompareOp};
    let f = f32v(&[1.0]);
    let i = i32v(&[1]);
    let ty = f32_type(&[1]);
    let binary = Op::Binary {
        op: BinaryOp::Add,
        lhs: ValueId(0),
        rhs: ValueId(1),
    };
    assert!(eval_op(&binary, &ty, &[&f, &i]).is_err());
    assert!(eval_op(&binary, &ty, &[&f]).is_err());
    let not = Op::Unary {
        op: UnaryOp::Not,
        x: ValueId(0),
    };
    assert!(eval_op(&not, &ty, &[&f]).is_err());
    let shift = Op::Binary {
        op: BinaryOp::Shl,
        lhs: ValueId(0),
        rhs: ValueId(0),
    };
    assert!(eval_op(&shift, &ty, &[&f, &f]).is_err());
    let compare = Op::Compare {
        op: CompareOp::Lt,
        lhs: ValueId(0),
        rhs: ValueId(1),
    };
    assert!(eval_op(&compare, &ty, &[&f, &i]).is_err());
    let sum = Op::Reduce {
        op: ReduceOp::Sum,
        x: ValueId(0),
        axes: axes(&[0]),
    };
    assert!(eval_op(&sum, &Type::scalar(DType::Bool), &[&boolv(&[true])]).is_err());
    let reverse = Op::Reverse {
        x: ValueId(0),
        axes: axes(&[]),
    };
    assert!(eval_op(&reverse, &ty, &[]).is_err());
    let concat = Op::Concat {
        xs: Default::default(),
        axis: 0,
    };
    assert!(eval_op(&concat, &ty, &[]).is_err());
}
