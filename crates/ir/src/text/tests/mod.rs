//! Tests of the text format: golden output, per-op round trips and float bit patterns
//! (`round_trip`), error positions and no-panic properties (`errors`).

use super::parse;
use crate::{DType, Program, Type};

mod errors;
mod round_trip;

fn t(dtype: DType, d: &[u64]) -> Type {
    Type::new(dtype, d)
}

fn parsed(text: &str) -> Program {
    match parse(text) {
        Ok(p) => p,
        Err(e) => panic!("parse failed:\n{e}\nin:\n{text}"),
    }
}

#[test]
fn a_literal_alone_parses_against_a_type() {
    use super::parse_literal;
    use crate::{Tensor, TensorData};
    let m = parse_literal("[[1, 2], [3, 4]]", &t(DType::I32, &[2, 2])).unwrap();
    assert_eq!(
        m,
        Tensor::new(&[2, 2], TensorData::I32(vec![1, 2, 3, 4])).unwrap()
    );
    let flat = parse_literal(" [1.5, -inf] ", &t(DType::F32, &[2])).unwrap();
    assert_eq!(
        flat.data().to_le_bytes(),
        [1.5f32, f32::NEG_INFINITY].map(f32::to_le_bytes).concat()
    );
    let s = parse_literal("true", &t(DType::Bool, &[])).unwrap();
    assert_eq!(s, Tensor::new(&[], TensorData::Bool(vec![true])).unwrap());
    let e = parse_literal("[1, 2, 3]", &t(DType::F32, &[2])).unwrap_err();
    assert!(e.message.contains("3 elements"), "{e}");
    let e = parse_literal("2.5 7", &t(DType::F32, &[])).unwrap_err();
    assert_eq!((e.line, e.column), (1, 5));
    assert!(parse_literal("300", &t(DType::U8, &[])).is_err());
}

#[test]
fn the_source_map_points_at_each_item() {
    use super::{parse_with_source_map, LineColumn};
    use crate::Location;
    let text = "# comment\nprogram {\n  %x = input \"x\" : f32[2]\n\n    %y = neg %x : f32[2]\n  \
                output %y\n  output %x }\n";
    let (program, map) = parse_with_source_map(text).unwrap();
    assert_eq!(program, parsed(text));
    let at = |line, column| Some(LineColumn { line, column });
    assert_eq!(map.position(Location::Param(0)), at(3, 3));
    assert_eq!(map.position(Location::Instruction(0)), at(5, 5));
    assert_eq!(map.position(Location::Output(0)), at(6, 3));
    assert_eq!(map.position(Location::Output(1)), at(7, 3));
    assert_eq!(map.position(Location::Output(2)), None);
    assert_eq!(map.position(Location::Program), None);
}
