//! Serving one model to several threads: the 784-512-512-10 MLP of `examples/mlp.accy` with
//! its weights loaded (and packed) once, plans for batch 1 and batch 64 sharing them, and six
//! threads sending requests — more than the plans have inference slots, so some wait their
//! turn.
//!
//! Run it with `cargo run --release --example serve`.

#![allow(
    clippy::print_stdout,
    reason = "an example reports what it did on standard output"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use accy_ir::{text, Program};
use accy_session::{Model, Weights};

fn program(source: &str) -> Result<Program, Box<dyn std::error::Error>> {
    let program = text::parse(source)?;
    accy_ir::verify(&program).map_err(|e| format!("{} verifier errors", e.0.len()))?;
    Ok(program)
}

/// Deterministic weights for every weight parameter of `program` (a real server would map
/// them from a `.safetensors` file instead).
fn weights(program: &Program) -> Result<Weights, Box<dyn std::error::Error>> {
    let values: Vec<(String, Vec<u8>)> = program
        .weights()
        .map(|(_, p)| {
            let n = p.ty.element_count().unwrap_or(0) as usize;
            let bytes = (0..n)
                .flat_map(|i| (((i * 7919) % 2001) as f32 / 20_000.0 - 0.05).to_le_bytes())
                .collect();
            (p.name.clone(), bytes)
        })
        .collect();
    let named: Vec<(&str, &[u8])> = values.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
    Ok(Weights::new(&named)?)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let batch1 = program(include_str!("../../../examples/mlp.accy"))?;
    let batch64 = program(include_str!("../../../examples/mlp_b64.accy"))?;

    // Compiles batch 1 and packs the weights once; batch 64 shares weights and packing.
    let model = Model::new(&batch1, weights(&batch1)?)?;
    let packed = model.weight_bytes();
    let single = model.prepare(&batch1, 4)?;
    let started = Instant::now();
    let batched = model.prepare(&batch64, 2)?;
    println!(
        "weights {packed} bytes, given and packed, counted once (after both plans: {}); batch 64 \
         prepared in {:?}",
        model.weight_bytes(),
        started.elapsed()
    );
    for (name, plan) in [("batch 1", &single), ("batch 64", &batched)] {
        println!(
            "{name}: {} slots x {} bytes of scratch",
            plan.capacity(),
            plan.slot_bytes()
        );
    }

    let served = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..6)
            .map(|thread| {
                let (single, batched, served) = (&single, &batched, &served);
                s.spawn(move || -> Result<(), accy_session::Error> {
                    // Even threads send single requests, odd ones batches of 64.
                    let plan = if thread % 2 == 0 { single } else { batched };
                    let rows = plan.inputs()[0].dims[0] as usize;
                    let input: Vec<f32> =
                        (0..rows * 784).map(|i| (i % 255) as f32 / 255.0).collect();
                    let mut logits = vec![0.0f32; rows * 10];
                    for _ in 0..200 {
                        plan.run_typed(&[&input], &mut [&mut logits])?;
                        served.fetch_add(rows, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        threads.into_iter().try_for_each(|t| {
            t.join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    })?;
    let seconds = started.elapsed().as_secs_f64();
    let rows = served.into_inner();
    println!(
        "6 threads served {rows} rows in {seconds:.3} s ({:.0} rows/s)",
        rows as f64 / seconds
    );
    Ok(())
}
