//! Every node kind × dtype, on edge values, for every tier this host runs; each kernel is
//! compared with the reference interpreter. Combinations the validator rejects (e.g. `sqrt`
//! on i32) are skipped, and each test asserts how many combinations it ran so a test that
//! silently checks nothing fails.

use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};
use smallvec::smallvec;

use super::harness::{check, host_target};
use crate::kernel::{IndexMap, KernelBinding, KernelNode, LoopKernel, Node, Store};
pub(crate) use crate::testing::kernels::edge_values;
use crate::x64::X64Tier;

pub(crate) const DTYPES: [DType; 6] = [
    DType::F32,
    DType::F64,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::Bool,
];

fn binding(dtype: DType, elements: usize, access: Access) -> KernelBinding {
    KernelBinding {
        dtype,
        elements: elements as u64,
        access,
    }
}

fn node(node: Node, dtype: DType) -> KernelNode {
    KernelNode { node, dtype }
}

fn load(binding: u32, dtype: DType) -> KernelNode {
    node(
        Node::Load {
            binding,
            map: IndexMap::new(0, &[1]),
        },
        dtype,
    )
}

/// A 1-D kernel over `n` points: bindings are `inputs` (read) then the output (written);
/// `nodes` are appended after one load per input, and the last node is the result.
fn elementwise(
    name: &str,
    n: usize,
    inputs: &[DType],
    extra: Vec<KernelNode>,
    out: DType,
) -> LoopKernel {
    let mut bindings: Vec<KernelBinding> = inputs
        .iter()
        .map(|&d| binding(d, n, Access::Read))
        .collect();
    bindings.push(binding(out, n, Access::Write));
    let mut nodes: Vec<KernelNode> = (0..inputs.len())
        .map(|i| load(i as u32, inputs[i]))
        .collect();
    nodes.extend(extra);
    LoopKernel {
        name: name.into(),
        dims: smallvec![n as u64],
        parallel_rank: 1,
        bindings,
        result: nodes.len() as u32 - 1,
        nodes,
        reduction: None,
        store: Store {
            binding: inputs.len() as u32,
            map: IndexMap::new(0, &[1]),
        },
    }
}

/// Buffers holding every tuple of edge values (one buffer per input, the cartesian product
/// laid out row-major), padded with one more point so vector loops also run a tail.
pub(crate) fn product_buffers(inputs: &[DType], out: DType) -> (usize, Vec<Vec<u8>>) {
    let values: Vec<Vec<Vec<u8>>> = inputs.iter().map(|&d| edge_values(d)).collect();
    let mut n = values.iter().map(Vec::len).product::<usize>();
    n += usize::from(n % 8 == 0);
    let mut buffers: Vec<Vec<u8>> = inputs.iter().map(|_| Vec::new()).collect();
    for p in 0..n {
        let mut rest = p;
        for (i, v) in values.iter().enumerate().rev() {
            buffers[i].extend_from_slice(&v[rest % v.len()]);
            rest /= v.len();
        }
    }
    buffers.push(vec![0xAB; n * out.size_bytes() as usize]);
    (n, buffers)
}

/// Runs `make(n)` on the product buffers of `inputs` for every tier, if it validates; returns
/// whether it did.
fn run_case(inputs: &[DType], out: DType, make: impl Fn(usize) -> LoopKernel) -> bool {
    let (n, buffers) = product_buffers(inputs, out);
    let kernel = make(n);
    if kernel.validate().is_err() {
        return false;
    }
    for target in X64Tier::ALL.into_iter().filter_map(host_target) {
        check(&target, &kernel, &buffers, 1);
    }
    true
}

#[test]
fn unary_ops_on_every_dtype() {
    let mut ran = 0;
    for &op in UnaryOp::ALL {
        for dt in DTYPES {
            let extra = vec![node(Node::Unary { op, x: 0 }, dt)];
            ran += usize::from(run_case(&[dt], dt, |n| {
                elementwise(&format!("{op}_{dt}"), n, &[dt], extra.clone(), dt)
            }));
        }
    }
    // 14 float ops (all but not) × 2, neg/abs/not on 3 integer types, not on bool.
    assert_eq!(ran, 28 + 9 + 1);
}

#[test]
fn binary_ops_on_every_dtype() {
    let mut ran = 0;
    for &op in BinaryOp::ALL {
        for dt in DTYPES {
            let extra = vec![node(Node::Binary { op, lhs: 0, rhs: 1 }, dt)];
            ran += usize::from(run_case(&[dt, dt], dt, |n| {
                elementwise(&format!("{op}_{dt}"), n, &[dt, dt], extra.clone(), dt)
            }));
        }
    }
    // 8 numeric ops × 5 numeric dtypes, 3 logic ops × 4, 3 shifts × 3.
    assert_eq!(ran, 40 + 12 + 9);
}

#[test]
fn compares_on_every_dtype() {
    let mut ran = 0;
    for &op in CompareOp::ALL {
        for dt in DTYPES {
            let extra = vec![node(Node::Compare { op, lhs: 0, rhs: 1 }, DType::Bool)];
            ran += usize::from(run_case(&[dt, dt], DType::Bool, |n| {
                elementwise(
                    &format!("{op}_{dt}"),
                    n,
                    &[dt, dt],
                    extra.clone(),
                    DType::Bool,
                )
            }));
        }
    }
    assert_eq!(ran, 36);
}

#[test]
fn converts_between_every_pair() {
    let mut ran = 0;
    for from in DTYPES {
        for to in DTYPES {
            let extra = vec![node(Node::Convert { x: 0 }, to)];
            ran += usize::from(run_case(&[from], to, |n| {
                elementwise(
                    &format!("convert_{from}_{to}"),
                    n,
                    &[from],
                    extra.clone(),
                    to,
                )
            }));
        }
    }
    assert_eq!(ran, 36);
}

#[test]
fn select_on_every_dtype() {
    let mut ran = 0;
    for dt in DTYPES {
        let extra = vec![node(
            Node::Select {
                cond: 0,
                on_true: 1,
                on_false: 2,
            },
            dt,
        )];
        ran += usize::from(run_case(&[DType::Bool, dt, dt], dt, |n| {
            elementwise(
                &format!("select_{dt}"),
                n,
                &[DType::Bool, dt, dt],
                extra.clone(),
                dt,
            )
        }));
    }
    assert_eq!(ran, 6);
}

#[test]
fn consts_and_indices_of_every_dtype() {
    let mut ran = 0;
    for dt in DTYPES {
        for bits in edge_values(dt) {
            let mut b = [0u8; 8];
            b[..bits.len()].copy_from_slice(&bits);
            let bits = u64::from_le_bytes(b);
            // out = x + const (or x xor const for bool), so the const meets a loaded value.
            let op = if dt == DType::Bool {
                BinaryOp::Xor
            } else {
                BinaryOp::Add
            };
            let extra = vec![
                node(Node::Const { bits }, dt),
                node(Node::Binary { op, lhs: 0, rhs: 1 }, dt),
            ];
            ran += usize::from(run_case(&[dt], dt, |n| {
                elementwise(&format!("const_{dt}"), n, &[dt], extra.clone(), dt)
            }));
        }
        for (scale, offset) in [(1i64, 0i64), (-3, 7), (1 << 33, -5), (0, 300)] {
            for dim in [Some(0), None] {
                let extra = vec![node(Node::Index { dim, scale, offset }, dt)];
                ran += usize::from(run_case(&[dt], dt, |n| {
                    elementwise(&format!("index_{dt}"), n, &[dt], extra.clone(), dt)
                }));
            }
        }
    }
    // Every const; indices on numeric dtypes only (iota has no bool).
    assert!(ran > 100, "{ran}");
}

#[test]
fn gathers_with_every_index_dtype() {
    let mut ran = 0;
    for index in [DType::I32, DType::I64, DType::U8] {
        for dt in DTYPES {
            // data[clamp(index, 0, 6)] from a 7-element table (binding 1).
            let table: Vec<u8> = edge_values(dt).into_iter().take(7).flatten().collect();
            let len = table.len() / dt.size_bytes() as usize;
            let (n, mut buffers) = product_buffers(&[index], dt);
            buffers.insert(1, table);
            let kernel = LoopKernel {
                name: format!("gather_{index}_{dt}"),
                dims: smallvec![n as u64],
                parallel_rank: 1,
                bindings: vec![
                    binding(index, n, Access::Read),
                    binding(dt, len, Access::Read),
                    binding(dt, n, Access::Write),
                ],
                nodes: vec![
                    load(0, index),
                    node(
                        Node::Gather {
                            binding: 1,
                            map: IndexMap::new(0, &[0]),
                            index: 0,
                            axis_len: len as u64,
                            axis_stride: 1,
                        },
                        dt,
                    ),
                ],
                result: 1,
                reduction: None,
                store: Store {
                    binding: 2,
                    map: IndexMap::new(0, &[1]),
                },
            };
            kernel.validate().expect("valid gather");
            for target in X64Tier::ALL.into_iter().filter_map(host_target) {
                check(&target, &kernel, &buffers, 1);
            }
            ran += 1;
        }
    }
    assert_eq!(ran, 18);
}
