//! Emission never panics: kernels that break the shape facts emission relies on, or that
//! need more stack than the ABI allows, come back as [`EmitError`]s on every tier.

use accy_ir::{BinaryOp, DType};

use crate::compile::Options;
use crate::kernel::{IndexMap, KernelNode, LoopKernel, Node};
use crate::target::{EmitError, Target};
use crate::testing::kernels::copy_f32x4 as base;
use crate::x64::{X64Target, X64Tier};

fn emit_all(k: &LoopKernel) -> Vec<Result<usize, EmitError>> {
    X64Tier::ALL
        .into_iter()
        .map(|t| {
            X64Target::new(t)
                .emit(std::slice::from_ref(k), &Options::default())
                .map(|c| c.code.len())
        })
        .collect()
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
    k.nodes[0].node = Node::Load {
        binding: 0,
        map: IndexMap::new(0, &[1, 1]),
    };
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
        for r in emit_all(&k) {
            assert!(
                matches!(r, Err(EmitError::Unsupported { .. })),
                "{r:?} for {k:?}"
            );
        }
    }
    assert!(emit_all(&base()).iter().all(Result::is_ok));
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
    for r in emit_all(&k) {
        match r {
            Err(EmitError::Unsupported { what, .. }) => {
                assert!(what.contains("stack frame"), "{what}")
            }
            other => panic!("{other:?}"),
        }
    }
    k.nodes.truncate(2000);
    k.result = 1999;
    assert!(emit_all(&k).iter().all(Result::is_ok));
}
