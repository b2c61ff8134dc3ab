//! Launch-plan commands prepared for running: regions with host-sized numbers ([`Span`]) and
//! one [`Step`] per command, with the binding and scalar tables their dispatches index, built
//! once at load so a run only walks them.

use std::ops::Range;

use accy_artifact::{Command, KernelEntry, Region};

use crate::loaded::LoadError;

/// A region with host-sized numbers: `offset..offset + len` of slot `slot`, all inside the
/// slot (validation proved it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) slot: usize,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

/// One launch-plan command, prepared for running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Fill `dst` with the first `width` bytes of `pattern`, repeated.
    Fill {
        dst: Span,
        pattern: [u8; 4],
        width: usize,
    },
    /// Copy `src` to `dst` (same length, no overlap).
    Copy { src: Span, dst: Span },
    /// Call kernel `kernel` (entry at `entry`) for each workgroup, with bindings
    /// `binding_spans[bindings]` and scalars `scalars[scalars]`; when `chained`, workgroup by
    /// workgroup with the next step (a dispatch with as many workgroups: validation proved
    /// it).
    Dispatch {
        kernel: usize,
        entry: u32,
        bindings: Range<usize>,
        scalars: Range<usize>,
        workgroups: u32,
        chained: bool,
    },
}

/// Commands turned into [`Step`]s, with the tables their dispatches index.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    pub(crate) steps: Vec<Step>,
    pub(crate) binding_spans: Vec<Span>,
    pub(crate) binding_lengths: Vec<u64>,
    pub(crate) scalars: Vec<u64>,
}

impl Steps {
    /// Appends `command` (of a validated artifact whose kernels are `kernels`).
    pub(crate) fn push(
        &mut self,
        command: &Command,
        kernels: &[KernelEntry],
    ) -> Result<(), LoadError> {
        let step = match command {
            Command::Fill {
                dst,
                pattern,
                width,
            } => Step::Fill {
                dst: span(dst)?,
                pattern: pattern.to_le_bytes(),
                width: usize::from(*width),
            },
            Command::Copy { src, dst } => Step::Copy {
                src: span(src)?,
                dst: span(dst)?,
            },
            Command::Dispatch {
                kernel,
                bindings,
                scalars,
                workgroups,
                chained,
            } => {
                let index = *kernel as usize;
                // Validation proved the kernel exists; `get` keeps this panic-free anyway.
                let entry = kernels.get(index).map_or(0, |k| k.offset);
                let first_binding = self.binding_spans.len();
                for b in bindings {
                    self.binding_spans.push(span(&b.region)?);
                    self.binding_lengths.push(b.region.len);
                }
                let first_scalar = self.scalars.len();
                self.scalars.extend_from_slice(scalars);
                Step::Dispatch {
                    kernel: index,
                    entry,
                    bindings: first_binding..self.binding_spans.len(),
                    scalars: first_scalar..self.scalars.len(),
                    workgroups: *workgroups,
                    chained: *chained,
                }
            }
        };
        self.steps.push(step);
        Ok(())
    }
}

/// `region` with host-sized numbers. Validation proved it lies inside its slot, whose size
/// fits `usize` (checked by `slot_sources`), so the conversions cannot fail in practice.
fn span(region: &Region) -> Result<Span, LoadError> {
    let too_large = LoadError::TooLarge {
        slot: region.slot,
        bytes: region.end().unwrap_or(u64::MAX),
        alignment: 1,
    };
    Ok(Span {
        slot: region.slot.index(),
        offset: usize::try_from(region.offset).map_err(|_| too_large.clone())?,
        len: usize::try_from(region.len).map_err(|_| too_large)?,
    })
}
