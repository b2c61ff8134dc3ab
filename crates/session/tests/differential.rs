//! Differential tests: random programs compiled for every x86-64 tier this machine supports,
//! run on buffers that end at a guard page, compared with the reference interpreter.
//!
//! Comparison rules, written down:
//! - With float-sum reassociation off (`differential_*`), every output is bit-exact for every
//!   dtype, except that any NaN equals any NaN (op.rs leaves NaN payloads unspecified). That
//!   holds because kernels then evaluate in the interpreter's order and approximated math
//!   (exp, log, tanh, sigmoid, erf, sin, cos, pow, float rem) calls the runtime's import
//!   table, which uses the interpreter's own functions: the ULP bound of every op is 0.
//! - With reassociation on (the default; `reassociated_sums_*`), a float sum of `n` terms may
//!   differ from the row-major sum by at most `2·n·ε·Σ|terms|` (ε the dtype's epsilon); those
//!   tests check sums directly, since a later op (a compare, say) can turn any rounding
//!   difference into an arbitrary one.
//!
//! A failing case prints the program in the text format, ready to paste as a regression test.

use accy_executable::GuardedBuffer;
use accy_ir::interp::eval;
use accy_ir::{gen, text, ParamKind, Program, Tensor, TensorData};
use accy_session::{Scratch, Session, SessionOptions, Tier, Weights};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

fn same(expected: &TensorData, actual: &[u8]) -> bool {
    let Some(actual) = TensorData::from_le_bytes(expected.dtype(), actual) else {
        return false;
    };
    match (expected, &actual) {
        (TensorData::F32(a), TensorData::F32(b)) => a
            .iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())),
        (TensorData::F64(a), TensorData::F64(b)) => a
            .iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())),
        _ => *expected == actual,
    }
}

/// Where a test buffer sits: its last byte against the trailing guard page, or its first byte
/// right after the leading one (page-aligned start). Every case runs with both, so an access
/// one element past either end faults.
#[derive(Clone, Copy, Debug)]
enum Placement {
    EndAtGuard,
    StartAtGuard,
}

fn buffer(len: usize, align: usize, placement: Placement) -> GuardedBuffer {
    let align = match placement {
        Placement::EndAtGuard => align,
        Placement::StartAtGuard => 4096,
    };
    GuardedBuffer::with_alignment(len, align, 0).unwrap()
}

fn guarded(bytes: &[u8], align: usize, placement: Placement) -> GuardedBuffer {
    let mut g = buffer(bytes.len(), align, placement);
    g.as_mut_slice().copy_from_slice(bytes);
    g
}

fn check(session: &Session, program: &Program, args: &[Tensor]) -> Result<(), TestCaseError> {
    let expected = eval(program, args).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let weights: Vec<(String, Vec<u8>)> = program
        .params
        .iter()
        .zip(args)
        .filter(|(p, _)| p.kind == ParamKind::Weight)
        .map(|(p, a)| (p.name.clone(), a.data().to_le_bytes()))
        .collect();
    let weight_refs: Vec<(&str, &[u8])> = weights
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let weights = Weights::new(&weight_refs).unwrap();
    let listing = text::print(program);
    let h = session
        .compile_program_with_weights(program, &weights)
        .map_err(|e| TestCaseError::fail(format!("compile failed: {e}\n{listing}")))?;
    let outcome = [Placement::EndAtGuard, Placement::StartAtGuard]
        .into_iter()
        .try_for_each(|placement| {
            let inputs: Vec<GuardedBuffer> = program
                .params
                .iter()
                .zip(args)
                .filter(|(p, _)| p.kind == ParamKind::Input)
                .map(|(p, a)| {
                    let align = p.ty.dtype.alignment() as usize;
                    guarded(&a.data().to_le_bytes(), align, placement)
                })
                .collect();
            let mut outputs: Vec<GuardedBuffer> = session
                .outputs(h)
                .unwrap()
                .iter()
                .map(|d| {
                    // Poison, not zeros: an output element the code never writes is caught
                    // even where the expected value is 0 or false.
                    let mut b = buffer(d.byte_size, d.alignment, placement);
                    b.as_mut_slice().fill(0xA5);
                    b
                })
                .collect();
            let input_refs: Vec<&[u8]> = inputs.iter().map(|g| g.as_slice()).collect();
            let mut output_refs: Vec<&mut [u8]> =
                outputs.iter_mut().map(|g| g.as_mut_slice()).collect();
            session
                .invoke(h, &mut Scratch::new(), &input_refs, &mut output_refs)
                .map_err(|e| TestCaseError::fail(format!("invoke failed: {e}\n{listing}")))?;
            for (i, (want, got)) in expected.iter().zip(&outputs).enumerate() {
                prop_assert!(
                    same(want.data(), got.as_slice()),
                    "output {i} differs on {} ({placement:?})\nexpected {:?}\ngot bytes {:?}\nprogram:\n{listing}",
                    session.target_name(),
                    want.data(),
                    got.as_slice()
                );
            }
            Ok(())
        });
    session.release(h).unwrap();
    outcome
}

/// A session with `options`, or `None` (saying so in the log) when this CPU lacks the tier
/// the test expects, so the test visibly runs nothing.
fn session_for(options: SessionOptions, expected_name: &str) -> Option<Session> {
    let session = Session::with_options(options).unwrap();
    if session.target_name() == expected_name {
        return Some(session);
    }
    #[allow(clippy::print_stderr, reason = "tell the log which tier was skipped")]
    {
        eprintln!(
            "skipping {expected_name}: this CPU runs {}",
            session.target_name()
        );
    }
    None
}

fn run_tier(tier: Tier, expected_name: &str) {
    let options = SessionOptions::default()
        .with_max_tier(tier)
        .with_reassociate_float_sums(false);
    let Some(session) = session_for(options, expected_name) else {
        return;
    };
    let cases = std::env::var("ACCY_DIFF_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let mut runner = TestRunner::new(Config {
        cases,
        ..Config::default()
    });
    let result = runner.run(&gen::arb_program_and_args(), |(program, args)| {
        check(&session, &program, &args)
    });
    // The reason already holds the failing program as text; skip proptest's Debug dump.
    match result {
        Ok(()) => {}
        Err(proptest::test_runner::TestError::Fail(reason, _)) => panic!("{reason}"),
        Err(other) => panic!("{other}"),
    }
}

#[test]
fn differential_sse2() {
    run_tier(Tier::Baseline, "x64-sse2");
}

#[test]
fn differential_avx2() {
    run_tier(Tier::Avx2, "x64-avx2");
}

#[test]
fn differential_avx512() {
    run_tier(Tier::Avx512, "x64-avx512");
}

/// Float sums with reassociation on: `reduce sum` over the inner axis of random finite data,
/// within `2·n·ε·Σ|terms|` of the interpreter's row-major sum.
fn reassociated_sums(tier: Tier, expected_name: &str) {
    let Some(session) = session_for(SessionOptions::default().with_max_tier(tier), expected_name)
    else {
        return;
    };
    let strategy = (1u64..6, 0u64..300).prop_flat_map(|(rows, n)| {
        (
            Just((rows, n)),
            proptest::collection::vec(-1e6f32..1e6, (rows * n) as usize),
        )
    });
    let mut runner = TestRunner::new(Config {
        cases: 64,
        ..Config::default()
    });
    runner
        .run(&strategy, |((rows, n), data)| {
            let mut b = accy_ir::Builder::new();
            let x = b
                .input("x", accy_ir::Type::new(accy_ir::DType::F32, &[rows, n]))
                .unwrap();
            let s = b.reduce(accy_ir::ReduceOp::Sum, x, &[1]).unwrap();
            b.output(s).unwrap();
            let program = b.finish().unwrap();
            let h = session
                .compile_program_with_weights(&program, &Weights::empty())
                .unwrap();
            let mut out = vec![0.0f32; rows as usize];
            session
                .invoke_typed(h, &mut Scratch::new(), &[&data], &mut [&mut out])
                .unwrap();
            session.release(h).unwrap();
            let expected = eval(&program, &[Tensor::f32s(&[rows, n], data.clone())]).unwrap();
            let TensorData::F32(want) = expected[0].data() else {
                unreachable!()
            };
            for r in 0..rows as usize {
                let terms = &data[r * n as usize..(r + 1) * n as usize];
                let abs: f64 = terms.iter().map(|v| f64::from(v.abs())).sum();
                let bound = 2.0 * n as f64 * f64::from(f32::EPSILON) * abs;
                let diff = (f64::from(out[r]) - f64::from(want[r])).abs();
                prop_assert!(
                    diff <= bound,
                    "row {r}: {} vs {} (bound {bound})",
                    out[r],
                    want[r]
                );
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn reassociated_sums_sse2() {
    reassociated_sums(Tier::Baseline, "x64-sse2");
}

#[test]
fn reassociated_sums_avx2() {
    reassociated_sums(Tier::Avx2, "x64-avx2");
}

#[test]
fn reassociated_sums_avx512() {
    reassociated_sums(Tier::Avx512, "x64-avx512");
}

/// Transposes large enough to be blocked, fused with a broadcast add, in 4- and 8-byte
/// elements, at 1 and 2 threads: on x64's AVX2 and AVX-512 tiers they read through tiles or
/// gathers (`accy-lower`'s `x64/tile.rs`). The whole compile → invoke path against the
/// interpreter, on guarded buffers.
fn large_transposes(tier: Tier, expected_name: &str) {
    for threads in [1, 2] {
        let options = SessionOptions::default()
            .with_max_tier(tier)
            .with_threads(threads);
        let Some(session) = session_for(options, expected_name) else {
            return;
        };
        // Tiles of 32-bit lanes (blocked 256-byte lines), of 64-bit lanes, of 32-bit lanes
        // in line × 8 blocks (96 is no multiple of 64), and gathers (no blocking).
        for (dtype, n, m) in [
            ("f32", 256u64, 128u64),
            ("f64", 128, 64),
            ("i32", 200, 96),
            ("f32", 130, 70),
        ] {
            let text = format!(
                "program {{\n  %x = input \"x\" : {dtype}[{n},{m}]\n  %b = input \"b\" : {dtype}[{n}]\n  \
                 %t = transpose %x, perm=[1,0] : {dtype}[{m},{n}]\n  \
                 %bb = broadcast %b, dims=[{m},{n}], axes=[1] : {dtype}[{m},{n}]\n  \
                 %y = add %t, %bb : {dtype}[{m},{n}]\n  output %y\n}}\n"
            );
            let program = text::parse(&text).unwrap();
            let value = |i: u64| ((i * 7919) % 1009) as i32 - 500;
            let (x, b) = match dtype {
                "f64" => (
                    Tensor::f64s(&[n, m], (0..n * m).map(|i| value(i) as f64 / 8.0).collect()),
                    Tensor::f64s(&[n], (0..n).map(|i| value(i + 3) as f64).collect()),
                ),
                "i32" => (
                    Tensor::i32s(&[n, m], (0..n * m).map(value).collect()),
                    Tensor::i32s(&[n], (0..n).map(|i| value(i + 3)).collect()),
                ),
                _ => (
                    Tensor::f32s(&[n, m], (0..n * m).map(|i| value(i) as f32 / 8.0).collect()),
                    Tensor::f32s(&[n], (0..n).map(|i| value(i + 3) as f32).collect()),
                ),
            };
            check(&session, &program, &[x, b]).unwrap_or_else(|e| panic!("{threads} threads: {e}"));
        }
    }
}

#[test]
fn large_transposes_sse2() {
    large_transposes(Tier::Baseline, "x64-sse2");
}

#[test]
fn large_transposes_avx2() {
    large_transposes(Tier::Avx2, "x64-avx2");
}

#[test]
fn large_transposes_avx512() {
    large_transposes(Tier::Avx512, "x64-avx512");
}

/// `pow` in a product's epilogue, default mode: `(a · w)^c` for the constant exponents with
/// their own expansion (2, 3, 0.5) and one through the general f32 expansion (2.5), fused
/// into the contraction and run natively. Compared with the interpreter's product raised by
/// the platform's `pow`: the product may differ by its reassociation bound, which the power
/// scales by `c`, plus the expansion's 2 ULP.
fn pow_epilogues(tier: Tier, expected_name: &str) {
    let Some(session) = session_for(SessionOptions::default().with_max_tier(tier), expected_name)
    else {
        return;
    };
    let (m, k, n) = (5u64, 9u64, 7u64);
    // Positive operands, so every power is finite and defined.
    let a: Vec<f32> = (0..m * k).map(|i| 0.25 + (i % 7) as f32 * 0.125).collect();
    let w: Vec<f32> = (0..k * n).map(|i| 0.5 + (i % 5) as f32 * 0.0625).collect();
    for c in [2.0f32, 3.0, 0.5, 2.5] {
        let source = format!(
            "program {{
              %a = input \"a\" : f32[{m},{k}]
              %w = input \"w\" : f32[{k},{n}]
              %d = dot %a, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[{m},{n}]
              %c = constant {c:?} : f32[]
              %cb = broadcast %c, dims=[{m},{n}], axes=[] : f32[{m},{n}]
              %y = pow %d, %cb : f32[{m},{n}]
              output %y
            }}"
        );
        let program = text::parse(&source).unwrap();
        let h = session
            .compile_program_with_weights(&program, &Weights::empty())
            .unwrap();
        let mut out = vec![0.0f32; (m * n) as usize];
        session
            .invoke_typed(h, &mut Scratch::new(), &[&a, &w], &mut [&mut out])
            .unwrap();
        session.release(h).unwrap();
        for i in 0..m as usize {
            for j in 0..n as usize {
                let terms: Vec<f64> = (0..k as usize)
                    .map(|l| f64::from(a[i * k as usize + l]) * f64::from(w[l * n as usize + j]))
                    .collect();
                let exact: f64 = terms.iter().sum();
                let want = exact.powf(f64::from(c));
                let sum_bound = 2.0 * k as f64 * f64::from(f32::EPSILON);
                let bound = want * (f64::from(c) * sum_bound + 3.0 * f64::from(f32::EPSILON));
                let got = f64::from(out[i * n as usize + j]);
                assert!(
                    (got - want).abs() <= bound,
                    "pow by {c} at ({i}, {j}): {got} vs {want} (bound {bound})"
                );
            }
        }
    }
}

#[test]
fn pow_epilogues_avx2() {
    pow_epilogues(Tier::Avx2, "x64-avx2");
}

#[test]
fn pow_epilogues_avx512() {
    pow_epilogues(Tier::Avx512, "x64-avx512");
}
