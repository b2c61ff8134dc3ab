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
use common::{all_cpus, human, median, pin_to, Prepared};

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
    let t = median(budget, || {
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
    let t = median(budget, || {
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
    let t = median(budget, || {
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

/// Seconds of one accy invocation of (m, k, n) with `threads` threads, and the compile time.
fn accy(
    m: u64,
    k: u64,
    n: u64,
    threads: usize,
    b_input: bool,
    budget: Duration,
) -> (f64, Duration) {
    pin_to(&all_cpus());
    let session =
        Session::with_options(SessionOptions::default().with_threads(threads)).expect("session");
    let program = matmul(m, k, n, b_input);
    let compile = std::time::Instant::now();
    let mut p = Prepared::new(&session, &program);
    let compile = compile.elapsed();
    if threads == 1 {
        pin_to(&[0]);
    }
    let t = median(budget, || p.invoke(&session));
    pin_to(&all_cpus());
    (t.as_secs_f64(), compile)
}

#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its table, and its progress"
)]
fn main() {
    common::maybe_be_busy_neighbour();
    let quick = std::env::args().any(|a| a == "--quick");
    let b_input = std::env::args().any(|a| a == "--input-b");
    let budget = Duration::from_millis(if quick { 200 } else { 1000 });
    let all = all_cpus().len();
    pin_to(&[0]);
    let peak = fma_peak(budget).unwrap_or(f64::NAN);
    pin_to(&all_cpus());
    let shapes: [(u64, u64, u64); 8] = [
        (64, 64, 64),
        (256, 256, 256),
        (512, 512, 512),
        (1024, 1024, 1024),
        (2048, 2048, 2048),
        (16, 64, 64),
        (1, 768, 3072),
        (128, 768, 3072),
    ];
    println!(
        "gemm: f32, B a {}; FMA peak {peak:.1} GFLOPS per core (generated loop); {all} CPUs; \
         1-thread runs pinned to CPU 0",
        if b_input {
            "program input (packed per call)"
        } else {
            "weight (packed at load)"
        }
    );
    println!();
    println!(
        "| (m, k, n) | threads | accy | % of peak | gemm crate | accy / gemm | matrixmultiply | accy / mm | note |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|");
    for &(m, k, n) in &shapes {
        let flops = 2.0 * (m * n * k) as f64;
        for threads in [1, all] {
            if threads == all && all == 1 {
                continue;
            }
            let (t, compile) = accy(m, k, n, threads, b_input, budget);
            let gflops = flops / t / 1e9;
            let (mu, ku, nu) = (m as usize, k as usize, n as usize);
            if threads == 1 {
                pin_to(&[0]);
            }
            let g = gemm_crate(mu, ku, nu, threads, budget);
            let mm = if threads == 1 {
                matrixmultiply_crate(mu, ku, nu, budget)
            } else {
                f64::NAN
            };
            let copy = if m == 1 {
                copy_bandwidth(4 * ku * nu, budget)
            } else {
                f64::NAN
            };
            pin_to(&all_cpus());
            let mut note = format!(
                "{} per call, compile {}",
                human(Duration::from_secs_f64(t)),
                human(compile)
            );
            if m == 1 {
                let b_bytes = 4.0 * (k * n) as f64;
                note.push_str(&format!(
                    "; reads B at {:.1} GB/s = {:.0}% of a copy ({copy:.1} GB/s)",
                    b_bytes / t / 1e9,
                    100.0 * b_bytes / t / 1e9 / copy
                ));
            }
            println!(
                "| ({m}, {k}, {n}) | {threads} | {gflops:.1} | {:.0}% | {g:.1} | {:.2}x | {} | {} | {note} |",
                100.0 * gflops / (peak * threads as f64),
                gflops / g,
                if mm.is_nan() { "-".to_string() } else { format!("{mm:.1}") },
                if mm.is_nan() { "-".to_string() } else { format!("{:.2}x", gflops / mm) },
            );
            eprintln!("gemm: ({m}, {k}, {n}) x{threads} done");
        }
    }
}
