//! Every rule of the models API, each with its own error: recording and freezing, regions,
//! kernels, plan inputs and outputs, fills and dispatches, slots, and runs. And what the
//! rules allow: fragments chained through regions, fills, weights read by dispatches.

mod common;

use accy_ir::DType;
use accy_session::model::{IoKind, ModelPlanError, Site};
use accy_session::{Command, Descriptor, Error, ModelContext, ModelFailure, Region, Status};
use common::f32s;
use common::fixture::{f32s_of, fixture};

/// The rule behind an `InvalidModel` error from a plan's data.
fn plan_rule(e: Error) -> ModelPlanError {
    assert_eq!(Status::from(&e), Status::InvalidModel, "{e}");
    let cause = e.cause().expect("InvalidModel has a cause").clone();
    cause
        .downcast_ref::<ModelPlanError>()
        .unwrap_or_else(|| panic!("not a plan rule: {cause}"))
        .clone()
}

/// The rule behind an `InvalidModel` error about identity or interfaces.
fn api_rule(e: Error) -> ModelFailure {
    assert_eq!(Status::from(&e), Status::InvalidModel, "{e}");
    let cause = e.cause().expect("InvalidModel has a cause").clone();
    cause
        .downcast_ref::<ModelFailure>()
        .unwrap_or_else(|| panic!("not a models-API rule: {cause}"))
        .clone()
}

#[test]
fn fragments_chain_through_regions_and_read_the_weights() {
    let f = fixture();
    let (commands, inputs, outputs) = f.chain();
    let plan = f.prepare(&commands, &inputs, &outputs).unwrap();
    assert_eq!(plan.capacity(), 2);
    assert_eq!(plan.inputs(), &[f32s_of(16)]);
    let x: Vec<f32> = (0..16).map(|i| i as f32 - 4.5).collect();
    let mut y = vec![0.0f32; 16];
    plan.run_typed(&[&x], &mut [&mut y]).unwrap();
    let expected: Vec<f32> = x.iter().zip(1..).map(|(v, w)| (v + v) * w as f32).collect();
    assert_eq!(y, expected);
    // The weights are read in place by the dispatch that binds them as an input region.
    let commands = vec![Command::Dispatch {
        kernel: f.twice,
        inputs: vec![f.w],
        outputs: vec![f.s.region(0, 64)],
    }];
    let plan = f
        .prepare(&commands, &[], &[(f.s.region(0, 64), f32s_of(16))])
        .unwrap();
    let mut out = vec![0u8; 64];
    plan.run(&[], &mut [&mut out]).unwrap();
    assert_eq!(
        f32s(&out),
        (1..=16).map(|i| 2.0 * i as f32).collect::<Vec<_>>()
    );
    // A fill writes its byte over the region; an output region nothing else writes shows it.
    let region = f.s.region(256, 8);
    let commands = vec![Command::Fill {
        region,
        value: 0x3f,
    }];
    let plan = f
        .prepare(
            &commands,
            &[],
            &[(region, Descriptor::new(DType::U8, &[8]).unwrap())],
        )
        .unwrap();
    let mut out = [0u8; 8];
    plan.run(&[], &mut [&mut out]).unwrap();
    assert_eq!(out, [0x3f; 8]);
}

#[test]
fn a_region_of_another_definition_is_refused() {
    let f = fixture();
    let other = fixture();
    let (mut commands, inputs, outputs) = f.chain();
    if let Command::Dispatch { outputs, .. } = &mut commands[1] {
        outputs[0] = other.s.region(128, 64);
    }
    let e = api_rule(f.prepare(&commands, &inputs, &outputs).unwrap_err());
    assert_eq!(
        e,
        ModelFailure::ForeignRegion {
            site: Site::Binding {
                command: 1,
                kind: IoKind::Output,
                index: 0
            },
            region: other.definition.id(),
            definition: f.definition.id()
        }
    );
    let e = api_rule(
        f.prepare(&[], &[(other.s.region(0, 64), f32s_of(16))], &[])
            .unwrap_err(),
    );
    assert!(matches!(
        e,
        ModelFailure::ForeignRegion {
            site: Site::Io {
                kind: IoKind::Input,
                index: 0
            },
            ..
        }
    ));
    assert_eq!(f.definition.allocation_bytes(other.s), None);
}

#[test]
fn a_kernel_of_another_definition_is_refused() {
    let f = fixture();
    let other = fixture();
    let (mut commands, inputs, outputs) = f.chain();
    if let Command::Dispatch { kernel, .. } = &mut commands[1] {
        *kernel = other.mul;
    }
    assert_eq!(
        api_rule(f.prepare(&commands, &inputs, &outputs).unwrap_err()),
        ModelFailure::ForeignKernel {
            command: 1,
            kernel: other.definition.id(),
            definition: f.definition.id()
        }
    );
    assert!(matches!(
        api_rule(f.definition.kernel_inputs(other.twice).unwrap_err()),
        ModelFailure::ForeignKernel { .. }
    ));
}

#[test]
fn a_kernel_index_out_of_range_is_refused() {
    let f = fixture();
    let (mut commands, inputs, outputs) = f.chain();
    if let Command::Dispatch { kernel, .. } = &mut commands[0] {
        kernel.index = 7;
    }
    assert_eq!(
        plan_rule(f.prepare(&commands, &inputs, &outputs).unwrap_err()),
        ModelPlanError::FragmentOutOfRange {
            command: 0,
            fragment: 7,
            count: 2
        }
    );
}

#[test]
fn an_allocation_index_out_of_range_is_refused() {
    let f = fixture();
    let mut missing = f.s;
    missing.index = 9;
    let region = missing.region(0, 64);
    let e = f.prepare(&[], &[(region, f32s_of(16))], &[]).unwrap_err();
    assert!(
        e.to_string().contains("allocation 9, but the model has 2"),
        "{e}"
    );
    assert_eq!(
        plan_rule(e),
        ModelPlanError::AllocationOutOfRange {
            site: Site::Io {
                kind: IoKind::Input,
                index: 0
            },
            region: accy_session::model::PlanRegion::new(9, 0, 64),
            count: 2
        }
    );
}

#[test]
fn a_region_past_its_allocation_is_refused_including_offset_overflow() {
    let f = fixture();
    let past = f.s.region(1000, 64);
    let commands = [Command::Fill {
        region: past,
        value: 0,
    }];
    let e = plan_rule(f.prepare(&commands, &[], &[]).unwrap_err());
    assert_eq!(
        e,
        ModelPlanError::RegionOutOfBounds {
            site: Site::Fill { command: 0 },
            region: accy_session::model::PlanRegion::new(1, 1000, 64),
            allocation_bytes: 1024
        }
    );
    let wrapping = f.s.region(u64::MAX - 8, 64);
    let commands = [Command::Fill {
        region: wrapping,
        value: 0,
    }];
    assert!(matches!(
        plan_rule(f.prepare(&commands, &[], &[]).unwrap_err()),
        ModelPlanError::RegionOutOfBounds {
            allocation_bytes: 1024,
            ..
        }
    ));
    // Past a weight, too.
    let past_weight = f.w.allocation.region(32, 64);
    let e = plan_rule(
        f.prepare(
            &[Command::Dispatch {
                kernel: f.twice,
                inputs: vec![past_weight],
                outputs: vec![f.s.region(0, 64)],
            }],
            &[],
            &[],
        )
        .unwrap_err(),
    );
    assert!(
        matches!(
            e,
            ModelPlanError::RegionOutOfBounds {
                allocation_bytes: 64,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn empty_oversized_and_inconsistent_io_descriptors_are_refused() {
    let f = fixture();
    let empty = Descriptor::new(DType::F32, &[0]).unwrap();
    assert_eq!(
        plan_rule(
            f.prepare(&[], &[], &[(f.s.region(0, 64), empty)])
                .unwrap_err()
        ),
        ModelPlanError::EmptyIo {
            kind: IoKind::Output,
            index: 0
        }
    );
    let e = plan_rule(
        f.prepare(&[], &[(f.s.region(0, 32), f32s_of(16))], &[])
            .unwrap_err(),
    );
    assert_eq!(
        e,
        ModelPlanError::IoTooLarge {
            kind: IoKind::Input,
            index: 0,
            bytes: 64,
            region: accy_session::model::PlanRegion::new(1, 0, 32)
        }
    );
    let mut lying = f32s_of(16);
    lying.byte_size = 60;
    assert_eq!(
        api_rule(
            f.prepare(&[], &[(f.s.region(0, 64), lying)], &[])
                .unwrap_err()
        ),
        ModelFailure::DescriptorSize {
            kind: IoKind::Input,
            index: 0,
            declared: 60,
            dtype: DType::F32,
            dims: vec![16],
            computed: Some(64)
        }
    );
}

#[test]
fn io_aliasing_weights_is_refused() {
    let f = fixture();
    assert_eq!(
        plan_rule(f.prepare(&[], &[(f.w, f32s_of(16))], &[]).unwrap_err()),
        ModelPlanError::IoAliasesWeights {
            kind: IoKind::Input,
            index: 0,
            region: accy_session::model::PlanRegion::new(0, 0, 64)
        }
    );
    assert!(matches!(
        plan_rule(f.prepare(&[], &[], &[(f.w, f32s_of(16))]).unwrap_err()),
        ModelPlanError::IoAliasesWeights {
            kind: IoKind::Output,
            ..
        }
    ));
}

#[test]
fn fills_and_writes_of_weights_are_refused() {
    let f = fixture();
    let fill = [Command::Fill {
        region: f.w,
        value: 0,
    }];
    assert_eq!(
        plan_rule(f.prepare(&fill, &[], &[]).unwrap_err()),
        ModelPlanError::FillOfWeights {
            command: 0,
            region: accy_session::model::PlanRegion::new(0, 0, 64)
        }
    );
    let write = [Command::Dispatch {
        kernel: f.twice,
        inputs: vec![f.s.region(0, 64)],
        outputs: vec![f.w],
    }];
    assert_eq!(
        plan_rule(f.prepare(&write, &[], &[]).unwrap_err()),
        ModelPlanError::WriteOfWeights {
            site: Site::Binding {
                command: 0,
                kind: IoKind::Output,
                index: 0
            },
            fragment: 0,
            region: accy_session::model::PlanRegion::new(0, 0, 64)
        }
    );
}

#[test]
fn dispatch_bindings_must_match_their_fragment() {
    let f = fixture();
    let dispatch = |inputs: Vec<Region>, outputs: Vec<Region>| {
        [Command::Dispatch {
            kernel: f.mul,
            inputs,
            outputs,
        }]
    };
    let e = plan_rule(
        f.prepare(&dispatch(vec![], vec![f.s.region(0, 64)]), &[], &[])
            .unwrap_err(),
    );
    assert_eq!(
        e,
        ModelPlanError::BindingCount {
            command: 0,
            fragment: 1,
            kind: IoKind::Input,
            expected: 1,
            actual: 0
        }
    );
    let e = plan_rule(
        f.prepare(
            &dispatch(vec![f.s.region(0, 60)], vec![f.s.region(64, 64)]),
            &[],
            &[],
        )
        .unwrap_err(),
    );
    assert!(
        matches!(e, ModelPlanError::BindingSize { expected: 64, .. }),
        "{e}"
    );
    let e = plan_rule(
        f.prepare(
            &dispatch(vec![f.s.region(2, 64)], vec![f.s.region(128, 64)]),
            &[],
            &[],
        )
        .unwrap_err(),
    );
    assert!(
        matches!(
            e,
            ModelPlanError::BindingMisaligned {
                required: 4,
                allocation_alignment: 64,
                ..
            }
        ),
        "{e}"
    );
    let e = plan_rule(
        f.prepare(
            &dispatch(vec![f.s.region(0, 64)], vec![f.s.region(32, 64)]),
            &[],
            &[],
        )
        .unwrap_err(),
    );
    assert!(matches!(e, ModelPlanError::BindingOverlap { .. }), "{e}");
    assert_eq!(
        f.definition.kernel_inputs(f.mul).unwrap(),
        vec![f32s_of(16)]
    );
}

#[test]
fn freezing_into_a_foreign_context_is_refused() {
    let f = fixture();
    let other = ModelContext::with_options(accy_session::SessionOptions::default().with_threads(1))
        .unwrap();
    let recorder = f.context.record();
    let e = recorder.freeze(&other).unwrap_err();
    assert_eq!(
        api_rule(e),
        ModelFailure::ForeignContext {
            recorded: f.context.id(),
            given: other.id()
        }
    );
    // A clone of the context is the same context.
    assert!(f.context.record().freeze(&f.context.clone()).is_ok());
}

#[test]
fn weight_names_must_be_given_and_new() {
    let f = fixture();
    let mut recorder = f.context.record();
    recorder.weight("a", &[1, 2]).unwrap();
    for name in ["", "a"] {
        assert!(matches!(
            api_rule(recorder.weight(name, &[3]).unwrap_err()),
            ModelFailure::WeightName { .. }
        ));
    }
    assert!(recorder.allocation("a").is_some());
    assert!(recorder.allocation("b").is_none());
}
