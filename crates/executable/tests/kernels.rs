//! Running hand-assembled x86-64 kernels through the dispatch ABI: bindings, scalars and
//! workgroups reach the kernel as documented, a failing status becomes a `LaunchError`, an
//! import is called through the table, buffers sit against guard pages, and four threads run
//! one loaded artifact at once.

#![cfg(target_arch = "x86_64")]

mod common;

use accy_artifact::abi::ABI_VERSION;
use accy_artifact::{Access, Command, Import, Region, SlotRole};
use accy_executable::{
    prepare_borrowed, run, ImportFn, Inline, InvokeError, LaunchError, Scratch, IMPORT_TABLE,
};
use accy_ir::DType;
use common::*;

#[test]
fn copy_kernel_runs_every_workgroup_on_guarded_buffers() {
    let host = host();
    for (n, chunk) in [(1u64, 1u64), (10, 4), (64, 64), (4097, 1000), (0, 8)] {
        let loaded = load(&copy_artifact(n, chunk), &host).unwrap();
        let data: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
        // Both buffers end flush against a guard page: a byte too far faults the test.
        let input = guarded_with(&data, 1);
        let mut output = guarded(n as usize, 1);
        let mut scratch = Scratch::new();
        loaded
            .invoke(
                &[input.as_slice()],
                &mut [output.as_mut_slice()],
                &mut scratch,
            )
            .unwrap();
        assert_eq!(output.as_slice(), &data[..], "n {n} chunk {chunk}");
        assert_eq!(input.as_slice(), &data[..]);
    }
}

#[test]
fn kernel_status_is_a_launch_error_naming_the_kernel() {
    let mut a = artifact();
    let out = slot(&mut a, SlotRole::Output(0), DType::U8, 4);
    a.launch.push(Command::Fill {
        dst: whole(out, 4),
        pattern: 0x55,
        width: 1,
    });
    let k = add_kernel(&mut a, "fails_with_7", &STATUS_7);
    dispatch(&mut a, k, &[(whole(out, 4), Access::Write)], &[], 3);
    let loaded = load(&a, &host()).unwrap();
    let mut buf = [0u8; 4];
    let mut scratch = Scratch::new();
    let err = loaded
        .invoke(&[], &mut [&mut buf], &mut scratch)
        .unwrap_err();
    let want = LaunchError::KernelFailed {
        command: 1,
        kernel: 0,
        name: "fails_with_7".into(),
        workgroup: 0,
        workgroups: 3,
        status: 7,
    };
    assert_eq!(err, InvokeError::Launch(want));
    assert_eq!(
        err.to_string(),
        "command 1: kernel 0 `fails_with_7` returned status 7 in workgroup 0 of 3"
    );
    // The fill before the failing dispatch ran.
    assert_eq!(buf, [0x55; 4]);
}

#[test]
fn kernels_call_imports_through_the_table() {
    let xs = [
        0.0f32,
        -0.0,
        1.0,
        -2.5,
        88.0,
        -104.0,
        f32::INFINITY,
        f32::NAN,
        0.3,
    ];
    let n = xs.len() as u64;
    for import in [
        Import::ExpF32,
        Import::SigmoidF32,
        Import::ErfF32,
        Import::TanhF32,
    ] {
        let mut a = artifact();
        let input = slot(&mut a, SlotRole::Input(0), DType::F32, n);
        let out = slot(&mut a, SlotRole::Output(0), DType::F32, n);
        let k = add_kernel(&mut a, "call_import", &CALL_IMPORT_F32);
        dispatch(
            &mut a,
            k,
            &[
                (whole(input, 4 * n), Access::Read),
                (whole(out, 4 * n), Access::Write),
            ],
            &[u64::from(import.table_offset())],
            n as u32,
        );
        let loaded = load(&a, &host()).unwrap();
        let in_buf = guarded_with(&f32_bytes(&xs), 4);
        let mut out_buf = guarded(4 * n as usize, 4);
        let mut scratch = Scratch::new();
        loaded
            .invoke(
                &[in_buf.as_slice()],
                &mut [out_buf.as_mut_slice()],
                &mut scratch,
            )
            .unwrap();
        let ImportFn::UnaryF32(f) = ImportFn::of(import) else {
            panic!("{import:?} is unary f32");
        };
        for (x, got) in xs.iter().zip(f32s(out_buf.as_slice())) {
            let want = f(*x);
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{import:?}({x}) = {got}, want {want}"
            );
        }
    }
}

#[test]
fn the_kernel_sees_exactly_the_dispatch_state() {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, 10);
    let empty_in = slot(&mut a, SlotRole::Input(1), DType::U8, 0);
    let out = slot(&mut a, SlotRole::Output(0), DType::U8, 104);
    let tmp = a.plan.add(accy_artifact::Slot::scratch(32, 16)).unwrap();
    let k = add_kernel(&mut a, "dump_state", &DUMP_STATE);
    // The dump needs 16 + 4 * 16 (bindings) + 2 * 8 (scalars) + 8 (imports) = 104 bytes.
    let scalars = [u64::MAX, 0];
    // Four bindings: the dump target, an input region at an offset, an empty region, scratch.
    dispatch(
        &mut a,
        k,
        &[
            (whole(out, 104), Access::Write),
            (Region::new(input, 3, 5), Access::Read),
            (whole(empty_in, 0), Access::Read),
            (Region::new(tmp, 16, 16), Access::ReadWrite),
        ],
        &scalars,
        5,
    );
    let loaded = load(&a, &host()).unwrap();
    let input_buf = guarded_with(&[0; 10], 1);
    let mut out_buf = guarded(104, 1);
    let mut scratch = Scratch::new();
    let mut outputs = [out_buf.as_mut_slice()];
    let bindings = prepare_borrowed(
        &loaded,
        &[input_buf.as_slice(), &[]],
        &mut outputs,
        &mut scratch,
        &Inline,
    )
    .unwrap();
    let out_ptr = bindings.slot_ptr(out).unwrap() as u64;
    let scratch_ptr = bindings.slot_ptr(tmp).unwrap() as u64;
    run(bindings).unwrap();
    let d = out_buf.as_slice();
    let u32_at = |i: usize| u32::from_le_bytes(d[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(d[i..i + 8].try_into().unwrap());
    assert_eq!(u32_at(0), ABI_VERSION);
    assert_eq!(u32_at(4), 4, "binding count");
    assert_eq!(u32_at(8), 2, "scalar count");
    assert_eq!(u32_at(12), 5, "workgroup count");
    assert_eq!((u64_at(16), u64_at(24)), (out_ptr, 104));
    assert_eq!(out_ptr, out_buf.as_ptr() as u64);
    assert_eq!((u64_at(32), u64_at(40)), (input_buf.as_ptr() as u64 + 3, 5));
    // The empty region: a non-null address and length 0.
    assert_ne!(u64_at(48), 0);
    assert_eq!(u64_at(56), 0);
    assert_eq!((u64_at(64), u64_at(72)), (scratch_ptr + 16, 16));
    assert_eq!(scratch_ptr % 16, 0);
    assert_eq!((u64_at(80), u64_at(88)), (u64::MAX, 0));
    assert_eq!(u64_at(96), IMPORT_TABLE.as_ptr() as u64);
}

#[test]
fn four_threads_run_one_loaded_artifact_at_once() {
    let loaded = load(&copy_artifact(1000, 100), &host()).unwrap();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..4u8)
            .map(|t| {
                let loaded = &loaded;
                s.spawn(move || {
                    let mut scratch = Scratch::new();
                    let mut output = guarded(1000, 1);
                    for round in 0..50u8 {
                        let data: Vec<u8> = (0..1000u32)
                            .map(|i| (i as u8) ^ t.wrapping_mul(31) ^ round)
                            .collect();
                        loaded
                            .invoke(&[&data], &mut [output.as_mut_slice()], &mut scratch)
                            .unwrap();
                        assert_eq!(output.as_slice(), &data[..], "thread {t} round {round}");
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    });
}
