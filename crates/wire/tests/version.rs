//! Version and structure rules of `docs/wire-format.md` §3 and §7: which surprises are
//! skipped, which are UnsupportedVersion and which are InvalidProgram.

mod common;

use accy_wire::{decode, encode, DecodeError, VERSION_MINOR};
use common::{assemble, split, Section};

const NEWER: u16 = VERSION_MINOR + 1;

fn example_sections() -> Vec<Section> {
    split(&encode(&common::doc_example()))
}

fn unsupported(r: Result<accy_ir::Program, DecodeError>) -> (u16, u16, usize, String) {
    match r {
        Err(DecodeError::UnsupportedVersion {
            major,
            minor,
            offset,
            reason,
        }) => (major, minor, offset, reason),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

fn invalid(r: Result<accy_ir::Program, DecodeError>) -> (usize, String) {
    match r {
        Err(DecodeError::InvalidProgram { offset, reason }) => (offset, reason),
        other => panic!("expected InvalidProgram, got {other:?}"),
    }
}

/// The example with byte `at` of section `index`'s payload replaced by `byte`.
fn patched(minor: u16, index: usize, at: usize, byte: u8) -> Vec<u8> {
    let mut s = example_sections();
    s[index].payload[at] = byte;
    assemble(1, minor, &s)
}

#[test]
fn another_major_version_is_unsupported() {
    for major in [0u16, 2, 0xffff] {
        let (got_major, minor, offset, reason) =
            unsupported(decode(&assemble(major, 0, &example_sections())));
        assert_eq!((got_major, minor, offset), (major, 0, 8));
        assert!(
            reason.contains(&format!("major version {major}")),
            "{reason}"
        );
    }
    let msg = decode(&assemble(2, 3, &example_sections()))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("2.3") && msg.contains("1.0"), "{msg}");
}

#[test]
fn newer_minor_skips_unknown_optional_sections() {
    let extra = |id| Section {
        id,
        flags: 0,
        payload: vec![1, 2, 3, 4, 5],
    };
    let mut s = example_sections();
    s.insert(0, extra(0x0040));
    s.insert(2, extra(0x7fff));
    s.push(Section {
        id: 0x0041,
        flags: 0,
        payload: vec![],
    });
    assert_eq!(
        decode(&assemble(1, NEWER, &s)).unwrap(),
        common::doc_example()
    );
    // The same file claiming our own minor version cannot contain those sections.
    let (offset, reason) = invalid(decode(&assemble(1, VERSION_MINOR, &s)));
    assert_eq!(offset, 16);
    assert!(reason.contains("unknown id 0x0040"), "{reason}");
}

#[test]
fn unknown_required_sections_are_unsupported_in_any_minor() {
    for minor in [VERSION_MINOR, NEWER] {
        let mut s = example_sections();
        s.insert(
            1,
            Section {
                id: 0x0123,
                flags: 1,
                payload: vec![0; 3],
            },
        );
        let at = 16 + 12 + s[0].payload.len();
        let (major, got_minor, offset, reason) = unsupported(decode(&assemble(1, minor, &s)));
        assert_eq!((major, got_minor, offset), (1, minor, at));
        assert!(
            reason.contains("0x0123") && reason.contains("required"),
            "{reason}"
        );
    }
}

#[test]
fn unknown_codes_depend_on_the_minor_version() {
    // Instructions payload: count (8 bytes), then instruction %2's opcode.
    let opcode_at = 0x6e;
    let (offset, reason) = invalid(decode(&patched(VERSION_MINOR, 1, 8, 0x7f)));
    assert_eq!(offset, opcode_at);
    assert!(
        reason.contains("instruction 0") && reason.contains("opcode code 0x7f"),
        "{reason}"
    );
    let (_, minor, offset, reason) = unsupported(decode(&patched(NEWER, 1, 8, 0x7f)));
    assert_eq!((minor, offset), (NEWER, opcode_at));
    assert!(reason.contains("0x7f"), "{reason}");
    assert!(matches!(
        decode(&patched(VERSION_MINOR, 1, 8, 0)),
        Err(DecodeError::InvalidProgram { offset: 0x6e, .. })
    ));

    // Parameter %0's dtype: count (8), kind (1), name length (8), name (1).
    let dtype_at = 18;
    let (offset, _) = invalid(decode(&patched(VERSION_MINOR, 0, dtype_at, 0x09)));
    assert_eq!(offset, 0x2e);
    unsupported(decode(&patched(NEWER, 0, dtype_at, 0x09)));
    let (_, reason) = invalid(decode(&patched(VERSION_MINOR, 0, dtype_at, 0x07)));
    assert!(reason.contains("reserved for f16"), "{reason}");
    unsupported(decode(&patched(NEWER, 0, dtype_at, 0x08)));

    // Parameter %0's kind, instruction %3's binary function code.
    invalid(decode(&patched(VERSION_MINOR, 0, 8, 0x03)));
    unsupported(decode(&patched(NEWER, 0, 8, 0x03)));
    let sub_op_at = 0xab - 0x66;
    let (offset, reason) = invalid(decode(&patched(VERSION_MINOR, 1, sub_op_at, 0x55)));
    assert_eq!(offset, 0xab);
    assert!(reason.contains("instruction 1: `binary`"), "{reason}");
    unsupported(decode(&patched(NEWER, 1, sub_op_at, 0x55)));

    // Output flags: only bit 0 is defined.
    let flags_at = 8 + 4;
    invalid(decode(&patched(VERSION_MINOR, 2, flags_at, 0x03)));
    unsupported(decode(&patched(NEWER, 2, flags_at, 0x03)));
}

#[test]
fn reserved_section_flags_and_section_tails_are_skipped_only_from_newer_minors() {
    let mut s = example_sections();
    s[1].flags = 0x8001;
    let (offset, _) = invalid(decode(&assemble(1, VERSION_MINOR, &s)));
    assert_eq!(offset, 0x5c);
    assert_eq!(
        decode(&assemble(1, NEWER, &s)).unwrap(),
        common::doc_example()
    );

    let mut s = example_sections();
    s[2].payload.extend([9, 9, 9]);
    s[0].payload.push(0);
    let (offset, reason) = invalid(decode(&assemble(1, VERSION_MINOR, &s)));
    assert_eq!(offset, 16 + 12 + 62);
    assert!(
        reason.contains("1 unread bytes at the end of section `params`"),
        "{reason}"
    );
    assert_eq!(
        decode(&assemble(1, NEWER, &s)).unwrap(),
        common::doc_example()
    );
}

#[test]
fn trailing_bytes_after_the_last_section_are_invalid() {
    for minor in [VERSION_MINOR, NEWER] {
        let mut bytes = assemble(1, minor, &example_sections());
        let end = bytes.len();
        bytes.push(0);
        let (offset, reason) = invalid(decode(&bytes));
        assert_eq!(offset, end);
        assert!(reason.contains("trailing"), "{reason}");
    }
}

#[test]
fn known_sections_appear_once_in_order() {
    let s = example_sections();
    let swapped = [s[1].clone(), s[0].clone(), s[2].clone()];
    let (_, reason) = invalid(decode(&assemble(1, 0, &swapped)));
    assert!(reason.contains("out of order"), "{reason}");
    let twice = [s[0].clone(), s[1].clone(), s[1].clone(), s[2].clone()];
    let (offset, reason) = invalid(decode(&assemble(1, 0, &twice)));
    assert_eq!(offset, 16 + 24 + s[0].payload.len() + s[1].payload.len());
    assert!(reason.contains("`instructions` appears twice"), "{reason}");
    let missing = [s[0].clone(), s[2].clone()];
    let bytes = assemble(1, 0, &missing);
    let (offset, reason) = invalid(decode(&bytes));
    assert_eq!(offset, bytes.len());
    assert!(reason.contains("`instructions` is missing"), "{reason}");
    let (_, reason) = invalid(decode(&assemble(1, 0, &[])));
    assert!(reason.contains("missing"), "{reason}");
}

#[test]
fn section_counts_and_lengths_beyond_the_input_are_invalid() {
    let mut bytes = encode(&common::doc_example());
    bytes[12] = 200;
    let (offset, reason) = invalid(decode(&bytes));
    assert_eq!(offset, 12);
    assert!(reason.contains("section count 200"), "{reason}");
    let mut bytes = encode(&common::doc_example());
    bytes[0x14..0x1c].copy_from_slice(&u64::MAX.to_le_bytes());
    let (offset, reason) = invalid(decode(&bytes));
    assert_eq!(offset, 0x1c);
    assert!(
        reason.contains("claims 18446744073709551615 bytes"),
        "{reason}"
    );
}

#[test]
fn wrong_files_get_helpful_messages() {
    let reason = |bytes: &[u8]| invalid(decode(bytes)).1;
    assert!(reason(b"").contains("empty input"));
    assert!(reason(b"program {\n  %0 = input x: f32[2]\n}\n").contains("accy text"));
    assert!(reason(b"\x93NUMPY\x01\x00\x76\x00").contains(".npy"));
    assert!(reason(b"\x7fELF\x02\x01\x01\x00").contains("ELF"));
    let header = encode(&common::doc_example());
    for n in 1..16 {
        let (offset, why) = invalid(decode(&header[..n]));
        assert!(why.contains("truncated header"), "{n}: {why}");
        assert_eq!(offset, n);
    }
    let mut crlf = header.clone();
    crlf.remove(5);
    assert!(reason(&crlf).contains("text mode"));
    let msg = decode(b"GGUF....").unwrap_err().to_string();
    assert!(
        msg.starts_with("invalid wire bytes at byte 0: this looks like a GGUF"),
        "{msg}"
    );
}

#[test]
fn names_must_be_utf8_and_bool_payloads_zero_or_one() {
    // Parameter %0's name byte.
    let (offset, reason) = invalid(decode(&patched(VERSION_MINOR, 0, 17, 0xff)));
    assert_eq!(offset, 0x2d);
    assert!(
        reason.contains("parameter 0") && reason.contains("UTF-8"),
        "{reason}"
    );

    let mut b = accy_ir::Builder::new();
    let c = b
        .constant(accy_ir::Tensor::bools(&[3], vec![false, true, false]))
        .unwrap();
    b.output(c).unwrap();
    let p = b.finish().unwrap();
    let mut bytes = encode(&p);
    // The last payload byte comes just before the outputs section (12 + 8 + 5 bytes).
    let last = bytes.len() - 25 - 1;
    assert_eq!(bytes[last], 0);
    bytes[last] = 2;
    let (offset, reason) = invalid(decode(&bytes));
    assert_eq!(offset, last);
    assert!(reason.contains("bool element 2 is 0x02"), "{reason}");
}
