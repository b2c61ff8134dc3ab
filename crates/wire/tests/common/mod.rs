//! Programs and byte-surgery helpers shared by the wire tests.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of these helpers"
)]

use accy_ir::{
    BinaryOp, Builder, CompareOp, DType, Program, ReduceOp, Tensor, TensorData, Type, UnaryOp,
};

/// The program whose encoding is pinned by `tests/golden/reference.accyb`: every op variant,
/// every sub-op, every dtype, both parameter kinds, donation, ranks above 4, zero-size and
/// rank-0 constants, and NaN / -0.0 / infinity constants with unusual bit patterns.
pub fn reference_program() -> Program {
    let mut b = Builder::new();
    let f = |dims: &[u64]| Type::new(DType::F32, dims);
    let x = b.input("x", f(&[2, 3])).unwrap();
    let i = b.input("i", Type::new(DType::I32, &[2, 3])).unwrap();
    let w = b.weight("layer.0/w", f(&[3, 4])).unwrap();
    let acc = b.input("acc", f(&[2, 3])).unwrap();
    let flag = b.input("flag", Type::new(DType::Bool, &[2, 3])).unwrap();
    let idx = b.weight("idx", Type::new(DType::I64, &[2])).unwrap();
    let bytes = b.input("bytes", Type::new(DType::U8, &[4])).unwrap();
    let d = b.input("d", Type::new(DType::F64, &[3])).unwrap();

    let mut outs = Vec::new();
    for &op in UnaryOp::ALL {
        let operand = if op == UnaryOp::Not { flag } else { x };
        outs.push(b.unary(op, operand).unwrap());
    }
    b.unary(UnaryOp::Neg, i).unwrap();
    b.unary(UnaryOp::Not, bytes).unwrap();
    for &op in BinaryOp::ALL {
        let operand = match op {
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => flag,
            BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic => i,
            _ => x,
        };
        b.binary(op, operand, operand).unwrap();
    }
    for &op in CompareOp::ALL {
        b.compare(op, x, acc).unwrap();
    }
    let sel = b.select(flag, x, acc).unwrap();
    for to in DType::ALL {
        b.convert(x, to).unwrap();
    }
    b.convert(d, DType::I64).unwrap();

    let weird = Tensor::f32s(
        &[2, 3],
        vec![
            f32::NAN,
            -0.0,
            f32::from_bits(0xffc0_0001),
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE / 2.0,
        ],
    );
    let weird = b.constant(weird).unwrap();
    b.constant(Tensor::f64s(
        &[],
        vec![f64::from_bits(0x7ff8_0000_0000_0001)],
    ))
    .unwrap();
    b.constant(Tensor::f64s(&[2], vec![-0.0, f64::NAN]))
        .unwrap();
    b.constant(Tensor::i32s(&[3], vec![i32::MIN, -1, i32::MAX]))
        .unwrap();
    b.constant(Tensor::i64s(&[2], vec![i64::MIN, 0x0102_0304_0506_0708]))
        .unwrap();
    b.constant(Tensor::u8s(&[2, 1], vec![0, 255])).unwrap();
    b.constant(Tensor::bools(&[3], vec![true, false, true]))
        .unwrap();
    b.constant(Tensor::new(&[0, 3], TensorData::F32(vec![])).unwrap())
        .unwrap();
    let zero = b.constant(Tensor::f32s(&[], vec![-0.0])).unwrap();

    b.iota(Type::new(DType::I64, &[2, 3]), 1).unwrap();
    b.iota(Type::new(DType::F32, &[4]), 0).unwrap();
    b.broadcast(d, &[2, 3], &[1]).unwrap();
    let deep = b.reshape(x, &[1, 2, 1, 1, 3, 1]).unwrap();
    b.transpose(deep, &[5, 4, 3, 2, 1, 0]).unwrap();
    b.reshape(x, &[6]).unwrap();
    let tr = b.transpose(x, &[1, 0]).unwrap();
    b.slice(x, &[0, 1], &[2, 3], &[1, 2]).unwrap();
    b.concat(&[x, acc, sel], 0).unwrap();
    b.pad(x, zero, &[1, -1], &[0, 2], &[1, 0]).unwrap();
    b.reverse(x, &[0, 1]).unwrap();
    for &op in ReduceOp::ALL {
        b.reduce(op, x, &[1]).unwrap();
    }
    b.reduce(ReduceOp::Max, flag, &[0, 1]).unwrap();
    b.reduce(ReduceOp::Sum, bytes, &[]).unwrap();
    let mm = b.matmul(x, w).unwrap();
    b.dot(x, tr, (&[], &[]), (&[1], &[0])).unwrap();
    b.dot(x, acc, (&[0], &[0]), (&[1], &[1])).unwrap();
    let g = b.gather(w, idx, 0).unwrap();
    let sum = b.binary(BinaryOp::Add, x, weird).unwrap();

    b.output_donating(sum, 2).unwrap();
    b.output(mm).unwrap();
    b.output(g).unwrap();
    b.output(outs[0]).unwrap();
    b.output(x).unwrap();
    b.output(mm).unwrap();
    b.finish().unwrap()
}

/// The worked example of `docs/wire-format.md` (its text form is printed there too).
pub fn doc_example() -> Program {
    let mut b = Builder::new();
    let x = b.input("x", Type::new(DType::F32, &[2])).unwrap();
    let w = b.weight("w", Type::new(DType::F32, &[2])).unwrap();
    let c = b.constant(Tensor::f32s(&[2], vec![0.5, -0.0])).unwrap();
    let t = b.binary(BinaryOp::Add, x, w).unwrap();
    let y = b.binary(BinaryOp::Mul, t, c).unwrap();
    b.output_donating(y, 0).unwrap();
    b.finish().unwrap()
}

/// A few small programs of different shapes, for tests that need variety without the
/// generator.
pub fn small_programs() -> Vec<Program> {
    let mut out = vec![reference_program(), doc_example()];
    let mut b = Builder::new();
    let x = b.input("only", Type::scalar(DType::Bool)).unwrap();
    b.output(x).unwrap();
    out.push(b.finish().unwrap());
    let mut b = Builder::new();
    let c = b
        .constant(Tensor::i64s(&[2, 2], vec![1, -2, 3, -4]))
        .unwrap();
    let r = b.reduce(ReduceOp::Prod, c, &[0]).unwrap();
    b.output(r).unwrap();
    b.output(c).unwrap();
    out.push(b.finish().unwrap());
    out
}

/// One section of an encoding: id, flags and payload.
#[derive(Clone, Debug)]
pub struct Section {
    pub id: u16,
    pub flags: u16,
    pub payload: Vec<u8>,
}

/// Splits a well-formed encoding into its sections (panics on malformed input: tests only).
pub fn split(bytes: &[u8]) -> Vec<Section> {
    let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    let mut pos = 16;
    let mut out = Vec::new();
    for _ in 0..count {
        let id = u16::from_le_bytes(bytes[pos..pos + 2].try_into().unwrap());
        let flags = u16::from_le_bytes(bytes[pos + 2..pos + 4].try_into().unwrap());
        let len = u64::from_le_bytes(bytes[pos + 4..pos + 12].try_into().unwrap()) as usize;
        out.push(Section {
            id,
            flags,
            payload: bytes[pos + 12..pos + 12 + len].to_vec(),
        });
        pos += 12 + len;
    }
    assert_eq!(pos, bytes.len());
    out
}

/// Wire bytes with the given version and sections.
pub fn assemble(major: u16, minor: u16, sections: &[Section]) -> Vec<u8> {
    let mut out = accy_wire::MAGIC.to_vec();
    out.extend(major.to_le_bytes());
    out.extend(minor.to_le_bytes());
    out.extend((sections.len() as u32).to_le_bytes());
    for s in sections {
        out.extend(s.id.to_le_bytes());
        out.extend(s.flags.to_le_bytes());
        out.extend((s.payload.len() as u64).to_le_bytes());
        out.extend(&s.payload);
    }
    out
}
