//! The math expansions (`crate::math`) as every backend runs them: each expanded function,
//! f32 and f64, on edge values, the thresholds each expansion switches at and a spread of
//! ordinary values, compared bit for bit with the kernel interpreter running the same expanded
//! kernel; a fused chain around one (`tanh(x · 0.5 + 0.25) · 1.5`); and whole GELU programs
//! through the planner against the program interpreter (`gelu.rs`). Since the
//! interpreter's result is the expansion's exact arithmetic, this pins every backend's code
//! for the nodes the expansions use (FMA, bit casts, integer shifts, compares, selects) to
//! the one description whose accuracy `accy-accuracy` measures.

use accy_ir::{BinaryOp, DType, UnaryOp};

use super::Conformance;
use crate::kernel::{KernelNode, Node};
use crate::testing::kernels::{edge_values, elementwise, expanded_for, node};

/// The unary ops with an expansion.
pub(crate) const OPS: [UnaryOp; 7] = [
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
    UnaryOp::Sin,
    UnaryOp::Cos,
];

/// Edge values, the points where expansions change path or saturate (and their
/// neighbourhoods), and a spread of ordinary values, as little-endian `dtype` bytes.
fn inputs(dtype: DType) -> (u64, Vec<u8>) {
    let mut values: Vec<f64> = vec![
        88.72283172607422,
        88.7228394,
        88.4,
        -87.3,
        -87.4,
        -103.9,
        -104.5,
        709.782712893384,
        709.79,
        -708.5,
        -744.9,
        -746.0,
        0.55,
        0.5499999,
        // f32 tanh's reduction moves to the next n at odd multiples of ln2 / 4.
        0.17328679,
        0.1732868,
        0.5198604,
        0.51986045,
        1.0,
        0.9999999,
        3.9,
        4.1,
        5.95,
        9.1,
        20.0,
        std::f64::consts::FRAC_PI_4,
        std::f64::consts::PI,
        1e4,
        6.2e6,
        6.6e6,
        1e-40,
        1e-310,
        2.2250738585072014e-308,
        1.1754944e-38,
        f64::from(std::f32::consts::FRAC_1_SQRT_2),
        f64::from(std::f32::consts::SQRT_2),
    ];
    values.extend((-300..300).map(|i| f64::from(i) * 0.3731 + 0.0137));
    values.extend((1..60).map(|i| 1.37f64.powi(i * 4 - 120)));
    let mut bytes: Vec<u8> = edge_values(dtype).concat();
    for v in values {
        for v in [v, -v] {
            match dtype {
                DType::F32 => bytes.extend((v as f32).to_le_bytes()),
                _ => bytes.extend(v.to_le_bytes()),
            }
        }
    }
    let n = bytes.len() as u64 / dtype.size_bytes();
    (n, bytes)
}

pub(super) fn math(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    // As the target's compiles expand them: with its one-instruction scaling, if it has one.
    let scale_b = s.runner().target().has_scale_b();
    for dtype in [DType::F32, DType::F64] {
        let (n, input) = inputs(dtype);
        let output = vec![0xAB; input.len()];
        for op in OPS {
            let k = elementwise(
                &format!("math_{op}_{dtype}"),
                n,
                &[dtype],
                vec![node(Node::Unary { op, x: 0 }, dtype)],
            );
            let k = expanded_for(k, scale_b)?;
            s.check(&k, &[input.clone(), output.clone()], 2)?;
        }
        // y = tanh(x · 0.5 + 0.25) · 1.5: constants shared with the expansion's.
        let c = |v: f64| -> KernelNode {
            let bits = match dtype {
                DType::F32 => u64::from((v as f32).to_bits()),
                _ => v.to_bits(),
            };
            node(Node::Const { bits }, dtype)
        };
        let bin = |op, lhs, rhs| node(Node::Binary { op, lhs, rhs }, dtype);
        let chain = elementwise(
            &format!("tanh_chain_{dtype}"),
            n,
            &[dtype],
            vec![
                c(0.5),
                bin(BinaryOp::Mul, 0, 1),
                c(0.25),
                bin(BinaryOp::Add, 2, 3),
                node(
                    Node::Unary {
                        op: UnaryOp::Tanh,
                        x: 4,
                    },
                    dtype,
                ),
                c(1.5),
                bin(BinaryOp::Mul, 5, 6),
            ],
        );
        s.check(
            &expanded_for(chain, scale_b)?,
            &[input.clone(), output.clone()],
            1,
        )?;
        // pow by each constant exponent with an expansion.
        for e in POW_EXPONENTS {
            let k = elementwise(
                &format!("pow_{e}_{dtype}"),
                n,
                &[dtype],
                vec![c(e), bin(BinaryOp::Pow, 0, 1)],
            );
            let k = expanded_for(k, scale_b)?;
            if k.nodes.iter().any(|n| {
                matches!(
                    n.node,
                    Node::Binary {
                        op: BinaryOp::Pow,
                        ..
                    }
                )
            }) {
                return Err(format!("pow by {e} ({dtype}) did not expand"));
            }
            s.check(&k, &[input.clone(), output.clone()], 2)?;
        }
    }
    // pow(x, y) for f32 (f64 keeps calling the import table), on every pair of the grid.
    let (xs, ys) = pow_grid();
    let k = elementwise(
        "pow_f32",
        xs.len() as u64,
        &[DType::F32, DType::F32],
        vec![node(
            Node::Binary {
                op: BinaryOp::Pow,
                lhs: 0,
                rhs: 1,
            },
            DType::F32,
        )],
    );
    let k = expanded_for(k, scale_b)?;
    let x: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
    let y: Vec<u8> = ys.iter().flat_map(|v| v.to_le_bytes()).collect();
    let out = vec![0xAB; x.len()];
    s.check(&k, &[x, y, out], 3)?;
    super::gelu::gelu(s)
}

#[cfg(test)]
/// The `pow` kernels default mode turns into vector code, expanded as `scale_b` says: f32 and
/// f64 `pow` by each of [`POW_EXPONENTS`], and f32 `pow(x, y)`; each with its dtype.
pub(crate) fn pow_kernels(
    scale_b: bool,
) -> Result<Vec<(crate::kernel::LoopKernel, DType)>, String> {
    let mut kernels = Vec::new();
    for dtype in [DType::F32, DType::F64] {
        for e in POW_EXPONENTS {
            let bits = match dtype {
                DType::F32 => u64::from((e as f32).to_bits()),
                _ => e.to_bits(),
            };
            let pow = Node::Binary {
                op: BinaryOp::Pow,
                lhs: 0,
                rhs: 1,
            };
            let k = elementwise(
                &format!("pow_{e}_{dtype}"),
                100,
                &[dtype],
                vec![node(Node::Const { bits }, dtype), node(pow, dtype)],
            );
            kernels.push((expanded_for(k, scale_b)?, dtype));
        }
    }
    let pow = Node::Binary {
        op: BinaryOp::Pow,
        lhs: 0,
        rhs: 1,
    };
    let k = elementwise(
        "pow_f32",
        100,
        &[DType::F32, DType::F32],
        vec![node(pow, DType::F32)],
    );
    kernels.push((expanded_for(k, scale_b)?, DType::F32));
    Ok(kernels)
}

/// The constant exponents `pow` expands for (`crate::math`'s `power.rs`).
pub(crate) const POW_EXPONENTS: [f64; 7] = [0.0, 1.0, 2.0, 3.0, 4.0, 0.5, -1.0];

/// Every `x` of a grid of special and ordinary values with every `y` of another, as
/// `(xs, ys)` of the same length: zeros, ±1, infinities, NaN, subnormals, integers odd and
/// even (2^23 + 1 is odd, 2^24 + 2 even), non-integers, and exponents that overflow and
/// underflow.
pub(crate) fn pow_grid() -> (Vec<f32>, Vec<f32>) {
    let xs: Vec<f32> = [
        0.0f32,
        1.0,
        0.5,
        2.0,
        3.0,
        f32::INFINITY,
        1e-40,
        f32::MIN_POSITIVE,
        0.999_999_9,
        1.000_000_1,
        1.5,
        10.0,
        3.4e38,
        7.7,
    ]
    .iter()
    .flat_map(|&v| [v, -v])
    .chain([f32::NAN])
    .collect();
    let ys: Vec<f32> = [
        0.0f32,
        1.0,
        2.0,
        3.0,
        0.5,
        2.5,
        f32::INFINITY,
        8_388_609.0,
        16_777_218.0,
        1e10,
        127.0,
        -149.5,
        0.333_333_34,
        1e-30,
        40.0,
    ]
    .iter()
    .flat_map(|&v| [v, -v])
    .chain([f32::NAN])
    .collect();
    let pairs: Vec<(f32, f32)> = xs
        .iter()
        .flat_map(|&x| ys.iter().map(move |&y| (x, y)))
        .collect();
    pairs.into_iter().unzip()
}
