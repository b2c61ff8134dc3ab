//! `accy-ulp`: the accuracy table of `cargo xtask ulp` (see the crate doc and
//! `docs/accuracy.md`).
//!
//! `accy-ulp [--quick] [--threads N] [--samples N] [NAME...]`: every f32 input of each unary
//! f32 function (`--quick`: 2^24 of them, spread over all), `--samples` (default 10^7) of
//! `pow` f32 and of every f64 function; prints one Markdown table row per measurement and
//! exits 1 if any exceeds its bound.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on the terminal"
)]

use std::process::ExitCode;

use accy_accuracy::mpfr::Mpfr;
use accy_accuracy::sweep::{exhaustive32, sampled, Report};
use accy_accuracy::{Function, FUNCTIONS};
use accy_ir::DType;

fn row(r: &Report, bound: u64) -> String {
    let ulps = if r.max_ulps == u64::MAX {
        "NaN mismatch".to_owned()
    } else {
        r.max_ulps.to_string()
    };
    let how = if r.exhaustive {
        "exhaustive".to_owned()
    } else {
        format!("{} inputs", r.count)
    };
    let (a, b, got, want) = r.worst;
    let at = if r.max_ulps == 0 {
        "-".to_owned()
    } else if r.name == "pow" {
        format!("pow({a:e}, {b:e}) = {got:e}, not {want:e}")
    } else {
        format!("{}({a:e}) = {got:e}, not {want:e}", r.name)
    };
    let verdict = if r.max_ulps <= bound { "ok" } else { "OVER" };
    let (ulps, how) = if r.beyond.is_some() {
        (format!("{ulps} (\\|x\\| ≤ 1e4)"), how)
    } else {
        (ulps, how)
    };
    format!(
        "| {} | {} | {ulps} | {bound} | {verdict} | {:.3}% | {how} | {} | {:.1} s | {at} |",
        r.name,
        r.dtype,
        100.0 * r.inexact as f64 / r.count.max(1) as f64,
        r.target,
        r.time.as_secs_f64()
    )
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut quick, mut threads, mut samples) = (false, 0usize, 10_000_000u64);
    let mut names = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            "--samples" => samples = args.next().and_then(|v| v.parse().ok()).unwrap_or(samples),
            "-h" | "--help" => {
                println!("usage: accy-ulp [--quick] [--threads N] [--samples N] [NAME...]");
                return ExitCode::SUCCESS;
            }
            name => names.push(name.to_owned()),
        }
    }
    if threads == 0 {
        threads = std::thread::available_parallelism().map_or(1, usize::from);
    }
    let chosen: Vec<&Function> = FUNCTIONS
        .iter()
        .filter(|f| names.is_empty() || names.iter().any(|n| n == f.name))
        .collect();
    let mpfr = match Mpfr::load() {
        Ok(m) => Some(m),
        Err(e) => {
            eprintln!("accy-ulp: {e}; f64 rows are skipped");
            None
        }
    };
    println!(
        "| function | dtype | max ULP | bound | | inexact | inputs | target | time | worst case |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut ok = true;
    for f in chosen {
        let mut reports = Vec::new();
        if f.is_binary() {
            reports.push(sampled(f, DType::F32, samples, 1, threads, None));
        } else {
            let limit = if quick { 1 << 24 } else { 1 << 32 };
            reports.push(exhaustive32(f, threads, limit));
        }
        if let Some(m) = &mpfr {
            reports.push(sampled(f, DType::F64, samples, 2, threads, Some(m)));
        }
        for r in reports {
            match r {
                Ok(r) => {
                    ok &= r.max_ulps <= f.bound;
                    println!("{}", row(&r, f.bound));
                    if let Some((max, (a, _, got, want), count)) = r.beyond {
                        let ulps = if max == u64::MAX {
                            "NaN mismatch".to_owned()
                        } else {
                            max.to_string()
                        };
                        println!(
                            "| {} beyond \\|x\\| > {:e} | {} | {ulps} | - | | | {count} inputs | | | {}({a:e}) = {got:e}, not {want:e} |",
                            r.name, f.within, r.dtype, r.name
                        );
                    }
                }
                Err(e) => {
                    ok = false;
                    println!("| {} | | error: {e} | | | | | | | |", f.name);
                }
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
