//! What a caller needs to know to size and type its buffers.

use accy_ir::{DType, Dims, Type};

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
    /// The descriptor of a value of type `ty`, or `None` if its size does not fit `usize`.
    pub(crate) fn of(ty: &Type) -> Option<Descriptor> {
        Some(Descriptor {
            dtype: ty.dtype,
            dims: ty.dims.clone(),
            byte_size: usize::try_from(ty.byte_size()?).ok()?,
            alignment: ty.dtype.alignment() as usize,
        })
    }
}
