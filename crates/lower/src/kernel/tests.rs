//! Tests of kernel validation (one per rule) and of the kernel interpreter.

use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};

use super::*;

fn binding(dtype: DType, elements: u64, access: Access) -> KernelBinding {
    KernelBinding {
        dtype,
        elements,
        access,
    }
}

fn node(node: Node, dtype: DType) -> KernelNode {
    KernelNode { node, dtype }
}

fn load(binding: u32, offset: i64, strides: &[i64]) -> Node {
    Node::Load {
        binding,
        map: IndexMap::new(offset, strides),
    }
}

/// `out[i, j] = exp(x[i, j])` over 2×3 f32.
fn exp_kernel() -> LoopKernel {
    LoopKernel {
        name: "exp".into(),
        dims: accy_ir::dims(&[2, 3]),
        parallel_rank: 2,
        bindings: vec![
            binding(DType::F32, 6, Access::Read),
            binding(DType::F32, 6, Access::Write),
        ],
        nodes: vec![
            node(load(0, 0, &[3, 1]), DType::F32),
            node(
                Node::Unary {
                    op: UnaryOp::Exp,
                    x: 0,
                },
                DType::F32,
            ),
        ],
        result: 1,
        reduction: None,
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[3, 1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i64s(b: &[u8]) -> Vec<i64> {
    b.chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn valid_kernel_passes() {
    assert_eq!(exp_kernel().validate(), Ok(()));
}

#[test]
fn shape_rules() {
    let mut k = exp_kernel();
    k.dims = accy_ir::dims(&[1; 9]);
    assert!(matches!(
        k.validate(),
        Err(KernelError::RankTooLarge { rank: 9, .. })
    ));
    let mut k = exp_kernel();
    k.parallel_rank = 3;
    assert!(matches!(
        k.validate(),
        Err(KernelError::ParallelRank {
            parallel_rank: 3,
            rank: 2,
            ..
        })
    ));
    let mut k = exp_kernel();
    k.parallel_rank = 1;
    assert!(matches!(
        k.validate(),
        Err(KernelError::ReductionDimsWithoutOp { count: 1, .. })
    ));
    let mut k = exp_kernel();
    k.bindings[0].elements = u64::MAX / 2;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BindingTooLarge { binding: 0, .. })
    ));
}

#[test]
fn operand_and_type_rules() {
    let mut k = exp_kernel();
    k.nodes[1].node = Node::Unary {
        op: UnaryOp::Exp,
        x: 1,
    };
    assert!(matches!(
        k.validate(),
        Err(KernelError::BadOperand {
            node: 1,
            operand: 1,
            ..
        })
    ));
    let mut k = exp_kernel();
    k.nodes[1].dtype = DType::F64;
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 1, .. })
    ));
    // exp of an integer is not typed.
    let mut k = exp_kernel();
    for b in &mut k.bindings {
        b.dtype = DType::I32;
    }
    k.nodes[0].dtype = DType::I32;
    k.nodes[1].dtype = DType::I32;
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 1, .. })
    ));
    // compare must give bool; select needs a bool condition; shifts need integers.
    let mut k = exp_kernel();
    k.nodes[1] = node(
        Node::Compare {
            op: CompareOp::Lt,
            lhs: 0,
            rhs: 0,
        },
        DType::F32,
    );
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 1, .. })
    ));
    let mut k = exp_kernel();
    k.nodes[1] = node(
        Node::Select {
            cond: 0,
            on_true: 0,
            on_false: 0,
        },
        DType::F32,
    );
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 1, .. })
    ));
    let mut k = exp_kernel();
    k.nodes[1] = node(
        Node::Binary {
            op: BinaryOp::Shl,
            lhs: 0,
            rhs: 0,
        },
        DType::F32,
    );
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 1, .. })
    ));
    // constants must fit their dtype.
    let mut k = exp_kernel();
    k.nodes[0] = node(Node::Const { bits: 1 << 32 }, DType::F32);
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 0, .. })
    ));
    k.nodes[0] = node(Node::Const { bits: 0x3f80_0000 }, DType::F32);
    assert_eq!(k.validate(), Ok(()));
    // an index must name a dim and cannot overflow over the space.
    let mut k = exp_kernel();
    let index = |dim, scale, offset| Node::Index { dim, scale, offset };
    k.nodes[0] = node(index(Some(2), 1, 0), DType::F32);
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 0, .. })
    ));
    k.nodes[0] = node(index(Some(1), i64::MAX / 2 + 1, 1), DType::F32);
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 0, .. })
    ));
    k.nodes[0] = node(index(Some(1), -4, 7), DType::F32);
    assert_eq!(k.validate(), Ok(()));
}

#[test]
fn binding_rules() {
    let mut k = exp_kernel();
    k.nodes[0].node = load(2, 0, &[3, 1]);
    assert!(matches!(
        k.validate(),
        Err(KernelError::UnknownBinding {
            site: Site::Node(0),
            binding: 2,
            count: 2,
            ..
        })
    ));
    let mut k = exp_kernel();
    k.bindings[0].dtype = DType::F64;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BindingDType {
            site: Site::Node(0),
            ..
        })
    ));
    let mut k = exp_kernel();
    k.bindings[0].access = Access::Write;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BindingAccess {
            site: Site::Node(0),
            access: Access::Write,
            ..
        })
    ));
    let mut k = exp_kernel();
    k.bindings[1].access = Access::Read;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BindingAccess {
            site: Site::Store,
            ..
        })
    ));
    let mut k = exp_kernel();
    k.bindings[1].dtype = DType::I32;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BindingDType {
            site: Site::Store,
            ..
        })
    ));
    let mut k = exp_kernel();
    k.result = 2;
    assert!(matches!(
        k.validate(),
        Err(KernelError::BadResult { result: 2, .. })
    ));
}

#[test]
fn bounds_rules() {
    let mut k = exp_kernel();
    k.nodes[0].node = load(0, 0, &[3]);
    assert!(matches!(
        k.validate(),
        Err(KernelError::StrideCount {
            expected: 2,
            found: 1,
            ..
        })
    ));
    let mut k = exp_kernel();
    k.nodes[0].node = load(0, 1, &[3, 1]);
    assert!(matches!(
        k.validate(),
        Err(KernelError::OutOfBounds {
            site: Site::Node(0),
            min: 1,
            max: 6,
            elements: 6,
            ..
        })
    ));
    // reverse of both dims: offset 5, strides -3, -1 reaches 0..=5.
    let mut k = exp_kernel();
    k.nodes[0].node = load(0, 5, &[-3, -1]);
    assert_eq!(k.validate(), Ok(()));
    k.nodes[0].node = load(0, 4, &[-3, -1]);
    assert!(matches!(
        k.validate(),
        Err(KernelError::OutOfBounds { min: -1, .. })
    ));
    let mut k = exp_kernel();
    k.store.map = IndexMap::new(0, &[3, 2]);
    assert!(matches!(
        k.validate(),
        Err(KernelError::OutOfBounds {
            site: Site::Store,
            max: 7,
            ..
        })
    ));
    // An empty space accesses nothing, so any map is in bounds.
    let mut k = exp_kernel();
    k.dims = accy_ir::dims(&[0, 3]);
    k.nodes[0].node = load(0, 100, &[3, 1]);
    k.store.map = IndexMap::new(-9, &[3, 1]);
    assert_eq!(k.validate(), Ok(()));
}

/// `out[i] = table[clamp(idx[i])]` with a 4-element table.
fn gather_kernel(axis_len: u64, axis_stride: i64) -> LoopKernel {
    LoopKernel {
        name: "gather".into(),
        dims: accy_ir::dims(&[3]),
        parallel_rank: 1,
        bindings: vec![
            binding(DType::I64, 4, Access::Read),
            binding(DType::I32, 3, Access::Read),
            binding(DType::I64, 3, Access::Write),
        ],
        nodes: vec![
            node(load(1, 0, &[1]), DType::I32),
            node(
                Node::Gather {
                    binding: 0,
                    map: IndexMap::new(0, &[0]),
                    index: 0,
                    axis_len,
                    axis_stride,
                },
                DType::I64,
            ),
        ],
        result: 1,
        reduction: None,
        store: Store {
            binding: 2,
            map: IndexMap::new(0, &[1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    }
}

#[test]
fn gather_rules_and_clamping() {
    assert!(matches!(
        gather_kernel(5, 1).validate(),
        Err(KernelError::OutOfBounds { max: 4, .. })
    ));
    assert!(matches!(
        gather_kernel(0, 1).validate(),
        Err(KernelError::NodeType { node: 1, .. })
    ));
    let mut k = gather_kernel(4, 1);
    k.nodes[0].dtype = DType::F32;
    k.bindings[1].dtype = DType::F32;
    assert!(matches!(
        k.validate(),
        Err(KernelError::NodeType { node: 1, .. })
    ));

    let k = gather_kernel(4, 1);
    let mut table = i64_bytes(&[10, 11, 12, 13]);
    let mut idx: Vec<u8> = [-5i32, 2, 99]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let mut out = vec![0u8; 24];
    run_kernel(&k, &mut [&mut table, &mut idx, &mut out]).unwrap();
    assert_eq!(i64s(&out), vec![10, 12, 13]);
}

mod facts;
mod interp;
mod keep;
mod row_scratch;
