//! The importer on damaged bytes, under plain `cargo test` (the `onnx` fuzz target runs the
//! same inputs for longer): truncations and byte mutations of valid models never panic, and
//! whatever is accepted is a verified program whose weights match their parameters.

use std::path::PathBuf;

use accy_onnx::{import, read_tensor, ErrorKind, ImportOptions};

fn seeds() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut out = Vec::new();
    for dir in ["fuzz/seeds/onnx", "examples/onnx"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "onnx") {
                out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 10, "seed models are missing");
    out
}

/// Imports `bytes`; an accepted model must be consistent. Returns whether it was accepted.
fn check(bytes: &[u8]) -> bool {
    let _ = read_tensor(bytes);
    let Ok(model) = import(bytes, &ImportOptions::default()) else {
        return false;
    };
    accy_ir::verify(&model.program).expect("the importer returned an invalid program");
    for (_, p) in model.program.weights() {
        let value = model.weights.iter().find(|(n, _)| *n == p.name);
        assert_eq!(
            value.map(|(_, t)| t.ty()),
            Some(p.ty.clone()),
            "weight {}",
            p.name
        );
    }
    true
}

fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn seeds_import_and_damaged_copies_never_panic() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let (mut accepted, mut refused) = (0, 0);
    for (name, bytes) in seeds() {
        if name.contains("fuzz/seeds") {
            assert!(check(&bytes), "seed {name} must import");
        }
        for len in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
            let ok = check(&bytes[..len]);
            (accepted, refused) = if ok {
                (accepted + 1, refused)
            } else {
                (accepted, refused + 1)
            };
        }
        for round in 0..150 {
            let mut m = bytes.clone();
            for _ in 0..1 + round % 6 {
                let at = (next(&mut state) % m.len() as u64) as usize;
                m[at] = next(&mut state) as u8;
            }
            let ok = check(&m);
            (accepted, refused) = if ok {
                (accepted + 1, refused)
            } else {
                (accepted, refused + 1)
            };
        }
    }
    // Both outcomes occur: the test exercises acceptance and refusal.
    assert!(
        accepted >= 20 && refused >= 100,
        "{accepted} accepted, {refused} refused"
    );
}

#[test]
fn empty_repeated_fields_cost_little() {
    // 2 MiB of empty `graph.node` entries inside a model: refused quickly (the nodes have no
    // op type), without allocating per entry more than a slice.
    let entries: Vec<u8> = std::iter::repeat_n([0x0au8, 0x00], 1 << 20)
        .flatten()
        .collect();
    let mut graph = Vec::new();
    graph.extend_from_slice(&entries);
    let mut model = vec![0x08, 8]; // ir_version 8
    model.extend([0x42, 0x02, 0x10, 0x12]); // opset_import { version: 18 }
    model.push(0x3a); // graph, length-delimited
    let mut len = graph.len();
    while len >= 0x80 {
        model.push((len as u8) | 0x80);
        len >>= 7;
    }
    model.push(len as u8);
    model.extend(graph);
    let e = import(&model, &ImportOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
    assert!(e.message.contains("op ``"), "{e}");
}
