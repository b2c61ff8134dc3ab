//! Printing and parsing valid programs: golden text, every op, every float bit pattern, and
//! the single-line printers on invalid programs.

use super::{parsed, t};
use crate::text::{instruction_text, output_text, param_text, print};
use crate::{
    axes, dims, verify, BinaryOp, Builder, CompareOp, DType, Instruction, Op, Output, Param,
    ParamKind, Program, ReduceOp, Tensor, TensorData, UnaryOp, ValueId,
};

const GOLDEN: &str = r#"program {
  %0 = input "x" : f32[2,3]
  %1 = input "acc" : f32[2]
  %2 = weight "fc1.weight" : f32[3,4]
  %3 = dot %0, %2, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[2,4]
  %4 = constant [[1.0, 2.5e-8], [-0.0, -inf]] : f32[2,2]
  %5 = add %3, %3 : f32[2,4]
  %6 = compare lt %3, %5 : bool[2,4]
  %7 = reduce sum %5, axes=[1] : f32[2]
  %8 = add %7, %1 : f32[2]
  %9 = convert %8, to=i32 : i32[2]
  %10 = iota axis=0 : i64[4]
  output %5
  output %8 donates 1
}
"#;

#[test]
fn prints_golden_text() {
    let mut b = Builder::new();
    let x = b.input("x", t(DType::F32, &[2, 3])).unwrap();
    let acc = b.input("acc", t(DType::F32, &[2])).unwrap();
    let w = b.weight("fc1.weight", t(DType::F32, &[3, 4])).unwrap();
    let h = b.dot(x, w, (&[], &[]), (&[1], &[0])).unwrap();
    let c = Tensor::f32s(&[2, 2], vec![1.0, 2.5e-8, -0.0, f32::NEG_INFINITY]);
    b.constant(c).unwrap();
    let s = b.binary(BinaryOp::Add, h, h).unwrap();
    b.compare(CompareOp::Lt, h, s).unwrap();
    let r = b.reduce(ReduceOp::Sum, s, &[1]).unwrap();
    let a = b.binary(BinaryOp::Add, r, acc).unwrap();
    b.convert(a, DType::I32).unwrap();
    b.iota(t(DType::I64, &[4]), 0).unwrap();
    b.output(s).unwrap();
    b.output_donating(a, 1).unwrap();
    let p = b.finish().unwrap();
    assert_eq!(print(&p), GOLDEN);
    assert_eq!(parsed(GOLDEN), p);
    assert_eq!(param_text(&p, 2), r#"%2 = weight "fc1.weight" : f32[3,4]"#);
    assert_eq!(
        instruction_text(&p, 4),
        "%7 = reduce sum %5, axes=[1] : f32[2]"
    );
    assert_eq!(output_text(&p, 1), "output %8 donates 1");
}

/// Parameters every per-op line below may use.
const PREAMBLE: &str = r#"program {
  %0 = input "a" : f32[2,3]
  %1 = input "b" : f32[2,3]
  %2 = input "i" : i32[2,3]
  %3 = input "m" : bool[2,3]
  %4 = input "idx" : i64[4]
  %5 = weight "s" : f32[]
  %6 = weight "w" : f32[2,3,4]
"#;

/// Parses `line` (defining `%7`) after [`PREAMBLE`], checks the program verifies, prints back
/// exactly, and round-trips as data.
fn check_line(line: &str) -> Op {
    let text = format!("{PREAMBLE}  {line}\n  output %7\n}}\n");
    let p = parsed(&text);
    if let Err(e) = verify(&p) {
        panic!("{line}: {e}");
    }
    assert_eq!(print(&p), text, "{line}");
    assert_eq!(instruction_text(&p, 0), line);
    assert_eq!(parsed(&print(&p)), p);
    p.instructions[0].op.clone()
}

#[test]
fn every_unary_binary_and_compare_op_round_trips() {
    for &op in UnaryOp::ALL {
        let (x, ty) = match op {
            UnaryOp::Not => ("%3", "bool[2,3]"),
            UnaryOp::Neg | UnaryOp::Abs => ("%2", "i32[2,3]"),
            _ => ("%0", "f32[2,3]"),
        };
        let got = check_line(&format!("%7 = {op} {x} : {ty}"));
        let want_x = ValueId(x[1..].parse().unwrap());
        assert_eq!(got, Op::Unary { op, x: want_x });
    }
    for &op in BinaryOp::ALL {
        let (x, ty) = match op {
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => ("%3", "bool[2,3]"),
            BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic => ("%2", "i32[2,3]"),
            _ => ("%0", "f32[2,3]"),
        };
        check_line(&format!("%7 = {op} {x}, {x} : {ty}"));
    }
    for &op in CompareOp::ALL {
        let got = check_line(&format!("%7 = compare {op} %0, %1 : bool[2,3]"));
        assert_eq!(
            got,
            Op::Compare {
                op,
                lhs: ValueId(0),
                rhs: ValueId(1)
            }
        );
    }
    for &op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min].iter() {
        let got = check_line(&format!("%7 = reduce {op} %0, axes=[1,0] : f32[]"));
        assert_eq!(
            got,
            Op::Reduce {
                op,
                x: ValueId(0),
                axes: axes(&[1, 0])
            }
        );
    }
}

#[test]
fn every_structural_op_round_trips() {
    let x = ValueId(0);
    let cases: Vec<(&str, Op)> = vec![
        (
            "%7 = select %3, %0, %1 : f32[2,3]",
            Op::Select {
                cond: ValueId(3),
                on_true: x,
                on_false: ValueId(1),
            },
        ),
        (
            "%7 = convert %0, to=u8 : u8[2,3]",
            Op::Convert { x, to: DType::U8 },
        ),
        (
            "%7 = iota axis=1 : i32[2,3]",
            Op::Iota {
                ty: t(DType::I32, &[2, 3]),
                axis: 1,
            },
        ),
        (
            "%7 = broadcast %5, dims=[2,3], axes=[] : f32[2,3]",
            Op::Broadcast {
                x: ValueId(5),
                dims: dims(&[2, 3]),
                axes: axes(&[]),
            },
        ),
        (
            "%7 = reshape %0, dims=[3,1,2] : f32[3,1,2]",
            Op::Reshape {
                x,
                dims: dims(&[3, 1, 2]),
            },
        ),
        (
            "%7 = transpose %0, perm=[1,0] : f32[3,2]",
            Op::Transpose {
                x,
                perm: axes(&[1, 0]),
            },
        ),
        (
            "%7 = slice %0, start=[0,1], limit=[2,3], stride=[1,2] : f32[2,1]",
            Op::Slice {
                x,
                start: dims(&[0, 1]),
                limit: dims(&[2, 3]),
                stride: dims(&[1, 2]),
            },
        ),
        (
            "%7 = concat %0, %1, %0, axis=1 : f32[2,9]",
            Op::Concat {
                xs: [x, ValueId(1), x].into_iter().collect(),
                axis: 1,
            },
        ),
        (
            "%7 = pad %0, %5, low=[1,-1], high=[0,2], interior=[0,1] : f32[3,6]",
            Op::Pad {
                x,
                value: ValueId(5),
                low: [1, -1].into_iter().collect(),
                high: [0, 2].into_iter().collect(),
                interior: dims(&[0, 1]),
            },
        ),
        (
            "%7 = reverse %0, axes=[0,1] : f32[2,3]",
            Op::Reverse {
                x,
                axes: axes(&[0, 1]),
            },
        ),
        (
            concat!(
                "%7 = dot %6, %0, lhs_batch=[0], rhs_batch=[0], ",
                "lhs_contract=[1], rhs_contract=[1] : f32[2,4]"
            ),
            Op::Dot {
                lhs: ValueId(6),
                rhs: x,
                lhs_batch: axes(&[0]),
                rhs_batch: axes(&[0]),
                lhs_contract: axes(&[1]),
                rhs_contract: axes(&[1]),
            },
        ),
        (
            "%7 = gather %0, %4, axis=1 : f32[2,4]",
            Op::Gather {
                x,
                indices: ValueId(4),
                axis: 1,
            },
        ),
    ];
    for (line, op) in cases {
        assert_eq!(check_line(line), op, "{line}");
    }
}

/// Checks `line` (a `constant` defining `%7`) with [`check_line`] and that its elements are
/// exactly `data`.
fn check_constant(line: &str, data: TensorData) {
    match check_line(line) {
        Op::Constant(got) => assert_eq!(got.data(), &data, "{line}"),
        other => panic!("{line}: parsed as {other:?}"),
    }
}

fn f32_bits(bits: &[u32]) -> TensorData {
    TensorData::F32(bits.iter().map(|&b| f32::from_bits(b)).collect())
}

fn f64_bits(bits: &[u64]) -> TensorData {
    TensorData::F64(bits.iter().map(|&b| f64::from_bits(b)).collect())
}

#[test]
fn constants_round_trip_every_dtype_and_bit_pattern() {
    // -0.0, inf, canonical NaN, smallest subnormal, most negative finite.
    check_constant(
        "%7 = constant [[1.0, -0.0, inf], [nan, 1e-45, -3.4028235e38]] : f32[2,3]",
        f32_bits(&[
            0x3f80_0000,
            0x8000_0000,
            0x7f80_0000,
            0x7fc0_0000,
            1,
            0xff7f_ffff,
        ]),
    );
    // NaNs with a sign, a signalling payload and a full payload; largest subnormal.
    check_constant(
        "%7 = constant [nan:0xffc00000, nan:0x7f800001, nan:0x7fffffff, 1.1754942e-38] : f32[4]",
        f32_bits(&[0xffc0_0000, 0x7f80_0001, 0x7fff_ffff, 0x007f_ffff]),
    );
    check_constant(
        "%7 = constant [5e-324, 0.1, nan:0xfff8000000000001, 1.7976931348623157e308] : f64[4]",
        f64_bits(&[
            1,
            0.1f64.to_bits(),
            0xfff8_0000_0000_0001,
            f64::MAX.to_bits(),
        ]),
    );
    check_constant(
        "%7 = constant nan : f64[]",
        f64_bits(&[0x7ff8_0000_0000_0000]),
    );
    check_constant(
        "%7 = constant [[-2147483648], [2147483647]] : i32[2,1]",
        TensorData::I32(vec![i32::MIN, i32::MAX]),
    );
    check_constant(
        "%7 = constant [-9223372036854775808, 9223372036854775807] : i64[2]",
        TensorData::I64(vec![i64::MIN, i64::MAX]),
    );
    check_constant("%7 = constant 255 : u8[]", TensorData::U8(vec![255]));
    check_constant(
        "%7 = constant [[[true]], [[false]]] : bool[2,1,1]",
        TensorData::Bool(vec![true, false]),
    );
    check_constant("%7 = constant [] : i64[0,5]", TensorData::I64(vec![]));
    // Empty tensors print flat: nesting would need 2^60 pairs of brackets here.
    check_constant(
        "%7 = constant [] : u8[1152921504606846976,0]",
        TensorData::U8(vec![]),
    );
}

#[test]
fn accepts_names_flat_literals_comments_and_loose_spacing() {
    let text = "# leading comment\nprogram{%x=input\"x\":f32[2,2] # trailing\n\
                %h1 = constant [1, 2, 3.5, -inf] : f32[2,2]\n\t%out = max %x,%h1:f32[2,2]\n\
                output %out donates 0 output %x}";
    let p = parsed(text);
    let mut b = Builder::new();
    let x = b.input("x", t(DType::F32, &[2, 2])).unwrap();
    let c = b
        .constant(Tensor::f32s(
            &[2, 2],
            vec![1.0, 2.0, 3.5, f32::NEG_INFINITY],
        ))
        .unwrap();
    let m = b.binary(BinaryOp::Max, x, c).unwrap();
    b.output_donating(m, 0).unwrap();
    b.output(x).unwrap();
    assert_eq!(p, b.finish().unwrap());
    assert!(print(&p).contains("%1 = constant [[1.0, 2.0], [3.5, -inf]] : f32[2,2]"));
}

#[test]
fn single_line_printers_never_panic_on_invalid_programs() {
    let huge = t(DType::F64, &[u64::MAX, u64::MAX]);
    let p = Program {
        params: vec![Param {
            kind: ParamKind::Weight,
            name: "bad \"name\"\n".into(),
            ty: huge.clone(),
        }],
        instructions: vec![
            Instruction {
                op: Op::Binary {
                    op: BinaryOp::Add,
                    lhs: ValueId(999),
                    rhs: ValueId(u32::MAX),
                },
                ty: huge.clone(),
            },
            Instruction {
                op: Op::Constant(Tensor::f32s(&[2], vec![1.0, 2.0])),
                ty: t(DType::I32, &[7, 7]),
            },
            Instruction {
                op: Op::Iota {
                    ty: t(DType::Bool, &[3]),
                    axis: 9,
                },
                ty: t(DType::F32, &[]),
            },
            Instruction {
                op: Op::Concat {
                    xs: Default::default(),
                    axis: 0,
                },
                ty: t(DType::F32, &[]),
            },
            Instruction {
                op: Op::Constant(Tensor::u8s(&[u64::MAX, 0], vec![])),
                ty: t(DType::U8, &[]),
            },
        ],
        outputs: vec![Output {
            value: ValueId(12345),
            donates: Some(u32::MAX),
        }],
    };
    let max = u64::MAX;
    assert_eq!(
        param_text(&p, 0),
        format!("%0 = weight \"bad \\\"name\\\"\\n\" : f64[{max},{max}]")
    );
    assert_eq!(
        instruction_text(&p, 0),
        format!("%1 = add %999, %4294967295 : f64[{max},{max}]")
    );
    assert_eq!(
        instruction_text(&p, 1),
        "%2 = constant [1.0, 2.0] : i32[7,7]"
    );
    assert_eq!(instruction_text(&p, 2), "%3 = iota axis=9 : f32[]");
    assert_eq!(instruction_text(&p, 3), "%4 = concat axis=0 : f32[]");
    assert_eq!(instruction_text(&p, 4), "%5 = constant [] : u8[]");
    assert_eq!(output_text(&p, 0), "output %12345 donates 4294967295");
    assert_eq!(param_text(&p, 1), "<no parameter 1>");
    assert_eq!(
        instruction_text(&p, usize::MAX),
        format!("<no instruction {}>", usize::MAX)
    );
    assert_eq!(output_text(&p, 7), "<no output 7>");
    assert!(print(&p).starts_with("program {\n  %0 = weight"));
    assert!(verify(&p).is_err());
}

const DOC: &str = include_str!("../../../../../docs/text-format.md");

#[test]
fn doc_examples_parse_and_verify() {
    // The first example program, which is the golden text with a comment.
    let start = DOC.find("```text\n").unwrap() + "```text\n".len();
    let end = start + DOC[start..].find("```").unwrap();
    assert_eq!(parsed(&DOC[start..end]), parsed(GOLDEN));
    // Every inline example that defines a value, in a program with the operands it names.
    let mut checked = 0;
    for span in DOC.split('`').skip(1).step_by(2) {
        let Some((name, _)) = span.split_once(" = ") else {
            continue;
        };
        let skip = ["input", "weight", "…"].iter().any(|w| span.contains(w));
        if !name.starts_with('%') || skip {
            continue;
        }
        let text = format!(
            "program {{\n  %a = input \"a\" : f32[2,3]\n  %b = input \"b\" : f32[2,3]\n  \
             %m = input \"m\" : bool[2,3]\n  %i = input \"i\" : i32[2,3]\n  \
             %idx = input \"idx\" : i64[4]\n  %s = weight \"s\" : f32[]\n  \
             %w = weight \"w\" : f32[2,3,4]\n  {span}\n  output {name}\n}}\n"
        );
        let p = parsed(&text);
        assert!(verify(&p).is_ok(), "{span}: {:?}", verify(&p));
        checked += 1;
    }
    assert!(checked >= 24, "only {checked} examples found");
}
