//! Compile latency: wire bytes to a loaded, runnable program, for a 10-op and a 100-op
//! program. The in-run reference is decoding plus verifying the same bytes, the floor any
//! compile pays; `cargo xtask bench compile` prints each time as a ratio to it.
//!
//! Loading the MLP example's artifact (`load_mlp_artifact`): the reference is publishing its
//! code into a fresh executable mapping and unmapping it (what any loader pays);
//! `read_check_validate` is everything `Artifact::from_bytes` does (magic, version, checksum,
//! sections, validation), i.e. the load work beyond mapping that the issue bounds at 20 µs;
//! `load_artifact` is the whole session load (reading, mapping, binding the weights and
//! packing them by the setup commands) plus release; `compile` the same program compiled.

use accy_artifact::Artifact;
use accy_executable::CodeMemory;
use accy_ir::{BinaryOp, Builder, DType, ReduceOp, Type, UnaryOp};
use accy_session::{Session, Weights};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

/// A program of about `ops` instructions: an MLP-like chain of elementwise ops, broadcasts,
/// a reduction every tenth step and a small dot, so fusion and planning both have work.
fn program(ops: usize) -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[16, 32])).unwrap();
    let w = b.input("w", Type::new(DType::F32, &[32, 32])).unwrap();
    let bias = b.input("bias", Type::new(DType::F32, &[32])).unwrap();
    let mut v = x;
    let mut count = 0;
    while count < ops {
        v = match count % 10 {
            0 => b.matmul(v, w).unwrap(),
            1 => {
                let bb = b.broadcast(bias, &[16, 32], &[1]).unwrap();
                count += 1;
                b.binary(BinaryOp::Add, v, bb).unwrap()
            }
            2 => b.unary(UnaryOp::Tanh, v).unwrap(),
            3 => b.binary(BinaryOp::Mul, v, v).unwrap(),
            4 => {
                let r = b.reduce(ReduceOp::Max, v, &[1]).unwrap();
                let rb = b.broadcast(r, &[16, 32], &[0]).unwrap();
                count += 2;
                b.binary(BinaryOp::Sub, v, rb).unwrap()
            }
            5 => b.unary(UnaryOp::Exp, v).unwrap(),
            6 => b.unary(UnaryOp::Neg, v).unwrap(),
            7 => b.binary(BinaryOp::Max, v, x).unwrap(),
            8 => b.unary(UnaryOp::Abs, v).unwrap(),
            _ => b.binary(BinaryOp::Sub, v, x).unwrap(),
        };
        count += 1;
    }
    b.output(v).unwrap();
    let p = b.finish().unwrap();
    assert!(p.instructions.len() >= ops, "{} ops", p.instructions.len());
    accy_wire::encode(&p)
}

fn bench(c: &mut Criterion) {
    let session = Session::new().unwrap();
    for ops in [10, 100] {
        let bytes = program(ops);
        let mut group = c.benchmark_group(format!("compile_{ops}_ops"));
        group.bench_function("reference_decode_verify", |bench| {
            bench.iter(|| {
                let p = accy_wire::decode(black_box(&bytes)).unwrap();
                accy_ir::verify(&p).unwrap();
                p
            })
        });
        group.bench_function(format!("compile_{}", session.target_name()), |bench| {
            bench.iter(|| {
                let h = session.compile(black_box(&bytes)).unwrap();
                session.release(h).unwrap();
            })
        });
        group.finish();
    }
    load_mlp_artifact(c, &session);
}

fn load_mlp_artifact(c: &mut Criterion, session: &Session) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/mlp.accy");
    let program = accy_ir::text::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let owned: Vec<(String, Vec<u8>)> = program
        .weights()
        .map(|(_, p)| (p.name.clone(), vec![0; p.ty.byte_size().unwrap() as usize]))
        .collect();
    let named: Vec<(&str, &[u8])> = owned
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let weights = Weights::new(&named).unwrap();
    let wire = accy_wire::encode(&program);
    let bytes = session.compile_artifact(&wire).unwrap();
    let code = Artifact::from_bytes(&bytes).unwrap().code;

    let mut group = c.benchmark_group("load_mlp_artifact");
    group.bench_function("reference_map_code", |bench| {
        bench.iter(|| CodeMemory::from_code(black_box(&code)).unwrap())
    });
    group.bench_function("read_check_validate", |bench| {
        bench.iter(|| Artifact::from_bytes(black_box(&bytes)).unwrap())
    });
    group.bench_function("load_artifact", |bench| {
        bench.iter(|| {
            // SAFETY: `bytes` were written by `compile_artifact` above.
            let h =
                unsafe { session.load_artifact_with_weights(black_box(&bytes), &weights) }.unwrap();
            session.release(h).unwrap();
        })
    });
    group.bench_function(format!("compile_{}", session.target_name()), |bench| {
        bench.iter(|| {
            let h = session
                .compile_with_weights(black_box(&wire), &weights)
                .unwrap();
            session.release(h).unwrap();
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
