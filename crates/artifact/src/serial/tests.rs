use accy_ir::{DType, Type};

use super::write::checksum;
use super::*;
use crate::{
    Access, Binding, Blocking, Command, CpuFeature, DerivedSource, FeatureSet, KernelEntry, Region,
    Slot, SlotId, SlotRole, TargetSpec,
};

/// A small valid artifact using every slot role and command kind.
fn sample() -> Artifact {
    let mut a = Artifact::new(TargetSpec::new(
        Arch::X86_64,
        FeatureSet::of(&[CpuFeature::Avx2, CpuFeature::Fma]),
    ));
    a.blocking = Blocking {
        l1d: 48 << 10,
        l2: 2 << 20,
        llc: 32 << 20,
        skip_scattered_prefetch: false,
    };
    a.code = vec![0x31, 0xc0, 0xc3, 0x90, 0x31, 0xc0, 0xc3];
    a.kernels = vec![
        KernelEntry {
            name: "k0".into(),
            offset: 0,
            len: 3,
            worker_scratch: 0,
        },
        KernelEntry {
            name: "pack_w".into(),
            offset: 4,
            len: 3,
            worker_scratch: 64,
        },
    ];
    a.constants = vec![0, 0, 0x80, 0x3f, 0, 0, 0, 0x40];
    let f4 = Type::new(DType::F32, &[4]);
    let f2 = Type::new(DType::F32, &[2]);
    let p = &mut a.plan;
    let x = p
        .add(Slot::typed(SlotRole::Input(0), f4.clone(), 4).unwrap())
        .unwrap();
    let w = p
        .add(Slot::typed(SlotRole::Weight("w.q".into()), f4.clone(), 4).unwrap())
        .unwrap();
    let c = p
        .add(Slot::typed(SlotRole::Constant { offset: 0 }, f2, 4).unwrap())
        .unwrap();
    let d = p
        .add(Slot {
            role: SlotRole::Derived {
                source: DerivedSource::Weight("w.q".into()),
                layout: "f32 panels".into(),
            },
            byte_size: 16,
            alignment: 16,
            ty: None,
        })
        .unwrap();
    let s = p.add(Slot::scratch(16, 16)).unwrap();
    let y = p
        .add(Slot::typed(SlotRole::Output(0), f4, 4).unwrap())
        .unwrap();
    a.setup.push(Command::Dispatch {
        kernel: 1,
        bindings: vec![
            Binding::new(Region::new(w, 0, 16), Access::Read),
            Binding::new(Region::new(d, 0, 16), Access::Write),
        ],
        scalars: vec![],
        workgroups: 1,
        chained: false,
    });
    a.launch.push(Command::Fill {
        dst: Region::new(s, 0, 16),
        pattern: 0x3f80_0000,
        width: 4,
    });
    a.launch.push(Command::Dispatch {
        kernel: 0,
        bindings: vec![
            Binding::new(Region::new(x, 0, 16), Access::Read),
            Binding::new(Region::new(d, 0, 16), Access::Read),
            Binding::new(Region::new(c, 0, 8), Access::Read),
            Binding::new(Region::new(s, 0, 16), Access::ReadWrite),
        ],
        scalars: vec![4, u64::MAX],
        workgroups: 2,
        chained: false,
    });
    a.launch.push(Command::Copy {
        src: Region::new(s, 0, 16),
        dst: Region::new(y, 0, 16),
    });
    a.validate().unwrap();
    a
}

/// Stores a fresh checksum, so a test can reach the checks after it.
fn reseal(bytes: &mut [u8]) {
    let sum = checksum(bytes);
    bytes[CHECKSUM_AT..CHECKSUM_AT + 4].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn round_trip_is_exact_and_canonical() {
    let a = sample();
    let bytes = a.to_bytes().unwrap();
    assert!(has_magic(&bytes));
    let back = Artifact::from_bytes(&bytes).unwrap();
    assert_eq!(back, a);
    assert_eq!(back.to_bytes().unwrap(), bytes);
    // An empty artifact (no kernels, no slots) is valid too.
    let empty = Artifact::new(TargetSpec::new(Arch::Aarch64, FeatureSet::EMPTY));
    let bytes = empty.to_bytes().unwrap();
    assert_eq!(Artifact::from_bytes(&bytes).unwrap(), empty);
}

/// A chained dispatch has a tag of its own and comes back chained.
#[test]
fn chained_dispatches_round_trip() {
    let mut a = sample();
    let Some(Command::Dispatch {
        kernel,
        bindings,
        scalars,
        workgroups,
        ..
    }) = a.launch.commands.get(1).cloned()
    else {
        panic!("the sample's second command is a dispatch");
    };
    a.launch.commands.insert(
        1,
        Command::Dispatch {
            kernel,
            bindings,
            scalars,
            workgroups,
            chained: true,
        },
    );
    a.validate().unwrap();
    let bytes = a.to_bytes().unwrap();
    let back = Artifact::from_bytes(&bytes).unwrap();
    assert_eq!(back, a);
    assert!(matches!(
        back.launch.commands[1],
        Command::Dispatch { chained: true, .. }
    ));
    assert!(matches!(
        back.launch.commands[2],
        Command::Dispatch { chained: false, .. }
    ));
}

#[test]
fn layout_pins_header_fields_and_aligned_sections() {
    let a = sample();
    let bytes = a.to_bytes().unwrap();
    assert_eq!(&bytes[..8], b"\x89ACCYA\r\n");
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    assert_eq!(u32_at(8), FORMAT_VERSION);
    assert_eq!(u32_at(12), crate::abi::ABI_VERSION);
    assert_eq!(u32_at(16), 1, "x86-64 is architecture 1");
    assert_eq!(u32_at(20), 6);
    assert_eq!(u64_at(24), (1 << 7) | (1 << 8), "avx2 and fma bits");
    assert_eq!(u64_at(32), 48 << 10);
    assert_eq!(u64_at(40), 2 << 20);
    assert_eq!(u64_at(48), bytes.len() as u64);
    assert_eq!(u64_at(64), 32 << 20, "the last-level cache");
    assert_eq!(
        u32_at(56),
        crc32fast::hash(&[&bytes[..56], &bytes[60..]].concat())
    );
    for (i, kind) in SectionKind::ALL.into_iter().enumerate() {
        let entry = HEADER_LEN + ENTRY_LEN * i;
        assert_eq!(u32_at(entry), kind.code());
        let (offset, len) = (u64_at(entry + 8) as usize, u64_at(entry + 16) as usize);
        assert_eq!(offset % SECTION_ALIGN, 0, "{kind} is aligned");
        if kind == SectionKind::Code {
            assert_eq!(&bytes[offset..offset + len], &a.code[..]);
        }
        if kind == SectionKind::Constants {
            assert_eq!(&bytes[offset..offset + len], &a.constants[..]);
        }
    }
}

#[test]
fn every_prefix_is_truncated() {
    let bytes = sample().to_bytes().unwrap();
    for len in 0..bytes.len() {
        match Artifact::from_bytes(&bytes[..len]) {
            Err(SerialError::Truncated { available, .. }) => {
                assert_eq!(available, len as u64);
            }
            other => panic!("prefix of {len} bytes: {other:?}"),
        }
    }
}

#[test]
fn every_flipped_byte_is_refused() {
    let bytes = sample().to_bytes().unwrap();
    for at in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[at] ^= flip;
            let err = Artifact::from_bytes(&bad).unwrap_err();
            let expected_kind = match at {
                0..8 => matches!(err, SerialError::BadMagic { .. }),
                8..12 => matches!(err, SerialError::UnsupportedVersion { .. }),
                48..56 => matches!(
                    err,
                    SerialError::Truncated { .. } | SerialError::LengthMismatch { .. }
                ),
                _ => matches!(err, SerialError::ChecksumMismatch { .. }),
            };
            assert!(expected_kind, "byte {at} ^ {flip:#x}: {err}");
        }
    }
}

#[test]
fn a_newer_version_is_unsupported_whatever_follows() {
    let mut bytes = sample().to_bytes().unwrap();
    bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
    let err = Artifact::from_bytes(&bytes).unwrap_err();
    assert_eq!(
        err,
        SerialError::UnsupportedVersion {
            found: FORMAT_VERSION + 1,
            supported: FORMAT_VERSION
        }
    );
    let newer = format!("version {}", FORMAT_VERSION + 1);
    assert!(err.to_string().contains(&newer), "{err}");
    // Version 1 (a 64-byte header without the last-level cache) is refused the same way.
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    assert!(matches!(
        Artifact::from_bytes(&bytes),
        Err(SerialError::UnsupportedVersion { found: 1, .. })
    ));
    // A newer file may have any layout after the version: only twelve bytes are needed.
    let mut short = MAGIC.to_vec();
    short.extend_from_slice(&7u32.to_le_bytes());
    assert!(matches!(
        Artifact::from_bytes(&short),
        Err(SerialError::UnsupportedVersion { found: 7, .. })
    ));
}

#[test]
fn bad_magic_says_what_the_input_looks_like() {
    let wire = b"\x89ACCY\r\n\x1a\x01\x00\x00\x00";
    match Artifact::from_bytes(wire).unwrap_err() {
        SerialError::BadMagic { looks_like, .. } => {
            assert!(looks_like.unwrap().contains("wire bytes"));
        }
        other => panic!("{other:?}"),
    }
    let err = Artifact::from_bytes(b"hello world").unwrap_err();
    assert!(matches!(
        err,
        SerialError::BadMagic {
            looks_like: None,
            ..
        }
    ));
    assert!(err.to_string().contains("68 65 6c 6c 6f"), "{err}");
}

#[test]
fn trailing_bytes_are_refused() {
    let mut bytes = sample().to_bytes().unwrap();
    bytes.push(0);
    assert!(matches!(
        Artifact::from_bytes(&bytes),
        Err(SerialError::LengthMismatch { .. })
    ));
}

/// The section-table entry of `kind`: (offset, len) fields' positions.
fn entry(kind: SectionKind) -> usize {
    HEADER_LEN + ENTRY_LEN * SectionKind::ALL.iter().position(|k| *k == kind).unwrap()
}

#[test]
fn resealed_damage_is_caught_by_the_structural_checks() {
    let good = sample().to_bytes().unwrap();
    let section_at = |kind| {
        let e = entry(kind);
        u64::from_le_bytes(good[e + 8..e + 16].try_into().unwrap()) as usize
    };

    // Unknown architecture, unknown feature bit, an undefined header flag (bit 2).
    let cases: [(usize, &[u8]); 3] = [(16, &[9]), (24 + 3, &[0x80]), (60, &[4])];
    for (at, patch) in cases {
        let mut bad = good.clone();
        bad[at..at + patch.len()].copy_from_slice(patch);
        reseal(&mut bad);
        assert!(
            matches!(
                Artifact::from_bytes(&bad),
                Err(SerialError::BadHeader { .. })
            ),
            "patch at {at}"
        );
    }

    // A misplaced section.
    let mut bad = good.clone();
    let e = entry(SectionKind::Plan) + 8;
    bad[e] = bad[e].wrapping_add(16);
    reseal(&mut bad);
    assert!(matches!(
        Artifact::from_bytes(&bad),
        Err(SerialError::BadSectionTable { .. })
    ));

    // A slot count of u32::MAX: refused before anything is allocated.
    let mut bad = good.clone();
    let at = section_at(SectionKind::Plan);
    bad[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    reseal(&mut bad);
    match Artifact::from_bytes(&bad) {
        Err(SerialError::BadSection {
            section: SectionKind::Plan,
            offset,
            reason,
        }) => {
            assert_eq!(offset, at as u64);
            assert!(reason.contains("4294967295 entries"), "{reason}");
        }
        other => panic!("{other:?}"),
    }

    // An unknown command tag in the launch section.
    let mut bad = good.clone();
    let at = section_at(SectionKind::Launch) + 4;
    bad[at] = 9;
    reseal(&mut bad);
    match Artifact::from_bytes(&bad) {
        Err(SerialError::BadSection {
            section: SectionKind::Launch,
            offset,
            ..
        }) => assert_eq!(offset, at as u64),
        other => panic!("{other:?}"),
    }

    // A kernel name that is not UTF-8.
    let mut bad = good.clone();
    let at = section_at(SectionKind::Kernels) + 8;
    bad[at] = 0xff;
    reseal(&mut bad);
    assert!(matches!(
        Artifact::from_bytes(&bad),
        Err(SerialError::BadSection {
            section: SectionKind::Kernels,
            ..
        })
    ));
}

#[test]
fn well_formed_but_invalid_artifacts_fail_validation() {
    let mut a = sample();
    // Kernel 0 now runs past the end of the code.
    a.kernels[0].len = 100;
    let bytes = a.to_bytes().unwrap();
    assert!(matches!(
        Artifact::from_bytes(&bytes),
        Err(SerialError::Invalid(
            ArtifactError::KernelOutOfBounds { .. }
        ))
    ));
}

#[test]
fn dtype_and_arch_codes_are_pinned() {
    // Serialized artifacts depend on these numbers: changing one is a format break.
    assert_eq!(write::dtype_code(DType::F32), Some(0));
    assert_eq!(write::dtype_code(DType::Bool), Some(5));
    for (i, d) in DType::ALL.into_iter().enumerate() {
        assert_eq!(write::dtype_code(d), Some(i as u8), "{d}");
    }
    assert_eq!(arch_code(Arch::X86_64), 1);
    assert_eq!(arch_code(Arch::Aarch64), 2);
    for arch in Arch::ALL {
        assert_eq!(arch_from_code(arch_code(arch)), Some(arch));
    }
    assert_eq!(arch_from_code(0), None);
    let ids: Vec<u32> = SectionKind::ALL.iter().map(|k| k.code()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn random_resealed_mutations_never_panic_and_accepted_ones_write_back_identically() {
    // Deterministic pseudo-random mutations of resealed files: each must give a result, never
    // a panic, and an accepted one must write back to the same bytes.
    let good = sample().to_bytes().unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut accepted = 0;
    for _ in 0..4000 {
        let mut bad = good.clone();
        for _ in 0..1 + next() % 4 {
            let at = HEADER_LEN + (next() as usize) % (bad.len() - HEADER_LEN);
            bad[at] = next() as u8;
        }
        reseal(&mut bad);
        if let Ok(a) = Artifact::from_bytes(&bad) {
            accepted += 1;
            assert_eq!(a.to_bytes().unwrap(), bad);
        }
    }
    // Most mutations hit a structure; some land in code or scalars and stay valid.
    assert!(accepted < 4000);
}

#[test]
fn a_derived_constant_source_round_trips() {
    // Reading without validation: this test is about the encoding of every role variant.
    let mut a = sample();
    a.plan.slots[3].role = SlotRole::Derived {
        source: DerivedSource::Constant(SlotId(2)),
        layout: "copy".into(),
    };
    a.plan.slots[4].ty = Some(Type::new(DType::Bool, &[2, 2, 2, 2, 1, 1, 1, 1]));
    let bytes = a.to_bytes().unwrap();
    assert_eq!(read::read(&bytes).unwrap(), a);
}

#[test]
fn the_flush_subnormals_flag_round_trips_in_header_bit_0() {
    let mut a = sample();
    let plain = a.to_bytes().unwrap();
    assert_eq!(plain[60..64], [0, 0, 0, 0]);
    a.flush_subnormals = true;
    let bytes = a.to_bytes().unwrap();
    assert_eq!(bytes[60..64], [1, 0, 0, 0]);
    let back = Artifact::from_bytes(&bytes).unwrap();
    assert!(back.flush_subnormals);
    assert_eq!(back, a);
    assert!(!Artifact::from_bytes(&plain).unwrap().flush_subnormals);
}

#[test]
fn the_scattered_prefetch_flag_round_trips_in_header_bit_1() {
    let mut a = sample();
    let plain = a.to_bytes().unwrap();
    a.blocking.skip_scattered_prefetch = true;
    let bytes = a.to_bytes().unwrap();
    assert_eq!(bytes[60..64], [2, 0, 0, 0]);
    let back = Artifact::from_bytes(&bytes).unwrap();
    assert!(back.blocking.skip_scattered_prefetch);
    assert_eq!(back, a);
    assert!(
        !Artifact::from_bytes(&plain)
            .unwrap()
            .blocking
            .skip_scattered_prefetch
    );
    assert_eq!(
        a.blocking.to_string(),
        "l1d 48 KiB, l2 2048 KiB, llc 32768 KiB, tile fills prefetch only rows off a line"
    );
}
