//! [`LoadedArtifact`]: an artifact made live on this host — validated, its code published
//! into one [`CodeMemory`], its constants copied into aligned immutable memory, its weights
//! bound, and its launch plan turned into steps that run without further checks.
//!
//! Loading, in order (the first failure is returned as a [`LoadError`]):
//! 1. [`Artifact::validate`], keeping the [`PlanSummary`] that binding checks buffers against;
//! 2. the artifact's architecture must be the host's, and every feature its code needs must
//!    be one the host may use ([`CpuInfo::features`], which `ACCY_CPU_FEATURES_MAX` can mask);
//! 3. every slot size and offset must fit the host's address space;
//! 4. each weight slot is bound to the [`Weights`] entry of its name, which must have the
//!    slot's exact size and enough alignment;
//! 5. the constants are copied into one block aligned to the largest constant-slot alignment;
//! 6. the code is published into one read+execute mapping and every kernel entry is checked;
//! 7. each derived slot is computed by its setup commands, or shared from the weights when
//!    an artifact bound to them computed the same `(weight, layout)` before (`derive`).
//!
//! After loading nothing changes: a `LoadedArtifact` is `Send + Sync` (checked at compile
//! time) and any number of threads may run it at once, each with its own buffers and
//! [`crate::Scratch`].

use accy_artifact::{
    Artifact, ArtifactPlan, KernelEntry, LaunchPlan, PlanSummary, SlotRole, TargetSpec, Validated,
};

use std::borrow::Cow;
use std::sync::Arc;

use crate::aligned::AlignedBytes;
use crate::code_memory::CodeMemory;
use crate::cpu::CpuInfo;
use crate::derive;
pub use crate::load_error::LoadError;
use crate::pages::FrozenPages;
use crate::steps::Steps;
use crate::weights::Weights;

/// Where a slot's memory comes from in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotSource {
    /// The caller's input buffer number `n`.
    Input(usize),
    /// The caller's output buffer number `n`.
    Output(usize),
    /// Entry `i` of the bound [`Weights`].
    Weight(usize),
    /// This offset into the constants block.
    Constant(usize),
    /// This offset into the scratch block.
    Scratch(usize),
    /// Entry `i` of the loaded artifact's derived blocks.
    Derived(usize),
}

/// An artifact loaded for running on this host: published code, constants, bound weights and
/// a prepared launch plan. Immutable, `Send + Sync`.
///
/// Run it with [`crate::prepare_borrowed`] and [`crate::run`] (or [`LoadedArtifact::invoke`]).
#[derive(Debug)]
pub struct LoadedArtifact {
    target: TargetSpec,
    flush_subnormals: bool,
    code: Option<CodeMemory>,
    kernels: Vec<KernelEntry>,
    constants: AlignedBytes,
    weights: Weights,
    plan: ArtifactPlan,
    launch: LaunchPlan,
    summary: PlanSummary,
    scratch_size: usize,
    scratch_alignment: usize,
    worker_scratch_stride: usize,
    pub(crate) sources: Vec<SlotSource>,
    /// The memory of each derived slot, in slot order ([`SlotSource::Derived`] indexes it).
    pub(crate) derived: Vec<Arc<FrozenPages>>,
    pub(crate) steps: Steps,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<LoadedArtifact>();
};

/// Loads `artifact` (which must have no weight slots) for the host `cpu`; see
/// [`LoadedArtifact::load`].
///
/// # Safety
///
/// As for [`LoadedArtifact::load_with_weights`].
pub unsafe fn load(artifact: &Artifact, cpu: &CpuInfo) -> Result<LoadedArtifact, LoadError> {
    // SAFETY: the caller keeps this function's contract, which is the callee's.
    unsafe { LoadedArtifact::load(artifact, cpu) }
}

impl LoadedArtifact {
    /// Loads an artifact that has no weight slots (see the module documentation for the
    /// steps). An artifact with weight slots is refused with [`LoadError::MissingWeight`];
    /// use [`LoadedArtifact::load_with_weights`].
    ///
    /// # Safety
    ///
    /// As for [`LoadedArtifact::load_with_weights`].
    pub unsafe fn load(artifact: &Artifact, cpu: &CpuInfo) -> Result<LoadedArtifact, LoadError> {
        // SAFETY: the caller keeps this function's contract, which is the callee's.
        unsafe { LoadedArtifact::load_with_weights(artifact, cpu, &Weights::empty()) }
    }

    /// Loads an artifact, binding each weight slot to the entry of `weights` with its name.
    /// The loaded artifact keeps a clone of `weights` (sharing its memory), so the weights
    /// are stored once however many artifacts bind them; weights the artifact does not use
    /// are ignored.
    ///
    /// # Safety
    ///
    /// Validation proves the launch plan stays inside its slots, but it cannot prove what the
    /// machine code does: the caller promises that every kernel in `artifact.code` keeps the
    /// dispatch ABI's rules (`accy_artifact::abi`: it touches only the bytes of its bindings,
    /// writes only bindings it may write, preserves callee-saved registers, and returns) for
    /// the bindings the launch plan gives it. Code produced by `accy_lower::compile` for this
    /// very artifact keeps them; bytes from anywhere else must not be loaded. (wasmtime's
    /// `Module::deserialize` is unsafe for the same reason.)
    pub unsafe fn load_with_weights(
        artifact: &Artifact,
        cpu: &CpuInfo,
        weights: &Weights,
    ) -> Result<LoadedArtifact, LoadError> {
        let summary = artifact.validate()?;
        // SAFETY: the caller keeps this function's contract, which is the callee's; the
        // summary was just computed from `artifact`.
        unsafe { Self::load_summarized(Cow::Borrowed(artifact), summary, cpu, weights) }
    }

    /// [`LoadedArtifact::load_with_weights`] of an artifact the caller gives away: its plans
    /// and kernel table move into the loaded artifact instead of being copied.
    ///
    /// # Safety
    ///
    /// As for [`LoadedArtifact::load_with_weights`].
    pub unsafe fn load_owned_with_weights(
        artifact: Artifact,
        cpu: &CpuInfo,
        weights: &Weights,
    ) -> Result<LoadedArtifact, LoadError> {
        let summary = artifact.validate()?;
        // SAFETY: as in `load_with_weights`.
        unsafe { Self::load_summarized(Cow::Owned(artifact), summary, cpu, weights) }
    }

    /// [`LoadedArtifact::load_with_weights`] for an artifact validated already (as
    /// `Artifact::from_bytes_validated` returns it), without validating again.
    ///
    /// # Safety
    ///
    /// As for [`LoadedArtifact::load_with_weights`].
    pub unsafe fn load_validated(
        validated: Validated,
        cpu: &CpuInfo,
        weights: &Weights,
    ) -> Result<LoadedArtifact, LoadError> {
        let (artifact, summary) = validated.into_parts();
        // SAFETY: the caller keeps this function's contract, which is the callee's; a
        // `Validated`'s summary is validation's result for its artifact.
        unsafe { Self::load_summarized(Cow::Owned(artifact), summary, cpu, weights) }
    }

    /// Loads `artifact`, whose validation gave `summary`.
    ///
    /// # Safety
    ///
    /// As for [`LoadedArtifact::load_with_weights`], and `summary` is what
    /// `artifact.validate()` returned.
    unsafe fn load_summarized(
        artifact: Cow<'_, Artifact>,
        summary: PlanSummary,
        cpu: &CpuInfo,
        weights: &Weights,
    ) -> Result<LoadedArtifact, LoadError> {
        let target = artifact.target;
        if cpu.arch() != Some(target.arch) {
            return Err(LoadError::ArchMismatch {
                artifact: target.arch,
                host: cpu.arch(),
            });
        }
        let missing = target.features.missing(cpu.features());
        if !missing.is_empty() {
            return Err(LoadError::MissingFeatures {
                target,
                missing,
                host: cpu.features(),
                tier: cpu.max_tier(),
            });
        }
        let sources = slot_sources(&artifact.plan, &summary, weights)?;

        let block_too_large = |block, bytes, alignment| LoadError::BlockTooLarge {
            block,
            bytes,
            alignment,
        };
        let constants_alignment = usize::try_from(summary.constants_alignment).map_err(|_| {
            block_too_large(
                "constants",
                artifact.constants.len() as u64,
                summary.constants_alignment,
            )
        })?;
        let constants =
            AlignedBytes::copy_of(&artifact.constants, constants_alignment).map_err(|failure| {
                LoadError::OutOfMemory {
                    bytes: failure.bytes,
                    alignment: failure.alignment,
                }
            })?;

        let code = if artifact.code.is_empty() {
            None
        } else {
            let code = CodeMemory::from_code(&artifact.code).map_err(|source| LoadError::Code {
                bytes: artifact.code.len(),
                source,
            })?;
            for (kernel, k) in artifact.kernels.iter().enumerate() {
                code.entry(k.offset)
                    .map_err(|source| LoadError::KernelEntry {
                        kernel,
                        name: k.name.clone(),
                        source,
                    })?;
            }
            Some(code)
        };

        let mut steps = Steps::default();
        for command in &artifact.launch.commands {
            steps.push(command, &artifact.kernels)?;
        }

        let scratch_too_large =
            || block_too_large("scratch", summary.scratch.size, summary.scratch.alignment);
        let scratch_size =
            usize::try_from(summary.scratch.size).map_err(|_| scratch_too_large())?;
        let worker_scratch_stride = usize::try_from(summary.worker_scratch).map_err(|_| {
            block_too_large(
                "worker scratch",
                summary.worker_scratch,
                accy_artifact::abi::WORKER_SCRATCH_ALIGN,
            )
        })?;
        let scratch_alignment = usize::try_from(summary.scratch.alignment)
            .map_err(|_| scratch_too_large())?
            .max(cpu.preferred_buffer_alignment())
            .max(1);
        let flush_subnormals = artifact.flush_subnormals;
        let assemble = |kernels, plan, launch| LoadedArtifact {
            target,
            flush_subnormals,
            code,
            kernels,
            constants,
            weights: weights.clone(),
            plan,
            launch,
            summary,
            scratch_size,
            scratch_alignment,
            worker_scratch_stride,
            sources,
            derived: Vec::new(),
            steps,
        };
        // An artifact given away is taken apart (no copies: this is most of a load's
        // allocations); a borrowed one is copied from.
        let (mut loaded, derived) = match artifact {
            Cow::Owned(artifact) => {
                let Artifact {
                    kernels,
                    plan,
                    launch,
                    setup,
                    ..
                } = artifact;
                let loaded = assemble(kernels, plan, launch);
                let derived = derive::compute(&loaded, &setup)?;
                (loaded, derived)
            }
            Cow::Borrowed(artifact) => {
                let loaded = assemble(
                    artifact.kernels.clone(),
                    artifact.plan.clone(),
                    artifact.launch.clone(),
                );
                let derived = derive::compute(&loaded, &artifact.setup)?;
                (loaded, derived)
            }
        };
        loaded.derived = derived;
        Ok(loaded)
    }

    /// The architecture and features the code was generated for.
    pub fn target(&self) -> TargetSpec {
        self.target
    }

    /// Whether runs flush subnormal floats to zero (`accy_artifact::Artifact::flush_subnormals`).
    pub fn flush_subnormals(&self) -> bool {
        self.flush_subnormals
    }

    /// The slots (with their roles and types, for describing buffers to a caller).
    pub fn plan(&self) -> &ArtifactPlan {
        &self.plan
    }

    /// The launch plan as the artifact gave it.
    pub fn launch_plan(&self) -> &LaunchPlan {
        &self.launch
    }

    /// The validator's summary: per-slot usage, the input and output slots in order, the
    /// scratch layout. Binding checks caller buffers against it.
    pub fn summary(&self) -> &PlanSummary {
        &self.summary
    }

    /// The number of input buffers a run takes.
    pub fn input_count(&self) -> usize {
        self.summary.inputs.len()
    }

    /// The number of output buffers a run takes.
    pub fn output_count(&self) -> usize {
        self.summary.outputs.len()
    }

    /// The kernels' names and entry offsets.
    pub fn kernels(&self) -> &[KernelEntry] {
        &self.kernels
    }

    /// The published code, or `None` if the artifact has no kernels (a plan of only fills
    /// and copies).
    pub fn code(&self) -> Option<&CodeMemory> {
        self.code.as_ref()
    }

    /// The constants block (aligned to the largest constant-slot alignment).
    pub fn constants(&self) -> &[u8] {
        self.constants.as_slice()
    }

    /// The address of the constants block, for checking its alignment.
    pub fn constants_ptr(&self) -> *const u8 {
        self.constants.as_ptr()
    }

    /// The weights this artifact is bound to (shared with every clone of them).
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    /// The bytes of private scratch one run needs.
    pub fn scratch_size(&self) -> usize {
        self.scratch_size
    }

    /// The bytes of worker scratch each worker of a run gets (a multiple of
    /// `accy_artifact::abi::WORKER_SCRATCH_ALIGN`; 0 when no kernel needs any).
    pub fn worker_scratch_stride(&self) -> usize {
        self.worker_scratch_stride
    }

    /// The alignment the scratch block gets: the plan's largest scratch alignment, raised to
    /// the host's preferred buffer alignment.
    pub fn scratch_alignment(&self) -> usize {
        self.scratch_alignment
    }
}

/// Where each slot's memory comes from, with every size checked to fit `usize` and every
/// weight bound.
fn slot_sources(
    plan: &ArtifactPlan,
    summary: &PlanSummary,
    weights: &Weights,
) -> Result<Vec<SlotSource>, LoadError> {
    let mut sources = Vec::with_capacity(plan.slots.len());
    let mut derived = 0;
    for (id, slot) in plan.iter() {
        let too_large = || LoadError::TooLarge {
            slot: id,
            bytes: slot.byte_size,
            alignment: slot.alignment,
        };
        let bytes = usize::try_from(slot.byte_size).map_err(|_| too_large())?;
        usize::try_from(slot.alignment).map_err(|_| too_large())?;
        let source = match &slot.role {
            SlotRole::Input(n) => SlotSource::Input(*n as usize),
            SlotRole::Output(n) => SlotSource::Output(*n as usize),
            SlotRole::Weight(name) => {
                let index = weights
                    .position(name)
                    .ok_or_else(|| LoadError::MissingWeight {
                        slot: id,
                        name: name.clone(),
                        available: weights.len(),
                    })?;
                let actual = weights.len_of(index).unwrap_or(0);
                if actual != bytes {
                    return Err(LoadError::WeightSize {
                        slot: id,
                        name: name.clone(),
                        expected: slot.byte_size,
                        actual,
                    });
                }
                let provided = weights.alignment_of(index);
                if slot.alignment > provided as u64 {
                    return Err(LoadError::WeightAlignment {
                        slot: id,
                        name: name.clone(),
                        required: slot.alignment,
                        provided,
                    });
                }
                SlotSource::Weight(index)
            }
            // Validation proved `offset + byte_size <= constants.len()`, a `usize`.
            SlotRole::Constant { offset } => {
                SlotSource::Constant(usize::try_from(*offset).map_err(|_| too_large())?)
            }
            SlotRole::Derived { .. } => {
                let i = derived;
                derived += 1;
                SlotSource::Derived(i)
            }
            SlotRole::Scratch => {
                let offsets = &summary.scratch.offsets;
                let at = offsets
                    .binary_search_by_key(&id, |&(slot, _)| slot)
                    .map_err(|_| LoadError::ScratchUnplaced { slot: id })?;
                let offset = offsets[at].1;
                SlotSource::Scratch(usize::try_from(offset).map_err(|_| too_large())?)
            }
        };
        sources.push(source);
    }
    Ok(sources)
}
