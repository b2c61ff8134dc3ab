//! Ahead-of-time artifacts through the session: a program compiled to bytes and loaded back
//! runs exactly like the same program compiled directly, on every tier this machine runs, and
//! bytes that cannot be run here are refused, each with its own error, before any code is
//! mapped.
//!
//! `load_artifact` is unsafe because artifact bytes contain machine code; every call below
//! loads bytes that `compile_artifact` just wrote (or a damaged copy that must be refused),
//! which is the contract.

use accy_artifact::{Arch, Artifact, CpuFeature, SerialError};
use accy_ir::{Builder, DType, Program, Type, UnaryOp};
use accy_session::{Error, Scratch, Session, SessionOptions, Status, Tier, Weights};

fn example(name: &str) -> Program {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    accy_ir::text::parse(&text).unwrap()
}

/// Deterministic values in [-1, 1) for every byte of a tensor of `ty` (f32 only here).
fn values(ty: &Type, seed: usize) -> Vec<u8> {
    let n = ty.element_count().unwrap() as usize;
    (0..n)
        .flat_map(|j| (((j * 7919 + seed * 104_729) % 2001) as f32 / 1000.0 - 1.0).to_le_bytes())
        .collect()
}

fn weights_of(program: &Program) -> Weights {
    let owned: Vec<(String, Vec<u8>)> = program
        .weights()
        .enumerate()
        .map(|(i, (_, p))| (p.name.clone(), values(&p.ty, 100 + i)))
        .collect();
    let named: Vec<(&str, &[u8])> = owned
        .iter()
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    Weights::new(&named).unwrap()
}

/// Runs `handle` on deterministic inputs and returns its outputs' bytes.
fn run(session: &Session, handle: accy_session::Handle, program: &Program) -> Vec<Vec<u8>> {
    let inputs: Vec<Vec<u8>> = program
        .inputs()
        .enumerate()
        .map(|(i, (_, p))| values(&p.ty, i))
        .collect();
    let input_refs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let mut outputs: Vec<Vec<u8>> = session
        .outputs(handle)
        .unwrap()
        .iter()
        .map(|d| vec![0; d.byte_size])
        .collect();
    let mut output_refs: Vec<&mut [u8]> = outputs.iter_mut().map(Vec::as_mut_slice).collect();
    session
        .invoke(handle, &mut Scratch::new(), &input_refs, &mut output_refs)
        .unwrap();
    outputs
}

/// The tiers this machine can run, each with its session (x86-64: SSE2, AVX2, AVX-512;
/// elsewhere the native tier only), as the differential tests pick them.
fn sessions() -> Vec<Session> {
    let wanted: &[(Tier, &str)] = if cfg!(target_arch = "x86_64") {
        &[
            (Tier::Baseline, "x64-sse2"),
            (Tier::Avx2, "x64-avx2"),
            (Tier::Avx512, "x64-avx512"),
        ]
    } else {
        &[(Tier::Native, "")]
    };
    let mut out = Vec::new();
    for (tier, name) in wanted {
        let s = Session::with_options(SessionOptions::default().with_max_tier(*tier)).unwrap();
        if name.is_empty() || s.target_name() == *name {
            out.push(s);
        } else {
            #[allow(clippy::print_stderr, reason = "tell the log which tier was skipped")]
            {
                eprintln!("skipping {name}: this CPU runs {}", s.target_name());
            }
        }
    }
    out
}

#[test]
fn round_trip_equals_direct_compile_on_every_tier() {
    let best = Session::new().unwrap();
    let sessions = sessions();
    assert!(!sessions.is_empty());
    for name in [
        "mlp.accy",
        "softmax.accy",
        "layernorm.accy",
        "transformer_block.accy",
    ] {
        let program = example(name);
        let weights = weights_of(&program);
        let wire = accy_wire::encode(&program);
        for session in &sessions {
            let direct = session.compile_with_weights(&wire, &weights).unwrap();
            let expected = run(session, direct, &program);
            let bytes = session.compile_artifact(&wire).unwrap();
            let artifact = Artifact::from_bytes(&bytes).unwrap();
            assert!(!artifact.code.is_empty(), "{name}");
            // SAFETY: `bytes` were just written by `compile_artifact`.
            let loaded = unsafe { session.load_artifact_with_weights(&bytes, &weights) }.unwrap();
            assert_ne!(loaded, direct);
            assert_eq!(
                session.inputs(loaded).unwrap(),
                session.inputs(direct).unwrap()
            );
            assert_eq!(
                session.outputs(loaded).unwrap(),
                session.outputs(direct).unwrap()
            );
            let got = run(session, loaded, &program);
            assert!(
                got == expected,
                "{name} on {}: loaded artifact differs from the direct compile",
                session.target_name()
            );
            // The same bytes load in a session of the best tier too (code needing less than
            // the host offers runs anywhere the features are present), with the same results.
            // SAFETY: as above.
            let elsewhere = unsafe { best.load_artifact_with_weights(&bytes, &weights) }.unwrap();
            assert!(
                run(&best, elsewhere, &program) == expected,
                "{name}: {} artifact in a {} session",
                session.target_name(),
                best.target_name()
            );
            best.release(elsewhere).unwrap();
            session.release(loaded).unwrap();
            session.release(direct).unwrap();
        }
    }
}

/// `y = -x` over f32[4]: a small artifact for the byte-level refusals.
fn small_artifact(session: &Session) -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let y = b.unary(UnaryOp::Neg, x).unwrap();
    b.output(y).unwrap();
    session
        .compile_artifact(&accy_wire::encode(&b.finish().unwrap()))
        .unwrap()
}

/// The serialization error behind a session error, if that is its cause.
fn serial_cause(e: &Error) -> Option<&SerialError> {
    e.cause()?.downcast_ref::<SerialError>()
}

fn load(session: &Session, bytes: &[u8]) -> Result<accy_session::Handle, Error> {
    // SAFETY: every caller passes bytes `compile_artifact` wrote, possibly damaged or edited
    // by the test; whatever loads is the code that was written (edits touch only the header's
    // target, which the loader refuses before mapping).
    unsafe { session.load_artifact(bytes) }
}

#[test]
fn a_small_artifact_round_trips_and_runs() {
    let session = Session::new().unwrap();
    let bytes = small_artifact(&session);
    let h = load(&session, &bytes).unwrap();
    let mut out = [0f32; 4];
    session
        .invoke_typed(
            h,
            &mut Scratch::new(),
            &[&[1f32, -2.0, 3.0, 0.0]],
            &mut [&mut out],
        )
        .unwrap();
    assert_eq!(out, [-1.0, 2.0, -3.0, -0.0]);
}

#[test]
fn every_truncation_is_refused_as_truncated() {
    let session = Session::new().unwrap();
    let bytes = small_artifact(&session);
    for len in 0..bytes.len() {
        let e = load(&session, &bytes[..len]).unwrap_err();
        assert_eq!(Status::from(&e), Status::InvalidProgram, "{len}: {e}");
        assert!(
            matches!(serial_cause(&e), Some(SerialError::Truncated { .. })),
            "prefix of {len} bytes: {e}"
        );
    }
    assert_eq!(session.live_programs(), 0);
}

#[test]
fn every_flipped_byte_is_refused() {
    let session = Session::new().unwrap();
    let bytes = small_artifact(&session);
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        let e = load(&session, &bad).unwrap_err();
        let cause = serial_cause(&e);
        assert!(
            cause.is_some(),
            "byte {at}: refused by the wrong check: {e}"
        );
        if !(8..12).contains(&at) {
            assert_eq!(Status::from(&e), Status::InvalidProgram, "byte {at}: {e}");
        }
        if at >= 64 {
            assert!(
                matches!(cause, Some(SerialError::ChecksumMismatch { .. })),
                "byte {at}: {e}"
            );
        }
    }
    assert_eq!(session.live_programs(), 0);
}

#[test]
fn a_newer_format_is_unsupported_version() {
    let session = Session::new().unwrap();
    let mut bytes = small_artifact(&session);
    bytes[8..12].copy_from_slice(&(accy_artifact::serial::FORMAT_VERSION + 1).to_le_bytes());
    let e = load(&session, &bytes).unwrap_err();
    assert_eq!(Status::from(&e), Status::UnsupportedVersion, "{e}");
    assert!(matches!(
        serial_cause(&e),
        Some(SerialError::UnsupportedVersion { found, supported })
            if *found == accy_artifact::serial::FORMAT_VERSION + 1
                && *supported == accy_artifact::serial::FORMAT_VERSION
    ));
}

#[test]
fn wire_bytes_are_not_an_artifact() {
    let session = Session::new().unwrap();
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    b.output(x).unwrap();
    let wire = accy_wire::encode(&b.finish().unwrap());
    let e = load(&session, &wire).unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidProgram);
    assert!(e.to_string().contains("wire bytes"), "{e}");
}

#[test]
fn an_avx512_artifact_is_refused_where_avx512_may_not_be_used() {
    if !cfg!(target_arch = "x86_64") {
        return;
    }
    // A session masked to AVX2 stands for a CPU without AVX-512, whatever this one has: the
    // loader compares the artifact's features with the session's usable set.
    let avx2 = Session::with_options(SessionOptions::default().with_max_tier(Tier::Avx2)).unwrap();
    let mut artifact = Artifact::from_bytes(&small_artifact(&avx2)).unwrap();
    artifact.target.features.insert(CpuFeature::Avx512f);
    artifact.target.features.insert(CpuFeature::Avx512vl);
    let bytes = artifact.to_bytes().unwrap();
    let e = load(&avx2, &bytes).unwrap_err();
    assert_eq!(Status::from(&e), Status::CompileFailed, "{e}");
    let message = e.to_string();
    assert!(
        message.contains("avx512f+avx512vl") && message.contains("needs CPU features"),
        "{message}"
    );
    assert_eq!(avx2.live_programs(), 0);
    // The unedited artifact loads in the same session.
    artifact.target.features.remove(CpuFeature::Avx512f);
    artifact.target.features.remove(CpuFeature::Avx512vl);
    load(&avx2, &artifact.to_bytes().unwrap()).unwrap();
}

#[test]
fn an_artifact_for_another_architecture_is_refused() {
    let host = Arch::host().unwrap();
    let (foreign, generator) = match host {
        Arch::X86_64 => (Arch::Aarch64, "aarch64-neon"),
        Arch::Aarch64 => (Arch::X86_64, "x64-sse2"),
    };
    // Real code for the other architecture, from its emitter (both always build).
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
    let y = b.unary(UnaryOp::Neg, x).unwrap();
    b.output(y).unwrap();
    let target = accy_lower::lookup_name(generator, None).unwrap();
    let artifact = accy_lower::compile(
        &b.finish().unwrap(),
        target.as_ref(),
        &accy_lower::Options::default(),
    )
    .unwrap();
    assert_eq!(artifact.target.arch, foreign);
    let bytes = artifact.to_bytes().unwrap();
    let session = Session::new().unwrap();
    let e = load(&session, &bytes).unwrap_err();
    assert_eq!(Status::from(&e), Status::CompileFailed, "{e}");
    let message = e.to_string();
    assert!(
        message.contains(foreign.name()) && message.contains(host.name()),
        "{message}"
    );
    assert_eq!(session.live_programs(), 0);
}

#[test]
fn weights_stay_outside_and_are_bound_at_load() {
    let session = Session::new().unwrap();
    let program = example("mlp.accy");
    let weights = weights_of(&program);
    let bytes = session
        .compile_artifact(&accy_wire::encode(&program))
        .unwrap();
    // No weight's bytes are in the artifact: it is far smaller than the weights.
    let weight_bytes: u64 = program
        .weights()
        .map(|(_, p)| p.ty.byte_size().unwrap())
        .sum();
    assert!(
        (bytes.len() as u64) < weight_bytes / 4,
        "{} bytes",
        bytes.len()
    );
    // Without its weights it is refused like a compile without them.
    let e = load(&session, &bytes).unwrap_err();
    assert_eq!(Status::from(&e), Status::InvalidBuffer, "{e}");
    assert!(e.to_string().contains("fc1.weight"), "{e}");
    // SAFETY: `bytes` were just written by `compile_artifact`.
    unsafe { session.load_artifact_with_weights(&bytes, &weights) }.unwrap();
}
