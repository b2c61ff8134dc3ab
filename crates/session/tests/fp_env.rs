//! Kernels follow the documented float semantics whatever the caller's floating-point
//! environment: a host thread with flush-to-zero and denormals-are-zero set (as some audio
//! and game engines run) still gets subnormal results and inputs honoured, and gets its own
//! MXCSR back after the call.

#![cfg(target_arch = "x86_64")]

use std::arch::asm;

use accy_ir::interp::eval;
use accy_ir::{BinaryOp, Builder, DType, Tensor, Type};
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

#[test]
fn ftz_and_daz_in_the_caller_do_not_change_results_and_are_restored() {
    // y = x * s + x: subnormal inputs, subnormal products.
    let n = 64u64;
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[n])).unwrap();
    let s = b.input("s", Type::new(DType::F32, &[n])).unwrap();
    let p = b.binary(BinaryOp::Mul, x, s).unwrap();
    let y = b.binary(BinaryOp::Add, p, x).unwrap();
    b.output(y).unwrap();
    let program = b.finish().unwrap();
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
