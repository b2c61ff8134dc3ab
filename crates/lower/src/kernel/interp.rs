//! [`run_kernel`]: the reference executor of the kernel description, over little-endian byte
//! buffers.
//!
//! It is written to read like the semantics in the parent module's doc, not to be fast: it
//! walks the points of the iteration space in row-major order, evaluates every node at each
//! point, combines over the reduction dims and stores. Every node's arithmetic is the IR
//! interpreter's own per-element code (`accy_ir::interp::scalar`), so a kernel that matches
//! its program op for op gives bit-identical results to `accy_ir::interp::eval`.
//!
//! Buffers are separate `&mut [u8]`s, so two bindings never alias here; a kernel that reads and
//! writes the same bytes uses one `ReadWrite` binding. At each point every load happens before
//! that point's store, and a point sees the stores of all earlier points.

use accy_ir::interp::scalar::{self, Scalar};
use accy_ir::{BinaryOp, DType, ReduceOp};
use accy_math::Float;

use super::error::{KernelError, Site};
use super::scale_b;
use super::{ContractionKernel, IndexMap, KernelBinding, KernelNode, LoopKernel, Node, NodeId};

/// Runs `kernel` on `bindings` (buffer `i` is binding `i`, holding exactly
/// `elements * dtype size` bytes, little-endian; a bool byte reads as true when non-zero and is
/// written as 0 or 1).
///
/// Validates the kernel first, so a malformed kernel or wrongly sized buffer is an error, never
/// a panic or an out-of-bounds access. Only elements the kernel stores are changed.
pub fn run_kernel(kernel: &LoopKernel, bindings: &mut [&mut [u8]]) -> Result<(), KernelError> {
    kernel.validate()?;
    check_buffers(&kernel.name, &kernel.bindings, bindings)?;
    Runner {
        kernel,
        body: Body::of(kernel),
    }
    .run(bindings)
}

/// Runs the contraction `kernel` on `bindings` (as [`run_kernel`] does a loop kernel): the
/// exact semantics of the `kernel::contraction` module — the accumulator from `+0`, `acc +
/// a·b` in ascending `k` with the multiply rounded, then the epilogue at each point. Validates
/// first; only elements the kernel stores are changed.
pub fn run_contraction(
    kernel: &ContractionKernel,
    bindings: &mut [&mut [u8]],
) -> Result<(), KernelError> {
    kernel.validate()?;
    check_buffers(&kernel.name, &kernel.bindings, bindings)?;
    let mut body = Body {
        name: &kernel.name,
        nodes: &kernel.epilogue,
        result: kernel.result,
        values: Vec::with_capacity(kernel.epilogue.len()),
    };
    let space = kernel.space();
    if space.contains(&0) {
        return Ok(());
    }
    let result_dtype = kernel
        .epilogue
        .get(kernel.result as usize)
        .map(|n| n.dtype)
        .ok_or_else(|| body.error(Site::Store, "no result node"))?;
    let zero = scalar::reduce_identity(ReduceOp::Sum, kernel.dtype)
        .ok_or_else(|| body.error(Site::Store, "no zero"))?;
    let mut point = [0u64; 3];
    loop {
        let [b, m, n] = point;
        let mut acc = zero;
        for k in 0..kernel.k {
            let a_at = body.position(Site::Lhs, kernel.lhs.offset([b, m, k], kernel.k))?;
            let b_at = body.position(Site::Rhs, kernel.rhs.offset([b, k, n], kernel.k))?;
            let a = body.read(Site::Lhs, kernel.lhs.binding, a_at, kernel.dtype, bindings)?;
            let x = body.read(Site::Rhs, kernel.rhs.binding, b_at, kernel.dtype, bindings)?;
            let product = scalar::binary(BinaryOp::Mul, a, x)
                .ok_or_else(|| body.error(Site::Lhs, "cannot multiply"))?;
            acc = scalar::binary(BinaryOp::Add, acc, product)
                .ok_or_else(|| body.error(Site::Lhs, "cannot add"))?;
        }
        let value = body.eval(&point, Some(acc), bindings)?;
        let offset = body.offset(Site::Store, &kernel.store.map, &point, 0)?;
        body.write(kernel.store.binding, offset, result_dtype, value, bindings)?;
        if !advance(&mut point, &space) {
            return Ok(());
        }
    }
}

/// Checks that each buffer has exactly its binding's byte size.
fn check_buffers(
    name: &str,
    declared: &[KernelBinding],
    bindings: &[&mut [u8]],
) -> Result<(), KernelError> {
    if bindings.len() != declared.len() {
        return Err(KernelError::BufferCount {
            kernel: name.to_owned(),
            expected: declared.len(),
            found: bindings.len(),
        });
    }
    for (i, (b, buffer)) in declared.iter().zip(bindings.iter()).enumerate() {
        // Validation proved the product does not overflow.
        let expected = b.elements.saturating_mul(b.dtype.size_bytes());
        if buffer.len() as u64 != expected {
            return Err(KernelError::BufferSize {
                kernel: name.to_owned(),
                binding: i as u32,
                expected,
                found: buffer.len() as u64,
            });
        }
    }
    Ok(())
}

/// Advances `point[..]` to the next point of `dims` in row-major order (last dim fastest);
/// returns false after the last point.
fn advance(point: &mut [u64], dims: &[u64]) -> bool {
    for (i, n) in point.iter_mut().zip(dims).rev() {
        *i += 1;
        if *i < *n {
            return true;
        }
        *i = 0;
    }
    false
}

/// A node list evaluated point by point: a loop kernel's body or a contraction's epilogue.
struct Body<'k> {
    name: &'k str,
    nodes: &'k [KernelNode],
    result: NodeId,
    values: Vec<Scalar>,
}

struct Runner<'k> {
    kernel: &'k LoopKernel,
    body: Body<'k>,
}

impl Runner<'_> {
    fn error(&self, site: Site, message: impl Into<String>) -> KernelError {
        self.body.error(site, message)
    }

    /// Stores the kept node's value at `point`, just evaluated, if the kernel keeps one.
    fn keep(&self, point: &[u64], bindings: &mut [&mut [u8]]) -> Result<(), KernelError> {
        let Some(keep) = &self.kernel.keep else {
            return Ok(());
        };
        let site = Site::Node(keep.node);
        let (value, dtype) = self
            .body
            .values
            .get(keep.node as usize)
            .zip(self.kernel.nodes.get(keep.node as usize))
            .map(|(&v, n)| (v, n.dtype))
            .ok_or_else(|| self.error(site, "no kept node"))?;
        let offset = self.body.offset(site, &keep.map, point, 0)?;
        self.body
            .write(keep.binding, offset, dtype, value, bindings)
    }

    fn run(mut self, bindings: &mut [&mut [u8]]) -> Result<(), KernelError> {
        let k = self.kernel;
        let dims: &[u64] = &k.dims;
        let parallel = k.parallel_rank as usize;
        let (parallel_dims, reduced_dims) = dims.split_at(parallel.min(dims.len()));
        if parallel_dims.contains(&0) {
            return Ok(());
        }
        let result_dtype = k
            .nodes
            .get(k.result as usize)
            .map(|n| n.dtype)
            .ok_or_else(|| self.error(Site::Store, "no result node"))?;
        let mut point = vec![0u64; dims.len()];
        loop {
            let value = match k.reduction {
                None => self.body.eval(&point, None, bindings)?,
                Some(op) => {
                    let mut acc = scalar::reduce_identity(op, result_dtype)
                        .ok_or_else(|| self.error(Site::Store, "reduction has no identity"))?;
                    if !reduced_dims.contains(&0) {
                        loop {
                            let x = self.body.eval(&point, None, bindings)?;
                            self.keep(&point, bindings)?;
                            acc = scalar::reduce_combine(op, acc, x).ok_or_else(|| {
                                self.error(Site::Store, "reduction does not accept the result")
                            })?;
                            if !advance(&mut point[parallel..], reduced_dims) {
                                break;
                            }
                        }
                    }
                    acc
                }
            };
            let offset = self
                .body
                .offset(Site::Store, &k.store.map, &point[..parallel], 0)?;
            self.body
                .write(k.store.binding, offset, result_dtype, value, bindings)?;
            if !advance(&mut point[..parallel], parallel_dims) {
                return Ok(());
            }
        }
    }
}

impl<'k> Body<'k> {
    fn of(kernel: &'k LoopKernel) -> Body<'k> {
        Body {
            name: &kernel.name,
            nodes: &kernel.nodes,
            result: kernel.result,
            values: Vec::with_capacity(kernel.nodes.len()),
        }
    }

    fn error(&self, site: Site, message: impl Into<String>) -> KernelError {
        KernelError::Internal {
            kernel: self.name.to_owned(),
            site,
            message: message.into(),
        }
    }

    /// `at` as a buffer position.
    fn position(&self, site: Site, at: i128) -> Result<usize, KernelError> {
        usize::try_from(at).map_err(|_| self.error(site, format!("offset {at} is out of range")))
    }

    /// Writes `value` of `dtype` at element `offset` of `binding`.
    fn write(
        &self,
        binding: u32,
        offset: usize,
        dtype: DType,
        value: Scalar,
        bindings: &mut [&mut [u8]],
    ) -> Result<(), KernelError> {
        let size = dtype.size_bytes() as usize;
        let written = bindings
            .get_mut(binding as usize)
            .and_then(|b| b.get_mut(offset * size..(offset + 1) * size))
            .is_some_and(|bytes| value.write_le_bytes(bytes));
        if written {
            Ok(())
        } else {
            Err(self.error(Site::Store, format!("element {offset} is out of range")))
        }
    }

    /// `map(point) + extra` as a buffer position.
    fn offset(
        &self,
        site: Site,
        map: &IndexMap,
        point: &[u64],
        extra: i128,
    ) -> Result<usize, KernelError> {
        let mut at = i128::from(map.offset) + extra;
        for (&s, &i) in map.strides.iter().zip(point) {
            at += i128::from(s) * i128::from(i);
        }
        usize::try_from(at).map_err(|_| self.error(site, format!("offset {at} is negative")))
    }

    fn read(
        &self,
        site: Site,
        binding: u32,
        at: usize,
        dtype: DType,
        bindings: &[&mut [u8]],
    ) -> Result<Scalar, KernelError> {
        let size = dtype.size_bytes() as usize;
        bindings
            .get(binding as usize)
            .and_then(|b| b.get(at * size..(at + 1) * size))
            .and_then(|bytes| Scalar::from_le_bytes(dtype, bytes))
            .ok_or_else(|| self.error(site, format!("element {at} is out of range")))
    }

    fn value(&self, site: Site, id: NodeId) -> Result<Scalar, KernelError> {
        self.values
            .get(id as usize)
            .copied()
            .ok_or_else(|| self.error(site, format!("node {id} has no value")))
    }

    /// The result node's value at `point`, with `acc` the accumulator an [`Node::Acc`] reads.
    fn eval(
        &mut self,
        point: &[u64],
        acc: Option<Scalar>,
        bindings: &[&mut [u8]],
    ) -> Result<Scalar, KernelError> {
        self.values.clear();
        for (n, node) in self.nodes.iter().enumerate() {
            let site = Site::Node(n as NodeId);
            let dtype = node.dtype;
            let undefined = || self.error(site, format!("operation undefined for {dtype}"));
            let v = match &node.node {
                Node::Load { binding, map } => {
                    let at = self.offset(site, map, point, 0)?;
                    self.read(site, *binding, at, dtype, bindings)?
                }
                Node::Gather {
                    binding,
                    map,
                    index,
                    axis_len,
                    axis_stride,
                } => {
                    let i = match self.value(site, *index)? {
                        Scalar::I32(v) => i64::from(v),
                        Scalar::I64(v) => v,
                        Scalar::U8(v) => i64::from(v),
                        other => {
                            return Err(self.error(site, format!("index is {}", other.dtype())))
                        }
                    };
                    let last = i128::from(*axis_len) - 1;
                    let clamped = i128::from(i).clamp(0, last.max(0));
                    let at = self.offset(site, map, point, clamped * i128::from(*axis_stride))?;
                    self.read(site, *binding, at, dtype, bindings)?
                }
                Node::Const { bits } => Scalar::from_bits(dtype, *bits),
                Node::Index { dim, scale, offset } => {
                    let i = match dim {
                        None => 0,
                        Some(d) => point
                            .get(*d as usize)
                            .copied()
                            .ok_or_else(|| self.error(site, format!("dim {d} is out of range")))?,
                    };
                    let v = i128::from(*offset) + i128::from(*scale) * i128::from(i);
                    let v = i64::try_from(v)
                        .map_err(|_| self.error(site, format!("index {v} overflows i64")))?;
                    scalar::convert(Scalar::I64(v), dtype)
                }
                Node::Unary { op, x } => {
                    scalar::unary(*op, self.value(site, *x)?).ok_or_else(undefined)?
                }
                Node::Binary { op, lhs, rhs } => {
                    let (a, b) = (self.value(site, *lhs)?, self.value(site, *rhs)?);
                    scalar::binary(*op, a, b).ok_or_else(undefined)?
                }
                Node::Compare { op, lhs, rhs } => {
                    let (a, b) = (self.value(site, *lhs)?, self.value(site, *rhs)?);
                    Scalar::Bool(scalar::compare(*op, a, b).ok_or_else(undefined)?)
                }
                Node::Select {
                    cond,
                    on_true,
                    on_false,
                } => match self.value(site, *cond)? {
                    Scalar::Bool(true) => self.value(site, *on_true)?,
                    Scalar::Bool(false) => self.value(site, *on_false)?,
                    _ => return Err(undefined()),
                },
                Node::Convert { x } => scalar::convert(self.value(site, *x)?, dtype),
                Node::Acc => acc.ok_or_else(|| self.error(site, "no accumulator here"))?,
                Node::Fma { a, b, c } => {
                    let (a, b, c) = (
                        self.value(site, *a)?,
                        self.value(site, *b)?,
                        self.value(site, *c)?,
                    );
                    match (a, b, c) {
                        (Scalar::F32(a), Scalar::F32(b), Scalar::F32(c)) => {
                            Scalar::F32(Float::fma(a, b, c))
                        }
                        (Scalar::F64(a), Scalar::F64(b), Scalar::F64(c)) => {
                            Scalar::F64(Float::fma(a, b, c))
                        }
                        _ => return Err(undefined()),
                    }
                }
                Node::ScaleB { x, n } => match (self.value(site, *x)?, self.value(site, *n)?) {
                    (Scalar::F32(x), Scalar::F32(n)) => Scalar::F32(scale_b::f32(x, n)),
                    (Scalar::F64(x), Scalar::F64(n)) => Scalar::F64(scale_b::f64(x, n)),
                    _ => return Err(undefined()),
                },
                Node::Bitcast { x } => {
                    let x = self.value(site, *x)?;
                    if x.dtype().size_bytes() != dtype.size_bytes() {
                        return Err(undefined());
                    }
                    Scalar::from_bits(dtype, x.to_bits())
                }
            };
            if v.dtype() != dtype {
                return Err(self.error(site, format!("value is {}, not {dtype}", v.dtype())));
            }
            self.values.push(v);
        }
        self.value(Site::Store, self.result)
    }
}
