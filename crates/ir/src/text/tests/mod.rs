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
