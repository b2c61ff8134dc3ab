//! The expansions on the kernel interpreter: special values, and agreement with the reference
//! functions on a sweep (the bounds themselves are asserted on generated code in
//! `accy-accuracy`, and measured exhaustively by `cargo xtask ulp`).

use accy_ir::{DType, UnaryOp};

use crate::kernel::{run_kernel, Node};
use crate::testing::kernels::{elementwise, expanded_for, node};

/// `values` rounded to `dtype` (f32 or f64), as little-endian bytes.
fn le_bytes(values: &[f64], dtype: DType) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| match dtype {
            DType::F32 => (v as f32).to_le_bytes().to_vec(),
            _ => v.to_le_bytes().to_vec(),
        })
        .collect()
}

/// Scaling by `2^n` with one `scaleb` node (the AVX-512 targets' expansions) and with
/// exponent-field arithmetic (every other target's) gives the same bits for each function
/// built on the exponential: both round once, so the choice of target changes no result. A
/// sweep across each function's whole range, through the subnormal results and the overflow
/// threshold, and the special values. A NaN comes out NaN on both, its sign and payload
/// unspecified (as the IR leaves them): `sigmoid`'s `scaleb` form returns the one its
/// arithmetic makes, where the other selects the argument.
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
            // Past the overflow threshold, up to and past where `scaleb` targets clamp.
            88.72283935546875,
            f64::from_bits(709.782712893384f64.to_bits() + 1),
            88.9,
            89.0,
            89.5,
            709.9,
            710.0,
            710.5,
            1e30,
            3.4e38,
            1e300,
        ]);
        let bytes = le_bytes(&values, dtype);
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
            let nan = |b: &[u8]| match dtype {
                DType::F32 => f32::from_le_bytes(b.try_into().expect("4 bytes")).is_nan(),
                _ => f64::from_le_bytes(b.try_into().expect("8 bytes")).is_nan(),
            };
            for (i, (p, s)) in plain.chunks(size).zip(scaled.chunks(size)).enumerate() {
                if !(nan(p) && nan(s)) {
                    assert_eq!(p, s, "{op} {dtype} at {}", values[i]);
                }
            }
        }
    }
}

/// `pow` by each constant exponent with an expansion, against the platform's `pow` (which
/// exact mode calls): the same special values (signed zeros, infinities, NaN), and within one
/// ULP elsewhere (the platform's `pow` is within one), over edge values, the overflow and
/// underflow boundaries of `x³` and `x⁴`, and a sweep of magnitudes; and for f32 the nearest
/// float to the true power, for all but a rare `x³` or `x⁴`.
#[test]
fn pow_by_constant_exponents_matches_the_platform_pow() {
    use crate::testing::conformance::math::POW_EXPONENTS;
    let mut values: Vec<f64> = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1e-45,
        1e-40,
        1e-310,
        4.9e-324,
        3.4e38,
        1.7e308,
        // x³ and x⁴ near f32's overflow (2^128) and underflow thresholds, f64's too.
        6.98e12,
        6.99e12,
        4.2949e9,
        4.2950e9,
        1.8446743e19,
        1.8446744e19,
        5.64e102,
        5.65e102,
        1.34e154,
        1.35e154,
        1.158e77,
        1.159e77,
        1.5e-81,
        1.4e-81,
        3.4e38,
        2.6e-26,
        3.2e-20,
        2.5e-78,
        1.5e-77,
        1e-15,
        1e-26,
        1e-108,
    ];
    values.extend((1..400).map(|i| 1.173f64.powi(i - 200) * (1.0 + f64::from(i) * 1e-3)));
    let values: Vec<f64> = values.iter().flat_map(|&v| [v, -v]).collect();
    for dtype in [DType::F32, DType::F64] {
        let bytes = le_bytes(&values, dtype);
        let n = values.len();
        for e in POW_EXPONENTS {
            let bits = match dtype {
                DType::F32 => u64::from((e as f32).to_bits()),
                _ => e.to_bits(),
            };
            let k = elementwise(
                "pow",
                n as u64,
                &[dtype],
                vec![
                    node(Node::Const { bits }, dtype),
                    node(
                        Node::Binary {
                            op: accy_ir::BinaryOp::Pow,
                            lhs: 0,
                            rhs: 1,
                        },
                        dtype,
                    ),
                ],
            );
            let k = expanded_for(k, false).expect("expands");
            assert!(
                !k.nodes.iter().any(|n| matches!(
                    n.node,
                    Node::Binary {
                        op: accy_ir::BinaryOp::Pow,
                        ..
                    }
                )),
                "pow by {e} did not expand"
            );
            let mut input = bytes.clone();
            let mut out = vec![0u8; bytes.len()];
            run_kernel(&k, &mut [&mut input, &mut out]).expect("runs");
            let mut not_nearest = 0;
            for (i, &x) in values.iter().enumerate() {
                let (got, want, ulps) = match dtype {
                    DType::F32 => {
                        let got = f32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
                        let want = (x as f32).powf(e as f32);
                        // The f64 power, rounded to f32: exact for x² and 1/x and √x (f64
                        // holds twice f32's bits and more), and for x³ and x⁴ but for a rare
                        // double rounding. Below 2^-100 the correction term of x³ and x⁴ is
                        // subnormal and may cost an ULP (`power.rs`): checked within one only.
                        let nearest = (f64::from(x as f32)).powf(e) as f32;
                        let tiny = nearest.abs() < 2f32.powi(-100) && (e == 3.0 || e == 4.0);
                        if got.to_bits() != nearest.to_bits()
                            && !(got.is_nan() && nearest.is_nan())
                            && !tiny
                        {
                            assert!(e == 3.0 || e == 4.0, "pow({x:e}, {e}) f32: {got:e}");
                            not_nearest += 1;
                        }
                        let d = (got.to_bits() as i64 - want.to_bits() as i64).unsigned_abs();
                        (f64::from(got), f64::from(want), d)
                    }
                    _ => {
                        let got = f64::from_le_bytes(out[8 * i..8 * i + 8].try_into().unwrap());
                        let want = x.powf(e);
                        let d = (got.to_bits() as i64).abs_diff(want.to_bits() as i64);
                        (got, want, d)
                    }
                };
                let special = !want.is_finite() || want == 0.0;
                let ok = if want.is_nan() {
                    got.is_nan()
                } else if special {
                    got.to_bits() == want.to_bits()
                } else {
                    got.signum() == want.signum() && ulps <= 1
                };
                assert!(ok, "pow({x:e}, {e}) {dtype}: {got:e}, platform {want:e}");
            }
            // Two roundings (a plain x·x·x) miss the nearest float about a fifth of the time.
            assert!(
                not_nearest <= 2,
                "pow by {e}: {not_nearest} results not the nearest"
            );
        }
    }
}

/// The f32 `pow(x, y)` expansion against the platform's `powf` on the conformance grid
/// (`pow_grid`) and pairs at the overflow and underflow edges: the special cases (signed
/// zeros, infinities, NaN, negative bases with odd, even and non-integer exponents) exactly,
/// and within one ULP elsewhere; with both ways of scaling.
#[test]
fn pow_expansion_gives_c99_special_values() {
    let (mut xs, mut ys) = crate::testing::conformance::math::pow_grid();
    // Results just below the largest float whose argument's high part lies past the overflow
    // threshold; exact overflow; subnormal results of a non-integer y; non-integer and odd
    // exponents between 2^22 and 2^24 with a negative x; overflow far past the threshold.
    for (x, y) in [
        (1.063_745_7_f32, 1_435.728_4),
        (1.270_637_2, 370.421_66),
        (2.0, 128.0),
        (2.0, 127.999_99),
        (2.0, -149.5),
        (0.5, 149.4),
        (-1.5, 4_194_304.5),
        (-1.5, 4_194_305.0),
        (-0.999_999_9, 8_388_609.0),
        (-0.999_999_9, 16_777_216.0),
        // Overflow whose argument's tail is large (about -1.2), or -inf where the argument
        // itself overflowed: +inf, however the argument is clamped.
        (1.3, 1e8),
        (1.1, 3e8),
        (0.8, -1e8),
        (10.0, 3e38),
        (3.4e38, 3e38),
    ] {
        xs.push(x);
        ys.push(y);
    }
    let n = xs.len();
    let k = elementwise(
        "pow",
        n as u64,
        &[DType::F32, DType::F32],
        vec![node(
            Node::Binary {
                op: accy_ir::BinaryOp::Pow,
                lhs: 0,
                rhs: 1,
            },
            DType::F32,
        )],
    );
    for scale_b in [false, true] {
        let k = expanded_for(k.clone(), scale_b).expect("expands");
        assert!(k.nodes.len() > 50, "pow did not expand");
        let mut x: Vec<u8> = xs.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut y: Vec<u8> = ys.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = vec![0u8; 4 * n];
        run_kernel(&k, &mut [&mut x, &mut y, &mut out]).expect("runs");
        for i in 0..n {
            let got = f32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
            let want = xs[i].powf(ys[i]);
            let ok = if want.is_nan() {
                got.is_nan()
            } else if !want.is_finite() || want == 0.0 {
                got.to_bits() == want.to_bits()
            } else {
                (got.to_bits() as i64 - want.to_bits() as i64).abs() <= 1
            };
            assert!(
                ok,
                "pow({:e}, {:e}) = {got:e}, platform {want:e}",
                xs[i], ys[i]
            );
        }
    }
}

/// An `exp` whose argument the planner proved at most zero or NaN
/// (`LoopKernel::at_most_zero`) loses its overflow clamp on `scaleb` targets and nothing else:
/// the same bits as the guarded expansion over every such argument (a sweep down past the
/// underflow threshold, ±0, subnormals, -inf, NaN). Without `scaleb` the guard stays (it makes
/// NaN from NaN there).
#[test]
fn an_exp_of_an_argument_at_most_zero_keeps_its_results_without_the_clamp() {
    for dtype in [DType::F32, DType::F64] {
        let lo = if dtype == DType::F32 { -110.0 } else { -760.0 };
        let mut values: Vec<f64> = (0..=20_000).map(|i| lo * f64::from(i) / 20_000.0).collect();
        values.extend([-0.0, -1e-40, -1e-310, f64::NEG_INFINITY, f64::NAN]);
        let bytes = le_bytes(&values, dtype);
        let exp = vec![node(
            Node::Unary {
                op: UnaryOp::Exp,
                x: 0,
            },
            dtype,
        )];
        let k = elementwise("exp", values.len() as u64, &[dtype], exp);
        let mut proved = k.clone();
        proved.at_most_zero = vec![0];
        let count = |k: &crate::kernel::LoopKernel| k.nodes.len();
        let run = |k: &crate::kernel::LoopKernel| {
            let (mut input, mut out) = (bytes.clone(), vec![0u8; bytes.len()]);
            run_kernel(k, &mut [&mut input, &mut out]).expect("runs");
            out
        };
        for scale_b in [true, false] {
            let guarded = expanded_for(k.clone(), scale_b).expect("expands");
            let unguarded = expanded_for(proved.clone(), scale_b).expect("expands");
            // The clamp is a compare and a select (and its constant).
            let fewer = if scale_b { 3 } else { 0 };
            assert_eq!(
                count(&unguarded) + fewer,
                count(&guarded),
                "{dtype} {scale_b}"
            );
            assert_eq!(unguarded.at_most_zero, vec![0]);
            let size = dtype.size_bytes() as usize;
            let (a, b) = (run(&guarded), run(&unguarded));
            for (i, (g, u)) in a.chunks(size).zip(b.chunks(size)).enumerate() {
                assert_eq!(g, u, "{dtype} at {}", values[i]);
            }
        }
    }
}
