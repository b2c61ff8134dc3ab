//! The differential test of planning: for generated programs and arguments, running the
//! [`accy_lower::LoweredProgram`] with the reference kernel executor must give exactly the
//! reference interpreter's results (any NaN equals any NaN). The kernel description is
//! sequential and its nodes share the interpreter's scalar code, so no tolerance is needed:
//! any difference is a fusion or planning bug.

use accy_ir::gen::{arb_program_and_args, arb_program_and_args_with, GenConfig};
use accy_ir::{interp, text, Program, Tensor};
use accy_lower::testing::{run_lowered, same_results, validate_plan};
use accy_lower::{plan, plan_with, Options};
use proptest::prelude::*;

fn check(program: &Program, args: &[Tensor], options: &Options) -> Result<(), TestCaseError> {
    let expected = match interp::eval(program, args) {
        Ok(v) => v,
        Err(interp::EvalError::LimitExceeded { .. }) => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("interpreter: {e}"))),
    };
    let text = text::print(program);
    let lowered = plan_with(program, options)
        .map_err(|e| TestCaseError::fail(format!("plan failed: {e}\n{text}")))?;
    validate_plan(&lowered).map_err(|e| {
        TestCaseError::fail(format!(
            "artifact invalid: {e}\n{text}\n{:?}",
            lowered.commands
        ))
    })?;
    for k in &lowered.kernels {
        k.validate()
            .map_err(|e| TestCaseError::fail(format!("kernel invalid: {e}\n{text}")))?;
    }
    let actual = run_lowered(&lowered, program, args)
        .map_err(|e| TestCaseError::fail(format!("run failed: {e}\n{text}")))?;
    same_results(&expected, &actual).map_err(|e| {
        TestCaseError::fail(format!(
            "{e}\nprogram:\n{text}\nargs: {args:?}\nkernels: {:#?}\ncommands: {:?}",
            lowered.kernels, lowered.commands
        ))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn plan_matches_interpreter((program, args) in arb_program_and_args()) {
        check(&program, &args, &Options::default())?;
    }

    #[test]
    fn unfused_plan_matches_interpreter((program, args) in arb_program_and_args_with(GenConfig {
        max_instructions: 8,
        ..GenConfig::default()
    })) {
        check(&program, &args, &Options::default().with_fuse(false))?;
    }

    /// Longer programs of higher rank: exercises scratch reuse, packing of wide dots and the
    /// split of long chains.
    #[test]
    fn large_plan_matches_interpreter((program, args) in arb_program_and_args_with(GenConfig {
        max_instructions: 40,
        max_params: 6,
        max_rank: 8,
        max_dim: 4,
        max_elements: 2048,
        ..GenConfig::default()
    })) {
        check(&program, &args, &Options::default())?;
    }
}

#[test]
fn empty_program_plans_to_nothing() {
    let lowered = plan(&Program::default()).unwrap();
    assert!(lowered.kernels.is_empty() && lowered.commands.is_empty());
}
