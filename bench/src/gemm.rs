//! `cargo xtask bench gemm`: f32 matrix products through the whole session path.
//!
//! One table, measured in one run: GFLOPS of `C[m,n] = A[m,k] · B[k,n]` for 64³ … 2048³,
//! (16,64,64), (1,768,3072) and (128,768,3072) — as (m, k, n) — at 1 thread (pinned to CPU 0)
//! and at all threads, each beside the in-run references: the FMA peak of a generated FMA loop
//! (per core, times the threads), the `gemm` crate (sarah-ek) and the `matrixmultiply` crate
//! (single-threaded only: its thread count is fixed per process) on the same shapes and thread
//! counts, and for the GEMV shape the bandwidth of a copy of B. B is a weight of the program
//! (packed once, at load) unless `--input-b` makes it an input.

mod common;

use std::time::Duration;

use accy_executable::{CodeMemory, CpuInfo};
use accy_ir::{Builder, DType, Program, Type};
use accy_lower::x64::X64Tier;
use accy_session::{Session, SessionOptions};
use common::{all_cpus, human, median, median_cpu, pin_to, Prepared};

/// `dot` of a[m,k] and b[k,n]; `b` a weight unless `b_input`.
fn matmul(m: u64, k: u64, n: u64, b_input: bool) -> Program {
    let mut b = Builder::new();
    let x = b.input("a", Type::new(DType::F32, &[m, k])).unwrap();
    let w = if b_input {
        b.input("b", Type::new(DType::F32, &[k, n])).unwrap()
    } else {
        b.weight("b", Type::new(DType::F32, &[k, n])).unwrap()
    };
    let y = b.dot(x, w, (&[], &[]), (&[1], &[0])).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// The median time of `f`: the calling thread's CPU time for single-threaded work (the host
/// is shared, and time spent descheduled is not the code's), else wall time.
fn timed(threads: usize, budget: Duration, f: impl FnMut()) -> Duration {
    if threads == 1 {
        median_cpu(budget, f)
    } else {
        median(budget, f)
    }
}

/// The FMA peak of one core in GFLOPS, with the host's best FMA tier.
fn fma_peak(budget: Duration) -> Option<f64> {
    let cpu = CpuInfo::detect().ok()?;
    let tier = [X64Tier::Avx512, X64Tier::Avx2]
        .into_iter()
        .find(|t| t.host_features().is_subset(cpu.features()))?;
    let (code, flops) = accy_lower::testing::peak::fma_loop(tier)?;
    let memory = CodeMemory::from_code(&code).ok()?;
    let entry = memory.entry(0).ok()?;
    let iterations = 2_000_000u64;
    let t = median_cpu(budget, || {
        // SAFETY: the code is a complete function of this signature that only touches
        // vector registers, emitted for a tier this CPU has.
        unsafe { entry.call::<extern "C" fn(u64)>((iterations,)) }
    });
    Some((iterations * flops) as f64 / t.as_secs_f64() / 1e9)
}

/// GFLOPS of the `gemm` crate on (m, k, n) with `threads` threads.
fn gemm_crate(m: usize, k: usize, n: usize, threads: usize, budget: Duration) -> f64 {
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; k * n];
    let mut c = vec![0f32; m * n];
    let parallelism = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    let t = timed(threads, budget, || {
        // SAFETY: row-major a (m x k), b (k x n), c (m x n) with the strides given; the
        // buffers are exactly that large.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                c.as_mut_ptr(),
                1,
                n as isize,
                false,
                a.as_ptr(),
                1,
                k as isize,
                b.as_ptr(),
                1,
                n as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                parallelism,
            )
        }
    });
    2.0 * (m * n * k) as f64 / t.as_secs_f64() / 1e9
}

/// GFLOPS of the `matrixmultiply` crate on (m, k, n), one thread.
fn matrixmultiply_crate(m: usize, k: usize, n: usize, budget: Duration) -> f64 {
    let a = vec![0.5f32; m * k];
    let b = vec![0.25f32; k * n];
    let mut c = vec![0f32; m * n];
    let t = median_cpu(budget, || {
        // SAFETY: row-major a (m x k), b (k x n), c (m x n) with the strides given.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                a.as_ptr(),
                k as isize,
                1,
                b.as_ptr(),
                n as isize,
                1,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            )
        }
    });
    2.0 * (m * n * k) as f64 / t.as_secs_f64() / 1e9
}

/// GB/s of copying `bytes` bytes.
fn copy_bandwidth(bytes: usize, budget: Duration) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let t = median(budget, || dst.copy_from_slice(std::hint::black_box(&src)));
    2.0 * bytes as f64 / t.as_secs_f64() / 1e9
}

/// The best (largest) of each measurement over the rounds of one row.
#[derive(Default)]
struct Best {
    peak: f64,
    accy: f64,
    gemm: f64,
    mm: f64,
    copy: f64,
}

fn max(a: &mut f64, b: f64) {
    if b > *a || a.is_nan() {
        *a = b;
    }
}

#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its table, and its progress"
)]
fn main() {
    common::maybe_be_busy_neighbour();
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    // `--shape M,K,N`: that shape alone (for quick experiments).
    let only: Option<(u64, u64, u64)> = args
        .iter()
        .position(|a| a == "--shape")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| {
            let v: Vec<u64> = s.split(',').filter_map(|x| x.parse().ok()).collect();
            (v.len() == 3).then(|| (v[0], v[1], v[2]))
        });
    let b_input = args.iter().any(|a| a == "--input-b");
    let budget = Duration::from_millis(if quick { 100 } else { 300 });
    let rounds = if quick { 3 } else { 5 };
    let all = all_cpus().len();
    let shapes: Vec<(u64, u64, u64)> = match only {
        Some(shape) => vec![shape],
        None => vec![
            (64, 64, 64),
            (256, 256, 256),
            (512, 512, 512),
            (1024, 1024, 1024),
            (2048, 2048, 2048),
            (16, 64, 64),
            (1, 768, 3072),
            (128, 768, 3072),
        ],
    };
    println!(
        "gemm: f32 C = A·B, B a {}; {all} CPUs; each cell is the best of {rounds} rounds \
         (the host is shared: interference only slows a measurement down), each round a median \
         over ~{} ms of samples of >= 50 µs (a batch of calls when calls are shorter); 1-thread runs pinned to CPU 0 and timed by the thread's CPU time, others \
         by wall time; the FMA peak is a generated FMA loop's, per core, measured in every \
         round; compile is with the weights already packed, packing the rest of the first \
         compile",
        if b_input {
            "program input (packed per call)"
        } else {
            "weight (packed once, at load)"
        },
        budget.as_millis()
    );
    println!();
    println!(
        "| (m, k, n) | threads | accy GFLOPS | % of peak | gemm crate | accy / gemm | \
         matrixmultiply | accy / mm | per call | compile | packing | note |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|");
    for &(m, k, n) in &shapes {
        let flops = 2.0 * (m * n * k) as f64;
        let (mu, ku, nu) = (m as usize, k as usize, n as usize);
        for threads in [1, all] {
            if threads == all && all == 1 {
                continue;
            }
            pin_to(&all_cpus());
            let session = Session::with_options(SessionOptions::default().with_threads(threads))
                .expect("session");
            let mut p = Prepared::new(&session, &matmul(m, k, n, b_input));
            let mut best = Best::default();
            for _ in 0..rounds {
                if threads == 1 {
                    pin_to(&[0]);
                }
                max(&mut best.peak, fma_peak(budget).unwrap_or(f64::NAN));
                let t = timed(threads, budget, || p.invoke(&session));
                max(&mut best.accy, flops / t.as_secs_f64() / 1e9);
                max(&mut best.gemm, gemm_crate(mu, ku, nu, threads, budget));
                if threads == 1 {
                    max(&mut best.mm, matrixmultiply_crate(mu, ku, nu, budget));
                }
                if m == 1 {
                    max(&mut best.copy, copy_bandwidth(4 * ku * nu, budget));
                }
                pin_to(&all_cpus());
            }
            let per_call = Duration::from_secs_f64(flops / best.accy / 1e9);
            let mut note = String::new();
            if m == 1 {
                let b_gbs = 4.0 * (k * n) as f64 / per_call.as_secs_f64() / 1e9;
                note = format!(
                    "reads B at {b_gbs:.1} GB/s = {:.0}% of a copy ({:.1} GB/s)",
                    100.0 * b_gbs / best.copy,
                    best.copy
                );
            }
            let mm = |x: f64| {
                if threads == 1 {
                    format!("{x:.1}")
                } else {
                    "-".to_owned()
                }
            };
            println!(
                "| ({m}, {k}, {n}) | {threads} | {:.1} | {:.0}% | {:.1} | {:.2}x | {} | {} | {} | {} | {} | {note} |",
                best.accy,
                100.0 * best.accy / (best.peak * threads as f64),
                best.gemm,
                best.accy / best.gemm,
                mm(best.mm),
                if threads == 1 {
                    format!("{:.2}x", best.accy / best.mm)
                } else {
                    "-".to_owned()
                },
                human(per_call),
                human(p.compile),
                human(p.first_compile.saturating_sub(p.compile)),
            );
            eprintln!("gemm: ({m}, {k}, {n}) x{threads} done");
        }
    }
}
