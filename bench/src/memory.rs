//! `cargo xtask bench memory`: memory-bound programs against the copy speed of this machine.
//!
//! One table, measured in one run: a copy done by a generated kernel (`neg` of 16M f32: one read
//! and one write per element, the in-run reference; its 64 MiB output is larger than any
//! last-level cache here, so it is written with non-temporal stores, as every such output
//! is, and the copy runs at what memory allows rather than paying to read each line it
//! writes first), the tanh chain `tanh(x·0.5+0.25)·1.5` over
//! 64K f32 (in cache) and 16M f32, a row softmax and a layer norm (with gamma and beta) over
//! 4096×1024 f32 (16 MiB) and 16384×1024 f32 (64 MiB, past the last-level cache, where their
//! passes run as dispatch chains), and a transpose of 4096×4096 f32 — each as GB/s of its
//! minimal traffic (every input and weight byte read once, every output byte written once)
//! and as a ratio to the copy, at 1 thread and at all threads. Buffers start on a 64-byte
//! cache line, as a tensor allocator gives them (ONNX Runtime's aligns to 64); the 64 MiB
//! layer norm and the transpose are measured a second time with buffers 16 bytes past a
//! line, as `malloc` places a large block. Cells are the best of several rounds
//! (interference on a shared host only slows a measurement down); 1-thread runs are pinned
//! to CPU 0 and timed by the thread's CPU time.

mod common;

use std::time::Duration;

use accy_ir::{BinaryOp, Builder, DType, Program, ReduceOp, Tensor, Type, UnaryOp};
use accy_session::{Session, SessionOptions};
use common::{all_cpus, human, median, median_cpu, pin_to, Prepared};

fn f32t(dims: &[u64]) -> Type {
    Type::new(DType::F32, dims)
}

fn scalar(b: &mut Builder, v: f32, dims: &[u64]) -> accy_ir::ValueId {
    let c = b.constant(Tensor::f32s(&[], vec![v])).unwrap();
    b.broadcast(c, dims, &[]).unwrap()
}

/// `-x`: one read and one write per element, the copy reference.
fn copy(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", f32t(&[n])).unwrap();
    let y = b.unary(UnaryOp::Neg, x).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// `tanh(x·0.5 + 0.25)·1.5`.
fn tanh_chain(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", f32t(&[n])).unwrap();
    let (half, quarter, scale) = (
        scalar(&mut b, 0.5, &[n]),
        scalar(&mut b, 0.25, &[n]),
        scalar(&mut b, 1.5, &[n]),
    );
    let y = b.binary(BinaryOp::Mul, x, half).unwrap();
    let y = b.binary(BinaryOp::Add, y, quarter).unwrap();
    let y = b.unary(UnaryOp::Tanh, y).unwrap();
    let y = b.binary(BinaryOp::Mul, y, scale).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// `exp(x - max) / sum(exp(x - max))` along each row.
fn softmax(rows: u64, cols: u64) -> Program {
    let d = [rows, cols];
    let mut b = Builder::new();
    let x = b.input("x", f32t(&d)).unwrap();
    let m = b.reduce(ReduceOp::Max, x, &[1]).unwrap();
    let mb = b.broadcast(m, &d, &[0]).unwrap();
    let s = b.binary(BinaryOp::Sub, x, mb).unwrap();
    let e = b.unary(UnaryOp::Exp, s).unwrap();
    let sum = b.reduce(ReduceOp::Sum, e, &[1]).unwrap();
    let sb = b.broadcast(sum, &d, &[0]).unwrap();
    let y = b.binary(BinaryOp::Div, e, sb).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// `(x - mean) · rsqrt(var + 1e-5) · gamma + beta` along each row.
fn layernorm(rows: u64, cols: u64) -> Program {
    let d = [rows, cols];
    let mut b = Builder::new();
    let x = b.input("x", f32t(&d)).unwrap();
    let gamma = b.weight("gamma", f32t(&[cols])).unwrap();
    let beta = b.weight("beta", f32t(&[cols])).unwrap();
    let inv_n = scalar(&mut b, 1.0 / cols as f32, &[rows]);
    let sum = b.reduce(ReduceOp::Sum, x, &[1]).unwrap();
    let mean = b.binary(BinaryOp::Mul, sum, inv_n).unwrap();
    let meanb = b.broadcast(mean, &d, &[0]).unwrap();
    let c = b.binary(BinaryOp::Sub, x, meanb).unwrap();
    let sq = b.binary(BinaryOp::Mul, c, c).unwrap();
    let ss = b.reduce(ReduceOp::Sum, sq, &[1]).unwrap();
    let var = b.binary(BinaryOp::Mul, ss, inv_n).unwrap();
    let eps = scalar(&mut b, 1e-5, &[rows]);
    let ve = b.binary(BinaryOp::Add, var, eps).unwrap();
    let rstd = b.unary(UnaryOp::Rsqrt, ve).unwrap();
    let rstdb = b.broadcast(rstd, &d, &[0]).unwrap();
    let xn = b.binary(BinaryOp::Mul, c, rstdb).unwrap();
    let gb = b.broadcast(gamma, &d, &[1]).unwrap();
    let bb = b.broadcast(beta, &d, &[1]).unwrap();
    let y = b.binary(BinaryOp::Mul, xn, gb).unwrap();
    let y = b.binary(BinaryOp::Add, y, bb).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// The transpose of a `n × n` matrix.
fn transpose(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", f32t(&[n, n])).unwrap();
    let y = b.transpose(x, &[1, 0]).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// Bytes of minimal traffic: every parameter read once, every output written once.
fn traffic(p: &Program) -> f64 {
    let params: u64 = p.params.iter().filter_map(|x| x.ty.byte_size()).sum();
    let outputs: u64 = p
        .outputs
        .iter()
        .filter_map(|o| p.value_type(o.value).and_then(|t| t.byte_size()))
        .sum();
    (params + outputs) as f64
}

/// The best (shortest) time of one invocation of `program` over `rounds` rounds.
/// Its buffers start `offset` bytes past a cache line.
fn best_time(
    program: &Program,
    offset: usize,
    threads: usize,
    rounds: usize,
    budget: Duration,
) -> Duration {
    pin_to(&all_cpus());
    let session =
        Session::with_options(SessionOptions::default().with_threads(threads)).expect("session");
    let mut p = Prepared::with_offset(&session, program, offset);
    let mut best = Duration::MAX;
    for _ in 0..rounds {
        let t = if threads == 1 {
            pin_to(&[0]);
            median_cpu(budget, || p.invoke(&session))
        } else {
            pin_to(&all_cpus());
            median(budget, || p.invoke(&session))
        };
        best = best.min(t);
    }
    pin_to(&all_cpus());
    best
}

#[allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its table, and its progress"
)]
fn main() {
    common::maybe_be_busy_neighbour();
    let quick = std::env::args().any(|a| a == "--quick");
    let budget = Duration::from_millis(if quick { 150 } else { 400 });
    let rounds = if quick { 3 } else { 5 };
    let all = all_cpus().len();
    // `--only=TEXT` keeps the copy (the reference) and the cases whose name contains TEXT.
    let only: Option<String> =
        std::env::args().find_map(|a| a.strip_prefix("--only=").map(str::to_owned));
    // Each case with the bytes its buffers start past a cache line.
    let mut cases: Vec<(&str, Program, usize)> = vec![
        ("copy (generated `neg`), 16M f32", copy(1 << 24), 0),
        ("tanh chain, 64K f32", tanh_chain(1 << 16), 0),
        ("tanh chain, 16M f32", tanh_chain(1 << 24), 0),
        ("row softmax 4096×1024", softmax(4096, 1024), 0),
        ("layer norm 4096×1024", layernorm(4096, 1024), 0),
        ("row softmax 16384×1024", softmax(16384, 1024), 0),
        ("layer norm 16384×1024", layernorm(16384, 1024), 0),
        (
            "layer norm 16384×1024, buffers 16 B past a line",
            layernorm(16384, 1024),
            16,
        ),
        ("transpose 4096×4096", transpose(4096), 0),
        (
            "transpose 4096×4096, buffers 16 B past a line",
            transpose(4096),
            16,
        ),
    ];
    if let Some(only) = &only {
        let mut i = 0;
        cases.retain(|(name, _, _)| {
            i += 1;
            i == 1 || name.contains(only.as_str())
        });
    }
    println!(
        "memory: f32; {all} CPUs; GB/s of minimal traffic (parameters read once, outputs written \
         once); buffers start on a 64-byte line unless the case says otherwise; each cell the \
         best of {rounds} rounds, each a median over ~{} ms of samples of >= 50 µs (a batch of \
         calls when calls are shorter); 1-thread runs pinned to CPU 0 and timed by the \
         thread's CPU time, others by wall time",
        budget.as_millis()
    );
    println!();
    let mut threads = vec![1];
    if all > 1 {
        threads.push(all);
    }
    let mut header = "| case |".to_owned();
    let mut rule = "|---|".to_owned();
    for &t in &threads {
        header.push_str(&format!(" {t} thr time | {t} thr GB/s | {t} thr / copy |"));
        rule.push_str("---:|---:|---:|");
    }
    println!("{header}");
    println!("{rule}");
    let mut copy_gbs = vec![f64::NAN; threads.len()];
    for (name, program, offset) in &cases {
        let bytes = traffic(program);
        let mut row = format!("| {name} |");
        for (i, &t) in threads.iter().enumerate() {
            let time = best_time(program, *offset, t, rounds, budget);
            let gbs = bytes / time.as_secs_f64() / 1e9;
            if i < copy_gbs.len() && copy_gbs[i].is_nan() {
                copy_gbs[i] = gbs;
            }
            row.push_str(&format!(
                " {} | {gbs:.1} | {:.0}% |",
                human(time),
                100.0 * gbs / copy_gbs[i]
            ));
        }
        println!("{row}");
        eprintln!("memory: {name} done");
    }
}
