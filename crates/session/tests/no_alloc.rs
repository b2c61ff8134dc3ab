//! After warm-up, an invoke allocates nothing (a counting global allocator proves it). Runs
//! without libtest's harness (`Cargo.toml`): the allocator counts the whole process, and the
//! harness's own thread allocates while a test runs.

mod counting;

use std::io::Write;

use accy_ir::{BinaryOp, Builder, DType, ReduceOp, Type, UnaryOp};
use accy_session::{Scratch, Session};

/// Invocations before counting.
const WARM_UP: usize = 20;

fn main() {
    // A panic on any thread ends the run as a failure: a caller thread that panicked before a
    // barrier would otherwise leave the others waiting forever, and no harness would notice.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::exit(101);
    }));
    for threads in [1, 2] {
        invoke_allocates_nothing_after_warm_up_with(threads, 8);
        // Rows enough for the kernels to be split into workgroups that run on the pool.
        invoke_allocates_nothing_after_warm_up_with(threads, 4096);
    }
    // Without the harness nothing else reports the test; a failed write changes nothing.
    let _ = writeln!(
        std::io::stdout(),
        "no_alloc: invokes with 1 and 2 threads allocate nothing after warm-up: ok"
    );
}

fn invoke_allocates_nothing_after_warm_up_with(threads: usize, rows: u64) {
    // A program with scratch (the exp result feeds a reduction and an output).
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[rows, 16])).unwrap();
    let e = b.unary(UnaryOp::Exp, x).unwrap();
    let s = b.reduce(ReduceOp::Sum, e, &[1]).unwrap();
    let sb = b.broadcast(s, &[rows, 16], &[0]).unwrap();
    let y = b.binary(BinaryOp::Div, e, sb).unwrap();
    b.output(y).unwrap();
    b.output(s).unwrap();
    let bytes = accy_wire::encode(&b.finish().unwrap());

    let session =
        Session::with_options(accy_session::SessionOptions::default().with_threads(threads))
            .unwrap();
    let h = session.compile(&bytes).unwrap();
    let n = rows as usize;
    let x = vec![0.5f32; n * 16];
    let (mut y, mut s) = (vec![0.0f32; n * 16], vec![0.0f32; n]);
    let mut scratch = Scratch::new();
    let xb: &[u8] = bytemuck::cast_slice(&x);
    // Warm-up: the scratch grows, and every pool thread runs a tile once (a thread's first
    // job may initialise thread-local state of the standard library).
    for _ in 0..WARM_UP {
        let mut outs: [&mut [u8]; 2] = [
            bytemuck::cast_slice_mut(&mut y),
            bytemuck::cast_slice_mut(&mut s),
        ];
        session.invoke(h, &mut scratch, &[xb], &mut outs).unwrap();
    }
    let before = counting::allocations();
    for _ in 0..100 {
        let mut outs: [&mut [u8]; 2] = [
            bytemuck::cast_slice_mut(&mut y),
            bytemuck::cast_slice_mut(&mut s),
        ];
        session.invoke(h, &mut scratch, &[xb], &mut outs).unwrap();
    }
    let after = counting::allocations();
    assert_eq!(
        after - before,
        0,
        "invoke allocated {} times in 100 calls ({threads} threads, {rows} rows)",
        after - before
    );
    assert!((s[0] - 16.0 * 0.5f32.exp()).abs() < 1e-4);
}
