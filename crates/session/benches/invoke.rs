//! Invoke latency of a tiny program (`x + y` on f32[4]) through the whole session path:
//! handle lookup, buffer checks, binding, the dispatch. The in-run reference is the same
//! addition written in Rust, so the ratio is the per-call overhead of the runtime.

use accy_ir::{BinaryOp, Builder, DType, Type};
use accy_session::{Scratch, Session};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let y = b.input("y", Type::new(DType::F32, &[4])).unwrap();
    let s = b.binary(BinaryOp::Add, x, y).unwrap();
    b.output(s).unwrap();
    let bytes = accy_wire::encode(&b.finish().unwrap());
    let session = Session::new().unwrap();
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

criterion_group!(benches, bench);
criterion_main!(benches);
