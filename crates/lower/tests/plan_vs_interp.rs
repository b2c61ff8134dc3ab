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

/// [`check`] of the program `source` with default options on deterministic generated args.
fn check_on_generated_args(source: &str) {
    let program = text::parse(source).unwrap();
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    runner
        .run(&accy_ir::gen::arb_args(&program), |args| {
            check(&program, &args, &Options::default())
        })
        .unwrap();
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

    /// Row-blocked planning (`Options::row_blocks`, off by default) with caches so small that
    /// every row-local run of instructions with a reduction is planned a block of rows at a
    /// time (and every dot is blocked for them).
    #[test]
    fn row_blocked_plan_matches_interpreter((program, args) in arb_program_and_args()) {
        let options = Options::default()
            .with_row_blocks(true)
            .with_caches(accy_artifact::Blocking {
                l1d: 64,
                l2: 128,
                llc: 0,
                ..Default::default()
            });
        check(&program, &args, &options)?;
    }
}

/// Caches so small that consecutive passes over the same rows of anything but a tiny tensor
/// are chained (`plan/chain.rs`); the reference executor runs each chain one link after the
/// other and workgroup by workgroup in both orders, and refuses a difference. Fails if too
/// few of the programs formed a chain to say anything.
#[test]
fn chained_plan_matches_interpreter() {
    use std::cell::Cell;
    let options = Options::default().with_caches(accy_artifact::Blocking {
        l1d: 64,
        l2: 256,
        llc: 128,
        ..Default::default()
    });
    let chained = Cell::new(0u32);
    let cases = 256;
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let generated = arb_program_and_args_with(GenConfig {
        max_instructions: 16,
        max_elements: 4096,
        ..GenConfig::default()
    });
    let result = runner.run(&generated, |(program, args)| {
        if let Ok(lowered) = plan_with(&program, &options) {
            let chain = lowered
                .commands
                .iter()
                .any(|c| matches!(c, accy_artifact::Command::Dispatch { chained: true, .. }));
            chained.set(chained.get() + u32::from(chain));
        }
        check(&program, &args, &options)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Some programs in every run have passes to chain (more than one in twenty).
    assert!(
        chained.get() >= 3,
        "only {} of {cases} programs chained",
        chained.get()
    );
}

#[test]
fn empty_program_plans_to_nothing() {
    let lowered = plan(&Program::default()).unwrap();
    assert!(lowered.kernels.is_empty() && lowered.commands.is_empty());
}

/// Products whose readers become their epilogues (bias and clamp, a transposed store, a
/// product read twice by one expression, a second operand laid out column-major) compute
/// what the interpreter computes.
#[test]
fn fused_epilogues_match_the_interpreter() {
    let programs = [
        "program {
          %x = input \"x\" : f32[5,9]
          %w = input \"w\" : f32[9,7]
          %b = input \"b\" : f32[7]
          %y = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[5,7]
          %bb = broadcast %b, dims=[5,7], axes=[1] : f32[5,7]
          %z = add %y, %bb : f32[5,7]
          %zero = constant 0.0 : f32[]
          %zb = broadcast %zero, dims=[5,7], axes=[] : f32[5,7]
          %r = max %z, %zb : f32[5,7]
          output %r
        }",
        "program {
          %x = input \"x\" : f64[2,3,4]
          %w = input \"w\" : f64[2,4,6]
          %y = dot %x, %w, lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1] : f64[2,3,6]
          %s = mul %y, %y : f64[2,3,6]
          %e = exp %s : f64[2,3,6]
          %t = transpose %e, perm=[2,0,1] : f64[6,2,3]
          output %t
        }",
        "program {
          %x = input \"x\" : f32[4,8]
          %w = input \"w\" : f32[8,6]
          %r = input \"r\" : f32[6,4]
          %y = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[4,6]
          %rt = transpose %r, perm=[1,0] : f32[4,6]
          %z = sub %y, %rt : f32[4,6]
          %n = neg %z : f32[4,6]
          output %n
        }",
    ];
    for source in programs {
        let program = text::parse(source).unwrap();
        let lowered = plan(&program).unwrap();
        // One contraction, fused; any other kernel packs an operand.
        let contractions: Vec<_> = lowered
            .kernels
            .iter()
            .filter_map(accy_lower::kernel::Kernel::as_contraction)
            .collect();
        assert_eq!(contractions.len(), 1, "{source}");
        assert!(!contractions[0].plain(), "{source}");
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        runner
            .run(&accy_ir::gen::arb_args(&program), |args| {
                check(&program, &args, &Options::default())
            })
            .unwrap();
    }
}

/// A product listed twice by one concat (found by `plan_matches_interpreter`), directly, as
/// a view or through an expression: the concat copies each operand with its own kernel, so
/// the product must be stored, not fused into the first copy (the second copy then read a
/// buffer nothing had written).
#[test]
fn a_dot_concatenated_with_itself_is_stored_for_both_copies() {
    let dot = "%x = input \"x\" : f64[13,3,2,3]
          %c = input \"c\" : f64[2,13,5]
          %x2 = input \"x2\" : f64[1,2,3,5]
          %d = dot %x, %c, lhs_batch=[2], rhs_batch=[0], lhs_contract=[0], rhs_contract=[1] : f64[2,3,3,5]";
    for tail in [
        "%e = concat %d, %d, axis=0 : f64[4,3,3,5]",
        "%n = neg %d : f64[2,3,3,5]
          %e = concat %n, %n, axis=0 : f64[4,3,3,5]",
        "%t = transpose %d, perm=[1,0,2,3] : f64[3,2,3,5]
          %e = concat %t, %x2, %t, axis=0 : f64[7,2,3,5]",
    ] {
        let source = format!("program {{\n {dot}\n {tail}\n output %e\n }}");
        check_on_generated_args(&source);
    }
}

/// A product read as both operands of the next dot (directly, or through a view): each
/// operand is grouped by a kernel of its own (a copy, a packing, or a read in place), so the
/// product must be stored, not fused into the first (the second then read a buffer nothing had
/// written; a proptest case found this).
#[test]
fn a_product_multiplied_by_itself_is_stored_for_both_operands() {
    let product = "%a = input \"a\" : f32[1,5,2]
          %c = input \"c\" : f32[5,1,5]
          %p = dot %c, %a, lhs_batch=[2,1], rhs_batch=[1,0], lhs_contract=[], rhs_contract=[] : f32[5,1,5,2]";
    for tail in [
        "%q = dot %p, %p, lhs_batch=[2], rhs_batch=[2], lhs_contract=[3,1,0], rhs_contract=[3,1,0] : f32[5]",
        "%t = transpose %p, perm=[1,0,2,3] : f32[1,5,5,2]
          %q = dot %t, %t, lhs_batch=[2], rhs_batch=[2], lhs_contract=[3,0,1], rhs_contract=[3,0,1] : f32[5]",
        "%q = dot %p, %p, lhs_batch=[2,1], rhs_batch=[2,1], lhs_contract=[0], rhs_contract=[0] : f32[5,1,2,2]",
    ] {
        let source = format!("program {{\n {product}\n {tail}\n output %q\n }}");
        check_on_generated_args(&source);
    }
}
