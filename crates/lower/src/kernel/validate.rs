//! [`LoopKernel::validate`]: the proof that a kernel is well typed and never touches an element
//! outside its bindings, which every emitter relies on instead of bounds checks.
//!
//! Checked, in this order (the first violation is returned):
//! 1. shape: rank ≤ [`MAX_RANK`], `parallel_rank ≤ rank`, no reduction dims without a
//!    reduction;
//! 2. bindings: each binding's byte size (`elements * dtype size`) fits in `u64`;
//! 3. nodes, in order: operands name earlier nodes; the node's dtype follows the typing rule of
//!    the IR op it is named after (`accy_ir::infer_type`); `Load`/`Gather` name an existing
//!    binding of the node's dtype that the kernel may read; a `Gather` index is i32, i64 or u8
//!    and `axis_len ≥ 1`; a `Const`'s bits fit its dtype; an `Index` names an existing dim and
//!    its i64 value cannot overflow anywhere in the space; an `Fma` is f32 or f64 throughout;
//!    a `Bitcast` goes between f32 and i32 or f64 and i64 (or keeps the dtype);
//! 4. result and store: `result` names a node; the store binding exists, may be written and has
//!    the result's dtype; a reduction accepts that dtype;
//! 5. bounds: every map has one stride per dim it ranges over, and — when the box it ranges
//!    over is not empty — its smallest and largest element offsets over the whole box (exact,
//!    in i128) lie in `[0, elements)`. For a `Gather`, the clamped index term
//!    `0..=(axis_len - 1) * axis_stride` is added. Loads range over all dims, the store over
//!    the parallel dims only (with a reduction, a store happens even when a reduction dim is 0);
//! 6. the prefetch hint, if any, names a binding some `Load` reads (where it points is not
//!    checked: a prefetch is not an access);
//! 7. each [`super::RowScratch`] names a distinct binding that is row-partitioned with its
//!    `row_bytes` ([`LoopKernel::rows_of`]) along a parallel dim 0, reserves a whole number
//!    of rows (at least one) at a 64-byte-aligned offset, within
//!    `accy_artifact::abi::MAX_WORKER_SCRATCH`, and no two reserve overlapping bytes;
//! 8. a [`super::Keep`], if any: the kernel reduces; it names a node; its binding has the
//!    node's dtype, may be written, is not the store's and no node reads it; its map ranges
//!    over all dims inside the binding (checked before 6 and 7);
//! 9. each node in `at_most_zero` exists and is a float (what it claims is the planner's
//!    proof, not checked; checked before 6 and 7).
//!
//! Because each map is affine, its extreme values over a box are reached at corners, one dim
//! at a time: `offset + Σ min(0, s·(n-1))` and `offset + Σ max(0, s·(n-1))`. So the check is
//! exact, not an approximation, and costs O(rank) per map.

use accy_ir::{BinaryOp, DType, ReduceOp, UnaryOp, MAX_RANK};

use super::error::{KernelError, Site};
use super::{ContractionKernel, IndexMap, KernelBinding, KernelNode, LoopKernel, Node, NodeId};

/// The exact smallest and largest value of `offset + Σ strides[d] * i[d]` over the box
/// `0 <= i[d] < dims[d]`, which must not be empty.
pub(crate) fn map_range(map: &IndexMap, dims: &[u64]) -> (i128, i128) {
    let (mut lo, mut hi) = (i128::from(map.offset), i128::from(map.offset));
    for (&s, &n) in map.strides.iter().zip(dims) {
        // |s| <= 2^63 and n - 1 < 2^64, so each product fits in i128; their sum might not,
        // so saturate: a saturated end lies outside any binding and is rejected, as it must.
        let reach = i128::from(s).saturating_mul(i128::from(n.saturating_sub(1)));
        lo = lo.saturating_add(reach.min(0));
        hi = hi.saturating_add(reach.max(0));
    }
    (lo, hi)
}

/// True when every dim is at least 1 (the box holds a point).
fn non_empty(dims: &[u64]) -> bool {
    dims.iter().all(|&n| n > 0)
}

/// What the node and binding checks look at: a loop kernel's body, or a contraction's
/// epilogue (then `acc` is the accumulator's dtype and `dims` the result space).
pub(super) struct Checker<'k> {
    name: &'k str,
    dims: &'k [u64],
    bindings: &'k [KernelBinding],
    nodes: &'k [KernelNode],
    acc: Option<DType>,
}

impl<'k> Checker<'k> {
    fn of(kernel: &'k LoopKernel) -> Checker<'k> {
        Checker {
            name: &kernel.name,
            dims: &kernel.dims,
            bindings: &kernel.bindings,
            nodes: &kernel.nodes,
            acc: None,
        }
    }

    pub(super) fn name(&self) -> String {
        self.name.to_owned()
    }

    fn type_error(&self, node: NodeId, message: String) -> KernelError {
        KernelError::NodeType {
            kernel: self.name(),
            node,
            message,
        }
    }

    /// The dtype of operand `operand` of node `node`, which must be an earlier node.
    fn operand(&self, node: NodeId, operand: NodeId) -> Result<DType, KernelError> {
        if operand >= node {
            return Err(KernelError::BadOperand {
                kernel: self.name(),
                node,
                operand,
            });
        }
        self.nodes
            .get(operand as usize)
            .map(|n| n.dtype)
            .ok_or_else(|| KernelError::BadOperand {
                kernel: self.name(),
                node,
                operand,
            })
    }

    /// Checks an access to `binding` with `dtype` at `site`: the binding exists, has that
    /// dtype and permits the access; returns its element count.
    pub(super) fn binding(
        &self,
        site: Site,
        binding: u32,
        dtype: DType,
        write: bool,
    ) -> Result<u64, KernelError> {
        let b = self
            .bindings
            .get(binding as usize)
            .ok_or_else(|| KernelError::UnknownBinding {
                kernel: self.name(),
                site,
                binding,
                count: self.bindings.len(),
            })?;
        if b.dtype != dtype {
            return Err(KernelError::BindingDType {
                kernel: self.name(),
                site,
                binding,
                binding_dtype: b.dtype,
                dtype,
            });
        }
        let allowed = if write {
            b.access.writes()
        } else {
            b.access.reads()
        };
        if !allowed {
            return Err(KernelError::BindingAccess {
                kernel: self.name(),
                site,
                binding,
                access: b.access,
            });
        }
        Ok(b.elements)
    }

    /// Checks that `map` has one stride per dim of `dims` and, if the box is not empty, stays
    /// in `[0, elements)` once `extra` (the gather term's range) is added.
    pub(super) fn bounds(
        &self,
        site: Site,
        binding: u32,
        map: &IndexMap,
        dims: &[u64],
        elements: u64,
        extra: (i128, i128),
    ) -> Result<(), KernelError> {
        if map.strides.len() != dims.len() {
            return Err(KernelError::StrideCount {
                kernel: self.name(),
                site,
                expected: dims.len(),
                found: map.strides.len(),
            });
        }
        if !non_empty(dims) {
            return Ok(());
        }
        let (lo, hi) = map_range(map, dims);
        let (min, max) = (lo.saturating_add(extra.0), hi.saturating_add(extra.1));
        if min < 0 || max >= i128::from(elements) {
            return Err(KernelError::OutOfBounds {
                kernel: self.name(),
                site,
                binding,
                min,
                max,
                elements,
            });
        }
        Ok(())
    }

    fn node(&self, n: NodeId, node: &Node, dtype: DType) -> Result<(), KernelError> {
        let dims: &[u64] = self.dims;
        let site = Site::Node(n);
        match node {
            Node::Load { binding, map } => {
                let elements = self.binding(site, *binding, dtype, false)?;
                self.bounds(site, *binding, map, dims, elements, (0, 0))?;
            }
            Node::Gather {
                binding,
                map,
                index,
                axis_len,
                axis_stride,
            } => {
                let index_dtype = self.operand(n, *index)?;
                if !matches!(index_dtype, DType::I32 | DType::I64 | DType::U8) {
                    return Err(self.type_error(
                        n,
                        format!("gather index must be i32, i64 or u8, got {index_dtype}"),
                    ));
                }
                if *axis_len == 0 {
                    return Err(self.type_error(n, "gather axis length is 0".into()));
                }
                let elements = self.binding(site, *binding, dtype, false)?;
                let reach = i128::from(*axis_stride).saturating_mul(i128::from(*axis_len - 1));
                self.bounds(
                    site,
                    *binding,
                    map,
                    dims,
                    elements,
                    (reach.min(0), reach.max(0)),
                )?;
            }
            Node::Const { bits } => {
                let width = dtype.size_bytes() * 8;
                let fits = match dtype {
                    DType::Bool => *bits <= 1,
                    _ => width >= 64 || *bits >> width == 0,
                };
                if !fits {
                    return Err(
                        self.type_error(n, format!("constant bits {bits:#x} do not fit {dtype}"))
                    );
                }
            }
            Node::Index { dim, scale, offset } => {
                if !dtype.is_numeric() {
                    return Err(self.type_error(n, format!("index does not produce {dtype}")));
                }
                let extent = match dim {
                    None => 1,
                    Some(d) => *dims.get(*d as usize).ok_or_else(|| {
                        self.type_error(
                            n,
                            format!("index dim {d} out of range for rank {}", dims.len()),
                        )
                    })?,
                };
                if extent > 0 {
                    let reach = i128::from(*scale).saturating_mul(i128::from(extent - 1));
                    let ends = [i128::from(*offset), i128::from(*offset) + reach];
                    if ends.iter().any(|&v| i64::try_from(v).is_err()) {
                        return Err(self.type_error(
                            n,
                            format!(
                                "index {offset} + {scale} * i overflows i64 over {extent} points"
                            ),
                        ));
                    }
                }
            }
            Node::Unary { op, x } => {
                let x = self.operand(n, *x)?;
                let ok = match op {
                    UnaryOp::Neg | UnaryOp::Abs => x.is_numeric(),
                    UnaryOp::Not => x == DType::Bool || x.is_integer(),
                    _ => x.is_float(),
                };
                if !ok || x != dtype {
                    return Err(self.type_error(n, format!("{op} of {x} cannot give {dtype}")));
                }
            }
            Node::Binary { op, lhs, rhs } => {
                let (l, r) = (self.operand(n, *lhs)?, self.operand(n, *rhs)?);
                let ok = match op {
                    BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
                        l == DType::Bool || l.is_integer()
                    }
                    BinaryOp::Shl | BinaryOp::ShrLogical | BinaryOp::ShrArithmetic => {
                        l.is_integer()
                    }
                    _ => l.is_numeric(),
                };
                if !ok || l != r || l != dtype {
                    return Err(
                        self.type_error(n, format!("{op} of {l} and {r} cannot give {dtype}"))
                    );
                }
            }
            Node::Compare { op, lhs, rhs } => {
                let (l, r) = (self.operand(n, *lhs)?, self.operand(n, *rhs)?);
                if l != r || dtype != DType::Bool {
                    return Err(
                        self.type_error(n, format!("{op} of {l} and {r} cannot give {dtype}"))
                    );
                }
            }
            Node::Select {
                cond,
                on_true,
                on_false,
            } => {
                let c = self.operand(n, *cond)?;
                let (t, f) = (self.operand(n, *on_true)?, self.operand(n, *on_false)?);
                if c != DType::Bool || t != f || t != dtype {
                    return Err(self
                        .type_error(n, format!("select of {c} ? {t} : {f} cannot give {dtype}")));
                }
            }
            Node::Convert { x } => {
                self.operand(n, *x)?;
            }
            Node::Fma { a, b, c } => {
                let (a, b, c) = (
                    self.operand(n, *a)?,
                    self.operand(n, *b)?,
                    self.operand(n, *c)?,
                );
                if !dtype.is_float() || [a, b, c].iter().any(|&d| d != dtype) {
                    return Err(
                        self.type_error(n, format!("fma of {a}, {b}, {c} cannot give {dtype}"))
                    );
                }
            }
            Node::ScaleB { x, n: e } => {
                let (x, e) = (self.operand(n, *x)?, self.operand(n, *e)?);
                if !dtype.is_float() || x != dtype || e != dtype {
                    return Err(
                        self.type_error(n, format!("scaleb of {x}, {e} cannot give {dtype}"))
                    );
                }
            }
            Node::Bitcast { x } => {
                let x = self.operand(n, *x)?;
                let ok = matches!(x, DType::F32 | DType::I32 | DType::F64 | DType::I64)
                    && x.size_bytes() == dtype.size_bytes()
                    && (x.is_float() || dtype.is_float() || x == dtype);
                if !ok {
                    return Err(self.type_error(n, format!("bitcast of {x} cannot give {dtype}")));
                }
            }
            Node::Acc => match self.acc {
                Some(acc) if acc == dtype => {}
                Some(acc) => {
                    return Err(self.type_error(n, format!("the accumulator is {acc}, not {dtype}")))
                }
                None => {
                    return Err(self.type_error(
                        n,
                        "an accumulator read outside a contraction's epilogue".into(),
                    ))
                }
            },
        }
        Ok(())
    }

    /// Checks every node in order; `result` must name one.
    fn nodes(&self, result: NodeId) -> Result<DType, KernelError> {
        for (i, node) in self.nodes.iter().enumerate() {
            let n = NodeId::try_from(i).map_err(|_| KernelError::BadResult {
                kernel: self.name(),
                result,
                count: self.nodes.len(),
            })?;
            self.node(n, &node.node, node.dtype)?;
        }
        self.nodes
            .get(result as usize)
            .map(|r| r.dtype)
            .ok_or_else(|| KernelError::BadResult {
                kernel: self.name(),
                result,
                count: self.nodes.len(),
            })
    }

    /// Checks that every binding's byte size fits `u64`.
    fn binding_sizes(&self) -> Result<(), KernelError> {
        for (i, b) in self.bindings.iter().enumerate() {
            if b.elements.checked_mul(b.dtype.size_bytes()).is_none() {
                return Err(KernelError::BindingTooLarge {
                    kernel: self.name(),
                    binding: i as u32,
                    elements: b.elements,
                    dtype: b.dtype,
                });
            }
        }
        Ok(())
    }
}

fn check_loop(k: &LoopKernel) -> Result<(), KernelError> {
    let c = Checker::of(k);
    let rank = k.dims.len();
    if rank > MAX_RANK {
        return Err(KernelError::RankTooLarge {
            kernel: c.name(),
            rank,
            max: MAX_RANK,
        });
    }
    let parallel = k.parallel_rank as usize;
    if parallel > rank {
        return Err(KernelError::ParallelRank {
            kernel: c.name(),
            parallel_rank: k.parallel_rank,
            rank,
        });
    }
    if k.reduction.is_none() && parallel != rank {
        return Err(KernelError::ReductionDimsWithoutOp {
            kernel: c.name(),
            count: rank - parallel,
        });
    }
    c.binding_sizes()?;
    let result = c.nodes(k.result)?;
    if let Some(op) = k.reduction {
        let ok = match op {
            ReduceOp::Sum | ReduceOp::Prod => result.is_numeric(),
            ReduceOp::Max | ReduceOp::Min => true,
        };
        if !ok {
            return Err(KernelError::ReductionType {
                kernel: c.name(),
                op,
                dtype: result,
            });
        }
    }
    let elements = c.binding(Site::Store, k.store.binding, result, true)?;
    let parallel_dims = k.dims.get(..parallel).unwrap_or(&[]);
    c.bounds(
        Site::Store,
        k.store.binding,
        &k.store.map,
        parallel_dims,
        elements,
        (0, 0),
    )?;
    if let Some(keep) = &k.keep {
        super::keep::check(k, &c, keep)?;
    }
    for &n in &k.at_most_zero {
        let float = k.nodes.get(n as usize).is_some_and(|n| n.dtype.is_float());
        if !float {
            return Err(KernelError::AtMostZero {
                kernel: c.name(),
                node: n,
            });
        }
    }
    if let Some(p) = k.prefetch {
        let loaded = k
            .nodes
            .iter()
            .any(|n| matches!(n.node, Node::Load { binding, .. } if binding == p.binding));
        if !loaded {
            return Err(KernelError::PrefetchNotLoaded {
                kernel: c.name(),
                binding: p.binding,
            });
        }
    }
    k.check_row_scratch(&c.name())
}

fn check_contraction(k: &ContractionKernel) -> Result<(), KernelError> {
    let space = k.space();
    let c = Checker {
        name: &k.name,
        dims: &space,
        bindings: &k.bindings,
        nodes: &k.epilogue,
        acc: Some(k.dtype),
    };
    if !matches!(k.dtype, DType::F32 | DType::F64) {
        return Err(c.type_error(
            0,
            format!("a contraction accumulates f32 or f64, not {}", k.dtype),
        ));
    }
    if k.tile_m == 0 || k.tile_n == 0 || k.tile_k == 0 {
        return Err(c.type_error(
            0,
            format!("tile {}x{} (k {}) is empty", k.tile_m, k.tile_n, k.tile_k),
        ));
    }
    if k.workgroups() > u64::from(u32::MAX) {
        return Err(c.type_error(0, format!("{} workgroups exceed u32", k.workgroups())));
    }
    c.binding_sizes()?;
    if k.lhs.panels.is_some() {
        return Err(c.type_error(0, "only the right operand may be panelled".into()));
    }
    for (site, operand, dims) in [
        (Site::Lhs, &k.lhs, [k.batch, k.m, k.k]),
        (Site::Rhs, &k.rhs, [k.batch, k.k, k.n]),
    ] {
        let elements = c.binding(site, operand.binding, k.dtype, false)?;
        match operand.panels {
            None => c.bounds(site, operand.binding, &operand.map, &dims, elements, (0, 0))?,
            Some(width) => {
                if width == 0 || operand.map.strides.len() != 3 {
                    return Err(c.type_error(0, format!("panels of width {width}")));
                }
                // Panels cover ceil(n / width) full panels of every batch; their extremes are
                // the first element of batch 0 and the last of the last panel.
                if !non_empty(&dims) {
                    continue;
                }
                let panels = i128::from(k.n.div_ceil(width));
                let span = panels * i128::from(k.k) * i128::from(width) - 1;
                let batch = i128::from(operand.map.strides[0]) * i128::from(k.batch - 1);
                let offset = i128::from(operand.map.offset);
                let (min, max) = (offset + batch.min(0), offset + batch.max(0) + span);
                if min < 0 || max >= i128::from(elements) {
                    return Err(KernelError::OutOfBounds {
                        kernel: c.name(),
                        site,
                        binding: operand.binding,
                        min,
                        max,
                        elements,
                    });
                }
            }
        }
    }
    let result = c.nodes(k.result)?;
    let elements = c.binding(Site::Store, k.store.binding, result, true)?;
    c.bounds(
        Site::Store,
        k.store.binding,
        &k.store.map,
        &space,
        elements,
        (0, 0),
    )?;
    // Emitters run the epilogue and the product in separate passes over a tile, so the
    // store must not feed a load of the same kernel.
    if k.epilogue
        .iter()
        .any(|n| matches!(n.node, Node::Load { binding, .. } if binding == k.store.binding))
        || k.lhs.binding == k.store.binding
        || k.rhs.binding == k.store.binding
    {
        return Err(c.type_error(k.result, "a contraction reads the binding it stores".into()));
    }
    Ok(())
}

impl LoopKernel {
    /// Checks that the kernel is well formed and proves that it reads and writes only elements
    /// inside its bindings over its whole iteration space (see the module doc of
    /// `kernel::validate` for the full list). Emitters may rely on everything checked here;
    /// the planner validates every kernel it produces. Never panics.
    pub fn validate(&self) -> Result<(), KernelError> {
        check_loop(self)
    }
}

impl ContractionKernel {
    /// Checks the contraction like [`LoopKernel::validate`] checks a loop kernel: the
    /// accumulator is f32 or f64 and both operands are of that dtype and readable; each
    /// operand's map stays inside its binding over its whole `(b, m, k)` or `(b, k, n)` box;
    /// the epilogue is well typed, its loads and the store stay inside their bindings over
    /// `(b, m, n)`, and nothing reads the stored binding; the tile is not empty and the
    /// workgroup count fits `u32`. Never panics.
    pub fn validate(&self) -> Result<(), KernelError> {
        check_contraction(self)
    }
}
