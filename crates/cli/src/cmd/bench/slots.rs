//! `accy bench --slots N`: the program run as a model — weights loaded and packed once, a
//! plan with N inference slots shared by the callers — and, with `--prepare FILE`, the time
//! to prepare another shape of the network once the weights are loaded and packed.

use std::path::Path;
use std::time::{Duration, Instant};

use accy_ir::Program;
use accy_session::{Model, ModelContext, Weights};

use super::measure::{self, Stop};
use super::{nanos, percentile, si, time, BenchArgs};
use crate::cmd::{Buffer, Failure, Out};

/// Prepares timed for the prepare median (fewer if they take long).
const PREPARES: usize = 9;

/// Measures and reports the model path (see the module documentation).
pub fn bench(
    args: &BenchArgs,
    slots: usize,
    program: &Program,
    weights: Weights,
    inputs: Vec<Buffer>,
    stop: Stop,
    out: &mut Out,
) -> Result<(), Failure> {
    let options = crate::cmd::session_options(args.target, args.numerics(), args.threads)?;
    let context = ModelContext::with_options(options).map_err(|e| Failure::session("model", &e))?;
    let started = Instant::now();
    let model = Model::with_context(&context, program, weights)
        .map_err(|e| Failure::session("model", &e))?;
    let made = nanos(started.elapsed());
    let plan = model
        .prepare(program, slots)
        .map_err(|e| Failure::session("prepare", &e))?;
    let prepared = match &args.prepare {
        Some(path) => Some((path, prepare_times(&model, path, slots)?)),
        None => None,
    };
    let buffers = super::caller_buffers(args.concurrency, inputs, plan.outputs())?;
    let invoke =
        |_: &mut accy_session::Scratch, ins: &[&[u8]], outs: &mut [&mut [u8]]| plan.run(ins, outs);
    let measured = measure::measure(&invoke, buffers, args.warmup, stop)?;

    let callers = match args.concurrency {
        1 => "1 caller".to_owned(),
        n => format!("{n} concurrent callers"),
    };
    writeln!(
        out,
        "{}: {} with {callers} over {slots} inference slots{}",
        args.file.display(),
        context.target_name(),
        if args.exact { ", exact float sums" } else { "" }
    )?;
    let w = model.definition().weights();
    let mapped = match w.mapped_bytes() {
        0 => String::new(),
        m => format!(
            ", {} of them used in place from the file",
            si(m as f64, "B")
        ),
    };
    writeln!(
        out,
        "weights     {} bytes: {} given + {} packed, shared by every plan and slot and counted \
         once{mapped}; model made in {} (compile, load, pack)",
        model.weight_bytes(),
        w.given_bytes(),
        w.derived_bytes(),
        time(made)
    )?;
    writeln!(
        out,
        "slots       {slots} × {} bytes of scratch each ({} in all)",
        plan.slot_bytes(),
        plan.scratch_bytes()
    )?;
    if let Some((path, times)) = prepared {
        writeln!(
            out,
            "prepare     {}: median {} (min {}, max {}; {} prepares of {slots} slots, weights \
             already loaded and packed; weights now {} bytes)",
            path.display(),
            time(percentile(&times, 50.0)),
            time(times.first().copied().unwrap_or(0)),
            time(times.last().copied().unwrap_or(0)),
            times.len(),
            model.weight_bytes()
        )?;
    }
    super::report(program, measured, out)
}

/// Times preparing the program at `path` for `model`, [`PREPARES`] times (each plan dropped
/// before the next), sorted; stops early once prepares have taken 3 seconds.
fn prepare_times(model: &Model, path: &Path, slots: usize) -> Result<Vec<u64>, Failure> {
    let variant = crate::cmd::load(path)?;
    let mut times = Vec::with_capacity(PREPARES);
    let budget = Instant::now();
    for _ in 0..PREPARES {
        let start = Instant::now();
        let plan = model
            .prepare(&variant, slots)
            .map_err(|e| Failure::session(&format!("prepare {}", path.display()), &e))?;
        times.push(nanos(start.elapsed()));
        drop(plan);
        if budget.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    times.sort_unstable();
    Ok(times)
}
