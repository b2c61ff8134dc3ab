//! Times `y = tanh(x * 0.5 + 0.25) * 1.5` over 64K and 16M f32 at one thread, in default and
//! exact mode, beside two references measured in the same run: a copy of the same bytes
//! (`copy_from_slice`) and the chain in plain Rust with `f32::tanh`.
//!
//! `cargo run --release -p accy-accuracy --example tanh_chain`

#![allow(clippy::print_stdout, reason = "a timing tool reports on the terminal")]

use std::time::{Duration, Instant};

use accy_session::{Scratch, Session, SessionOptions};

/// The median of `runs` timings of `f`, after one warm-up call.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn program(n: usize) -> String {
    format!(
        "program {{
  %x = input \"x\" : f32[{n}]
  %h = constant 0.5 : f32[]
  %q = constant 0.25 : f32[]
  %s = constant 1.5 : f32[]
  %hb = broadcast %h, dims=[{n}], axes=[] : f32[{n}]
  %qb = broadcast %q, dims=[{n}], axes=[] : f32[{n}]
  %sb = broadcast %s, dims=[{n}], axes=[] : f32[{n}]
  %a = mul %x, %hb : f32[{n}]
  %b = add %a, %qb : f32[{n}]
  %t = tanh %b : f32[{n}]
  %y = mul %t, %sb : f32[{n}]
  output %y
}}"
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| n | mode | accy | copy | Rust f32::tanh loop | accy / copy |");
    println!("|---|---|---|---|---|---|");
    for n in [1usize << 16, 1 << 24] {
        let runs = if n < 1 << 20 { 201 } else { 11 };
        let x: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32) * 16.0 - 8.0).collect();
        let mut y = vec![0f32; n];
        let copy = median(runs, || y.copy_from_slice(&x));
        let rust = median(runs, || {
            for (o, &v) in y.iter_mut().zip(&x) {
                *o = (v * 0.5 + 0.25).tanh() * 1.5;
            }
        });
        for exact in [false, true] {
            let session = Session::with_options(
                SessionOptions::default()
                    .with_threads(1)
                    .with_reassociate_float_sums(!exact),
            )?;
            let program = accy_ir::text::parse(&program(n))?;
            let handle = session.compile_program_with_weights(&program, &Default::default())?;
            let mut scratch = Scratch::new();
            let accy = median(runs, || {
                session
                    .invoke_typed(handle, &mut scratch, &[&x[..]], &mut [&mut y[..]])
                    .expect("invoke");
            });
            let mode = if exact { "exact" } else { "default" };
            println!(
                "| {n} | {mode} | {accy:.2?} | {copy:.2?} | {rust:.2?} | {:.1}x |",
                accy.as_secs_f64() / copy.as_secs_f64()
            );
        }
    }
    Ok(())
}
