use super::super::*;

/// a0: 64 bytes of weights; a1, a2: scratch; fragment 0 maps 16 bytes (4-aligned) to 16
/// bytes; fragment 1 maps two 8-byte inputs to one 8-byte output.
fn plan() -> ModelPlan {
    let port = |bytes| Port {
        bytes,
        alignment: 4,
    };
    ModelPlan {
        allocations: vec![
            Allocation::immutable(64, 64),
            Allocation::scratch(256),
            Allocation::scratch(128),
        ],
        fragments: vec![
            Signature {
                inputs: vec![port(16)],
                outputs: vec![port(16)],
            },
            Signature {
                inputs: vec![port(8), port(8)],
                outputs: vec![port(8)],
            },
        ],
        commands: vec![Command::Dispatch {
            fragment: 0,
            inputs: vec![Region::new(1, 0, 16)],
            outputs: vec![Region::new(2, 32, 16)],
        }],
        inputs: vec![Io {
            region: Region::new(1, 0, 16),
            bytes: 12,
        }],
        outputs: vec![Io {
            region: Region::new(2, 32, 16),
            bytes: 16,
        }],
    }
}

fn dispatch(fragment: u32, inputs: &[Region], outputs: &[Region]) -> Command {
    Command::Dispatch {
        fragment,
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
    }
}

fn with_command(command: Command) -> ModelPlan {
    let mut p = plan();
    p.commands.push(command);
    p
}

fn binding(command: usize, kind: IoKind, index: usize) -> Site {
    Site::Binding {
        command,
        kind,
        index,
    }
}

#[test]
fn a_valid_plan_is_laid_out_to_the_extents_it_uses() {
    let layout = plan().validate().unwrap();
    assert_eq!(layout.extents, vec![0, 16, 48]);
    assert_eq!(layout.offsets, vec![None, Some(0), Some(64)]);
    assert_eq!(layout.size, 112);
    assert_eq!(layout.alignment, 64);

    // Weights read by a dispatch take no private memory; an unused allocation gets none.
    let mut p = plan();
    p.allocations.push(Allocation::scratch(1 << 40));
    p.commands = vec![
        Command::Fill {
            region: Region::new(2, 0, 100),
            value: 0,
        },
        dispatch(0, &[Region::new(0, 48, 16)], &[Region::new(1, 200, 16)]),
        // An empty region needs no memory wherever it points.
        Command::Fill {
            region: Region::new(3, 1 << 39, 0),
            value: 0,
        },
    ];
    let layout = p.validate().unwrap();
    assert_eq!(layout.extents, vec![0, 216, 100, 0]);
    assert_eq!(layout.offsets, vec![None, Some(0), Some(256), None]);
    assert_eq!(layout.size, 356);
    // Fragments chain through regions: one's output is the next one's input.
    let mut p = plan();
    p.commands.push(dispatch(
        0,
        &[Region::new(2, 32, 16)],
        &[Region::new(1, 16, 16)],
    ));
    assert!(p.validate().is_ok());
}

#[test]
fn a_region_of_an_allocation_the_model_lacks_is_refused() {
    let mut p = plan();
    p.inputs[0].region.allocation = 3;
    assert_eq!(
        p.validate().unwrap_err(),
        ModelPlanError::AllocationOutOfRange {
            site: Site::Io {
                kind: IoKind::Input,
                index: 0
            },
            region: Region::new(3, 0, 16),
            count: 3
        }
    );
    let e = with_command(dispatch(
        0,
        &[Region::new(9, 0, 16)],
        &[Region::new(2, 0, 16)],
    ))
    .validate()
    .unwrap_err();
    assert_eq!(
        e,
        ModelPlanError::AllocationOutOfRange {
            site: binding(1, IoKind::Input, 0),
            region: Region::new(9, 0, 16),
            count: 3
        }
    );
    assert_eq!(
        e.to_string(),
        "command 1 (dispatch) input 0: region a9[0..16] names allocation 9, but the model has 3"
    );
}

#[test]
fn a_region_past_its_allocation_is_refused_even_when_the_end_overflows() {
    let past = Region::new(2, 120, 16);
    assert_eq!(
        with_command(Command::Fill {
            region: past,
            value: 1
        })
        .validate()
        .unwrap_err(),
        ModelPlanError::RegionOutOfBounds {
            site: Site::Fill { command: 1 },
            region: past,
            allocation_bytes: 128
        }
    );
    let overflow = Region::new(2, u64::MAX - 3, 16);
    let e = with_command(Command::Fill {
        region: overflow,
        value: 1,
    })
    .validate()
    .unwrap_err();
    assert_eq!(
        e,
        ModelPlanError::RegionOutOfBounds {
            site: Site::Fill { command: 1 },
            region: overflow,
            allocation_bytes: 128
        }
    );
    assert!(
        e.to_string()
            .contains("offset 18446744073709551612 + 16 bytes"),
        "{e}"
    );
    let mut p = plan();
    p.outputs[0].region = Region::new(2, 128, 1);
    assert!(matches!(
        p.validate(),
        Err(ModelPlanError::RegionOutOfBounds {
            site: Site::Io {
                kind: IoKind::Output,
                index: 0
            },
            ..
        })
    ));
}

#[test]
fn empty_and_oversized_io_are_refused() {
    let mut p = plan();
    p.outputs[0].bytes = 0;
    assert_eq!(
        p.validate().unwrap_err(),
        ModelPlanError::EmptyIo {
            kind: IoKind::Output,
            index: 0
        }
    );
    let mut p = plan();
    p.inputs[0].bytes = 17;
    assert_eq!(
        p.validate().unwrap_err(),
        ModelPlanError::IoTooLarge {
            kind: IoKind::Input,
            index: 0,
            bytes: 17,
            region: Region::new(1, 0, 16)
        }
    );
}

#[test]
fn io_aliasing_weights_is_refused() {
    for kind in [IoKind::Input, IoKind::Output] {
        let mut p = plan();
        let io = match kind {
            IoKind::Input => &mut p.inputs[0],
            IoKind::Output => &mut p.outputs[0],
        };
        io.region = Region::new(0, 16, 16);
        assert_eq!(
            p.validate().unwrap_err(),
            ModelPlanError::IoAliasesWeights {
                kind,
                index: 0,
                region: Region::new(0, 16, 16)
            }
        );
    }
}

#[test]
fn overlapping_inputs_are_refused_but_disjoint_ones_in_one_allocation_are_not() {
    let mut p = plan();
    p.inputs.push(Io {
        region: Region::new(1, 8, 8),
        bytes: 8,
    });
    assert_eq!(
        p.validate().unwrap_err(),
        ModelPlanError::InputsOverlap {
            first: 0,
            first_region: Region::new(1, 0, 12),
            second: 1,
            second_region: Region::new(1, 8, 8)
        }
    );
    // Only the first `bytes` bytes of an input's region are written by its copy.
    p.inputs[1].region = Region::new(1, 12, 8);
    assert!(p.validate().is_ok());
}

#[test]
fn fills_and_writes_of_weights_are_refused() {
    let weights = Region::new(0, 0, 16);
    assert_eq!(
        with_command(Command::Fill {
            region: weights,
            value: 0
        })
        .validate()
        .unwrap_err(),
        ModelPlanError::FillOfWeights {
            command: 1,
            region: weights
        }
    );
    assert_eq!(
        with_command(dispatch(0, &[Region::new(1, 0, 16)], &[weights]))
            .validate()
            .unwrap_err(),
        ModelPlanError::WriteOfWeights {
            site: binding(1, IoKind::Output, 0),
            fragment: 0,
            region: weights
        }
    );
    // Reading weights is what they are for.
    assert!(
        with_command(dispatch(0, &[weights], &[Region::new(1, 0, 16)]))
            .validate()
            .is_ok()
    );
}

#[test]
fn dispatches_must_name_a_fragment_and_match_its_ports() {
    assert_eq!(
        with_command(dispatch(2, &[], &[])).validate().unwrap_err(),
        ModelPlanError::FragmentOutOfRange {
            command: 1,
            fragment: 2,
            count: 2
        }
    );
    assert_eq!(
        with_command(dispatch(
            1,
            &[Region::new(1, 0, 8)],
            &[Region::new(2, 0, 8)]
        ))
        .validate()
        .unwrap_err(),
        ModelPlanError::BindingCount {
            command: 1,
            fragment: 1,
            kind: IoKind::Input,
            expected: 2,
            actual: 1
        }
    );
    assert_eq!(
        with_command(dispatch(0, &[Region::new(1, 0, 16)], &[]))
            .validate()
            .unwrap_err(),
        ModelPlanError::BindingCount {
            command: 1,
            fragment: 0,
            kind: IoKind::Output,
            expected: 1,
            actual: 0
        }
    );
    assert_eq!(
        with_command(dispatch(
            0,
            &[Region::new(1, 0, 12)],
            &[Region::new(2, 0, 16)]
        ))
        .validate()
        .unwrap_err(),
        ModelPlanError::BindingSize {
            site: binding(1, IoKind::Input, 0),
            fragment: 0,
            region: Region::new(1, 0, 12),
            expected: 16
        }
    );
    assert_eq!(
        with_command(dispatch(
            0,
            &[Region::new(1, 2, 16)],
            &[Region::new(2, 0, 16)]
        ))
        .validate()
        .unwrap_err(),
        ModelPlanError::BindingMisaligned {
            site: binding(1, IoKind::Input, 0),
            fragment: 0,
            region: Region::new(1, 2, 16),
            required: 4,
            allocation_alignment: 64
        }
    );
    // A base aligned less than the port asks is misaligned at any offset.
    let mut p = with_command(dispatch(
        0,
        &[Region::new(3, 0, 16)],
        &[Region::new(2, 0, 16)],
    ));
    p.allocations.push(Allocation::immutable(16, 2));
    assert!(matches!(
        p.validate(),
        Err(ModelPlanError::BindingMisaligned {
            allocation_alignment: 2,
            ..
        })
    ));
}

#[test]
fn outputs_overlapping_another_binding_of_their_dispatch_are_refused() {
    let e = with_command(dispatch(
        0,
        &[Region::new(1, 0, 16)],
        &[Region::new(1, 12, 16)],
    ))
    .validate()
    .unwrap_err();
    assert_eq!(
        e,
        ModelPlanError::BindingOverlap {
            site: binding(1, IoKind::Output, 0),
            region: Region::new(1, 12, 16),
            other_site: binding(1, IoKind::Input, 0),
            other_region: Region::new(1, 0, 16)
        }
    );
    let mut p = plan();
    p.fragments[1].outputs.push(Port {
        bytes: 8,
        alignment: 4,
    });
    p.commands.push(dispatch(
        1,
        &[Region::new(0, 0, 8), Region::new(0, 0, 8)],
        &[Region::new(1, 0, 8), Region::new(1, 4, 8)],
    ));
    assert_eq!(
        p.validate().unwrap_err(),
        ModelPlanError::BindingOverlap {
            site: binding(1, IoKind::Output, 1),
            region: Region::new(1, 4, 8),
            other_site: binding(1, IoKind::Output, 0),
            other_region: Region::new(1, 0, 8)
        }
    );
    // Two inputs may share bytes: both only read.
    p.commands[1] = dispatch(
        1,
        &[Region::new(1, 0, 8), Region::new(1, 0, 8)],
        &[Region::new(2, 0, 8), Region::new(2, 8, 8)],
    );
    assert!(p.validate().is_ok());
}

#[test]
fn bad_alignments_and_scratch_beyond_u64_are_refused() {
    let mut p = plan();
    p.allocations[2].alignment = 48;
    assert_eq!(
        p.validate().unwrap_err(),
        ModelPlanError::BadAllocationAlignment {
            allocation: 2,
            alignment: 48
        }
    );
    let mut p = plan();
    p.allocations[1].bytes = u64::MAX;
    p.allocations[2].bytes = u64::MAX;
    p.commands.push(Command::Fill {
        region: Region::new(1, 0, u64::MAX - 1),
        value: 0,
    });
    assert_eq!(
        p.validate().unwrap_err(),
        ModelPlanError::ScratchTooLarge {
            allocation: 2,
            extent: 48
        }
    );
}
