//! Running prepared models: scratch sized to the plan's extents, slot counts, buffer checks
//! before a slot is taken, and `try_run` refused with `Busy` while every slot is held.

mod common;

use accy_session::{Command, Error, ModelContext, Status};
use common::fixture::{f32s_of, fixture};
use common::twice;

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
        assert!(e.to_string().contains("no free inference slot of 1"), "{e}");
        gate.set(|s| &mut s.1);
        assert!(held.join().unwrap().iter().all(|&v| v == 3.0));
    });
    assert_eq!(plan.idle_slots(), 1);
    let mut y = vec![0.0f32; n as usize];
    plan.try_run_typed(&[&x], &mut [&mut y]).unwrap();
    assert_eq!(y[n as usize - 1], 3.0);
}
