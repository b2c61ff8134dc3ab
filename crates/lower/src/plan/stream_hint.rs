//! Prefetch hints for loop kernels that stream a large input on their own (not in a dispatch
//! chain, whose last link gets its hint from `chain.rs`): the largest binding the kernel loads
//! whole vectors of along its innermost dim, when it is larger than the L2 cache, gets a
//! [`Prefetch`] [`STREAM_AHEAD_BYTES`] ahead. The hardware prefetchers alone fall behind on
//! such a stream once the kernel does arithmetic per element. On an Intel AVX-512 guest (2
//! MiB L2; `cargo xtask bench memory`, two alternating rounds), the chain
//! `tanh(x·0.5+0.25)·1.5` over 16M f32, first with every vector load hinted: 18.7-20.2 ms
//! without a hint, 6.9-7.1 ms with one 2 KiB ahead, 7.4-7.9 ms with one 8 KiB ahead at 1
//! thread (2 threads: 4.7-5.4, 3.3-3.4 and 3.4-3.6 ms); then as built here, in another
//! hour: 19.2-20.3 against 9.75-9.8 ms (2 threads 9.75-9.9 against 3.9-4.3 ms). The copy of
//! the same bytes, which does no arithmetic, ran alike with and without (4.8-5.0 ms). An
//! earlier session found no gain from such hints on an AMD EPYC, whose prefetchers kept up;
//! AArch64 follows the hint too, unmeasured. A hint changes no result.

use accy_artifact::{Access, Blocking, Command};

use crate::kernel::{Kernel, LoopKernel, Node, Prefetch};

/// How far ahead of each streamed vector load the hint fetches, in bytes.
pub(crate) const STREAM_AHEAD_BYTES: u64 = 2048;

/// Gives each dispatched loop kernel that streams a binding larger than `caches.l2` (see the
/// module doc) a prefetch hint, unless it has one or runs in a chain.
pub(super) fn hint(commands: &[Command], kernels: &mut [Kernel], caches: &Blocking) {
    let mut after_chained = false;
    for command in commands {
        let Command::Dispatch {
            kernel, chained, ..
        } = command
        else {
            after_chained = false;
            continue;
        };
        // A chain's links (the last one follows a chained dispatch) read rows the chain
        // has fetched already.
        let in_chain = *chained || after_chained;
        after_chained = *chained;
        if in_chain {
            continue;
        }
        if let Some(Kernel::Loop(k)) = kernels.get_mut(*kernel as usize) {
            if k.prefetch.is_none() {
                k.prefetch = streamed(k, caches.l2);
            }
        }
    }
}

/// The hint for `k`: its largest read binding of more than `l2` bytes that some load walks
/// contiguously along the innermost dim.
fn streamed(k: &LoopKernel, l2: u64) -> Option<Prefetch> {
    let innermost = k.dims.len().checked_sub(1)?;
    let (binding, elem) = k
        .nodes
        .iter()
        .filter_map(|n| match &n.node {
            Node::Load { binding, map } if map.strides.get(innermost) == Some(&1) => Some(*binding),
            _ => None,
        })
        .filter_map(|b| {
            let info = k.bindings.get(b as usize)?;
            let size = info.dtype.size_bytes();
            let bytes = info.elements.checked_mul(size)?;
            // Read only: never the store's binding.
            (info.access == Access::Read && size > 0 && bytes > l2).then_some((b, size, bytes))
        })
        .max_by_key(|&(_, _, bytes)| bytes)
        .map(|(b, size, _)| (b, size))?;
    Some(Prefetch {
        binding,
        ahead: i64::try_from(STREAM_AHEAD_BYTES / elem).ok()?,
    })
}
