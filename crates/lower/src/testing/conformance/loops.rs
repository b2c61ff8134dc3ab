//! Loop nests: reductions (kept values too), maps (transposed, blocked like transposes, broadcast,
//! reversed), lengths around every vector width, workgroup splits, 64-bit strides, in-place
//! updates, uniform values with imports and gathers, and kernels with more live values than
//! registers.

use accy_artifact::Access;
use accy_ir::{BinaryOp, DType, ReduceOp, UnaryOp};
use smallvec::SmallVec;

use super::Conformance;
use crate::kernel::{IndexMap, KernelNode, LoopKernel, Node, Store};
use crate::testing::kernels::{
    binary_2d, binding as kb, bits_of, blocked_transpose, buffers_for, data, edge_values,
    elementwise, load, node as kn, reduce_2d, DTYPES,
};

pub(super) fn reductions(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for &op in ReduceOp::ALL {
        for dtype in DTYPES {
            // 149 points: unrolled rounds into several accumulators, then single vectors,
            // then a tail, on every tier's lane count; 16, 32 and 64: whole vectors on every
            // tier, rows that leave no tail and keep their slots (`x64/vector_reduce.rs`).
            let shapes = [(4u64, 7u64), (3, 0), (0, 4), (1, 1), (2, 19), (2, 149)];
            for (p, r) in shapes.into_iter().chain([(5, 16), (3, 32), (2, 64)]) {
                let k = reduce_2d(op, dtype, p, r);
                if k.validate().is_ok() {
                    s.check(&k, &buffers_for(&k, 7), 1)?;
                }
            }
            // Every edge value in each row, reduced over the rows' trailing dim or over all;
            // rows of the edge values repeated past 150 points put each in every accumulator.
            let edges = edge_values(dtype).len();
            for (parallel_rank, repeats) in [(0u32, 1), (1, 1), (1, 150usize.div_ceil(edges))] {
                let cols = (edges * repeats) as u64;
                let rows = 3u64;
                let input: Vec<u8> = edge_values(dtype).concat().repeat(repeats * rows as usize);
                let mut k = reduce_2d(op, dtype, rows, cols);
                k.parallel_rank = parallel_rank;
                let kept = if parallel_rank == 1 { rows } else { 1 };
                k.bindings[1].elements = kept;
                k.store.map = IndexMap::new(0, &vec![1; parallel_rank as usize]);
                let out = vec![0xA5; (kept * dtype.size_bytes()) as usize];
                s.check_if_valid(&k, &[input.clone(), out], 2)?;
            }
        }
    }
    super::extremes::signed_zero_extremes(s)?;
    super::kept::kept_values(s)?;
    for dtype in [DType::F32, DType::I64, DType::U8] {
        // Everything reduced to one value, over 1 and 3 workgroups.
        let mut k = reduce_2d(ReduceOp::Sum, dtype, 1, 10);
        k.dims = SmallVec::from_slice(&[10]);
        k.parallel_rank = 0;
        k.nodes = vec![load(0, 0, &[1], dtype)];
        k.store.map = IndexMap::new(0, &[]);
        s.check(&k, &buffers_for(&k, 7), 1)?;
        s.check(&k, &buffers_for(&k, 7), 3)?;
        // No dims at all: stores op(identity, x) once (a sum turns -0.0 into +0.0).
        let mut k0 = k.clone();
        k0.dims = SmallVec::new();
        k0.nodes = vec![load(0, 0, &[], dtype)];
        s.check(&k0, &buffers_for(&k0, 7), 1)?;
        k0.reduction = None;
        s.check(&k0, &buffers_for(&k0, 7), 2)?;
    }
    // Terms whose sum depends on the order (1e8 swamps the ones unless they come first):
    // exact mode must give the row-major sum bit for bit, default mode stay within the bound.
    let r = 64u64;
    let terms: Vec<u8> = (0..r)
        .flat_map(|i| if i % 16 == 0 { 1e8f32 } else { 1.0 }.to_le_bytes())
        .collect();
    let k = reduce_2d(ReduceOp::Sum, DType::F32, 1, r);
    s.check(&k, &[terms, vec![0; 4]], 1)
}

pub(super) fn maps(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        // (3, 32) and (4, 48) are whole vectors on every tier and width, so runs with no
        // tail and no restore (x64's pinned whole runs) meet reversed and broadcast maps.
        for (n, m) in [(5u64, 13u64), (1, 1), (3, 8), (2, 33), (3, 32), (4, 48)] {
            // a transposed (an m × n buffer read column-wise), b broadcast along the inner dim.
            let k = binary_2d(
                [n, m],
                dtype,
                (n * m, 0, [1, n as i64]),
                (n, 0, [1, 0]),
                BinaryOp::Sub,
            );
            s.check(&k, &buffers_for(&k, 7), 1)?;
            // a reversed along both dims, b broadcast along the outer dim.
            let last = (n * m) as i64 - 1;
            let k = binary_2d(
                [n, m],
                dtype,
                (n * m, last, [-(m as i64), -1]),
                (m, 0, [0, 1]),
                BinaryOp::Max,
            );
            s.check(&k, &buffers_for(&k, 7), 1)?;
        }
    }
    // Transposes blocked as the planner blocks them (`plan::blocking`), with an operand read
    // contiguously beside the transposed one, in both block orders: on x64's AVX2 path the
    // transposed operand is read through tiles (inner runs of 4 to 256).
    for dtype in [DType::F32, DType::I32, DType::F64, DType::I64] {
        let cases = [
            (32u64, 128u64, 64u64, 64u64),
            (48, 16, 64, 8),
            (128, 256, 256, 128),
            (64, 512, 128, 256),
            (64, 32, 128, 16),
            // Runs of 4 and 12: whole vectors of 8-byte lanes, not of 4-byte ones.
            (16, 16, 64, 4),
            (32, 24, 64, 12),
        ];
        for ((n, m, line_bytes, run), along_rows) in cases
            .into_iter()
            .flat_map(|case| [(case, false), (case, true)])
        {
            let block = crate::TransposeBlock {
                line_bytes,
                run,
                along_rows,
            };
            let k = blocked_transpose(n, m, dtype, block);
            for workgroups in [1, 3] {
                s.check(&k, &buffers_for(&k, 7), workgroups)?;
            }
        }
    }
    // Unblocked: the last two axes of [2, 4, 16] swapped, a run of 4 (one vector of 8-byte
    // lanes, half of one of 4-byte lanes).
    for dtype in [DType::F64, DType::F32] {
        let swap = LoopKernel {
            name: format!("tile_run_4_{dtype}"),
            dims: SmallVec::from_slice(&[2, 16, 4]),
            parallel_rank: 3,
            bindings: vec![kb(dtype, 128, Access::Read), kb(dtype, 128, Access::Write)],
            nodes: vec![load(0, 0, &[64, 1, 16], dtype)],
            result: 0,
            reduction: None,
            store: Store {
                binding: 1,
                map: IndexMap::new(0, &[64, 4, 1]),
            },
            prefetch: None,
            row_scratch: Vec::new(),
            keep: None,
            at_most_zero: Vec::new(),
        };
        for workgroups in [1, 2] {
            s.check(&swap, &buffers_for(&swap, 9), workgroups)?;
        }
    }
    // An empty inner dim under outer loops that run: a read that would tile reads nothing.
    let empty_inner = LoopKernel {
        name: "tile_empty_inner".into(),
        dims: SmallVec::from_slice(&[2, 16, 0]),
        parallel_rank: 3,
        bindings: vec![
            kb(DType::F32, 16, Access::Read),
            kb(DType::F32, 1, Access::Write),
        ],
        nodes: vec![load(0, 0, &[0, 1, 16], DType::F32)],
        result: 0,
        reduction: None,
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[0, 0, 1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    s.check(&empty_inner, &buffers_for(&empty_inner, 3), 1)?;
    // Six transposed reads of 128-long runs: more tiles than the frame budget holds, so the
    // later reads gather.
    let reads = 6u32;
    let mut nodes: Vec<KernelNode> = (0..reads)
        .map(|b| load(b, 0, &[4096, 1, 32], DType::F32))
        .collect();
    for i in 1..reads {
        let lhs = if i == 1 { 0 } else { nodes.len() as u32 - 1 };
        nodes.push(kn(
            Node::Binary {
                op: BinaryOp::Add,
                lhs,
                rhs: i,
            },
            DType::F32,
        ));
    }
    let mut bindings: Vec<_> = (0..reads)
        .map(|_| kb(DType::F32, 8192, Access::Read))
        .collect();
    bindings.push(kb(DType::F32, 8192, Access::Write));
    let many_tiles = LoopKernel {
        name: "many_tiles".into(),
        dims: SmallVec::from_slice(&[2, 32, 128]),
        parallel_rank: 3,
        bindings,
        result: nodes.len() as u32 - 1,
        nodes,
        reduction: None,
        store: Store {
            binding: reads,
            map: IndexMap::new(0, &[4096, 128, 1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    for workgroups in [1, 2] {
        s.check(&many_tiles, &buffers_for(&many_tiles, 5), workgroups)?;
    }
    // Three dims: a reversed everywhere, b broadcast, a column-major store.
    let k = LoopKernel {
        name: "maps_3d".into(),
        dims: SmallVec::from_slice(&[4, 3, 5]),
        parallel_rank: 3,
        bindings: vec![
            kb(DType::F32, 60, Access::Read),
            kb(DType::F32, 5, Access::Read),
            kb(DType::F32, 60, Access::Write),
        ],
        nodes: vec![
            load(0, 59, &[-15, -5, -1], DType::F32),
            load(1, 0, &[0, 0, 1], DType::F32),
            kn(
                Node::Binary {
                    op: BinaryOp::Sub,
                    lhs: 0,
                    rhs: 1,
                },
                DType::F32,
            ),
        ],
        result: 2,
        reduction: None,
        store: Store {
            binding: 2,
            map: IndexMap::new(0, &[1, 4, 12]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    for workgroups in [1, 2, 3, 7] {
        s.check(&k, &buffers_for(&k, 1), workgroups)?;
    }
    Ok(())
}

pub(super) fn vector_lengths(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for n in [0u64, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 64, 100] {
        for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
            let k = binary_2d([1, n], dtype, (n, 0, [0, 1]), (n, 0, [0, 1]), BinaryOp::Min);
            s.check(&k, &buffers_for(&k, 7), 1)?;
        }
    }
    // Chains of vector ops per lane width with contiguous loads, broadcast (stride-0) loads and
    // constants, at lengths around every vector width, in 2-D spaces over workgroups
    // (including empty rows).
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        use BinaryOp::{Add, And, Div, Max, Min, Mul, Or, Sub, Xor};
        use UnaryOp::{Abs, Ceil, Floor, Neg, Not, Round, Sqrt};
        let (binaries, unaries) = if dtype.is_float() {
            (
                [Add, Sub, Mul, Div, Max, Min],
                [Neg, Abs, Sqrt, Floor, Ceil, Round],
            )
        } else {
            (
                [Add, Sub, Mul, And, Or, Xor],
                [Neg, Not, Neg, Not, Neg, Not],
            )
        };
        let c = bits_of(&edge_values(dtype)[3]);
        for (bop, uop) in binaries.into_iter().zip(unaries) {
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
                let nodes = vec![
                    load(0, 0, &[cols as i64, 1], dtype),
                    // A column vector broadcast along the rows: uniform in the inner dim.
                    load(1, 0, &[1, 0], dtype),
                    kn(Node::Const { bits: c }, dtype),
                    kn(
                        Node::Binary {
                            op: bop,
                            lhs: 0,
                            rhs: 1,
                        },
                        dtype,
                    ),
                    kn(Node::Unary { op: uop, x: 3 }, dtype),
                    kn(
                        Node::Binary {
                            op: bop,
                            lhs: 4,
                            rhs: 2,
                        },
                        dtype,
                    ),
                ];
                let k = LoopKernel {
                    name: format!("vec_{dtype}_{bop}_{uop}_{rows}x{cols}"),
                    dims: SmallVec::from_slice(&[rows, cols]),
                    parallel_rank: 2,
                    bindings: vec![
                        kb(dtype, rows * cols, Access::Read),
                        kb(dtype, rows, Access::Read),
                        kb(dtype, rows * cols, Access::Write),
                    ],
                    nodes,
                    result: 5,
                    reduction: None,
                    store: Store {
                        binding: 2,
                        map: IndexMap::new(0, &[cols as i64, 1]),
                    },
                    prefetch: None,
                    row_scratch: Vec::new(),
                    keep: None,
                    at_most_zero: Vec::new(),
                };
                let buffers = vec![
                    data(dtype, (rows * cols) as usize, rows * 31 + cols),
                    data(dtype, rows as usize, cols),
                    vec![0xA5; (rows * cols * dtype.size_bytes()) as usize],
                ];
                for workgroups in [1, 3] {
                    s.check(&k, &buffers, workgroups)?;
                }
            }
        }
    }
    Ok(())
}

pub(super) fn workgroups(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    let k = binary_2d(
        [37, 5],
        DType::F32,
        (185, 0, [5, 1]),
        (37, 0, [1, 0]),
        BinaryOp::Div,
    );
    let r = reduce_2d(ReduceOp::Max, DType::I32, 37, 6);
    for wgs in [1, 2, 5, 36, 37, 64] {
        s.check(&k, &buffers_for(&k, 7), wgs)?;
        s.check(&r, &buffers_for(&r, 7), wgs)?;
    }
    Ok(())
}

pub(super) fn wide_strides(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
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
        s.check(&k, &buffers_for(&k, 7), 1)?;
        s.check(&k3, &buffers_for(&k3, 7), 1)?;
    }
    Ok(())
}

pub(super) fn in_place(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    // x[i] = x[i] + x[i] (same map), and x[i] = x[i - 1] + x[i], which reads the previous
    // point's store and so must run point by point.
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
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    s.check(&same, &buffers_for(&same, 7), 1)?;
    let mut scan = same.clone();
    scan.name = "prefix_sum".into();
    scan.dims = SmallVec::from_slice(&[n - 1]);
    scan.nodes = vec![
        load(0, 0, &[1], DType::F32),
        load(0, 1, &[1], DType::F32),
        kn(
            Node::Binary {
                op: BinaryOp::Add,
                lhs: 0,
                rhs: 1,
            },
            DType::F32,
        ),
    ];
    scan.result = 2;
    scan.store.map = IndexMap::new(1, &[1]);
    s.check(&scan, &buffers_for(&scan, 7), 1)
}

pub(super) fn uniform_values(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    // out[i, j] = exp(b[i]) * a[i, j] + table[clamp(idx[i])]: uniform nodes (an import call, a
    // gather) evaluated once per row ahead of a vector loop.
    let (p, q) = (6u64, 11u64);
    let f = DType::F32;
    let k = LoopKernel {
        name: "row_scale".into(),
        dims: SmallVec::from_slice(&[p, q]),
        parallel_rank: 2,
        bindings: vec![
            kb(f, p * q, Access::Read),
            kb(f, p, Access::Read),
            kb(DType::I32, p, Access::Read),
            kb(f, 5, Access::Read),
            kb(f, p * q, Access::Write),
        ],
        nodes: vec![
            load(0, 0, &[q as i64, 1], f),
            load(1, 0, &[1, 0], f),
            kn(
                Node::Unary {
                    op: UnaryOp::Exp,
                    x: 1,
                },
                f,
            ),
            kn(
                Node::Binary {
                    op: BinaryOp::Mul,
                    lhs: 2,
                    rhs: 0,
                },
                f,
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
                f,
            ),
            kn(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 3,
                    rhs: 5,
                },
                f,
            ),
        ],
        result: 6,
        reduction: None,
        store: Store {
            binding: 4,
            map: IndexMap::new(0, &[q as i64, 1]),
        },
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    s.check(&k, &buffers_for(&k, 7), 1)?;
    s.check(&k, &buffers_for(&k, 7), 4)
}

pub(super) fn many_values(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    // A chain keeping 20 loads live at once: more than any ISA's vector registers hold.
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
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    s.check(&k, &buffers_for(&k, 7), 1)?;
    // Thousands of nodes: a frame past the short offset forms of every ISA.
    let extra: Vec<KernelNode> = (0..4000u32)
        .map(|i| {
            kn(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: i,
                    rhs: 0,
                },
                DType::F64,
            )
        })
        .collect();
    let big = elementwise("large_frame", 5, &[DType::F64], extra);
    s.check(&big, &buffers_for(&big, 9), 1)
}
