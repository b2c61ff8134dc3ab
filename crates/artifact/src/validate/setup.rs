//! Validation of derived slots and the setup commands that compute them (item 6 of the
//! parent module's list).
//!
//! The rules make a derived slot a pure function of its source: its setup commands touch
//! nothing but the slot and its source, so a runtime may run them for one slot alone, and
//! equal `(source, layout)` pairs from one compiler hold equal bytes.

use std::collections::HashMap;

use super::{check_command_shape, check_fill_alignment, PlanSummary};
use crate::{Artifact, ArtifactError, Command, DerivedSource, SlotId, SlotRole};

impl Artifact {
    pub(super) fn check_setup(&self, summary: &PlanSummary) -> Result<(), ArtifactError> {
        let weights: HashMap<&str, SlotId> =
            self.plan.weight_slots().map(|(id, n)| (n, id)).collect();
        // Each derived slot's source slot, by the derived slot's index.
        let mut sources: Vec<Option<SlotId>> = vec![None; self.plan.slots.len()];
        for (id, source, _) in self.plan.derived_slots() {
            let found = match source {
                DerivedSource::Weight(name) => weights.get(name.as_str()).copied(),
                DerivedSource::Constant(slot) => self
                    .plan
                    .slot(*slot)
                    .filter(|s| matches!(s.role, SlotRole::Constant { .. }))
                    .map(|_| *slot),
            };
            let Some(found) = found else {
                return Err(ArtifactError::UnknownDerivedSource {
                    slot: id,
                    from: source.to_string(),
                });
            };
            if let Some(source) = sources.get_mut(id.index()) {
                *source = Some(found);
            }
        }
        let source_of = |slot: SlotId| sources.get(slot.index()).copied().flatten();
        for (c, command) in self.setup.commands.iter().enumerate() {
            if matches!(command, Command::Dispatch { chained: true, .. }) {
                return Err(ArtifactError::ChainedSetup { command: c });
            }
            check_command_shape(c, command, None, self.kernels.len())?;
            let mut written: Option<SlotId> = None;
            let mut writes = 0;
            for (_, region, access) in command.accesses() {
                if access.writes() && written != Some(region.slot) {
                    writes += 1;
                    written = Some(region.slot);
                }
            }
            let target = match written {
                Some(slot) if writes == 1 && source_of(slot).is_some() => slot,
                _ => {
                    return Err(ArtifactError::SetupWrites {
                        command: c,
                        written: writes,
                    })
                }
            };
            for (operand, region, _) in command.accesses() {
                let Some(usage) = summary.usage(region.slot) else {
                    return Err(ArtifactError::UnknownSlot {
                        command: c,
                        operand,
                        slot: region.slot,
                        slot_count: self.plan.slots.len(),
                    });
                };
                if region.end().is_none_or(|end| end > usage.byte_size) {
                    return Err(ArtifactError::RegionOutOfBounds {
                        command: c,
                        operand,
                        slot: region.slot,
                        offset: region.offset,
                        len: region.len,
                        slot_size: usage.byte_size,
                    });
                }
                if region.slot != target && Some(region.slot) != source_of(target) {
                    return Err(ArtifactError::SetupTouchesSlot {
                        command: c,
                        operand,
                        slot: region.slot,
                        kind: usage.kind,
                    });
                }
            }
            check_fill_alignment(c, command)?;
        }
        match self.first_unwritten(&self.setup.commands, &summary.derived) {
            Some((i, offset, byte_size)) => Err(ArtifactError::DerivedNotWritten {
                slot: summary.derived[i],
                offset,
                byte_size,
            }),
            None => Ok(()),
        }
    }
}
