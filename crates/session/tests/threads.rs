//! Threads inside one invocation: results do not depend on the thread count (bit for bit, in
//! both numeric modes, since the tile grid is fixed at compile time), many callers on a small
//! machine neither deadlock nor mix results, and a release racing with invokes never lets a
//! stale handle run the slot's next program.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use accy_ir::interp::eval;
use accy_ir::{BinaryOp, Builder, DType, Program, ReduceOp, Tensor, Type, UnaryOp};
use accy_session::{Error, Scratch, Session, SessionOptions, ThreadPool};

/// A row softmax of f32[rows, cols].
fn softmax(rows: u64, cols: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[rows, cols])).unwrap();
    let m = b.reduce(ReduceOp::Max, x, &[1]).unwrap();
    let mb = b.broadcast(m, &[rows, cols], &[0]).unwrap();
    let d = b.binary(BinaryOp::Sub, x, mb).unwrap();
    let e = b.unary(UnaryOp::Exp, d).unwrap();
    let s = b.reduce(ReduceOp::Sum, e, &[1]).unwrap();
    let sb = b.broadcast(s, &[rows, cols], &[0]).unwrap();
    let y = b.binary(BinaryOp::Div, e, sb).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

/// Programs whose kernels are large enough to be split into several workgroups: a row
/// softmax (2 MiB, larger than most L2 caches), a transcendental chain, a dot, and an
/// integer reduction.
fn programs() -> Vec<(&'static str, Program)> {
    let f32t = |dims: &[u64]| Type::new(DType::F32, dims);
    let mut out = Vec::new();

    out.push(("softmax", softmax(1024, 512)));

    let mut b = Builder::new();
    let x = b.input("x", f32t(&[1 << 16])).unwrap();
    let t = b.unary(UnaryOp::Tanh, x).unwrap();
    let y = b.binary(BinaryOp::Mul, t, x).unwrap();
    b.output(y).unwrap();
    out.push(("tanh_chain", b.finish().unwrap()));

    let mut b = Builder::new();
    let a = b.input("a", f32t(&[96, 80])).unwrap();
    let w = b.input("w", f32t(&[80, 72])).unwrap();
    let y = b.dot(a, w, (&[], &[]), (&[1], &[0])).unwrap();
    b.output(y).unwrap();
    out.push(("dot", b.finish().unwrap()));

    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::I32, &[1024, 300])).unwrap();
    let y = b.reduce(ReduceOp::Sum, x, &[1]).unwrap();
    b.output(y).unwrap();
    out.push(("int_rows", b.finish().unwrap()));
    out
}

/// Deterministic arguments for `program`'s inputs.
fn args(program: &Program) -> Vec<Tensor> {
    program
        .inputs()
        .enumerate()
        .map(|(i, (_, p))| {
            let n = p.ty.element_count().unwrap() as usize;
            match p.ty.dtype {
                DType::F32 => Tensor::f32s(
                    &p.ty.dims,
                    (0..n)
                        .map(|j| ((j * 7919 + i * 31) % 2001) as f32 / 400.0 - 2.5)
                        .collect(),
                ),
                _ => Tensor::i32s(
                    &p.ty.dims,
                    (0..n).map(|j| ((j * 7919) % 2001) as i32 - 1000).collect(),
                ),
            }
        })
        .collect()
}

/// Runs `program` once on `session`; returns each output's bytes.
fn run(session: &Session, program: &Program, args: &[Tensor]) -> Vec<Vec<u8>> {
    let h = session.compile(&accy_wire::encode(program)).unwrap();
    let inputs: Vec<Vec<u8>> = args.iter().map(|t| t.data().to_le_bytes()).collect();
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outputs: Vec<Vec<u8>> = session
        .outputs(h)
        .unwrap()
        .iter()
        .map(|d| vec![0xA5; d.byte_size])
        .collect();
    let mut refs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    session
        .invoke(h, &mut Scratch::new(), &inputs, &mut refs)
        .unwrap();
    session.release(h).unwrap();
    outputs
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    for exact in [true, false] {
        for (name, program) in programs() {
            let args = args(&program);
            let options = SessionOptions::default().with_reassociate_float_sums(!exact);
            let one = Session::with_options(options.with_threads(1)).unwrap();
            assert_eq!(one.threads(), 1);
            let reference = run(&one, &program, &args);
            if exact {
                let expected = eval(&program, &args).unwrap();
                for (e, a) in expected.iter().zip(&reference) {
                    assert_eq!(
                        &e.data().to_le_bytes(),
                        a,
                        "{name}: exact mode vs interpreter"
                    );
                }
            }
            for threads in [2, 3, 8] {
                let session = Session::with_options(options.with_threads(threads)).unwrap();
                assert_eq!(session.threads(), threads);
                assert_eq!(
                    run(&session, &program, &args),
                    reference,
                    "{name}: {threads} threads, exact {exact}"
                );
            }
        }
    }
}

/// `(x * 2 + 1)` and its row sums over f32[2048, 128]: cheap, yet split into workgroups.
fn scale_and_sum() -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[2048, 128])).unwrap();
    let two = b.constant(Tensor::f32s(&[], vec![2.0])).unwrap();
    let two = b.broadcast(two, &[2048, 128], &[]).unwrap();
    let y = b.binary(BinaryOp::Mul, x, two).unwrap();
    let s = b.reduce(ReduceOp::Sum, y, &[1]).unwrap();
    b.output(s).unwrap();
    b.finish().unwrap()
}

#[test]
fn eight_callers_on_four_thread_pools_neither_deadlock_nor_mix_results() {
    let program = scale_and_sum();
    let args = args(&program);
    let expected = run(
        &Session::with_options(SessionOptions::default().with_threads(1)).unwrap(),
        &program,
        &args,
    );
    // One session whose pool all callers share, and one whose callers share an embedder's
    // pool: 8 callers x 4 threads on however few cores this machine has.
    let shared = Session::with_options(SessionOptions::default().with_threads(4)).unwrap();
    let pool = Arc::new(ThreadPool::new(4).unwrap());
    let embedded = Session::with_executor(SessionOptions::default(), pool).unwrap();
    for session in [shared, embedded] {
        let session = Arc::new(session);
        let h = session.compile(&accy_wire::encode(&program)).unwrap();
        let inputs = Arc::new(args[0].data().to_le_bytes());
        let expected = Arc::new(expected[0].clone());
        let done = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..8)
            .map(|_| {
                let (session, inputs, expected, done) = (
                    Arc::clone(&session),
                    Arc::clone(&inputs),
                    Arc::clone(&expected),
                    Arc::clone(&done),
                );
                std::thread::spawn(move || {
                    let mut scratch = Scratch::new();
                    let mut out = vec![0u8; expected.len()];
                    for _ in 0..625 {
                        out.fill(0xA5);
                        session
                            .invoke(h, &mut scratch, &[&inputs], &mut [&mut out])
                            .unwrap();
                        assert!(out == *expected);
                        done.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for c in callers {
            c.join().unwrap();
        }
        assert_eq!(done.load(Ordering::Relaxed), 5000);
    }
}

/// `x + c` on f32[1024]: tells apart which program ran.
fn add_const(c: f32) -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[1024])).unwrap();
    let k = b.constant(Tensor::f32s(&[], vec![c])).unwrap();
    let kb = b.broadcast(k, &[1024], &[]).unwrap();
    let y = b.binary(BinaryOp::Add, x, kb).unwrap();
    b.output(y).unwrap();
    accy_wire::encode(&b.finish().unwrap())
}

#[test]
fn a_release_racing_with_invokes_never_lets_a_stale_handle_through() {
    let session =
        Arc::new(Session::with_options(SessionOptions::default().with_threads(2)).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let first = session.compile(&add_const(1.0)).unwrap();
    let invokers: Vec<_> = (0..3)
        .map(|_| {
            let (session, stop) = (Arc::clone(&session), Arc::clone(&stop));
            std::thread::spawn(move || {
                let x = vec![0.0f32; 1024];
                let mut y = vec![0.0f32; 1024];
                let mut scratch = Scratch::new();
                let (mut ran, mut refused) = (0u32, 0u32);
                while !stop.load(Ordering::Relaxed) {
                    match session.invoke_typed(first, &mut scratch, &[&x], &mut [&mut y]) {
                        // The old handle may only ever run its own program (x + 1).
                        Ok(()) => {
                            assert!(y.iter().all(|&v| v == 1.0), "a stale handle ran {}", y[0]);
                            ran += 1;
                        }
                        Err(Error::InvalidHandle { .. }) => refused += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
                (ran, refused)
            })
        })
        .collect();
    // Let the invokers run a while, then release and reuse the slot many times over.
    std::thread::sleep(std::time::Duration::from_millis(20));
    session.release(first).unwrap();
    for round in 0..200 {
        let h = session.compile(&add_const(2.0 + round as f32)).unwrap();
        assert_eq!(h.index, first.index, "the slot is reused");
        assert_ne!(h.generation, first.generation);
        session.release(h).unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let (mut ran, mut refused) = (0, 0);
    for i in invokers {
        let (r, f) = i.join().unwrap();
        ran += r;
        refused += f;
    }
    assert!(ran > 0, "the invokers never ran the program");
    assert!(refused > 0, "the invokers never saw the release");
}

/// A row softmax of 16 MiB: at least half the last-level cache that most hosts report, so its
/// passes form a dispatch chain whose stored `exp` keeps each workgroup's rows in the worker's
/// scratch from the link that writes them to the two that read them. Run by the runtime's
/// pool at several thread counts, in exact mode, it must equal the interpreter bit for bit.
/// On a host whose last-level cache is too large for a chain it says so and checks the
/// results all the same.
#[test]
fn a_chained_softmax_keeps_rows_in_worker_scratch_on_every_thread_count() {
    let program = softmax(4096, 1024);
    let args = args(&program);
    let expected = eval(&program, &args).unwrap();
    let options = SessionOptions::default().with_reassociate_float_sums(false);
    let one = Session::with_options(options.with_threads(1)).unwrap();
    let bytes = one.compile_program_artifact(&program).unwrap();
    let artifact = accy_artifact::Artifact::from_bytes(&bytes).unwrap();
    let chained = artifact
        .launch
        .commands
        .iter()
        .any(|c| matches!(c, accy_artifact::Command::Dispatch { chained: true, .. }));
    let in_scratch = artifact.kernels.iter().any(|k| k.worker_scratch > 0);
    if !chained || !in_scratch {
        #[allow(clippy::print_stderr, reason = "tell the log what was skipped")]
        {
            eprintln!(
                "skipped the worker-scratch part: no chain with rows in worker scratch on \
                 this host (chained {chained}, worker scratch {in_scratch})"
            );
        }
    }
    for threads in [1, 2, 3] {
        let session = Session::with_options(options.with_threads(threads)).unwrap();
        let actual = run(&session, &program, &args);
        assert_eq!(
            expected[0].data().to_le_bytes(),
            actual[0],
            "{threads} threads"
        );
    }
}
