//! `cargo xtask bench parallel`: threads inside one invocation, and concurrent callers.
//!
//! One table, measured in one run:
//! - a 1024³ f32 dot, a 4096×1024 row softmax and a 16M-element chain `tanh(x·0.5+0.25)·1.5`,
//!   each at 1 thread (the caller pinned to CPU 0) and at all threads, then the same with a
//!   busy-loop process pinned to the last CPU; the speedups are the in-run ratios;
//! - the tiny program (`x + y` on f32[4]): single-caller latency, and the throughput of 1 and
//!   of 2 concurrent callers counted over the window from the first start to the last end.
//!   Each is the best of several rounds, as in the `gemm` and `memory` benches: the shared
//!   host moves a 60 ns call by up to 2× from one second to the next, and interference only
//!   ever slows a round down.

mod common;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use accy_ir::{BinaryOp, Builder, DType, Program, ReduceOp, Tensor, Type, UnaryOp};
use accy_session::{Scratch, Session, SessionOptions};
use common::{all_cpus, human, median, pin_to, BusyNeighbour, Prepared};

fn dot(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("a", Type::new(DType::F32, &[n, n])).unwrap();
    let w = b.input("b", Type::new(DType::F32, &[n, n])).unwrap();
    let y = b.dot(x, w, (&[], &[]), (&[1], &[0])).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

fn softmax(rows: u64, cols: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[rows, cols])).unwrap();
    let m = b.reduce(ReduceOp::Max, x, &[1]).unwrap();
    let mb = b.broadcast(m, &[rows, cols], &[0]).unwrap();
    let d = b.binary(BinaryOp::Sub, x, mb).unwrap();
    let e = b.unary(UnaryOp::Exp, d).unwrap();
    let s = b.reduce(ReduceOp::Sum, e, &[1]).unwrap();
    let sb = b.broadcast(s, &[rows, cols], &[0]).unwrap();
    let y = b.binary(BinaryOp::Div, e, sb).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// `tanh(x·0.5+0.25)·1.5` over `n` f32s.
fn tanh_chain(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[n])).unwrap();
    let scalar = |b: &mut Builder, v: f32| {
        let c = b.constant(Tensor::f32s(&[], vec![v])).unwrap();
        b.broadcast(c, &[n], &[]).unwrap()
    };
    let (half, quarter, scale) = (
        scalar(&mut b, 0.5),
        scalar(&mut b, 0.25),
        scalar(&mut b, 1.5),
    );
    let y = b.binary(BinaryOp::Mul, x, half).unwrap();
    let y = b.binary(BinaryOp::Add, y, quarter).unwrap();
    let y = b.unary(UnaryOp::Tanh, y).unwrap();
    let y = b.binary(BinaryOp::Mul, y, scale).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

fn tiny() -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let y = b.input("y", Type::new(DType::F32, &[4])).unwrap();
    let s = b.binary(BinaryOp::Add, x, y).unwrap();
    b.output(s).unwrap();
    b.finish().unwrap()
}

/// The median time of one invocation of `program` with `threads` threads; with `pin`, the
/// caller (and so a 1-thread run) is pinned to CPU 0.
fn time(program: &Program, threads: usize, pin: bool, budget: Duration) -> Duration {
    pin_to(&all_cpus());
    let session =
        Session::with_options(SessionOptions::default().with_threads(threads)).expect("session");
    let mut p = Prepared::new(&session, program);
    if pin {
        pin_to(&[0]);
    }
    let t = median(budget, || p.invoke(&session));
    pin_to(&all_cpus());
    t
}

/// Invocations of the tiny program per second with `callers` threads calling at once, each
/// for about `seconds`, over the window from the first start to the last end.
fn throughput(session: &Arc<Session>, callers: usize, seconds: f64) -> f64 {
    let program = tiny();
    let handle = session.compile(&accy_wire::encode(&program)).unwrap();
    let start = Arc::new(Barrier::new(callers));
    let threads: Vec<_> = (0..callers)
        .map(|_| {
            let (session, start) = (Arc::clone(session), Arc::clone(&start));
            std::thread::spawn(move || {
                let (x, y) = ([1.0f32; 4], [2.0f32; 4]);
                let mut out = [0.0f32; 4];
                let mut scratch = Scratch::new();
                start.wait();
                let begin = Instant::now();
                let mut calls = 0u64;
                while begin.elapsed().as_secs_f64() < seconds {
                    for _ in 0..1000 {
                        session
                            .invoke_typed(handle, &mut scratch, &[&x, &y], &mut [&mut out])
                            .unwrap();
                    }
                    calls += 1000;
                }
                (begin, Instant::now(), calls)
            })
        })
        .collect();
    let runs: Vec<(Instant, Instant, u64)> =
        threads.into_iter().map(|t| t.join().unwrap()).collect();
    let first = runs.iter().map(|r| r.0).min().unwrap();
    let last = runs.iter().map(|r| r.1).max().unwrap();
    let calls: u64 = runs.iter().map(|r| r.2).sum();
    session.release(handle).unwrap();
    calls as f64 / (last - first).as_secs_f64()
}

#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its table, and its progress"
)]
fn main() {
    common::maybe_be_busy_neighbour();
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 300 } else { 1500 });
    let cpus = all_cpus();
    let all = cpus.len();
    let cases = [
        ("dot f32 1024x1024x1024", dot(1024)),
        ("row softmax 4096x1024", softmax(4096, 1024)),
        ("tanh chain 16M f32", tanh_chain(1 << 24)),
    ];
    println!(
        "parallel: {all} CPUs; 1-thread runs pinned to CPU 0; busy neighbour on CPU {}",
        all - 1
    );
    let mut rows = Vec::new();
    for (name, program) in &cases {
        let one = time(program, 1, true, budget);
        let many = time(program, all, false, budget);
        let (one_busy, many_busy) = {
            let _busy = BusyNeighbour::start(all - 1);
            (
                time(program, 1, true, budget),
                time(program, all, false, budget),
            )
        };
        rows.push((*name, one, many, one_busy, many_busy));
        eprintln!("parallel: {name} done");
    }
    println!();
    println!(
        "| case | 1 thread | {all} threads | speedup | 1 thread, busy neighbour | {all} threads, busy neighbour | {all} vs 1, busy |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, one, many, one_busy, many_busy) in &rows {
        println!(
            "| {name} | {} | {} | {:.2}x | {} | {} | {:.2}x |",
            human(*one),
            human(*many),
            one.as_secs_f64() / many.as_secs_f64(),
            human(*one_busy),
            human(*many_busy),
            one_busy.as_secs_f64() / many_busy.as_secs_f64(),
        );
    }

    let session = Arc::new(Session::new().expect("session"));
    let handle = session.compile(&accy_wire::encode(&tiny())).unwrap();
    let (x, y) = ([1.0f32; 4], [2.0f32; 4]);
    let mut out = [0.0f32; 4];
    let mut scratch = Scratch::new();
    let rounds = if quick { 3 } else { 5 };
    let seconds = if quick { 0.3 } else { 1.5 };
    let (mut latency, mut one, mut two) = (Duration::MAX, 0.0f64, 0.0f64);
    for _ in 0..rounds {
        pin_to(&[0]);
        let round = median(budget, || {
            for _ in 0..1000 {
                session
                    .invoke_typed(handle, &mut scratch, &[&x, &y], &mut [&mut out])
                    .unwrap();
            }
        }) / 1000;
        pin_to(&cpus);
        latency = latency.min(round);
        one = one.max(throughput(&session, 1, seconds));
        two = two.max(throughput(&session, 2, seconds));
    }
    println!();
    println!("| tiny invoke (f32[4] add), best of {rounds} rounds | value |");
    println!("|---|---:|");
    println!(
        "| single-caller latency (median of 1000-call batches) | {} |",
        human(latency)
    );
    println!("| 1 caller throughput | {:.2} M/s |", one / 1e6);
    println!("| 2 callers throughput | {:.2} M/s |", two / 1e6);
    println!("| 2 callers vs 1 | {:.2}x |", two / one);
}
