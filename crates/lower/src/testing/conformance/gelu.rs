//! GELU after a bias add, whole programs through the planner: `v = x + b` (the bias broadcast
//! along the rows), then `0.5 · v · (1 + erf(v / √2))` or the tanh form `0.5 · v · (1 +
//! tanh(√(2/π) · (v + 0.044715 · v³)))`, f32 and f64, fused into one kernel. Inputs: a ramp
//! over [-10, 10] with `±inf`, NaN, `±0`, subnormals and `±1e30` written over it. Exact mode
//! must give the interpreter's bits (NaN anywhere it has NaN); default mode (the expansions,
//! FMA) is within the bound of [`close`], stated from the functions' ULP bounds.

use accy_ir::{interp, text, DType, Tensor, TensorData};

use super::Conformance;
use crate::testing::run_artifact;

const ROWS: usize = 6;
const COLS: usize = 37;

/// The program of one form for `dtype` (`f32` or `f64`).
fn program(erf: bool, dtype: DType) -> String {
    let t = format!("{dtype}[{ROWS},{COLS}]");
    let constant = |name: &str, v: f64| {
        format!(
            "  %{name}0 = constant {v:?} : {dtype}[]\n  \
             %{name} = broadcast %{name}0, dims=[{ROWS},{COLS}], axes=[] : {t}\n"
        )
    };
    let mut body = String::new();
    body += &constant("half", 0.5);
    body += &constant("one", 1.0);
    if erf {
        body += &constant("k", std::f64::consts::FRAC_1_SQRT_2);
        body += &format!("  %z = mul %v, %k : {t}\n  %g = erf %z : {t}\n");
    } else {
        body += &constant("a", 0.044715);
        body += &constant("k", 0.7978845608028654);
        body += &format!(
            "  %v2 = mul %v, %v : {t}\n  %v3 = mul %v2, %v : {t}\n  \
             %w = mul %v3, %a : {t}\n  %s = add %v, %w : {t}\n  \
             %z = mul %s, %k : {t}\n  %g = tanh %z : {t}\n"
        );
    }
    format!(
        "program {{
  %x = input \"x\" : {t}
  %b = input \"b\" : {dtype}[{COLS}]
  %bb = broadcast %b, dims=[{ROWS},{COLS}], axes=[1] : {t}
  %v = add %x, %bb : {t}
{body}  %p = add %g, %one : {t}
  %h = mul %v, %half : {t}
  %y = mul %h, %p : {t}
  output %y
}}"
    )
}

/// The input `x` (row-major) and the bias `b`, as f64 values.
fn inputs() -> (Vec<f64>, Vec<f64>) {
    let n = ROWS * COLS;
    let mut x: Vec<f64> = (0..n).map(|i| -10.0 + 20.0 * i as f64 / n as f64).collect();
    let edges = [
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        0.0,
        -0.0,
        1e-40,
        -1e-40,
        1e30,
        -1e30,
        -5.5,
        3.25,
    ];
    for (i, v) in edges.into_iter().enumerate() {
        x[i * 7] = v;
    }
    let b = (0..COLS).map(|c| (c % 5) as f64 * 0.125 - 0.25).collect();
    (x, b)
}

/// Whether `actual` may stand for `expected` (`v` the pre-activation there): the same bits
/// or both NaN; in default mode also within `16 ε (|expected| + |v|)` plus 16 steps of the
/// smallest subnormal. That covers `erf` and `tanh` within 2 ULP of a result of magnitude at
/// most 1 (an absolute error of `2 ε` in `1 + erf`, scaled by `0.5 |v|`), the rounding of each
/// of the six other operations, and FMA contraction.
fn close(expected: f64, actual: f64, v: f64, eps: f64, tiny: f64, exact: bool) -> bool {
    if expected.to_bits() == actual.to_bits() || (expected.is_nan() && actual.is_nan()) {
        return true;
    }
    !exact && (expected - actual).abs() <= 16.0 * (eps * (expected.abs() + v.abs()) + tiny)
}

pub(super) fn gelu(s: &mut Conformance<'_>) -> Result<(), String> {
    let (x, b) = inputs();
    let exact = !s.options.reassociate;
    for dtype in [DType::F32, DType::F64] {
        for erf in [true, false] {
            let source = program(erf, dtype);
            let program = text::parse(&source).map_err(|e| format!("{e}\n{source}"))?;
            let compiled = crate::compile_detailed(&program, s.runner.target(), &s.options)
                .map_err(|e| format!("compile failed: {e}\n{source}"))?;
            let kernels = compiled.kernels.len();
            if kernels != 1 {
                return Err(format!("{kernels} kernels, not one fused one\n{source}"));
            }
            let data = |v: &[f64]| match dtype {
                DType::F32 => TensorData::F32(v.iter().map(|&v| v as f32).collect()),
                _ => TensorData::F64(v.to_vec()),
            };
            let (eps, tiny) = match dtype {
                DType::F32 => (f64::from(f32::EPSILON), f64::from(f32::from_bits(1))),
                _ => (f64::EPSILON, f64::from_bits(1)),
            };
            let tensor = |dims: &[u64], v: &[f64]| Tensor::new(dims, data(v));
            let args = [
                tensor(&[ROWS as u64, COLS as u64], &x),
                tensor(&[COLS as u64], &b),
            ]
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
            let expected = interp::eval(&program, &args).map_err(|e| e.to_string())?;
            let actual = run_artifact(&compiled.artifact, &program, &args, s.runner)?;
            let values = |t: Option<&Tensor>| -> Vec<f64> {
                match t.map(Tensor::data) {
                    Some(TensorData::F32(v)) => v.iter().map(|&v| f64::from(v)).collect(),
                    Some(TensorData::F64(v)) => v.clone(),
                    _ => Vec::new(),
                }
            };
            let (e, a) = (values(expected.first()), values(actual.first()));
            if e.len() != ROWS * COLS || a.len() != e.len() {
                return Err(format!("{} and {} values\n{source}", e.len(), a.len()));
            }
            for (i, (&e, &a)) in e.iter().zip(&a).enumerate() {
                let v = x[i] + b[i % COLS];
                if !close(e, a, v, eps, tiny, exact) {
                    return Err(format!(
                        "element {i}: expected {e:e}, got {a:e} (v = {v:e})\n{source}"
                    ));
                }
            }
            s.checked += 1;
        }
    }
    Ok(())
}
