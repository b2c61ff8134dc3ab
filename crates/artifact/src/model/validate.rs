//! [`ModelPlan::validate`]: the rules of a model plan, checked in one pass, and the layout of
//! one inference slot's private memory.
//!
//! Checked, in this order (the first violation is returned, with its numbers):
//! 1. every allocation's alignment is a power of two;
//! 2. plan inputs, then outputs: the region names an allocation of the model and fits it
//!    (`offset + bytes`, overflow caught); the IO has at least one byte and no more than its
//!    region; the region is not in an immutable allocation (IO never aliases weights);
//! 3. no two plan inputs share a byte (each input's copy lands in bytes of its own);
//! 4. commands, in order: every region names an allocation and fits it; a fill does not
//!    touch an immutable allocation; a dispatch names a fragment of the model, binds exactly
//!    as many regions as the fragment has inputs and outputs, each region exactly the size the
//!    fragment's port has and aligned as it asks (from the allocation's base alignment and the
//!    offset), no output in an immutable allocation, and no output sharing a byte with an
//!    input or another output of the same dispatch;
//! 5. the layout: each scratch allocation the plan uses is placed in one block at a multiple
//!    of its alignment, sized to its extent; the block fits in `u64`.

use super::{
    Allocation, AllocationKind, Command, Io, IoKind, ModelPlan, ModelPlanError, PlanLayout, Port,
    Region, Site,
};

impl ModelPlan {
    /// Checks every rule listed in this module's documentation and returns the layout of an
    /// inference slot's private memory, or the first violation found. Never panics, whatever
    /// the plan holds.
    pub fn validate(&self) -> Result<PlanLayout, ModelPlanError> {
        for (index, a) in self.allocations.iter().enumerate() {
            if !a.alignment.is_power_of_two() {
                return Err(ModelPlanError::BadAllocationAlignment {
                    allocation: index as u32,
                    alignment: a.alignment,
                });
            }
        }
        let mut extents = vec![0u64; self.allocations.len()];
        for (kind, ios) in [
            (IoKind::Input, &self.inputs),
            (IoKind::Output, &self.outputs),
        ] {
            for (index, io) in ios.iter().enumerate() {
                self.check_io(kind, index, io)?;
                // `check_io` proved `offset + bytes` fits within the region, so no overflow.
                let used = Region::new(io.region.allocation, io.region.offset, io.bytes);
                extend(&mut extents, &self.allocations, &used);
            }
        }
        self.check_inputs_disjoint()?;
        for (command, c) in self.commands.iter().enumerate() {
            match c {
                Command::Fill { region, .. } => {
                    let allocation = self.check_region(Site::Fill { command }, region)?;
                    if allocation.kind == AllocationKind::Immutable {
                        return Err(ModelPlanError::FillOfWeights {
                            command,
                            region: *region,
                        });
                    }
                    extend(&mut extents, &self.allocations, region);
                }
                Command::Dispatch {
                    fragment,
                    inputs,
                    outputs,
                } => {
                    self.check_dispatch(command, *fragment, inputs, outputs)?;
                    for region in inputs.iter().chain(outputs) {
                        extend(&mut extents, &self.allocations, region);
                    }
                }
            }
        }
        self.layout(extents)
    }

    /// The allocation `region` names, if it exists and the region fits in it.
    fn check_region(&self, site: Site, region: &Region) -> Result<&Allocation, ModelPlanError> {
        let allocation = self.allocations.get(region.allocation as usize).ok_or(
            ModelPlanError::AllocationOutOfRange {
                site,
                region: *region,
                count: self.allocations.len(),
            },
        )?;
        match region.end() {
            Some(end) if end <= allocation.bytes => Ok(allocation),
            _ => Err(ModelPlanError::RegionOutOfBounds {
                site,
                region: *region,
                allocation_bytes: allocation.bytes,
            }),
        }
    }

    fn check_io(&self, kind: IoKind, index: usize, io: &Io) -> Result<(), ModelPlanError> {
        let allocation = self.check_region(Site::Io { kind, index }, &io.region)?;
        if io.bytes == 0 {
            return Err(ModelPlanError::EmptyIo { kind, index });
        }
        if io.bytes > io.region.bytes {
            return Err(ModelPlanError::IoTooLarge {
                kind,
                index,
                bytes: io.bytes,
                region: io.region,
            });
        }
        if allocation.kind == AllocationKind::Immutable {
            return Err(ModelPlanError::IoAliasesWeights {
                kind,
                index,
                region: io.region,
            });
        }
        Ok(())
    }

    fn check_inputs_disjoint(&self) -> Result<(), ModelPlanError> {
        let used = |io: &Io| Region::new(io.region.allocation, io.region.offset, io.bytes);
        for (second, b) in self.inputs.iter().enumerate() {
            for (first, a) in self.inputs[..second].iter().enumerate() {
                if used(a).overlaps(&used(b)) {
                    return Err(ModelPlanError::InputsOverlap {
                        first,
                        first_region: used(a),
                        second,
                        second_region: used(b),
                    });
                }
            }
        }
        Ok(())
    }

    fn check_dispatch(
        &self,
        command: usize,
        fragment: u32,
        inputs: &[Region],
        outputs: &[Region],
    ) -> Result<(), ModelPlanError> {
        let signature =
            self.fragments
                .get(fragment as usize)
                .ok_or(ModelPlanError::FragmentOutOfRange {
                    command,
                    fragment,
                    count: self.fragments.len(),
                })?;
        let bound = [
            (IoKind::Input, inputs, &signature.inputs),
            (IoKind::Output, outputs, &signature.outputs),
        ];
        for (kind, regions, ports) in bound {
            if regions.len() != ports.len() {
                return Err(ModelPlanError::BindingCount {
                    command,
                    fragment,
                    kind,
                    expected: ports.len(),
                    actual: regions.len(),
                });
            }
        }
        for (kind, regions, ports) in bound {
            for (index, (region, port)) in regions.iter().zip(ports.iter()).enumerate() {
                let site = Site::Binding {
                    command,
                    kind,
                    index,
                };
                self.check_binding(site, fragment, region, port)?;
            }
        }
        for (index, region) in outputs.iter().enumerate() {
            let site = |kind, index| Site::Binding {
                command,
                kind,
                index,
            };
            let others = inputs
                .iter()
                .enumerate()
                .map(|(i, r)| (site(IoKind::Input, i), r))
                .chain(
                    outputs[..index]
                        .iter()
                        .enumerate()
                        .map(|(i, r)| (site(IoKind::Output, i), r)),
                );
            for (other_site, other) in others {
                if region.overlaps(other) {
                    return Err(ModelPlanError::BindingOverlap {
                        site: site(IoKind::Output, index),
                        region: *region,
                        other_site,
                        other_region: *other,
                    });
                }
            }
        }
        Ok(())
    }

    fn check_binding(
        &self,
        site: Site,
        fragment: u32,
        region: &Region,
        port: &Port,
    ) -> Result<(), ModelPlanError> {
        let allocation = self.check_region(site, region)?;
        let writes = matches!(
            site,
            Site::Binding {
                kind: IoKind::Output,
                ..
            }
        );
        if writes && allocation.kind == AllocationKind::Immutable {
            return Err(ModelPlanError::WriteOfWeights {
                site,
                fragment,
                region: *region,
            });
        }
        if region.bytes != port.bytes {
            return Err(ModelPlanError::BindingSize {
                site,
                fragment,
                region: *region,
                expected: port.bytes,
            });
        }
        // An empty region is never dereferenced, so its address needs no alignment.
        let aligned = port.alignment.is_power_of_two()
            && port.alignment <= allocation.alignment
            && region.offset.is_multiple_of(port.alignment);
        if region.bytes > 0 && !aligned {
            return Err(ModelPlanError::BindingMisaligned {
                site,
                fragment,
                region: *region,
                required: port.alignment,
                allocation_alignment: allocation.alignment,
            });
        }
        Ok(())
    }

    /// Places every used scratch allocation in one block, in allocation order.
    fn layout(&self, extents: Vec<u64>) -> Result<PlanLayout, ModelPlanError> {
        let mut offsets = vec![None; self.allocations.len()];
        let (mut size, mut alignment) = (0u64, 1u64);
        for (index, (a, &extent)) in self.allocations.iter().zip(&extents).enumerate() {
            if a.kind != AllocationKind::Scratch || extent == 0 {
                continue;
            }
            let too_large = ModelPlanError::ScratchTooLarge {
                allocation: index as u32,
                extent,
            };
            let offset = size
                .checked_next_multiple_of(a.alignment)
                .ok_or(too_large.clone())?;
            size = offset.checked_add(extent).ok_or(too_large)?;
            alignment = alignment.max(a.alignment);
            offsets[index] = Some(offset);
        }
        Ok(PlanLayout {
            extents,
            offsets,
            size,
            alignment,
        })
    }
}

/// Raises the extent of `region`'s scratch allocation to the region's end (a region already
/// checked to fit its allocation; empty regions use nothing).
fn extend(extents: &mut [u64], allocations: &[Allocation], region: &Region) {
    let index = region.allocation as usize;
    if region.bytes == 0 {
        // Never dereferenced: an empty region needs no memory, wherever it points.
        return;
    }
    let scratch = allocations
        .get(index)
        .is_some_and(|a| a.kind == AllocationKind::Scratch);
    if let (true, Some(extent), Some(end)) = (scratch, extents.get_mut(index), region.end()) {
        *extent = (*extent).max(end);
    }
}

#[cfg(test)]
mod tests;
