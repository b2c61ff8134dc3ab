//! ONNX models through the `accy` binary: the example models against ONNX Runtime's outputs,
//! `--shape`, `import` and its round trip, `bench`/`inspect`, and malformed models (each a
//! clear error with exit 1, 2 or 3, never a panic).

use accy_cli::npy;
use accy_ir::{Tensor, TensorData};

mod common;
use common::{accy, assert_code, scratch_dir, stderr, stdout};

/// Path of a file in `examples/onnx/`.
fn model(name: &str) -> String {
    format!("{}/../../examples/onnx/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn read_npy(path: &str) -> Tensor {
    npy::read(&std::fs::read(path).unwrap()).unwrap()
}

fn floats(t: &Tensor) -> &[f32] {
    match t.data() {
        TensorData::F32(v) => v,
        other => panic!("expected f32 data, got {:?}", other.dtype()),
    }
}

/// The largest `|got - want| / max(|want|, 1e-2)` — the relative error, with values near zero
/// measured against 1e-2 so that rounding noise on them does not dominate.
fn max_rel_error(got: &Tensor, want: &Tensor) -> f64 {
    assert_eq!(got.ty(), want.ty());
    floats(got)
        .iter()
        .zip(floats(want))
        .map(|(&g, &w)| (f64::from(g) - f64::from(w)).abs() / f64::from(w.abs()).max(1e-2))
        .fold(0.0, f64::max)
}

/// Runs `accy run` on an example model with its input file and returns output 0.
fn run_model(name: &str, shape: &str, input: &str, dir: &std::path::Path) -> Tensor {
    let out_dir = dir.join("out");
    let out = accy(&[
        "run",
        &model(name),
        "--shape",
        shape,
        "--input",
        input,
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert_code(&out, 0);
    read_npy(out_dir.join("out0.npy").to_str().unwrap())
}

#[test]
fn the_mlp_classifier_matches_onnx_runtime() {
    let dir = scratch_dir("onnx-mlp");
    let x = format!("x=@{}", model("mlp_x.npy"));
    let got = run_model("mlp.onnx", "x=8x256", &x, &dir);
    let want = read_npy(&model("mlp_probs.npy"));
    let err = max_rel_error(&got, &want);
    assert!(err < 1e-4, "max relative error {err:e}");
}

#[test]
fn the_transformer_encoder_matches_onnx_runtime() {
    let dir = scratch_dir("onnx-encoder");
    let ids = format!("ids=@{}", model("encoder_ids.npy"));
    let got = run_model("encoder.onnx", "ids=1x16", &ids, &dir);
    let want = read_npy(&model("encoder_out.npy"));
    let err = max_rel_error(&got, &want);
    assert!(err < 1e-4, "max relative error {err:e}");
}

#[test]
fn a_symbolic_dim_without_shape_names_the_input_and_the_dim() {
    let out = accy(&["run", &model("mlp.onnx")]);
    assert_code(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains("input `x`") && err.contains("`batch`") && err.contains("axis 0"),
        "{err}"
    );
    let out = accy(&["run", &model("mlp.onnx"), "--shape", "x=8x255"]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("dim 256 at axis 1, not 255"),
        "{}",
        stderr(&out)
    );
    let out = accy(&["run", &model("mlp.onnx"), "--shape", "y=8x256"]);
    assert_code(&out, 2);
    assert!(stderr(&out).contains("no input `y`"), "{}", stderr(&out));
}

#[test]
fn import_writes_a_program_and_weights_that_run_the_same() {
    let dir = scratch_dir("onnx-import");
    let program = dir.join("encoder.accy");
    let out = accy(&[
        "import",
        &model("encoder.onnx"),
        "-o",
        program.to_str().unwrap(),
        "--shape",
        "ids=1x16",
    ]);
    assert_code(&out, 0);
    let weights = dir.join("encoder.safetensors");
    assert!(stdout(&out).contains("wrote"), "{}", stdout(&out));
    assert!(weights.exists());
    let text = std::fs::read_to_string(&program).unwrap();
    assert!(text.contains("weight \"q.weight\" : f32[64,64]"), "{text}");

    let check = accy(&["check", program.to_str().unwrap()]);
    assert_code(&check, 0);
    let ids = format!("ids=@{}", model("encoder_ids.npy"));
    let out_dir = dir.join("out");
    let run = accy(&[
        "run",
        program.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--input",
        &ids,
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert_code(&run, 0);
    assert!(stdout(&run).contains("18 weights from"), "{}", stdout(&run));
    let from_import = read_npy(out_dir.join("out0.npy").to_str().unwrap());
    let direct = run_model("encoder.onnx", "ids=1x16", &ids, &dir.join("direct"));
    assert_eq!(
        from_import, direct,
        "the imported halves compute what the model does"
    );

    // Without the weights file the weights are random: the result differs.
    let random = accy(&[
        "run",
        program.to_str().unwrap(),
        "--input",
        &ids,
        "--output-dir",
        dir.join("random").to_str().unwrap(),
    ]);
    assert_code(&random, 0);
    assert_ne!(
        read_npy(dir.join("random/out0.npy").to_str().unwrap()),
        direct
    );
}

#[test]
fn weights_files_are_checked_against_the_program() {
    let dir = scratch_dir("onnx-weights");
    let other = dir.join("mlp.accy");
    assert_code(
        &accy(&[
            "import",
            &model("mlp.onnx"),
            "-o",
            other.to_str().unwrap(),
            "--shape",
            "x=1x256",
        ]),
        0,
    );
    // The MLP's weights do not belong to the encoder.
    let out = accy(&[
        "run",
        &model("encoder.onnx"),
        "--shape",
        "ids=1x16",
        "--weights",
        dir.join("mlp.safetensors").to_str().unwrap(),
    ]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("has no weight named"),
        "{}",
        stderr(&out)
    );
    let out = accy(&[
        "run",
        &other.to_string_lossy(),
        "--weights",
        "/nonexistent.safetensors",
    ]);
    assert_code(&out, 3);
    let out = accy(&["run", &other.to_string_lossy(), "--shape", "x=1x256"]);
    assert_code(&out, 2);
    assert!(
        stderr(&out).contains("--shape applies to ONNX models"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bench_and_inspect_take_onnx_models() {
    let out = accy(&[
        "bench",
        &model("mlp.onnx"),
        "--shape",
        "x=4x256",
        "--iters",
        "3",
    ]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("latency"), "{}", stdout(&out));
    let out = accy(&[
        "inspect",
        &model("encoder.onnx"),
        "--shape",
        "ids=1x16",
        "--no-disassembly",
    ]);
    assert_code(&out, 0);
    assert!(stdout(&out).contains("kernel"), "{}", stdout(&out));
}

#[test]
fn external_data_is_read_beside_the_model_and_its_absence_is_an_io_error() {
    let dir = scratch_dir("onnx-external");
    let out = accy(&[
        "run",
        &model("external_ok.onnx"),
        "--input",
        "x=[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    assert_code(&out, 0);
    let y = read_npy(dir.join("out0.npy").to_str().unwrap());
    assert_eq!(floats(&y), (0..32).map(|i| i as f32).collect::<Vec<_>>());
    let out = accy(&["run", &model("external_missing.onnx")]);
    assert_code(&out, 3);
    assert!(
        stderr(&out).contains("external_missing.bin"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn invalid_and_unsupported_models_are_exit_1_with_the_node_named() {
    for (name, needle) in [
        (
            "unknown_op.onnx",
            "node `fancy` (#0, FancyOp): op `FancyOp` is not supported",
        ),
        (
            "cyclic.onnx",
            "node `first` (#0, Add) reads `b`, which is not defined before it",
        ),
        (
            "bad_initializer.onnx",
            "raw_data has 12 bytes but dims [4] of float need 16",
        ),
    ] {
        let out = accy(&["run", &model(name)]);
        assert_code(&out, 1);
        assert!(stderr(&out).contains(needle), "{name}: {}", stderr(&out));
    }
}

/// A deterministic xorshift generator for mutations.
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

#[test]
fn truncated_and_mutated_models_never_crash_the_importer() {
    let dir = scratch_dir("onnx-mutated");
    let bytes = std::fs::read(model("encoder.onnx")).unwrap();
    let path = dir.join("m.onnx");
    let path = path.to_str().unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut codes = std::collections::BTreeMap::new();
    for case in 0..60 {
        let mut m = bytes.clone();
        if case < 20 {
            // Truncations at spread-out lengths, the header region included.
            m.truncate((next(&mut state) % bytes.len() as u64) as usize / (1 + case % 4));
        } else {
            for _ in 0..1 + case % 8 {
                let at = (next(&mut state) % m.len() as u64) as usize;
                m[at] = next(&mut state) as u8;
            }
        }
        std::fs::write(path, &m).unwrap();
        let out = accy(&["check", path, "--shape", "ids=1x16"]);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0..=3)),
            "case {case}: exit {code:?}\n{}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("panicked"),
            "case {case}: {}",
            stderr(&out)
        );
        *codes.entry(code).or_insert(0) += 1;
    }
    // The truncations alone guarantee refusals; the test must not pass by accepting all.
    assert!(codes.get(&Some(1)).copied().unwrap_or(0) >= 20, "{codes:?}");
}
