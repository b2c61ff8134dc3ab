//! The differential suite for target aarch64: generated programs (`accy_ir::gen`) compiled
//! with [`A64Target`] (float reassociation off), their artifact's launch plan run with every
//! dispatch under emulation (guard pages around every binding region, ABI checked on every
//! call), compared with the reference interpreter `accy_ir::interp::eval`.
//!
//! Comparison rules, the same as the x86-64 suite's (`crates/session/tests/differential.rs`):
//! every output bit-exact for every dtype, except that any NaN equals any NaN; approximated
//! math calls the import table, which runs the interpreter's own functions, so the ULP bound
//! of every op is 0. A failing case prints the program in the text format.

mod common;

use accy_ir::interp::eval;
use accy_ir::{gen, text, Program, Tensor};
use accy_lower::aarch64::A64Target;
use accy_lower::testing::{run_artifact, same_results};
use accy_lower::{compile, Options, Target};
use common::EmulatorRunner;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn check(program: &Program, args: &[Tensor], runner: &EmulatorRunner) -> Result<(), TestCaseError> {
    let target = A64Target::new();
    let listing = text::print(program);
    let expected = eval(program, args).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let artifact = compile(
        program,
        &target,
        &Options::default().with_reassociate(false),
    )
    .map_err(|e| TestCaseError::fail(format!("compile failed: {e}\n{listing}")))?;
    if artifact.target != target.spec() {
        return Err(TestCaseError::fail(
            "artifact does not record the aarch64 target",
        ));
    }
    let actual = run_artifact(&artifact, program, args, runner)
        .map_err(|e| TestCaseError::fail(format!("run failed: {e}\n{listing}")))?;
    same_results(&expected, &actual)
        .map_err(|e| TestCaseError::fail(format!("aarch64: {e}\nprogram:\n{listing}")))
}

#[test]
fn differential_aarch64() {
    let cases = std::env::var("ACCY_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256u32);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let emulator = EmulatorRunner::default();
    let result = runner.run(&gen::arb_program_and_args(), |(program, args)| {
        check(&program, &args, &emulator)
    });
    // The reason already holds the failing program as text; skip proptest's Debug dump.
    match result {
        Ok(()) => {
            let dispatches = emulator.runs.load(std::sync::atomic::Ordering::Relaxed);
            assert!(
                dispatches >= cases as usize / 2,
                "only {dispatches} dispatches ran in {cases} programs"
            );
        }
        Err(proptest::test_runner::TestError::Fail(reason, _)) => panic!("{reason}"),
        Err(other) => panic!("{other}"),
    }
}

/// An aarch64 artifact records its arch and features, and the executable crate refuses to
/// load it on a host of another architecture with a clear error (this test runs on x86-64
/// hosts; on an aarch64 host it checks that the artifact loads).
#[test]
fn aarch64_artifact_is_refused_on_another_arch() {
    let mut b = accy_ir::Builder::new();
    let x = b
        .input("x", accy_ir::Type::new(accy_ir::DType::F32, &[4]))
        .expect("input");
    let y = b.unary(accy_ir::UnaryOp::Neg, x).expect("neg");
    b.output(y).expect("output");
    let program = b.finish().expect("program");
    let artifact = compile(&program, &A64Target::new(), &Options::default()).expect("compile");
    assert_eq!(artifact.target.arch, accy_artifact::Arch::Aarch64);
    assert!(artifact
        .target
        .features
        .contains(accy_artifact::CpuFeature::Neon));
    let cpu = accy_executable::CpuInfo::detect_with_max_tier(accy_executable::Tier::Native);
    // SAFETY: the artifact is exactly what `accy_lower::compile` produced for it, whose code
    // keeps the dispatch ABI; on a host of another architecture it is refused before any
    // code is mapped.
    let loaded = unsafe { accy_executable::load(&artifact, &cpu) };
    if cpu.arch() == Some(accy_artifact::Arch::Aarch64) {
        assert!(loaded.is_ok());
    } else {
        let err = loaded.expect_err("must be refused");
        assert!(
            matches!(err, accy_executable::LoadError::ArchMismatch { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("aarch64"), "{err}");
    }
}
