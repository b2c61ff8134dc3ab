//! The random kernel generator: shapes, maps, constants and ops drawn from a seeded
//! xorshift, kept to kernels that validate.

use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};
use smallvec::SmallVec;

use super::{edge_values, DTYPES};
use crate::kernel::{IndexMap, KernelBinding, KernelNode, LoopKernel, Node, NodeId, Store};

/// xorshift64*: enough randomness for shapes and node choices, reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A map over `dims` (the first `rank` of them) into a binding it also sizes: row-major,
/// broadcast (some strides zeroed), reversed or random small strides; the offset makes the
/// smallest element 0. Returns the map and the elements it needs.
fn random_map(rng: &mut Rng, dims: &[u64], friendly: bool) -> (IndexMap, u64) {
    let mut strides: Vec<i64> = vec![0; dims.len()];
    let mut step = 1i64;
    for d in (0..dims.len()).rev() {
        strides[d] = step;
        step *= dims[d].max(1) as i64;
    }
    match rng.below(if friendly { 2 } else { 4 }) {
        0 => {}
        1 => strides.iter_mut().for_each(|s| {
            if rng.chance(40) {
                *s = 0;
            }
        }),
        2 => strides.iter_mut().for_each(|s| *s = -*s),
        _ => strides
            .iter_mut()
            .for_each(|s| *s = rng.below(5) as i64 - 2),
    }
    let (mut lo, mut hi) = (0i64, 0i64);
    for (&s, &n) in strides.iter().zip(dims) {
        let span = s * (n as i64 - 1).max(0);
        lo += span.min(0);
        hi += span.max(0);
    }
    let slack = rng.below(3);
    (IndexMap::new(-lo, &strides), (hi - lo) as u64 + 1 + slack)
}

/// A random constant of `dtype` whose bits fit it.
fn random_const(rng: &mut Rng, dtype: DType) -> u64 {
    let edges = edge_values(dtype);
    let bytes = &edges[rng.below(edges.len() as u64) as usize];
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(b)
}

/// The unary ops `dtype` accepts (when `friendly`, only those with an AVX2 form).
fn unary_ops(dtype: DType, friendly: bool) -> Vec<UnaryOp> {
    use UnaryOp::*;
    UnaryOp::ALL
        .iter()
        .copied()
        .filter(|op| {
            !friendly || matches!(op, Neg | Abs | Sqrt | Rsqrt | Floor | Ceil | Round | Not)
        })
        .filter(|op| match dtype {
            DType::F32 | DType::F64 => *op != Not,
            DType::Bool => *op == Not,
            _ => matches!(op, Neg | Abs | Not),
        })
        .collect()
}

/// The binary ops `dtype` accepts (when `friendly`, only those with an AVX2 form).
fn binary_ops(dtype: DType, friendly: bool) -> Vec<BinaryOp> {
    use BinaryOp::*;
    BinaryOp::ALL
        .iter()
        .copied()
        .filter(|op| !friendly || !matches!(op, Rem | Pow | Div if dtype.is_integer()))
        .filter(|op| !friendly || !matches!((op, dtype), (Mul | ShrArithmetic, DType::I64)))
        .filter(|op| !friendly || !matches!(op, Rem | Pow))
        .filter(|op| match dtype {
            DType::F32 | DType::F64 => {
                !matches!(op, And | Or | Xor | Shl | ShrLogical | ShrArithmetic)
            }
            DType::Bool => matches!(op, And | Or | Xor),
            _ => true,
        })
        .collect()
}

/// A random kernel that validates, with a workgroup count to run it over (or `None` when the
/// generator produced one that does not). Deterministic in `seed`; even seeds draw only
/// shapes, maps and ops that vector paths accept ("friendly"), odd seeds anything.
pub fn random_kernel(seed: u64) -> Option<(LoopKernel, u32)> {
    let mut rng = Rng(seed | 1);
    let rank = rng.below(4) as usize;
    let mut dims: SmallVec<[u64; 4]> = (0..rank)
        .map(|_| if rng.chance(5) { 0 } else { 1 + rng.below(6) })
        .collect();
    // Often long enough along the innermost dim for vector iterations, not only the tail.
    if let (Some(last), true) = (dims.last_mut(), rng.chance(60)) {
        *last = 8 + rng.below(25);
    }
    // Half the seeds draw only shapes, maps and ops the AVX2 path vectorizes.
    let friendly = seed.is_multiple_of(2);
    let reduction = if rank > 0 && rng.chance(30) {
        Some(rng.pick(ReduceOp::ALL))
    } else {
        None
    };
    let parallel_rank = match reduction {
        Some(_) => rng.below(rank as u64 + 1) as u32,
        None => rank as u32,
    };
    let family = rng.pick(if friendly { &DTYPES[..4] } else { &DTYPES });
    let mut bindings = Vec::new();
    let mut nodes: Vec<KernelNode> = Vec::new();
    for b in 0..1 + rng.below(3) as u32 {
        let dtype = if friendly || rng.chance(70) {
            family
        } else {
            rng.pick(&DTYPES)
        };
        let (map, elements) = random_map(&mut rng, &dims, friendly);
        bindings.push(KernelBinding {
            dtype,
            elements,
            access: Access::Read,
        });
        nodes.push(KernelNode {
            node: Node::Load { binding: b, map },
            dtype,
        });
    }
    for _ in 0..1 + rng.below(8) {
        let id = rng.below(nodes.len() as u64) as NodeId;
        let dtype = nodes[id as usize].dtype;
        let same: Vec<NodeId> = (0..nodes.len() as NodeId)
            .filter(|&j| nodes[j as usize].dtype == dtype)
            .collect();
        let other = rng.pick(&same);
        let (node, out) = match rng.below(9) {
            0 | 1 => {
                let ops = unary_ops(dtype, friendly);
                (
                    Node::Unary {
                        op: rng.pick(&ops),
                        x: id,
                    },
                    dtype,
                )
            }
            2 | 3 => {
                let ops = binary_ops(dtype, friendly);
                (
                    Node::Binary {
                        op: rng.pick(&ops),
                        lhs: id,
                        rhs: other,
                    },
                    dtype,
                )
            }
            4 => (
                Node::Compare {
                    op: rng.pick(CompareOp::ALL),
                    lhs: id,
                    rhs: other,
                },
                DType::Bool,
            ),
            5 => {
                let conds: Vec<NodeId> = (0..nodes.len() as NodeId)
                    .filter(|&j| nodes[j as usize].dtype == DType::Bool)
                    .collect();
                if conds.is_empty() {
                    continue;
                }
                let cond = rng.pick(&conds);
                (
                    Node::Select {
                        cond,
                        on_true: id,
                        on_false: other,
                    },
                    dtype,
                )
            }
            6 => (
                Node::Convert { x: id },
                if friendly {
                    // Conversions with a vector form: within the lane width, and bool masks.
                    let partner = match family {
                        DType::F32 => DType::I32,
                        DType::I32 => DType::F32,
                        other => other,
                    };
                    rng.pick(&[family, partner, DType::Bool])
                } else if rng.chance(50) {
                    family
                } else {
                    rng.pick(&DTYPES)
                },
            ),
            7 => {
                let to = if friendly { family } else { rng.pick(&DTYPES) };
                if rng.chance(50) || to == DType::Bool {
                    (
                        Node::Const {
                            bits: random_const(&mut rng, to),
                        },
                        to,
                    )
                } else {
                    let outer = if friendly {
                        rank.saturating_sub(1)
                    } else {
                        rank
                    };
                    let dim = (outer > 0 && rng.chance(80)).then(|| rng.below(outer as u64) as u32);
                    let (scale, offset) = (rng.below(7) as i64 - 3, rng.below(11) as i64 - 5);
                    (Node::Index { dim, scale, offset }, to)
                }
            }
            _ => {
                if friendly || !matches!(dtype, DType::I32 | DType::I64 | DType::U8) {
                    continue;
                }
                let table = rng.below(bindings.len() as u64) as usize;
                let len = bindings[table].elements;
                (
                    Node::Gather {
                        binding: table as u32,
                        map: IndexMap::new(0, &vec![0; rank]),
                        index: id,
                        axis_len: len,
                        axis_stride: 1,
                    },
                    bindings[table].dtype,
                )
            }
        };
        nodes.push(KernelNode { node, dtype: out });
    }
    let result = nodes.len() as NodeId - 1;
    let out = nodes[result as usize].dtype;
    let parallel: Vec<u64> = dims[..parallel_rank as usize].to_vec();
    let store_map = IndexMap::row_major(&parallel)?;
    bindings.push(KernelBinding {
        dtype: out,
        elements: parallel.iter().product::<u64>().max(1),
        access: if rng.chance(20) {
            Access::ReadWrite
        } else {
            Access::Write
        },
    });
    let store = Store {
        binding: bindings.len() as u32 - 1,
        map: store_map,
    };
    let kernel = LoopKernel {
        name: format!("random_{seed:x}"),
        dims,
        parallel_rank,
        bindings,
        nodes,
        result,
        reduction,
        store,
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    };
    kernel.validate().ok()?;
    let workgroups = 1 + rng.below(3) as u32;
    Some((kernel, workgroups))
}
