//! What a caller needs to know to size and type its buffers.

use accy_executable::LoadedArtifact;
use accy_ir::{DType, Dims, Type};

use crate::SessionFailure;

/// The element type, axes, exact byte length and required alignment of one input or output of
/// a compiled program. A caller sizes and types the buffers it passes to
/// [`crate::Session::invoke`] from these.
///
/// The required alignment is the element's natural alignment (generated code uses unaligned
/// vector accesses), so an ordinary `Vec<f32>` qualifies; more alignment may help speed but is
/// never required.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// Element type.
    pub dtype: DType,
    /// Axis lengths, outermost first (row-major).
    pub dims: Dims,
    /// Exact length in bytes the buffer must have.
    pub byte_size: usize,
    /// Alignment in bytes the buffer's address must have.
    pub alignment: usize,
}

impl Descriptor {
    /// The descriptor of a dense row-major tensor of `dtype` with axes `dims`, aligned to its
    /// element; `None` if its byte size does not fit `usize`. What a model plan's inputs and
    /// outputs are described with.
    pub fn new(dtype: DType, dims: &[u64]) -> Option<Descriptor> {
        Descriptor::of(&Type::new(dtype, dims))
    }

    /// The descriptor of a value of type `ty`, or `None` if its size does not fit `usize`.
    pub(crate) fn of(ty: &Type) -> Option<Descriptor> {
        Some(Descriptor {
            dtype: ty.dtype,
            dims: ty.dims.clone(),
            byte_size: usize::try_from(ty.byte_size()?).ok()?,
            alignment: ty.dtype.alignment() as usize,
        })
    }

    /// The descriptors of a loaded artifact's inputs and outputs, in order, from its typed
    /// slots alone (no `Program` needed: an artifact loaded ahead of time is described the
    /// same way). The alignment is the slot's, which the compiler sets to the element's.
    pub fn of_artifact(
        loaded: &LoadedArtifact,
    ) -> Result<(Vec<Descriptor>, Vec<Descriptor>), SessionFailure> {
        let plan = loaded.plan();
        let describe = |what: &'static str, slots: &[accy_artifact::SlotId]| {
            slots
                .iter()
                .enumerate()
                .map(|(index, &id)| {
                    let slot = plan
                        .slot(id)
                        .ok_or(SessionFailure::Untyped { what, index })?;
                    let ty = slot
                        .ty
                        .as_ref()
                        .ok_or(SessionFailure::Untyped { what, index })?;
                    let too_large = || SessionFailure::TooLarge {
                        what,
                        index,
                        ty: ty.clone(),
                    };
                    let mut d = Descriptor::of(ty).ok_or_else(too_large)?;
                    d.alignment = usize::try_from(slot.alignment).map_err(|_| too_large())?;
                    Ok(d)
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let summary = loaded.summary();
        Ok((
            describe("input", &summary.inputs)?,
            describe("output", &summary.outputs)?,
        ))
    }
}
