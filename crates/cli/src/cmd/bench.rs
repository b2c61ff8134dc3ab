//! `accy bench`: compile time, invocation latency percentiles, throughput across threads,
//! GFLOPS and GB/s of one program on seeded random data.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use accy_cli::work;
use accy_session::{Handle, Scratch, Session};

use super::{Buffer, Failure, TargetName};

/// Compiles timed for the compile-time median (fewer if they take long; see `compile_times`).
const COMPILES: usize = 7;
/// Runs longer than this get a progress line on stderr.
const PROGRESS_AFTER: Duration = Duration::from_secs(2);

/// The arguments of `accy bench`.
#[derive(Debug)]
pub struct BenchArgs {
    /// Program file.
    pub file: PathBuf,
    /// Untimed invocations per thread.
    pub warmup: u64,
    /// Timed invocations per thread, if fixed.
    pub iters: Option<u64>,
    /// Seconds to measure for when `iters` is `None` (default 2).
    pub seconds: Option<f64>,
    /// Threads invoking at once.
    pub threads: usize,
    /// Seed of the random inputs and weights.
    pub seed: u64,
    /// Code generator; the host's best when `None`.
    pub target: Option<TargetName>,
    /// Turn off float-sum reassociation.
    pub exact: bool,
    /// `--shape` and `--weights`.
    pub model: super::model::ModelArgs,
}

/// The most threads `bench` starts (each copies the program's buffers).
const MAX_THREADS: usize = 256;

/// When each thread stops measuring.
#[derive(Clone, Copy, Debug)]
enum Stop {
    Iterations(u64),
    Deadline(Duration),
}

/// `accy bench`: measures and prints compile time, latency, throughput and work rates.
pub fn bench(args: &BenchArgs) -> Result<(), Failure> {
    if args.threads == 0 || args.threads > MAX_THREADS {
        return Err(Failure::Usage(format!(
            "--threads must be between 1 and {MAX_THREADS}"
        )));
    }
    let stop = match (args.iters, args.seconds) {
        (Some(0), _) => return Err(Failure::Usage("--iters must be at least 1".into())),
        (Some(n), _) => Stop::Iterations(n),
        (None, Some(s)) if !(s > 0.0 && s < 1e6) => {
            return Err(Failure::Usage(format!(
                "--seconds must be positive and finite, not {s}"
            )))
        }
        (None, s) => Stop::Deadline(Duration::from_secs_f64(s.unwrap_or(2.0))),
    };
    let loaded = super::model::load_model(&args.file, &args.model)?;
    let program = &loaded.program;
    let (mut values, mut sources) = super::arguments(program, &[], &[], args.seed)?;
    super::model::apply_weights(&loaded, &mut values, &mut sources);
    let weights = super::weights(program, &values)?;
    let wire = accy_wire::encode(program);

    let compile = compile_times(args, &wire, &weights)?;
    let session = super::session(args.target, args.exact)?;
    let handle = session
        .compile_with_weights(&wire, &weights)
        .map_err(|e| Failure::session("compile", &e))?;
    let outputs = session
        .outputs(handle)
        .map_err(|e| Failure::session("outputs", &e))?;
    let inputs = super::input_values(program, &values);

    let done = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    let started = Instant::now();
    let results: Vec<Result<Measured, Failure>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..args.threads)
            .map(|_| {
                let (ins, outs) = super::buffers(&inputs, &outputs);
                let (session, done, finished) = (&session, &done, &finished);
                scope.spawn(move || {
                    let r = worker(session, handle, ins, outs, args.warmup, stop, done);
                    finished.fetch_add(1, Ordering::Release);
                    r
                })
            })
            .collect();
        progress(&started, stop, args.threads, &done, &finished);
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Failure::Runtime("a bench thread panicked".into())))
            })
            .collect()
    });
    let mut latencies = Vec::new();
    let (mut rate, mut wall) = (0.0, Duration::ZERO);
    for r in results {
        let measured = r?;
        // Threads measure concurrently, so their rates add up.
        rate += measured.latencies.len() as f64 / measured.elapsed.as_secs_f64().max(1e-9);
        wall = wall.max(measured.elapsed);
        latencies.extend(measured.latencies);
    }
    report(args, &session, program, &compile, latencies, rate, wall);
    Ok(())
}

/// Compile times in nanoseconds, each compile in a fresh session (so nothing is cached),
/// sorted; stops early once compiles have taken 3 seconds.
fn compile_times(
    args: &BenchArgs,
    wire: &[u8],
    weights: &accy_session::Weights,
) -> Result<Vec<u64>, Failure> {
    let mut times = Vec::with_capacity(COMPILES);
    let budget = Instant::now();
    for _ in 0..COMPILES {
        let session = super::session(args.target, args.exact)?;
        let start = Instant::now();
        let handle = session
            .compile_with_weights(wire, weights)
            .map_err(|e| Failure::session("compile", &e))?;
        times.push(nanos(start.elapsed()));
        session
            .release(handle)
            .map_err(|e| Failure::session("release", &e))?;
        if budget.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    times.sort_unstable();
    Ok(times)
}

/// What one thread measured.
#[derive(Debug)]
struct Measured {
    /// Each timed invocation's latency in nanoseconds.
    latencies: Vec<u64>,
    /// From the first timed invocation's start to the last one's end (warmup excluded).
    elapsed: Duration,
}

/// One thread's measurement, with its own scratch and buffers.
fn worker(
    session: &Session,
    handle: Handle,
    ins: Vec<Buffer>,
    mut outs: Vec<Buffer>,
    warmup: u64,
    stop: Stop,
    done: &AtomicU64,
) -> Result<Measured, Failure> {
    let mut scratch = Scratch::new();
    let ins: Vec<&[u8]> = ins.iter().map(Buffer::bytes).collect();
    let mut outs: Vec<&mut [u8]> = outs.iter_mut().map(Buffer::bytes_mut).collect();
    for _ in 0..warmup {
        session
            .invoke(handle, &mut scratch, &ins, &mut outs)
            .map_err(|e| Failure::session("run", &e))?;
    }
    let mut latencies = Vec::with_capacity(match stop {
        Stop::Iterations(n) => usize::try_from(n).unwrap_or(0).min(1 << 24),
        Stop::Deadline(_) => 1 << 12,
    });
    let start = Instant::now();
    loop {
        let t = Instant::now();
        session
            .invoke(handle, &mut scratch, &ins, &mut outs)
            .map_err(|e| Failure::session("run", &e))?;
        let end = Instant::now();
        latencies.push(nanos(end - t));
        done.fetch_add(1, Ordering::Relaxed);
        let more = match stop {
            Stop::Iterations(n) => (latencies.len() as u64) < n,
            Stop::Deadline(d) => end - start < d,
        };
        if !more {
            return Ok(Measured {
                latencies,
                elapsed: end - start,
            });
        }
    }
}

/// Waits for the workers, printing a progress line on stderr once the run passes
/// [`PROGRESS_AFTER`]; the line is overwritten in place and ended when the run ends.
fn progress(
    started: &Instant,
    stop: Stop,
    threads: usize,
    done: &AtomicU64,
    finished: &AtomicUsize,
) {
    let mut shown = false;
    let mut stderr = std::io::stderr();
    while finished.load(Ordering::Acquire) < threads {
        std::thread::sleep(Duration::from_millis(50));
        let elapsed = started.elapsed();
        if elapsed < PROGRESS_AFTER {
            continue;
        }
        let goal = match stop {
            Stop::Iterations(n) => format!(" of {}", n.saturating_mul(threads as u64)),
            Stop::Deadline(d) => format!(" ({:.0} s planned)", d.as_secs_f64()),
        };
        // Progress is best effort: a closed stderr must not fail the benchmark.
        let _ = write!(
            stderr,
            "\rbench: {:.1} s, {} invocations{goal}   ",
            elapsed.as_secs_f64(),
            done.load(Ordering::Relaxed)
        );
        let _ = stderr.flush();
        shown = true;
    }
    if shown {
        let _ = writeln!(stderr);
    }
}

fn report(
    args: &BenchArgs,
    session: &Session,
    program: &accy_ir::Program,
    compile: &[u64],
    mut latencies: Vec<u64>,
    per_second: f64,
    wall: Duration,
) {
    latencies.sort_unstable();
    let count = latencies.len() as u64;
    let work = work::of(program);
    let threads = match args.threads {
        1 => "1 thread".to_owned(),
        n => format!("{n} threads"),
    };
    println!(
        "{}: {} on {threads}{}",
        args.file.display(),
        session.target_name(),
        if args.exact { ", exact float sums" } else { "" }
    );
    println!(
        "compile     median {} (min {}, max {}; {} compiles, fresh session each)",
        time(percentile(compile, 50.0)),
        time(compile.first().copied().unwrap_or(0)),
        time(compile.last().copied().unwrap_or(0)),
        compile.len()
    );
    println!(
        "latency     min {}  p50 {}  p90 {}  p99 {}  ({count} invocations, {} warmup each)",
        time(latencies.first().copied().unwrap_or(0)),
        time(percentile(&latencies, 50.0)),
        time(percentile(&latencies, 90.0)),
        time(percentile(&latencies, 99.0)),
        args.warmup
    );
    println!(
        "throughput  {per_second:.1} invocations/s (measured over {:.2} s)",
        wall.as_secs_f64()
    );
    if work.flops > 0 {
        println!(
            "compute     {} per invocation, {:.3} GFLOPS",
            si(work.flops as f64, "FLOP"),
            work.flops as f64 * per_second / 1e9
        );
    }
    let io = work.input_bytes.saturating_add(work.output_bytes);
    println!(
        "memory      {} in+out per invocation, {:.3} GB/s; weights {} resident",
        si(io as f64, "B"),
        io as f64 * per_second / 1e9,
        si(work.weight_bytes as f64, "B")
    );
}

/// The `p`th percentile (nearest rank) of sorted `values`.
fn percentile(values: &[u64], p: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A duration in nanoseconds with a readable unit.
fn time(ns: u64) -> String {
    let ns = ns as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// `value` with a decimal SI prefix.
fn si(value: f64, unit: &str) -> String {
    for (scale, prefix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if value >= scale {
            return format!("{:.2} {prefix}{unit}", value / scale);
        }
    }
    format!("{value:.0} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&[7], 90.0), 7);
        assert_eq!(percentile(&[], 50.0), 0);
        assert_eq!(time(1500), "1.50 µs");
        assert_eq!(si(2_500_000.0, "FLOP"), "2.50 MFLOP");
    }
}
