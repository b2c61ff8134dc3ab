//! Every node kind × dtype on edge values: unary, binary, compare and select, convert,
//! constants and indices, gathers, and the nodes only the math expansions produce (`fma`,
//! `bitcast`, shifts by constants). Combinations the validator refuses are skipped; the group
//! floors in `GROUPS` catch a suite that silently checks nothing.

use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};
use smallvec::smallvec;

use super::Conformance;
use crate::kernel::{IndexMap, KernelNode, LoopKernel, Node, Store};
use crate::testing::kernels::{
    binary_2d, binding, bits_of, data, edge_values, elementwise, load, node, product_buffers,
    DTYPES,
};

/// One-instruction scaling by a power of two, on a target that has it: every pair of edge
/// values (NaN, ±inf, ±0, subnormals, fractional powers), on the vector path and, broadcast
/// along an inner dim, in the scalar code that computes a loop's uniform values; then powers
/// that take ordinary values into the subnormals and past the largest float, where the
/// single rounding and the overflow show.
fn scale_b(s: &mut Conformance<'_>) -> Result<(), String> {
    for dt in [DType::F32, DType::F64] {
        let scale = node(Node::ScaleB { x: 0, n: 1 }, dt);
        product_case(s, format!("scaleb_{dt}"), &[dt, dt], vec![scale.clone()], 1)?;
        let (n, buffers) = product_buffers(&[dt, dt], dt);
        let mut uniform = binary_2d([n, 3], dt, (n, 0, [1, 0]), (n, 0, [1, 0]), BinaryOp::Add);
        uniform.name = format!("scaleb_uniform_{dt}");
        uniform.nodes[2] = scale.clone();
        let out = vec![0xAB; buffers[0].len() * 3];
        s.check_if_valid(&uniform, &[buffers[0].clone(), buffers[1].clone(), out], 1)?;
        let count = 997;
        let x = data(dt, count, 21);
        // Powers from deep below the subnormals to past the overflow, fractional ones too.
        let (low, span) = if dt == DType::F32 {
            (-180.0, 440.0)
        } else {
            (-1130.0, 2300.0)
        };
        let powers: Vec<u8> = (0..count)
            .flat_map(|i| {
                let p: f64 = low + span * (i as f64 / count as f64) + (i % 3) as f64 * 0.25;
                match dt {
                    DType::F32 => (p as f32).to_le_bytes().to_vec(),
                    _ => p.to_le_bytes().to_vec(),
                }
            })
            .collect();
        let k = elementwise(
            &format!("scaleb_range_{dt}"),
            count as u64,
            &[dt, dt],
            vec![scale],
        );
        s.check(
            &k,
            &[x, powers, vec![0xAB; count * dt.size_bytes() as usize]],
            2,
        )?;
    }
    Ok(())
}

/// Checks `extra` applied to loads of `inputs` over their edge-value product, if it validates.
fn product_case(
    s: &mut Conformance<'_>,
    name: String,
    inputs: &[DType],
    extra: Vec<KernelNode>,
    workgroups: u32,
) -> Result<bool, String> {
    let out = extra.last().map_or(DType::F32, |n| n.dtype);
    let (n, buffers) = product_buffers(inputs, out);
    let k = elementwise(&name, n, inputs, extra);
    s.check_if_valid(&k, &buffers, workgroups)
}

pub(super) fn unary(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for &op in UnaryOp::ALL {
        for dt in DTYPES {
            let extra = vec![node(Node::Unary { op, x: 0 }, dt)];
            product_case(s, format!("{op}_{dt}"), &[dt], extra, 1)?;
        }
    }
    Ok(())
}

pub(super) fn binary(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for &op in BinaryOp::ALL {
        for dt in DTYPES {
            let extra = vec![node(Node::Binary { op, lhs: 0, rhs: 1 }, dt)];
            product_case(s, format!("{op}_{dt}"), &[dt, dt], extra, 2)?;
        }
    }
    Ok(())
}

pub(super) fn compare_select(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for &op in CompareOp::ALL {
        for dt in DTYPES {
            let compare = node(Node::Compare { op, lhs: 0, rhs: 1 }, DType::Bool);
            product_case(s, format!("{op}_{dt}"), &[dt, dt], vec![compare.clone()], 1)?;
            // A select on the comparison: bool conditions straight from compares.
            let select = node(
                Node::Select {
                    cond: 2,
                    on_true: 0,
                    on_false: 1,
                },
                dt,
            );
            product_case(
                s,
                format!("select_{op}_{dt}"),
                &[dt, dt],
                vec![compare.clone(), select],
                2,
            )?;
            // The operands crossed: with `<` / `>`, a max / min of the pair (one `maxps` /
            // `minps` on x86), which must agree on NaN and signed-zero lanes.
            let crossed = node(
                Node::Select {
                    cond: 2,
                    on_true: 1,
                    on_false: 0,
                },
                dt,
            );
            product_case(
                s,
                format!("select_crossed_{op}_{dt}"),
                &[dt, dt],
                vec![compare, crossed],
                2,
            )?;
        }
    }
    for dt in DTYPES {
        let select = node(
            Node::Select {
                cond: 0,
                on_true: 1,
                on_false: 2,
            },
            dt,
        );
        product_case(
            s,
            format!("select_{dt}"),
            &[DType::Bool, dt, dt],
            vec![select],
            1,
        )?;
    }
    Ok(())
}

pub(super) fn convert(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for from in DTYPES {
        for to in DTYPES {
            let extra = vec![node(Node::Convert { x: 0 }, to)];
            product_case(s, format!("convert_{from}_{to}"), &[from], extra, 1)?;
        }
    }
    Ok(())
}

pub(super) fn const_index(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for dt in DTYPES {
        for (i, value) in edge_values(dt).iter().enumerate() {
            let bits = bits_of(value);
            // A constant on its own, and meeting a loaded value (x + c, or x xor c for bool).
            let alone = elementwise(
                &format!("const_{dt}_{i}"),
                3,
                &[],
                vec![node(Node::Const { bits }, dt)],
            );
            s.check_if_valid(&alone, &[vec![0xAB; 3 * dt.size_bytes() as usize]], 1)?;
            let op = if dt == DType::Bool {
                BinaryOp::Xor
            } else {
                BinaryOp::Add
            };
            let extra = vec![
                node(Node::Const { bits }, dt),
                node(Node::Binary { op, lhs: 0, rhs: 1 }, dt),
            ];
            product_case(s, format!("const_{op}_{dt}_{i}"), &[dt], extra, 1)?;
        }
        let indices = [
            (1i64, 0i64),
            (-3, 7),
            (-3, 5),
            (1 << 33, -5),
            (1 << 40, -7),
            (0, 300),
            (i64::MAX, i64::MIN),
        ];
        for (scale, offset) in indices {
            for dim in [Some(0), None] {
                let k = elementwise(
                    &format!("index_{dt}_{scale}_{offset}"),
                    9,
                    &[],
                    vec![node(Node::Index { dim, scale, offset }, dt)],
                );
                s.check_if_valid(&k, &[vec![0xAB; 9 * dt.size_bytes() as usize]], 2)?;
            }
        }
    }
    Ok(())
}

pub(super) fn gather(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for index in [DType::I32, DType::I64, DType::U8, DType::Bool] {
        for dt in DTYPES {
            // table[clamp(index, 0, len - 1)] from a 7-element table (binding 1); edge-value
            // indices clamp both ways.
            let len = 7u64;
            let (n, mut buffers) = product_buffers(&[index], dt);
            buffers.insert(1, data(dt, len as usize, 3));
            let k = LoopKernel {
                name: format!("gather_{index}_{dt}"),
                dims: smallvec![n],
                parallel_rank: 1,
                bindings: vec![
                    binding(index, n, Access::Read),
                    binding(dt, len, Access::Read),
                    binding(dt, n, Access::Write),
                ],
                nodes: vec![
                    load(0, 0, &[1], index),
                    node(
                        Node::Gather {
                            binding: 1,
                            map: IndexMap::new(0, &[0]),
                            index: 0,
                            axis_len: len,
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
                prefetch: None,
                row_scratch: Vec::new(),
                keep: None,
                at_most_zero: Vec::new(),
            };
            for workgroups in [1, 2] {
                s.check_if_valid(&k, &buffers, workgroups)?;
            }
        }
    }
    Ok(())
}

pub(super) fn fma_bitcast(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    for dt in [DType::F32, DType::F64] {
        // Every triple of edge values, then products whose rounding error only a fused
        // multiply-add sees: c = -(a·b) rounded, so a·b + c is exactly that error.
        let fma = node(Node::Fma { a: 0, b: 1, c: 2 }, dt);
        product_case(s, format!("fma_{dt}"), &[dt, dt, dt], vec![fma.clone()], 1)?;
        let n = 1001;
        let (a, b) = (data(dt, n, 11), data(dt, n, 12));
        let size = dt.size_bytes() as usize;
        let c: Vec<u8> = a
            .chunks(size)
            .zip(b.chunks(size))
            .flat_map(|(a, b)| match dt {
                DType::F32 => {
                    let f = |x: &[u8]| f32::from_le_bytes(x.try_into().unwrap_or_default());
                    (-(f(a) * f(b))).to_le_bytes().to_vec()
                }
                _ => {
                    let f = |x: &[u8]| f64::from_le_bytes(x.try_into().unwrap_or_default());
                    (-(f(a) * f(b))).to_le_bytes().to_vec()
                }
            })
            .collect();
        let k = elementwise(
            &format!("fma_error_{dt}"),
            n as u64,
            &[dt, dt, dt],
            vec![fma],
        );
        s.check(&k, &[a, b, c, vec![0xAB; n * size]], 2)?;
    }
    let pairs = [
        (DType::F32, DType::I32),
        (DType::I32, DType::F32),
        (DType::F64, DType::I64),
        (DType::I64, DType::F64),
        (DType::F32, DType::F32),
        (DType::I64, DType::I64),
    ];
    for (from, to) in pairs {
        let cast = node(Node::Bitcast { x: 0 }, to);
        product_case(s, format!("bitcast_{from}_{to}"), &[from], vec![cast], 1)?;
    }
    if s.runner().target().has_scale_b() {
        scale_b(s)?;
    }
    bit_selects(s)?;
    // The shapes the expansions build from these: the bits of a float, shifted by a constant
    // (0, inside the lane, the last bit, and out of range: 32 or 64, which stays scalar),
    // masked and compared, and a select on the comparison — on every backend's vector path.
    for (float, int) in [(DType::F32, DType::I32), (DType::F64, DType::I64)] {
        let bits = int.size_bytes() * 8;
        for op in [BinaryOp::Shl, BinaryOp::ShrLogical, BinaryOp::ShrArithmetic] {
            for amount in [0, 1, bits - 9, bits - 1, bits] {
                let extra = vec![
                    node(Node::Bitcast { x: 0 }, int),
                    node(Node::Const { bits: amount }, int),
                    node(Node::Binary { op, lhs: 1, rhs: 2 }, int),
                    node(
                        Node::Compare {
                            op: CompareOp::Lt,
                            lhs: 3,
                            rhs: 1,
                        },
                        DType::Bool,
                    ),
                    node(
                        Node::Select {
                            cond: 4,
                            on_true: 3,
                            on_false: 1,
                        },
                        int,
                    ),
                    node(Node::Bitcast { x: 5 }, float),
                ];
                product_case(
                    s,
                    format!("shift_{op}_{amount}_{float}"),
                    &[float],
                    extra,
                    1,
                )?;
            }
        }
    }
    Ok(())
}

/// `or(keep, and(lhs, rhs))`, which AVX-512 computes in one three-input logic instruction
/// (`x64/bit_select.rs`), with what is read after it varied so that its destination takes over
/// the register of the kept value, of either AND operand, or of none; with the AND on either
/// side of the OR; with the AND read again (then not absorbed); with a constant kept value
/// and AND operand (uniform: hoisted out of the loop); and as the value a sum reduces.
fn bit_selects(s: &mut Conformance<'_>) -> Result<(), String> {
    let bin = |op, lhs, rhs| Node::Binary { op, lhs, rhs };
    let (and, or, add) = (BinaryOp::And, BinaryOp::Or, BinaryOp::Add);
    // Loads %0 (kept), %1 and %2 (the AND's), then %3 = %1 & %2 and %4 = %0 | %3.
    let cases: [(&str, Vec<Node>); 6] = [
        ("kept_dies", vec![]),
        ("lhs_dies", vec![bin(add, 4, 0)]),
        ("rhs_dies", vec![bin(add, 4, 1), bin(add, 5, 0)]),
        (
            "none_dies",
            vec![bin(add, 4, 1), bin(add, 5, 2), bin(add, 6, 0)],
        ),
        ("and_read_again", vec![bin(add, 4, 3)]),
        ("and_on_the_left", vec![]),
    ];
    for int in [DType::I32, DType::I64] {
        for (name, after) in &cases {
            let or_node = if *name == "and_on_the_left" {
                bin(or, 3, 0)
            } else {
                bin(or, 0, 3)
            };
            let mut extra = vec![node(bin(and, 1, 2), int), node(or_node, int)];
            extra.extend(after.iter().map(|n| node(n.clone(), int)));
            let n = 203;
            let k = elementwise(&format!("bit_select_{name}_{int}"), n, &[int; 3], extra);
            let inputs: Vec<Vec<u8>> = (0..3).map(|i| data(int, n as usize, 40 + i)).collect();
            let out = vec![0xAB; n as usize * int.size_bytes() as usize];
            let buffers = [inputs[0].clone(), inputs[1].clone(), inputs[2].clone(), out];
            s.check(&k, &buffers, 2)?;
        }
        // Constants %1 (kept) and %2 (the AND's other operand): %3 = %0 & %2, %4 = %1 | %3.
        let k = elementwise(
            &format!("bit_select_uniform_{int}"),
            203,
            &[int],
            vec![
                node(Node::Const { bits: 0x5a5a }, int),
                node(Node::Const { bits: 0x0ff0_f00f }, int),
                node(bin(and, 0, 2), int),
                node(bin(or, 1, 3), int),
            ],
        );
        s.check(&k, &crate::testing::kernels::buffers_for(&k, 44), 2)?;
        // The OR as what a sum reduces along each row: %1 & %0, then %0 | that.
        let mut k = crate::testing::kernels::reduce_2d(accy_ir::ReduceOp::Sum, int, 5, 67);
        k.nodes.push(node(Node::Const { bits: 0x3c3c }, int));
        k.nodes.push(node(bin(and, 1, 0), int));
        k.nodes.push(node(bin(or, 0, 2), int));
        k.result = 3;
        s.check(&k, &crate::testing::kernels::buffers_for(&k, 45), 2)?;
    }
    Ok(())
}
