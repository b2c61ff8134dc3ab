//! Rules on derived slots and the setup commands that compute them.

use super::*;
use crate::DerivedSource;

const D: SlotId = SlotId(6);

/// `valid()` plus a derived slot packed from the weight by one setup dispatch, read by a run
/// command.
fn with_derived() -> Artifact {
    let mut a = valid();
    a.plan
        .add(Slot {
            role: SlotRole::Derived {
                source: DerivedSource::Weight("bias".into()),
                layout: "f32 reversed".into(),
            },
            byte_size: 16,
            alignment: 64,
            ty: None,
        })
        .unwrap();
    a.setup.push(dispatch(
        0,
        &[(r(W, 0, 16), Access::Read), (r(D, 0, 16), Access::Write)],
        1,
    ));
    a.launch.push(dispatch(
        0,
        &[(r(D, 0, 16), Access::Read), (r(TMP, 0, 16), Access::Write)],
        1,
    ));
    a
}

fn derived_err(change: impl FnOnce(&mut Artifact)) -> ArtifactError {
    let mut a = with_derived();
    change(&mut a);
    match a.validate() {
        Ok(_) => panic!("expected an error for\n{a}"),
        Err(e) => e,
    }
}

#[test]
fn a_derived_slot_computed_by_setup_is_valid_and_read_only() {
    let s = with_derived().validate().unwrap();
    assert_eq!(s.derived, vec![D]);
    let u = s.usage(D).unwrap();
    assert_eq!(
        (u.kind, u.read, u.written),
        (SlotKind::Derived, true, false)
    );
    assert_eq!(
        derived_err(|a| a.launch.push(fill(r(D, 0, 4), 0, 4))),
        ArtifactError::WriteToReadOnly {
            command: 6,
            operand: Operand::FillDst,
            slot: D,
            kind: SlotKind::Derived
        }
    );
}

#[test]
fn sources_and_layouts_are_checked() {
    let role = |a: &mut Artifact, source, layout: &str| {
        a.plan.slots[D.index()].role = SlotRole::Derived {
            source,
            layout: layout.into(),
        }
    };
    assert_eq!(
        derived_err(|a| role(a, DerivedSource::Weight("bias".into()), "")),
        ArtifactError::UnnamedLayout { slot: D }
    );
    assert_eq!(
        derived_err(|a| role(a, DerivedSource::Weight("nope".into()), "x")),
        ArtifactError::UnknownDerivedSource {
            slot: D,
            from: "weight \"nope\"".into()
        }
    );
    // The input is no constant, and slot 99 does not exist.
    for slot in [IN, SlotId(99)] {
        assert_eq!(
            derived_err(|a| role(a, DerivedSource::Constant(slot), "x")),
            ArtifactError::UnknownDerivedSource {
                slot: D,
                from: format!("constant {slot}")
            }
        );
    }
    // From the constant instead: then reading the weight is touching a foreign slot.
    assert_eq!(
        derived_err(|a| role(a, DerivedSource::Constant(K), "x")),
        ArtifactError::SetupTouchesSlot {
            command: 0,
            operand: Operand::Binding(0),
            slot: W,
            kind: SlotKind::Weight
        }
    );
}

/// Setup runs per derived slot, so it has no chains.
#[test]
fn setup_commands_are_never_chained() {
    assert_eq!(
        derived_err(|a| {
            if let Some(Command::Dispatch { chained, .. }) = a.setup.commands.get_mut(0) {
                *chained = true;
            }
            a.setup.push(a.setup.commands[0].clone());
        }),
        ArtifactError::ChainedSetup { command: 0 }
    );
}

#[test]
fn setup_commands_write_one_derived_slot_from_its_source_only() {
    assert_eq!(
        derived_err(|a| a.setup.push(dispatch(0, &[(r(W, 0, 16), Access::Read)], 1))),
        ArtifactError::SetupWrites {
            command: 1,
            written: 0
        }
    );
    assert_eq!(
        derived_err(|a| a.setup.push(fill(r(TMP, 0, 16), 0, 4))),
        ArtifactError::SetupWrites {
            command: 1,
            written: 1
        }
    );
    assert_eq!(
        derived_err(|a| a.setup.push(dispatch(
            0,
            &[(r(D, 0, 8), Access::Write), (r(OUT0, 0, 8), Access::Write)],
            1
        ))),
        ArtifactError::SetupWrites {
            command: 1,
            written: 2
        }
    );
    assert_eq!(
        derived_err(|a| a.setup.push(dispatch(
            0,
            &[(r(IN, 0, 16), Access::Read), (r(D, 0, 16), Access::Write)],
            1
        ))),
        ArtifactError::SetupTouchesSlot {
            command: 1,
            operand: Operand::Binding(0),
            slot: IN,
            kind: SlotKind::Input
        }
    );
    assert_eq!(
        derived_err(|a| a.setup.push(fill(r(D, 8, 16), 0, 4))),
        ArtifactError::RegionOutOfBounds {
            command: 1,
            operand: Operand::FillDst,
            slot: D,
            offset: 8,
            len: 16,
            slot_size: 16
        }
    );
    assert_eq!(
        derived_err(|a| a.setup.push(fill(r(D, 2, 4), 0, 4))),
        ArtifactError::MisalignedFill {
            command: 1,
            offset: 2,
            len: 4,
            width: 4
        }
    );
    assert_eq!(
        derived_err(|a| a.setup.push(dispatch(7, &[(r(D, 0, 4), Access::Write)], 1))),
        ArtifactError::UnknownKernel {
            command: 1,
            kernel: 7,
            kernel_count: 2
        }
    );
}

#[test]
fn every_byte_of_a_derived_slot_is_written_by_setup() {
    assert_eq!(
        derived_err(|a| a.setup.commands[0] = dispatch(
            0,
            &[(r(W, 0, 16), Access::Read), (r(D, 0, 12), Access::Write)],
            1
        )),
        ArtifactError::DerivedNotWritten {
            slot: D,
            offset: 12,
            byte_size: 16
        }
    );
    assert_eq!(
        derived_err(|a| a.setup.commands.clear()),
        ArtifactError::DerivedNotWritten {
            slot: D,
            offset: 0,
            byte_size: 16
        }
    );
}
