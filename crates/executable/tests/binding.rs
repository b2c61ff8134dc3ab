//! Binding and running plans without kernels (so on any architecture): every `BindingError`
//! case, fill and copy semantics on guard-page buffers, zero-length buffers, and scratch
//! reuse.

mod common;

use accy_artifact::{Artifact, Command, Region, SlotId, SlotRole};
use accy_executable::{
    prepare_borrowed, run, BindingError, BufferKind, Inline, InvokeError, LoadedArtifact, Scratch,
};
use accy_ir::DType;
use common::*;

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Scratch>();
};

/// Inputs: f32[3] (12 bytes, align 4), u8[5]. Outputs: f32[2] (8 bytes, align 4), u8[3],
/// u8[0]. Output 0 = input 0 bytes 0..8, output 1 = input 1 bytes 1..4.
fn io_artifact() -> (Artifact, [SlotId; 5]) {
    let mut a = artifact();
    let in0 = slot(&mut a, SlotRole::Input(0), DType::F32, 3);
    let in1 = slot(&mut a, SlotRole::Input(1), DType::U8, 5);
    let out0 = slot(&mut a, SlotRole::Output(0), DType::F32, 2);
    let out1 = slot(&mut a, SlotRole::Output(1), DType::U8, 3);
    let out2 = slot(&mut a, SlotRole::Output(2), DType::U8, 0);
    a.launch.push(Command::Copy {
        src: Region::new(in0, 0, 8),
        dst: whole(out0, 8),
    });
    a.launch.push(Command::Copy {
        src: Region::new(in1, 1, 3),
        dst: whole(out1, 3),
    });
    (a, [in0, in1, out0, out1, out2])
}

fn loaded_io() -> (LoadedArtifact, [SlotId; 5]) {
    let (a, slots) = io_artifact();
    (load(&a, &host()).unwrap(), slots)
}

fn bind_err(loaded: &LoadedArtifact, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> BindingError {
    let mut scratch = Scratch::new();
    prepare_borrowed(loaded, inputs, outputs, &mut scratch, &Inline).unwrap_err()
}

#[test]
fn good_buffers_run_and_leave_inputs_unchanged() {
    let (loaded, _) = loaded_io();
    let in0 = guarded_with(&f32_bytes(&[1.0, 2.0, 3.0]), 4);
    let in1 = guarded_with(&[10, 11, 12, 13, 14], 1);
    let mut out0 = guarded(8, 4);
    let mut out1 = guarded(3, 1);
    let mut scratch = Scratch::new();
    // The output list is borrowed for as long as the bindings live, so it needs a name.
    let mut outputs = [out0.as_mut_slice(), out1.as_mut_slice(), &mut []];
    let bindings = prepare_borrowed(
        &loaded,
        &[in0.as_slice(), in1.as_slice()],
        &mut outputs,
        &mut scratch,
        &Inline,
    )
    .unwrap();
    assert_eq!(bindings.slot_ptr(SlotId(0)), Some(in0.as_ptr()));
    assert_eq!(bindings.slot_ptr(SlotId(7)), None);
    run(bindings).unwrap();
    assert_eq!(f32s(out0.as_slice()), vec![1.0, 2.0]);
    assert_eq!(out1.as_slice(), &[11, 12, 13]);
    assert_eq!(f32s(in0.as_slice()), vec![1.0, 2.0, 3.0]);
    assert_eq!(in1.as_slice(), &[10, 11, 12, 13, 14]);
}

#[test]
fn counts_must_match() {
    let (loaded, _) = loaded_io();
    let in0 = guarded(12, 4);
    let err = bind_err(&loaded, &[in0.as_slice()], &mut []);
    assert_eq!(
        err,
        BindingError::Count {
            kind: BufferKind::Input,
            expected: 2,
            actual: 1
        }
    );
    assert_eq!(err.to_string(), "expected 2 input buffers, got 1");
    let in1 = [0u8; 5];
    let mut o = [0u8; 3];
    let err = bind_err(&loaded, &[in0.as_slice(), &in1], &mut [&mut o]);
    assert_eq!(
        err,
        BindingError::Count {
            kind: BufferKind::Output,
            expected: 3,
            actual: 1
        }
    );
}

#[test]
fn sizes_must_be_exact() {
    let (loaded, [in0_slot, _, _, out1_slot, _]) = loaded_io();
    let short = guarded(11, 1);
    let in1 = [0u8; 5];
    let mut out0 = guarded(8, 4);
    let mut out1 = [0u8; 3];
    let err = bind_err(
        &loaded,
        &[short.as_slice(), &in1],
        &mut [out0.as_mut_slice(), &mut out1, &mut []],
    );
    assert_eq!(
        err,
        BindingError::Size {
            kind: BufferKind::Input,
            index: 0,
            slot: in0_slot,
            expected: 12,
            actual: 11
        }
    );
    assert_eq!(
        err.to_string(),
        "input 0 (slot s0) must be exactly 12 bytes, got 11"
    );

    let in0 = guarded(12, 4);
    let mut long = [0u8; 4];
    let err = bind_err(
        &loaded,
        &[in0.as_slice(), &in1],
        &mut [out0.as_mut_slice(), &mut long, &mut []],
    );
    assert_eq!(
        err,
        BindingError::Size {
            kind: BufferKind::Output,
            index: 1,
            slot: out1_slot,
            expected: 3,
            actual: 4
        }
    );
    // A zero-length slot takes only an empty buffer.
    let mut one = [0u8; 1];
    let err = bind_err(
        &loaded,
        &[in0.as_slice(), &in1],
        &mut [out0.as_mut_slice(), &mut out1, &mut one],
    );
    assert!(matches!(
        err,
        BindingError::Size {
            index: 2,
            expected: 0,
            actual: 1,
            ..
        }
    ));
}

#[test]
fn addresses_must_have_the_slot_alignment() {
    let (loaded, [in0_slot, _, out0_slot, _, _]) = loaded_io();
    let in1 = [0u8; 5];
    let mut out1 = [0u8; 3];
    // Two bytes past a multiple of 4.
    let odd_in = GuardedBufferExt::misaligned(12, 4, 2);
    let mut out0 = guarded(8, 4);
    let err = bind_err(
        &loaded,
        &[odd_in.as_slice(), &in1],
        &mut [out0.as_mut_slice(), &mut out1, &mut []],
    );
    assert_eq!(
        err,
        BindingError::Misaligned {
            kind: BufferKind::Input,
            index: 0,
            slot: in0_slot,
            address: odd_in.as_ptr() as usize,
            alignment: 4,
            misalignment: 2
        }
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("{:#x}", odd_in.as_ptr() as usize)) && text.contains("aligned to 4"),
        "{text}"
    );

    let in0 = guarded(12, 4);
    let mut odd_out = GuardedBufferExt::misaligned(8, 4, 1);
    let address = odd_out.as_ptr() as usize;
    let err = bind_err(
        &loaded,
        &[in0.as_slice(), &in1],
        &mut [odd_out.as_mut_slice(), &mut out1, &mut []],
    );
    assert_eq!(
        err,
        BindingError::Misaligned {
            kind: BufferKind::Output,
            index: 0,
            slot: out0_slot,
            address,
            alignment: 4,
            misalignment: 1
        }
    );
}

/// Misaligned guard-page buffers.
struct GuardedBufferExt;

impl GuardedBufferExt {
    fn misaligned(len: usize, align: usize, offset: usize) -> accy_executable::GuardedBuffer {
        let b = accy_executable::GuardedBuffer::with_alignment(len, align, offset).unwrap();
        assert_eq!(b.as_ptr() as usize % align, offset);
        b
    }
}

#[test]
fn outputs_must_not_overlap_inputs_or_each_other() {
    let (loaded, _) = loaded_io();
    let mut memory = guarded(64, 8);
    let base = memory.as_mut_ptr();
    let in1 = [0u8; 5];
    // SAFETY: the slices lie inside `memory` (64 bytes), which outlives them and is not
    // otherwise used meanwhile. Some overlap on purpose, as buffers from a foreign caller
    // might; `prepare_borrowed` must refuse them by address before it or anything else reads
    // or writes a byte through any of them, and this test never does either.
    let (in0, out0_overlapping) = unsafe {
        (
            std::slice::from_raw_parts(base.cast_const(), 12),
            std::slice::from_raw_parts_mut(base.add(8), 8),
        )
    };
    let mut out1 = [0u8; 3];
    let err = bind_err(
        &loaded,
        &[in0, &in1],
        &mut [out0_overlapping, &mut out1, &mut []],
    );
    let a = base as usize;
    assert_eq!(
        err,
        BindingError::Overlap {
            output: 0,
            output_range: (a + 8, a + 16),
            other_kind: BufferKind::Input,
            other: 0,
            other_range: (a, a + 12)
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "output 0 at {:#x}..{:#x} overlaps input 0 at {:#x}..{:#x}",
            a + 8,
            a + 16,
            a,
            a + 12
        )
    );

    // Two outputs sharing their last / first byte.
    // SAFETY: as above.
    let (in0, out0, out1) = unsafe {
        (
            std::slice::from_raw_parts(base.cast_const(), 12),
            std::slice::from_raw_parts_mut(base.add(16), 8),
            std::slice::from_raw_parts_mut(base.add(23), 3),
        )
    };
    let err = bind_err(&loaded, &[in0, &in1], &mut [out0, out1, &mut []]);
    assert_eq!(
        err,
        BindingError::Overlap {
            output: 1,
            output_range: (a + 23, a + 26),
            other_kind: BufferKind::Output,
            other: 0,
            other_range: (a + 16, a + 24)
        }
    );

    // Adjacent buffers share no byte, and an empty buffer overlaps nothing, even at an
    // address inside another buffer. Inputs may overlap each other (they are only read).
    // SAFETY: as above; these do not overlap except the empty one and the two inputs.
    let (in0, in1, out0, out1, empty) = unsafe {
        (
            std::slice::from_raw_parts(base.cast_const(), 12),
            std::slice::from_raw_parts(base.add(4).cast_const(), 5),
            std::slice::from_raw_parts_mut(base.add(16), 8),
            std::slice::from_raw_parts_mut(base.add(24), 3),
            std::slice::from_raw_parts_mut(base.add(17), 0),
        )
    };
    let mut scratch = Scratch::new();
    let mut outputs = [out0, out1, empty];
    let bindings = prepare_borrowed(&loaded, &[in0, in1], &mut outputs, &mut scratch, &Inline);
    run(bindings.unwrap()).unwrap();
}

#[test]
fn fill_writes_patterns_of_each_width_up_to_the_guard_page() {
    let mut a = artifact();
    let out = slot(&mut a, SlotRole::Output(0), DType::U8, 16);
    let fills: [(u64, u64, u32, u8); 4] = [
        (0, 16, 0x1122_3344, 4),
        (2, 6, 0xaabb, 2),
        (12, 4, 0xcafe_f00d, 4),
        (15, 1, 0x7f, 1),
    ];
    for (offset, len, pattern, width) in fills {
        a.launch.push(Command::Fill {
            dst: Region::new(out, offset, len),
            pattern,
            width,
        });
    }
    // A zero-length fill at the very end is a no-op.
    a.launch.push(Command::Fill {
        dst: Region::new(out, 16, 0),
        pattern: 0xffff_ffff,
        width: 4,
    });
    let loaded = load(&a, &host()).unwrap();
    // Flush against the guard page, and deliberately only 1-aligned: fills may not assume
    // more than the slot's alignment.
    let mut buf = GuardedBufferExt::misaligned(16, 4, 3);
    let mut exact = guarded(16, 1);
    assert_eq!(exact.tail_gap(), 0);
    let mut scratch = Scratch::new();
    for b in [&mut buf, &mut exact] {
        loaded
            .invoke(&[], &mut [b.as_mut_slice()], &mut scratch)
            .unwrap();
        assert_eq!(
            b.as_slice(),
            &[
                0x44, 0x33, 0xbb, 0xaa, 0xbb, 0xaa, 0xbb, 0xaa, 0x44, 0x33, 0x22, 0x11, 0x0d, 0xf0,
                0xfe, 0x7f
            ]
        );
    }
}

#[test]
fn copy_moves_bytes_between_and_within_slots() {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, 8);
    let out = slot(&mut a, SlotRole::Output(0), DType::U8, 12);
    let tmp = a.plan.add(accy_artifact::Slot::scratch(8, 8)).unwrap();
    // input -> scratch, scratch tail -> out head, out head -> out tail (same slot, disjoint),
    // input -> out middle.
    for (src, dst) in [
        (Region::new(input, 0, 8), Region::new(tmp, 0, 8)),
        (Region::new(tmp, 4, 4), Region::new(out, 0, 4)),
        (Region::new(out, 0, 4), Region::new(out, 8, 4)),
        (Region::new(input, 0, 4), Region::new(out, 4, 4)),
        (Region::new(input, 8, 0), Region::new(out, 12, 0)),
    ] {
        a.launch.push(Command::Copy { src, dst });
    }
    let loaded = load(&a, &host()).unwrap();
    let input_buf = guarded_with(&[1, 2, 3, 4, 5, 6, 7, 8], 1);
    let mut out_buf = guarded(12, 1);
    let mut scratch = Scratch::new();
    loaded
        .invoke(
            &[input_buf.as_slice()],
            &mut [out_buf.as_mut_slice()],
            &mut scratch,
        )
        .unwrap();
    assert_eq!(out_buf.as_slice(), &[5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8]);
}

#[test]
fn zero_length_buffers_need_no_alignment() {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::F64, 0);
    let out = slot(&mut a, SlotRole::Output(0), DType::F64, 0);
    a.launch.push(Command::Copy {
        src: whole(input, 0),
        dst: whole(out, 0),
    });
    let loaded = load(&a, &host()).unwrap();
    let mut scratch = Scratch::new();
    // `&[]` of bytes sits at address 1, which is not 8-aligned, and that is fine.
    let empty: &[u8] = &[];
    assert_eq!(empty.as_ptr() as usize % 8, 1);
    loaded
        .invoke(&[empty], &mut [&mut []], &mut scratch)
        .unwrap();
}

#[test]
fn scratch_grows_once_and_is_reused() {
    let mut a = artifact();
    let out = slot(&mut a, SlotRole::Output(0), DType::U8, 4);
    let s = a.plan.add(accy_artifact::Slot::scratch(100, 32)).unwrap();
    a.launch.push(Command::Fill {
        dst: whole(s, 100),
        pattern: 9,
        width: 1,
    });
    a.launch.push(Command::Copy {
        src: Region::new(s, 96, 4),
        dst: whole(out, 4),
    });
    let loaded = load(&a, &host()).unwrap();
    let mut scratch = Scratch::new();
    assert_eq!(scratch.capacity(), 0);
    let mut out_buf = [0u8; 4];
    loaded
        .invoke(&[], &mut [&mut out_buf], &mut scratch)
        .unwrap();
    assert_eq!(out_buf, [9; 4]);
    let (capacity, address) = (scratch.capacity(), scratch.as_ptr());
    assert!(capacity >= 100);
    assert_eq!(address as usize % loaded.scratch_alignment(), 0);
    for _ in 0..3 {
        out_buf = [0; 4];
        loaded
            .invoke(&[], &mut [&mut out_buf], &mut scratch)
            .unwrap();
        assert_eq!(out_buf, [9; 4]);
        assert_eq!((scratch.capacity(), scratch.as_ptr()), (capacity, address));
    }
    // A smaller plan reuses the same block; a pre-sized scratch never grows.
    let (small, _) = loaded_io();
    scratch.reserve_for(&small, 1).unwrap();
    assert_eq!((scratch.capacity(), scratch.as_ptr()), (capacity, address));
    let sized = Scratch::for_artifact(&loaded, 1).unwrap();
    assert!(sized.capacity() >= 100);
    assert!(format!("{sized:?}").contains("Scratch"));
}

#[test]
fn invoke_reports_binding_errors() {
    let (loaded, _) = loaded_io();
    let mut scratch = Scratch::new();
    let err = loaded.invoke(&[], &mut [], &mut scratch).unwrap_err();
    assert!(matches!(
        err,
        InvokeError::Binding(BindingError::Count {
            kind: BufferKind::Input,
            ..
        })
    ));
    assert_eq!(err.to_string(), "expected 2 input buffers, got 0");
}
