//! Runs one ONNX backend node test (a directory with `model.onnx` and `test_data_set_*/`)
//! through the importer and accy's JIT, and prints one line: `PASS`, `UNSUPPORTED <reason>` or
//! `FAIL <reason>`. `cargo xtask onnx-conformance` runs it once per test, so a crash or a hang
//! is caught as a failure of that test alone.
//!
//! Inputs whose value a node needs at import time (a `Reshape` shape, `Slice` bounds, …) are
//! folded as constants from the test data, named by the importer's `NeedsConstant` error; every
//! other input stays a run-time input. Outputs are compared as the ONNX backend tests do:
//! floats within `|got - expected| <= 1e-7 + 1e-3 |expected|` (NaN matches NaN), everything
//! else exactly.

#![allow(
    clippy::print_stdout,
    reason = "the result line is the program's output"
)]

use std::path::{Path, PathBuf};

use accy_ir::{interp, DType, Tensor, TensorData};
use accy_onnx::{ErrorKind, ImportOptions, Model};
use accy_session::{Scratch, Session, Weights};

const RTOL: f64 = 1e-3;
const ATOL: f64 = 1e-7;

enum Outcome {
    Pass,
    Unsupported(String),
    Fail(String),
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        println!("FAIL usage: node_test <test directory>");
        std::process::exit(2);
    };
    match run(Path::new(&dir)) {
        Outcome::Pass => println!("PASS"),
        Outcome::Unsupported(m) => println!("UNSUPPORTED {}", one_line(&m)),
        Outcome::Fail(m) => println!("FAIL {}", one_line(&m)),
    }
}

fn one_line(m: &str) -> String {
    m.replace('\n', " | ")
}

/// The tensors `dir/<prefix>_<i>.pb` for i = 0, 1, … as (name, value).
fn read_tensors(dir: &Path, prefix: &str) -> Result<Vec<(String, Tensor)>, String> {
    let mut out = Vec::new();
    for i in 0.. {
        let path = dir.join(format!("{prefix}_{i}.pb"));
        if !path.exists() {
            break;
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(accy_onnx::read_tensor(&bytes).map_err(|e| format!("{}: {e}", path.display()))?);
    }
    Ok(out)
}

fn data_sets(dir: &Path) -> Vec<PathBuf> {
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("test_data_set_"))
                })
                .collect()
        })
        .unwrap_or_default();
    sets.sort();
    sets
}

fn run(dir: &Path) -> Outcome {
    let model_bytes = match std::fs::read(dir.join("model.onnx")) {
        Ok(b) => b,
        Err(e) => return Outcome::Fail(format!("reading model.onnx: {e}")),
    };
    let sets = data_sets(dir);
    if sets.is_empty() {
        return Outcome::Fail("no test_data_set_* directory".into());
    }
    for set in &sets {
        let outcome = run_set(&model_bytes, dir, set);
        if !matches!(outcome, Outcome::Pass) {
            return outcome;
        }
    }
    Outcome::Pass
}

/// Imports the model for one data set, folding inputs the importer asks for as constants.
fn import(bytes: &[u8], dir: &Path, inputs: &[(String, Tensor)]) -> Result<Model, Outcome> {
    let mut options = ImportOptions {
        base_dir: Some(dir.to_path_buf()),
        ..ImportOptions::default()
    };
    for (name, t) in inputs {
        options.shapes.insert(name.clone(), t.dims().to_vec());
    }
    loop {
        match accy_onnx::import(bytes, &options) {
            Ok(m) => return Ok(m),
            Err(e) => match &e.kind {
                ErrorKind::NeedsConstant { value } => {
                    // Fold the input named; for a value computed from inputs, fold every
                    // integer input (sizes, axes, indices), once.
                    let before = options.constants.len();
                    for (n, t) in inputs {
                        let integer = matches!(t.dtype(), DType::I32 | DType::I64);
                        if n == value || (integer && !inputs.iter().any(|(m, _)| m == value)) {
                            options
                                .constants
                                .entry(n.clone())
                                .or_insert_with(|| t.clone());
                        }
                    }
                    if options.constants.len() == before {
                        return Err(Outcome::Unsupported(e.message));
                    }
                }
                ErrorKind::Unsupported => return Err(Outcome::Unsupported(e.message)),
                _ => return Err(Outcome::Fail(format!("import: {e}"))),
            },
        }
    }
}

fn run_set(bytes: &[u8], dir: &Path, set: &Path) -> Outcome {
    let data = read_tensors(set, "input").and_then(|i| Ok((i, read_tensors(set, "output")?)));
    let (inputs, expected) = match data {
        Ok(d) => d,
        // Data accy cannot hold (f16, strings, …): report why the model is refused, if it is.
        Err(e) => {
            return match import(bytes, dir, &[]) {
                Err(outcome) => outcome,
                Ok(_) => Outcome::Unsupported(format!("test data: {e}")),
            }
        }
    };
    let model = match import(bytes, dir, &inputs) {
        Ok(m) => m,
        Err(o) => return o,
    };
    // The program's inputs in order, each with its data from the test set.
    let mut args = Vec::new();
    for (i, input) in model.inputs.iter().enumerate() {
        let Some(param) = &input.param else { continue };
        let value = inputs
            .iter()
            .find(|(n, _)| *n == input.onnx_name)
            .or_else(|| inputs.get(i))
            .map(|(_, t)| t.clone());
        match value {
            Some(t) => args.push((param.clone(), t)),
            None => return Outcome::Fail(format!("no test data for input `{}`", input.onnx_name)),
        }
    }
    if expected.len() != model.outputs.len() {
        return Outcome::Fail(format!(
            "{} expected outputs but the model has {}",
            expected.len(),
            model.outputs.len()
        ));
    }
    let got = match run_jit(&model, &args) {
        Ok(g) => g,
        Err(e) => return Outcome::Fail(e),
    };
    for (i, ((name, want), have)) in expected.iter().zip(&got).enumerate() {
        if let Err(why) = compare(want, have) {
            let oracle = interpret(&model, &args)
                .map(|outs| match outs.get(i).map(|t| compare(want, t)) {
                    Some(Ok(())) => "the interpreter agrees with ONNX, so the JIT is wrong".into(),
                    Some(Err(_)) => "the interpreter disagrees with ONNX too".into(),
                    None => "the interpreter gave no such output".into(),
                })
                .unwrap_or_else(|e| format!("the interpreter failed: {e}"));
            return Outcome::Fail(format!("output {i} `{name}`: {why} ({oracle})"));
        }
    }
    Outcome::Pass
}

/// The program's parameters in order: inputs from `args`, weights from the model.
fn params(model: &Model, args: &[(String, Tensor)]) -> Result<Vec<Tensor>, String> {
    model
        .program
        .params
        .iter()
        .map(|p| {
            args.iter()
                .chain(&model.weights)
                .find(|(n, _)| *n == p.name)
                .map(|(_, t)| t.clone())
                .ok_or_else(|| format!("no value for parameter `{}`", p.name))
        })
        .collect()
}

fn interpret(model: &Model, args: &[(String, Tensor)]) -> Result<Vec<Tensor>, String> {
    let values = params(model, args)?;
    interp::eval(&model.program, &values).map_err(|e| e.to_string())
}

/// An 8-byte aligned buffer, as `invoke` needs for every dtype.
struct Buffer {
    words: Vec<u64>,
    len: usize,
}

impl Buffer {
    fn new(bytes: &[u8]) -> Buffer {
        let mut b = Buffer {
            words: vec![0u64; bytes.len().div_ceil(8)],
            len: bytes.len(),
        };
        b.as_mut().copy_from_slice(bytes);
        b
    }

    fn as_ref(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    fn as_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

fn run_jit(model: &Model, args: &[(String, Tensor)]) -> Result<Vec<Tensor>, String> {
    let session = Session::new().map_err(|e| format!("session: {e}"))?;
    let weight_bytes: Vec<(&str, Vec<u8>)> = model
        .weights
        .iter()
        .map(|(n, t)| (n.as_str(), t.data().to_le_bytes()))
        .collect();
    let refs: Vec<(&str, &[u8])> = weight_bytes
        .iter()
        .map(|(n, b)| (*n, b.as_slice()))
        .collect();
    let weights = Weights::new(&refs).map_err(|e| format!("weights: {e}"))?;
    let handle = session
        .compile_program_with_weights(&model.program, &weights)
        .map_err(|e| format!("compile: {e} ({:?})", e.cause().map(|c| c.to_string())))?;
    let in_bufs: Vec<Buffer> = args
        .iter()
        .map(|(_, t)| Buffer::new(&t.data().to_le_bytes()))
        .collect();
    let descriptors = session.outputs(handle).map_err(|e| e.to_string())?;
    let mut out_bufs: Vec<Buffer> = descriptors
        .iter()
        .map(|d| Buffer::new(&vec![0u8; d.byte_size]))
        .collect();
    let ins: Vec<&[u8]> = in_bufs.iter().map(Buffer::as_ref).collect();
    let mut outs: Vec<&mut [u8]> = out_bufs.iter_mut().map(Buffer::as_mut).collect();
    let mut scratch = Scratch::new();
    session
        .invoke(handle, &mut scratch, &ins, &mut outs)
        .map_err(|e| format!("invoke: {e}"))?;
    descriptors
        .iter()
        .zip(&out_bufs)
        .map(|(d, b)| {
            TensorData::from_le_bytes(d.dtype, b.as_ref())
                .and_then(|data| Tensor::new(&d.dims, data).ok())
                .ok_or_else(|| "an output buffer does not hold its type".to_owned())
        })
        .collect()
}

/// Compares as the ONNX backend tests do (`assert_allclose` for floats, equality otherwise).
fn compare(want: &Tensor, have: &Tensor) -> Result<(), String> {
    if want.ty() != have.ty() {
        return Err(format!("expected {}, got {}", want.ty(), have.ty()));
    }
    let close = |w: f64, h: f64| {
        (w.is_nan() && h.is_nan()) || w == h || (w - h).abs() <= ATOL + RTOL * w.abs()
    };
    let bad = match (want.data(), have.data()) {
        (TensorData::F32(w), TensorData::F32(h)) => w
            .iter()
            .zip(h)
            .position(|(&a, &b)| !close(f64::from(a), f64::from(b))),
        (TensorData::F64(w), TensorData::F64(h)) => {
            w.iter().zip(h).position(|(&a, &b)| !close(a, b))
        }
        (w, h) => {
            let size = want.dtype().size_bytes() as usize;
            let (w, h) = (w.to_le_bytes(), h.to_le_bytes());
            w.chunks(size).zip(h.chunks(size)).position(|(a, b)| a != b)
        }
    };
    match bad {
        None => Ok(()),
        Some(i) => Err(format!(
            "element {i} differs: expected {}, got {}",
            element(want, i),
            element(have, i)
        )),
    }
}

fn element(t: &Tensor, i: usize) -> String {
    match t.data() {
        TensorData::F32(v) => v.get(i).map(|x| format!("{x:e}")),
        TensorData::F64(v) => v.get(i).map(|x| format!("{x:e}")),
        TensorData::I32(v) => v.get(i).map(|x| x.to_string()),
        TensorData::I64(v) => v.get(i).map(|x| x.to_string()),
        TensorData::U8(v) => v.get(i).map(|x| x.to_string()),
        TensorData::Bool(v) => v.get(i).map(|x| x.to_string()),
        _ => None,
    }
    .unwrap_or_default()
}
