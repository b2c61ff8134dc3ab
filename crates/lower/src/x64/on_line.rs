//! A streaming transpose's second visiting order, for destinations that start on a 64-byte
//! line. The blocks the x64 target asks for (`transpose_block`: runs of 256 source rows,
//! along the rows) write each destination row a run of 1 KiB (f32) per block, so a destination
//! that starts off a line loses only the two ends of each run to split lines; but each
//! stripe reads 256 rows at once, more streams than the hardware prefetchers follow, so
//! nearly every source line is a demand miss. The same kernel in sub-stripes of
//! [`ROWS`] rows ([`LoopKernel::sub_striped`]) reads within what they follow, and writes runs
//! of whole lines when the destination starts on one. Its entry tests the destination's
//! address and jumps to the sub-striped function when it does: both functions take the same
//! dispatch (dim 0, and so the workgroups, are the same), and each checks its state itself.
//!
//! Measured on a 4096² f32 transpose (Intel Xeon guest, AVX-512, runs of each length forced,
//! alternating): `cargo xtask bench memory`, destination on a line, 1 thread, 256-row runs
//! 8.7-9.1 ms against 5.8-5.9 ms in runs of 32 rows, 2 threads 4.3-4.5 against 3.0-3.1 ms;
//! `accy bench` p50, 1 thread: 256 rows 9.7-10.0 ms, 128 rows 9.8-10.4 ms, 64 rows 11.9-13.8
//! ms, 32 rows 6.0-6.1 ms, 16 rows 7.6 ms. Destination 16 bytes past a line (memory bench):
//! 10.1-10.9 ms against 21-22 ms in runs of 32 rows (non-temporal halves of lines completed
//! a sub-stripe later), and 17-26 ms with ordinary stores there.

#[allow(
    unused_imports,
    reason = "dynasm! expansions need both traits in scope"
)]
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi};

use accy_artifact::abi::{DispatchState, ABI_VERSION};
use accy_artifact::Blocking;

use super::asm::{x64, Asm};
use super::kernel::vector_plan;
use super::X64Tier;
use crate::emit::check_shape;
use crate::kernel::LoopKernel;

/// Source rows per sub-stripe: each row is a stream of reads within its 4 KiB pages, and
/// Intel's L2 streamer follows 32 streams.
const ROWS: u64 = 32;

/// The sub-striped form of `k` ([`LoopKernel::sub_striped`] by [`ROWS`]: at least four dims,
/// an innermost dim of at least two sub-stripes) when `k` streams its stores through tiles on
/// `tier` with `caches`, and the form reads through tiles too and starts every run on a
/// line when the store binding starts on one (its run, store offset and outer store strides
/// whole lines).
pub(crate) fn form(
    k: &LoopKernel,
    tier: X64Tier,
    reassociate: bool,
    caches: &Blocking,
) -> Option<LoopKernel> {
    // The vector plan relies on a checked shape.
    let tiled = |k: &LoopKernel| {
        check_shape(k, tier.name()).is_ok() && {
            let live = k.live_nodes();
            vector_plan(k, &live, tier, reassociate).is_some_and(|p| p.tiles())
        }
    };
    // The cheap test first: every kernel of every compile asks, and few outputs stream. A
    // tiled plan is a vector plan, so the two make `uses_non_temporal_stores`.
    if !crate::streams_stores(k, caches) || !tiled(k) {
        return None;
    }
    let form = k.sub_striped(ROWS)?;
    let line = (64 / k.bindings.get(k.store.binding as usize)?.dtype.size_bytes()) as i64;
    let whole_lines = form.dims.last().is_some_and(|&n| n as i64 % line == 0)
        && form.store.map.strides[..form.dims.len() - 1]
            .iter()
            .chain([&form.store.map.offset])
            .all(|s| s % line == 0);
    (whole_lines && tiled(&form)).then_some(form)
}

/// At `k`'s entry, before its own prologue: a jump to `on_line` when the dispatch state is
/// the one `k` expects (otherwise `k`'s checks report it) and the store binding's address is
/// a multiple of 64. Reads only the state and the binding's address, into rax.
pub(crate) fn emit_branch(ops: &mut Asm, k: &LoopKernel, on_line: DynamicLabel) {
    let main = ops.new_dynamic_label();
    let count = k.bindings.len() as i32;
    let store = k.store.binding as i32 * DispatchState::BINDING_STRIDE as i32;
    x64!(ops
        ; cmp DWORD [rdi + DispatchState::OFFSET_ABI_VERSION as i32], ABI_VERSION as i32
        ; jne =>main
        ; cmp DWORD [rdi + DispatchState::OFFSET_BINDING_COUNT as i32], count
        ; jne =>main
        ; mov rax, QWORD [rdi + DispatchState::OFFSET_BINDINGS as i32]
        ; mov rax, QWORD [rax + store]
        ; test al, 63
        ; jz =>on_line
        ; =>main
    );
}
