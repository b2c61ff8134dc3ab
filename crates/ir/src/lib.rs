//! accy's tensor program IR (internal crate; the public API is `accy-session`).
//!
//! A [`Program`] is plain data: typed parameters (inputs and named weights), SSA
//! [`Instruction`]s whose [`Op`]s are documented with their exact semantics, and outputs.
//! This crate builds programs ([`Builder`]), checks them ([`verify`]), prints and parses their
//! text form ([`text`]), and runs them slowly but obviously correctly ([`interp::eval`]) as the
//! oracle every compiled kernel is tested against.

#![deny(missing_docs)]

mod builder;
mod dtype;
mod infer;
pub mod interp;
mod op;
mod program;
mod shape;
mod tensor;
pub mod text;
mod verify;

#[cfg(feature = "gen")]
pub mod gen;

pub use builder::{BuildError, Builder};
pub use dtype::DType;
pub use infer::{infer_type, TypeError};
pub use op::{axes, dims, Axes, BinaryOp, CompareOp, Op, ReduceOp, UnaryOp};
pub use program::{Instruction, Output, Param, ParamKind, Program, ValueId};
pub use shape::{element_count, row_major_strides, Dim, Dims, Type, MAX_RANK};
pub use tensor::{ShapeMismatch, Tensor, TensorData};
pub use verify::{is_valid_name, verify, Location, VerifyError, VerifyErrors, MAX_NAME_LEN};
