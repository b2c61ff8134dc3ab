//! The interpreter on random programs: every verified program with arguments of the right
//! types evaluates to outputs of the declared types, and broken programs or arguments give
//! errors, never panics.

#![cfg(feature = "gen")]

use accy_ir::gen::{self, GenConfig};
use accy_ir::interp::{self, EvalError};
use accy_ir::{DType, Op, Program, Tensor, Type, UnaryOp, ValueId};
use proptest::prelude::*;

/// Checks that `outputs` has one tensor per program output, of that output's declared type.
fn check_output_types(program: &Program, outputs: &[Tensor]) -> Result<(), TestCaseError> {
    prop_assert_eq!(outputs.len(), program.outputs.len());
    for (out, tensor) in program.outputs.iter().zip(outputs) {
        let declared = program.value_type(out.value);
        prop_assert_eq!(Some(&tensor.ty()), declared);
    }
    Ok(())
}

/// Evaluates and checks a valid program, twice: the oracle must be deterministic and must
/// leave its arguments alone.
fn check_valid(program: &Program, args: &[Tensor]) -> Result<(), TestCaseError> {
    let before = args.to_vec();
    let outputs = interp::eval(program, args)
        .map_err(|e| TestCaseError::fail(format!("{e}\nprogram: {program:#?}")))?;
    check_output_types(program, &outputs)?;
    prop_assert_eq!(args, before.as_slice());
    let again = interp::eval(program, args).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(outputs, again);
    Ok(())
}

proptest! {
    #[test]
    fn valid_programs_evaluate_to_their_declared_types(
        (program, args) in gen::arb_program_and_args()
    ) {
        check_valid(&program, &args)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn larger_programs_of_every_rank_evaluate(
        (program, args) in gen::arb_program_and_args_with(GenConfig {
            max_params: 6,
            max_instructions: 32,
            max_rank: 8,
            max_dim: 5,
            max_elements: 4096,
            ..GenConfig::default()
        })
    ) {
        check_valid(&program, &args)?;
    }
}

/// One way to break a valid program or its arguments.
#[derive(Clone, Debug)]
enum Damage {
    /// Instruction `k` (mod count) declares another dtype.
    DeclaredDtype(usize, DType),
    /// Instruction `k` (mod count) declares other dims.
    DeclaredDims(usize, Vec<u64>),
    /// Instruction `k` (mod count) reads value `v` with `neg`.
    Operand(usize, u32),
    /// An output names value `v`.
    Output(u32),
    /// Argument `i` (mod count) is dropped.
    DropArgument(usize),
    /// Argument `i` (mod count) is replaced by a tensor of another type.
    ArgumentType(usize, DType, Vec<u64>),
}

fn arb_damage() -> impl Strategy<Value = Damage> {
    let dtype = prop::sample::select(DType::ALL.to_vec());
    let dims = prop::collection::vec(0u64..4, 0..3);
    prop_oneof![
        (any::<usize>(), dtype.clone()).prop_map(|(k, d)| Damage::DeclaredDtype(k, d)),
        (any::<usize>(), dims.clone()).prop_map(|(k, d)| Damage::DeclaredDims(k, d)),
        (any::<usize>(), 0u32..64).prop_map(|(k, v)| Damage::Operand(k, v)),
        (0u32..64).prop_map(Damage::Output),
        any::<usize>().prop_map(Damage::DropArgument),
        (any::<usize>(), dtype, dims).prop_map(|(i, d, s)| Damage::ArgumentType(i, d, s)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn damaged_programs_and_arguments_give_errors_not_panics(
        (program, args) in gen::arb_program_and_args(),
        damage in arb_damage(),
    ) {
        let (mut program, mut args) = (program, args);
        let n = program.instructions.len();
        match damage.clone() {
            Damage::DeclaredDtype(k, d) if n > 0 => program.instructions[k % n].ty.dtype = d,
            Damage::DeclaredDims(k, d) if n > 0 => {
                program.instructions[k % n].ty.dims = d.into_iter().collect()
            }
            Damage::Operand(k, v) if n > 0 => {
                let ty = program.instructions[k % n].ty.clone();
                program.instructions[k % n].op = Op::Unary { op: UnaryOp::Neg, x: ValueId(v) };
                program.instructions[k % n].ty = ty;
            }
            Damage::Output(v) => program.outputs[0].value = ValueId(v),
            Damage::DropArgument(i) if !args.is_empty() => {
                let i = i % args.len();
                args.remove(i);
            }
            Damage::ArgumentType(i, d, dims) if !args.is_empty() => {
                let i = i % args.len();
                args[i] = Tensor::zeros(&Type::new(d, &dims)).expect("small tensor");
            }
            _ => {}
        }
        match interp::eval(&program, &args) {
            Ok(outputs) => {
                // Only damage that happened to change nothing (or to stay valid) may succeed.
                prop_assert!(accy_ir::verify(&program).is_ok());
                check_output_types(&program, &outputs)?;
            }
            Err(EvalError::Invalid(_)) => prop_assert!(accy_ir::verify(&program).is_err()),
            Err(EvalError::ArgumentCount { expected, actual }) => {
                prop_assert_eq!(expected, program.params.len());
                prop_assert_eq!(actual, args.len());
            }
            Err(EvalError::ArgumentType { index, expected, actual }) => {
                prop_assert_eq!(&expected, &program.params[index].ty);
                prop_assert_eq!(&actual, &args[index].ty());
                prop_assert!(expected != actual);
            }
            Err(e) => prop_assert!(false, "unexpected error {e} after {damage:?}"),
        }
    }
}
