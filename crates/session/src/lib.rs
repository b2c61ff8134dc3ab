//! accy's public API: compile tensor programs to native code for this CPU and run them on
//! memory the caller supplies.
//!
//! A host encodes a program as wire bytes (`accy_wire::encode`, or from another language per
//! `docs/wire-format.md`), compiles it with [`Session::compile`] into one of
//! [`MAX_PROGRAMS`] generation-checked slots, reads the [`Descriptor`]s of its inputs and
//! outputs, and calls [`Session::invoke`] as often as it likes, from as many threads as it
//! likes, each call with its own [`Scratch`] and buffers. Failures are [`Error`]s, each with a
//! stable [`Status`] code for other languages.
//!
//! ```no_run
//! use accy_ir::{Builder, DType, Type, UnaryOp};
//! use accy_session::{Scratch, Session};
//!
//! let mut b = Builder::new();
//! let x = b.input("x", Type::new(DType::F32, &[4])).unwrap();
//! let y = b.unary(UnaryOp::Neg, x).unwrap();
//! b.output(y).unwrap();
//! let bytes = accy_wire::encode(&b.finish().unwrap());
//!
//! let session = Session::new().unwrap();
//! let handle = session.compile(&bytes).unwrap();
//! let input = [1.0f32, -2.0, 3.0, 0.0];
//! let mut output = [0.0f32; 4];
//! let mut scratch = Scratch::new();
//! session
//!     .invoke_typed(handle, &mut scratch, &[&input], &mut [&mut output])
//!     .unwrap();
//! assert_eq!(output, [-1.0, 2.0, -3.0, -0.0]);
//! ```

#![deny(missing_docs)]

mod descriptor;
mod error;
mod handle;
mod mapping;
pub mod model;
mod options;
mod session;

pub use accy_executable::{
    Executor, Inline, MappedWeight, Scratch, ThreadPool, Tier, WeightError, Weights,
};
/// The IR types the facade's signatures mention, so a host needs no other accy crate.
pub use accy_ir::{DType, Dims, Program};
pub use descriptor::Descriptor;
pub use error::{Cause, Error, Status};
pub use handle::Handle;
pub use mapping::SessionFailure;
pub use model::{
    Allocation, Command, DefinitionId, Kernel, Model, ModelContext, ModelDefinition, ModelFailure,
    ModelRecorder, PreparedModel, Region,
};
pub use options::SessionOptions;
pub use session::{Session, MAX_PROGRAMS};

/// Decodes a program from wire bytes (`docs/wire-format.md`) without compiling it, for the
/// calls that take a [`Program`] ([`Model::new`], [`Model::prepare`]) when what a host has is
/// bytes (the C ABI). Malformed bytes are [`Error::InvalidProgram`] and a newer format
/// [`Error::UnsupportedVersion`], as [`Session::compile`] reports them; the program is
/// verified when it is compiled.
pub fn decode_program(bytes: &[u8]) -> Result<Program, Error> {
    accy_wire::decode(bytes).map_err(|e| mapping::Inner::Decode(e).into_error())
}
