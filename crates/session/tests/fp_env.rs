//! Kernels follow the documented float semantics whatever the caller's floating-point
//! environment: a host thread with flush-to-zero and denormals-are-zero set (as some audio
//! and game engines run) still gets subnormal results and inputs honoured, and gets its own
//! MXCSR back after the call.

#![cfg(target_arch = "x86_64")]

use std::arch::asm;

use accy_ir::interp::eval;
use accy_ir::{BinaryOp, Builder, DType, Program, Tensor, Type};
use accy_session::{Scratch, Session, SessionOptions};

/// MXCSR's flush-to-zero and denormals-are-zero bits.
const FTZ_DAZ: u32 = (1 << 15) | (1 << 6);

fn mxcsr() -> u32 {
    let mut value = 0u32;
    // SAFETY: `stmxcsr` stores the 4-byte MXCSR into the local it is given; nothing else is
    // touched.
    unsafe { asm!("stmxcsr [{}]", in(reg) &mut value, options(nostack)) };
    value
}

fn set_mxcsr(value: u32) {
    // SAFETY: `ldmxcsr` loads MXCSR from the local; the values used here only change rounding
    // of subnormals and keep every exception masked, so no float operation can trap.
    unsafe { asm!("ldmxcsr [{}]", in(reg) &value, options(nostack)) };
}

/// `y = x * s + x` over f32[n].
fn scale_and_add(n: u64) -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[n])).unwrap();
    let s = b.input("s", Type::new(DType::F32, &[n])).unwrap();
    let p = b.binary(BinaryOp::Mul, x, s).unwrap();
    let y = b.binary(BinaryOp::Add, p, x).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

#[test]
fn ftz_and_daz_in_the_caller_do_not_change_results_and_are_restored() {
    // y = x * s + x: subnormal inputs, subnormal products.
    let n = 64u64;
    let program = scale_and_add(n);
    let xs: Vec<f32> = (0..n)
        .map(|i| f32::from_bits(1 + i as u32 * 97_003) * if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let ss: Vec<f32> = (0..n).map(|i| 0.25 + i as f32 / 64.0).collect();
    assert!(xs.iter().all(|v| v.is_subnormal()));
    // The interpreter runs in Rust on this thread: evaluate it before changing MXCSR.
    let args = [
        Tensor::f32s(&[n], xs.clone()),
        Tensor::f32s(&[n], ss.clone()),
    ];
    let expected = eval(&program, &args).unwrap()[0].data().to_le_bytes();
    assert!(
        expected.chunks(4).any(|c| c != [0; 4]),
        "the expected results keep subnormals"
    );

    for exact in [true, false] {
        let session = Session::with_options(
            SessionOptions::default()
                .with_threads(2)
                .with_reassociate_float_sums(!exact),
        )
        .unwrap();
        let handle = session.compile(&accy_wire::encode(&program)).unwrap();
        let inputs: Vec<Vec<u8>> = args.iter().map(|t| t.data().to_le_bytes()).collect();
        let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let mut out = vec![0u8; n as usize * 4];
        let mut scratch = Scratch::new();
        let before = mxcsr();
        set_mxcsr(before | FTZ_DAZ);
        let result = session.invoke(handle, &mut scratch, &inputs, &mut [&mut out]);
        let after = mxcsr();
        set_mxcsr(before);
        result.unwrap();
        assert_eq!(after, before | FTZ_DAZ, "the caller's MXCSR comes back");
        assert_eq!(out, expected, "exact {exact}: results as without FTZ/DAZ");
    }
}

#[test]
fn a_session_that_flushes_subnormals_does_so_on_every_thread_and_restores_the_callers_mxcsr() {
    // y = x * s + x over subnormal x: with FTZ/DAZ every x reads as ±0, so y is ±0; without,
    // no y is zero. Enough elements for the kernel to be split over the pool's threads.
    let n = 1u64 << 20;
    let program = accy_wire::encode(&scale_and_add(n));
    let xs: Vec<f32> = (0..n)
        .map(|i| f32::from_bits(1 + (i as u32 % 8_000_000)) * if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let ss = vec![0.75f32; n as usize];
    let inputs: [&[u8]; 2] = [bytemuck::cast_slice(&xs), bytemuck::cast_slice(&ss)];
    for flush in [false, true] {
        let session = Session::with_options(
            SessionOptions::default()
                .with_threads(2)
                .with_flush_subnormals(flush),
        )
        .unwrap();
        let handle = session.compile(&program).unwrap();
        let mut out = vec![0f32; n as usize];
        let before = mxcsr();
        session
            .invoke(
                handle,
                &mut Scratch::new(),
                &inputs,
                &mut [bytemuck::cast_slice_mut(&mut out)],
            )
            .unwrap();
        // The control bits; the sticky exception flags keep what the kernels raised.
        let control = |m: u32| m & !0x3F;
        assert_eq!(
            control(mxcsr()),
            control(before),
            "the caller's MXCSR comes back"
        );
        let zeros = out.iter().filter(|v| **v == 0.0).count();
        if flush {
            assert_eq!(zeros, out.len(), "every result flushed");
        } else {
            assert_eq!(zeros, 0, "subnormals kept");
        }
    }
}
