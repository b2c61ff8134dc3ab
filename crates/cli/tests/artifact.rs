//! `accy compile --artifact` and `accy run` of the artifact: the same outputs as running the
//! program, no compile at run time, and damaged or misused artifacts refused with the
//! documented exit codes.

mod common;
use common::{accy, assert_code, example, scratch_dir, stderr, stdout, write};

/// The output summary lines of an `accy run`.
fn output_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.starts_with("output ")).collect()
}

#[test]
fn an_artifact_runs_like_its_program() {
    let dir = scratch_dir("artifact-run");
    let artifact = dir.join("mlp.accya");
    let artifact = artifact.to_str().unwrap();
    let mlp = example("mlp.accy");
    assert_code(&accy(&["compile", &mlp, "--artifact", "-o", artifact]), 0);
    let bytes = std::fs::read(artifact).unwrap();
    assert!(accy_artifact::serial::has_magic(&bytes));

    let direct = accy(&["run", &mlp, "--seed", "5"]);
    assert_code(&direct, 0);
    let loaded = accy(&["run", artifact, "--seed", "5"]);
    assert_code(&loaded, 0);
    let text = stdout(&loaded);
    assert!(
        text.contains("loaded artifact for x86_64") || text.contains("loaded artifact for aarch64"),
        "{text}"
    );
    assert!(text.contains("input \"input0\": f32[1,784]"), "{text}");
    assert!(
        text.contains("weight \"fc1.weight\": f32[784,512]"),
        "{text}"
    );
    let want = stdout(&direct);
    assert_eq!(output_lines(&text), output_lines(&want));
    assert!(!output_lines(&want).is_empty());

    // `inspect` lists the artifact: its plan and each kernel's disassembly.
    let inspected = accy(&["inspect", artifact]);
    assert_code(&inspected, 0);
    let listing = stdout(&inspected);
    assert!(
        listing.contains("weight \"fc1.weight\" f32[784,512]"),
        "{listing}"
    );
    assert!(listing.contains("commands:"), "{listing}");
    assert!(listing.contains("code: "), "{listing}");
    assert!(listing.lines().any(|l| l.contains(" ret")), "{listing}");

    // Inputs are given by their artifact names.
    let given = accy(&["run", artifact, "--input", "input0=@/nonexistent.npy"]);
    assert_code(&given, 3);
}

#[test]
fn damaged_and_misused_artifacts_are_refused() {
    let dir = scratch_dir("artifact-bad");
    let src = write(
        &dir,
        "neg.accy",
        "program {\n  %x = input \"x\" : f32[4]\n  %y = neg %x : f32[4]\n  output %y\n}\n",
    );
    let path = dir.join("neg.accya");
    let path = path.to_str().unwrap();
    assert_code(&accy(&["compile", &src, "--artifact", "-o", path]), 0);
    let good = std::fs::read(path).unwrap();

    // Truncated: exit 1 (not a valid artifact), with the reason.
    let cut = write(&dir, "cut.accya", "");
    std::fs::write(&cut, &good[..good.len() - 1]).unwrap();
    let out = accy(&["run", &cut]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("truncated artifact"),
        "{}",
        stderr(&out)
    );

    // A flipped byte past the header: the checksum.
    let mut flipped = good.clone();
    let at = good.len() - 3;
    flipped[at] ^= 1;
    std::fs::write(&cut, &flipped).unwrap();
    let out = accy(&["run", &cut]);
    assert_code(&out, 1);
    assert!(
        stderr(&out).contains("checksum mismatch"),
        "{}",
        stderr(&out)
    );

    // --exact or --target belong to the compile.
    assert_code(&accy(&["run", path, "--exact"]), 2);
    // --text and --artifact exclude each other; --target needs --artifact.
    assert_code(
        &accy(&["compile", &src, "--artifact", "--text", "-o", "-"]),
        2,
    );
    assert_code(
        &accy(&["compile", &src, "--target", "x64-sse2", "-o", "-"]),
        2,
    );
}

/// `--flush-subnormals` is part of the artifact: its runs flush as the direct run does.
#[test]
fn an_artifact_compiled_to_flush_subnormals_flushes_when_run() {
    let dir = scratch_dir("artifact-flush");
    // Products of about 1e-40: subnormal unless flushed.
    let src = write(
        &dir,
        "tiny.accy",
        "program {
          %x = input \"x\" : f32[64]
          %c = constant 1e-40 : f32[]
          %cb = broadcast %c, dims=[64], axes=[] : f32[64]
          %y = mul %x, %cb : f32[64]
          output %y
        }",
    );
    let src = src.as_str();
    let artifact = dir.join("tiny.accya");
    let artifact = artifact.to_str().unwrap();
    // Subnormal values print with 38 zeros after the point; flushed ones print as 0 or -0.
    let has_subnormals = |text: &str| {
        let lines = output_lines(text);
        assert_eq!(lines.len(), 1, "{text}");
        lines[0].contains(&format!("0.{}", "0".repeat(38)))
    };
    let kept = accy(&["run", src]);
    assert_code(&kept, 0);
    assert!(has_subnormals(&stdout(&kept)), "{}", stdout(&kept));
    let flushed = accy(&["run", src, "--flush-subnormals"]);
    assert_code(&flushed, 0);
    assert!(!has_subnormals(&stdout(&flushed)), "{}", stdout(&flushed));
    let compile = [
        "compile",
        src,
        "--artifact",
        "--flush-subnormals",
        "-o",
        artifact,
    ];
    assert_code(&accy(&compile), 0);
    let loaded = accy(&["run", artifact]);
    assert_code(&loaded, 0);
    assert_eq!(
        output_lines(&stdout(&loaded)),
        output_lines(&stdout(&flushed))
    );
    let shown = accy(&["inspect", artifact, "--no-disassembly"]);
    assert_code(&shown, 0);
    assert!(stdout(&shown).contains("runs flush subnormals to zero"));
    // The flag belongs to the compile of an artifact.
    assert_code(&accy(&["run", artifact, "--flush-subnormals"]), 2);
}
