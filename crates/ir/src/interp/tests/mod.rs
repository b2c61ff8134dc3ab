//! Unit tests of the interpreter: tiny programs built with [`Builder`] and evaluated, each
//! compared with results computed by hand from the op docs.

mod binary;
mod convert;
mod dot;
mod errors;
mod movement;
mod reduce;
mod unary;

use super::eval;
use crate::{BuildError, Builder, Tensor, TensorData, ValueId};

/// Evaluates the one-output program whose inputs are `inputs` (named `x0`, `x1`, …) and whose
/// output is the value `body` builds from them.
fn run(
    inputs: &[Tensor],
    body: impl FnOnce(&mut Builder, &[ValueId]) -> Result<ValueId, BuildError>,
) -> Tensor {
    let mut b = Builder::new();
    let ids: Vec<ValueId> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| b.input(&format!("x{i}"), t.ty()).unwrap())
        .collect();
    let out = body(&mut b, &ids).unwrap();
    b.output(out).unwrap();
    let program = b.finish().unwrap();
    let mut outputs = eval(&program, inputs).unwrap();
    assert_eq!(outputs.len(), 1);
    outputs.remove(0)
}

fn f32v(v: &[f32]) -> Tensor {
    Tensor::f32s(&[v.len() as u64], v.to_vec())
}
fn f64v(v: &[f64]) -> Tensor {
    Tensor::f64s(&[v.len() as u64], v.to_vec())
}
fn i32v(v: &[i32]) -> Tensor {
    Tensor::i32s(&[v.len() as u64], v.to_vec())
}
fn i64v(v: &[i64]) -> Tensor {
    Tensor::i64s(&[v.len() as u64], v.to_vec())
}
fn u8v(v: &[u8]) -> Tensor {
    Tensor::u8s(&[v.len() as u64], v.to_vec())
}
fn boolv(v: &[bool]) -> Tensor {
    Tensor::bools(&[v.len() as u64], v.to_vec())
}

/// Asserts `actual` holds exactly `expected` (bit for bit, so the sign of zero counts), except
/// that any NaN matches any NaN: the op docs leave a produced NaN's payload and sign open.
fn assert_floats(actual: &Tensor, dims: &[u64], expected: &[f64]) {
    assert_eq!(actual.dims(), dims, "dims of {actual:?}");
    let got: Vec<(f64, u64)> = match actual.data() {
        TensorData::F32(v) => v
            .iter()
            .map(|&x| (f64::from(x), u64::from(x.to_bits())))
            .collect(),
        TensorData::F64(v) => v.iter().map(|&x| (x, x.to_bits())).collect(),
        other => panic!("expected floats, got {other:?}"),
    };
    assert_eq!(got.len(), expected.len(), "length of {actual:?}");
    for (i, (&(g, g_bits), &e)) in got.iter().zip(expected).enumerate() {
        let e_bits = match actual.data() {
            TensorData::F32(_) => u64::from((e as f32).to_bits()),
            _ => e.to_bits(),
        };
        let same = (g.is_nan() && e.is_nan()) || g_bits == e_bits;
        assert!(same, "element {i}: got {g:?}, expected {e:?} in {actual:?}");
    }
}

/// Asserts f32 results exactly (see [`assert_floats`]).
fn assert_f32(actual: &Tensor, expected: &[f32]) {
    let expected: Vec<f64> = expected.iter().map(|&x| f64::from(x)).collect();
    assert_floats(actual, &[expected.len() as u64], &expected);
}

/// Asserts f64 results exactly (see [`assert_floats`]).
fn assert_f64(actual: &Tensor, expected: &[f64]) {
    assert_floats(actual, &[expected.len() as u64], expected);
}

/// Asserts results of approximated functions within `tolerance` (exact for NaN and infinities).
fn assert_close(actual: &Tensor, expected: &[f64], tolerance: f64) {
    let got: Vec<f64> = match actual.data() {
        TensorData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        TensorData::F64(v) => v.clone(),
        other => panic!("expected floats, got {other:?}"),
    };
    assert_eq!(got.len(), expected.len());
    for (i, (&g, &e)) in got.iter().zip(expected).enumerate() {
        let ok = if e.is_nan() {
            g.is_nan()
        } else if e.is_infinite() {
            g == e
        } else {
            (g - e).abs() <= tolerance
        };
        assert!(ok, "element {i}: got {g:?}, expected {e:?}");
    }
}
