//! The accuracy bounds on a fixed sample, on the code this machine generates in default mode
//! (the vectorised expansions of `accy-lower`'s math module): a regression past any bound
//! fails here. `cargo xtask ulp` measures the same functions exhaustively (f32) or on 10^7
//! samples (f64); these tests take a slice of that:
//! - f32: 2^20 bit patterns spread evenly over all 2^32 (every binade, both signs, NaNs,
//!   infinities, subnormals) plus `pow` on 2^16 samples, against the f64 references;
//! - f64: 512 samples per function whose MPFR references are checked in
//!   (`tests/golden/f64.bin`, rewritten with `ACCY_BLESS=1` where `libmpfr.so.6` loads).
//!
//! Exact mode is checked too: there each function is the interpreter's own, bit for bit.

use accy_accuracy::mpfr::Mpfr;
use accy_accuracy::runner::Runner;
use accy_accuracy::sweep::{exhaustive32, sampled};
use accy_accuracy::ulp::ulps64;
use accy_accuracy::FUNCTIONS;
use accy_ir::DType;
use accy_session::Scratch;

fn golden_path() -> String {
    format!("{}/tests/golden/f64.bin", env!("CARGO_MANIFEST_DIR"))
}

/// Samples per f64 function in the golden file.
const GOLDEN: usize = 512;

#[test]
fn f32_functions_meet_their_bounds_on_a_spread_of_every_binade() {
    for f in FUNCTIONS {
        let report = if f.is_binary() {
            sampled(f, DType::F32, 1 << 16, 7, 2, None)
        } else {
            exhaustive32(f, 2, 1 << 20)
        }
        .unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert!(
            report.max_ulps <= f.bound,
            "{} f32 on {}: {} ULP at {:?} (bound {})",
            f.name,
            report.target,
            report.max_ulps,
            report.worst,
            f.bound
        );
    }
}

/// The golden f64 samples: per function, `GOLDEN` triples `(a, b, reference)`.
fn read_golden() -> Vec<(String, Vec<[f64; 3]>)> {
    let bytes = std::fs::read(golden_path()).expect("tests/golden/f64.bin (ACCY_BLESS=1)");
    let values: Vec<f64> = bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    let per = GOLDEN * 3;
    assert_eq!(values.len(), FUNCTIONS.len() * per, "golden file size");
    FUNCTIONS
        .iter()
        .zip(values.chunks_exact(per))
        .map(|(f, v)| {
            let triples = v.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect();
            (f.name.to_owned(), triples)
        })
        .collect()
}

/// Rewrites the golden file from MPFR (`ACCY_BLESS=1`).
fn bless(mpfr: &Mpfr) {
    let mut out = Vec::new();
    for f in FUNCTIONS {
        let mut state = 0x5eed_0000 + f.name.len() as u64;
        for _ in 0..GOLDEN {
            let mut next = || {
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^ (z >> 31)
            };
            let (a, b) = (f.sample64)(next(), next());
            let want = f.reference64(mpfr, a, b);
            for v in [a, b, want] {
                out.extend(v.to_le_bytes());
            }
        }
    }
    std::fs::write(golden_path(), out).expect("write the golden file");
}

#[test]
fn f64_functions_meet_their_bounds_on_the_golden_sample() {
    if std::env::var_os("ACCY_BLESS").is_some() {
        bless(&Mpfr::load().expect("blessing needs MPFR"));
    }
    for (f, (name, triples)) in FUNCTIONS.iter().zip(read_golden()) {
        assert_eq!(f.name, name);
        let runner = Runner::new(f, DType::F64, GOLDEN, false).expect("compiles");
        let a: Vec<f64> = triples.iter().map(|t| t[0]).collect();
        let b: Vec<f64> = triples.iter().map(|t| t[1]).collect();
        let mut out = vec![0f64; GOLDEN];
        runner
            .run(&mut Scratch::new(), &a, &b, &mut out)
            .expect("runs");
        for (t, got) in triples.iter().zip(&out) {
            if t[0].abs() > f.within {
                continue;
            }
            let d = ulps64(*got, t[2]);
            assert!(
                d <= f.bound,
                "{}({:e}, {:e}) f64 on {}: {got:e}, reference {:e}: {d} ULP (bound {})",
                f.name,
                t[0],
                t[1],
                runner.target(),
                t[2],
                f.bound
            );
        }
    }
}

#[test]
fn exact_mode_calls_the_interpreter_functions() {
    for f in FUNCTIONS {
        let n = 4096;
        let a: Vec<f32> = (0..n).map(|i| (i as f32 - 2048.0) * 0.0731).collect();
        let b: Vec<f32> = (0..n).map(|i| (i % 37) as f32 * 0.25 - 3.0).collect();
        let runner = Runner::new(f, DType::F32, n, true).expect("compiles");
        let mut out = vec![0f32; n];
        runner
            .run(&mut Scratch::new(), &a, &b, &mut out)
            .expect("runs");
        for i in 0..n {
            let want = match f.name {
                "exp" => accy_math::Float::exp(a[i]),
                "log" => accy_math::Float::log(a[i]),
                "tanh" => accy_math::Float::tanh(a[i]),
                "sigmoid" => accy_math::Float::sigmoid(a[i]),
                "erf" => accy_math::Float::erf(a[i]),
                "sin" => accy_math::Float::sin(a[i]),
                "cos" => accy_math::Float::cos(a[i]),
                "pow" => accy_math::Float::pow(a[i], b[i]),
                "sqrt" => a[i].sqrt(),
                _ => 1.0 / a[i].sqrt(),
            };
            assert!(
                out[i].to_bits() == want.to_bits() || (out[i].is_nan() && want.is_nan()),
                "{}({}) exact: {} vs {}",
                f.name,
                a[i],
                out[i],
                want
            );
        }
    }
}

/// The special values every expansion must get exactly right, sign of zero included.
#[test]
fn special_values_are_exact() {
    let inf = f64::INFINITY;
    let cases: &[(&str, f64, f64)] = &[
        ("exp", -inf, 0.0),
        ("exp", inf, inf),
        ("exp", 0.0, 1.0),
        ("exp", -0.0, 1.0),
        ("exp", 1000.0, inf),
        ("exp", -1000.0, 0.0),
        ("log", 0.0, -inf),
        ("log", -0.0, -inf),
        ("log", 1.0, 0.0),
        ("log", inf, inf),
        ("tanh", inf, 1.0),
        ("tanh", -inf, -1.0),
        ("tanh", -0.0, -0.0),
        ("tanh", 0.0, 0.0),
        ("sigmoid", inf, 1.0),
        ("sigmoid", -inf, 0.0),
        ("sigmoid", 0.0, 0.5),
        ("erf", inf, 1.0),
        ("erf", -inf, -1.0),
        ("erf", -0.0, -0.0),
        ("sin", -0.0, -0.0),
        ("sin", 0.0, 0.0),
        ("cos", 0.0, 1.0),
        ("sqrt", -0.0, -0.0),
    ];
    let nan_cases: &[(&str, f64)] = &[
        ("exp", f64::NAN),
        ("log", -1.0),
        ("log", f64::NAN),
        ("log", -inf),
        ("tanh", f64::NAN),
        ("sigmoid", f64::NAN),
        ("erf", f64::NAN),
        ("sin", inf),
        ("cos", -inf),
        ("sin", f64::NAN),
    ];
    for dtype in [DType::F32, DType::F64] {
        for f in FUNCTIONS.iter().filter(|f| !f.is_binary()) {
            let mine: Vec<(f64, Option<f64>)> = cases
                .iter()
                .filter(|c| c.0 == f.name)
                .map(|c| (c.1, Some(c.2)))
                .chain(
                    nan_cases
                        .iter()
                        .filter(|c| c.0 == f.name)
                        .map(|c| (c.1, None)),
                )
                .collect();
            if mine.is_empty() {
                continue;
            }
            let runner = Runner::new(f, dtype, mine.len(), false).expect("compiles");
            let a: Vec<f64> = mine.iter().map(|c| c.0).collect();
            let got: Vec<f64> = if dtype == DType::F32 {
                let a32: Vec<f32> = a.iter().map(|&v| v as f32).collect();
                let mut out = vec![0f32; a.len()];
                runner
                    .run(&mut Scratch::new(), &a32, &a32, &mut out)
                    .expect("runs");
                out.into_iter().map(f64::from).collect()
            } else {
                let mut out = vec![0f64; a.len()];
                runner
                    .run(&mut Scratch::new(), &a, &a, &mut out)
                    .expect("runs");
                out
            };
            for ((x, want), got) in mine.iter().zip(got) {
                match want {
                    Some(w) => assert!(
                        got.to_bits() == w.to_bits(),
                        "{}({x}) {dtype}: {got:e}, expected {w:e}",
                        f.name
                    ),
                    None => assert!(
                        got.is_nan(),
                        "{}({x}) {dtype}: {got:e}, expected NaN",
                        f.name
                    ),
                }
            }
        }
    }
}
