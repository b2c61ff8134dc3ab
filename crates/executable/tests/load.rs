//! Loading: every `LoadError` case, and what a loaded artifact holds (constants, weights,
//! scratch layout, published code).

mod common;

use accy_artifact::{
    Arch, ArtifactError, Command, CpuFeature, FeatureSet, Region, Slot, SlotId, SlotKind, SlotRole,
    TargetSpec,
};
use accy_executable::{
    feature_tier, CpuInfo, LoadError, LoadedArtifact, Tier, WeightError, Weights,
};
use accy_ir::{DType, Type};
use common::*;

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<LoadedArtifact>();
    assert_send_sync::<Weights>();
};

/// An artifact filling output 0 (4 bytes) with zeros: valid, and needs no code.
fn fill_artifact() -> accy_artifact::Artifact {
    let mut a = artifact();
    let out = slot(&mut a, SlotRole::Output(0), DType::U8, 4);
    a.launch.push(Command::Fill {
        dst: whole(out, 4),
        pattern: 0,
        width: 1,
    });
    a
}

#[test]
fn refuses_another_architecture_naming_both() {
    let host = host();
    let host_arch = host.arch().unwrap();
    let other = Arch::ALL.into_iter().find(|&a| a != host_arch).unwrap();
    let mut a = fill_artifact();
    a.target = TargetSpec::new(other, FeatureSet::EMPTY);
    let err = load(&a, &host).unwrap_err();
    assert_eq!(
        err,
        LoadError::ArchMismatch {
            artifact: other,
            host: Some(host_arch)
        }
    );
    let text = err.to_string();
    assert!(
        text.contains(other.name()) && text.contains(host_arch.name()),
        "{text}"
    );
}

#[test]
fn refuses_features_the_host_cannot_use_naming_them() {
    // Masked to the baseline tier, the host has no optional feature at all, whatever it is.
    let baseline = CpuInfo::detect_with_max_tier(Tier::Baseline);
    let arch = baseline.arch().unwrap();
    let above: Vec<CpuFeature> = CpuFeature::ALL
        .iter()
        .copied()
        .filter(|&f| f.arch() == arch && feature_tier(f) > Tier::Baseline)
        .take(2)
        .collect();
    let needed = FeatureSet::of(&above).union(baseline.features());
    let mut a = fill_artifact();
    a.target = TargetSpec::new(arch, needed);
    let err = load(&a, &baseline).unwrap_err();
    let LoadError::MissingFeatures {
        target,
        missing,
        host,
        tier,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!(*target, a.target);
    assert_eq!(*missing, FeatureSet::of(&above));
    assert_eq!(*host, baseline.features());
    assert_eq!(*tier, Tier::Baseline);
    let text = err.to_string();
    for f in &above {
        assert!(text.contains(f.name()), "{text}");
    }
    // The same artifact without the extra features loads.
    a.target.features = baseline.features();
    assert!(load(&a, &baseline).is_ok());
}

#[test]
fn refuses_an_invalid_plan_with_the_validator_error() {
    let mut a = fill_artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, 4);
    a.launch.push(Command::Fill {
        dst: whole(input, 4),
        pattern: 1,
        width: 1,
    });
    let err = load(&a, &host()).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::Invalid(ArtifactError::WriteToReadOnly {
                command: 1,
                slot: SlotId(1),
                kind: SlotKind::Input,
                ..
            })
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("invalid artifact: command 1"),
        "{err}"
    );

    // A region past its slot's end.
    let mut b = fill_artifact();
    b.launch.commands[0] = Command::Fill {
        dst: Region::new(SlotId(0), 2, 4),
        pattern: 0,
        width: 1,
    };
    assert!(matches!(
        load(&b, &host()),
        Err(LoadError::Invalid(ArtifactError::RegionOutOfBounds { .. }))
    ));
}

#[test]
fn weights_are_bound_by_name_shared_and_counted_once() {
    let mut a = fill_artifact();
    let w = slot(&mut a, SlotRole::Weight("w.q".into()), DType::F32, 2);
    let out = slot(&mut a, SlotRole::Output(1), DType::F32, 2);
    a.launch.push(Command::Copy {
        src: whole(w, 8),
        dst: whole(out, 8),
    });
    let host = host();

    // No weights given.
    assert_eq!(
        load(&a, &host).unwrap_err(),
        LoadError::MissingWeight {
            slot: w,
            name: "w.q".into(),
            available: 0
        }
    );
    // Wrong size.
    let short = Weights::new(&[("w.q", &[0; 4])]).unwrap();
    let err = load_with_weights(&a, &host, &short).unwrap_err();
    assert_eq!(
        err,
        LoadError::WeightSize {
            slot: w,
            name: "w.q".into(),
            expected: 8,
            actual: 4
        }
    );
    assert!(err.to_string().contains("4 bytes") && err.to_string().contains("exactly 8"));

    // Right size, plus an unused weight: loads, and two artifacts share one copy.
    let values = f32_bytes(&[1.5, -2.0]);
    let weights = Weights::new(&[("unused", &[7; 3]), ("w.q", &values)]).unwrap();
    let first = load_with_weights(&a, &host, &weights).unwrap();
    let second = load_with_weights(&a, &host, &weights).unwrap();
    assert!(first.weights().shares_memory_with(&weights));
    assert!(second.weights().shares_memory_with(first.weights()));
    assert_eq!(
        first.weights().get("w.q").unwrap().as_ptr(),
        second.weights().get("w.q").unwrap().as_ptr()
    );
    assert_eq!(weights.weight_bytes(), 11);

    // The run copies the weight's bytes into output 1.
    let mut out0 = [9u8; 4];
    let mut out1 = guarded(8, 4);
    let mut scratch = accy_executable::Scratch::new();
    second
        .invoke(&[], &mut [&mut out0, out1.as_mut_slice()], &mut scratch)
        .unwrap();
    assert_eq!(out0, [0; 4]);
    assert_eq!(out1.as_slice(), &values[..]);

    // A weight slot asking for more alignment than weights get.
    let mut big = a.clone();
    big.plan.slots[w.index()].alignment = 128;
    assert_eq!(
        load_with_weights(&big, &host, &weights).unwrap_err(),
        LoadError::WeightAlignment {
            slot: w,
            name: "w.q".into(),
            required: 128,
            provided: Weights::ALIGNMENT
        }
    );
    assert!(matches!(
        Weights::new(&[("a", &[]), ("a", &[])]),
        Err(WeightError::DuplicateName { .. })
    ));
}

#[test]
fn constants_are_copied_aligned_and_read_by_the_plan() {
    let mut a = fill_artifact();
    // Two constant slots; the second needs 16-byte alignment.
    a.constants = (0u8..48).collect();
    let c0 = a
        .plan
        .add(Slot {
            role: SlotRole::Constant { offset: 3 },
            byte_size: 5,
            alignment: 1,
            ty: None,
        })
        .unwrap();
    let c1 = a
        .plan
        .add(Slot {
            role: SlotRole::Constant { offset: 32 },
            byte_size: 16,
            alignment: 16,
            ty: None,
        })
        .unwrap();
    let out = slot(&mut a, SlotRole::Output(1), DType::U8, 21);
    a.launch.push(Command::Copy {
        src: whole(c0, 5),
        dst: Region::new(out, 0, 5),
    });
    a.launch.push(Command::Copy {
        src: whole(c1, 16),
        dst: Region::new(out, 5, 16),
    });
    let loaded = load(&a, &host()).unwrap();
    assert_eq!(loaded.constants(), &a.constants[..]);
    assert_eq!(loaded.constants_ptr() as usize % 16, 0);
    assert_eq!(loaded.summary().constants_alignment, 16);
    let mut out0 = [1u8; 4];
    let mut out1 = [0u8; 21];
    let mut scratch = accy_executable::Scratch::new();
    loaded
        .invoke(&[], &mut [&mut out0, &mut out1], &mut scratch)
        .unwrap();
    let want: Vec<u8> = (3u8..8).chain(32..48).collect();
    assert_eq!(&out1[..], &want[..]);
}

#[test]
fn loaded_artifact_reports_its_plan_and_code() {
    let a = copy_artifact(10, 4);
    let host = host();
    let loaded = load(&a, &host).unwrap();
    assert_eq!(loaded.target(), a.target);
    assert_eq!(loaded.plan(), &a.plan);
    assert_eq!(loaded.launch_plan(), &a.launch);
    assert_eq!(loaded.kernels(), &a.kernels[..]);
    assert_eq!(loaded.input_count(), 1);
    assert_eq!(loaded.output_count(), 1);
    assert_eq!(loaded.summary(), &a.validate().unwrap());
    let code = loaded.code().unwrap();
    assert_eq!(code.code(), &a.code[..]);
    assert_eq!(loaded.scratch_size(), 0);
    assert!(loaded.scratch_alignment() >= host.preferred_buffer_alignment());
    // No kernels, no code mapping.
    assert!(load(&fill_artifact(), &host).unwrap().code().is_none());
}

#[test]
fn scratch_layout_comes_from_the_plan() {
    let mut a = fill_artifact();
    let s0 = a.plan.add(Slot::scratch(3, 1)).unwrap();
    let s1 = a
        .plan
        .add(Slot::typed(SlotRole::Scratch, Type::new(DType::F64, &[2]), 8).unwrap())
        .unwrap();
    a.launch.push(Command::Fill {
        dst: whole(s0, 3),
        pattern: 0xab,
        width: 1,
    });
    a.launch.push(Command::Copy {
        src: Region::new(s0, 0, 3),
        dst: Region::new(s1, 8, 3),
    });
    let out1 = slot(&mut a, SlotRole::Output(1), DType::U8, 3);
    a.launch.push(Command::Copy {
        src: Region::new(s1, 8, 3),
        dst: whole(out1, 3),
    });
    let loaded = load(&a, &host()).unwrap();
    assert_eq!(loaded.scratch_size(), 24);
    assert_eq!(loaded.summary().scratch.offsets, vec![(s0, 0), (s1, 8)]);
    let mut scratch = accy_executable::Scratch::for_artifact(&loaded, 1).unwrap();
    assert!(scratch.capacity() >= 24);
    assert_eq!(scratch.as_ptr() as usize % loaded.scratch_alignment(), 0);
    let mut out = [5u8; 4];
    let mut out1 = [0u8; 3];
    loaded
        .invoke(&[], &mut [&mut out, &mut out1], &mut scratch)
        .unwrap();
    assert_eq!(out, [0; 4]);
    assert_eq!(out1, [0xab; 3]);
}
