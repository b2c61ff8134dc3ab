//! A row softmax in the group's mode, with rows of edge values: `+inf`, NaN, all `-inf`,
//! `±1e30`, deep underflow, `±0` and subnormals. In default mode its `exp` is expanded without
//! an overflow guard where the target scales in one instruction (`x - max(x)` is at most zero
//! or NaN, `plan/facts.rs`), and its terms are stored while they are summed
//! (`crate::kernel::Keep`): NaN must come out where the interpreter's does, and every other
//! value within a few ULPs of it (exactly, in exact mode). The kernel computing the `exp`
//! must carry the fact, so the test cannot pass by its being lost on the way; the
//! expansion without the guard is checked bit for bit against the guarded one on any host
//! in `math/tests.rs`.

use accy_ir::{interp, text, Tensor, TensorData};

use super::Conformance;
use crate::testing::run_artifact;

const ROWS: usize = 8;
const COLS: usize = 40;

/// The input: row `r` is a ramp with the edge values of case `r` written over it.
fn input() -> Vec<f32> {
    let mut x: Vec<f32> = (0..ROWS * COLS)
        .map(|i| (i % 37) as f32 * 0.25 - 4.0)
        .collect();
    let mut set = |r: usize, c: usize, v: f32| x[r * COLS + c] = v;
    set(1, 5, f32::INFINITY);
    set(2, 7, f32::NAN);
    for c in 0..COLS {
        set(3, c, f32::NEG_INFINITY);
        set(5, c, -200.0);
    }
    set(4, 0, 1e30);
    set(4, 1, -1e30);
    set(5, 3, 0.0);
    set(6, 9, f32::NEG_INFINITY);
    for (c, v) in [0.0, -0.0, 1e-40, -1e-40, 88.0, 89.0, 100.0]
        .into_iter()
        .enumerate()
    {
        set(7, c, v);
    }
    x
}

pub(super) fn softmax_edges(s: &mut Conformance<'_>) -> Result<(), String> {
    let source = format!(
        "program {{
  %x = input \"x\" : f32[{ROWS},{COLS}]
  %m = reduce max %x, axes=[1] : f32[{ROWS}]
  %mb = broadcast %m, dims=[{ROWS},{COLS}], axes=[0] : f32[{ROWS},{COLS}]
  %d = sub %x, %mb : f32[{ROWS},{COLS}]
  %e = exp %d : f32[{ROWS},{COLS}]
  %s = reduce sum %e, axes=[1] : f32[{ROWS}]
  %sb = broadcast %s, dims=[{ROWS},{COLS}], axes=[0] : f32[{ROWS},{COLS}]
  %y = div %e, %sb : f32[{ROWS},{COLS}]
  output %y
}}"
    );
    let program = text::parse(&source).map_err(|e| e.to_string())?;
    let options = s.options.clone();
    let compiled = crate::compile_detailed(&program, s.runner.target(), &options)
        .map_err(|e| format!("compile failed: {e}"))?;
    // The fact reaches the kernel that computes the exp (which uses it where it scales in
    // one instruction), whether the exp is stored while summed or recomputed.
    let proved = compiled
        .kernels
        .iter()
        .filter_map(crate::kernel::Kernel::as_loop)
        .any(|k| !k.at_most_zero.is_empty());
    if !proved {
        return Err(format!(
            "no kernel knows x - max(x) is at most zero\n{source}"
        ));
    }
    let args = [
        Tensor::new(&[ROWS as u64, COLS as u64], TensorData::F32(input()))
            .map_err(|e| e.to_string())?,
    ];
    let expected = interp::eval(&program, &args).map_err(|e| e.to_string())?;
    let actual = run_artifact(&compiled.artifact, &program, &args, s.runner)?;
    let (Some(TensorData::F32(e)), Some(TensorData::F32(a))) = (
        expected.first().map(Tensor::data),
        actual.first().map(Tensor::data),
    ) else {
        return Err("the softmax returned no f32 tensor".into());
    };
    // Default mode: exp within 1 ULP, a reassociated sum of at most 40 terms, one division;
    // as many of the smallest subnormal's steps near zero.
    let ulps = if options.reassociate { 48.0 } else { 0.0 };
    let (eps, tiny) = (f64::from(f32::EPSILON), f64::from(f32::from_bits(1)));
    for (i, (&e, &a)) in e.iter().zip(a.iter()).enumerate() {
        let bound = ulps * (eps * f64::from(e.abs()) + tiny);
        let close = (e.is_nan() && a.is_nan())
            || e.to_bits() == a.to_bits()
            || (f64::from(e) - f64::from(a)).abs() <= bound;
        if !close {
            return Err(format!(
                "softmax row {} column {}: expected {e:e}, got {a:e} (input {:e})\n{source}",
                i / COLS,
                i % COLS,
                input()[i]
            ));
        }
    }
    s.checked += 1;
    Ok(())
}
