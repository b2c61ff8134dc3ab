//! Tests of the kernel interpreter: movement maps, buffer checks, reductions, in-place
//! points, index nodes, FMA and bit casts.

use accy_ir::ReduceOp;

use super::*;

#[test]
fn runs_elementwise_with_movement_maps() {
    // out[i, j] = exp(x[1 - i, 2 - j]) (reverse of both axes).
    let mut k = exp_kernel();
    k.nodes[0].node = load(0, 5, &[-3, -1]);
    let x = [0.0f32, 1.0, 2.0, -1.0, 0.5, -0.0];
    let mut input = f32_bytes(&x);
    let mut out = vec![0u8; 24];
    run_kernel(&k, &mut [&mut input, &mut out]).unwrap();
    let expect: Vec<f32> = x.iter().rev().map(|v| v.exp()).collect();
    assert_eq!(f32s(&out), expect);
}

#[test]
fn checks_buffers() {
    let k = exp_kernel();
    let mut input = vec![0u8; 24];
    let mut out = vec![0u8; 20];
    assert!(matches!(
        run_kernel(&k, &mut [&mut input, &mut out]),
        Err(KernelError::BufferSize {
            binding: 1,
            expected: 24,
            found: 20,
            ..
        })
    ));
    assert!(matches!(
        run_kernel(&k, &mut [&mut input]),
        Err(KernelError::BufferCount {
            expected: 2,
            found: 1,
            ..
        })
    ));
}

/// `out[i] = Σ_j x[i, j] * x[i, j]` over `rows × cols` f32.
fn sum_squares(rows: u64, cols: u64) -> LoopKernel {
    LoopKernel {
        name: "sumsq".into(),
        dims: accy_ir::dims(&[rows, cols]),
        parallel_rank: 1,
        bindings: vec![
            binding(DType::F32, rows * cols, Access::Read),
            binding(DType::F32, rows, Access::Write),
        ],
        nodes: vec![
            node(load(0, 0, &[cols as i64, 1]), DType::F32),
            node(
                Node::Binary {
                    op: BinaryOp::Mul,
                    lhs: 0,
                    rhs: 0,
                },
                DType::F32,
            ),
        ],
        result: 1,
        reduction: Some(ReduceOp::Sum),
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    }
}

#[test]
fn reductions_match_the_interpreter() {
    use accy_ir::{interp, Builder, Tensor, Type};
    let x = [1.5f32, -2.0, 0.1, 3.0, 1e-3, -7.25];
    let mut b = Builder::new();
    let p = b.input("x", Type::new(DType::F32, &[2, 3])).unwrap();
    let sq = b.binary(BinaryOp::Mul, p, p).unwrap();
    let r = b.reduce(ReduceOp::Sum, sq, &[1]).unwrap();
    b.output(r).unwrap();
    let program = b.finish().unwrap();
    let expect = interp::eval(&program, &[Tensor::f32s(&[2, 3], x.to_vec())]).unwrap();
    let accy_ir::TensorData::F32(expect) = expect[0].data().clone() else {
        panic!("not f32");
    };

    let mut input = f32_bytes(&x);
    let mut out = vec![0u8; 8];
    run_kernel(&sum_squares(2, 3), &mut [&mut input, &mut out]).unwrap();
    assert_eq!(f32s(&out), expect);

    // A zero-length reduction stores the identity at every parallel point.
    let mut k = sum_squares(2, 0);
    k.bindings[0].elements = 0;
    k.nodes[0].node = load(0, 0, &[0, 1]);
    let mut out = f32_bytes(&[9.0, 9.0]);
    run_kernel(&k, &mut [&mut [], &mut out]).unwrap();
    assert_eq!(f32s(&out), vec![0.0, 0.0]);

    // No reduction dims: op(identity, x), so a sum turns -0.0 into +0.0.
    let mut k = sum_squares(2, 1);
    k.dims = accy_ir::dims(&[2]);
    k.nodes[0].node = load(0, 0, &[1]);
    k.nodes[1].node = Node::Unary {
        op: UnaryOp::Neg,
        x: 0,
    };
    let mut input = f32_bytes(&[0.0, 2.0]);
    let mut out = vec![0u8; 8];
    run_kernel(&k, &mut [&mut input, &mut out]).unwrap();
    assert_eq!(f32s(&out)[0].to_bits(), 0.0f32.to_bits());
    assert_eq!(f32s(&out)[1], -2.0);
}

#[test]
fn in_place_loads_precede_the_store_at_each_point() {
    // x[i] = x[i] + x[i - 1 clamped at 0 by reading x[0] for i = 0]: a running sum, which shows
    // each point sees earlier points' stores and its own load precedes its store.
    let k = LoopKernel {
        name: "scan".into(),
        dims: accy_ir::dims(&[3]),
        parallel_rank: 1,
        bindings: vec![binding(DType::I64, 4, Access::ReadWrite)],
        nodes: vec![
            node(load(0, 0, &[1]), DType::I64),
            node(load(0, 1, &[1]), DType::I64),
            node(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 0,
                    rhs: 1,
                },
                DType::I64,
            ),
        ],
        result: 2,
        reduction: None,
        store: Store {
            binding: 0,
            map: IndexMap::new(1, &[1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    let mut buf = i64_bytes(&[1, 2, 3, 4]);
    run_kernel(&k, &mut [&mut buf]).unwrap();
    assert_eq!(i64s(&buf), vec![1, 3, 6, 10]);
}

#[test]
fn index_nodes_convert_like_iota() {
    // out[i] = u8(300 - 100 * i): wraps like convert from i64.
    let k = LoopKernel {
        name: "iota".into(),
        dims: accy_ir::dims(&[4]),
        parallel_rank: 1,
        bindings: vec![binding(DType::U8, 4, Access::Write)],
        nodes: vec![node(
            Node::Index {
                dim: Some(0),
                scale: -100,
                offset: 300,
            },
            DType::U8,
        )],
        result: 0,
        reduction: None,
        store: Store {
            binding: 0,
            map: IndexMap::new(0, &[1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    let mut out = vec![0u8; 4];
    run_kernel(&k, &mut [&mut out]).unwrap();
    assert_eq!(out, vec![44, 200, 100, 0]);
}

#[test]
fn row_major_maps() {
    assert_eq!(
        IndexMap::row_major(&[2, 3, 4]),
        Some(IndexMap::new(0, &[12, 4, 1]))
    );
    assert_eq!(IndexMap::row_major(&[]), Some(IndexMap::new(0, &[])));
    assert_eq!(IndexMap::row_major(&[u64::MAX, 4]), None);
}

#[test]
fn fma_and_bitcast_type_rules_and_values() {
    // out = bitcast(fma(x, x, -1)) : i32, over the 2×3 f32 input.
    let with = |fma: DType, cast: DType, x_dtype: DType| {
        let mut k = exp_kernel();
        k.nodes[0].dtype = x_dtype;
        k.bindings[0].dtype = x_dtype;
        k.nodes[1] = node(
            Node::Const {
                bits: (-1.0f32).to_bits().into(),
            },
            DType::F32,
        );
        k.nodes.push(node(Node::Fma { a: 0, b: 0, c: 1 }, fma));
        k.nodes.push(node(Node::Bitcast { x: 2 }, cast));
        k.result = 3;
        k.bindings[1].dtype = cast;
        k
    };
    let ok = with(DType::F32, DType::I32, DType::F32);
    ok.validate().expect("valid");
    let text = ok.to_string();
    assert!(text.contains("%2 = fma %0, %0, %1 : f32"), "{text}");
    assert!(text.contains("%3 = bitcast %2 : i32"), "{text}");
    for bad in [
        // An integer fma, operands of another dtype, and a cast that changes the size.
        with(DType::I32, DType::I32, DType::I32),
        with(DType::F32, DType::I32, DType::F64),
        with(DType::F32, DType::I64, DType::F32),
    ] {
        assert!(
            matches!(
                bad.validate(),
                Err(KernelError::NodeType { node: 2 | 3, .. })
            ),
            "{bad}"
        );
    }
    // (1 + 2^-12)² - 1 rounded once keeps the 2^-24 the rounded product loses.
    let x = [1.0 + 2f32.powi(-12), 3.0, -0.0, f32::NAN, 1e20, 1.5];
    let mut input = f32_bytes(&x);
    let mut out = vec![0u8; 24];
    run_kernel(&ok, &mut [&mut input, &mut out]).expect("runs");
    let got: Vec<u32> = out
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    for (g, v) in got.iter().zip(x) {
        let want = v.mul_add(v, -1.0);
        assert!(*g == want.to_bits() || (want.is_nan() && f32::from_bits(*g).is_nan()));
    }
    assert_ne!(got[0], (x[0] * x[0] - 1.0).to_bits());
}
