//! Programs and byte helpers shared by the models tests.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]

pub mod fixture;

use accy_ir::{BinaryOp, Builder, DType, Program, Tensor, Type};
use accy_session::{Model, ModelContext, SessionOptions, Weights};

/// `y = x + x` over `n` f32.
pub fn twice(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[n])).unwrap();
    let y = b.binary(BinaryOp::Add, x, x).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// `y = x * w` over `n` f32, `w` a weight.
pub fn mul_weight(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[n])).unwrap();
    let w = b.weight("w", Type::new(DType::F32, &[n])).unwrap();
    let y = b.binary(BinaryOp::Mul, x, w).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// `relu(x · w1 + b1) · w2` for `rows` rows: `x` is `[rows, inputs]`, `w1` `[inputs,
/// hidden]`, `b1` `[hidden]`, `w2` `[hidden, outputs]`.
pub fn mlp(rows: u64, inputs: u64, hidden: u64, outputs: u64) -> Program {
    let f32t = |dims: &[u64]| Type::new(DType::F32, dims);
    let mut b = Builder::new();
    let x = b.input("x", f32t(&[rows, inputs])).unwrap();
    let w1 = b.weight("w1", f32t(&[inputs, hidden])).unwrap();
    let b1 = b.weight("b1", f32t(&[hidden])).unwrap();
    let w2 = b.weight("w2", f32t(&[hidden, outputs])).unwrap();
    let h = b.matmul(x, w1).unwrap();
    let bb = b.broadcast(b1, &[rows, hidden], &[1]).unwrap();
    let h = b.binary(BinaryOp::Add, h, bb).unwrap();
    let zero = b.constant(Tensor::f32s(&[], vec![0.0])).unwrap();
    let zb = b.broadcast(zero, &[rows, hidden], &[]).unwrap();
    let h = b.binary(BinaryOp::Max, h, zb).unwrap();
    let y = b.matmul(h, w2).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// Deterministic values in [-1, 1) for `count` elements, varied by `seed`.
pub fn values(count: usize, seed: usize) -> Vec<f32> {
    (0..count)
        .map(|j| ((j * 7919 + seed * 31) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}

/// The weights of `mlp(_, inputs, hidden, outputs)` as `(name, bytes)`.
pub fn mlp_weights(inputs: u64, hidden: u64, outputs: u64) -> Vec<(String, Vec<u8>)> {
    [
        ("w1", inputs * hidden),
        ("b1", hidden),
        ("w2", hidden * outputs),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(name, n))| (name.to_owned(), f32_bytes(&values(n as usize, 100 + i))))
    .collect()
}

/// `mlp(rows, inputs, hidden, outputs)` and a model of it with `mlp_weights`, in a context
/// with 2 threads.
pub fn mlp_model(rows: u64, inputs: u64, hidden: u64, outputs: u64) -> (Program, Model) {
    let list = mlp_weights(inputs, hidden, outputs);
    let named: Vec<(&str, &[u8])> = list
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let context = ModelContext::with_options(SessionOptions::default().with_threads(2)).unwrap();
    let program = mlp(rows, inputs, hidden, outputs);
    let model = Model::with_context(&context, &program, Weights::new(&named).unwrap()).unwrap();
    (program, model)
}

/// Little-endian bytes of `values`.
pub fn f32_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// `bytes` as little-endian f32s.
pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
