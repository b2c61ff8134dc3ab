//! `accy bench`: compile time, invocation latency percentiles, throughput of concurrent
//! callers, GFLOPS and GB/s of one program on seeded random data; with `--slots`, of the
//! program run as a model with a bounded number of inference slots.

mod measure;
mod slots;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use accy_cli::work;

use super::{values, Failure, TargetName};
use measure::Stop;

/// Compiles timed for the compile-time median (fewer if they take long; see `compile_times`).
/// Enough that one slow compile on a shared host moves the median little; a small program
/// takes a few milliseconds for all of them, packing included.
const COMPILES: usize = 31;

/// The arguments of `accy bench`.
#[derive(Debug)]
pub struct BenchArgs {
    /// Program file.
    pub file: PathBuf,
    /// Untimed invocations per caller (fewer if they take longer than `seconds`).
    pub warmup: u64,
    /// Timed invocations per caller, if fixed.
    pub iters: Option<u64>,
    /// Seconds to measure for when `iters` is `None` (default 2).
    pub seconds: Option<f64>,
    /// Callers invoking the program at once.
    pub concurrency: usize,
    /// Inference slots, to run as a model.
    pub slots: Option<usize>,
    /// Another shape of the network whose preparation to time (with `slots`).
    pub prepare: Option<PathBuf>,
    /// Seed of the random inputs and weights.
    pub seed: u64,
    /// Threads per invocation; one per core when `None`.
    pub threads: Option<usize>,
    /// Code generator; the host's best when `None`.
    pub target: Option<TargetName>,
    /// Turn off float-sum reassociation.
    pub exact: bool,
    /// Flush subnormal floats to zero in runs.
    pub flush_subnormals: bool,
    /// `--shape` and `--weights`.
    pub model: super::model::ModelArgs,
}

impl BenchArgs {
    /// The numeric options these arguments ask for.
    pub fn numerics(&self) -> super::Numerics {
        super::Numerics {
            exact: self.exact,
            flush_subnormals: self.flush_subnormals,
        }
    }
}

/// The most callers `bench` starts (each has its own copy of the program's buffers), and the
/// most inference slots it prepares.
const MAX_CALLERS: usize = 256;

/// `accy bench`: measures and prints compile time, latency, throughput and work rates.
pub fn bench(args: &BenchArgs, out: &mut super::Out) -> Result<(), Failure> {
    if args.concurrency == 0 || args.concurrency > MAX_CALLERS {
        return Err(Failure::Usage(format!(
            "--concurrency must be between 1 and {MAX_CALLERS}, not {}",
            args.concurrency
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
    if args.slots.is_some_and(|n| n == 0 || n > MAX_CALLERS) {
        return Err(Failure::Usage(format!(
            "--slots must be between 1 and {MAX_CALLERS}, not {}",
            args.slots.unwrap_or(0)
        )));
    }
    let loaded = super::model::load_model(&args.file, &args.model, &[])?;
    let program = &loaded.program;
    let callers = args.concurrency as u64;
    let (mut values, mut sources) =
        values::arguments(program, &[], &[], args.seed, callers, &loaded.mapped)?;
    super::model::apply_weights(&loaded, &mut values, &mut sources);
    let weights = values::weights(program, &values, &loaded.mapped)?;
    // The weights are held by `weights` now: keep only the inputs.
    let inputs = values::into_inputs(program, values);
    if let Some(slots) = args.slots {
        return slots::bench(args, slots, program, weights, inputs, stop, out);
    }
    let wire = accy_wire::encode(program);

    let compile = compile_times(args, &wire, &weights)?;
    let session = super::session(args.target, args.numerics(), args.threads)?;
    let handle = session
        .compile_with_weights(&wire, &weights)
        .map_err(|e| Failure::session("compile", &e))?;
    let outputs = session
        .outputs(handle)
        .map_err(|e| Failure::session("outputs", &e))?;
    let buffers = caller_buffers(args.concurrency, inputs, &outputs)?;
    let invoke = |scratch: &mut accy_session::Scratch, ins: &[&[u8]], outs: &mut [&mut [u8]]| {
        session.invoke(handle, scratch, ins, outs)
    };
    let measured = measure::measure(&invoke, buffers, args.warmup, stop)?;
    writeln!(
        out,
        "{}: {} with {}, {} per invocation{}",
        args.file.display(),
        session.target_name(),
        match args.concurrency {
            1 => "1 caller".to_owned(),
            n => format!("{n} concurrent callers"),
        },
        match session.threads() {
            1 => "1 thread".to_owned(),
            n => format!("{n} threads"),
        },
        if args.exact { ", exact float sums" } else { "" }
    )?;
    writeln!(
        out,
        "compile     median {} (min {}, max {}; {} compiles, fresh session each{})",
        time(percentile(&compile.compile, 50.0)),
        time(compile.compile.first().copied().unwrap_or(0)),
        time(compile.compile.last().copied().unwrap_or(0)),
        compile.compile.len(),
        if compile.packs {
            ", the weights' packed forms already made"
        } else {
            ""
        }
    )?;
    if compile.packs {
        writeln!(
            out,
            "packing     median {} (the weights' packed forms, made by a session's first compile \
             with them)",
            time(percentile(&compile.packing, 50.0)),
        )?;
    }
    report(program, measured, out)
}

/// Every caller's buffers: the first gets `inputs`, the others copies, each its own outputs.
fn caller_buffers(
    callers: usize,
    inputs: Vec<super::Buffer>,
    outputs: &[accy_session::Descriptor],
) -> Result<Vec<measure::CallerBuffers>, Failure> {
    let mut buffers = Vec::with_capacity(callers);
    for caller in 1..callers {
        let copies = inputs
            .iter()
            .enumerate()
            .map(|(i, b)| b.try_clone(&format!("input {i} of caller {caller}")))
            .collect::<Result<_, _>>()?;
        buffers.push((copies, values::outputs(outputs)?));
    }
    buffers.push((inputs, values::outputs(outputs)?));
    Ok(buffers)
}

/// Compile times, in nanoseconds, each list sorted.
struct CompileTimes {
    /// Compiling alone: a session's second compile with the same weights, which shares the
    /// packed forms its first compile made.
    compile: Vec<u64>,
    /// The first compile's extra time: packing the weights (the setup commands).
    packing: Vec<u64>,
    /// Whether the program has packed forms of weights at all.
    packs: bool,
}

/// Times [`COMPILES`] compiles (fewer if they take more than about 3 s), each in a fresh
/// session with a fresh copy of the weight set (sharing the weights' memory, not their packed
/// forms, which a set keeps once made): the first compile packs the weights, a second one
/// then shares them.
fn compile_times(
    args: &BenchArgs,
    wire: &[u8],
    weights: &accy_session::Weights,
) -> Result<CompileTimes, Failure> {
    let mut times = CompileTimes {
        compile: Vec::with_capacity(COMPILES),
        packing: Vec::with_capacity(COMPILES),
        packs: false,
    };
    let budget = Instant::now();
    let timed = |session: &accy_session::Session,
                 weights: &accy_session::Weights|
     -> Result<(u64, _), Failure> {
        let start = Instant::now();
        let handle = session
            .compile_with_weights(wire, weights)
            .map_err(|e| Failure::session("compile", &e))?;
        Ok((nanos(start.elapsed()), handle))
    };
    for _ in 0..COMPILES {
        let session = super::session(args.target, args.numerics(), args.threads)?;
        let fresh = weights
            .merge(&accy_session::Weights::empty())
            .map_err(|e| Failure::Runtime(format!("copying the weight set: {e}")))?;
        let (first, a) = timed(&session, &fresh)?;
        let (second, b) = timed(&session, &fresh)?;
        times.packs |= fresh.derived_count() > 0;
        times.compile.push(second);
        times.packing.push(first.saturating_sub(second));
        for handle in [a, b] {
            session
                .release(handle)
                .map_err(|e| Failure::session("release", &e))?;
        }
        if budget.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    times.compile.sort_unstable();
    times.packing.sort_unstable();
    Ok(times)
}

/// The lines every bench prints after its header: latency, throughput, work rates.
fn report(
    program: &accy_ir::Program,
    measured: Vec<measure::Measured>,
    out: &mut super::Out,
) -> Result<(), Failure> {
    let totals = measure::totals(&measured);
    let mut latencies: Vec<u64> = measured.into_iter().flat_map(|m| m.latencies).collect();
    latencies.sort_unstable();
    let per_second = totals.per_second;
    let work = work::of(program);
    writeln!(
        out,
        "latency     min {}  p50 {}  p90 {}  p99 {}  ({} invocations after {} warm-up)",
        time(latencies.first().copied().unwrap_or(0)),
        time(percentile(&latencies, 50.0)),
        time(percentile(&latencies, 90.0)),
        time(percentile(&latencies, 99.0)),
        totals.invocations,
        totals.warmups
    )?;
    writeln!(
        out,
        "throughput  {per_second:.1} invocations/s ({} invocations in {:.6} s, from the first \
         caller's start to the last one's end)",
        totals.invocations,
        totals.window.as_secs_f64()
    )?;
    if work.flops > 0 {
        writeln!(
            out,
            "compute     {} per invocation, {:.3} GFLOPS",
            si(work.flops as f64, "FLOP"),
            work.flops as f64 * per_second / 1e9
        )?;
    }
    let io = work.input_bytes.saturating_add(work.output_bytes);
    writeln!(
        out,
        "memory      {} in+out per invocation, {:.3} GB/s; weights {} resident",
        si(io as f64, "B"),
        io as f64 * per_second / 1e9,
        si(work.weight_bytes as f64, "B")
    )
}

/// The `p`th percentile (nearest rank) of sorted `values`.
fn percentile(values: &[u64], p: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

/// `d` in whole nanoseconds, saturating.
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
