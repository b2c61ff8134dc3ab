use accy_artifact::Import;
use accy_ir::{BinaryOp, Builder, DType, Tensor, TensorData, Type, UnaryOp};

use super::*;

/// The IR op each import stands for: `Ok(unary)` or `Err(binary)`; `fma` stands for none
/// (its test compares it with `mul_add`).
fn op_of(import: Import) -> Result<UnaryOp, BinaryOp> {
    match import {
        Import::ExpF32 | Import::ExpF64 => Ok(UnaryOp::Exp),
        Import::LogF32 | Import::LogF64 => Ok(UnaryOp::Log),
        Import::TanhF32 | Import::TanhF64 => Ok(UnaryOp::Tanh),
        Import::SigmoidF32 | Import::SigmoidF64 => Ok(UnaryOp::Sigmoid),
        Import::ErfF32 | Import::ErfF64 => Ok(UnaryOp::Erf),
        Import::SinF32 | Import::SinF64 => Ok(UnaryOp::Sin),
        Import::CosF32 | Import::CosF64 => Ok(UnaryOp::Cos),
        Import::FloorF32 | Import::FloorF64 => Ok(UnaryOp::Floor),
        Import::CeilF32 | Import::CeilF64 => Ok(UnaryOp::Ceil),
        Import::RoundF32 | Import::RoundF64 => Ok(UnaryOp::Round),
        Import::PowF32 | Import::PowF64 => Err(BinaryOp::Pow),
        Import::RemF32 | Import::RemF64 | Import::FmaF32 | Import::FmaF64 => Err(BinaryOp::Rem),
    }
}

/// Special values (signed zeros, infinities, NaNs, subnormals, extremes, halves for rounding,
/// values near the transcendental functions' interesting points) plus an ordinary spread.
fn sweep() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.0,
        -7.0,
        88.72,
        -103.9,
        709.78,
        -745.2,
        1e-7,
        -1e-30,
        std::f64::consts::PI,
        std::f64::consts::FRAC_PI_2,
        1e10,
        -1e22,
        8_388_607.5,
        4_503_599_627_370_495.5,
        f32::MAX as f64,
        f32::MIN_POSITIVE as f64,
        1.4e-45,
    ];
    v.extend((-40..=40).map(|i| f64::from(i) * 0.37 + 0.011));
    v
}

/// Bitwise equality, with any NaN equal to any NaN.
fn check_f32(import: Import, args: &[f32], got: f32, want: f32) {
    assert!(
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
        "{import:?}{args:?}: import gives {got:e} ({:#010x}), interpreter {want:e} ({:#010x})",
        got.to_bits(),
        want.to_bits()
    );
}

fn check_f64(import: Import, args: &[f64], got: f64, want: f64) {
    assert!(
        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
        "{import:?}{args:?}: import gives {got:e} ({:#018x}), interpreter {want:e} ({:#018x})",
        got.to_bits(),
        want.to_bits()
    );
}

/// Runs the one-op program `op(x)` or `op(x, y)` on the interpreter, element by element.
fn interpret(op: Result<UnaryOp, BinaryOp>, dtype: DType, args: &[TensorData]) -> TensorData {
    let n = args[0].len() as u64;
    let ty = Type::new(dtype, &[n]);
    let mut b = Builder::new();
    let x = b.input("x", ty.clone()).unwrap();
    let v = match op {
        Ok(u) => b.unary(u, x).unwrap(),
        Err(bin) => {
            let y = b.input("y", ty).unwrap();
            b.binary(bin, x, y).unwrap()
        }
    };
    b.output(v).unwrap();
    let program = b.finish().unwrap();
    let tensors: Vec<Tensor> = args
        .iter()
        .map(|d| Tensor::new(&[n], d.clone()).unwrap())
        .collect();
    let mut out = accy_ir::interp::eval(&program, &tensors).unwrap();
    out.remove(0).into_data()
}

#[test]
fn every_import_matches_the_interpreter_bit_for_bit() {
    let values = sweep();
    // Binary imports get every pair of values.
    let pairs: Vec<(f64, f64)> = values
        .iter()
        .flat_map(|&a| values.iter().map(move |&b| (a, b)))
        .collect();
    for import in Import::ALL {
        let address = IMPORT_TABLE.get(import);
        let op = op_of(import);
        assert_eq!(
            op.is_err(),
            import.is_binary() || import.is_ternary(),
            "{import:?}"
        );
        match ImportFn::of(import) {
            ImportFn::UnaryF32(f) => {
                // SAFETY: the table entry of a unary f32 import is the address of an
                // `extern "C" fn(f32) -> f32` (this test checks the entry equals `f`).
                let g =
                    unsafe { std::mem::transmute::<*const (), extern "C" fn(f32) -> f32>(address) };
                assert_eq!(address, f as *const ());
                let xs: Vec<f32> = values.iter().map(|&v| v as f32).collect();
                let want = interpret(op, DType::F32, &[TensorData::F32(xs.clone())]);
                let TensorData::F32(want) = want else {
                    panic!("f32 result")
                };
                for (x, w) in xs.iter().zip(want) {
                    check_f32(import, &[*x], g(*x), w);
                }
            }
            ImportFn::UnaryF64(f) => {
                // SAFETY: as above, for `extern "C" fn(f64) -> f64`.
                let g =
                    unsafe { std::mem::transmute::<*const (), extern "C" fn(f64) -> f64>(address) };
                assert_eq!(address, f as *const ());
                let want = interpret(op, DType::F64, &[TensorData::F64(values.clone())]);
                let TensorData::F64(want) = want else {
                    panic!("f64 result")
                };
                for (x, w) in values.iter().zip(want) {
                    check_f64(import, &[*x], g(*x), w);
                }
            }
            ImportFn::BinaryF32(f) => {
                // SAFETY: as above, for `extern "C" fn(f32, f32) -> f32`.
                let g = unsafe {
                    std::mem::transmute::<*const (), extern "C" fn(f32, f32) -> f32>(address)
                };
                assert_eq!(address, f as *const ());
                let xs: Vec<f32> = pairs.iter().map(|p| p.0 as f32).collect();
                let ys: Vec<f32> = pairs.iter().map(|p| p.1 as f32).collect();
                let want = interpret(
                    op,
                    DType::F32,
                    &[TensorData::F32(xs.clone()), TensorData::F32(ys.clone())],
                );
                let TensorData::F32(want) = want else {
                    panic!("f32 result")
                };
                for ((x, y), w) in xs.iter().zip(&ys).zip(want) {
                    check_f32(import, &[*x, *y], g(*x, *y), w);
                }
            }
            ImportFn::BinaryF64(f) => {
                // SAFETY: as above, for `extern "C" fn(f64, f64) -> f64`.
                let g = unsafe {
                    std::mem::transmute::<*const (), extern "C" fn(f64, f64) -> f64>(address)
                };
                assert_eq!(address, f as *const ());
                let xs: Vec<f64> = pairs.iter().map(|p| p.0).collect();
                let ys: Vec<f64> = pairs.iter().map(|p| p.1).collect();
                let want = interpret(
                    op,
                    DType::F64,
                    &[TensorData::F64(xs.clone()), TensorData::F64(ys.clone())],
                );
                let TensorData::F64(want) = want else {
                    panic!("f64 result")
                };
                for ((x, y), w) in xs.iter().zip(&ys).zip(want) {
                    check_f64(import, &[*x, *y], g(*x, *y), w);
                }
            }
            ImportFn::TernaryF32(f) => {
                // SAFETY: as above, for `extern "C" fn(f32, f32, f32) -> f32`.
                let g = unsafe {
                    std::mem::transmute::<*const (), extern "C" fn(f32, f32, f32) -> f32>(address)
                };
                assert_eq!(address, f as *const ());
                for &(a, b) in &pairs {
                    for c in [0.0, -1.0, 1e-8, a * b, -(a * b)] {
                        let (a, b, c) = (a as f32, b as f32, c as f32);
                        check_f32(import, &[a, b, c], g(a, b, c), a.mul_add(b, c));
                    }
                }
            }
            ImportFn::TernaryF64(f) => {
                // SAFETY: as above, for `extern "C" fn(f64, f64, f64) -> f64`.
                let g = unsafe {
                    std::mem::transmute::<*const (), extern "C" fn(f64, f64, f64) -> f64>(address)
                };
                assert_eq!(address, f as *const ());
                for &(a, b) in &pairs {
                    for c in [0.0, -1.0, 1e-17, a * b, -(a * b)] {
                        check_f64(import, &[a, b, c], g(a, b, c), a.mul_add(b, c));
                    }
                }
            }
        }
    }
}

#[test]
fn table_is_in_index_order_with_matching_signatures() {
    let entries = IMPORT_TABLE.entries();
    assert_eq!(entries.len(), Import::COUNT);
    for (i, import) in Import::ALL.into_iter().enumerate() {
        assert_eq!(import.index(), i);
        assert!(!entries[i].is_null(), "{import:?}");
        assert_eq!(entries[i], ImportFn::of(import).address(), "{import:?}");
        let (args, f64_args) = match ImportFn::of(import) {
            ImportFn::UnaryF32(_) => (1, false),
            ImportFn::UnaryF64(_) => (1, true),
            ImportFn::BinaryF32(_) => (2, false),
            ImportFn::BinaryF64(_) => (2, true),
            ImportFn::TernaryF32(_) => (3, false),
            ImportFn::TernaryF64(_) => (3, true),
        };
        assert_eq!(args == 2, import.is_binary(), "{import:?}");
        assert_eq!(args == 3, import.is_ternary(), "{import:?}");
        assert_eq!(f64_args, import.is_f64(), "{import:?}");
    }
    assert_eq!(IMPORT_TABLE.as_ptr(), entries.as_ptr());
}
