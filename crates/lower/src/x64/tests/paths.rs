//! Which code path each kernel takes on x86-64 (the conformance suite proves the paths right;
//! these prove the fast ones are taken), what each tier records, and the mix of the random
//! kernel generator the suite draws from.

use accy_artifact::{CpuFeature, FeatureSet};
use accy_ir::{BinaryOp, DType, ReduceOp};

use super::host::{host_features, host_target};
use crate::kernel::{LoopKernel, Node};
use crate::target::Target;
use crate::testing::kernels::{binary_2d, load, node, random_kernel, reduce_2d};
use crate::x64::vector_plan::{vector_lanes, vector_tiles};
use crate::x64::{X64Target, X64Tier};

/// Every expanded transcendental, and a chain around one, runs on the vector path in default
/// mode: no scalar loop, no import call per element.
#[test]
fn expanded_math_is_vectorized() {
    use crate::testing::conformance::math::OPS;
    use crate::testing::kernels::{elementwise, expanded};
    for (dtype, lanes) in [(DType::F32, 8), (DType::F64, 4)] {
        for op in OPS {
            let k = elementwise(
                "f",
                100,
                &[dtype],
                vec![node(Node::Unary { op, x: 0 }, dtype)],
            );
            let k = expanded(k).expect("expands");
            assert!(
                !k.nodes
                    .iter()
                    .any(|n| matches!(n.node, Node::Unary { op: o, .. } if o == op)),
                "{op} {dtype} left unexpanded"
            );
            assert_eq!(vector_lanes(&k), Some(lanes), "{op} {dtype}");
        }
    }
    for (k, dtype) in crate::testing::conformance::math::pow_kernels(false).expect("expands") {
        let lanes = if dtype == DType::F32 { 8 } else { 4 };
        assert_eq!(vector_lanes(&k), Some(lanes), "{}", k.name);
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
    // A transposed load is strided along the inner dim: a gather, in 4- and 8-byte lanes;
    // a blocked transpose reads through tiles instead.
    let strided = |dtype, [n, m]: [u64; 2]| {
        binary_2d(
            [n, m],
            dtype,
            (n * m, 0, [1, n as i64]),
            (n * m, 0, [m as i64, 1]),
            BinaryOp::Add,
        )
    };
    assert_eq!(vector_lanes(&strided(DType::F32, [4, 5])), Some(8));
    assert_eq!(vector_lanes(&strided(DType::F64, [4, 5])), Some(4));
    assert_eq!(vector_lanes(&strided(DType::U8, [4, 5])), None);
    assert!(!vector_tiles(&strided(DType::F32, [4, 5])));
    for dtype in [DType::F32, DType::I32, DType::F64, DType::I64] {
        let mut blocked = strided(dtype, [64, 128]);
        crate::plan::blocking::block_transposes(
            &mut blocked,
            crate::TransposeBlock {
                line_bytes: 64,
                run: 64,
                along_rows: false,
            },
        );
        assert_eq!(blocked.dims.len(), 4, "{dtype} blocked");
        assert!(vector_tiles(&blocked), "{dtype}");
    }
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
    // In place with the store's own map vectorizes; reading the previous point's store does
    // not (it must see that store).
    let mut same = binary_2d(
        [1, 21],
        DType::F32,
        (21, 0, [0, 1]),
        (21, 0, [0, 1]),
        BinaryOp::Add,
    );
    same.bindings.truncate(1);
    same.bindings[0].access = accy_artifact::Access::ReadWrite;
    same.nodes[1] = load(0, 0, &[0, 1], DType::F32);
    same.store.binding = 0;
    same.store.map = crate::kernel::IndexMap::new(0, &[0, 1]);
    assert_eq!(vector_lanes(&same), Some(8));
    let mut scan = same.clone();
    scan.dims[1] = 20;
    scan.nodes[1] = load(0, 1, &[0, 1], DType::F32);
    scan.store.map = crate::kernel::IndexMap::new(1, &[0, 1]);
    assert_eq!(vector_lanes(&scan), None);
}

#[test]
fn many_live_values_and_uniform_imports_stay_on_the_vector_path() {
    let n = 19u64;
    let mut k = binary_2d(
        [1, n],
        DType::F32,
        (n + 19, 0, [0, 1]),
        (n, 0, [0, 1]),
        BinaryOp::Sub,
    );
    k.nodes = (0..20).map(|i| load(0, i, &[0, 1], DType::F32)).collect();
    let mut acc = 0u32;
    for i in 1..20u32 {
        k.nodes.push(node(
            Node::Binary {
                op: BinaryOp::Sub,
                lhs: acc,
                rhs: i,
            },
            DType::F32,
        ));
        acc = k.nodes.len() as u32 - 1;
    }
    k.bindings.remove(1);
    k.store.binding = 1;
    k.result = acc;
    k.validate().expect("valid");
    assert_eq!(vector_lanes(&k), Some(8));
}

#[test]
fn tiers_record_exact_features_and_construction_checks_the_host() {
    let sse2 = FeatureSet::of(&[CpuFeature::Sse2]);
    assert_eq!(X64Target::new(X64Tier::Sse2).spec().features, sse2);
    assert_eq!(X64Target::for_host(sse2).tier(), X64Tier::Sse2);
    assert!(X64Target::new_checked(X64Tier::Avx2, sse2).is_none());
    let avx2 = X64Tier::Avx2.code_features();
    assert_eq!(avx2.to_string(), "sse2+sse4.1+avx+avx2+fma");
    // An AVX2 CPU without FMA gets the SSE2 tier.
    let no_fma = FeatureSet::of(&[
        CpuFeature::Sse2,
        CpuFeature::Sse41,
        CpuFeature::Avx,
        CpuFeature::Avx2,
    ]);
    assert_eq!(X64Target::for_host(no_fma).tier(), X64Tier::Sse2);
    assert_eq!(X64Target::for_host(avx2).tier(), X64Tier::Avx2);
    assert!(X64Target::new_checked(X64Tier::Avx512, avx2).is_none());
    // The AVX-512 tier adds masked ymm moves (F + VL) and vrangeps (DQ) and records exactly
    // that; choosing it needs the whole x86-64-v4 set.
    let all = X64Tier::Avx512.host_features();
    assert_eq!(X64Target::for_host(all).tier(), X64Tier::Avx512);
    assert_eq!(
        X64Target::new(X64Tier::Avx512).spec().features.to_string(),
        "sse2+sse4.1+avx+avx2+fma+avx512f+avx512dq+avx512vl"
    );
    assert_eq!(
        all.missing(X64Tier::Avx512.code_features()).to_string(),
        "avx512bw"
    );
    assert_eq!(X64Target::new(X64Tier::Avx512).name(), "x64-avx512");
    // The host check agrees with the executable crate's detection, and with the lookup.
    let host = host_features();
    for tier in X64Tier::ALL {
        assert_eq!(
            host_target(tier).is_some(),
            tier.host_features().is_subset(host)
        );
    }
    assert!(host_target(X64Tier::Sse2).is_some());
    let best = crate::target::lookup_host(Some(accy_artifact::Arch::X86_64), host).unwrap();
    assert_eq!(best.name(), X64Target::for_host(host).name());
}

#[test]
fn generator_produces_mostly_valid_kernels_of_every_kind() {
    let kernels: Vec<LoopKernel> = (0..400u64)
        .filter_map(|s| random_kernel(s * 7919 + 1).map(|(k, _)| k))
        .collect();
    let count = |f: &dyn Fn(&LoopKernel) -> bool| kernels.iter().filter(|k| f(k)).count();
    let long_enough = |k: &LoopKernel| {
        vector_lanes(k).is_some_and(|lanes| k.dims.last().is_some_and(|&n| n >= lanes as u64))
    };
    let vectorized = count(&long_enough);
    let reductions = count(&|k| k.reduction.is_some());
    let vector_reductions = count(&|k| k.reduction.is_some() && long_enough(k));
    let gathers = count(&|k| {
        k.nodes
            .iter()
            .any(|n| matches!(n.node, Node::Gather { .. }))
    });
    let stats = format!(
        "{} valid, {vectorized} vectorized ({vector_reductions} reductions), \
         {reductions} reductions, {gathers} gathers",
        kernels.len()
    );
    assert!(kernels.len() > 200, "{stats}");
    assert!(
        vectorized > 60 && vector_reductions > 10 && reductions > 20 && gathers > 15,
        "{stats}"
    );
}

/// A reduction over a bare load gets extra accumulators on both tiers (its loop would wait on
/// the combine's latency); one whose body holds an expanded `exp` does not.
#[test]
fn short_reductions_get_extra_accumulators() {
    use crate::testing::kernels::expanded;
    use crate::x64::vector_plan::plan;
    for zmm in [false, true] {
        for op in [ReduceOp::Max, ReduceOp::Sum] {
            let k = reduce_2d(op, DType::F32, 3, 200);
            let p = plan(&k, &k.live_nodes(), true, zmm).expect("vectorized");
            assert_eq!(p.extra_accs.len(), 3, "{op} zmm={zmm}");
            assert!(!p.extra_accs.contains(&crate::x64::vector_plan::ACC_REG));
            let homes = |r| p.home.contains(&crate::emit::vregs::Home::Reg(r));
            assert!(!p.extra_accs.iter().any(|&r| homes(r)), "{op} zmm={zmm}");
        }
        let mut k = reduce_2d(ReduceOp::Sum, DType::F32, 3, 200);
        k.nodes.push(node(
            Node::Unary {
                op: accy_ir::UnaryOp::Exp,
                x: 0,
            },
            DType::F32,
        ));
        k.result = 1;
        let k = expanded(k).expect("expands");
        let p = plan(&k, &k.live_nodes(), true, zmm).expect("vectorized");
        assert!(p.extra_accs.is_empty(), "exp body, zmm={zmm}");
    }
}

/// A run known to be whole vectors (an inner dim of 32 or 48 f32 on AVX-512) gets no masked
/// tail and leaves its slots alone: the pinned offsets are not written back, and nothing
/// steps them back after the loop. A run of 40 keeps both.
#[test]
fn whole_inner_runs_have_no_tail_and_no_restore() {
    for (m, whole) in [(32u64, true), (48, true), (40, false)] {
        let n = 3u64;
        let k = binary_2d(
            [n, m],
            DType::F32,
            (n * m, 0, [m as i64, 1]),
            (m, 0, [0, 1]),
            BinaryOp::Add,
        );
        k.validate().expect("valid");
        let text = avx512_listing(k);
        assert_eq!(text.contains("kmovw"), !whole, "m = {m}:\n{text}");
        // Written back after the loop: `mov [rsp+..],r8` and the like (any pinned register).
        assert_eq!(write_backs(&text) == 0, whole, "m = {m}:\n{text}");
    }
}

/// A reduction over an inner dim of whole vectors (32 f32 on AVX-512) drops its pinned
/// state as a parallel run does: no masked tail (its `kmovw k1`) and no write-back; a row of
/// 40 keeps both. The conformance groups check the results (`reductions`, `maps`).
#[test]
fn whole_reduction_runs_have_no_tail_and_no_restore() {
    for (m, whole) in [(32u64, true), (40, false)] {
        let text = avx512_listing(reduce_2d(ReduceOp::Sum, DType::F32, 3, m));
        assert_eq!(text.contains("kmovw"), !whole, "m = {m}:\n{text}");
        assert_eq!(write_backs(&text) == 0, whole, "m = {m}:\n{text}");
    }
}

/// An AVX-512 float max or min reduction combines in the range form (`vector_reduce.rs`):
/// `vrangeps`/`pd` with an ordered compare into each accumulator's opmask, the extra
/// accumulators folded with `kandw`, NaN blended into the unordered lanes; and it needs no
/// sign mask, so the three-instruction max (its `vpternlogd` with 0xD4) is gone.
#[test]
fn avx512_float_max_and_min_reductions_take_the_range_form() {
    for (op, dtype, range) in [
        (ReduceOp::Max, DType::F32, "vrangeps zmm15,zmm15,zmm5,5"),
        (ReduceOp::Min, DType::F32, "vrangeps zmm15,zmm15,zmm5,4"),
        (ReduceOp::Max, DType::F64, "vrangepd zmm15,zmm15,zmm5,5"),
    ] {
        let text = avx512_listing(reduce_2d(op, dtype, 3, 150));
        let cmp = if dtype == DType::F32 {
            "vcmpordps k6{k6},zmm5,zmm5"
        } else {
            "vcmpordpd k6{k6},zmm5,zmm5"
        };
        for form in [range, cmp, "kandw k6,k6,k5", "vpblendm"] {
            assert!(text.contains(form), "{op:?} {dtype}: no {form}:\n{text}");
        }
        assert!(!text.contains(",0xD4"), "{op:?} {dtype}:\n{text}");
    }
}

/// The disassembly of `k` compiled for the AVX-512 tier with the default options.
fn avx512_listing(k: LoopKernel) -> String {
    let code = X64Target::new(X64Tier::Avx512)
        .emit(
            &[crate::kernel::Kernel::Loop(k)],
            &crate::compile::Options::default(),
        )
        .expect("emit");
    super::encoding::disassemble(&code.code).expect("decodes")
}

/// The lines of `text` that write a pinned loop register back to its frame slot
/// (`mov [rsp+..],r8` and the like).
fn write_backs(text: &str) -> usize {
    let pinned = ["],r8", "],r9", "],r10", "],r11", "],rsi", "],rdi"];
    text.lines()
        .filter(|l| pinned.iter().any(|r| l.contains(r)))
        .count()
}
