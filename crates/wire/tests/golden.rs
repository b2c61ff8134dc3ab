//! The golden file pins the bytes of the reference program, and the worked example in
//! `docs/wire-format.md` is checked against the encoder. `ACCY_BLESS=1 cargo test -p
//! accy-wire` rewrites the golden file after an intended format change.

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use accy_ir::{verify, Op};
use accy_wire::{decode, encode};

fn golden_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/reference.accyb")
}

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/wire-format.md")
}

#[test]
fn golden_file_pins_the_reference_encoding() {
    let bytes = encode(&common::reference_program());
    let path = golden_path();
    if std::env::var_os("ACCY_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, &bytes).unwrap();
    }
    let golden = std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with ACCY_BLESS=1 to create it)",
            path.display()
        )
    });
    if golden != bytes {
        let first = golden.iter().zip(&bytes).position(|(a, b)| a != b);
        panic!(
            "encoding changed: golden is {} bytes, encoder gives {}, first difference at {:?}; \
             if the format change is intended, bump the version as docs/wire-format.md says and \
             rerun with ACCY_BLESS=1",
            golden.len(),
            bytes.len(),
            first
        );
    }
    // Decoded in the same test, so a blessing run never reads a half-written file.
    let program = decode(&golden).unwrap();
    verify(&program).unwrap();
    assert_eq!(program, common::reference_program());
}

/// The reference program really covers every op variant, so the golden file pins every
/// opcode's layout.
#[test]
fn reference_program_uses_every_op_variant() {
    let kinds: BTreeSet<&str> = common::reference_program()
        .instructions
        .iter()
        .map(|inst| match &inst.op {
            Op::Unary { .. } => "unary",
            Op::Binary { .. } => "binary",
            other => other.mnemonic(),
        })
        .collect();
    let all = [
        "unary",
        "binary",
        "compare",
        "select",
        "convert",
        "constant",
        "iota",
        "broadcast",
        "reshape",
        "transpose",
        "slice",
        "concat",
        "pad",
        "reverse",
        "reduce",
        "dot",
        "gather",
    ];
    assert_eq!(kinds, all.into_iter().collect::<BTreeSet<_>>());
}

#[test]
fn small_programs_round_trip() {
    for p in common::small_programs() {
        let bytes = encode(&p);
        assert_eq!(decode(&bytes).unwrap(), p);
        assert_eq!(encode(&p), bytes, "encoding is deterministic");
    }
}

/// The bytes of the first ```hex block of the document (`#` starts a comment).
fn doc_example_bytes(doc: &str) -> Vec<u8> {
    let start = doc
        .find("```hex\n")
        .expect("docs/wire-format.md has a ```hex block")
        + 7;
    let len = doc[start..].find("```").unwrap();
    doc[start..start + len]
        .lines()
        .flat_map(|line| line.split('#').next().unwrap().split_whitespace())
        .map(|pair| u8::from_str_radix(pair, 16).unwrap_or_else(|_| panic!("bad hex `{pair}`")))
        .collect()
}

#[test]
fn documented_example_matches_the_encoder() {
    let doc = std::fs::read_to_string(doc_path()).unwrap();
    let documented = doc_example_bytes(&doc);
    let actual = encode(&common::doc_example());
    assert_eq!(
        documented,
        actual,
        "the worked example in docs/wire-format.md is stale; the encoder gives\n{}",
        actual
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert_eq!(decode(&documented).unwrap(), common::doc_example());
}
