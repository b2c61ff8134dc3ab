//! Many threads on few inference slots: 8 threads share a 2-slot plan for 10^4 runs, and
//! every result equals the one a sequential run of the same input gives.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::{mlp_model, values};

const THREADS: usize = 8;
const RUNS: usize = 10_000;
/// Distinct inputs the runs cycle through.
const INPUTS: usize = 16;

#[test]
fn eight_threads_on_two_slots_match_sequential_runs() {
    let (i, h, o, rows) = (64, 48, 16, 4);
    let (program, model) = mlp_model(rows, i, h, o);
    let plan = model.prepare(&program, 2).unwrap();

    let inputs: Vec<Vec<f32>> = (0..INPUTS)
        .map(|k| values((rows * i) as usize, k))
        .collect();
    let expected: Vec<Vec<f32>> = inputs
        .iter()
        .map(|x| {
            let mut y = vec![0.0f32; (rows * o) as usize];
            plan.run_typed(&[x], &mut [&mut y]).unwrap();
            y
        })
        .collect();
    let done = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (plan, inputs, expected, done) = (&plan, &inputs, &expected, &done);
            s.spawn(move || {
                let mut y = vec![0.0f32; (rows * o) as usize];
                for r in 0..RUNS / THREADS {
                    let k = (t * 7 + r) % INPUTS;
                    y.fill(f32::NAN);
                    plan.run_typed(&[&inputs[k]], &mut [&mut y]).unwrap();
                    assert!(
                        y.iter()
                            .zip(&expected[k])
                            .all(|(a, b)| a.to_bits() == b.to_bits()),
                        "thread {t} run {r}: input {k} gave another result"
                    );
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    assert_eq!(done.into_inner(), RUNS);
    assert_eq!(plan.idle_slots(), 2);
}
