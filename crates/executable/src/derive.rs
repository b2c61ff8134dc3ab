//! Computing an artifact's derived slots at load: each is a weight or constant in another
//! layout (a dot's right operand packed into panels), made once by the artifact's setup
//! commands and read-only afterwards.
//!
//! A derived slot of a weight is identified by the weight's name and the slot's layout
//! (`accy_artifact::SlotRole::Derived`), and the block lives in the bound [`Weights`]: the
//! first artifact that needs `(weight, layout)` computes it, every later one bound to the same
//! weights (a plan for another batch size, say) shares it, and [`Weights::weight_bytes`]
//! counts it once. A derived slot of a constant belongs to its artifact alone.

use std::sync::Arc;

use accy_artifact::{Artifact, DerivedSource, SlotId, SlotRole};

use crate::aligned::AlignedBytes;
use crate::binding::region_ptr;
use crate::cpu::CpuInfo;
use crate::fpenv::FpEnvGuard;
use crate::loaded::{LoadError, LoadedArtifact, SlotSource};
use crate::pool::Inline;
use crate::run::{execute, Workers};
use crate::steps::Steps;

/// The blocks of `artifact`'s derived slots, in slot order, for `loaded` (which is `artifact`
/// loaded, with its weights bound and no derived blocks yet).
pub(crate) fn compute(
    loaded: &LoadedArtifact,
    artifact: &Artifact,
    cpu: &CpuInfo,
) -> Result<Vec<Arc<AlignedBytes>>, LoadError> {
    let mut blocks = Vec::new();
    for (slot, source, layout) in artifact.plan.derived_slots() {
        let make = || derive(loaded, artifact, slot, cpu);
        let block = match source {
            DerivedSource::Weight(name) => loaded.weights().derived(name, layout, make)?,
            DerivedSource::Constant(_) => Arc::new(make()?),
        };
        blocks.push(block);
    }
    Ok(blocks)
}

/// Runs the setup commands that write `slot` into a fresh block.
fn derive(
    loaded: &LoadedArtifact,
    artifact: &Artifact,
    slot: SlotId,
    cpu: &CpuInfo,
) -> Result<AlignedBytes, LoadError> {
    let info = artifact
        .plan
        .slot(slot)
        .filter(|s| matches!(s.role, SlotRole::Derived { .. }))
        .ok_or(LoadError::NotDerived { slot })?;
    let too_large = || LoadError::TooLarge {
        slot,
        bytes: info.byte_size,
        alignment: info.alignment,
    };
    let bytes = usize::try_from(info.byte_size).map_err(|_| too_large())?;
    let alignment = usize::try_from(info.alignment)
        .map_err(|_| too_large())?
        .max(cpu.preferred_buffer_alignment());
    let out_of_memory = |failure: crate::aligned::AllocFailure| LoadError::OutOfMemory {
        bytes: failure.bytes,
        alignment: failure.alignment,
    };
    let mut block = AlignedBytes::zeroed(bytes, alignment).map_err(out_of_memory)?;

    let mut steps = Steps::default();
    for command in &artifact.setup.commands {
        if command
            .accesses()
            .any(|(_, r, a)| a.writes() && r.slot == slot)
        {
            steps.push(command, &artifact.kernels)?;
        }
    }
    // Validation proved these commands touch only `slot` and its source: every other base may
    // dangle, as no step dereferences it.
    let block_ptr = block.as_mut_ptr();
    let bases: Vec<*mut u8> = loaded
        .sources
        .iter()
        .enumerate()
        .map(|(i, source)| match *source {
            _ if i == slot.index() => block_ptr,
            SlotSource::Weight(w) => loaded.weights().ptr(w).map_or(
                std::ptr::NonNull::dangling().as_ptr(),
                <*const u8>::cast_mut,
            ),
            SlotSource::Constant(offset) => loaded
                .constants()
                .get(offset..)
                .map_or(std::ptr::NonNull::dangling().as_ptr(), |c| {
                    c.as_ptr().cast_mut()
                }),
            _ => std::ptr::NonNull::dangling().as_ptr(),
        })
        .collect();
    let binding_ptrs: Vec<*mut u8> = steps
        .binding_spans
        .iter()
        .map(|span| region_ptr(&bases, span))
        .collect();
    let mut worker = AlignedBytes::zeroed(
        loaded.worker_scratch_stride(),
        accy_artifact::abi::WORKER_SCRATCH_ALIGN as usize,
    )
    .map_err(out_of_memory)?;
    let workers = Workers {
        base: worker.as_mut_ptr(),
        stride: loaded.worker_scratch_stride() as u64,
        count: 1,
    };
    let _fp = FpEnvGuard::enter();
    // SAFETY: the steps write only `slot` (validation: a setup command writes exactly one
    // derived slot, and these are the ones writing `slot`), whose base is `block`, owned here
    // with `bytes` = the slot's size and not otherwise accessed during the call; they read only
    // the slot's source (validation), a weight of `loaded.weights()` (its size checked at
    // load) or a constant inside `loaded.constants()` (validation bounds it); binding pointers
    // come from these bases; one worker slice of the artifact's stride, run by `Inline` (one
    // worker).
    unsafe { execute(loaded, &Inline, &workers, &steps, &bases, &binding_ptrs) }
        .map_err(|source| LoadError::Setup { slot, source })?;
    Ok(block)
}
