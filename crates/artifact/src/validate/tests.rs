//! One passing artifact and one negative test per validation rule: the fixture and the
//! passing cases here, the rules on kernels and slots in `plan`, on commands in `commands`,
//! and random artifacts in `random`.

use accy_ir::{DType, Type};

use crate::abi::{MAX_BINDINGS, MAX_SCALARS};
use crate::{
    Access, Arch, Artifact, ArtifactError, Binding, Command, CpuFeature, FeatureSet, KernelEntry,
    Operand, Region, Slot, SlotId, SlotKind, SlotRole, TargetSpec,
};

const IN: SlotId = SlotId(0);
const W: SlotId = SlotId(1);
const K: SlotId = SlotId(2);
const TMP: SlotId = SlotId(3);
const OUT0: SlotId = SlotId(4);
const OUT1: SlotId = SlotId(5);

fn f32x4() -> Type {
    Type::new(DType::F32, &[4])
}

fn r(slot: SlotId, offset: u64, len: u64) -> Region {
    Region::new(slot, offset, len)
}

fn dispatch(kernel: u32, bindings: &[(Region, Access)], workgroups: u32) -> Command {
    Command::Dispatch {
        kernel,
        bindings: bindings
            .iter()
            .map(|&(region, access)| Binding::new(region, access))
            .collect(),
        scalars: vec![4],
        workgroups,
        chained: false,
    }
}

/// `out0 = (in + bias) * k` through scratch, and `out1 = in` donated then updated in place
/// (`out1 += k`), plus a fill of unused scratch: every slot kind and command kind once.
fn valid() -> Artifact {
    let mut a = Artifact::new(TargetSpec::new(
        Arch::X86_64,
        FeatureSet::of(&[CpuFeature::Avx2, CpuFeature::Fma]),
    ));
    a.code = vec![0xc3; 8];
    a.kernels = vec![
        KernelEntry {
            name: "add".into(),
            offset: 0,
            len: 4,
            worker_scratch: 0,
        },
        KernelEntry {
            name: "mul".into(),
            offset: 4,
            len: 4,
            worker_scratch: 0,
        },
    ];
    a.constants = vec![0; 16];
    let slots = [
        Slot::typed(SlotRole::Input(0), f32x4(), 4).unwrap(),
        Slot::typed(SlotRole::Weight("bias".into()), f32x4(), 4).unwrap(),
        Slot::typed(SlotRole::Constant { offset: 0 }, f32x4(), 16).unwrap(),
        Slot::scratch(32, 16),
        Slot::typed(SlotRole::Output(0), f32x4(), 4).unwrap(),
        Slot::typed(SlotRole::Output(1), f32x4(), 4).unwrap(),
    ];
    for s in slots {
        a.plan.add(s).unwrap();
    }
    use Access::{Read, ReadWrite, Write};
    a.launch.commands = vec![
        dispatch(
            0,
            &[
                (r(IN, 0, 16), Read),
                (r(W, 0, 16), Read),
                (r(TMP, 0, 16), Write),
            ],
            1,
        ),
        dispatch(
            1,
            &[
                (r(TMP, 0, 16), Read),
                (r(K, 0, 16), Read),
                (r(OUT0, 0, 16), Write),
            ],
            2,
        ),
        Command::Copy {
            src: r(IN, 0, 16),
            dst: r(OUT1, 0, 16),
        },
        dispatch(0, &[(r(OUT1, 0, 16), ReadWrite), (r(K, 0, 16), Read)], 1),
        Command::Fill {
            dst: r(TMP, 16, 12),
            pattern: 0xffff,
            width: 2,
        },
    ];
    a
}

/// The error `valid()` gets after `change`.
fn err(change: impl FnOnce(&mut Artifact)) -> ArtifactError {
    let mut a = valid();
    change(&mut a);
    match a.validate() {
        Ok(_) => panic!("expected an error for\n{a}"),
        Err(e) => e,
    }
}

fn fill(dst: Region, pattern: u32, width: u8) -> Command {
    Command::Fill {
        dst,
        pattern,
        width,
    }
}

#[test]
fn valid_artifact_passes_with_summary() {
    let a = valid();
    let s = a.validate().unwrap();
    assert_eq!(s.inputs, vec![IN]);
    assert_eq!(s.outputs, vec![OUT0, OUT1]);
    assert_eq!(s.weights, vec![W]);
    assert_eq!(s.constants_alignment, 16);
    assert_eq!(s.scratch.offsets, vec![(TMP, 0)]);
    assert_eq!(s.scratch.size, 32);

    let u = |id| *s.usage(id).unwrap();
    assert_eq!(s.usage.len(), 6);
    assert_eq!(s.usage(SlotId(6)), None);
    let (i, w, k, tmp, o0, o1) = (u(IN), u(W), u(K), u(TMP), u(OUT0), u(OUT1));
    assert_eq!(
        (i.kind, i.extent, i.read, i.written),
        (SlotKind::Input, 16, true, false)
    );
    assert_eq!((w.kind, w.read, w.written), (SlotKind::Weight, true, false));
    assert_eq!((k.alignment, k.read, k.written), (16, true, false));
    assert_eq!((tmp.extent, tmp.read, tmp.written), (28, true, true));
    assert_eq!((tmp.byte_size, tmp.alignment), (32, 16));
    assert_eq!((o0.extent, o0.read, o0.written), (16, false, true));
    assert_eq!((o1.extent, o1.read, o1.written), (16, true, true));
}

#[test]
fn empty_artifact_is_valid() {
    let a = Artifact::new(TargetSpec::new(Arch::Aarch64, FeatureSet::EMPTY));
    let s = a.validate().unwrap();
    assert!(s.usage.is_empty() && s.inputs.is_empty() && s.outputs.is_empty());
    assert_eq!(s.constants_alignment, 1);
    assert_eq!((s.scratch.size, s.scratch.alignment), (0, 1));
}

mod commands;
mod derived;
mod plan;
mod random;
