//! Oracles for accy's fuzz targets (internal test-support crate).
//!
//! The targets in `fuzz/` are thin glue around these functions, so the same checks also run
//! under plain `cargo test` (see the smoke tests below) and a failing fuzz input can be replayed
//! as an ordinary test. Each oracle panics when it finds a bug, which is how libFuzzer learns
//! of it; bad input itself is never a bug and only changes the returned [`Outcome`].

#![deny(missing_docs)]

use accy_ir::interp::{eval_with_limits, Limits};
use accy_ir::{text, verify, Program, Tensor};

/// What an input turned out to be, so a fuzzing run can report how many inputs got how far (a
/// fuzzer whose inputs are all rejected early tests little).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Refused by the decoder or parser.
    Rejected,
    /// Decoded or parsed, but refused by the verifier.
    Invalid,
    /// A valid program that went through every check.
    Valid,
}

/// Interpreting a fuzzed program is bounded by this many elements, so huge shapes are skipped.
const EVAL_LIMITS: Limits = Limits {
    max_elements: 1 << 16,
};

/// Decodes `bytes`; for whatever decodes, checks that encoding round-trips, and for valid
/// programs also that the text form round-trips and the interpreter runs without panicking.
pub fn check_decode(bytes: &[u8]) -> Outcome {
    let Ok(program) = accy_wire::decode(bytes) else {
        return Outcome::Rejected;
    };
    let reencoded = accy_wire::encode(&program);
    match accy_wire::decode(&reencoded) {
        Ok(again) => assert_eq!(again, program, "encode/decode changed a decoded program"),
        Err(e) => panic!("re-encoding a decoded program gave undecodable bytes: {e}"),
    }
    check_valid(&program)
}

/// Parses `source`; for valid programs checks that printing and parsing round-trips, that the
/// wire encoding round-trips, and that the interpreter runs without panicking.
pub fn check_parse(source: &str) -> Outcome {
    let Ok(program) = text::parse(source) else {
        return Outcome::Rejected;
    };
    let outcome = check_valid(&program);
    if outcome == Outcome::Valid {
        match accy_wire::decode(&accy_wire::encode(&program)) {
            Ok(again) => assert_eq!(again, program, "wire round trip changed a parsed program"),
            Err(e) => panic!("encoding a valid parsed program gave undecodable bytes: {e}"),
        }
    }
    outcome
}

/// Reads `bytes` as an artifact, and again with the checksum field recomputed (so mutations
/// reach the section decoder and the validator, not only the checksum). Whatever reads must
/// have passed validation and write back to exactly the bytes read (the encoding is
/// canonical). Returns the outcome of the resealed read. Never runs or maps any code.
pub fn check_artifact(bytes: &[u8]) -> Outcome {
    check_artifact_read(bytes);
    // The checksum covers every byte but its own four, at offset 56 (`accy_artifact::serial`).
    if bytes.len() < 64 {
        return Outcome::Rejected;
    }
    let mut sealed = bytes.to_vec();
    let mut h = crc32fast::Hasher::new();
    h.update(&sealed[..56]);
    h.update(&sealed[60..]);
    sealed[56..60].copy_from_slice(&h.finalize().to_le_bytes());
    check_artifact_read(&sealed)
}

fn check_artifact_read(bytes: &[u8]) -> Outcome {
    use accy_artifact::{Artifact, SerialError};
    match Artifact::from_bytes(bytes) {
        Ok(artifact) => {
            if let Err(e) = artifact.validate() {
                panic!("from_bytes returned an artifact that fails validation: {e}");
            }
            match artifact.to_bytes() {
                Ok(again) => assert!(
                    again == bytes,
                    "an artifact read did not write back identically"
                ),
                Err(e) => panic!("an artifact read could not be written: {e}"),
            }
            Outcome::Valid
        }
        Err(SerialError::Invalid(_)) => Outcome::Invalid,
        Err(_) => Outcome::Rejected,
    }
}

fn check_valid(program: &Program) -> Outcome {
    if verify(program).is_err() {
        return Outcome::Invalid;
    }
    let printed = text::print(program);
    match text::parse(&printed) {
        Ok(parsed) => assert_eq!(
            &parsed, program,
            "print/parse changed a valid program:\n{printed}"
        ),
        Err(e) => panic!("the printed form of a valid program does not parse: {e}\n{printed}"),
    }
    // Zero-filled arguments: the point is that evaluation never panics, whatever the shapes.
    let args: Option<Vec<Tensor>> = program
        .params
        .iter()
        .map(|p| {
            let small =
                p.ty.element_count()
                    .is_some_and(|n| n <= EVAL_LIMITS.max_elements);
            small.then(|| Tensor::zeros(&p.ty)).flatten()
        })
        .collect();
    if let Some(args) = args {
        // Any error (a limit hit) is fine; a panic is the bug this looks for.
        let _ = eval_with_limits(program, &args, &EVAL_LIMITS);
    }
    Outcome::Valid
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_file_and_its_truncations() {
        let golden = include_bytes!("../../wire/tests/golden/reference.accyb");
        assert_eq!(check_decode(golden), Outcome::Valid);
        for len in 0..golden.len() {
            assert_ne!(
                check_decode(&golden[..len]),
                Outcome::Valid,
                "truncated to {len}"
            );
        }
    }

    #[test]
    fn artifact_seeds_their_truncations_and_flips() {
        for seed in [
            &include_bytes!("../../../fuzz/seeds/artifact/neg.accya")[..],
            &include_bytes!("../../../fuzz/seeds/artifact/softmax.accya")[..],
        ] {
            assert_eq!(check_artifact(seed), Outcome::Valid);
            for len in (0..seed.len()).step_by(7) {
                assert_ne!(check_artifact(&seed[..len]), Outcome::Valid, "{len}");
            }
            let mut reached_validation = false;
            for at in 64..seed.len() {
                let mut bad = seed.to_vec();
                bad[at] ^= 0x5a;
                // Unsealed, every flip is refused; resealed, some are valid (code bytes).
                assert_ne!(check_artifact_read(&bad), Outcome::Valid, "byte {at}");
                reached_validation |= check_artifact(&bad) == Outcome::Invalid;
            }
            assert!(
                reached_validation,
                "resealed flips never reached the validator"
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn generated_programs_pass_both_oracles(p in accy_ir::gen::arb_program()) {
            prop_assert_eq!(check_decode(&accy_wire::encode(&p)), Outcome::Valid);
            prop_assert_eq!(check_parse(&text::print(&p)), Outcome::Valid);
        }

        #[test]
        fn mutated_encodings_never_panic(
            p in accy_ir::gen::arb_program(),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
        ) {
            let mut bytes = accy_wire::encode(&p);
            for (at, value) in flips {
                let n = bytes.len();
                bytes[at % n] ^= value | 1;
            }
            check_decode(&bytes);
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            check_parse(&s);
        }
    }
}
