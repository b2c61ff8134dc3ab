//! The AArch64 backend under emulation, kernel by kernel, against the reference kernel
//! interpreter (`accy_lower::kernel::run_kernel`), bit for bit (any NaN equals any NaN):
//! every node kind × dtype on edge values, reductions, multi-dim maps and workgroups, random
//! kernels from the shared generator, and the ABI checks (statuses, callee-saved registers,
//! guard pages — the harness checks those on every run).

mod common;

use accy_artifact::abi::{ABI_VERSION, KERNEL_ABI_MISMATCH, KERNEL_BINDING_MISMATCH, KERNEL_OK};
use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};
use accy_lower::aarch64::A64Target;
use accy_lower::kernel::{IndexMap, KernelBinding, KernelNode, LoopKernel, Node, NodeId, Store};
use accy_lower::testing::kernels::{data, edge_values, random_kernel, DTYPES};
use accy_lower::Target;
use common::{compare_with_interpreter, run_code, run_code_claiming, run_kernel_emulated};
use proptest::prelude::*;

const TARGET: A64Target = A64Target::new().with_float_reassociation(false);

fn binding(dtype: DType, elements: usize, access: Access) -> KernelBinding {
    KernelBinding {
        dtype,
        elements: elements as u64,
        access,
    }
}

fn load(binding: u32, dtype: DType) -> KernelNode {
    KernelNode {
        node: Node::Load {
            binding,
            map: IndexMap::new(0, &[1]),
        },
        dtype,
    }
}

/// A one-dim kernel over `n` points: `nodes` computes the last node from loads of the input
/// bindings `inputs`, stored into a fresh output binding of the result's dtype.
fn elementwise(name: &str, n: usize, inputs: &[DType], nodes: Vec<KernelNode>) -> LoopKernel {
    let result = nodes.len() as NodeId - 1;
    let out = nodes[result as usize].dtype;
    let mut bindings: Vec<KernelBinding> = inputs
        .iter()
        .map(|&d| binding(d, n, Access::Read))
        .collect();
    bindings.push(binding(out, n, Access::Write));
    LoopKernel {
        name: name.into(),
        dims: [n as u64].into_iter().collect(),
        parallel_rank: 1,
        bindings,
        nodes,
        result,
        reduction: None,
        store: Store {
            binding: inputs.len() as u32,
            map: IndexMap::new(0, &[1]),
        },
    }
}

/// Runs `k` (if it validates) on `inputs` plus a zeroed output; returns whether it ran.
fn run(k: &LoopKernel, inputs: Vec<Vec<u8>>, workgroups: u32) -> bool {
    if k.validate().is_err() {
        return false;
    }
    let mut buffers = inputs;
    let out = &k.bindings[k.store.binding as usize];
    buffers.push(vec![
        0;
        out.elements as usize * out.dtype.size_bytes() as usize
    ]);
    if let Err(e) = compare_with_interpreter(&TARGET, k, &buffers, workgroups) {
        panic!("{}: {e}", k.name);
    }
    true
}

/// Every pair of edge values of `dtype`, as two columns.
fn pairs(dtype: DType) -> (Vec<u8>, Vec<u8>, usize) {
    let e = edge_values(dtype);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for x in &e {
        for y in &e {
            a.extend_from_slice(x);
            b.extend_from_slice(y);
        }
    }
    (a, b, e.len() * e.len())
}

#[test]
fn aarch64_unary_nodes_every_dtype() {
    let mut ran = 0;
    for dtype in DTYPES {
        let e = edge_values(dtype);
        for &op in UnaryOp::ALL {
            let nodes = vec![
                load(0, dtype),
                KernelNode {
                    node: Node::Unary { op, x: 0 },
                    dtype,
                },
            ];
            let k = elementwise(&format!("{op}_{dtype}"), e.len(), &[dtype], nodes);
            ran += usize::from(run(&k, vec![e.concat()], 1));
        }
    }
    // Every op but `not` on both floats, not/neg/abs on the three integer dtypes, not on bool.
    let float_ops = UnaryOp::ALL.len() - 1;
    assert_eq!(ran, float_ops * 2 + 3 * 3 + 1, "unary kernels ran");
}

#[test]
fn aarch64_binary_nodes_every_dtype() {
    let mut ran = 0;
    for dtype in DTYPES {
        let (a, b, n) = pairs(dtype);
        for &op in BinaryOp::ALL {
            let nodes = vec![
                load(0, dtype),
                load(1, dtype),
                KernelNode {
                    node: Node::Binary { op, lhs: 0, rhs: 1 },
                    dtype,
                },
            ];
            let k = elementwise(&format!("{op}_{dtype}"), n, &[dtype, dtype], nodes);
            ran += usize::from(run(&k, vec![a.clone(), b.clone()], 2));
        }
    }
    assert!(ran >= 50, "only {ran} binary kernels ran");
}

#[test]
fn aarch64_compare_and_select_every_dtype() {
    let mut ran = 0;
    for dtype in DTYPES {
        let (a, b, n) = pairs(dtype);
        for &op in CompareOp::ALL {
            let nodes = vec![
                load(0, dtype),
                load(1, dtype),
                KernelNode {
                    node: Node::Compare { op, lhs: 0, rhs: 1 },
                    dtype: DType::Bool,
                },
                // Select on the comparison: exercises bool conditions from compares.
                KernelNode {
                    node: Node::Select {
                        cond: 2,
                        on_true: 0,
                        on_false: 1,
                    },
                    dtype,
                },
            ];
            let mut k = elementwise(&format!("{op}_{dtype}"), n, &[dtype, dtype], nodes);
            ran += usize::from(run(&k, vec![a.clone(), b.clone()], 1));
            // The compare's own bool result.
            k.nodes.pop();
            k.result = 2;
            k.bindings[2].dtype = DType::Bool;
            ran += usize::from(run(&k, vec![a.clone(), b.clone()], 1));
        }
    }
    assert_eq!(ran, 6 * 6 * 2);
}

#[test]
fn aarch64_convert_every_dtype_pair() {
    let mut ran = 0;
    for from in DTYPES {
        let e = edge_values(from);
        for to in DTYPES {
            let nodes = vec![
                load(0, from),
                KernelNode {
                    node: Node::Convert { x: 0 },
                    dtype: to,
                },
            ];
            let k = elementwise(&format!("convert_{from}_{to}"), e.len(), &[from], nodes);
            ran += usize::from(run(&k, vec![e.concat()], 1));
        }
    }
    assert_eq!(ran, 36);
}

#[test]
fn aarch64_const_index_and_gather() {
    let mut ran = 0;
    for dtype in DTYPES {
        for (i, v) in edge_values(dtype).iter().enumerate() {
            let mut bits = [0u8; 8];
            bits[..v.len()].copy_from_slice(v);
            let nodes = vec![KernelNode {
                node: Node::Const {
                    bits: u64::from_le_bytes(bits),
                },
                dtype,
            }];
            let k = elementwise(&format!("const_{dtype}_{i}"), 3, &[], nodes);
            ran += usize::from(run(&k, vec![], 1));
        }
        for (scale, offset) in [(1, 0), (-3, 5), (1 << 40, -7), (i64::MAX, i64::MIN)] {
            for dim in [Some(0), None] {
                let nodes = vec![KernelNode {
                    node: Node::Index { dim, scale, offset },
                    dtype,
                }];
                let k = elementwise(&format!("index_{dtype}"), 9, &[], nodes);
                ran += usize::from(run(&k, vec![], 2));
            }
        }
    }
    // Gather with every integer index dtype (edge values, so clamping both ways) from every
    // table dtype.
    for itype in [DType::I32, DType::I64, DType::U8, DType::Bool] {
        let idx = edge_values(itype);
        for table in DTYPES {
            let len = 7;
            let nodes = vec![
                load(0, itype),
                KernelNode {
                    node: Node::Gather {
                        binding: 1,
                        map: IndexMap::new(0, &[0]),
                        index: 0,
                        axis_len: len,
                        axis_stride: 1,
                    },
                    dtype: table,
                },
            ];
            let mut k = elementwise(
                &format!("gather_{itype}_{table}"),
                idx.len(),
                &[itype, table],
                nodes,
            );
            k.bindings[1].elements = len;
            ran += usize::from(run(&k, vec![idx.concat(), data(table, len as usize, 3)], 2));
        }
    }
    assert!(ran > 150, "only {ran} kernels ran");
}

/// `[rows, cols]` reductions of every op and dtype over the trailing dim (and over both).
#[test]
fn aarch64_reductions_every_op_and_dtype() {
    let mut ran = 0;
    for dtype in DTYPES {
        let e = edge_values(dtype);
        let (rows, cols) = (3u64, e.len() as u64);
        for &op in ReduceOp::ALL {
            for parallel_rank in [0u32, 1] {
                let parallel: Vec<u64> = [rows].into_iter().take(parallel_rank as usize).collect();
                let k = LoopKernel {
                    name: format!("reduce_{op}_{dtype}_{parallel_rank}"),
                    dims: [rows, cols].into_iter().collect(),
                    parallel_rank,
                    bindings: vec![
                        binding(dtype, (rows * cols) as usize, Access::Read),
                        binding(
                            dtype,
                            parallel.iter().product::<u64>() as usize,
                            Access::Write,
                        ),
                    ],
                    nodes: vec![KernelNode {
                        node: Node::Load {
                            binding: 0,
                            map: IndexMap::new(0, &[cols as i64, 1]),
                        },
                        dtype,
                    }],
                    result: 0,
                    reduction: Some(op),
                    store: Store {
                        binding: 1,
                        map: IndexMap::row_major(&parallel).expect("map"),
                    },
                };
                let input = data(dtype, (rows * cols) as usize, 11);
                ran += usize::from(run(&k, vec![input], 2));
            }
        }
    }
    assert!(ran >= 40, "only {ran} reductions ran");
}

/// Strided, broadcast and reversed maps over three dims, split over workgroups.
#[test]
fn aarch64_multi_dim_maps_and_workgroups() {
    let dims = [4u64, 3, 5];
    for workgroups in [1, 2, 3, 7] {
        let k = LoopKernel {
            name: "maps".into(),
            dims: dims.into_iter().collect(),
            parallel_rank: 3,
            bindings: vec![
                binding(DType::F32, 60, Access::Read),
                binding(DType::F32, 5, Access::Read),
                binding(DType::F32, 60, Access::Write),
            ],
            nodes: vec![
                KernelNode {
                    node: Node::Load {
                        binding: 0,
                        map: IndexMap::new(59, &[-15, -5, -1]),
                    },
                    dtype: DType::F32,
                },
                KernelNode {
                    node: Node::Load {
                        binding: 1,
                        map: IndexMap::new(0, &[0, 0, 1]),
                    },
                    dtype: DType::F32,
                },
                KernelNode {
                    node: Node::Binary {
                        op: BinaryOp::Sub,
                        lhs: 0,
                        rhs: 1,
                    },
                    dtype: DType::F32,
                },
            ],
            result: 2,
            reduction: None,
            store: Store {
                binding: 2,
                map: IndexMap::new(0, &[1, 4, 12]),
            },
        };
        assert!(run(
            &k,
            vec![data(DType::F32, 60, 1), data(DType::F32, 5, 2)],
            workgroups
        ));
    }
}

/// Many live nodes: a frame past the scaled `ldr`/`str` offset range (the far-offset path).
#[test]
fn aarch64_large_frame() {
    let mut nodes = vec![load(0, DType::F64)];
    for i in 0..4000u32 {
        nodes.push(KernelNode {
            node: Node::Binary {
                op: BinaryOp::Add,
                lhs: i,
                rhs: 0,
            },
            dtype: DType::F64,
        });
    }
    let k = elementwise("large_frame", 5, &[DType::F64], nodes);
    k.validate().expect("valid");
    assert!(run(&k, vec![data(DType::F64, 5, 9)], 1));
}

#[test]
fn aarch64_abi_statuses() {
    let k = elementwise("abi", 4, &[DType::I32], vec![load(0, DType::I32)]);
    let code = TARGET.emit(std::slice::from_ref(&k)).expect("emit");
    let mut buffers = vec![data(DType::I32, 4, 1), vec![0; 16]];
    // A wrong ABI version and an out-of-range workgroup are refused without touching memory.
    let s = run_code(&code.code, 0, &mut buffers, 1, ABI_VERSION + 1).expect("run");
    assert_eq!(s, vec![KERNEL_ABI_MISMATCH]);
    assert_eq!(buffers[1], vec![0; 16]);
    let s = run_code(&code.code, 0, &mut buffers, 2, ABI_VERSION).expect("run");
    assert_eq!(s, vec![KERNEL_OK, KERNEL_OK]);
    assert_eq!(buffers[1], buffers[0]);
    assert_eq!(TARGET.spec().arch, accy_artifact::Arch::Aarch64);
}

/// A dispatch with the wrong binding count, or a binding shorter than the kernel accesses,
/// is refused with `KERNEL_BINDING_MISMATCH` before any access.
#[test]
fn aarch64_binding_checks() {
    let k = elementwise("bindings", 8, &[DType::I64], vec![load(0, DType::I64)]);
    let code = TARGET.emit(std::slice::from_ref(&k)).expect("emit").code;
    let mut buffers = vec![data(DType::I64, 7, 1), vec![0; 64]];
    let s = run_kernel_emulated(&TARGET, &k, &mut buffers, 2).expect("run");
    assert_eq!(s, vec![KERNEL_BINDING_MISMATCH; 2]);
    let s = run_code_claiming(&code, 0, &mut buffers, 1, ABI_VERSION, &[64]).expect("run");
    assert_eq!(s, vec![KERNEL_BINDING_MISMATCH]);
    let s = run_code_claiming(&code, 0, &mut buffers, 1, ABI_VERSION, &[64, 64, 64]).expect("run");
    assert_eq!(s, vec![KERNEL_BINDING_MISMATCH]);
    assert_eq!(buffers[1], vec![0; 64], "nothing written");
}

/// The guard pages catch an access one element past a binding: a binding claimed one
/// element longer than it is (so the kernel's own check passes) faults instead of passing.
#[test]
fn aarch64_guard_pages_catch_overruns() {
    let k = elementwise("overrun", 8, &[DType::I64], vec![load(0, DType::I64)]);
    let code = TARGET.emit(std::slice::from_ref(&k)).expect("emit").code;
    let mut buffers = vec![data(DType::I64, 7, 1), vec![0; 64]];
    let err = run_code_claiming(&code, 0, &mut buffers, 1, ABI_VERSION, &[64, 64])
        .expect_err("must fault");
    assert!(err.contains("READ_UNMAPPED"), "{err}");
}

#[test]
fn aarch64_random_kernels() {
    let config = ProptestConfig {
        cases: 600,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(seed in any::<u64>())| {
        if let Some((kernel, workgroups)) = random_kernel(seed) {
            let buffers: Vec<Vec<u8>> = kernel
                .bindings
                .iter()
                .enumerate()
                .map(|(i, b)| data(b.dtype, b.elements as usize, seed ^ i as u64))
                .collect();
            if let Err(e) = compare_with_interpreter(&TARGET, &kernel, &buffers, workgroups) {
                panic!("seed {seed:#x}: {e}");
            }
        }
    });
}

/// A negative control: the harness notices wrong code. The `fadd` of an add kernel is
/// patched into `fsub`, and the result must then differ from the interpreter's: 3 points run
/// the scalar loop only, 4 points the NEON loop only.
#[test]
fn aarch64_harness_catches_a_patched_instruction() {
    // fadd/fsub s0, s0, s1 and fadd/fsub v18.4s, v16.4s, v17.4s.
    for (n, fadd, fsub) in [
        (3usize, 0x1e21_2800u32, 0x1e21_3800u32),
        (4, 0x4e31_d612, 0x4eb1_d612),
    ] {
        let nodes = vec![
            load(0, DType::F32),
            load(1, DType::F32),
            KernelNode {
                node: Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 0,
                    rhs: 1,
                },
                dtype: DType::F32,
            },
        ];
        let k = elementwise("patched", n, &[DType::F32, DType::F32], nodes);
        let mut code = TARGET.emit(std::slice::from_ref(&k)).expect("emit").code;
        let ones = 1f32.to_le_bytes().repeat(n);
        let mut buffers = vec![ones.clone(), ones.clone(), vec![0; 4 * n]];
        run_code(&code, 0, &mut buffers, 1, ABI_VERSION).expect("run");
        assert_eq!(
            buffers[2],
            2f32.to_le_bytes().repeat(n),
            "1 + 1 from the emitted code"
        );
        let at = code
            .chunks(4)
            .position(|w| w == fadd.to_le_bytes())
            .expect("the fadd");
        code[4 * at..4 * at + 4].copy_from_slice(&fsub.to_le_bytes());
        let mut buffers = vec![ones.clone(), ones, vec![0; 4 * n]];
        run_code(&code, 0, &mut buffers, 1, ABI_VERSION).expect("run");
        assert_eq!(
            buffers[2],
            0f32.to_le_bytes().repeat(n),
            "1 - 1 from the patched code"
        );
    }
}

/// The NEON loop and its scalar tail: chains of every vector op over each lane width, with
/// contiguous loads, broadcast (stride-0) loads and constants, at lengths around the vector
/// width, in 2-dim spaces split over workgroups (including empty rows).
#[test]
fn aarch64_vector_loops_and_tails() {
    let mut ran = 0;
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let binaries: Vec<BinaryOp> = if dtype.is_float() {
            vec![
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::Div,
                BinaryOp::Max,
                BinaryOp::Min,
            ]
        } else {
            vec![
                BinaryOp::Add,
                BinaryOp::Sub,
                BinaryOp::Mul,
                BinaryOp::And,
                BinaryOp::Or,
                BinaryOp::Xor,
            ]
        };
        let unaries: Vec<UnaryOp> = if dtype.is_float() {
            vec![
                UnaryOp::Neg,
                UnaryOp::Abs,
                UnaryOp::Sqrt,
                UnaryOp::Floor,
                UnaryOp::Ceil,
                UnaryOp::Round,
            ]
        } else {
            vec![
                UnaryOp::Neg,
                UnaryOp::Not,
                UnaryOp::Neg,
                UnaryOp::Not,
                UnaryOp::Neg,
                UnaryOp::Not,
            ]
        };
        let edge = edge_values(dtype);
        let mut cbits = [0u8; 8];
        cbits[..edge[3].len()].copy_from_slice(&edge[3]);
        for (bop, uop) in binaries.iter().zip(&unaries) {
            for (rows, cols) in [
                (1u64, 0u64),
                (2, 1),
                (3, 3),
                (2, 4),
                (3, 5),
                (1, 8),
                (4, 11),
                (0, 5),
            ] {
                let node = |node, dtype| KernelNode { node, dtype };
                let nodes = vec![
                    node(
                        Node::Load {
                            binding: 0,
                            map: IndexMap::new(0, &[cols as i64, 1]),
                        },
                        dtype,
                    ),
                    // A row vector broadcast down the columns: uniform along the inner dim.
                    node(
                        Node::Load {
                            binding: 1,
                            map: IndexMap::new(0, &[1, 0]),
                        },
                        dtype,
                    ),
                    node(
                        Node::Const {
                            bits: u64::from_le_bytes(cbits),
                        },
                        dtype,
                    ),
                    node(
                        Node::Binary {
                            op: *bop,
                            lhs: 0,
                            rhs: 1,
                        },
                        dtype,
                    ),
                    node(Node::Unary { op: *uop, x: 3 }, dtype),
                    node(
                        Node::Binary {
                            op: *bop,
                            lhs: 4,
                            rhs: 2,
                        },
                        dtype,
                    ),
                ];
                let k = LoopKernel {
                    name: format!("vec_{dtype}_{bop}_{uop}_{rows}x{cols}"),
                    dims: [rows, cols].into_iter().collect(),
                    parallel_rank: 2,
                    bindings: vec![
                        binding(dtype, (rows * cols) as usize, Access::Read),
                        binding(dtype, rows as usize, Access::Read),
                        binding(dtype, (rows * cols) as usize, Access::Write),
                    ],
                    nodes,
                    result: 5,
                    reduction: None,
                    store: Store {
                        binding: 2,
                        map: IndexMap::new(0, &[cols as i64, 1]),
                    },
                };
                let inputs = vec![
                    data(dtype, (rows * cols) as usize, rows * 31 + cols),
                    data(dtype, rows as usize, cols),
                ];
                for workgroups in [1, 3] {
                    assert!(run(&k, inputs.clone(), workgroups), "{} is invalid", k.name);
                    ran += 1;
                }
            }
        }
    }
    assert_eq!(ran, 4 * 6 * 8 * 2);
}

/// Arbitrary 64-bit constants and index scales/offsets: every `movz`/`movn`/`movk` sequence
/// and the add/multiply-by-immediate paths, against the interpreter (ranges where the index
/// arithmetic cannot overflow, which validation rejects).
#[test]
fn aarch64_arbitrary_immediates() {
    let config = ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    proptest!(config, |(bits in any::<u64>(), scale in -(1i64 << 60)..(1i64 << 60), offset in -(1i64 << 62)..(1i64 << 62), shift in 0u32..64)| {
        // Sparse bit patterns too, so the all-zero and all-one halfword cases are common.
        let sparse = bits & (u64::MAX >> shift) | if shift % 2 == 0 { 0 } else { u64::MAX << (64 - shift.max(1)) };
        for v in [bits, sparse] {
            let k = elementwise("const", 2, &[], vec![KernelNode { node: Node::Const { bits: v }, dtype: DType::I64 }]);
            prop_assert!(run(&k, vec![], 1));
        }
        let k = elementwise("index", 5, &[], vec![KernelNode {
            node: Node::Index { dim: Some(0), scale, offset },
            dtype: DType::I64,
        }]);
        prop_assert!(run(&k, vec![], 2));
    });
}
