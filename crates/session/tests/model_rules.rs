//! Every rule of the models API, each with its own error: recording and freezing, regions,
//! kernels, plan inputs and outputs, fills and dispatches, slots, and runs. And what the
//! rules allow: fragments chained through regions, fills, weights read by dispatches.

mod common;

use accy_ir::DType;
use accy_session::model::{IoKind, ModelPlanError, Site};
use accy_session::{
    Command, Descriptor, Error, ModelContext, ModelDefinition, ModelFailure, Region, Status,
};
use common::{f32_bytes, f32s, mul_weight, twice};

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

fn f32s_of(n: u64) -> Descriptor {
    Descriptor::new(DType::F32, &[n]).unwrap()
}

/// A plan's commands, inputs and outputs.
type Plan = (
    Vec<Command>,
    Vec<(Region, Descriptor)>,
    Vec<(Region, Descriptor)>,
);

/// A definition with weight `w` (16 f32: 1, 2, …), scratch `s` (1024 bytes), fragment 0
/// `y = x + x` and fragment 1 `y = x * w`, both over 16 f32.
struct Fixture {
    context: ModelContext,
    definition: ModelDefinition,
    w: Region,
    s: accy_session::Allocation,
    twice: accy_session::Kernel,
    mul: accy_session::Kernel,
}

fn fixture() -> Fixture {
    let context =
        ModelContext::with_options(accy_session::SessionOptions::default().with_threads(1))
            .unwrap();
    let w_bytes = f32_bytes(&(1..=16).map(|i| i as f32).collect::<Vec<_>>());
    let mut recorder = context.record();
    let w = recorder.weight("w", &w_bytes).unwrap();
    let s = recorder.scratch(1024);
    let twice = recorder.fragment(&twice(16)).unwrap();
    let mul = recorder.fragment(&mul_weight(16)).unwrap();
    let definition = recorder.freeze(&context).unwrap();
    Fixture {
        context,
        definition,
        w: w.region(0, 64),
        s,
        twice,
        mul,
    }
}

impl Fixture {
    /// `s[0..64]` in, `s[64..128]` = twice, `s[128..192]` = that times w, out.
    fn chain(&self) -> Plan {
        let (a, b, c) = (
            self.s.region(0, 64),
            self.s.region(64, 64),
            self.s.region(128, 64),
        );
        let commands = vec![
            Command::Dispatch {
                kernel: self.twice,
                inputs: vec![a],
                outputs: vec![b],
            },
            Command::Dispatch {
                kernel: self.mul,
                inputs: vec![b],
                outputs: vec![c],
            },
        ];
        (commands, vec![(a, f32s_of(16))], vec![(c, f32s_of(16))])
    }

    fn prepare(
        &self,
        commands: &[Command],
        inputs: &[(Region, Descriptor)],
        outputs: &[(Region, Descriptor)],
    ) -> Result<accy_session::PreparedModel, Error> {
        self.definition.prepare(commands, inputs, outputs, 2)
    }
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
fn scratch_is_sized_to_the_extents_the_plan_uses() {
    let f = fixture();
    let mut recorder = f.context.record();
    let big = recorder.scratch(1 << 40);
    let unused = recorder.scratch(1 << 40);
    let k = recorder.fragment(&twice(16)).unwrap();
    let definition = recorder.freeze(&f.context).unwrap();
    let _ = unused;
    let (a, b) = (big.region(0, 64), big.region(64, 64));
    let commands = vec![Command::Dispatch {
        kernel: k,
        inputs: vec![a],
        outputs: vec![b],
    }];
    let plan = definition
        .prepare(&commands, &[(a, f32s_of(16))], &[(b, f32s_of(16))], 3)
        .unwrap();
    // 128 bytes of the terabyte allocation, nothing of the unused one, plus the fragment's
    // own scratch (none for one elementwise kernel) and its worker scratch.
    assert!(
        plan.slot_bytes() >= 128 && plan.slot_bytes() < 1 << 20,
        "{}",
        plan.slot_bytes()
    );
    assert_eq!(plan.scratch_bytes(), 3 * plan.slot_bytes());
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

#[test]
fn a_plan_needs_a_slot_and_runs_check_their_buffers() {
    let f = fixture();
    let (commands, inputs, outputs) = f.chain();
    let e = f
        .definition
        .prepare(&commands, &inputs, &outputs, 0)
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidModel);
    assert!(e.to_string().contains("at least one inference slot"), "{e}");

    let plan = f.prepare(&commands, &inputs, &outputs).unwrap();
    let x = [0u8; 64];
    let mut y = [0u8; 64];
    let e = plan.run(&[], &mut [&mut y]).unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    assert!(
        e.to_string().contains("expected 1 input buffers, got 0"),
        "{e}"
    );
    let e = plan.run(&[&x[..60]], &mut [&mut y]).unwrap_err();
    assert!(
        e.to_string()
            .contains("input 0 must be exactly 64 bytes, got 60"),
        "{e}"
    );
    let mut short = [0u8; 8];
    let e = plan.run(&[&x], &mut [&mut short]).unwrap_err();
    assert!(
        e.to_string()
            .contains("output 0 must be exactly 64 bytes, got 8"),
        "{e}"
    );
    let e = plan
        .run_typed::<f64, f32>(&[&[0.0; 8]], &mut [&mut [0.0; 16]])
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    plan.run(&[&x], &mut [&mut y]).unwrap();
}

/// An executor that, on its first use, reports that a run is inside it and then waits until
/// told to go on: a deterministic way to hold an inference slot.
#[derive(Debug, Default)]
struct Gate {
    state: std::sync::Mutex<(bool, bool)>,
    changed: std::sync::Condvar,
}

impl Gate {
    fn wait_until(&self, pick: fn(&(bool, bool)) -> bool) {
        let state = self.state.lock().unwrap();
        let (state, timeout) = self
            .changed
            .wait_timeout_while(state, std::time::Duration::from_secs(60), |s| !pick(s))
            .unwrap();
        assert!(
            !timeout.timed_out() && pick(&state),
            "the gate never changed"
        );
    }

    fn set(&self, pick: fn(&mut (bool, bool)) -> &mut bool) {
        *pick(&mut self.state.lock().unwrap()) = true;
        self.changed.notify_all();
    }
}

impl accy_session::Executor for Gate {
    fn workers(&self) -> usize {
        1
    }

    fn run(&self, tasks: u32, task: &(dyn Fn(usize, u32) + Sync)) {
        self.set(|s| &mut s.0);
        self.wait_until(|s| s.1);
        for tile in 0..tasks {
            task(0, tile);
        }
    }
}

#[test]
fn try_run_is_busy_while_every_slot_is_held() {
    let gate = std::sync::Arc::new(Gate::default());
    let executor: std::sync::Arc<dyn accy_session::Executor> = gate.clone();
    let context =
        ModelContext::with_executor(accy_session::SessionOptions::default(), executor).unwrap();
    // Large enough that its kernel is split into several workgroups, which go through the
    // executor.
    let n = 1 << 20;
    let mut recorder = context.record();
    let s = recorder.scratch(8 * n);
    let k = recorder.fragment(&twice(n)).unwrap();
    let definition = recorder.freeze(&context).unwrap();
    let (a, b) = (s.region(0, 4 * n), s.region(4 * n, 4 * n));
    let commands = [Command::Dispatch {
        kernel: k,
        inputs: vec![a],
        outputs: vec![b],
    }];
    let plan = definition
        .prepare(&commands, &[(a, f32s_of(n))], &[(b, f32s_of(n))], 1)
        .unwrap();
    let x = vec![1.5f32; n as usize];
    std::thread::scope(|scope| {
        let held = scope.spawn(|| {
            let mut y = vec![0.0f32; n as usize];
            plan.run_typed(&[&x], &mut [&mut y]).unwrap();
            y
        });
        gate.wait_until(|s| s.0);
        assert_eq!(plan.idle_slots(), 0);
        let mut y = vec![0.0f32; n as usize];
        let e = plan.try_run_typed(&[&x], &mut [&mut y]).unwrap_err();
        assert!(matches!(e, Error::Busy { capacity: 1 }), "{e}");
        assert_eq!(Status::from(&e), Status::Busy);
        assert!(
            e.to_string().contains("all 1 inference slots are in use"),
            "{e}"
        );
        gate.set(|s| &mut s.1);
        assert!(held.join().unwrap().iter().all(|&v| v == 3.0));
    });
    assert_eq!(plan.idle_slots(), 1);
    let mut y = vec![0.0f32; n as usize];
    plan.try_run_typed(&[&x], &mut [&mut y]).unwrap();
    assert_eq!(y[n as usize - 1], 3.0);
}
