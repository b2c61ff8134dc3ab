//! Why an import failed: the error a caller reports, and the per-node errors op importers
//! raise before the driver names the node.

use std::fmt;

/// A malformed byte sequence: the protobuf encoding is broken at `offset`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("at byte {offset}: {message}")]
pub struct DecodeError {
    /// Absolute offset in the input of the offending bytes.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// What kind of failure an [`ImportError`] is, so a caller can choose an exit code or, like
/// the conformance runner, tell a refusal from a bug.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The bytes are not a well-formed protobuf `ModelProto` (or `TensorProto`).
    Malformed,
    /// The model is well-formed protobuf but breaks an ONNX rule: an undefined or twice-defined
    /// value (a cycle shows up as a value read before it is defined), an initializer whose
    /// data does not match its dims, operands of inconsistent types, a missing required input.
    Invalid,
    /// Valid ONNX outside what accy imports: an op, an attribute value, a dtype (f16, bf16,
    /// int8, strings, …), an opset, a non-tensor type, a subgraph.
    Unsupported,
    /// A node needs the value of `value` at import time (a shape, axes, pads, a `Range`
    /// bound) but it is computed from a graph input at run time. Fixing that input with
    /// [`crate::ImportOptions::constants`] (when `value` is a graph input) makes it static.
    NeedsConstant {
        /// The ONNX name of the value that must be known.
        value: String,
    },
    /// A graph input's shape is not fully known (symbolic or missing dims) and
    /// [`crate::ImportOptions::shapes`] does not fix it, or fixes it inconsistently.
    Shape,
    /// A file the model refers to (external data) could not be read.
    Io,
}

/// Why [`crate::import`] refused a model. The message names the node (by name, position and
/// op type), the input or the byte offset concerned, and what is missing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ImportError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// The full message.
    pub message: String,
}

impl ImportError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> ImportError {
        ImportError {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> ImportError {
        ImportError::new(ErrorKind::Invalid, message)
    }

    pub(crate) fn unsupported(message: impl Into<String>) -> ImportError {
        ImportError::new(ErrorKind::Unsupported, message)
    }
}

impl From<DecodeError> for ImportError {
    fn from(e: DecodeError) -> ImportError {
        ImportError::new(ErrorKind::Malformed, format!("malformed ONNX protobuf {e}"))
    }
}

/// An op importer's failure, before the driver adds which node it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NodeError {
    /// Outside what accy imports (see [`ErrorKind::Unsupported`]).
    Unsupported(String),
    /// The node breaks an ONNX rule (see [`ErrorKind::Invalid`]).
    Invalid(String),
    /// Input `value` must be known at import time; `what` says which operand it is.
    NeedsConstant {
        /// ONNX name of the value.
        value: String,
        /// The operand's role, e.g. "`shape` (input 1)".
        what: String,
    },
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeError::Unsupported(m) | NodeError::Invalid(m) => f.write_str(m),
            NodeError::NeedsConstant { value, what } => write!(
                f,
                "{what} must be known when importing, but `{value}` depends on the values of \
                 graph inputs (accy compiles static shapes: such inputs must be fixed to \
                 constants when importing)"
            ),
        }
    }
}

impl From<accy_ir::BuildError> for NodeError {
    fn from(e: accy_ir::BuildError) -> NodeError {
        NodeError::Invalid(format!("operand types do not fit: {e}"))
    }
}

/// The result of one op importer step.
pub(crate) type NodeResult<T> = Result<T, NodeError>;

/// A [`NodeError::Unsupported`] with `message`.
pub(crate) fn unsupported<T>(message: impl Into<String>) -> NodeResult<T> {
    Err(NodeError::Unsupported(message.into()))
}

/// A [`NodeError::Invalid`] with `message`.
pub(crate) fn invalid<T>(message: impl Into<String>) -> NodeResult<T> {
    Err(NodeError::Invalid(message.into()))
}
