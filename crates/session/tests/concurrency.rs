//! Several threads invoke one handle and different handles at once, each with its own buffers
//! and scratch; every result is checked.

use std::sync::Arc;

use accy_ir::{BinaryOp, Builder, DType, Type, UnaryOp};
use accy_session::{Scratch, Session};

fn scale_program(n: u64, factor: f32) -> Vec<u8> {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[n])).unwrap();
    let c = b
        .constant(accy_ir::Tensor::f32s(&[], vec![factor]))
        .unwrap();
    let cb = b.broadcast(c, &[n], &[]).unwrap();
    let y = b.binary(BinaryOp::Mul, x, cb).unwrap();
    let z = b.unary(UnaryOp::Abs, y).unwrap();
    b.output(z).unwrap();
    accy_wire::encode(&b.finish().unwrap())
}

#[test]
fn threads_share_handles_and_get_their_own_results() {
    let session = Arc::new(Session::new().unwrap());
    let handles = [
        session.compile(&scale_program(1000, 2.0)).unwrap(),
        session.compile(&scale_program(1000, -3.0)).unwrap(),
    ];
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let session = Arc::clone(&session);
            std::thread::spawn(move || {
                let (h, factor) = if t % 2 == 0 {
                    (handles[0], 2.0f32)
                } else {
                    (handles[1], -3.0)
                };
                let mut scratch = Scratch::new();
                for round in 0..200 {
                    let x: Vec<f32> = (0..1000)
                        .map(|i| (i as f32 - 500.0) * (t + round) as f32)
                        .collect();
                    let mut y = vec![0.0f32; 1000];
                    session
                        .invoke_typed(h, &mut scratch, &[&x], &mut [&mut y])
                        .unwrap();
                    for (a, b) in x.iter().zip(&y) {
                        assert_eq!(*b, (a * factor).abs());
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}
