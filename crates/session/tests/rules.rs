//! Every session rule: handles, the slot limit, bad bytes, buffer checks, `last_cause`,
//! donation, descriptors, and status codes.

use accy_ir::{BinaryOp, Builder, DType, Program, Tensor, Type, UnaryOp};
use accy_session::{Error, Handle, Scratch, Session, Status, MAX_PROGRAMS};

fn neg_program(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[n])).unwrap();
    let y = b.unary(UnaryOp::Neg, x).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

fn add_program() -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let y = b.input("y", Type::new(DType::F32, &[4])).unwrap();
    let s = b.binary(BinaryOp::Add, x, y).unwrap();
    let d = b.binary(BinaryOp::Sub, x, y).unwrap();
    b.output(s).unwrap();
    b.output(d).unwrap();
    accy_wire::encode(&b.finish().unwrap())
}

#[test]
fn compile_invoke_release_and_stale_handles() {
    let session = Session::new().unwrap();
    let h = session
        .compile(&accy_wire::encode(&neg_program(3)))
        .unwrap();
    let d = &session.inputs(h).unwrap()[0];
    assert_eq!(
        (d.dtype, d.dims.as_slice(), d.byte_size, d.alignment),
        (DType::F32, &[3u64][..], 12, 4)
    );
    let mut out = [0.0f32; 3];
    let mut scratch = Scratch::new();
    session
        .invoke_typed(h, &mut scratch, &[&[1.0f32, -0.0, 2.5]], &mut [&mut out])
        .unwrap();
    assert_eq!(
        out.map(f32::to_bits),
        [-1.0f32, 0.0, -2.5].map(f32::to_bits)
    );

    session.release(h).unwrap();
    let stale = session.invoke_typed(h, &mut scratch, &[&[1.0f32; 3]], &mut [&mut out]);
    assert!(matches!(stale, Err(Error::InvalidHandle { .. })));
    assert!(matches!(
        session.release(h),
        Err(Error::InvalidHandle { .. })
    ));
    // The slot is reused with a new generation; the old handle stays dead.
    let h2 = session
        .compile(&accy_wire::encode(&neg_program(3)))
        .unwrap();
    assert_eq!(h2.index, h.index);
    assert_ne!(h2.generation, h.generation);
    assert!(matches!(
        session.inputs(h),
        Err(Error::InvalidHandle { .. })
    ));
    let never = Handle {
        index: 63,
        generation: 5,
    };
    assert!(matches!(
        session.outputs(never),
        Err(Error::InvalidHandle { .. })
    ));
    let out_of_range = Handle {
        index: 64,
        generation: 0,
    };
    assert_eq!(
        Status::of(&session.release(out_of_range)),
        Status::InvalidHandle
    );
}

/// A program of one f32[4] input `x` whose output is `x + c`.
fn add_constant(c: f32) -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let k = b.constant(Tensor::f32s(&[4], vec![c; 4])).unwrap();
    let y = b.binary(BinaryOp::Add, x, k).unwrap();
    b.output(y).unwrap();
    accy_wire::encode(&b.finish().unwrap())
}

/// A scratch keeps the program of its last call to skip the table lookup next time; these are
/// the cases where that program must not be the one that runs.
#[test]
fn a_scratch_never_runs_the_program_it_kept_for_another_handle_or_session() {
    let (one, two) = (Session::new().unwrap(), Session::new().unwrap());
    let mut scratch = Scratch::new();
    let mut out = [0.0f32; 4];
    let x = [1.0f32; 4];
    let mut run = |session: &Session, h: Handle, scratch: &mut Scratch| {
        session
            .invoke_typed(h, scratch, &[&x], &mut [&mut out])
            .map(|()| out[0])
    };
    // The same slot index and generation in two sessions, holding different programs.
    let a = one.compile(&add_constant(10.0)).unwrap();
    let b = two.compile(&add_constant(20.0)).unwrap();
    assert_eq!(a, b);
    for _ in 0..3 {
        assert_eq!(run(&one, a, &mut scratch).unwrap(), 11.0);
        assert_eq!(run(&one, a, &mut scratch).unwrap(), 11.0);
        assert_eq!(run(&two, b, &mut scratch).unwrap(), 21.0);
    }
    // Released while kept in the scratch, then the slot reused by another program.
    assert_eq!(run(&one, a, &mut scratch).unwrap(), 11.0);
    one.release(a).unwrap();
    assert!(matches!(
        run(&one, a, &mut scratch),
        Err(Error::InvalidHandle { .. })
    ));
    assert_eq!(run(&two, b, &mut scratch).unwrap(), 21.0);
    let c = one.compile(&add_constant(30.0)).unwrap();
    assert_eq!(c.index, a.index);
    assert_eq!(run(&one, c, &mut scratch).unwrap(), 31.0);
    assert!(matches!(
        run(&one, a, &mut scratch),
        Err(Error::InvalidHandle { .. })
    ));
    // A scratch that outlives its session is still a fine scratch for another.
    drop(one);
    assert_eq!(run(&two, b, &mut scratch).unwrap(), 21.0);
    let three = Session::new().unwrap();
    let d = three.compile(&add_constant(40.0)).unwrap();
    assert_eq!(run(&three, d, &mut scratch).unwrap(), 41.0);
}

/// `Scratch::pin` is public, so a caller can move a kept program under another handle's key;
/// the session must notice and look the handle up instead. (The key layout and the sequential
/// session ids are internals this test reproduces to stage the swap.)
#[test]
fn a_program_pinned_under_another_handles_key_is_not_run() {
    let session = Session::new().unwrap();
    let a = session.compile(&add_constant(10.0)).unwrap();
    let b = session.compile(&add_constant(20.0)).unwrap();
    let (x, mut out) = ([1.0f32; 4], [0.0f32; 4]);
    let mut scratch = Scratch::new();
    session
        .invoke_typed(a, &mut scratch, &[&x], &mut [&mut out])
        .unwrap();
    assert_eq!(out[0], 11.0);
    let key = |h: Handle| (u64::from(h.index) << 32) | u64::from(h.generation);
    let (owner, kept) = (1..100_000)
        .find_map(|owner| scratch.take_pinned(owner, key(a)).map(|v| (owner, v)))
        .expect("the scratch keeps the program it ran");
    scratch.pin(owner, key(b), kept);
    session
        .invoke_typed(b, &mut scratch, &[&x], &mut [&mut out])
        .unwrap();
    assert_eq!(out[0], 21.0, "ran the program pinned under b's key");
}

#[test]
fn a_65th_program_is_refused_until_one_is_released() {
    let session = Session::new().unwrap();
    let bytes = accy_wire::encode(&neg_program(2));
    let handles: Vec<Handle> = (0..MAX_PROGRAMS)
        .map(|_| session.compile(&bytes).unwrap())
        .collect();
    assert_eq!(session.live_programs(), 64);
    let before = session.last_cause().map(|c| c.to_string());
    assert!(matches!(
        session.compile(&bytes),
        Err(Error::TooManyPrograms)
    ));
    // A full table is returned directly: last_cause is unchanged.
    assert_eq!(session.last_cause().map(|c| c.to_string()), before);
    session.release(handles[17]).unwrap();
    let h = session.compile(&bytes).unwrap();
    assert_eq!(h.index, 17);
}

#[test]
fn bad_bytes_and_versions_map_to_their_errors_and_set_last_cause() {
    let session = Session::new().unwrap();
    assert!(session.last_cause().is_none());
    let e = session.compile(b"not a program").unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidProgram);
    let cause = std::error::Error::source(&e).unwrap().to_string();
    assert_eq!(session.last_cause().unwrap().to_string(), cause);

    let mut bytes = accy_wire::encode(&neg_program(2));
    bytes[8] = 2; // major version 2
    let e = session.compile(&bytes).unwrap_err();
    assert_eq!(Status::from(&e), Status::UnsupportedVersion);
    assert!(session
        .last_cause()
        .unwrap()
        .to_string()
        .contains("version"));

    // Well-formed bytes of an ill-typed program: the verifier's error names the instruction.
    let mut program = neg_program(2);
    program.instructions[0].ty = Type::new(DType::F32, &[3]);
    let e = session.compile(&accy_wire::encode(&program)).unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidProgram);
    assert!(e.to_string().contains("neg"), "{e}");
}

#[test]
fn buffer_rules_are_checked() {
    let session = Session::new().unwrap();
    let h = session.compile(&add_program()).unwrap();
    let mut scratch = Scratch::new();
    let x = [1.0f32; 4];
    let y = [2.0f32; 4];
    let (mut s, mut d) = ([0.0f32; 4], [0.0f32; 4]);
    let xb: &[u8] = bytemuck::cast_slice(&x);
    let yb: &[u8] = bytemuck::cast_slice(&y);

    // Count mismatch: returned directly, last_cause unchanged.
    let before = session.last_cause().map(|c| c.to_string());
    let e = session
        .invoke(
            h,
            &mut scratch,
            &[xb],
            &mut [
                bytemuck::cast_slice_mut(&mut s),
                bytemuck::cast_slice_mut(&mut d),
            ],
        )
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    assert_eq!(session.last_cause().map(|c| c.to_string()), before);

    // Wrong byte size.
    let e = session
        .invoke(
            h,
            &mut scratch,
            &[&xb[..12], yb],
            &mut [
                bytemuck::cast_slice_mut(&mut s),
                bytemuck::cast_slice_mut(&mut d),
            ],
        )
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    assert!(session
        .last_cause()
        .unwrap()
        .to_string()
        .contains("exactly 16 bytes"));

    // Misaligned input: an f32 buffer one byte past a 4-aligned address.
    let words = [0u32; 5];
    let raw: &[u8] = bytemuck::cast_slice(&words);
    let e = session
        .invoke(
            h,
            &mut scratch,
            &[&raw[1..17], yb],
            &mut [
                bytemuck::cast_slice_mut(&mut s),
                bytemuck::cast_slice_mut(&mut d),
            ],
        )
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    assert!(e.to_string().contains("aligned to 4"), "{e}");

    // Two outputs overlapping each other. Safe Rust cannot make overlapping `&mut` slices, so
    // build them as a foreign caller's pointers would arrive.
    let mut both = [0.0f32; 6];
    let p = both.as_mut_ptr().cast::<u8>();
    // SAFETY: both views lie inside `both`; the session refuses the call before it reads or
    // writes through either, and neither is used afterwards.
    let (o1, o2) = unsafe {
        (
            std::slice::from_raw_parts_mut(p, 16),
            std::slice::from_raw_parts_mut(p.add(8), 16),
        )
    };
    let e = session
        .invoke(h, &mut scratch, &[xb, yb], &mut [o1, o2])
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    assert!(e.to_string().contains("overlaps"), "{e}");

    // An output overlapping an input.
    let mut shared = [0.0f32; 4];
    let sp = shared.as_mut_ptr().cast::<u8>();
    // SAFETY: as above: the overlapping views are refused before use.
    let (inp, outp) = unsafe {
        (
            std::slice::from_raw_parts(sp, 16),
            std::slice::from_raw_parts_mut(sp, 16),
        )
    };
    let e = session
        .invoke(
            h,
            &mut scratch,
            &[inp, yb],
            &mut [outp, bytemuck::cast_slice_mut(&mut d)],
        )
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);

    // And the good call works.
    session
        .invoke_typed(h, &mut scratch, &[&x, &y], &mut [&mut s, &mut d])
        .unwrap();
    assert_eq!((s, d), ([3.0; 4], [-1.0; 4]));
}

#[test]
fn a_donating_program_never_changes_the_callers_input() {
    let text = "program {\n  %s = input \"state\" : i64[4]\n  %d = input \"delta\" : i64[4]\n  %n = add %s, %d : i64[4]\n  output %n donates 0\n}\n";
    let program = accy_ir::text::parse(text).unwrap();
    let session = Session::new().unwrap();
    let h = session.compile(&accy_wire::encode(&program)).unwrap();
    let state = [1i64, 2, 3, i64::MAX];
    let delta = [10i64, 20, 30, 1];
    let mut out = [0i64; 4];
    session
        .invoke_typed(h, &mut Scratch::new(), &[&state, &delta], &mut [&mut out])
        .unwrap();
    assert_eq!(out, [11, 22, 33, i64::MIN]);
    assert_eq!(state, [1, 2, 3, i64::MAX]);
}

#[test]
fn weights_are_bound_at_compile_and_missing_ones_are_refused() {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[2])).unwrap();
    let w = b.weight("w", Type::new(DType::F32, &[2])).unwrap();
    let y = b.binary(BinaryOp::Mul, x, w).unwrap();
    b.output(y).unwrap();
    let bytes = accy_wire::encode(&b.finish().unwrap());
    let session = Session::new().unwrap();
    let e = session.compile(&bytes).unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    let wdata = [3.0f32, -1.0];
    let weights = accy_session::Weights::new(&[("w", bytemuck::cast_slice(&wdata))]).unwrap();
    let h = session.compile_with_weights(&bytes, &weights).unwrap();
    assert_eq!(session.inputs(h).unwrap().len(), 1);
    let mut out = [0.0f32; 2];
    session
        .invoke_typed(h, &mut Scratch::new(), &[&[2.0f32, 5.0]], &mut [&mut out])
        .unwrap();
    assert_eq!(out, [6.0, -5.0]);
}

#[test]
fn a_typed_size_mismatch_goes_through_the_mapping_but_a_count_mismatch_does_not() {
    let session = Session::new().unwrap();
    let h = session
        .compile(&accy_wire::encode(&neg_program(3)))
        .unwrap();
    let mut scratch = Scratch::new();
    let mut out = [0.0f32; 3];
    let before = session.last_cause().map(|c| c.to_string());
    let e = session
        .invoke_typed(
            h,
            &mut scratch,
            &[&[1.0f32; 3], &[2.0f32; 3]],
            &mut [&mut out],
        )
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    assert_eq!(session.last_cause().map(|c| c.to_string()), before);

    let e = session
        .invoke_typed(h, &mut scratch, &[&[1.0f64; 3]], &mut [&mut out])
        .unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer);
    let cause = session.last_cause().unwrap().to_string();
    assert!(
        cause.contains("8-byte elements") && cause.contains("f32"),
        "{cause}"
    );
    assert_eq!(std::error::Error::source(&e).unwrap().to_string(), cause);
}
