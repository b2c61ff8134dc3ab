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
