//! Kernel-level test inputs shared by every backend's tests (in this crate and in test-only
//! crates such as the AArch64 emulator tests): edge values per dtype, deterministic buffer
//! contents, a generator of random valid [`LoopKernel`]s, and builders of common kernels.
//! Deterministic in their seeds, so a failure reproduces from the seed it prints.

use accy_artifact::Access;
use accy_ir::{BinaryOp, DType, ReduceOp};
use smallvec::{smallvec, SmallVec};

use crate::kernel::{IndexMap, KernelBinding, KernelNode, LoopKernel, Node, Store};

mod random;

pub use random::random_kernel;

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

/// Every dtype a kernel can hold.
pub const DTYPES: [DType; 6] = [
    DType::F32,
    DType::F64,
    DType::I32,
    DType::I64,
    DType::U8,
    DType::Bool,
];

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
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
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

/// `out[i, j] = a[j, i] + b[j]` over dims `[n, m]` (a read transposed, b along the stored
/// dim), blocked as the planner blocks a transpose with `block` (`plan::blocking`).
pub fn blocked_transpose(n: u64, m: u64, dtype: DType, block: crate::TransposeBlock) -> LoopKernel {
    let mut k = binary_2d(
        [n, m],
        dtype,
        (n * m, 0, [1, n as i64]),
        (m, 0, [0, 1]),
        BinaryOp::Add,
    );
    crate::plan::blocking::block_transposes(&mut k, block);
    k
}

/// [`blocked_transpose`] in blocks of two lines by `run` rows along the source rows (the
/// order x64's tiles read in).
pub fn transpose_along_rows(n: u64, m: u64, dtype: DType, run: u64) -> LoopKernel {
    let block = crate::TransposeBlock {
        line_bytes: 128,
        run,
        along_rows: true,
    };
    blocked_transpose(n, m, dtype, block)
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
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
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
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
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
        prefetch: None,
        row_scratch: Vec::new(),
        keep: None,
        at_most_zero: Vec::new(),
    }
}
