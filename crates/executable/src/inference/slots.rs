//! One inference slot's memory: where a plan's scratch allocations live, the fragment and
//! worker scratch, and each dispatch's slot and binding address tables, computed once because
//! nothing in the slot ever moves.

use std::sync::Arc;

use accy_artifact::model::{Command, ModelPlan, PlanLayout};

use super::{host, PrepareError, Step};
use crate::aligned::AlignedBytes;
use crate::binding::{dangling, owned_base, region_ptr};
use crate::loaded::{LoadedArtifact, SlotSource};

/// One dispatch's address tables in one slot.
#[derive(Debug)]
pub(super) struct Tables {
    pub(super) bases: Vec<*mut u8>,
    pub(super) binding_ptrs: Vec<*mut u8>,
}

/// Where a slot's scratch allocations live.
#[derive(Debug)]
enum Block {
    /// One aligned heap block holding all of them.
    Heap { _memory: AlignedBytes },
    /// Each in a buffer of its own, ending at a guard page (tests).
    #[cfg(any(test, feature = "testing"))]
    Guarded {
        _buffers: Vec<crate::guard::GuardedBuffer>,
    },
}

/// One inference slot's private memory, and the address tables that point into it.
#[derive(Debug)]
pub(super) struct SlotMemory {
    /// Owns the memory `bases` points into.
    _block: Block,
    /// Per allocation: its base (weights for immutable ones; dangling when unused).
    pub(super) bases: Vec<*mut u8>,
    /// Owns the fragment scratch the tables point into.
    _fragment_scratch: AlignedBytes,
    pub(super) workers: AlignedBytes,
    /// Per dispatch step.
    pub(super) tables: Vec<Tables>,
}

// SAFETY: the pointers point into memory this value owns (its blocks, which do not move when
// it does) or into immutable memory the plan keeps alive (weights, constants, packed forms);
// they are used only by the one thread holding the slot.
unsafe impl Send for SlotMemory {}

/// What every slot of one plan looks like.
pub(super) struct SlotShape<'a> {
    pub(super) plan: &'a ModelPlan,
    pub(super) layout: &'a PlanLayout,
    pub(super) weight_bases: &'a [Option<*mut u8>],
    pub(super) fragments: &'a [Arc<LoadedArtifact>],
    pub(super) steps: &'a [Step],
    pub(super) worker_bytes: usize,
    pub(super) guarded: bool,
}

impl SlotShape<'_> {
    /// Slot number `slot`'s memory and tables, and its private byte count.
    pub(super) fn make(&self, slot: usize) -> Result<(SlotMemory, usize), PrepareError> {
        let oom = |bytes, alignment| PrepareError::OutOfMemory {
            slot,
            bytes,
            alignment,
        };
        let (block, bases, block_bytes) = self.allocations(slot)?;
        let scratch_bytes = self
            .fragments
            .iter()
            .map(|f| f.scratch_size())
            .max()
            .unwrap_or(0);
        let scratch_alignment = self
            .fragments
            .iter()
            .map(|f| f.scratch_alignment())
            .max()
            .unwrap_or(1);
        let mut fragment_scratch = AlignedBytes::zeroed(scratch_bytes, scratch_alignment)
            .map_err(|f| oom(f.bytes, f.alignment))?;
        let workers = AlignedBytes::zeroed(
            self.worker_bytes,
            accy_artifact::abi::WORKER_SCRATCH_ALIGN as usize,
        )
        .map_err(|f| oom(f.bytes, f.alignment))?;
        let scratch_base = fragment_scratch.as_mut_ptr();
        let mut tables = Vec::new();
        for (step, command) in self.steps.iter().zip(&self.plan.commands) {
            let (
                Step::Dispatch { fragment, .. },
                Command::Dispatch {
                    inputs, outputs, ..
                },
            ) = (step, command)
            else {
                continue;
            };
            let loaded = &self.fragments[*fragment];
            let at = |region: &accy_artifact::model::Region| match bases
                .get(region.allocation as usize)
            {
                Some(&base) if region.bytes > 0 => base.wrapping_add(region.offset as usize),
                _ => dangling(),
            };
            let table_bases: Vec<*mut u8> = loaded
                .sources
                .iter()
                .map(|&source| match source {
                    SlotSource::Input(n) => inputs.get(n).map_or(dangling(), at),
                    SlotSource::Output(n) => outputs.get(n).map_or(dangling(), at),
                    other => owned_base(loaded, other, scratch_base),
                })
                .collect();
            let binding_ptrs = loaded
                .steps
                .binding_spans
                .iter()
                .map(|span| region_ptr(&table_bases, span))
                .collect();
            tables.push(Tables {
                bases: table_bases,
                binding_ptrs,
            });
        }
        let bytes = block_bytes
            .saturating_add(fragment_scratch.len())
            .saturating_add(workers.len());
        let memory = SlotMemory {
            _block: block,
            bases,
            _fragment_scratch: fragment_scratch,
            workers,
            tables,
        };
        Ok((memory, bytes))
    }

    /// The slot's scratch allocations: their memory, every allocation's base, and the bytes.
    fn allocations(&self, slot: usize) -> Result<(Block, Vec<*mut u8>, usize), PrepareError> {
        let layout = self.layout;
        let size = host(layout.size, "plan scratch")?;
        let alignment = host(layout.alignment, "plan scratch")?;
        let oom = |bytes, alignment| PrepareError::OutOfMemory {
            slot,
            bytes,
            alignment,
        };
        let weight = |index: usize| self.weight_bases.get(index).copied().flatten();
        if self.guarded {
            #[cfg(any(test, feature = "testing"))]
            return self.guarded_allocations(slot);
        }
        let mut block =
            AlignedBytes::zeroed(size, alignment).map_err(|f| oom(f.bytes, f.alignment))?;
        let base = block.as_mut_ptr();
        let bases = (0..layout.offsets.len())
            .map(|index| match (layout.offsets[index], weight(index)) {
                // Offsets lie inside the block (`offset + extent <= size`).
                (Some(offset), _) => base.wrapping_add(offset as usize),
                (None, Some(weight)) => weight,
                (None, None) => dangling(),
            })
            .collect();
        Ok((Block::Heap { _memory: block }, bases, size))
    }

    #[cfg(any(test, feature = "testing"))]
    fn guarded_allocations(
        &self,
        slot: usize,
    ) -> Result<(Block, Vec<*mut u8>, usize), PrepareError> {
        use crate::guard::GuardedBuffer;
        let mut buffers = Vec::new();
        let mut bases = Vec::new();
        let mut bytes = 0usize;
        for (index, a) in self.plan.allocations.iter().enumerate() {
            let extent = host(self.layout.extents[index], "plan scratch")?;
            if self.layout.offsets[index].is_none() {
                let weight = self.weight_bases.get(index).copied().flatten();
                bases.push(weight.unwrap_or(dangling()));
                continue;
            }
            let alignment = host(a.alignment, "plan scratch")?;
            let mut buffer = GuardedBuffer::with_alignment(extent, alignment, 0).map_err(|_| {
                PrepareError::OutOfMemory {
                    slot,
                    bytes: extent,
                    alignment,
                }
            })?;
            bases.push(buffer.as_mut_ptr());
            bytes = bytes.saturating_add(extent);
            buffers.push(buffer);
        }
        Ok((Block::Guarded { _buffers: buffers }, bases, bytes))
    }
}
