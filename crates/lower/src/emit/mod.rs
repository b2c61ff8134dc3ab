//! What every ISA emitter shares: the structural checks emission relies on, the reduction
//! identities, the stack frame of a loop kernel ([`frame`]), the homes of a vectorized loop's
//! values ([`vregs`]), and the assemble-and-collect loop
//! of [`crate::Target::emit`]. The ISA folders (`x64/`, `aarch64/`) hold only instruction
//! selection and mirror each other file for file; neither imports the other.

pub(crate) mod contraction;
pub(crate) mod frame;
pub(crate) mod vregs;

use accy_artifact::abi::MAX_BINDINGS;
use accy_artifact::KernelEntry;
use accy_ir::interp::scalar::reduce_identity;
use accy_ir::{DType, ReduceOp};
use dynasmrt::relocations::Relocation;
use dynasmrt::{DynasmApi, VecAssembler};

use crate::kernel::{LoopKernel, Node, NodeId};
use crate::target::{EmitError, EmittedCode};

/// The structural facts emission relies on. Validation proves them; checking again keeps
/// emission panic-free on any input.
pub(crate) fn check_shape(k: &LoopKernel, target: &'static str) -> Result<(), EmitError> {
    let bad = |what: String| EmitError::Unsupported {
        kernel: k.name.clone(),
        what,
        target,
    };
    let rank = k.dims.len();
    let p = k.parallel_rank as usize;
    if p > rank || (k.reduction.is_none() && p != rank) {
        return Err(bad(format!("parallel rank {p} of {rank} dims")));
    }
    if k.bindings.len() > MAX_BINDINGS {
        return Err(bad(format!("{} bindings", k.bindings.len())));
    }
    if k.store.map.strides.len() != p || k.store.binding as usize >= k.bindings.len() {
        return Err(bad("a malformed store".into()));
    }
    if k.result as usize >= k.nodes.len() {
        return Err(bad("a result that is not a node".into()));
    }
    if let Some(keep) = &k.keep {
        let ok = (keep.node as usize) < k.nodes.len()
            && (keep.binding as usize) < k.bindings.len()
            && keep.map.strides.len() == rank;
        if !ok {
            return Err(bad("a malformed kept value".into()));
        }
    }
    for (i, n) in k.nodes.iter().enumerate() {
        let operands_ok = n
            .node
            .operands()
            .iter()
            .all(|&id: &NodeId| (id as usize) < i);
        let ok = operands_ok
            && match &n.node {
                Node::Load { binding, map } | Node::Gather { binding, map, .. } => {
                    (*binding as usize) < k.bindings.len() && map.strides.len() == rank
                }
                Node::Index { dim, .. } => dim.is_none_or(|d| (d as usize) < rank),
                _ => true,
            };
        if !ok {
            return Err(bad(format!("malformed node {i}")));
        }
    }
    Ok(())
}

/// The accumulator's starting bits for `op` over `dtype`: the IR's reduce identity (see
/// [`ReduceOp`]) in the encoding of a kernel constant; `None` where `op` does not accept the
/// dtype.
pub(crate) fn identity_bits(op: ReduceOp, dtype: DType) -> Option<u64> {
    reduce_identity(op, dtype).map(|s| s.to_bits())
}

/// What a vectorized reduction of the kernel's result needs, on every ISA: the op, the
/// binary op that combines a vector into the accumulator lane by lane, and the identity the
/// lanes start from. `None` when `k` does not reduce or `op` does not accept `dtype`.
pub(crate) fn vector_reduction(
    k: &LoopKernel,
    dtype: DType,
) -> Option<(ReduceOp, accy_ir::BinaryOp, u64)> {
    use accy_ir::BinaryOp;
    let op = k.reduction?;
    let combine = match op {
        ReduceOp::Sum => BinaryOp::Add,
        ReduceOp::Prod => BinaryOp::Mul,
        ReduceOp::Max => BinaryOp::Max,
        ReduceOp::Min => BinaryOp::Min,
    };
    Some((op, combine, identity_bits(op, dtype)?))
}

/// Innermost runs shorter than this many elements keep ordinary stores even when the output
/// streams: the extra vector that aligns each run would cost more than the stores save. (x64's
/// sub-striped transposes stream shorter runs: they run only where every run starts on a
/// line, so no run needs aligning.)
pub(crate) const STREAM_MIN_RUN: u64 = 256;

/// Whether `k` writes its result with non-temporal stores, which go to memory without first
/// reading each line into the cache and without evicting what the cache holds: when the
/// elementwise kernel's store binding is at least half as large as the last-level cache of
/// `caches` (an output that size, written through the cache, evicts the inputs it is computed
/// from, which a layer norm or softmax reads more than once: a 16 MiB layer norm output with a
/// 32 MiB cache, 1 thread, measured 0.92-1.40 ms streamed against 1.18-1.74 ms through the
/// cache in four rounds of `cargo xtask bench memory` each, and 0.86-1.07 ms against 1.20-1.37
/// ms in `accy bench`; a program that reads that output again afterwards ran 1.41-1.61 ms
/// against 1.73-1.77 ms; a 16 MiB softmax, compute-bound, was within the noise either way.
/// An earlier measurement on another host found the opposite at 16 MiB, 1.4 ms through the
/// cache and 2.5 ms streamed), it walks its innermost dim
/// contiguously in runs of at least 256 elements (`STREAM_MIN_RUN`), its elements are 4 or 8
/// bytes, no node reads the store binding (so an emitter may store a point twice, with the
/// same value, to reach an aligned address), and the store binding does not live in worker
/// scratch (`crate::kernel::RowScratch`: the chain's next link rereads it from the cache).
/// Only where the result cannot change: a store's
/// value is the same whichever instruction writes it. An emitter honours it on its vectorized
/// stores and may ignore it.
pub fn streams_stores(k: &LoopKernel, caches: &accy_artifact::Blocking) -> bool {
    let Some(store) = k.bindings.get(k.store.binding as usize) else {
        return false;
    };
    let size = store.dtype.size_bytes();
    // A store into worker scratch is reread from the cache by the chain's next link.
    let in_scratch = k.row_scratch.iter().any(|r| r.binding == k.store.binding);
    k.reduction.is_none()
        && !in_scratch
        && (size == 4 || size == 8)
        && streaming_size(store.elements.saturating_mul(size), caches)
        && k.store.map.strides.last() == Some(&1)
        && k.dims.last().is_some_and(|&n| n >= STREAM_MIN_RUN)
        && !k.nodes.iter().any(|n| match &n.node {
            Node::Load { binding, .. } | Node::Gather { binding, .. } => {
                *binding == k.store.binding
            }
            _ => false,
        })
}

/// Whether `bytes` of output are enough for [`streams_stores`] to stream them: at least half
/// the last-level cache of `caches` (none when it is unknown). The planner asks it too, of a
/// value it might store and reread (`plan/mod.rs`).
pub(crate) fn streaming_size(bytes: u64, caches: &accy_artifact::Blocking) -> bool {
    caches.llc > 0 && bytes.saturating_mul(2) >= caches.llc
}

/// Emits `kernels` one after another into one assembler with `emit_one` (which returns the
/// bytes of worker scratch the kernel needs), committing each on its own so an assembler error
/// names its kernel, and collects one entry per kernel.
pub(crate) fn assemble<R: Relocation, K>(
    kernels: &[K],
    name: impl Fn(&K) -> &str,
    mut emit_one: impl FnMut(&mut VecAssembler<R>, &K) -> Result<u64, EmitError>,
) -> Result<EmittedCode, EmitError> {
    let mut ops = VecAssembler::<R>::new(0);
    let mut entries = Vec::with_capacity(kernels.len());
    for k in kernels {
        let start = ops.offset().0;
        let worker_scratch = emit_one(&mut ops, k)?;
        ops.commit().map_err(|e| EmitError::Assembler {
            kernel: name(k).to_owned(),
            message: e.to_string(),
        })?;
        let end = ops.offset().0;
        let too_large = || EmitError::TooLarge { bytes: end as u64 };
        entries.push(KernelEntry {
            name: name(k).to_owned(),
            offset: u32::try_from(start).map_err(|_| too_large())?,
            len: u32::try_from(end - start).map_err(|_| too_large())?,
            worker_scratch,
        });
    }
    let code = ops.finalize().map_err(|e| EmitError::Assembler {
        kernel: kernels
            .last()
            .map(|k| name(k).to_owned())
            .unwrap_or_default(),
        message: e.to_string(),
    })?;
    Ok(EmittedCode { code, entries })
}
