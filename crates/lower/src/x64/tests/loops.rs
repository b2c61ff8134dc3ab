//! Loop nests, maps, reductions, workgroups, the vector/tail split, and the ABI: multi-dim
//! kernels compared with the reference interpreter on every tier this host runs, plus the
//! calling-convention checks (status codes, callee-saved registers).

use accy_artifact::abi::{KERNEL_ABI_MISMATCH, KERNEL_BINDING_MISMATCH, KERNEL_OK};
use accy_artifact::Access;
use accy_ir::{BinaryOp, DType, ReduceOp, UnaryOp};
use smallvec::SmallVec;

use super::harness::{check, host_target, host_tiers, run_code, run_x64};
use super::nodes::DTYPES;
use crate::kernel::{IndexMap, KernelBinding, KernelNode, LoopKernel, Node, Store};
use crate::target::Target;
pub(crate) use crate::testing::kernels::data;
use crate::x64::vector::vector_lanes;
use crate::x64::{X64Target, X64Tier};

fn kb(dtype: DType, elements: u64, access: Access) -> KernelBinding {
    KernelBinding {
        dtype,
        elements,
        access,
    }
}

fn kn(node: Node, dtype: DType) -> KernelNode {
    KernelNode { node, dtype }
}

fn load(binding: u32, offset: i64, strides: &[i64], dtype: DType) -> KernelNode {
    kn(
        Node::Load {
            binding,
            map: IndexMap::new(offset, strides),
        },
        dtype,
    )
}

/// Buffers for `k`: readable bindings get data, written ones a recognisable filler.
fn buffers_for(k: &LoopKernel, seed: u64) -> Vec<Vec<u8>> {
    k.bindings
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if b.access.reads() {
                data(b.dtype, b.elements as usize, seed + i as u64)
            } else {
                vec![0x5A; (b.elements * b.dtype.size_bytes()) as usize]
            }
        })
        .collect()
}

/// Validates `k` and checks it on every tier with `workgroups`.
fn check_all(k: &LoopKernel, workgroups: u32) {
    k.validate().expect("valid kernel");
    let buffers = buffers_for(k, 7);
    let tiers = host_tiers();
    assert!(!tiers.is_empty());
    for target in tiers {
        check(&target, k, &buffers, workgroups);
    }
}

/// `out[i, j] = f(a[...], b[...])` over `dims` with the given load maps (2-D, row-major
/// store), `op` applied to the two loads.
fn binary_2d(
    dims: [u64; 2],
    dtype: DType,
    a: (u64, i64, [i64; 2]),
    b: (u64, i64, [i64; 2]),
    op: BinaryOp,
) -> LoopKernel {
    LoopKernel {
        name: format!("{op}_2d_{dtype}"),
        dims: SmallVec::from_slice(&dims),
        parallel_rank: 2,
        bindings: vec![
            kb(dtype, a.0, Access::Read),
            kb(dtype, b.0, Access::Read),
            kb(dtype, dims[0] * dims[1], Access::Write),
        ],
        nodes: vec![
            load(0, a.1, &a.2, dtype),
            load(1, b.1, &b.2, dtype),
            kn(Node::Binary { op, lhs: 0, rhs: 1 }, dtype),
        ],
        result: 2,
        reduction: None,
        store: Store {
            binding: 2,
            map: IndexMap::new(0, &[dims[1] as i64, 1]),
        },
    }
}

#[test]
fn transposed_broadcast_and_reversed_maps() {
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        for (n, m) in [(5u64, 13u64), (1, 1), (3, 8), (2, 33)] {
            // a transposed (m × n buffer read column-wise), b broadcast along the inner dim.
            check_all(
                &binary_2d(
                    [n, m],
                    dtype,
                    (n * m, 0, [1, n as i64]),
                    (n, 0, [1, 0]),
                    BinaryOp::Sub,
                ),
                1,
            );
            // a reversed along both dims, b broadcast along the outer dim.
            let last = (n * m) as i64 - 1;
            check_all(
                &binary_2d(
                    [n, m],
                    dtype,
                    (n * m, last, [-(m as i64), -1]),
                    (m, 0, [0, 1]),
                    BinaryOp::Max,
                ),
                1,
            );
        }
    }
}

#[test]
fn vector_path_is_taken_where_it_applies() {
    let contiguous = |dtype| {
        binary_2d(
            [3, 20],
            dtype,
            (60, 0, [20, 1]),
            (60, 0, [20, 1]),
            BinaryOp::Add,
        )
    };
    assert_eq!(vector_lanes(&contiguous(DType::F32)), Some(8));
    assert_eq!(vector_lanes(&contiguous(DType::I32)), Some(8));
    assert_eq!(vector_lanes(&contiguous(DType::F64)), Some(4));
    assert_eq!(vector_lanes(&contiguous(DType::I64)), Some(4));
    assert_eq!(vector_lanes(&contiguous(DType::U8)), None);
    // Broadcast along the inner dim stays vector (a uniform operand).
    let bcast = binary_2d(
        [3, 20],
        DType::F32,
        (60, 0, [20, 1]),
        (3, 0, [1, 0]),
        BinaryOp::Mul,
    );
    assert_eq!(vector_lanes(&bcast), Some(8));
    // A transposed load is strided along the inner dim: scalar.
    let strided = binary_2d(
        [4, 5],
        DType::F32,
        (20, 0, [1, 4]),
        (20, 0, [5, 1]),
        BinaryOp::Mul,
    );
    assert_eq!(vector_lanes(&strided), None);
    // Reductions over the innermost dim: sums, max/min, and i32 products.
    assert_eq!(
        vector_lanes(&reduce_2d(ReduceOp::Sum, DType::F32, 3, 20)),
        Some(8)
    );
    assert_eq!(
        vector_lanes(&reduce_2d(ReduceOp::Max, DType::F64, 3, 20)),
        Some(4)
    );
    assert_eq!(
        vector_lanes(&reduce_2d(ReduceOp::Min, DType::I64, 3, 20)),
        Some(4)
    );
    assert_eq!(
        vector_lanes(&reduce_2d(ReduceOp::Prod, DType::I32, 3, 20)),
        Some(8)
    );
    assert_eq!(
        vector_lanes(&reduce_2d(ReduceOp::Prod, DType::F32, 3, 20)),
        None
    );
    assert_eq!(
        vector_lanes(&reduce_2d(ReduceOp::Max, DType::Bool, 3, 20)),
        None
    );
    // i64 multiply has no AVX2 form: scalar.
    let mul = binary_2d(
        [3, 20],
        DType::I64,
        (60, 0, [20, 1]),
        (60, 0, [20, 1]),
        BinaryOp::Mul,
    );
    assert_eq!(vector_lanes(&mul), None);
}

#[test]
fn lengths_around_the_vector_width() {
    for n in [0u64, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 100] {
        for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
            let k = binary_2d([1, n], dtype, (n, 0, [0, 1]), (n, 0, [0, 1]), BinaryOp::Min);
            check_all(&k, 1);
        }
    }
}

/// `out[p] = reduce(op, x[p, r])` over `dims = [p, r]` with x row-major.
fn reduce_2d(op: ReduceOp, dtype: DType, p: u64, r: u64) -> LoopKernel {
    LoopKernel {
        name: format!("reduce_{op}_{dtype}"),
        dims: SmallVec::from_slice(&[p, r]),
        parallel_rank: 1,
        bindings: vec![kb(dtype, p * r, Access::Read), kb(dtype, p, Access::Write)],
        nodes: vec![load(0, 0, &[r as i64, 1], dtype)],
        result: 0,
        reduction: Some(op),
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[1]),
        },
    }
}

#[test]
fn reductions_of_every_op_and_dtype() {
    let mut ran = 0;
    for &op in ReduceOp::ALL {
        for dtype in DTYPES {
            for (p, r) in [(4u64, 7u64), (3, 0), (0, 4), (1, 1), (2, 19)] {
                let k = reduce_2d(op, dtype, p, r);
                if k.validate().is_err() {
                    continue;
                }
                check_all(&k, 1);
                ran += 1;
            }
        }
    }
    // sum/prod on 5 numeric dtypes, max/min on all 6, five shapes each.
    assert_eq!(ran, (5 + 5 + 6 + 6) * 5);
}

#[test]
fn full_and_rank_zero_reductions() {
    for dtype in [DType::F32, DType::I64, DType::U8] {
        // Everything reduced to one value.
        let mut k = reduce_2d(ReduceOp::Sum, dtype, 1, 10);
        k.dims = SmallVec::from_slice(&[10]);
        k.parallel_rank = 0;
        k.nodes = vec![load(0, 0, &[1], dtype)];
        k.store.map = IndexMap::new(0, &[]);
        check_all(&k, 1);
        check_all(&k, 3);
        // No dims at all: stores op(identity, x) once (a sum turns -0.0 into +0.0).
        let mut k0 = k.clone();
        k0.dims = SmallVec::new();
        k0.nodes = vec![load(0, 0, &[], dtype)];
        check_all(&k0, 1);
        k0.reduction = None;
        check_all(&k0, 2);
    }
}

#[test]
fn workgroups_split_the_outer_dim() {
    let k = binary_2d(
        [37, 5],
        DType::F32,
        (185, 0, [5, 1]),
        (37, 0, [1, 0]),
        BinaryOp::Div,
    );
    let r = reduce_2d(ReduceOp::Max, DType::I32, 37, 6);
    for wgs in [1, 2, 5, 36, 37, 64] {
        check_all(&k, wgs);
        check_all(&r, wgs);
    }
}

#[test]
fn strides_beyond_32_bits_on_unit_dims() {
    // A stride on a dim of size 1 is never multiplied by more than 0, so any value is valid;
    // these exercise the 64-bit immediate paths of every offset update.
    for dtype in [DType::F32, DType::I64] {
        let big = 1i64 << 40;
        let k = binary_2d(
            [1, 9],
            dtype,
            (9, 0, [big, 1]),
            (9, 8, [-big, -1]),
            BinaryOp::Add,
        );
        let mut k3 = k.clone();
        k3.dims = SmallVec::from_slice(&[1, 9, 1]);
        k3.parallel_rank = 3;
        for n in &mut k3.nodes {
            if let Node::Load { map, .. } = &mut n.node {
                map.strides.push(i64::MIN);
            }
        }
        k3.store.map = IndexMap::new(0, &[big, 1, i64::MAX]);
        check_all(&k, 1);
        check_all(&k3, 1);
    }
}

#[test]
fn in_place_updates_see_earlier_points() {
    // x[i] = x[i] * 2 (same map): vectorizable. x[i] = x[i - 1] + x[i] (reads the previous
    // point's store): must run point by point.
    let n = 21u64;
    let same = LoopKernel {
        name: "scale_in_place".into(),
        dims: SmallVec::from_slice(&[n]),
        parallel_rank: 1,
        bindings: vec![kb(DType::F32, n, Access::ReadWrite)],
        nodes: vec![
            load(0, 0, &[1], DType::F32),
            kn(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 0,
                    rhs: 0,
                },
                DType::F32,
            ),
        ],
        result: 1,
        reduction: None,
        store: Store {
            binding: 0,
            map: IndexMap::new(0, &[1]),
        },
    };
    assert_eq!(vector_lanes(&same), Some(8));
    check_all(&same, 1);
    let mut scan = same.clone();
    scan.name = "prefix_sum".into();
    scan.dims = SmallVec::from_slice(&[n - 1]);
    scan.nodes.insert(0, load(0, 0, &[1], DType::F32));
    scan.nodes[1] = load(0, 1, &[1], DType::F32);
    scan.nodes[2] = kn(
        Node::Binary {
            op: BinaryOp::Add,
            lhs: 0,
            rhs: 1,
        },
        DType::F32,
    );
    scan.result = 2;
    scan.store.map = IndexMap::new(1, &[1]);
    assert_eq!(vector_lanes(&scan), None);
    check_all(&scan, 1);
}

#[test]
fn uniform_values_with_imports_and_gathers() {
    // out[i, j] = exp(b[i]) * a[i, j] + table[clamp(idx[i])] — uniform nodes (an import call,
    // a gather) evaluated once per row ahead of the vector loop.
    let (p, q) = (6u64, 11u64);
    let k = LoopKernel {
        name: "row_scale".into(),
        dims: SmallVec::from_slice(&[p, q]),
        parallel_rank: 2,
        bindings: vec![
            kb(DType::F32, p * q, Access::Read),
            kb(DType::F32, p, Access::Read),
            kb(DType::I32, p, Access::Read),
            kb(DType::F32, 5, Access::Read),
            kb(DType::F32, p * q, Access::Write),
        ],
        nodes: vec![
            load(0, 0, &[q as i64, 1], DType::F32),
            load(1, 0, &[1, 0], DType::F32),
            kn(
                Node::Unary {
                    op: UnaryOp::Exp,
                    x: 1,
                },
                DType::F32,
            ),
            kn(
                Node::Binary {
                    op: BinaryOp::Mul,
                    lhs: 2,
                    rhs: 0,
                },
                DType::F32,
            ),
            load(2, 0, &[1, 0], DType::I32),
            kn(
                Node::Gather {
                    binding: 3,
                    map: IndexMap::new(0, &[0, 0]),
                    index: 4,
                    axis_len: 5,
                    axis_stride: 1,
                },
                DType::F32,
            ),
            kn(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 3,
                    rhs: 5,
                },
                DType::F32,
            ),
        ],
        result: 6,
        reduction: None,
        store: Store {
            binding: 4,
            map: IndexMap::new(0, &[q as i64, 1]),
        },
    };
    assert_eq!(vector_lanes(&k), Some(8));
    check_all(&k, 1);
    check_all(&k, 4);
}

#[test]
fn many_live_vector_values_spill_to_the_frame() {
    // A chain keeping 20 loads live at once: more than the 11 allocatable ymm registers.
    let n = 19u64;
    let mut nodes: Vec<KernelNode> = (0..20).map(|i| load(0, i, &[1], DType::F32)).collect();
    let mut acc = 0u32;
    for i in 1..20u32 {
        nodes.push(kn(
            Node::Binary {
                op: BinaryOp::Sub,
                lhs: acc,
                rhs: i,
            },
            DType::F32,
        ));
        acc = nodes.len() as u32 - 1;
    }
    let k = LoopKernel {
        name: "spills".into(),
        dims: SmallVec::from_slice(&[n]),
        parallel_rank: 1,
        bindings: vec![
            kb(DType::F32, n + 19, Access::Read),
            kb(DType::F32, n, Access::Write),
        ],
        nodes,
        result: acc,
        reduction: None,
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[1]),
        },
    };
    assert_eq!(vector_lanes(&k), Some(8));
    check_all(&k, 1);
}

#[test]
fn abi_violations_return_the_mismatch_status_and_touch_nothing() {
    let k = binary_2d(
        [2, 9],
        DType::I32,
        (18, 0, [9, 1]),
        (18, 0, [9, 1]),
        BinaryOp::Add,
    );
    for target in host_tiers() {
        let code = target.emit(std::slice::from_ref(&k)).expect("emit");
        let original = buffers_for(&k, 3);
        let mut buffers = original.clone();
        let statuses = run_code(
            &code.code,
            0,
            &mut buffers,
            1,
            accy_artifact::abi::ABI_VERSION + 1,
        );
        assert_eq!(statuses, vec![KERNEL_ABI_MISMATCH]);
        assert_eq!(buffers, original);
        // workgroup_count 0: workgroup 0 is out of range.
        let statuses = run_x64(&target, &k, &mut buffers, 0);
        assert_eq!(statuses, vec![KERNEL_ABI_MISMATCH]);
        assert_eq!(buffers, original);
        let statuses = run_x64(&target, &k, &mut buffers, 1);
        assert_eq!(statuses, vec![KERNEL_OK]);
        assert_ne!(buffers, original);
    }
}

#[test]
fn bindings_that_differ_from_the_compiled_ones_are_refused_untouched() {
    let k = binary_2d(
        [2, 9],
        DType::I32,
        (18, 0, [9, 1]),
        (18, 0, [9, 1]),
        BinaryOp::Add,
    );
    for target in host_tiers() {
        let code = target.emit(std::slice::from_ref(&k)).expect("emit");
        let abi = accy_artifact::abi::ABI_VERSION;
        // One binding missing.
        let mut fewer = buffers_for(&k, 3);
        fewer.pop();
        let original = fewer.clone();
        assert_eq!(
            run_code(&code.code, 0, &mut fewer, 1, abi),
            vec![KERNEL_BINDING_MISMATCH]
        );
        assert_eq!(fewer, original);
        // The output binding one byte short of the 72 the kernel writes.
        let mut short = buffers_for(&k, 3);
        short[2].pop();
        let original = short.clone();
        assert_eq!(
            run_code(&code.code, 0, &mut short, 1, abi),
            vec![KERNEL_BINDING_MISMATCH]
        );
        assert_eq!(short, original, "{}", target.name());
        // A longer binding is fine: the kernel touches only the bytes it was compiled for.
        let mut longer = buffers_for(&k, 3);
        longer[0].extend_from_slice(&[0; 8]);
        assert_eq!(
            run_code(&code.code, 0, &mut longer, 1, abi),
            vec![KERNEL_OK]
        );
    }
}

#[test]
fn tiers_record_exact_features_and_construction_checks_the_host() {
    use accy_artifact::{CpuFeature, FeatureSet};
    let sse2 = FeatureSet::of(&[CpuFeature::Sse2]);
    assert_eq!(X64Target::new(X64Tier::Sse2).spec().features, sse2);
    assert_eq!(X64Target::for_host(sse2).tier(), X64Tier::Sse2);
    assert!(X64Target::new_checked(X64Tier::Avx2, sse2).is_none());
    let avx2 = X64Tier::Avx2.code_features();
    assert_eq!(avx2.to_string(), "sse2+sse4.1+avx+avx2");
    assert_eq!(X64Target::for_host(avx2).tier(), X64Tier::Avx2);
    assert!(X64Target::new_checked(X64Tier::Avx512, avx2).is_none());
    // The AVX-512 tier adds masked ymm moves (F + VL) and records exactly that; choosing it
    // needs the whole x86-64-v4 set.
    let all = X64Tier::Avx512.host_features();
    assert_eq!(X64Target::for_host(all).tier(), X64Tier::Avx512);
    assert_eq!(
        X64Target::new(X64Tier::Avx512).spec().features.to_string(),
        "sse2+sse4.1+avx+avx2+avx512f+avx512vl"
    );
    assert_eq!(
        all.missing(X64Tier::Avx512.code_features()).to_string(),
        "avx512bw+avx512dq"
    );
    assert_eq!(X64Target::new(X64Tier::Avx512).name(), "x64-avx512");
    // The host check agrees with the executable crate's detection.
    let host = super::harness::host_features();
    for tier in X64Tier::ALL {
        assert_eq!(
            host_target(tier).is_some(),
            tier.host_features().is_subset(host)
        );
    }
    assert!(host_target(X64Tier::Sse2).is_some());
}

#[test]
fn float_sums_are_bit_exact_when_reassociation_is_off() {
    // Terms whose sum depends on the order: 1e8 swamps the ones unless they are added first.
    let r = 64u64;
    let terms: Vec<f32> = (0..r)
        .map(|i| if i % 16 == 0 { 1e8 } else { 1.0 })
        .collect();
    let k = reduce_2d(ReduceOp::Sum, DType::F32, 1, r);
    let input: Vec<u8> = terms.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut expected = [input.clone(), vec![0u8; 4]];
    {
        let mut refs: Vec<&mut [u8]> = expected.iter_mut().map(|b| b.as_mut_slice()).collect();
        crate::kernel::run_kernel(&k, &mut refs).unwrap();
    }
    for target in host_tiers() {
        let exact = target.with_float_reassociation(false);
        assert!(!exact.float_reassociation());
        let mut buffers = vec![input.clone(), vec![0u8; 4]];
        assert_eq!(run_x64(&exact, &k, &mut buffers, 1), vec![0]);
        assert_eq!(
            buffers[1],
            expected[1],
            "{} without reassociation",
            exact.name()
        );
    }
}
