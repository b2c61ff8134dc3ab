//! The hand-written programs in `tests/programs/` parse, verify, round-trip through the text
//! format, and compute what their comments say when interpreted.

use accy_ir::interp::eval;
use accy_ir::{text, verify, Program, Tensor, TensorData};

fn load(name: &str) -> Program {
    let path = format!("{}/tests/programs/{name}", env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(&path).unwrap();
    let program = text::parse(&source).unwrap_or_else(|e| panic!("{path}:{e}"));
    verify(&program).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(text::parse(&text::print(&program)).unwrap(), program);
    program
}

fn f32s(t: &Tensor) -> &[f32] {
    match t.data() {
        TensorData::F32(v) => v,
        other => panic!("expected f32 data, got {:?}", other.dtype()),
    }
}

#[test]
fn every_program_file_parses_and_verifies() {
    let dir = format!("{}/tests/programs", env!("CARGO_MANIFEST_DIR"));
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".accy") {
            load(&name);
            count += 1;
        }
    }
    assert!(count >= 4, "found only {count} programs");
}

#[test]
fn mlp_tiny_matches_a_hand_computation() {
    let p = load("mlp_tiny.accy");
    let x = [1.0, -2.0, 0.5, 3.0, 0.0, 1.0, -1.0, 2.0];
    let w1: Vec<f32> = (0..12).map(|i| (i as f32 - 6.0) * 0.25).collect();
    let b1 = [0.5, -0.5, 0.25];
    let w2 = [1.0, -1.0, 0.5, 2.0, -0.25, 0.75];
    let b2 = [0.1, -0.2];
    let args = [
        Tensor::f32s(&[2, 4], x.to_vec()),
        Tensor::f32s(&[4, 3], w1.clone()),
        Tensor::f32s(&[3], b1.to_vec()),
        Tensor::f32s(&[3, 2], w2.to_vec()),
        Tensor::f32s(&[2], b2.to_vec()),
    ];
    let out = eval(&p, &args).unwrap();
    let mut expected = Vec::new();
    for r in 0..2 {
        let h: Vec<f32> = (0..3)
            .map(|j| {
                let s = (0..4).fold(0.0f32, |acc, k| acc + x[r * 4 + k] * w1[k * 3 + j]);
                (s + b1[j]).max(0.0)
            })
            .collect();
        for j in 0..2 {
            let s = (0..3).fold(0.0f32, |acc, k| acc + h[k] * w2[k * 2 + j]);
            expected.push(s + b2[j]);
        }
    }
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].dims(), &[2, 2]);
    assert_eq!(f32s(&out[0]), expected.as_slice());
}

#[test]
fn softmax_rows_sum_to_one_and_keep_order() {
    let p = load("softmax_rows.accy");
    let x: Vec<f32> = (0..15).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
    let out = eval(&p, &[Tensor::f32s(&[3, 5], x.clone())]).unwrap();
    let y = f32s(&out[0]);
    for r in 0..3 {
        let row = &y[r * 5..r * 5 + 5];
        let sum: f32 = row.iter().sum();
        assert!((sum - 1.0).abs() < 1e-6, "row {r} sums to {sum}");
        for a in 0..5 {
            for b in 0..5 {
                if x[r * 5 + a] < x[r * 5 + b] {
                    assert!(row[a] < row[b]);
                }
            }
        }
    }
}

#[test]
fn layernorm_rows_have_zero_mean_and_unit_variance() {
    let p = load("layernorm.accy");
    let x: Vec<f32> = (0..32)
        .map(|i| (i as f32 * 0.37).sin() * 3.0 + i as f32)
        .collect();
    let args = [
        Tensor::f32s(&[4, 8], x),
        Tensor::f32s(&[8], vec![1.0; 8]),
        Tensor::f32s(&[8], vec![0.0; 8]),
    ];
    let out = eval(&p, &args).unwrap();
    let y = f32s(&out[0]);
    for r in 0..4 {
        let row = &y[r * 8..r * 8 + 8];
        let mean = row.iter().sum::<f32>() / 8.0;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / 8.0;
        assert!(mean.abs() < 1e-5, "row {r} mean {mean}");
        assert!((var - 1.0).abs() < 1e-3, "row {r} variance {var}");
    }
}

#[test]
fn counter_update_adds_and_takes_remainders_with_defined_zero_division() {
    let p = load("counter_update.accy");
    let state = Tensor::i64s(&[4], vec![i64::MAX, 10, -7, 5]);
    let step = Tensor::i64s(&[4], vec![1, 3, 2, 0]);
    let out = eval(&p, &[state, step]).unwrap();
    // i64::MAX + 1 wraps; x rem 0 = x by definition.
    assert_eq!(out[0], Tensor::i64s(&[4], vec![i64::MIN, 13, -5, 5]));
    assert_eq!(out[1], Tensor::i64s(&[4], vec![0, 1, -1, 5]));
}
