//! Kernel-level test inputs shared by every backend's tests (in this crate and in test-only
//! crates such as the AArch64 emulator tests): edge values per dtype, deterministic buffer
//! contents, a generator of random valid [`LoopKernel`]s, and builders of common kernels.
//! Deterministic in their seeds, so a failure reproduces from the seed it prints.

use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, ReduceOp, UnaryOp};
use smallvec::{smallvec, SmallVec};

use crate::kernel::{IndexMap, KernelBinding, KernelNode, LoopKernel, Node, NodeId, Store};

/// Interesting values of `dtype` as little-endian bytes.
pub fn edge_values(dtype: DType) -> Vec<Vec<u8>> {
    let f32s = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -1.5,
        2.5,
        -2.5,
        3.7,
        -0.7,
        1e-45,
        1.2e-38,
        100.0,
        255.5,
        256.0,
        2147483520.0,
        2147483648.0,
        -2147483904.0,
        9.3e18,
        -9.3e18,
        1e10,
        f32::MAX,
        f32::MIN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    match dtype {
        DType::F32 => f32s.iter().map(|v| v.to_le_bytes().to_vec()).collect(),
        DType::F64 => f32s
            .iter()
            .map(|&v| f64::from(v))
            .chain([1e300, -5e-324, 9007199254740993.0, 0.1, -2.0f64.powi(63)])
            .map(|v| v.to_le_bytes().to_vec())
            .collect(),
        DType::I32 => [
            0i32,
            1,
            -1,
            2,
            -2,
            3,
            7,
            -7,
            8,
            31,
            32,
            33,
            -33,
            100,
            255,
            256,
            -256,
            1 << 20,
            i32::MAX,
            i32::MIN,
            i32::MIN + 1,
        ]
        .iter()
        .map(|v| v.to_le_bytes().to_vec())
        .collect(),
        DType::I64 => [
            0i64,
            1,
            -1,
            2,
            -2,
            3,
            7,
            -7,
            63,
            64,
            65,
            -65,
            255,
            256,
            1 << 40,
            -(1 << 40) - 1,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            9007199254740993,
            i64::MAX,
            i64::MIN,
        ]
        .iter()
        .map(|v| v.to_le_bytes().to_vec())
        .collect(),
        DType::U8 => [0u8, 1, 2, 3, 7, 8, 9, 127, 128, 200, 254, 255]
            .iter()
            .map(|v| vec![*v])
            .collect(),
        _ => vec![vec![0], vec![1]],
    }
}

/// `elements` values of `dtype`: edge values mixed with a deterministic pseudo-random walk.
pub fn data(dtype: DType, elements: usize, seed: u64) -> Vec<u8> {
    let edges = edge_values(dtype);
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut out = Vec::with_capacity(elements * dtype.size_bytes() as usize);
    for i in 0..elements {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = state >> 33;
        if i % 3 == 0 {
            out.extend_from_slice(&edges[(r as usize) % edges.len()]);
        } else {
            let v = (r % 2001) as i64 - 1000;
            match dtype {
                DType::F32 => out.extend_from_slice(&(v as f32 / 8.0).to_le_bytes()),
                DType::F64 => out.extend_from_slice(&(v as f64 / 8.0).to_le_bytes()),
                DType::I32 => out.extend_from_slice(&(v as i32).to_le_bytes()),
                DType::I64 => out.extend_from_slice(&v.to_le_bytes()),
                DType::U8 => out.push(v as u8),
                _ => out.push((v & 1) as u8),
            }
        }
    }
    out
}

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

/// Every dtype a kernel can hold.
pub const DTYPES: [DType; 6] = [
    DType::F32,
    DType::F64,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::Bool,
];

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
    };
    kernel.validate().ok()?;
    let workgroups = 1 + rng.below(3) as u32;
    Some((kernel, workgroups))
}

// Builders of the kernels tests are made of.

/// A binding of `elements` values of `dtype` used as `access` says.
pub fn binding(dtype: DType, elements: u64, access: Access) -> KernelBinding {
    KernelBinding {
        dtype,
        elements,
        access,
    }
}

/// A node of `dtype`.
pub fn node(node: Node, dtype: DType) -> KernelNode {
    KernelNode { node, dtype }
}

/// A load of `binding` through the map `offset + Σ strides[d] · i[d]`.
pub fn load(binding: u32, offset: i64, strides: &[i64], dtype: DType) -> KernelNode {
    node(
        Node::Load {
            binding,
            map: IndexMap::new(offset, strides),
        },
        dtype,
    )
}

/// A 1-D kernel over `n` points: bindings are `inputs` (read) then the output (written, of
/// the last node's dtype); `extra` follows one load per input, and its last node is stored.
pub fn elementwise(name: &str, n: u64, inputs: &[DType], extra: Vec<KernelNode>) -> LoopKernel {
    let mut nodes: Vec<KernelNode> = (0..inputs.len())
        .map(|i| load(i as u32, 0, &[1], inputs[i]))
        .collect();
    nodes.extend(extra);
    let out = nodes.last().map_or(DType::F32, |n| n.dtype);
    let mut bindings: Vec<KernelBinding> = inputs
        .iter()
        .map(|&d| binding(d, n, Access::Read))
        .collect();
    bindings.push(binding(out, n, Access::Write));
    LoopKernel {
        name: name.into(),
        dims: smallvec![n],
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

/// `k` with its transcendentals expanded into vector math, as default-mode compiles for
/// targets with FMA see it (`crate::math`), scaling without [`Node::ScaleB`].
pub fn expanded(k: LoopKernel) -> Result<LoopKernel, String> {
    expanded_for(k, false)
}

/// [`expanded`] for a target that has (`scale_b`) or lacks one-instruction scaling by a power
/// of two ([`crate::Target::has_scale_b`]).
pub fn expanded_for(k: LoopKernel, scale_b: bool) -> Result<LoopKernel, String> {
    let mut kernels = [crate::kernel::Kernel::Loop(k)];
    crate::math::expand(&mut kernels, scale_b).map_err(|e| e.to_string())?;
    let [crate::kernel::Kernel::Loop(k)] = kernels else {
        return Err("expansion changed the kernel's form".into());
    };
    Ok(k)
}

/// Buffers holding every tuple of edge values of `inputs` (the cartesian product laid out
/// row-major, one buffer per input), padded to a length that is no multiple of 8 so vector
/// loops also run a tail, plus a poisoned output of `out`.
pub fn product_buffers(inputs: &[DType], out: DType) -> (u64, Vec<Vec<u8>>) {
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
    (n as u64, buffers)
}

/// The bits of a little-endian element, zero-extended.
pub fn bits_of(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

/// Buffers for `k`: readable bindings get data, written ones a recognisable filler.
pub fn buffers_for(k: &LoopKernel, seed: u64) -> Vec<Vec<u8>> {
    k.bindings
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if b.access.reads() {
                data(b.dtype, b.elements as usize, seed + i as u64)
            } else {
                vec![0x5A; (b.elements * b.dtype.size_bytes()) as usize]
            }
        })
        .collect()
}

/// `out[i, j] = op(a[...], b[...])` over `dims` with the given `(elements, offset, strides)`
/// load maps and a row-major store.
pub fn binary_2d(
    dims: [u64; 2],
    dtype: DType,
    a: (u64, i64, [i64; 2]),
    b: (u64, i64, [i64; 2]),
    op: BinaryOp,
) -> LoopKernel {
    LoopKernel {
        name: format!("{op}_2d_{dtype}_{}x{}", dims[0], dims[1]),
        dims: SmallVec::from_slice(&dims),
        parallel_rank: 2,
        bindings: vec![
            binding(dtype, a.0, Access::Read),
            binding(dtype, b.0, Access::Read),
            binding(dtype, dims[0] * dims[1], Access::Write),
        ],
        nodes: vec![
            load(0, a.1, &a.2, dtype),
            load(1, b.1, &b.2, dtype),
            node(Node::Binary { op, lhs: 0, rhs: 1 }, dtype),
        ],
        result: 2,
        reduction: None,
        store: Store {
            binding: 2,
            map: IndexMap::new(0, &[dims[1] as i64, 1]),
        },
    }
}

/// `out[p] = reduce(op, x[p, r])` over `dims = [p, r]` with x row-major.
pub fn reduce_2d(op: ReduceOp, dtype: DType, p: u64, r: u64) -> LoopKernel {
    LoopKernel {
        name: format!("reduce_{op}_{dtype}_{p}x{r}"),
        dims: SmallVec::from_slice(&[p, r]),
        parallel_rank: 1,
        bindings: vec![
            binding(dtype, p * r, Access::Read),
            binding(dtype, p, Access::Write),
        ],
        nodes: vec![load(0, 0, &[r as i64, 1], dtype)],
        result: 0,
        reduction: Some(op),
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[1]),
        },
    }
}

/// A small valid kernel (copies four f32 elements from binding 0 to binding 1) that error
/// tests of every backend mutate into malformed ones.
pub fn copy_f32x4() -> LoopKernel {
    LoopKernel {
        name: "k".into(),
        dims: SmallVec::from_slice(&[4]),
        parallel_rank: 1,
        bindings: vec![
            KernelBinding {
                dtype: DType::F32,
                elements: 4,
                access: Access::Read,
            },
            KernelBinding {
                dtype: DType::F32,
                elements: 4,
                access: Access::Write,
            },
        ],
        nodes: vec![KernelNode {
            node: Node::Load {
                binding: 0,
                map: IndexMap::new(0, &[1]),
            },
            dtype: DType::F32,
        }],
        result: 0,
        reduction: None,
        store: Store {
            binding: 1,
            map: IndexMap::new(0, &[1]),
        },
    }
}
