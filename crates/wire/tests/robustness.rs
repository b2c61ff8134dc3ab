//! Decoding damaged or arbitrary bytes returns an error or a program, never panics, and any
//! program it returns can be encoded and decoded again unchanged.

mod common;

use accy_ir::gen::{arb_program_with, GenConfig};
use accy_ir::Program;
use accy_wire::{decode, encode, DecodeError, MAGIC};
use proptest::prelude::*;

/// Decodes `bytes` and checks what any result must satisfy.
fn check(bytes: &[u8]) -> Option<Program> {
    match decode(bytes) {
        Ok(p) => {
            let again = encode(&p);
            assert_eq!(
                decode(&again).as_ref(),
                Ok(&p),
                "re-encoding a decoded program"
            );
            Some(p)
        }
        Err(DecodeError::InvalidProgram { offset, .. })
        | Err(DecodeError::UnsupportedVersion { offset, .. }) => {
            assert!(
                offset <= bytes.len(),
                "offset {offset} beyond {}",
                bytes.len()
            );
            None
        }
        Err(e) => panic!("unexpected error variant {e:?}"),
    }
}

fn golden() -> Vec<u8> {
    encode(&common::reference_program())
}

#[test]
fn every_truncation_of_the_reference_is_an_error() {
    let bytes = golden();
    for n in 0..bytes.len() {
        match decode(&bytes[..n]) {
            Err(DecodeError::InvalidProgram { offset, .. }) => assert!(offset <= n),
            other => panic!("prefix of {n} bytes: {other:?}"),
        }
    }
}

#[test]
fn every_single_byte_change_of_the_reference_is_handled() {
    let bytes = golden();
    let mut decoded = 0;
    for i in 0..bytes.len() {
        for mask in [0x01, 0x80, 0xff] {
            let mut b = bytes.clone();
            b[i] ^= mask;
            decoded += usize::from(check(&b).is_some());
        }
    }
    // Many changes (operand ids, dims, payload bits) still decode: the decoder is
    // structural, and the verifier judges the rest.
    assert!(
        decoded > bytes.len(),
        "only {decoded} changed files decoded"
    );
}

#[test]
fn inserting_or_deleting_a_byte_is_handled() {
    let bytes = golden();
    for i in (0..=bytes.len()).step_by(3) {
        let mut b = bytes.clone();
        b.insert(i, 0x5a);
        check(&b);
        if i < bytes.len() {
            let mut b = bytes.clone();
            b.remove(i);
            check(&b);
        }
    }
}

fn small_config() -> GenConfig {
    GenConfig {
        max_instructions: 8,
        ..GenConfig::default()
    }
}

/// A damaged copy of some bytes: each edit flips, inserts, deletes or overwrites with a
/// 64-bit little-endian value (counts and lengths are u64, so that reaches them).
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Overwrite(usize, u64),
}

fn arb_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, m)| Edit::Flip(i, m)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), any::<u64>()).prop_map(|(i, v)| Edit::Overwrite(i, v)),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let n = bytes.len();
    match *edit {
        Edit::Flip(i, m) if n > 0 => bytes[i % n] ^= m,
        Edit::Insert(i, b) => bytes.insert(i % (n + 1), b),
        Edit::Delete(i) if n > 0 => {
            bytes.remove(i % n);
        }
        Edit::Overwrite(i, v) if n >= 8 => {
            let at = i % (n - 7);
            bytes[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn damaged_encodings_never_panic(
        program in arb_program_with(small_config()),
        edits in prop::collection::vec(arb_edit(), 1..4),
    ) {
        let mut bytes = encode(&program);
        for e in &edits {
            apply(&mut bytes, e);
        }
        check(&bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        prop_assert!(check(&bytes).is_none() || bytes.starts_with(&MAGIC));
    }

    /// Random bytes behind a valid header and section headers reach the section decoders.
    #[test]
    fn arbitrary_section_payloads_never_panic(
        minor in 0u16..3,
        payloads in prop::collection::vec(
            (0u16..6, 0u16..3, prop::collection::vec(any::<u8>(), 0..200)),
            0..5,
        ),
    ) {
        let sections: Vec<common::Section> = payloads
            .into_iter()
            .map(|(id, flags, payload)| common::Section { id, flags, payload })
            .collect();
        check(&common::assemble(1, minor, &sections));
    }
}
