//! The generator's own guarantees: every program verifies and respects its config, the
//! programs cover every op, sub-op, dtype and edge case, arguments match, and failures shrink.

use std::collections::BTreeSet;

use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use super::*;
use crate::{verify, ParamKind, TensorData, Type, ValueId};

/// Asserts `p` is valid and within `cfg`'s limits.
fn check_within(p: &Program, cfg: &GenConfig) {
    if let Err(e) = verify(p) {
        panic!("generated program does not verify: {e}\n{p:?}");
    }
    assert!(p.params.len() <= cfg.max_params.max(1), "{p:?}");
    assert!(p.instructions.len() <= cfg.max_instructions, "{p:?}");
    assert!(!p.outputs.is_empty());
    let types = p
        .params
        .iter()
        .map(|x| &x.ty)
        .chain(p.instructions.iter().map(|i| &i.ty));
    for t in types {
        assert!(t.rank() <= cfg.max_rank, "rank of {t} in {p:?}");
        assert!(t.element_count().unwrap() <= cfg.max_elements, "{t}");
        assert!(cfg.dtypes.contains(&t.dtype), "{t}");
    }
    for inst in &p.instructions {
        assert!(cfg.ops.contains(&OpKind::of(&inst.op)), "{:?}", inst.op);
        match &inst.op {
            Op::Unary { op, .. } => assert!(cfg.unary_ops.contains(op)),
            Op::Binary { op, .. } => assert!(cfg.binary_ops.contains(op)),
            Op::Compare { op, .. } => assert!(cfg.compare_ops.contains(op)),
            Op::Reduce { op, .. } => assert!(cfg.reduce_ops.contains(op)),
            _ => {}
        }
    }
    if !cfg.weights {
        assert!(p.params.iter().all(|x| x.kind == ParamKind::Input));
    }
    if !cfg.donation {
        assert!(p.outputs.iter().all(|o| o.donates.is_none()));
    }
}

/// Draws `n` programs from `strategy` with a fixed seed.
fn sample(strategy: impl Strategy<Value = Program>, n: usize) -> Vec<Program> {
    let mut runner = TestRunner::deterministic();
    (0..n)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect()
}

fn special_f32(x: f32) -> Option<&'static str> {
    if x.is_subnormal() {
        Some("subnormal")
    } else {
        special_f64(f64::from(x))
    }
}

fn special_f64(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("nan")
    } else if x == f64::INFINITY {
        Some("+inf")
    } else if x == f64::NEG_INFINITY {
        Some("-inf")
    } else if x == 0.0 && x.is_sign_negative() {
        Some("-0")
    } else if x.is_subnormal() {
        Some("subnormal")
    } else {
        None
    }
}

/// Names of the features `p` exercises (op kinds, sub-op/dtype pairs, edge cases).
fn features(p: &Program, seen: &mut BTreeSet<String>) {
    let ty = |v: &ValueId| p.value_type(*v).unwrap().clone();
    for par in &p.params {
        seen.insert(format!("param:{:?}", par.kind));
    }
    for (i, o) in p.outputs.iter().enumerate() {
        if o.donates.is_some() {
            seen.insert("donation".into());
        }
        if o.value.index() < p.params.len() {
            seen.insert("output-is-param".into());
        }
        if i > 0 {
            seen.insert("several-outputs".into());
        }
    }
    let all_types = p
        .params
        .iter()
        .map(|x| &x.ty)
        .chain(p.instructions.iter().map(|i| &i.ty));
    for t in all_types {
        seen.insert(format!("dtype:{}", t.dtype));
        seen.insert(format!("rank:{}", t.rank()));
        if t.dims.contains(&0) {
            seen.insert("dim:0".into());
        }
        if t.dims.contains(&1) {
            seen.insert("dim:1".into());
        }
    }
    for inst in &p.instructions {
        seen.insert(format!("op:{:?}", OpKind::of(&inst.op)));
        match &inst.op {
            Op::Unary { op, x } => {
                seen.insert(format!("unary:{op}:{}", ty(x).dtype));
            }
            Op::Binary { op, lhs, .. } => {
                seen.insert(format!("binary:{op}:{}", ty(lhs).dtype));
            }
            Op::Compare { op, lhs, .. } => {
                seen.insert(format!("compare:{op}:{}", ty(lhs).dtype));
            }
            Op::Reduce { op, x, axes } => {
                seen.insert(format!("reduce:{op}:{}", ty(x).dtype));
                seen.insert(format!("reduce-axes:{}", axes.len().min(2)));
            }
            Op::Convert { x, to } => {
                seen.insert(format!("convert:{}->{to}", ty(x).dtype));
            }
            Op::Constant(t) => {
                let specials: Vec<_> = match t.data() {
                    TensorData::F32(v) => v.iter().filter_map(|&x| special_f32(x)).collect(),
                    TensorData::F64(v) => v.iter().filter_map(|&x| special_f64(x)).collect(),
                    _ => Vec::new(),
                };
                for s in specials {
                    seen.insert(format!("const:{}:{s}", t.dtype()));
                }
                match t.data() {
                    TensorData::I32(v) if v.contains(&i32::MIN) => {
                        seen.insert("const:i32-min".into());
                    }
                    TensorData::I64(v) if v.contains(&i64::MAX) => {
                        seen.insert("const:i64-max".into());
                    }
                    _ => {}
                }
            }
            Op::Iota { ty, .. } => {
                seen.insert(format!("iota:{}", ty.dtype));
            }
            Op::Broadcast { x, dims, .. } => {
                if dims.len() > ty(x).rank() {
                    seen.insert("broadcast:new-axis".into());
                }
                if ty(x).dims.contains(&1) && !dims.contains(&1) {
                    seen.insert("broadcast:expand-1".into());
                }
            }
            Op::Transpose { perm, .. } => {
                if perm.iter().enumerate().any(|(i, &a)| a as usize != i) {
                    seen.insert("transpose:moves".into());
                }
            }
            Op::Slice { stride, .. } => {
                if stride.iter().any(|&s| s > 1) {
                    seen.insert("slice:stride".into());
                }
                if inst.ty.element_count() == Some(0) {
                    seen.insert("slice:empty".into());
                }
            }
            Op::Concat { xs, .. } => {
                seen.insert(format!("concat:{}", xs.len().min(3)));
            }
            Op::Pad {
                low,
                high,
                interior,
                ..
            } => {
                if low.iter().chain(high).any(|&l| l < 0) {
                    seen.insert("pad:negative".into());
                }
                if low.iter().chain(high).any(|&l| l > 0) {
                    seen.insert("pad:positive".into());
                }
                if interior.iter().any(|&i| i > 0) {
                    seen.insert("pad:interior".into());
                }
            }
            Op::Reverse { axes, .. } => {
                seen.insert(format!("reverse-axes:{}", axes.len().min(2)));
            }
            Op::Dot {
                lhs_batch,
                lhs_contract,
                ..
            } => {
                seen.insert(format!(
                    "dot:batch={},contract={}",
                    lhs_batch.len().min(1),
                    lhs_contract.len().min(2)
                ));
                seen.insert(format!("dot:{}", inst.ty.dtype));
            }
            Op::Gather { x, indices, axis } => {
                seen.insert(format!("gather:index-{}", ty(indices).dtype));
                if ty(x).dims[*axis as usize] == 0 {
                    seen.insert("gather:empty-axis".into());
                }
            }
            Op::Reshape { x, dims } => {
                if dims.len() != ty(x).rank() {
                    seen.insert("reshape:rank-change".into());
                }
            }
            Op::Select { .. } => {}
        }
    }
}

fn expected_features() -> BTreeSet<String> {
    let mut e = BTreeSet::new();
    for k in OpKind::ALL {
        e.insert(format!("op:{k:?}"));
    }
    for d in DType::ALL {
        e.insert(format!("dtype:{d}"));
        for to in DType::ALL {
            e.insert(format!("convert:{d}->{to}"));
        }
        for &op in CompareOp::ALL {
            e.insert(format!("compare:{op}:{d}"));
        }
        for &op in UnaryOp::ALL {
            let ok = match op {
                UnaryOp::Neg | UnaryOp::Abs => d.is_numeric(),
                UnaryOp::Not => d == DType::Bool || d.is_integer(),
                _ => d.is_float(),
            };
            if ok {
                e.insert(format!("unary:{op}:{d}"));
            }
        }
        for &op in BinaryOp::ALL {
            let ok = match op {
                BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => d == DType::Bool || d.is_integer(),
                BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic => d.is_integer(),
                _ => d.is_numeric(),
            };
            if ok {
                e.insert(format!("binary:{op}:{d}"));
            }
        }
        for &op in ReduceOp::ALL {
            if d.is_numeric() || matches!(op, ReduceOp::Max | ReduceOp::Min) {
                e.insert(format!("reduce:{op}:{d}"));
            }
        }
        if d.is_numeric() {
            e.insert(format!("iota:{d}"));
            e.insert(format!("dot:{d}"));
        }
        if d.is_integer() {
            e.insert(format!("gather:index-{d}"));
        }
    }
    for d in [DType::F32, DType::F64] {
        for s in ["nan", "+inf", "-inf", "-0", "subnormal"] {
            e.insert(format!("const:{d}:{s}"));
        }
    }
    for r in 0..=4 {
        e.insert(format!("rank:{r}"));
    }
    for n in 0..=2 {
        e.insert(format!("reduce-axes:{n}"));
        e.insert(format!("reverse-axes:{n}"));
        e.insert(format!("dot:batch=0,contract={n}"));
        e.insert(format!("dot:batch=1,contract={n}"));
    }
    for n in 1..=3 {
        e.insert(format!("concat:{n}"));
    }
    for s in [
        "param:Input",
        "param:Weight",
        "donation",
        "output-is-param",
        "several-outputs",
        "dim:0",
        "dim:1",
        "const:i32-min",
        "const:i64-max",
        "broadcast:new-axis",
        "broadcast:expand-1",
        "transpose:moves",
        "slice:stride",
        "reshape:rank-change",
        "slice:empty",
        "pad:negative",
        "pad:positive",
        "pad:interior",
        "gather:empty-axis",
    ] {
        e.insert(s.to_owned());
    }
    e
}

#[test]
fn programs_cover_every_op_sub_op_dtype_and_edge_case() {
    let cfg = GenConfig::default();
    let programs = sample(arb_program_with(cfg.clone()), 2000);
    let mut seen = BTreeSet::new();
    let mut instructions = 0;
    for p in &programs {
        check_within(p, &cfg);
        features(p, &mut seen);
        instructions += p.instructions.len();
    }
    let missing: Vec<_> = expected_features().difference(&seen).cloned().collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
    // Guards against a generator whose steps mostly fail and yield trivial programs.
    assert!(
        instructions >= programs.len() * 4,
        "only {instructions} instructions in {} programs",
        programs.len()
    );
}

#[test]
fn restricted_configs_are_respected() {
    let configs = [
        GenConfig {
            dtypes: vec![DType::F32],
            ops: vec![OpKind::Unary, OpKind::Binary, OpKind::Reduce],
            unary_ops: vec![UnaryOp::Exp, UnaryOp::Neg],
            weights: false,
            donation: false,
            ..GenConfig::default()
        },
        GenConfig {
            dtypes: vec![DType::I64, DType::Bool],
            ops: vec![OpKind::Compare, OpKind::Select, OpKind::Gather, OpKind::Dot],
            compare_ops: vec![CompareOp::Lt],
            max_rank: 2,
            max_elements: 16,
            max_params: 2,
            ..GenConfig::default()
        },
        GenConfig {
            max_instructions: 30,
            max_rank: 8,
            max_dim: 3,
            max_elements: 64,
            reduce_ops: vec![ReduceOp::Min],
            binary_ops: vec![BinaryOp::ShrArithmetic, BinaryOp::Pow],
            ..GenConfig::default()
        },
        GenConfig {
            ops: Vec::new(),
            max_params: 0,
            ..GenConfig::default()
        },
    ];
    for cfg in configs {
        let programs = sample(arb_program_with(cfg.clone()), 300);
        for p in &programs {
            check_within(p, &cfg);
        }
        if !cfg.ops.is_empty() {
            assert!(
                programs.iter().any(|p| p.instructions.len() >= 3),
                "{cfg:?}"
            );
        }
    }
}

#[test]
fn plans_from_bytes_and_empty_plans_build_valid_programs() {
    let cfg = GenConfig::default();
    let empty = build(
        &Plan {
            steps: Vec::new(),
            outputs: [0; OUTPUT_CHOICES],
        },
        &cfg,
    )
    .unwrap();
    assert_eq!(empty.params.len(), 1);
    assert!(empty.instructions.is_empty());
    assert_eq!(empty.outputs.len(), 1);

    let mut runner = TestRunner::new(Config {
        cases: 200,
        ..Config::default()
    });
    runner
        .run(&prop::collection::vec(any::<u8>(), 0..600), |bytes| {
            let plan = Plan::from_bytes(&bytes);
            let p = build(&plan, &cfg).map_err(|e| TestCaseError::fail(e.to_string()))?;
            check_within(&p, &cfg);
            prop_assert_eq!(build(&plan, &cfg).unwrap(), p);
            Ok(())
        })
        .unwrap();
}

#[test]
fn failures_shrink_to_small_programs() {
    // A property that fails whenever a program contains a dot: the shrunk counterexample
    // should be little more than the dot itself.
    let mut runner = TestRunner::deterministic();
    let result = runner.run(&arb_plan(&GenConfig::default()), |plan| {
        let p = build(&plan, &GenConfig::default()).unwrap();
        let has_dot = p
            .instructions
            .iter()
            .any(|i| matches!(i.op, Op::Dot { .. }));
        prop_assert!(!has_dot);
        Ok(())
    });
    let Err(TestError::Fail(_, plan)) = result else {
        panic!("expected a failing case, got {result:?}");
    };
    let p = build(&plan, &GenConfig::default()).unwrap();
    assert_eq!(plan.steps.len(), 1, "{plan:?}");
    assert!(p.instructions.len() <= 2, "{p:?}");
}

proptest! {
    #![proptest_config(Config { cases: 128, ..Config::default() })]

    #[test]
    fn args_match_param_types((p, args) in arb_program_and_args()) {
        check_within(&p, &GenConfig::default());
        prop_assert_eq!(args.len(), p.params.len());
        for (a, par) in args.iter().zip(&p.params) {
            prop_assert_eq!(&a.ty(), &par.ty);
        }
    }
}

#[test]
fn args_include_edge_values() {
    let ty = Type::new(DType::F32, &[64]);
    let mut runner = TestRunner::deterministic();
    let mut seen = BTreeSet::new();
    for _ in 0..50 {
        let t = arb_tensor(&ty).new_tree(&mut runner).unwrap().current();
        let TensorData::F32(v) = t.data() else {
            panic!("wrong dtype");
        };
        for &x in v {
            if let Some(s) = special_f32(x) {
                seen.insert(s);
            }
        }
    }
    assert_eq!(seen.len(), 5, "{seen:?}");

    let ty = Type::new(DType::I32, &[64]);
    let (mut min, mut max, mut small, mut negative) = (false, false, false, false);
    for _ in 0..50 {
        let t = arb_tensor(&ty).new_tree(&mut runner).unwrap().current();
        let TensorData::I32(v) = t.data() else {
            panic!("wrong dtype");
        };
        min |= v.contains(&i32::MIN);
        max |= v.contains(&i32::MAX);
        small |= v.iter().any(|&x| (0..8).contains(&x));
        negative |= v.iter().any(|&x| (-4..0).contains(&x));
    }
    assert!(min && max && small && negative);
}
