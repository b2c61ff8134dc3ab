//! Rules on commands, regions and output coverage.

use super::*;

#[test]
fn dispatch_shape() {
    assert_eq!(
        err(|a| a.launch.push(dispatch(2, &[], 1))),
        ArtifactError::UnknownKernel {
            command: 5,
            kernel: 2,
            kernel_count: 2
        }
    );
    assert_eq!(
        err(|a| a.launch.push(dispatch(u32::MAX, &[], 1))),
        ArtifactError::UnknownKernel {
            command: 5,
            kernel: u32::MAX,
            kernel_count: 2
        }
    );
    assert_eq!(
        err(|a| a.launch.commands[1] = dispatch(1, &[], 0)),
        ArtifactError::NoWorkgroups {
            command: 1,
            kernel: 1
        }
    );
    let read_in = (r(IN, 0, 4), Access::Read);
    assert_eq!(
        err(|a| a.launch.push(dispatch(0, &[read_in; MAX_BINDINGS + 1], 1))),
        ArtifactError::TooManyBindings {
            command: 5,
            count: MAX_BINDINGS + 1,
            max: MAX_BINDINGS
        }
    );
    let mut a = valid();
    a.launch.push(dispatch(0, &[read_in; MAX_BINDINGS], 1));
    assert!(a.validate().is_ok());
    assert_eq!(
        err(|a| {
            if let Command::Dispatch { scalars, .. } = &mut a.launch.commands[0] {
                *scalars = vec![0; MAX_SCALARS + 1];
            }
        }),
        ArtifactError::TooManyScalars {
            command: 0,
            count: MAX_SCALARS + 1,
            max: MAX_SCALARS
        }
    );
}

/// A chained dispatch must be followed by a dispatch of as many workgroups.
#[test]
fn chains_link_dispatches_of_one_grid() {
    let chain = |a: &mut Artifact, first: u32, second: Option<u32>| {
        let mut first = dispatch(0, &[], first);
        if let Command::Dispatch { chained, .. } = &mut first {
            *chained = true;
        }
        a.launch.push(first);
        if let Some(workgroups) = second {
            a.launch.push(dispatch(1, &[], workgroups));
        }
    };
    let mut a = valid();
    chain(&mut a, 3, Some(3));
    assert!(a.validate().is_ok());
    assert_eq!(
        err(|a| chain(a, 3, Some(2))),
        ArtifactError::BrokenChain {
            command: 5,
            workgroups: 3
        }
    );
    // The last command cannot be chained on.
    assert_eq!(
        err(|a| chain(a, 3, None)),
        ArtifactError::BrokenChain {
            command: 5,
            workgroups: 3
        }
    );
    // Nor onto a fill.
    assert_eq!(
        err(|a| {
            chain(a, 3, None);
            a.launch.push(fill(r(TMP, 0, 24), 0, 4));
        }),
        ArtifactError::BrokenChain {
            command: 5,
            workgroups: 3
        }
    );
}

#[test]
fn fill_shape() {
    for width in [0, 3, 8] {
        assert_eq!(
            err(|a| a.launch.commands[4] = fill(r(TMP, 0, 24), 0, width)),
            ArtifactError::BadFillWidth { command: 4, width }
        );
    }
    for (pattern, width) in [(0x100, 1), (0x1_0000, 2)] {
        assert_eq!(
            err(|a| a.launch.commands[4] = fill(r(TMP, 0, 24), pattern, width)),
            ArtifactError::FillPatternTooWide {
                command: 4,
                pattern,
                width
            }
        );
    }
    for (offset, len) in [(2, 8), (4, 6)] {
        assert_eq!(
            err(|a| a.launch.commands[4] = fill(r(TMP, offset, len), 1, 4)),
            ArtifactError::MisalignedFill {
                command: 4,
                offset,
                len,
                width: 4
            }
        );
    }
    let mut a = valid();
    a.launch.commands[4] = fill(r(TMP, 4, 28), u32::MAX, 4);
    assert!(a.validate().is_ok());
}

#[test]
fn copy_shape() {
    assert_eq!(
        err(|a| {
            a.launch.commands[2] = Command::Copy {
                src: r(IN, 0, 16),
                dst: r(OUT1, 0, 12),
            }
        }),
        ArtifactError::CopyLengthMismatch {
            command: 2,
            src_len: 16,
            dst_len: 12
        }
    );
    assert_eq!(
        err(|a| {
            a.launch.push(Command::Copy {
                src: r(TMP, 0, 16),
                dst: r(TMP, 12, 16),
            })
        }),
        ArtifactError::CopyOverlap {
            command: 5,
            slot: TMP,
            src_offset: 0,
            dst_offset: 12,
            len: 16
        }
    );
    // Adjacent ranges of one slot do not overlap.
    let mut a = valid();
    a.launch.push(Command::Copy {
        src: r(TMP, 0, 16),
        dst: r(TMP, 16, 16),
    });
    assert!(a.validate().is_ok());
}

#[test]
fn regions_name_existing_slots() {
    assert_eq!(
        err(|a| a.launch.commands[1] = dispatch(1, &[(r(SlotId(9), 0, 4), Access::Read)], 1)),
        ArtifactError::UnknownSlot {
            command: 1,
            operand: Operand::Binding(0),
            slot: SlotId(9),
            slot_count: 6
        }
    );
}

#[test]
fn regions_lie_inside_their_slot() {
    assert_eq!(
        err(|a| {
            a.launch.commands[2] = Command::Copy {
                src: r(IN, 4, 16),
                dst: r(OUT1, 0, 16),
            }
        }),
        ArtifactError::RegionOutOfBounds {
            command: 2,
            operand: Operand::CopySrc,
            slot: IN,
            offset: 4,
            len: 16,
            slot_size: 16
        }
    );
    // offset + len overflows u64.
    assert_eq!(
        err(|a| a.launch.commands[4] = fill(r(TMP, 8, u64::MAX - 7), 0, 1)),
        ArtifactError::RegionOutOfBounds {
            command: 4,
            operand: Operand::FillDst,
            slot: TMP,
            offset: 8,
            len: u64::MAX - 7,
            slot_size: 32
        }
    );
    // An empty region at the very end is inside.
    let mut a = valid();
    a.launch.push(fill(r(TMP, 32, 0), 0, 1));
    assert!(a.validate().is_ok());
}

#[test]
fn nothing_writes_read_only_slots() {
    let write_to = |slot: SlotId, access| {
        err(move |a| {
            a.launch.push(dispatch(
                0,
                &[(r(IN, 0, 4), Access::Read), (r(slot, 0, 4), access)],
                1,
            ))
        })
    };
    for (slot, kind) in [
        (IN, SlotKind::Input),
        (W, SlotKind::Weight),
        (K, SlotKind::Constant),
    ] {
        for access in [Access::Write, Access::ReadWrite] {
            assert_eq!(
                write_to(slot, access),
                ArtifactError::WriteToReadOnly {
                    command: 5,
                    operand: Operand::Binding(1),
                    slot,
                    kind
                }
            );
        }
    }
    assert_eq!(
        err(|a| {
            a.launch.push(Command::Copy {
                src: r(TMP, 0, 16),
                dst: r(IN, 0, 16),
            })
        }),
        ArtifactError::WriteToReadOnly {
            command: 5,
            operand: Operand::CopyDst,
            slot: IN,
            kind: SlotKind::Input
        }
    );
    assert_eq!(
        err(|a| a.launch.push(fill(r(W, 0, 4), 0, 4))),
        ArtifactError::WriteToReadOnly {
            command: 5,
            operand: Operand::FillDst,
            slot: W,
            kind: SlotKind::Weight
        }
    );
}

#[test]
fn every_output_byte_is_written() {
    assert_eq!(
        err(|a| {
            a.launch.commands.remove(3);
            a.launch.commands.remove(2);
        }),
        ArtifactError::OutputNotWritten {
            output: 1,
            slot: OUT1,
            offset: 0,
            byte_size: 16
        }
    );
    // Two writes leaving a hole at bytes 8..12, found although the later write comes first.
    assert_eq!(
        err(|a| {
            a.launch.commands[1] = dispatch(
                1,
                &[
                    (r(OUT0, 12, 4), Access::Write),
                    (r(OUT0, 0, 8), Access::Write),
                ],
                1,
            )
        }),
        ArtifactError::OutputNotWritten {
            output: 0,
            slot: OUT0,
            offset: 8,
            byte_size: 16
        }
    );
    // A read-only binding does not count as writing.
    assert_eq!(
        err(|a| a.launch.commands[1] = dispatch(1, &[(r(OUT0, 0, 16), Access::Read)], 1)),
        ArtifactError::OutputNotWritten {
            output: 0,
            slot: OUT0,
            offset: 0,
            byte_size: 16
        }
    );
    // Overlapping and unordered writes that together cover the slot are fine, and a
    // zero-byte output needs no command.
    let mut a = valid();
    a.launch.commands[1] = dispatch(
        1,
        &[
            (r(OUT0, 6, 10), Access::Write),
            (r(OUT0, 0, 8), Access::ReadWrite),
        ],
        1,
    );
    a.plan
        .add(Slot::typed(SlotRole::Output(2), Type::new(DType::F32, &[0]), 4).unwrap());
    assert!(a.validate().is_ok());
}

#[test]
fn messages_carry_the_numbers() {
    let e = err(|a| {
        a.launch.commands[2] = Command::Copy {
            src: r(IN, 4, 16),
            dst: r(OUT1, 0, 16),
        }
    });
    assert_eq!(
        e.to_string(),
        "command 2 (copy src): region at offset 4 length 16 exceeds the 16 bytes of s0"
    );
    let e = err(|a| a.launch.push(fill(r(W, 0, 4), 0, 4)));
    assert_eq!(
        e.to_string(),
        "command 5 (fill dst) writes s1, a read-only weight slot"
    );
    let e = err(|a| a.target.arch = Arch::Aarch64);
    assert_eq!(
        e.to_string(),
        "target architecture aarch64 cannot have the features avx2+fma"
    );
}
