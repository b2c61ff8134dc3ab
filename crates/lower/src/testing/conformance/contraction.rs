//! Contraction kernels: every shape class (empty, 1, primes, sizes around the target's register
//! tile, batches), operand layouts (row-major, transposed, the right operand panelled or read
//! in place), tiles (one per workgroup, all run), k blocks (one, or several with a shorter
//! last one), epilogues (plain, bias along either dim,
//! relu, a residual, a transcendental, a convert, a compare and select) and store maps (row-
//! and column-major).
//!
//! In exact mode every case is compared bit for bit, on data with edge values. In default mode
//! a microkernel may fuse multiply and add, so cases whose epilogue is not plain use small
//! integer data, whose products and sums are exact in any order and either way; plain cases
//! use real-valued data and are checked against the dot bound `γ_K · Σ|a||b|`.

use accy_artifact::Access;
use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};

use super::Conformance;
use crate::kernel::{
    run_contraction, ContractionKernel, IndexMap, Kernel, KernelBinding, KernelNode, Node, Operand,
    Store,
};
use crate::testing::kernels::data;

/// The epilogues the cases combine with every shape; each is a list of nodes after the
/// accumulator (node 0) and the bindings it reads beyond A, B and the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Epilogue {
    Plain,
    BiasN,
    BiasMRelu,
    Residual,
    Exp,
    ToF64,
    Clamp,
}

const EPILOGUES: [Epilogue; 7] = [
    Epilogue::Plain,
    Epilogue::BiasN,
    Epilogue::BiasMRelu,
    Epilogue::Residual,
    Epilogue::Exp,
    Epilogue::ToF64,
    Epilogue::Clamp,
];

/// One case's shape and layout.
#[derive(Clone, Copy, Debug)]
struct Shape {
    batch: u64,
    m: u64,
    n: u64,
    k: u64,
    /// A read column-major (m contiguous) instead of row-major.
    lhs_transposed: bool,
    /// B as panels of the target's width (else read in place, row-major).
    panels: bool,
    /// The result stored column-major.
    store_transposed: bool,
    /// The result stored row-major into a larger buffer: 5 elements in, rows `n + 3` apart,
    /// batches 2 elements past their rows (what a direct store must follow).
    store_padded: bool,
    /// Tile size in microkernel tiles.
    tile: (u64, u64),
    /// The k block length (`k` or more: one block).
    tile_k: u64,
    /// Whether the kernel asks for A's row panels to be copied.
    copy_a: bool,
}

fn node(node: Node, dtype: DType) -> KernelNode {
    KernelNode { node, dtype }
}

/// `elements` values: edge values and a random walk (exact mode), or small integers (exact in
/// any summation order).
fn values(dtype: DType, elements: u64, seed: u64, small: bool) -> Vec<u8> {
    if !small {
        return data(dtype, elements as usize, seed);
    }
    let mut state = seed.wrapping_mul(6364136223846793005) | 1;
    (0..elements)
        .flat_map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = ((state >> 40) % 9) as i32 - 4;
            match dtype {
                DType::F64 => f64::from(v).to_le_bytes().to_vec(),
                _ => (v as f32).to_le_bytes().to_vec(),
            }
        })
        .collect()
}

/// B (dense `[batch][k][n]`) in panels `w` wide, zero-padded past `n`.
fn panelled(dense: &[u8], s: &Shape, w: u64, size: u64) -> Vec<u8> {
    let panels = s.n.div_ceil(w);
    let mut out = vec![0u8; (s.batch * panels * s.k * w * size) as usize];
    for b in 0..s.batch {
        for kk in 0..s.k {
            for n in 0..s.n {
                let from = ((b * s.k + kk) * s.n + n) * size;
                let to = (((b * panels + n / w) * s.k + kk) * w + n % w) * size;
                out[to as usize..(to + size) as usize]
                    .copy_from_slice(&dense[from as usize..(from + size) as usize]);
            }
        }
    }
    out
}

/// The kernel and its input buffers for `shape` and `epilogue` with a `mr × nr` tile.
fn case(
    s: &Shape,
    epilogue: Epilogue,
    dtype: DType,
    (mr, nr): (u64, u64),
    small: bool,
    seed: u64,
) -> (ContractionKernel, Vec<Vec<u8>>) {
    let size = dtype.size_bytes();
    let (batch, m, n, k) = (s.batch, s.m, s.n, s.k);
    let a_map = if s.lhs_transposed {
        IndexMap::new(0, &[(m * k) as i64, 1, m as i64])
    } else {
        IndexMap::new(0, &[(m * k) as i64, k as i64, 1])
    };
    let b_dense = values(dtype, batch * k * n, seed + 1, small);
    let (rhs, b_buffer) = if s.panels {
        let panels = n.div_ceil(nr);
        let map = IndexMap::new(0, &[(panels * k * nr) as i64, 0, 0]);
        (
            Operand {
                binding: 1,
                map,
                panels: Some(nr),
            },
            panelled(&b_dense, s, nr, size),
        )
    } else {
        let map = IndexMap::new(0, &[(k * n) as i64, n as i64, 1]);
        (Operand::strided(1, map), b_dense)
    };
    let mut bindings = vec![
        KernelBinding {
            dtype,
            elements: batch * m * k,
            access: Access::Read,
        },
        KernelBinding {
            dtype,
            elements: (b_buffer.len() as u64) / size,
            access: Access::Read,
        },
    ];
    let mut buffers = vec![values(dtype, batch * m * k, seed, small), b_buffer];
    let mut extra = |elements: u64, seed: u64| {
        bindings.push(KernelBinding {
            dtype,
            elements,
            access: Access::Read,
        });
        buffers.push(values(dtype, elements, seed, small));
        bindings.len() as u32 - 1
    };
    let mut nodes = vec![node(Node::Acc, dtype)];
    let mut out_dtype = dtype;
    let load = |binding, strides: &[i64]| Node::Load {
        binding,
        map: IndexMap::new(0, strides),
    };
    match epilogue {
        Epilogue::Plain => {}
        Epilogue::BiasN => {
            let bias = extra(n, seed + 2);
            nodes.push(node(load(bias, &[0, 0, 1]), dtype));
            nodes.push(node(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 0,
                    rhs: 1,
                },
                dtype,
            ));
        }
        Epilogue::BiasMRelu => {
            let bias = extra(batch * m, seed + 3);
            nodes.push(node(load(bias, &[m as i64, 1, 0]), dtype));
            nodes.push(node(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 0,
                    rhs: 1,
                },
                dtype,
            ));
            nodes.push(node(Node::Const { bits: 0 }, dtype));
            nodes.push(node(
                Node::Binary {
                    op: BinaryOp::Max,
                    lhs: 2,
                    rhs: 3,
                },
                dtype,
            ));
        }
        Epilogue::Residual => {
            let residual = extra(batch * m * n, seed + 4);
            let two = if dtype == DType::F64 {
                2f64.to_bits()
            } else {
                u64::from(2f32.to_bits())
            };
            nodes.push(node(Node::Const { bits: two }, dtype));
            nodes.push(node(
                Node::Binary {
                    op: BinaryOp::Mul,
                    lhs: 0,
                    rhs: 1,
                },
                dtype,
            ));
            nodes.push(node(load(residual, &[(m * n) as i64, n as i64, 1]), dtype));
            nodes.push(node(
                Node::Binary {
                    op: BinaryOp::Add,
                    lhs: 2,
                    rhs: 3,
                },
                dtype,
            ));
        }
        Epilogue::Exp => nodes.push(node(
            Node::Unary {
                op: UnaryOp::Exp,
                x: 0,
            },
            dtype,
        )),
        Epilogue::ToF64 => {
            out_dtype = if dtype == DType::F64 {
                DType::F32
            } else {
                DType::F64
            };
            nodes.push(node(Node::Convert { x: 0 }, out_dtype));
        }
        Epilogue::Clamp => {
            nodes.push(node(Node::Const { bits: 0 }, dtype));
            nodes.push(node(
                Node::Compare {
                    op: CompareOp::Lt,
                    lhs: 0,
                    rhs: 1,
                },
                DType::Bool,
            ));
            nodes.push(node(
                Node::Select {
                    cond: 2,
                    on_true: 1,
                    on_false: 0,
                },
                dtype,
            ));
        }
    }
    let (store_map, out_elements) = if s.store_transposed {
        (
            IndexMap::new(0, &[(m * n) as i64, 1, m as i64]),
            batch * m * n,
        )
    } else if s.store_padded {
        let batch_stride = m * (n + 3) + 2;
        (
            IndexMap::new(5, &[batch_stride as i64, (n + 3) as i64, 1]),
            5 + batch * batch_stride,
        )
    } else {
        (
            IndexMap::new(0, &[(m * n) as i64, n as i64, 1]),
            batch * m * n,
        )
    };
    bindings.push(KernelBinding {
        dtype: out_dtype,
        elements: out_elements,
        access: Access::Write,
    });
    buffers.push(vec![0xA5; (out_elements * out_dtype.size_bytes()) as usize]);
    let kernel = ContractionKernel {
        name: format!(
            "gemm_{dtype}_{batch}x{m}x{n}x{k}_kc{}_{epilogue:?}{}{}{}{}{}",
            s.tile_k,
            if s.lhs_transposed { "_at" } else { "" },
            if s.panels { "_panels" } else { "" },
            if s.store_transposed { "_ct" } else { "" },
            if s.store_padded { "_cpad" } else { "" },
            if s.copy_a { "" } else { "_a_in_place" }
        ),
        batch,
        m,
        n,
        k,
        dtype,
        lhs: Operand::strided(0, a_map),
        rhs,
        result: nodes.len() as u32 - 1,
        epilogue: nodes,
        store: Store {
            binding: bindings.len() as u32 - 1,
            map: store_map,
        },
        bindings,
        tile_m: s.tile.0 * mr,
        tile_n: s.tile.1 * nr,
        tile_k: s.tile_k,
        copy_a: s.copy_a,
    };
    (kernel, buffers)
}

impl Conformance<'_> {
    /// Checks contraction `kernel` on `buffers`, running every workgroup, against the
    /// reference executor: bit for bit, or (with `bound`) the stored values within the dot
    /// bound of the exact sum.
    pub fn check_contraction(
        &mut self,
        kernel: &ContractionKernel,
        buffers: &[Vec<u8>],
        bound: bool,
    ) -> Result<(), String> {
        kernel
            .validate()
            .map_err(|e| format!("{}: invalid case: {e}", kernel.name))?;
        let code = self.emit_kernel(&Kernel::Contraction(kernel.clone()))?;
        let mut actual = buffers.to_vec();
        let workgroups = u32::try_from(kernel.workgroups()).map_err(|e| e.to_string())?;
        let statuses = self
            .runner
            .run(&code, 0, &mut actual, &super::Launch::new(workgroups))
            .map_err(|e| format!("{}: {e}", kernel.name))?;
        if statuses.iter().any(|&s| s != accy_artifact::abi::KERNEL_OK) {
            return Err(format!("{}: statuses {statuses:?}", kernel.name));
        }
        let mut expected = buffers.to_vec();
        {
            let mut views: Vec<&mut [u8]> = expected.iter_mut().map(Vec::as_mut_slice).collect();
            run_contraction(kernel, &mut views).map_err(|e| e.to_string())?;
        }
        let bounds = if bound {
            Some(dot_bounds(kernel, buffers)?)
        } else {
            None
        };
        let out = kernel.store.binding as usize;
        let dtype = kernel.bindings[out].dtype;
        let size = dtype.size_bytes() as usize;
        for (j, (e, a)) in expected[out]
            .chunks(size)
            .zip(actual[out].chunks(size))
            .enumerate()
        {
            let (x, y) = (float(e), float(a));
            let same = e == a || (x.is_nan() && y.is_nan());
            let close = bounds
                .as_ref()
                .and_then(|b| b.get(j))
                .is_some_and(|&b| !b.is_finite() || (x - y).abs() <= b);
            if !same && !close {
                return Err(format!(
                    "{}: element {j}: expected {x:e} ({e:02x?}), got {y:e} ({a:02x?})",
                    kernel.name
                ));
            }
        }
        if actual[..out] != buffers[..out] || actual[out + 1..] != buffers[out + 1..] {
            return Err(format!("{}: an input changed", kernel.name));
        }
        self.checked += 1;
        Ok(())
    }
}

/// Each stored element's allowed error in default mode: `γ_K · Σ_k |a|·|b|` (relative to the
/// exact sum; the reference's own rounding is within the same bound, so twice it).
fn dot_bounds(k: &ContractionKernel, buffers: &[Vec<u8>]) -> Result<Vec<f64>, String> {
    let mut abs = k.clone();
    let size = k.dtype.size_bytes() as usize;
    let absolute = |b: &[u8]| -> Vec<u8> {
        b.chunks(size)
            .flat_map(|c| match size {
                4 => f32::from_le_bytes(c.try_into().unwrap_or_default())
                    .abs()
                    .to_le_bytes()
                    .to_vec(),
                _ => f64::from_le_bytes(c.try_into().unwrap_or_default())
                    .abs()
                    .to_le_bytes()
                    .to_vec(),
            })
            .collect()
    };
    let mut inputs = buffers.to_vec();
    let (l, r) = (k.lhs.binding as usize, k.rhs.binding as usize);
    inputs[l] = absolute(&buffers[l]);
    inputs[r] = absolute(&buffers[r]);
    abs.epilogue = vec![node(Node::Acc, k.dtype)];
    abs.result = 0;
    let out = abs.store.binding as usize;
    abs.bindings[out].dtype = k.dtype;
    inputs[out] = vec![0; (abs.bindings[out].elements as usize) * size];
    let mut views: Vec<&mut [u8]> = inputs.iter_mut().map(Vec::as_mut_slice).collect();
    run_contraction(&abs, &mut views).map_err(|e| e.to_string())?;
    let u = if size == 4 {
        f64::from(f32::EPSILON) / 2.0
    } else {
        f64::EPSILON / 2.0
    };
    let kk = k.k as f64;
    let gamma = kk * u / (1.0 - kk * u);
    Ok(inputs[out]
        .chunks(size)
        .map(|c| 2.0 * gamma * float(c))
        .collect())
}

fn float(bytes: &[u8]) -> f64 {
    match bytes.len() {
        4 => f64::from(f32::from_le_bytes(bytes.try_into().unwrap_or_default())),
        8 => f64::from_le_bytes(bytes.try_into().unwrap_or_default()),
        _ => f64::NAN,
    }
}

pub(super) fn contraction(s: &mut Conformance<'_>, _: u32) -> Result<(), String> {
    let exact = !s.options().reassociate;
    for dtype in [DType::F32, DType::F64] {
        let tile = s.runner().target().micro_tile(dtype);
        let (mr, nr) = tile;
        let mut shapes = Vec::new();
        for (m, n, k) in [
            (1, 1, 1),
            (1, nr, 0),
            (mr, nr, 1),
            (mr + 1, nr - 1, 7),
            (mr - 1, nr + 1, 16),
            (2 * mr + 3, 2 * nr + 5, 37),
            (13, 31, 17),
            (7, 2 * nr, 64),
            (3 * mr, nr, 5),
        ] {
            // Tiles of several row panels with k in blocks of 8 (the tile's partial sums kept
            // between blocks, A copied by row panel or read in place): k = 16 and 64 end on a
            // whole block, 17 and 37 on a shorter one. A padded row-major store in two
            // batches: where n is whole panels, the microkernels store it themselves.
            for (lhs_transposed, panels, store_transposed, tile, kc, store_padded) in [
                (false, true, false, (1, 1), k, false),
                (true, true, true, (2, 1), 5, false),
                (false, false, false, (1, 2), 16, false),
                (false, true, false, (2, 2), 8, false),
                (false, false, true, (2, 1), 8, false),
                (false, true, false, (2, 1), 8, true),
            ] {
                if !panels && n % nr != 0 {
                    continue;
                }
                let shape = Shape {
                    batch: if tile == (2, 1) { 2 } else { 1 },
                    m,
                    n,
                    k,
                    lhs_transposed,
                    panels,
                    store_transposed,
                    store_padded,
                    tile,
                    tile_k: kc.max(1),
                    copy_a: true,
                };
                shapes.push(shape);
                // Where a copy would be made (row-major A, several column panels, k of 32
                // or more), A read in place as well, with k in blocks and in one.
                if !lhs_transposed && tile.1 >= 2 && k >= 32 {
                    for tile_k in [shape.tile_k, k] {
                        shapes.push(Shape {
                            copy_a: false,
                            tile_k,
                            ..shape
                        });
                    }
                }
            }
        }
        for (i, shape) in shapes.iter().enumerate() {
            for (e, &epilogue) in EPILOGUES.iter().enumerate() {
                let seed = (i * 16 + e) as u64;
                if exact {
                    let (kernel, buffers) = case(shape, epilogue, dtype, tile, false, seed);
                    s.check_contraction(&kernel, &buffers, false)?;
                } else {
                    // Small integers: exact in any order, so every epilogue compares exactly.
                    let (kernel, buffers) = case(shape, epilogue, dtype, tile, true, seed);
                    s.check_contraction(&kernel, &buffers, false)?;
                    if epilogue == Epilogue::Plain {
                        let (kernel, buffers) = case(shape, epilogue, dtype, tile, false, seed);
                        s.check_contraction(&kernel, &buffers, true)?;
                    }
                }
            }
        }
    }
    Ok(())
}
