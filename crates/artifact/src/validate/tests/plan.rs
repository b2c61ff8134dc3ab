//! Rules on the ABI version, target, kernels and slots.

use super::*;

#[test]
fn abi_version() {
    assert_eq!(
        err(|a| a.abi_version = 7),
        ArtifactError::UnsupportedAbi {
            found: 7,
            supported: crate::abi::ABI_VERSION
        }
    );
    let mut a = valid();
    a.kernels[0].worker_scratch = crate::abi::MAX_WORKER_SCRATCH + 1;
    assert!(matches!(
        a.validate(),
        Err(ArtifactError::WorkerScratchTooLarge { kernel: 0, .. })
    ));
    a.kernels[0].worker_scratch = 100;
    a.kernels[1].worker_scratch = 64;
    assert_eq!(a.validate().unwrap().worker_scratch, 128);
}

#[test]
fn features_of_another_arch() {
    assert_eq!(
        err(|a| a.target.arch = Arch::Aarch64),
        ArtifactError::ForeignFeatures {
            arch: Arch::Aarch64,
            foreign: FeatureSet::of(&[CpuFeature::Avx2, CpuFeature::Fma])
        }
    );
}

#[test]
fn kernel_names() {
    assert_eq!(
        err(|a| a.kernels[1].name.clear()),
        ArtifactError::UnnamedKernel { kernel: 1 }
    );
    assert_eq!(
        err(|a| a.kernels[1].name = "add".into()),
        ArtifactError::DuplicateKernelName {
            name: "add".into(),
            first: 0,
            second: 1
        }
    );
}

#[test]
fn kernel_ranges() {
    assert_eq!(
        err(|a| a.kernels[0].len = 0),
        ArtifactError::EmptyKernel {
            kernel: 0,
            name: "add".into()
        }
    );
    assert_eq!(
        err(|a| a.kernels[1].len = 5),
        ArtifactError::KernelOutOfBounds {
            kernel: 1,
            name: "mul".into(),
            offset: 4,
            len: 5,
            code_len: 8
        }
    );
    // offset + len overflows u32: must still be caught, not wrap.
    assert!(matches!(
        err(|a| {
            a.kernels[1].offset = u32::MAX;
            a.kernels[1].len = 2;
        }),
        ArtifactError::KernelOutOfBounds {
            kernel: 1,
            offset: u32::MAX,
            len: 2,
            ..
        }
    ));
}

#[test]
fn kernel_alignment_follows_arch() {
    let change = |a: &mut Artifact| {
        a.target = TargetSpec::new(Arch::Aarch64, FeatureSet::of(&[CpuFeature::Neon]));
        a.kernels[1].offset = 2;
        a.kernels[1].len = 4;
    };
    assert_eq!(
        err(change),
        ArtifactError::MisalignedKernel {
            kernel: 1,
            name: "mul".into(),
            offset: 2,
            alignment: 4,
            arch: Arch::Aarch64
        }
    );
    // The same offsets are fine on x86-64.
    let mut a = valid();
    a.kernels[1].offset = 2;
    a.kernels[1].len = 4;
    assert!(a.validate().is_ok());
}

#[test]
fn alignment_power_of_two() {
    for bad in [0, 3, 24] {
        assert_eq!(
            err(|a| a.plan.slots[3].alignment = bad),
            ArtifactError::BadAlignment {
                slot: TMP,
                kind: SlotKind::Scratch,
                alignment: bad
            }
        );
    }
}

#[test]
fn io_and_weight_slots_need_a_matching_type() {
    assert_eq!(
        err(|a| a.plan.slots[1].ty = None),
        ArtifactError::MissingType {
            slot: W,
            kind: SlotKind::Weight
        }
    );
    assert_eq!(
        err(|a| a.plan.slots[4].byte_size = 12),
        ArtifactError::TypeSizeMismatch {
            slot: OUT0,
            kind: SlotKind::Output,
            ty: f32x4(),
            type_bytes: 16,
            byte_size: 12
        }
    );
    let huge = Type::new(DType::F64, &[u64::MAX, 3]);
    assert_eq!(
        err(|a| a.plan.slots[3].ty = Some(huge.clone())),
        ArtifactError::TypeSizeOverflow {
            slot: TMP,
            kind: SlotKind::Scratch,
            ty: huge
        }
    );
    // A constant or scratch slot may go untyped.
    let mut a = valid();
    a.plan.slots[2].ty = None;
    assert!(a.validate().is_ok());
}

#[test]
fn io_numbers_unique_and_dense() {
    assert_eq!(
        err(|a| a.plan.slots[5].role = SlotRole::Output(0)),
        ArtifactError::DuplicateIoNumber {
            kind: SlotKind::Output,
            number: 0,
            first: OUT0,
            second: OUT1
        }
    );
    assert_eq!(
        err(|a| a.plan.slots[4].role = SlotRole::Output(2)),
        ArtifactError::IoNumberGap {
            kind: SlotKind::Output,
            count: 2,
            missing: 0
        }
    );
    assert_eq!(
        err(|a| a.plan.slots[0].role = SlotRole::Input(1)),
        ArtifactError::IoNumberGap {
            kind: SlotKind::Input,
            count: 1,
            missing: 0
        }
    );
    assert_eq!(
        err(|a| {
            a.plan
                .add(Slot::typed(SlotRole::Input(1), f32x4(), 4).unwrap());
            a.plan
                .add(Slot::typed(SlotRole::Input(1), f32x4(), 4).unwrap());
        }),
        ArtifactError::DuplicateIoNumber {
            kind: SlotKind::Input,
            number: 1,
            first: SlotId(6),
            second: SlotId(7)
        }
    );
    // Numbers are positions, not slot order.
    let mut a = valid();
    a.plan.slots[4].role = SlotRole::Output(1);
    a.plan.slots[5].role = SlotRole::Output(0);
    assert_eq!(a.validate().unwrap().outputs, vec![OUT1, OUT0]);
}

#[test]
fn weight_names() {
    assert_eq!(
        err(|a| a.plan.slots[1].role = SlotRole::Weight(String::new())),
        ArtifactError::UnnamedWeight { slot: W }
    );
    assert_eq!(
        err(|a| {
            a.plan
                .add(Slot::typed(SlotRole::Weight("bias".into()), f32x4(), 4).unwrap());
        }),
        ArtifactError::DuplicateWeight {
            name: "bias".into(),
            first: W,
            second: SlotId(6)
        }
    );
}

#[test]
fn constant_payload_in_bounds_and_aligned() {
    assert_eq!(
        err(|a| a.constants.truncate(15)),
        ArtifactError::ConstantOutOfBounds {
            slot: K,
            offset: 0,
            len: 16,
            constants_len: 15
        }
    );
    assert_eq!(
        err(|a| a.plan.slots[2].role = SlotRole::Constant { offset: u64::MAX }),
        ArtifactError::ConstantOutOfBounds {
            slot: K,
            offset: u64::MAX,
            len: 16,
            constants_len: 16
        }
    );
    assert_eq!(
        err(|a| {
            a.constants.resize(64, 0);
            a.plan.slots[2].role = SlotRole::Constant { offset: 8 };
        }),
        ArtifactError::MisalignedConstant {
            slot: K,
            offset: 8,
            alignment: 16
        }
    );
}

#[test]
fn scratch_total_must_fit() {
    assert_eq!(
        err(|a| {
            a.plan.add(Slot::scratch(u64::MAX - 8, 1));
        }),
        ArtifactError::ScratchTooLarge { count: 2 }
    );
}
