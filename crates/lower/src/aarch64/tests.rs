//! Host-independent tests of the AArch64 emitter: emission never panics and reports
//! malformed or oversized kernels as errors, and the checked-immediate helpers pick the
//! expected encodings. Running the code (every node × dtype, random kernels, the differential
//! suite) happens under emulation in the `accy-a64-emu-tests` crate.

use accy_artifact::{Arch, CpuFeature, FeatureSet};
use accy_ir::{BinaryOp, DType};

use super::asm::{add_imm, mov_imm, mul_imm, Asm};
use super::A64Target;
use crate::kernel::{IndexMap, Kernel, KernelNode, LoopKernel, Node};
use crate::target::{EmitError, Target};
use crate::testing::kernels::{copy_f32x4 as base, random_kernel};

fn emit(k: &LoopKernel) -> Result<Vec<u8>, EmitError> {
    A64Target::new()
        .emit(&[Kernel::Loop(k.clone())], &crate::Options::default())
        .map(|c| c.code)
}

/// The 32-bit words of what `f` emits.
fn words(f: impl FnOnce(&mut Asm)) -> Vec<u32> {
    let mut ops = Asm::new(0);
    f(&mut ops);
    let bytes = ops.finalize().expect("assemble");
    bytes
        .chunks(4)
        .map(|w| u32::from_le_bytes(w.try_into().expect("whole words")))
        .collect()
}

#[test]
fn target_records_arch_and_exact_features() {
    let t = A64Target::new();
    assert_eq!(t.name(), "aarch64-neon");
    assert_eq!(t.spec().arch, Arch::Aarch64);
    assert_eq!(t.spec().features, FeatureSet::of(&[CpuFeature::Neon]));
    assert!(A64Target::new_checked(FeatureSet::of(&[CpuFeature::Sse2])).is_none());
    assert!(A64Target::new_checked(FeatureSet::of(&[CpuFeature::Neon])).is_some());
}

#[test]
fn malformed_kernels_are_errors() {
    let mut cases = Vec::new();
    let mut k = base();
    k.nodes[0].node = Node::Binary {
        op: BinaryOp::Add,
        lhs: 0,
        rhs: 5,
    };
    cases.push(k);
    let mut k = base();
    k.result = 9;
    cases.push(k);
    let mut k = base();
    k.store.binding = 7;
    cases.push(k);
    let mut k = base();
    k.parallel_rank = 3;
    cases.push(k);
    let mut k = base();
    k.nodes[0].node = Node::Index {
        dim: Some(4),
        scale: 1,
        offset: 0,
    };
    cases.push(k);
    for k in cases {
        let r = emit(&k);
        assert!(
            matches!(r, Err(EmitError::Unsupported { .. })),
            "{r:?} for {k:?}"
        );
    }
    let code = emit(&base()).expect("emit");
    assert_eq!(code.len() % 4, 0);
}

#[test]
fn a_frame_beyond_the_stack_budget_is_an_error() {
    let mut k = base();
    for i in 0..6500u32 {
        k.nodes.push(KernelNode {
            node: Node::Binary {
                op: BinaryOp::Add,
                lhs: i,
                rhs: 0,
            },
            dtype: DType::F32,
        });
    }
    k.result = k.nodes.len() as u32 - 1;
    k.validate().expect("a long chain is a valid kernel");
    match emit(&k) {
        Err(EmitError::Unsupported { what, .. }) => assert!(what.contains("stack frame")),
        other => panic!("{other:?}"),
    }
    // Past the scaled-offset range (32 KiB) but within the budget: the far-offset path.
    k.nodes.truncate(4500);
    k.result = 4499;
    assert!(emit(&k).is_ok());
}

/// Random kernels with extreme shapes, maps and constants emit without panicking (dynasm
/// panics on unencodable immediates, so this sweeps the range checks).
#[test]
fn random_kernels_emit_without_panicking() {
    let mut emitted = 0;
    for seed in 0..3000u64 {
        if let Some((k, _)) = random_kernel(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
            emit(&k).expect("emit");
            emitted += 1;
        }
    }
    assert!(emitted > 1000, "{emitted}");
}

#[test]
fn immediates_use_the_expected_encodings() {
    // movz/movn pick the shorter sequence; movk fills the rest.
    assert_eq!(words(|o| mov_imm(o, 0, 0)), [0xaa1f_03e0]); // mov x0, xzr
    assert_eq!(words(|o| mov_imm(o, 0, -1)), [0x9280_0000]); // movn x0, #0
    assert_eq!(words(|o| mov_imm(o, 3, 0x1_0000)), [0xd2a0_0023]); // movz x3, #1, lsl 16
    assert_eq!(
        words(|o| mov_imm(o, 0, 0x1234_0000_0000_5678)),
        [0xd28a_cf00, 0xf2e2_4680] // movz x0, #0x5678 ; movk x0, #0x1234, lsl 48
    );
    assert_eq!(words(|o| mov_imm(o, 0, i64::MIN)).len(), 1);
    assert_eq!(words(|o| mov_imm(o, 0, 0x1234_5678_9abc_def0)).len(), 4);
    // Small adds are one instruction; others go through x16.
    assert_eq!(words(|o| add_imm(o, 0, 4095)), [0x913f_fc00]); // add x0, x0, #4095
    assert_eq!(words(|o| add_imm(o, 0, -1)), [0xd100_0400]); // sub x0, x0, #1
    assert_eq!(words(|o| add_imm(o, 0, 4096)).len(), 2);
    assert_eq!(words(|o| add_imm(o, 0, i64::MIN)).len(), 2);
    assert!(words(|o| mul_imm(o, 0, 1)).is_empty());
    assert_eq!(words(|o| mul_imm(o, 0, 0)), [0xaa1f_03e0]);
}

/// The NEON plan takes contiguous elementwise kernels and reductions along a contiguous
/// innermost dim whose combine gives the scalar loop's result, and leaves the rest scalar.
#[test]
fn contiguous_elementwise_kernels_are_vectorized() {
    use accy_ir::ReduceOp;
    let planned_in = |k: &LoopKernel, reassociate: bool| {
        let live = k.live_nodes();
        super::vector::plan(k, &live, reassociate).is_some()
    };
    let planned = |k: &LoopKernel| planned_in(k, true);
    assert!(planned(&base()));
    let mut strided = base();
    strided.store.map = IndexMap::new(3, &[-1]);
    assert!(!planned(&strided));
    let reduced = |op, dtype| crate::testing::kernels::reduce_2d(op, dtype, 3, 20);
    // A float sum only where it may be reassociated (default mode).
    assert!(planned(&reduced(ReduceOp::Sum, DType::F32)));
    assert!(!planned_in(&reduced(ReduceOp::Sum, DType::F32), false));
    assert!(planned_in(&reduced(ReduceOp::Sum, DType::I64), false));
    assert!(planned_in(&reduced(ReduceOp::Max, DType::F64), false));
    assert!(planned(&reduced(ReduceOp::Prod, DType::I32)));
    // No NEON combine gives these the scalar loop's bits: float products (reordering can
    // overflow), 64-bit products, integer max/min (not among the NEON ops here), bools.
    assert!(!planned(&reduced(ReduceOp::Prod, DType::F32)));
    assert!(!planned(&reduced(ReduceOp::Prod, DType::I64)));
    assert!(!planned(&reduced(ReduceOp::Min, DType::I32)));
    assert!(!planned(&reduced(ReduceOp::Max, DType::Bool)));
    let (mut vectorized, mut total) = (0, 0);
    for seed in 0..2000u64 {
        if let Some((k, _)) = random_kernel(seed * 2) {
            total += 1;
            vectorized += usize::from(planned(&k));
        }
    }
    assert!(
        vectorized * 10 > total,
        "{vectorized} of {total} vectorized"
    );
}

/// Every expanded transcendental runs on the NEON loop (in default mode the compiler expands
/// them; see `crate::math`), so no element calls an import.
#[test]
fn expanded_math_is_vectorized() {
    use crate::testing::conformance::math::OPS;
    use crate::testing::kernels::{elementwise, expanded, node};
    for dtype in [DType::F32, DType::F64] {
        for op in OPS {
            let k = elementwise(
                "f",
                100,
                &[dtype],
                vec![node(Node::Unary { op, x: 0 }, dtype)],
            );
            let k = expanded(k).expect("expands");
            let plan = super::vector::plan(&k, &k.live_nodes(), true);
            assert!(plan.is_some(), "{op} {dtype} stays scalar");
        }
    }
    for (k, _) in crate::testing::conformance::math::pow_kernels(false).expect("expands") {
        let plan = super::vector::plan(&k, &k.live_nodes(), true);
        assert!(plan.is_some(), "{} stays scalar", k.name);
    }
}

/// A loop kernel's prefetch hint (`crate::kernel::Prefetch`): each whole-vector load of the
/// hinted binding is followed by `prfm pldl1keep, [x1, x16]` with x16 the hinted distance in
/// bytes; other bindings' loads, and kernels without a hint, get none. (That a hint changes
/// no result is the emulated conformance suite's: the chains it runs carry hints.)
#[test]
fn hinted_loads_prefetch_ahead() {
    // `prfm pldl1keep, [x1, x16]`, as dynasm encodes it: 0xf8b0_6820.
    let prfm = words(|o| dynasmrt::dynasm!(o; .arch aarch64; prfm 0, [x1, x16]));
    assert_eq!(prfm, [0xf8b0_6820]);
    for (dtype, lane) in [(DType::F32, 4), (DType::F64, 8)] {
        let mut k = base();
        k.dims[0] = 64;
        for b in &mut k.bindings {
            b.dtype = dtype;
            b.elements = 64;
        }
        k.nodes[0].dtype = dtype;
        let count = |code: &[u8]| {
            code.chunks(4)
                .filter(|w| u32::from_le_bytes((*w).try_into().unwrap()) == prfm[0])
                .count()
        };
        assert_eq!(count(&emit(&k).unwrap()), 0, "{dtype}: no hint, no prfm");
        k.prefetch = Some(crate::kernel::Prefetch {
            binding: 0,
            ahead: 1000,
        });
        k.validate().unwrap();
        let code = emit(&k).unwrap();
        assert!(
            count(&code) >= 1,
            "{dtype}: the vector load carries the hint"
        );
        // Each prfm comes right after x16 is set to the distance in bytes.
        let distance = words(|o| mov_imm(o, 16, 1000 * lane));
        let all: Vec<u32> = code
            .chunks(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        for (i, _) in all.iter().enumerate().filter(|(_, &w)| w == prfm[0]) {
            assert_eq!(
                all[i - distance.len()..i],
                distance[..],
                "{dtype} at word {i}"
            );
        }
    }
}
