//! Binding caller buffers to a [`LoadedArtifact`]'s slots: [`prepare_borrowed`] checks them
//! once against the plan summary and yields [`Bindings`], which [`crate::run`] executes.
//!
//! Where each slot's memory comes from in a run:
//! - input slots: the caller's input buffers, used in place (no command writes an input slot,
//!   which validation proved, so the caller's inputs are never changed);
//! - output slots: the caller's output buffers, written in place;
//! - weight and constant slots: the loaded artifact's own immutable memory;
//! - scratch slots: one block in the caller-owned [`Scratch`].
//!
//! The checks, in one pass, each failure a [`BindingError`] with every number involved:
//! input and output counts; each buffer's exact byte size; each non-empty buffer's address a
//! multiple of its slot's alignment (the element's natural alignment — generated code uses
//! unaligned vector loads, so nothing more is required); no output sharing a byte with an
//! input or with another output (address ranges compared, sorted when there are many, in
//! `overlap.rs`; empty buffers share nothing).
//!
//! After the first run of an artifact, preparing allocates nothing: [`Scratch`] keeps its
//! memory and its pointer and range tables between runs and grows only when a larger plan needs it.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Arc;

use accy_artifact::SlotId;

use crate::aligned::AlignedBytes;
use crate::loaded::{LoadedArtifact, SlotSource};
use crate::overlap::{self, Extent};
use crate::pool::Executor;
use crate::steps::Span;

/// The alignment of the worker-scratch block (and so of every worker's slice, whose stride is
/// a multiple of it).
const WORKER_ALIGN: usize = accy_artifact::abi::WORKER_SCRATCH_ALIGN as usize;

/// Which list a caller buffer is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferKind {
    /// An input buffer.
    Input,
    /// An output buffer.
    Output,
}

impl fmt::Display for BufferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BufferKind::Input => "input",
            BufferKind::Output => "output",
        })
    }
}

/// Why caller buffers could not be bound. Every variant is a caller error except
/// [`BindingError::ScratchOutOfMemory`], a limit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BindingError {
    /// The number of input or output buffers differs from the plan's.
    #[error("expected {expected} {kind} buffers, got {actual}")]
    Count {
        /// Inputs or outputs.
        kind: BufferKind,
        /// How many the plan has.
        expected: usize,
        /// How many were given.
        actual: usize,
    },
    /// A buffer's length differs from its slot's size.
    #[error("{kind} {index} (slot {slot}) must be exactly {expected} bytes, got {actual}")]
    Size {
        /// Inputs or outputs.
        kind: BufferKind,
        /// The buffer's position in its list.
        index: usize,
        /// Its slot.
        slot: SlotId,
        /// The slot's size.
        expected: u64,
        /// The buffer's length.
        actual: usize,
    },
    /// A buffer's address is not a multiple of its slot's alignment.
    #[error(
        "{kind} {index} (slot {slot}) at address {address:#x} must be aligned to {alignment} \
         bytes (it is {misalignment} bytes past a multiple)"
    )]
    Misaligned {
        /// Inputs or outputs.
        kind: BufferKind,
        /// The buffer's position in its list.
        index: usize,
        /// Its slot.
        slot: SlotId,
        /// The buffer's address.
        address: usize,
        /// The slot's alignment.
        alignment: u64,
        /// `address % alignment`.
        misalignment: u64,
    },
    /// An output shares bytes with an input or with an earlier output.
    #[error(
        "output {output} at {:#x}..{:#x} overlaps {other_kind} {other} at {:#x}..{:#x}",
        .output_range.0, .output_range.1, .other_range.0, .other_range.1
    )]
    Overlap {
        /// The output's position.
        output: usize,
        /// Its address range, `start..end`.
        output_range: (usize, usize),
        /// Whether it overlaps an input or another output.
        other_kind: BufferKind,
        /// The other buffer's position in its list.
        other: usize,
        /// The other buffer's address range.
        other_range: (usize, usize),
    },
    /// There was no memory for the scratch block.
    #[error("out of memory allocating {bytes} bytes of scratch (alignment {alignment})")]
    ScratchOutOfMemory {
        /// The size asked for.
        bytes: usize,
        /// The alignment asked for.
        alignment: usize,
    },
}

/// Caller-owned, reusable memory for runs: the scratch block and the tables of slot and
/// binding addresses one run fills in.
///
/// Create one per thread (or per concurrent call) and pass it to every run; it grows to the
/// largest plan it has served and then allocates nothing more. `Send` (it may move between
/// threads), but not shared: a run needs it exclusively.
pub struct Scratch {
    memory: AlignedBytes,
    /// Worker scratch: one `worker_scratch`-byte slice per worker index of the executor last
    /// bound (see `accy_artifact::abi`).
    workers: AlignedBytes,
    /// Base address of each slot of the artifact last bound (stale outside a [`Bindings`]).
    pub(crate) bases: Vec<*mut u8>,
    /// Address of each dispatch binding of the artifact last bound, in plan order.
    pub(crate) binding_ptrs: Vec<*mut u8>,
    /// The caller buffers' address ranges, for the sorted overlap check (`overlap.rs`).
    extents: Vec<Extent>,
    /// What the layer above keeps from one call to the next (see [`Scratch::take_pinned`]).
    pinned: Option<Pinned>,
}

/// A value a runtime keeps alive in a scratch between calls, under an owner and a key.
struct Pinned {
    owner: u64,
    key: u64,
    value: Arc<dyn Any + Send + Sync>,
}

// SAFETY: the raw pointers are only a reusable table: they are written by `prepare_borrowed`
// and read only through the `Bindings` it returns, which borrows the buffers they point to
// for as long as they are used. Moving the table to another thread moves no access to them.
unsafe impl Send for Scratch {}

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Scratch>();
};

impl Default for Scratch {
    fn default() -> Scratch {
        Scratch::new()
    }
}

impl fmt::Debug for Scratch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scratch")
            .field("bytes", &self.memory.len())
            .field("alignment", &self.memory.alignment())
            .field("worker_bytes", &self.workers.len())
            .field("slot_capacity", &self.bases.capacity())
            .field("binding_capacity", &self.binding_ptrs.capacity())
            .field("buffer_capacity", &self.extents.capacity())
            .field("pinned", &self.pinned.as_ref().map(|p| (p.owner, p.key)))
            .finish()
    }
}

impl Scratch {
    /// An empty scratch; it allocates on its first use.
    pub const fn new() -> Scratch {
        Scratch {
            memory: AlignedBytes::empty(),
            workers: AlignedBytes::empty(),
            bases: Vec::new(),
            binding_ptrs: Vec::new(),
            extents: Vec::new(),
            pinned: None,
        }
    }

    /// Takes the value pinned by [`Scratch::pin`] if it was pinned under `owner` and `key`;
    /// otherwise leaves the scratch as it is and returns `None`.
    ///
    /// A runtime uses this to skip a shared lookup on repeated calls: the value (say, the
    /// program of the last call) travels with the caller's scratch, so reaching it writes no
    /// memory another thread reads. Whether the value is still current is the runtime's to
    /// check; the scratch only keeps it alive.
    #[inline]
    pub fn take_pinned(&mut self, owner: u64, key: u64) -> Option<Arc<dyn Any + Send + Sync>> {
        match &self.pinned {
            Some(p) if p.owner == owner && p.key == key => self.pinned.take().map(|p| p.value),
            _ => None,
        }
    }

    /// Keeps `value` alive in this scratch under `owner` and `key`, dropping what was pinned
    /// before. The value lives until it is taken, replaced, or the scratch is dropped.
    #[inline]
    pub fn pin(&mut self, owner: u64, key: u64, value: Arc<dyn Any + Send + Sync>) {
        self.pinned = Some(Pinned { owner, key, value });
    }

    /// A scratch already sized for `loaded` run by `workers` workers, so even its first run
    /// allocates nothing.
    pub fn for_artifact(loaded: &LoadedArtifact, workers: usize) -> Result<Scratch, BindingError> {
        let mut scratch = Scratch::new();
        scratch.reserve_for(loaded, workers)?;
        Ok(scratch)
    }

    /// Grows this scratch, if needed, to serve `loaded` run by `workers` workers: a block of at
    /// least its scratch size and alignment, `workers` worker-scratch slices, and room for its
    /// slot and binding tables. Never shrinks.
    #[inline]
    pub fn reserve_for(
        &mut self,
        loaded: &LoadedArtifact,
        workers: usize,
    ) -> Result<(), BindingError> {
        let bytes = loaded.scratch_size();
        let alignment = loaded.scratch_alignment();
        if self.memory.len() < bytes || self.memory.alignment() < alignment {
            let bytes = bytes.max(self.memory.len());
            let alignment = alignment.max(self.memory.alignment());
            self.memory = AlignedBytes::zeroed(bytes, alignment).map_err(|failure| {
                BindingError::ScratchOutOfMemory {
                    bytes: failure.bytes,
                    alignment: failure.alignment,
                }
            })?;
        }
        let stride = loaded.worker_scratch_stride();
        let worker_bytes =
            stride
                .checked_mul(workers.max(1))
                .ok_or(BindingError::ScratchOutOfMemory {
                    bytes: usize::MAX,
                    alignment: WORKER_ALIGN,
                })?;
        if self.workers.len() < worker_bytes {
            self.workers = AlignedBytes::zeroed(worker_bytes, WORKER_ALIGN).map_err(|failure| {
                BindingError::ScratchOutOfMemory {
                    bytes: failure.bytes,
                    alignment: failure.alignment,
                }
            })?;
        }
        // `reserve` counts from the current length; the tables are cleared before each use.
        self.bases.clear();
        self.bases.reserve(loaded.sources.len());
        self.binding_ptrs.clear();
        self.binding_ptrs.reserve(loaded.steps.binding_spans.len());
        let summary = loaded.summary();
        self.extents.clear();
        self.extents
            .reserve(summary.inputs.len() + summary.outputs.len());
        Ok(())
    }

    /// The size of the scratch block in bytes.
    pub fn capacity(&self) -> usize {
        self.memory.len()
    }

    /// The alignment of the scratch block.
    pub fn alignment(&self) -> usize {
        self.memory.alignment()
    }

    /// The base of the worker-scratch block.
    pub(crate) fn worker_ptr(&mut self) -> *mut u8 {
        self.workers.as_mut_ptr()
    }

    /// The bytes of worker scratch held (all workers' slices).
    pub fn worker_capacity(&self) -> usize {
        self.workers.len()
    }

    /// The first byte of the scratch block (for tests and diagnostics).
    pub fn as_ptr(&self) -> *const u8 {
        self.memory.as_ptr()
    }
}

/// Caller buffers checked and bound to one [`LoadedArtifact`], ready for [`crate::run`].
///
/// Borrows the inputs, the outputs (exclusively) and the scratch for `'a`, so none of them
/// can be used, moved or freed until the run has finished with it.
pub struct Bindings<'a> {
    pub(crate) loaded: &'a LoadedArtifact,
    pub(crate) scratch: &'a mut Scratch,
    pub(crate) executor: &'a dyn Executor,
    _buffers: PhantomData<(&'a [u8], &'a mut [u8])>,
}

impl fmt::Debug for Bindings<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bindings")
            .field("executor", &self.executor)
            .field("slots", &self.scratch.bases)
            .field("bindings", &self.scratch.binding_ptrs)
            .finish()
    }
}

impl<'a> Bindings<'a> {
    /// The artifact these bindings are for.
    pub fn loaded(&self) -> &'a LoadedArtifact {
        self.loaded
    }

    /// The base address bound to slot `slot`, for tests and diagnostics.
    pub fn slot_ptr(&self, slot: SlotId) -> Option<*const u8> {
        self.scratch
            .bases
            .get(slot.index())
            .map(|&p| p.cast_const())
    }
}

/// Checks one buffer's size and alignment against its slot's summary.
#[inline]
fn check_buffer(
    loaded: &LoadedArtifact,
    kind: BufferKind,
    index: usize,
    slot: SlotId,
    buffer: &[u8],
) -> Result<(), BindingError> {
    let Some(usage) = loaded.summary().usage(slot) else {
        // The summary lists every slot it names; treat a gap as a size mismatch to stay
        // panic-free.
        return Err(BindingError::Size {
            kind,
            index,
            slot,
            expected: 0,
            actual: buffer.len(),
        });
    };
    if buffer.len() as u64 != usage.byte_size {
        return Err(BindingError::Size {
            kind,
            index,
            slot,
            expected: usage.byte_size,
            actual: buffer.len(),
        });
    }
    // An empty buffer is never dereferenced, so its (dangling) address needs no alignment.
    let address = buffer.as_ptr() as usize;
    let misalignment = misalignment(address as u64, usage.alignment);
    if !buffer.is_empty() && misalignment != 0 {
        return Err(BindingError::Misaligned {
            kind,
            index,
            slot,
            address,
            alignment: usage.alignment,
            misalignment,
        });
    }
    Ok(())
}

/// Checks `inputs` and `outputs` against `loaded`'s plan (see the module documentation) and
/// binds every slot: caller buffers in place, weights and constants from `loaded`, scratch
/// slots and one worker-scratch slice per worker of `executor` in `scratch` (grown first if it
/// is too small for this plan). [`crate::run`] then runs the dispatches on `executor`.
#[inline]
pub fn prepare_borrowed<'a>(
    loaded: &'a LoadedArtifact,
    inputs: &[&'a [u8]],
    outputs: &'a mut [&mut [u8]],
    scratch: &'a mut Scratch,
    executor: &'a dyn Executor,
) -> Result<Bindings<'a>, BindingError> {
    let summary = loaded.summary();
    for (kind, expected, actual) in [
        (BufferKind::Input, summary.inputs.len(), inputs.len()),
        (BufferKind::Output, summary.outputs.len(), outputs.len()),
    ] {
        if expected != actual {
            return Err(BindingError::Count {
                kind,
                expected,
                actual,
            });
        }
    }
    for (index, (&slot, input)) in summary.inputs.iter().zip(inputs).enumerate() {
        check_buffer(loaded, BufferKind::Input, index, slot, input)?;
    }
    for (index, (&slot, output)) in summary.outputs.iter().zip(outputs.iter()).enumerate() {
        check_buffer(loaded, BufferKind::Output, index, slot, output)?;
    }
    overlap::check(inputs, outputs, &mut scratch.extents)?;

    scratch.reserve_for(loaded, executor.workers())?;
    let scratch_base = scratch.memory.as_mut_ptr();
    // `reserve_for` made room for every slot and binding, so the extends below never
    // allocate. Pointers to read-only memory are cast to `*mut` only because the ABI's
    // binding table has one type; validation proved no command writes those slots.
    scratch.bases.clear();
    scratch
        .bases
        .extend(loaded.sources.iter().map(|&source| match source {
            SlotSource::Input(n) => inputs.get(n).map_or(dangling(), |b| b.as_ptr().cast_mut()),
            SlotSource::Output(n) => outputs.get_mut(n).map_or(dangling(), |b| b.as_mut_ptr()),
            // `reserve_for` just ensured the block holds the plan's whole scratch layout.
            other => owned_base(loaded, other, scratch_base),
        }));
    let bases = &scratch.bases;
    scratch.binding_ptrs.clear();
    scratch.binding_ptrs.extend(
        loaded
            .steps
            .binding_spans
            .iter()
            .map(|span| region_ptr(bases, span)),
    );
    Ok(Bindings {
        loaded,
        scratch,
        executor,
        _buffers: PhantomData,
    })
}

/// The base of a slot whose memory is not a caller buffer: weights, constants and derived
/// blocks of `loaded`, or a scratch slot in `scratch_base`, a block holding at least
/// `loaded`'s scratch layout. A dangling address for caller-buffer slots (not its business)
/// and for anything missing (which validation and loading rule out).
#[inline]
pub(crate) fn owned_base(
    loaded: &LoadedArtifact,
    source: SlotSource,
    scratch_base: *mut u8,
) -> *mut u8 {
    match source {
        SlotSource::Input(_) | SlotSource::Output(_) => dangling(),
        SlotSource::Weight(i) => loaded
            .weights()
            .ptr(i)
            .map_or(dangling(), <*const u8>::cast_mut),
        SlotSource::Constant(offset) => match loaded.constants().get(offset..) {
            // Validation proved `offset + slot size <= constants.len()` (the block is a copy
            // of the artifact's constants).
            Some(rest) => rest.as_ptr().cast_mut(),
            None => dangling(),
        },
        // The scratch layout places the slot at `offset` with `offset + slot size <= layout
        // size`, inside the caller's block; `wrapping_add` keeps computing the address free
        // of that promise (only dereferencing it relies on it).
        SlotSource::Scratch(offset) => scratch_base.wrapping_add(offset),
        SlotSource::Derived(i) => loaded
            .derived
            .get(i)
            .map_or(dangling(), |b| b.as_ptr().cast_mut()),
    }
}

/// A non-null address never dereferenced: what zero-length regions get.
pub(crate) fn dangling() -> *mut u8 {
    NonNull::<u8>::dangling().as_ptr()
}

/// How far `address` lies past a multiple of `alignment` (0 counts as 1). Alignments are
/// powers of two in practice, so the mask avoids a 64-bit division on every invoke; any other
/// value still gets the exact remainder.
#[inline]
fn misalignment(address: u64, alignment: u64) -> u64 {
    let alignment = alignment.max(1);
    if alignment.is_power_of_two() {
        address & (alignment - 1)
    } else {
        address % alignment
    }
}

/// The address of `span` given the slot bases: a dangling non-null address for an empty
/// span, otherwise the slot's base plus the span's offset.
#[inline]
pub(crate) fn region_ptr(bases: &[*mut u8], span: &Span) -> *mut u8 {
    match bases.get(span.slot) {
        Some(&base) if span.len > 0 => {
            // SAFETY: validation proved `offset + len <= slot size`, and every slot's base
            // points at memory of exactly (caller buffers, checked above; weights, checked at
            // load) or at least (constants, scratch) that size, so the result is in bounds.
            unsafe { base.add(span.offset) }
        }
        _ => dangling(),
    }
}
