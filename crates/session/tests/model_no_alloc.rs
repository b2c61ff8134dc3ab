//! After warm-up, running a prepared model allocates nothing — alone, and with more callers
//! than slots waiting their turn (a counting global allocator proves it). Runs without
//! libtest's harness (`Cargo.toml`): the allocator counts the whole process, and the harness's
//! own thread allocates while a test runs.

mod common;
mod counting;

use std::io::Write;

use std::sync::Barrier;

use accy_session::Error;
use common::{mlp_model, values};

fn main() {
    // A panic on any thread ends the run as a failure: a caller thread that panicked before a
    // barrier would otherwise leave the others waiting forever, and no harness would notice.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::exit(101);
    }));
    runs_allocate_nothing_after_warm_up();
    // Without the harness nothing else reports the test; a failed write changes nothing.
    let _ = writeln!(
        std::io::stdout(),
        "model_no_alloc: model runs allocate nothing after warm-up: ok"
    );
}

fn runs_allocate_nothing_after_warm_up() {
    let (i, h, o, rows) = (64, 48, 16, 32);
    let (program, model) = mlp_model(rows, i, h, o);
    let plan = model.prepare(&program, 1).unwrap();
    let x = values((rows * i) as usize, 1);
    let callers = 3;
    let gate = Barrier::new(callers + 1);
    let counts = std::thread::scope(|s| {
        for _ in 0..callers {
            let (plan, x, gate) = (&plan, &x, &gate);
            s.spawn(move || {
                let mut y = vec![0.0f32; (rows * o) as usize];
                // Warm-up: every thread's first run may initialise the standard library's
                // thread-local state, and the pool's threads run their first tiles.
                for _ in 0..20 {
                    plan.run_typed(&[x], &mut [&mut y]).unwrap();
                }
                gate.wait();
                gate.wait();
                for _ in 0..200 {
                    plan.run_typed(&[x], &mut [&mut y]).unwrap();
                    let bytes: &[u8] = bytemuck::cast_slice(x);
                    let out: &mut [u8] = bytemuck::cast_slice_mut(&mut y);
                    match plan.try_run(&[bytes], &mut [out]) {
                        Ok(()) | Err(Error::Busy { .. }) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                gate.wait();
            });
        }
        gate.wait();
        let before = counting::allocations();
        gate.wait();
        gate.wait();
        let during = counting::allocations() - before;
        // One caller alone.
        let mut y = vec![0.0f32; (rows * o) as usize];
        plan.run_typed(&[&x], &mut [&mut y]).unwrap();
        let before = counting::allocations();
        for _ in 0..200 {
            plan.run_typed(&[&x], &mut [&mut y]).unwrap();
        }
        (during, counting::allocations() - before)
    });
    assert_eq!(
        counts,
        (0, 0),
        "(concurrent, alone) allocations: {} callers sharing 1 slot, then 1 caller",
        callers
    );
}
