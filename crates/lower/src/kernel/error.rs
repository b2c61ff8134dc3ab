//! The errors of [`LoopKernel::validate`](super::LoopKernel::validate) and
//! [`ContractionKernel::validate`](super::ContractionKernel::validate) (and of the kernel
//! interpreter, which runs only validated kernels): which kernel, where in it, and what rule
//! it breaks.

use std::fmt;

use accy_artifact::Access;
use accy_ir::{DType, ReduceOp};

use super::NodeId;

/// Where in a kernel an access or a problem is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Site {
    /// Node number `n`.
    Node(NodeId),
    /// The kernel's store.
    Store,
    /// A contraction's left operand.
    Lhs,
    /// A contraction's right operand.
    Rhs,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Site::Node(n) => write!(f, "node {n}"),
            Site::Store => f.write_str("the store"),
            Site::Lhs => f.write_str("the left operand"),
            Site::Rhs => f.write_str("the right operand"),
        }
    }
}

/// Why a kernel is malformed or could not be run. Every variant carries the numbers involved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KernelError {
    /// The iteration space has more dims than the IR allows.
    #[error("kernel `{kernel}`: rank {rank} exceeds the maximum of {max}")]
    RankTooLarge {
        /// Kernel name.
        kernel: String,
        /// Its rank.
        rank: usize,
        /// [`accy_ir::MAX_RANK`].
        max: usize,
    },
    /// `parallel_rank` exceeds the rank.
    #[error("kernel `{kernel}`: parallel rank {parallel_rank} exceeds rank {rank}")]
    ParallelRank {
        /// Kernel name.
        kernel: String,
        /// The declared parallel rank.
        parallel_rank: u32,
        /// The rank.
        rank: usize,
    },
    /// There are reduction dims but no reduction.
    #[error("kernel `{kernel}`: {count} reduction dims but no reduction op")]
    ReductionDimsWithoutOp {
        /// Kernel name.
        kernel: String,
        /// Number of reduction dims.
        count: usize,
    },
    /// A binding's byte size overflows `u64`.
    #[error("kernel `{kernel}`: binding {binding} of {elements} {dtype} elements is too large")]
    BindingTooLarge {
        /// Kernel name.
        kernel: String,
        /// Binding number.
        binding: u32,
        /// Its element count.
        elements: u64,
        /// Its dtype.
        dtype: DType,
    },
    /// A node names an operand that is not an earlier node.
    #[error("kernel `{kernel}`: node {node} uses node {operand}, which is not an earlier node")]
    BadOperand {
        /// Kernel name.
        kernel: String,
        /// The node.
        node: NodeId,
        /// The operand it names.
        operand: NodeId,
    },
    /// A node's dtype breaks the typing rule of its op.
    #[error("kernel `{kernel}`: node {node}: {message}")]
    NodeType {
        /// Kernel name.
        kernel: String,
        /// The node.
        node: NodeId,
        /// What rule was broken, with the dtypes involved.
        message: String,
    },
    /// An access names a binding that does not exist.
    #[error("kernel `{kernel}`: {site} uses binding {binding} but there are {count}")]
    UnknownBinding {
        /// Kernel name.
        kernel: String,
        /// Where.
        site: Site,
        /// The binding named.
        binding: u32,
        /// Number of bindings.
        count: usize,
    },
    /// A prefetch hint names a binding that no node of the kernel loads.
    #[error("kernel `{kernel}`: the prefetch hint names binding {binding}, which no node loads")]
    PrefetchNotLoaded {
        /// Kernel name.
        kernel: String,
        /// The binding named.
        binding: u32,
    },
    /// A [`super::Keep`] the kernel cannot have.
    #[error("kernel `{kernel}`: its kept value cannot be stored: {why}")]
    Keep {
        /// Kernel name.
        kernel: String,
        /// What is wrong.
        why: &'static str,
    },
    /// An `at_most_zero` entry that names no float node.
    #[error("kernel `{kernel}`: node {node} is listed as at most zero but is no float node")]
    AtMostZero {
        /// Kernel name.
        kernel: String,
        /// The node named.
        node: NodeId,
    },
    /// A [`super::RowScratch`] entry the kernel's accesses do not allow.
    #[error("kernel `{kernel}`: binding {binding} cannot live in worker scratch: {why}")]
    RowScratch {
        /// Kernel name.
        kernel: String,
        /// The binding named.
        binding: u32,
        /// What is wrong.
        why: &'static str,
    },
    /// An access's dtype differs from its binding's.
    #[error("kernel `{kernel}`: {site} accesses binding {binding} of {binding_dtype} as {dtype}")]
    BindingDType {
        /// Kernel name.
        kernel: String,
        /// Where.
        site: Site,
        /// The binding.
        binding: u32,
        /// The binding's dtype.
        binding_dtype: DType,
        /// The dtype of the access.
        dtype: DType,
    },
    /// A load reads a write-only binding or the store writes a read-only one.
    #[error("kernel `{kernel}`: {site} cannot use binding {binding} with access {access}")]
    BindingAccess {
        /// Kernel name.
        kernel: String,
        /// Where.
        site: Site,
        /// The binding.
        binding: u32,
        /// Its declared access.
        access: Access,
    },
    /// A map has the wrong number of strides.
    #[error("kernel `{kernel}`: the map of {site} has {found} strides, expected {expected}")]
    StrideCount {
        /// Kernel name.
        kernel: String,
        /// Where.
        site: Site,
        /// Dims the map ranges over.
        expected: usize,
        /// Strides it has.
        found: usize,
    },
    /// A map reaches outside its binding somewhere in the iteration space.
    #[error(
        "kernel `{kernel}`: {site} reaches elements {min}..={max} of binding {binding}, \
         which holds {elements}"
    )]
    OutOfBounds {
        /// Kernel name.
        kernel: String,
        /// Where.
        site: Site,
        /// The binding.
        binding: u32,
        /// Smallest element offset reached.
        min: i128,
        /// Largest element offset reached.
        max: i128,
        /// Elements the binding holds.
        elements: u64,
    },
    /// `result` names no node.
    #[error("kernel `{kernel}`: result node {result} does not exist ({count} nodes)")]
    BadResult {
        /// Kernel name.
        kernel: String,
        /// The result node named.
        result: NodeId,
        /// Number of nodes.
        count: usize,
    },
    /// The reduction does not accept the result's dtype.
    #[error("kernel `{kernel}`: reduction {op} does not accept {dtype}")]
    ReductionType {
        /// Kernel name.
        kernel: String,
        /// The reduction.
        op: ReduceOp,
        /// The result dtype.
        dtype: DType,
    },
    /// [`crate::kernel::run_kernel`] was given the wrong number of buffers.
    #[error("kernel `{kernel}` has {expected} bindings but {found} buffers were given")]
    BufferCount {
        /// Kernel name.
        kernel: String,
        /// Bindings declared.
        expected: usize,
        /// Buffers given.
        found: usize,
    },
    /// [`crate::kernel::run_kernel`] was given a buffer of the wrong byte length.
    #[error("kernel `{kernel}`: binding {binding} needs {expected} bytes, the buffer has {found}")]
    BufferSize {
        /// Kernel name.
        kernel: String,
        /// Binding number.
        binding: u32,
        /// `elements * dtype size`.
        expected: u64,
        /// The buffer's length.
        found: u64,
    },
    /// Evaluating a validated kernel failed: a bug in this crate, never the caller's fault.
    #[error("kernel `{kernel}`: internal error at {site}: {message}")]
    Internal {
        /// Kernel name.
        kernel: String,
        /// Where.
        site: Site,
        /// What went wrong.
        message: String,
    },
}
