//! Invoke latency through the whole session path: handle lookup, buffer checks, binding, the
//! dispatch.
//!
//! - `invoke_tiny`: `x + y` on f32[4]. The in-run reference is the same addition written in
//!   Rust, so the ratio is the per-call overhead of the runtime.
//! - `invoke_10k_outputs`: one f32[4] result (`neg x`) returned as 10,000 outputs, each its own
//!   caller buffer, passed in a shuffled address order. It measures how the buffer checks
//!   scale with the number of buffers (the overlap check must not be quadratic). The in-run
//!   reference writes the same 10,000 results in plain Rust.

use accy_ir::{BinaryOp, Builder, DType, Type, UnaryOp};
use accy_session::{Scratch, Session};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

/// Outputs of the many-output program.
const OUTPUTS: usize = 10_000;

fn tiny(c: &mut Criterion, session: &Session) {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let y = b.input("y", Type::new(DType::F32, &[4])).unwrap();
    let s = b.binary(BinaryOp::Add, x, y).unwrap();
    b.output(s).unwrap();
    let bytes = accy_wire::encode(&b.finish().unwrap());
    let h = session.compile(&bytes).unwrap();
    let xs = [1.0f32, 2.0, 3.0, 4.0];
    let ys = [0.5f32; 4];
    let mut out = [0.0f32; 4];
    let mut scratch = Scratch::new();

    let mut group = c.benchmark_group("invoke_tiny");
    group.bench_function("reference_rust_add", |bench| {
        bench.iter(|| {
            let (a, b) = (black_box(&xs), black_box(&ys));
            for i in 0..4 {
                out[i] = a[i] + b[i];
            }
            black_box(&out);
        })
    });
    group.bench_function(format!("invoke_{}", session.target_name()), |bench| {
        bench.iter(|| {
            let xb: &[u8] = bytemuck::cast_slice(black_box(&xs));
            let yb: &[u8] = bytemuck::cast_slice(black_box(&ys));
            let mut outs: [&mut [u8]; 1] = [bytemuck::cast_slice_mut(&mut out)];
            session
                .invoke(h, &mut scratch, &[xb, yb], &mut outs)
                .unwrap();
        })
    });
    group.finish();
    assert_eq!(out, [1.5, 2.5, 3.5, 4.5]);
}

/// A deterministic shuffle (SplitMix64-driven Fisher–Yates) of `0..n`.
fn shuffled(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..n).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        order.swap(i, ((z ^ (z >> 31)) % (i as u64 + 1)) as usize);
    }
    order
}

fn many_outputs(c: &mut Criterion, session: &Session) {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let y = b.unary(UnaryOp::Neg, x).unwrap();
    for _ in 0..OUTPUTS {
        b.output(y).unwrap();
    }
    let bytes = accy_wire::encode(&b.finish().unwrap());
    let h = session.compile(&bytes).unwrap();
    let xs = [1.0f32, 2.0, 3.0, 4.0];
    let mut memory = vec![0.0f32; 4 * OUTPUTS];
    let mut scratch = Scratch::new();

    let mut group = c.benchmark_group("invoke_10k_outputs");
    group.bench_function("reference_rust_neg", |bench| {
        bench.iter(|| {
            let a = black_box(&xs);
            for out in memory.chunks_exact_mut(4) {
                for i in 0..4 {
                    out[i] = -a[i];
                }
            }
            black_box(&memory);
        })
    });
    // Output `i` is chunk `order[i]`, so the buffers' addresses are not in output order.
    let order = shuffled(OUTPUTS);
    let mut slots: Vec<Option<&mut [u8]>> = (0..OUTPUTS).map(|_| None).collect();
    for (chunk, &i) in memory.chunks_exact_mut(4).zip(&order) {
        slots[i] = Some(bytemuck::cast_slice_mut(chunk));
    }
    let mut outs: Vec<&mut [u8]> = slots.into_iter().map(Option::unwrap).collect();
    let xb: &[u8] = bytemuck::cast_slice(&xs);
    group.bench_function(format!("invoke_{}", session.target_name()), |bench| {
        bench.iter(|| {
            session
                .invoke(h, &mut scratch, &[black_box(xb)], &mut outs)
                .unwrap();
        })
    });
    group.finish();
    drop(outs);
    assert!(memory
        .chunks_exact(4)
        .all(|o| o == [-1.0, -2.0, -3.0, -4.0]));
}

fn bench(c: &mut Criterion) {
    let session = Session::new().unwrap();
    tiny(c, &session);
    many_outputs(c, &session);
}

criterion_group!(benches, bench);
criterion_main!(benches);
