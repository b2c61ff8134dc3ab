//! The expansions on the kernel interpreter: special values, and agreement with the reference
//! functions on a sweep (the bounds themselves are asserted on generated code in
//! `accy-accuracy`, and measured exhaustively by `cargo xtask ulp`).

use accy_ir::{DType, UnaryOp};

use crate::kernel::{run_kernel, Node};
use crate::testing::kernels::{elementwise, expanded_for, node};

/// Scaling by `2^n` with one `scaleb` node (the AVX-512 targets' expansions) and with
/// exponent-field arithmetic (every other target's) gives the same bits for each function
/// built on the exponential: both round once, so the choice of target changes no result. A
/// sweep across each function's whole range, through the subnormal results and the overflow
/// threshold, and the special values.
#[test]
fn scaling_with_scale_b_changes_no_result() {
    for dtype in [DType::F32, DType::F64] {
        let (lo, hi) = if dtype == DType::F32 {
            (-110.0, 95.0)
        } else {
            (-760.0, 715.0)
        };
        let steps = 40_000;
        let mut values: Vec<f64> = (0..=steps)
            .map(|i| lo + (hi - lo) * f64::from(i) / f64::from(steps))
            .collect();
        values.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-310,
            -1e-40,
        ]);
        values.extend([
            88.72283172607422,
            88.7228,
            -87.33654,
            -103.97208,
            709.782712893384,
        ]);
        let bytes: Vec<u8> = values
            .iter()
            .flat_map(|&v| match dtype {
                DType::F32 => (v as f32).to_le_bytes().to_vec(),
                _ => v.to_le_bytes().to_vec(),
            })
            .collect();
        let n = values.len();
        for op in [UnaryOp::Exp, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Erf] {
            let k = elementwise(
                "f",
                n as u64,
                &[dtype],
                vec![node(Node::Unary { op, x: 0 }, dtype)],
            );
            let run = |scale_b: bool| {
                let k = expanded_for(k.clone(), scale_b).expect("expands");
                let scales = k
                    .nodes
                    .iter()
                    .any(|n| matches!(n.node, Node::ScaleB { .. }));
                assert_eq!(scales, scale_b, "{op} {dtype}: scaleb nodes");
                let mut input = bytes.clone();
                let mut out = vec![0u8; bytes.len()];
                run_kernel(&k, &mut [&mut input, &mut out]).expect("runs");
                out
            };
            let (plain, scaled) = (run(false), run(true));
            let size = dtype.size_bytes() as usize;
            for (i, (p, s)) in plain.chunks(size).zip(scaled.chunks(size)).enumerate() {
                assert_eq!(p, s, "{op} {dtype} at {}", values[i]);
            }
        }
    }
}
