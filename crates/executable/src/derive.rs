//! Computing an artifact's derived slots at load: each is a weight or constant in another
//! layout (a dot's right operand packed into panels), made once by the artifact's setup
//! commands and read-only afterwards.
//!
//! A derived slot of a weight is identified by the weight's name and the slot's layout
//! (`accy_artifact::SlotRole::Derived`), and the block lives in the bound [`Weights`]: the
//! first artifact that needs `(weight, layout)` computes it, every later one bound to the same
//! weights (a plan for another batch size, say) shares it, and [`Weights::weight_bytes`]
//! counts it once. A derived slot of a constant belongs to its artifact alone. Either way the
//! block is made read-only once computed (module `pages`).

use std::sync::Arc;

use accy_artifact::{DerivedSource, LaunchPlan, SlotId, SlotRole};

use crate::aligned::AlignedBytes;
use crate::binding::region_ptr;
use crate::loaded::{LoadError, LoadedArtifact, SlotSource};
use crate::pages::{FrozenPages, Pages, PagesFailure};
use crate::pool::Inline;
use crate::run::{execute, Workers};
use crate::steps::Steps;

/// The blocks of the derived slots of `loaded` (an artifact loaded with its weights bound and
/// no derived blocks yet), in slot order, written by the artifact's `setup` commands.
pub(crate) fn compute(
    loaded: &LoadedArtifact,
    setup: &LaunchPlan,
) -> Result<Vec<Arc<FrozenPages>>, LoadError> {
    let mut blocks = Vec::new();
    for (slot, source, layout) in loaded.plan().derived_slots() {
        let make = || derive(loaded, setup, slot);
        let block = match source {
            DerivedSource::Weight(name) => loaded.weights().derived(name, layout, make)?,
            DerivedSource::Constant(_) => Arc::new(make()?),
        };
        blocks.push(block);
    }
    Ok(blocks)
}

/// Runs the setup commands that write `slot` into a fresh block of pages, then makes the
/// block read-only.
fn derive(
    loaded: &LoadedArtifact,
    setup: &LaunchPlan,
    slot: SlotId,
) -> Result<FrozenPages, LoadError> {
    let info = loaded
        .plan()
        .slot(slot)
        .filter(|s| matches!(s.role, SlotRole::Derived { .. }))
        .ok_or(LoadError::NotDerived { slot })?;
    let too_large = || LoadError::TooLarge {
        slot,
        bytes: info.byte_size,
        alignment: info.alignment,
    };
    let bytes = usize::try_from(info.byte_size).map_err(|_| too_large())?;
    // The block starts on a page, which satisfies any alignment up to a page.
    let page = crate::sys::page_size();
    if usize::try_from(info.alignment).map_or(true, |a| a > page) {
        return Err(too_large());
    }
    let pages_out_of_memory = |failure: PagesFailure| LoadError::OutOfMemory {
        bytes: failure.bytes,
        alignment: page,
    };
    let mut block = Pages::new(bytes).map_err(pages_out_of_memory)?;

    let mut steps = Steps::default();
    for command in &setup.commands {
        if command
            .accesses()
            .any(|(_, r, a)| a.writes() && r.slot == slot)
        {
            steps.push(command, loaded.kernels())?;
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
    .map_err(|failure| LoadError::OutOfMemory {
        bytes: failure.bytes,
        alignment: failure.alignment,
    })?;
    let workers = Workers {
        base: worker.as_mut_ptr(),
        stride: loaded.worker_scratch_stride() as u64,
        count: 1,
    };
    // SAFETY: the steps write only `slot` (validation: a setup command writes exactly one
    // derived slot, and these are the ones writing `slot`), whose base is `block`, owned here
    // with `bytes` = the slot's size and not otherwise accessed during the call; they read only
    // the slot's source (validation), a weight of `loaded.weights()` (its size checked at
    // load) or a constant inside `loaded.constants()` (validation bounds it); binding pointers
    // come from these bases; one worker slice of the artifact's stride, run by `Inline` (one
    // worker).
    unsafe { execute(loaded, &Inline, &workers, &steps, &bases, &binding_ptrs) }
        .map_err(|source| LoadError::Setup { slot, source })?;
    block.freeze().map_err(pages_out_of_memory)
}

#[cfg(test)]
mod tests {
    use accy_artifact::{
        Arch, Artifact, Command, DerivedSource, FeatureSet, Region, Slot, SlotRole, TargetSpec,
    };
    use accy_ir::{DType, Type};

    use crate::test_support::mapping_perms;
    use crate::{CpuInfo, LoadedArtifact, Scratch, Tier, Weights};

    /// Weight `w` (8 bytes) copied by a setup command into a derived slot, which the run
    /// copies to output 0.
    fn artifact() -> Artifact {
        let mut a = Artifact::new(TargetSpec::new(Arch::host().unwrap(), FeatureSet::EMPTY));
        let ty = Type::new(DType::U8, &[8]);
        let w = a
            .plan
            .add(Slot::typed(SlotRole::Weight("w".into()), ty.clone(), 1).unwrap())
            .unwrap();
        let derived = a
            .plan
            .add(Slot {
                role: SlotRole::Derived {
                    source: DerivedSource::Weight("w".into()),
                    layout: "copy".into(),
                },
                byte_size: 8,
                alignment: 1,
                ty: None,
            })
            .unwrap();
        let out = a
            .plan
            .add(Slot::typed(SlotRole::Output(0), ty, 1).unwrap())
            .unwrap();
        a.setup.push(Command::Copy {
            src: Region::new(w, 0, 8),
            dst: Region::new(derived, 0, 8),
        });
        a.launch.push(Command::Copy {
            src: Region::new(derived, 0, 8),
            dst: Region::new(out, 0, 8),
        });
        a
    }

    #[test]
    fn derived_blocks_are_computed_once_and_read_only() {
        let weights = Weights::new(&[("w", &[1, 2, 3, 4, 5, 6, 7, 8])]).unwrap();
        let cpu = CpuInfo::detect_with_max_tier(Tier::Native);
        // SAFETY: the artifact has no machine code, only copies.
        let first =
            unsafe { LoadedArtifact::load_with_weights(&artifact(), &cpu, &weights) }.unwrap();
        // SAFETY: as above.
        let second =
            unsafe { LoadedArtifact::load_with_weights(&artifact(), &cpu, &weights) }.unwrap();
        assert_eq!(weights.derived_count(), 1);
        assert_eq!(first.derived[0].as_ptr(), second.derived[0].as_ptr());
        let perms = mapping_perms(first.derived[0].as_ptr() as usize).unwrap();
        assert!(
            perms.starts_with("r--"),
            "the packed form is on {perms} pages"
        );
        let mut out = [0u8; 8];
        second
            .invoke(&[], &mut [&mut out], &mut Scratch::new())
            .unwrap();
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
    }
}
