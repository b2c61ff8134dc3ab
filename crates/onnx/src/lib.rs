//! ONNX import for accy (internal crate; the `accy` command is its user): ONNX `ModelProto`
//! bytes to an [`accy_ir::Program`] plus the named weights it needs.
//!
//! [`import`] reads the model with a hand-written protobuf reader (never panics, allocates in
//! proportion to the input, borrows tensor data instead of copying it until it is converted),
//! checks the default-domain opset ([`MIN_OPSET`]..=[`MAX_OPSET`]), turns initializers into
//! weights, graph inputs into program inputs (symbolic dims fixed by
//! [`ImportOptions::shapes`]) and every node, in order, into IR instructions:
//!
//! - ONNX broadcasting becomes explicit `broadcast` instructions;
//! - everything computable from known values — shape arithmetic (`Shape`, `Size`, `Gather`,
//!   `Slice`, `Concat`, `Unsqueeze` on shapes), `ConstantOfShape`, `Range` with known bounds —
//!   is folded at import by the reference interpreter, so the program has static shapes;
//! - an op, attribute, dtype or opset outside what the IR expresses exactly is refused with an
//!   [`ImportError`] naming the node, its op type and what is missing — never approximated.
//!   The supported ops are listed by [`supported_ops`].
//!
//! The result's outputs are checked against the output types the model declares.
//!
//! Why not `prost` with generated code: measured, prost 0.14 adds 11 crates (syn and a
//! proc-macro among them) and its generated messages allocate ~96 bytes of structs per 2
//! input bytes of empty repeated entries (1 MiB of empty `node` entries became 96 MiB); the
//! reader here ([`pb`](self) module, ~300 lines) needs no dependency, keeps repeated entries
//! as 24-byte slices and tensor data in place, and is fuzzed (`cargo xtask fuzz onnx`).

#![deny(missing_docs)]

mod emit;
mod error;
mod graph;
mod helpers;
mod names;
mod node;
mod ops;
mod pb;
mod schema;
mod tensor;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use accy_ir::{Program, Tensor};

pub use error::{DecodeError, ErrorKind, ImportError};
pub use ops::supported_ops;

/// The oldest default-domain (`ai.onnx`) opset version accy imports.
pub const MIN_OPSET: i64 = 13;

/// The newest default-domain opset version accy imports: the newest defined by the `onnx`
/// package the conformance suite pins (1.19.0).
pub const MAX_OPSET: i64 = 24;

/// What the caller fixes about the model before importing it.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Full shapes for graph inputs, by ONNX input name: required for every input whose
    /// shape in the model has a symbolic (`dim_param`) or unknown dim; where the model gives a
    /// dim, the shape here must agree with it.
    pub shapes: BTreeMap<String, Vec<u64>>,
    /// Values for graph inputs that are to be treated as constants (folded into the program
    /// instead of becoming program inputs), by ONNX input name. Needed where a node requires
    /// a value at import time (a `Reshape` target shape, `Slice` bounds, …) that the model
    /// computes from an input; see [`ErrorKind::NeedsConstant`].
    pub constants: BTreeMap<String, Tensor>,
    /// The directory external tensor data is read from (normally the model file's
    /// directory). `None` refuses models with external data.
    pub base_dir: Option<PathBuf>,
}

/// A graph input of an imported model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelInput {
    /// The input's ONNX name.
    pub onnx_name: String,
    /// The name of the program input that receives it, or `None` when
    /// [`ImportOptions::constants`] fixed its value.
    pub param: Option<String>,
}

/// An imported model: the program, the data of its weights, and how ONNX names map to it.
#[derive(Clone, Debug)]
pub struct Model {
    /// The verified program. Its inputs are the graph inputs (see [`Model::inputs`]); its
    /// weights are the initializers it uses at run time with more than a few elements
    /// (smaller ones are inlined as constants); its outputs are the graph outputs, in order.
    pub program: Program,
    /// The value of every weight parameter of `program`, by parameter name.
    pub weights: Vec<(String, Tensor)>,
    /// The graph inputs (initializers excluded), in order.
    pub inputs: Vec<ModelInput>,
    /// The ONNX names of the graph outputs, in program output order.
    pub outputs: Vec<String>,
    /// The model's default-domain opset version.
    pub opset: i64,
}

/// Imports the ONNX model in `bytes` (a serialized `ModelProto`).
///
/// Errors name what is wrong and say which kind of failure it is ([`ErrorKind`]): malformed
/// bytes, an invalid model, something unsupported, a value or shape the caller must fix, or
/// unreadable external data. Never panics, whatever the bytes.
pub fn import(bytes: &[u8], options: &ImportOptions) -> Result<Model, ImportError> {
    graph::import(bytes, options)
}

/// Reads the ONNX model at `path` and imports it, with external data looked up beside it
/// (unless `options.base_dir` says otherwise).
pub fn import_file(path: &Path, options: &ImportOptions) -> Result<Model, ImportError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ImportError::new(ErrorKind::Io, format!("reading {}: {e}", path.display())))?;
    let mut options = options.clone();
    if options.base_dir.is_none() {
        options.base_dir = Some(
            path.parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        );
    }
    import(&bytes, &options)
}

/// Reads a serialized `TensorProto` (the `.pb` files of ONNX test data) as its name and value.
pub fn read_tensor(bytes: &[u8]) -> Result<(String, Tensor), ImportError> {
    let proto = schema::TensorProto::parse(pb::Msg::new(bytes))?;
    let what = format!("tensor `{}`", proto.name);
    let tensor = tensor::to_tensor(&proto, &what, None)?;
    Ok((proto.name.to_owned(), tensor))
}
