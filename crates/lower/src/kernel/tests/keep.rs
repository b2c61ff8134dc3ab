//! Validation rule 8 and the interpreter's semantics of a kept value ([`Keep`]).

use super::*;

/// Row sums of `exp(x)` over 2×3 f32 that keep `exp(x)` (binding 1) at every point.
fn kept_exp_sum() -> LoopKernel {
    let mut k = exp_kernel();
    k.name = "kept_exp_sum".into();
    k.parallel_rank = 1;
    k.reduction = Some(ReduceOp::Sum);
    k.bindings.push(binding(DType::F32, 2, Access::Write));
    k.store = Store {
        binding: 2,
        map: IndexMap::new(0, &[1]),
    };
    k.keep = Some(Keep {
        node: 1,
        binding: 1,
        map: IndexMap::new(0, &[3, 1]),
    });
    k
}

#[test]
fn a_kept_value_is_stored_at_every_point_and_reduced() {
    let k = kept_exp_sum();
    k.validate().unwrap();
    let x = [0.0f32, 1.0, -2.0, 0.5, 3.0, -1.0];
    let (mut input, mut kept, mut sums) = (f32_bytes(&x), vec![0u8; 24], vec![0u8; 8]);
    run_kernel(&k, &mut [&mut input, &mut kept, &mut sums]).unwrap();
    let exps: Vec<f32> = x.iter().map(|v| v.exp()).collect();
    assert_eq!(f32s(&kept), exps);
    let row = |r: &[f32]| r.iter().fold(0.0f32, |a, &v| a + v);
    assert_eq!(f32s(&sums), vec![row(&exps[..3]), row(&exps[3..])]);
    // The kept node stays live when the result is another node.
    let mut k = kept_exp_sum();
    k.result = 0;
    assert_eq!(k.live_nodes(), vec![true, true]);
    assert!(k
        .to_string()
        .contains("keep %1 at b1[0 + 3*i0 + i1] at every point"));
}

#[test]
fn kept_values_break_no_rule() {
    let bad = |k: &LoopKernel, why: &str| {
        assert!(
            matches!(k.validate(), Err(KernelError::Keep { why: w, .. }) if w == why),
            "{:?}",
            k.validate()
        );
    };
    let mut k = kept_exp_sum();
    k.reduction = None;
    k.parallel_rank = 2;
    k.store.map = IndexMap::new(0, &[1, 0]);
    bad(&k, "the kernel does not reduce");
    let mut k = kept_exp_sum();
    k.keep.as_mut().unwrap().binding = 2;
    bad(&k, "its binding is the store's");
    let mut k = kept_exp_sum();
    k.keep.as_mut().unwrap().binding = 0;
    bad(&k, "a node reads its binding");
    let mut k = kept_exp_sum();
    k.keep.as_mut().unwrap().node = 7;
    bad(&k, "it names no node");
    // Read-only, of another dtype, past the end, or over the parallel dims only.
    let mut k = kept_exp_sum();
    k.bindings[1].access = Access::Read;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BindingAccess { .. })
    ));
    let mut k = kept_exp_sum();
    k.bindings[1].dtype = DType::F64;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BindingDType { .. })
    ));
    let mut k = kept_exp_sum();
    k.keep.as_mut().unwrap().map = IndexMap::new(1, &[3, 1]);
    assert!(matches!(k.validate(), Err(KernelError::OutOfBounds { .. })));
    let mut k = kept_exp_sum();
    k.keep.as_mut().unwrap().map = IndexMap::new(0, &[3]);
    assert!(matches!(k.validate(), Err(KernelError::StrideCount { .. })));
}
