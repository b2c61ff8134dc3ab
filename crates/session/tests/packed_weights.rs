//! Weights packed once: a dot's weight operand is packed into panels when the program is
//! compiled with its weights (the artifact's setup commands), shared by every program compiled
//! with the same `Weights` that packs it the same way, counted once by `weight_bytes`, and the
//! results are the interpreter's bit for bit in exact mode.

use accy_ir::interp::eval;
use accy_ir::{BinaryOp, Builder, DType, Program, Tensor, Type};
use accy_session::{Scratch, Session, SessionOptions, Weights};

/// `relu(x · w + b)` then `· v`, for `rows` rows: two weights used by dots, one by a bias.
fn mlp(rows: u64) -> Program {
    let f32t = |dims: &[u64]| Type::new(DType::F32, dims);
    let mut b = Builder::new();
    let x = b.input("x", f32t(&[rows, 300])).unwrap();
    let w = b.weight("w", f32t(&[300, 200])).unwrap();
    let bias = b.weight("b", f32t(&[200])).unwrap();
    let v = b.weight("v", f32t(&[200, 70])).unwrap();
    let h = b.matmul(x, w).unwrap();
    let bb = b.broadcast(bias, &[rows, 200], &[1]).unwrap();
    let h = b.binary(BinaryOp::Add, h, bb).unwrap();
    let zero = b.constant(Tensor::f32s(&[], vec![0.0])).unwrap();
    let zb = b.broadcast(zero, &[rows, 200], &[]).unwrap();
    let h = b.binary(BinaryOp::Max, h, zb).unwrap();
    let y = b.matmul(h, v).unwrap();
    b.output(y).unwrap();
    b.finish().unwrap()
}

fn values(ty: &Type, seed: usize) -> Tensor {
    let n = ty.element_count().unwrap() as usize;
    Tensor::f32s(
        &ty.dims,
        (0..n)
            .map(|j| ((j * 7919 + seed * 31) % 2001) as f32 / 1000.0 - 1.0)
            .collect(),
    )
}

#[test]
fn packed_weights_are_shared_between_programs_and_counted_once() {
    let session = Session::with_options(
        SessionOptions::default()
            .with_reassociate_float_sums(false)
            .with_threads(2),
    )
    .unwrap();
    let weight_args: Vec<Tensor> = mlp(1)
        .weights()
        .enumerate()
        .map(|(i, (_, p))| values(&p.ty, 100 + i))
        .collect();
    let names: Vec<String> = mlp(1).weights().map(|(_, p)| p.name.clone()).collect();
    let bytes: Vec<Vec<u8>> = weight_args.iter().map(|t| t.data().to_le_bytes()).collect();
    let named: Vec<(&str, &[u8])> = names
        .iter()
        .zip(&bytes)
        .map(|(n, b)| (n.as_str(), b.as_slice()))
        .collect();
    let weights = Weights::new(&named).unwrap();
    let given = weights.given_bytes();
    assert_eq!(weights.weight_bytes(), given);

    let mut after_first = None;
    for rows in [64, 1, 37, 64] {
        let program = mlp(rows);
        let handle = session
            .compile_with_weights(&accy_wire::encode(&program), &weights)
            .unwrap();
        // Both dot weights are packed, once, by the first compile; later ones share them.
        assert_eq!(weights.derived_count(), 2, "rows {rows}");
        let total = weights.weight_bytes();
        assert!(total > given);
        assert_eq!(*after_first.get_or_insert(total), total, "rows {rows}");

        let x = values(&program.params[0].ty, rows as usize);
        let mut args = vec![x.clone()];
        args.extend(weight_args.iter().cloned());
        let expected = eval(&program, &args).unwrap();
        let input = x.data().to_le_bytes();
        let mut output = vec![0xA5u8; session.outputs(handle).unwrap()[0].byte_size];
        session
            .invoke(handle, &mut Scratch::new(), &[&input], &mut [&mut output])
            .unwrap();
        assert_eq!(
            output,
            expected[0].data().to_le_bytes(),
            "rows {rows}: exact mode equals the interpreter"
        );
        session.release(handle).unwrap();
    }
    // Another set of weights packs its own.
    let other = Weights::new(&named).unwrap();
    let handle = session
        .compile_with_weights(&accy_wire::encode(&mlp(8)), &other)
        .unwrap();
    assert_eq!(other.derived_count(), 2);
    assert!(!other.shares_memory_with(&weights));
    session.release(handle).unwrap();
}
