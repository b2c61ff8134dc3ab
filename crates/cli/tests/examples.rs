//! Every program in `examples/` runs through `accy run` and matches the reference interpreter
//! on the same seeded values: bit for bit with `--exact`, and within a tolerance for
//! reassociated float sums without it.

use accy_cli::{npy, seeded};
use accy_ir::{interp, Tensor, TensorData};

mod common;
use common::{accy, assert_code, example, scratch_dir};

/// The examples checked together; the transformer block, whose interpretation takes most of
/// this file's time, has a test of its own so it runs in parallel with these.
const EXAMPLES: [&str; 4] = ["mlp.accy", "mlp_b64.accy", "softmax.accy", "layernorm.accy"];

/// Runs `name` with `seed` (and `--exact` if asked) and returns its outputs and the
/// interpreter's.
fn run_and_eval(name: &str, seed: u64, exact: bool) -> (Vec<Tensor>, Vec<Tensor>) {
    let dir = scratch_dir(&format!("example-{name}-{seed}-{exact}"));
    let seed_text = seed.to_string();
    let mut args = vec![
        "run",
        &example(name),
        "--seed",
        &seed_text,
        "--output-dir",
        dir.to_str().unwrap(),
    ]
    .into_iter()
    .map(str::to_owned)
    .collect::<Vec<_>>();
    if exact {
        args.push("--exact".into());
    }
    let out = accy(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_code(&out, 0);

    let source = std::fs::read_to_string(example(name)).unwrap();
    assert!(source.starts_with("# "), "{name} starts with a comment");
    let program = accy_ir::text::parse(&source).unwrap();
    let args = seeded::params(&program, seed).unwrap();
    let expected = interp::eval(&program, &args).unwrap();
    let got = (0..expected.len())
        .map(|i| npy::read(&std::fs::read(dir.join(format!("out{i}.npy"))).unwrap()).unwrap())
        .collect();
    (got, expected)
}

#[test]
fn every_example_matches_the_interpreter_bit_for_bit_with_exact() {
    for name in EXAMPLES {
        let (got, expected) = run_and_eval(name, 3, true);
        assert_eq!(got.len(), 1, "{name}");
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn the_transformer_block_matches_the_interpreter_bit_for_bit_with_exact() {
    let (got, expected) = run_and_eval("transformer_block.accy", 3, true);
    assert_eq!(got, expected);
}

#[test]
fn every_example_file_is_listed_in_a_test() {
    let dir = format!("{}/../../examples", env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".accy"))
        .collect();
    found.sort();
    let mut listed: Vec<String> = EXAMPLES.iter().map(|s| s.to_string()).collect();
    listed.push("transformer_block.accy".into());
    listed.sort();
    assert_eq!(found, listed);
}

#[test]
fn reassociated_sums_stay_within_tolerance() {
    for name in ["mlp.accy", "softmax.accy"] {
        let (got, expected) = run_and_eval(name, 11, false);
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!(g.ty(), e.ty(), "{name}");
            let (TensorData::F32(g), TensorData::F32(e)) = (g.data(), e.data()) else {
                panic!("{name}: f32 outputs expected");
            };
            let scale = e.iter().fold(0f32, |m, x| m.max(x.abs()));
            for (i, (a, b)) in g.iter().zip(e).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-4 * scale.max(1.0),
                    "{name}[{i}]: {a} vs {b} (scale {scale})"
                );
            }
        }
    }
}
