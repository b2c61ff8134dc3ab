//! Epilogue fusion: a contraction waits, planned but not emitted, until the first kernel that
//! reads its result. If that kernel is elementwise over the product's own points and reads
//! the result once, in place, it becomes the contraction's epilogue — `relu(x·W + b)` is one
//! kernel, the product never stored — else the contraction is emitted first, unchanged.
//!
//! Rules, checked by [`Planner::try_fuse`]:
//! - the reader is elementwise (no reduction) over the product's points and reads the product
//!   through one view: the row-major map, its axes possibly permuted (a transposed output is
//!   the same points walked in another order, so the kernel is carried onto the product's
//!   axes and the transpose becomes the store's strides);
//! - the product feeds only this reader (one use) and is not a program output, and no value
//!   derived from it without a store (a reshape of it, a fused expression over it) has
//!   another consumer that would read it again;
//! - the reader has no gather or index node, and each of its other loads, and its store, is
//!   one stride per axis group (batch, rows, columns) with non-negative row and column
//!   strides — what the epilogue kernels of `crate::emit::contraction` take.
//!
//! Commands that touch a waiting contraction's result flush it first ([`Planner::push`]), as
//! does the end of planning, so the order of memory effects is the program's.

use accy_artifact::Access;
use accy_ir::{Dim, ValueId};

use super::contract::group_stride;
use super::expr::{Body, BufId};
use super::views;
use super::{Home, Pending, Planner};
use crate::error::CompileError;
use crate::kernel::{ContractionKernel, IndexMap, Kernel, KernelNode, Node, Store};

/// A contraction planned but not emitted.
#[derive(Debug)]
pub(super) struct Waiting {
    /// The kernel; binding `i < reads.len()` is `reads[i]`, the last binding its result.
    pub(super) kernel: ContractionKernel,
    /// The buffers it reads.
    pub(super) reads: Vec<BufId>,
    /// The buffer of its result.
    pub(super) dst: BufId,
    /// The IR value it computes.
    pub(super) value: ValueId,
    /// The value's dims: batch axes, then rows, then columns.
    pub(super) dims: Vec<Dim>,
    /// How many of `dims` are batch axes and row axes.
    pub(super) groups: (usize, usize),
    /// The IR instructions it computes (the dot, then any fused epilogue's).
    pub(super) sources: Vec<u32>,
}

impl Waiting {
    /// `strides` (over `dims`) as one stride per group, if every group is walked by one.
    fn regroup(&self, strides: &[i64]) -> Option<[i64; 3]> {
        let (nb, nm) = self.groups;
        let axes = |r: std::ops::Range<usize>| r.collect::<Vec<usize>>();
        Some([
            group_stride(strides, &self.dims, &axes(0..nb))?,
            group_stride(strides, &self.dims, &axes(nb..nb + nm))?,
            group_stride(strides, &self.dims, &axes(nb + nm..self.dims.len()))?,
        ])
    }
}

impl Planner<'_> {
    /// Pushes `command`, first emitting every waiting contraction whose result it touches; in
    /// setup (which touches no computed value) appends it to the setup commands.
    pub(super) fn push(&mut self, command: Pending) -> Result<(), CompileError> {
        if self.in_setup {
            self.setup.push(command);
            return Ok(());
        }
        let touched = super::buffers::touched(&command);
        while let Some(i) = self.waiting.iter().position(|w| touched.contains(&w.dst)) {
            self.flush(i)?;
        }
        self.commands.push(command);
        Ok(())
    }

    /// Emits waiting contraction `i` as it is (after any contraction whose result it reads).
    pub(super) fn flush(&mut self, i: usize) -> Result<(), CompileError> {
        let w = self.waiting.remove(i);
        let mut uses: Vec<(BufId, Access)> = w.reads.iter().map(|&b| (b, Access::Read)).collect();
        uses.push((w.dst, Access::Write));
        self.emit_contraction(w.kernel, uses, w.sources)
    }

    /// Emits every waiting contraction, in the order they were planned.
    pub(super) fn flush_all(&mut self) -> Result<(), CompileError> {
        while !self.waiting.is_empty() {
            self.flush(0)?;
        }
        Ok(())
    }

    /// Numbers, validates and dispatches `kernel`, whose bindings are `uses` in order.
    fn emit_contraction(
        &mut self,
        mut kernel: ContractionKernel,
        uses: Vec<(BufId, Access)>,
        sources: Vec<u32>,
    ) -> Result<(), CompileError> {
        let number = u32::try_from(self.kernels.len())
            .map_err(|_| CompileError::unsupported("more than 2^32 kernels"))?;
        kernel.name = format!("k{number}");
        kernel.validate()?;
        let workgroups = u32::try_from(kernel.workgroups())
            .map_err(|_| CompileError::unsupported("too many tiles"))?;
        self.kernels.push(Kernel::Contraction(kernel));
        self.sources.push(sources);
        self.push(Pending::Dispatch {
            kernel: number,
            bindings: uses,
            workgroups,
        })
    }

    /// Whether a kernel other than the one being emitted may read `buf`, the result of
    /// `value`, once the product is fused away into it. The readers are the later values
    /// whose expressions read `buf` (views of the product, expressions over it). A reader
    /// consumed by another reader, or by the value this kernel materializes (whose
    /// consumers then read its store), is inside the chain; every other consumer of a reader
    /// (a second output of the same value, an `exp` of a returned transpose, a concat of a
    /// value and a view of it) reads `buf` itself. The kernel serves one such consumer —
    /// none more when it materializes a value. Consumers are counted from the program (an
    /// instruction's distinct operands and the outputs, as `uses` counts them), so remapped
    /// views of an expression count as the value they compute.
    fn read_by_another_kernel(&self, value: ValueId, buf: BufId) -> Result<bool, CompileError> {
        let mut readers = vec![false; self.vals.len()];
        let mut consumers = 0u64;
        for (i, e) in self.vals.iter().enumerate().skip(value.index() + 1) {
            let Some(e) = *e else { continue };
            let uses = self.uses.get(i).copied().unwrap_or(0);
            if uses > 0 && self.exprs.reads_buffer(e, buf)? {
                readers[i] = true;
                if self.materializing.map(ValueId::index) != Some(i) {
                    consumers += u64::from(uses);
                }
            }
        }
        let params = self.program.params.len();
        for (n, inst) in self.program.instructions.iter().enumerate() {
            if !readers.get(params + n).copied().unwrap_or(false) {
                continue;
            }
            let mut operands = inst.op.operands();
            operands.sort_unstable();
            operands.dedup();
            let inside = operands
                .iter()
                .filter(|v| {
                    readers.get(v.index()).copied().unwrap_or(false)
                        && Some(**v) != self.materializing
                })
                .count();
            consumers = consumers.saturating_sub(inside as u64);
        }
        let served = if self.materializing.is_some() { 0 } else { 1 };
        Ok(consumers > served)
    }

    /// If `body` (a kernel over `dims` storing at `store` of `dst`) can be a waiting
    /// contraction's epilogue (see the module documentation), emits the fused contraction and
    /// returns true.
    pub(super) fn try_fuse(
        &mut self,
        dims: &[u64],
        body: &Body,
        dst: BufId,
        store: &IndexMap,
    ) -> Result<bool, CompileError> {
        let Some(i) = self
            .waiting
            .iter()
            .position(|w| body.reads.contains(&w.dst))
        else {
            return Ok(false);
        };
        let w = &self.waiting[i];
        let uses = self.uses.get(w.value.index()).copied().unwrap_or(0);
        let scratch = self
            .bufs
            .get(w.dst as usize)
            .is_some_and(|b| b.home == Home::Scratch);
        if dims.len() != w.dims.len() || uses != 1 || !scratch || w.reads.contains(&dst) {
            return Ok(false);
        }
        if self.read_by_another_kernel(w.value, w.dst)? {
            return Ok(false);
        }
        let product = body.reads.iter().position(|&b| b == w.dst);
        let product_map = body.nodes.iter().find_map(|n| match &n.node {
            Node::Load { binding, map } if Some(*binding as usize) == product => Some(map),
            _ => None,
        });
        let Some(product_map) = product_map else {
            return Ok(false);
        };
        // The reader may walk the product's points in another axis order (a transposed
        // output): the permutation carries every map onto the product's axes.
        let identity = views::row_major(&w.dims, 0)?;
        let Some(perm) = axis_permutation(dims, &w.dims, product_map, &identity) else {
            return Ok(false);
        };
        let onto_product = |map: &IndexMap| {
            let mut strides = vec![0i64; map.strides.len()];
            for (i, &s) in map.strides.iter().enumerate() {
                strides[perm[i]] = s;
            }
            IndexMap::new(map.offset, &strides)
        };
        let mut one_view = true;
        for n in &body.nodes {
            match &n.node {
                Node::Load { binding, map } if Some(*binding as usize) == product => {
                    one_view &= map == product_map;
                }
                Node::Load { map, .. } => match w.regroup(&onto_product(map).strides) {
                    Some([_, sm, sn]) if sm >= 0 && sn >= 0 => {}
                    _ => return Ok(false),
                },
                Node::Gather { .. } | Node::Index { .. } | Node::Acc => return Ok(false),
                _ => {}
            }
        }
        let store = onto_product(store);
        let Some(store_strides) = w.regroup(&store.strides) else {
            return Ok(false);
        };
        if !one_view || store_strides[1] < 0 || store_strides[2] < 0 {
            return Ok(false);
        }
        // Fuse: the contraction's reads, then the epilogue's other buffers, then the result.
        let mut w = self.waiting.remove(i);
        // Its operands may themselves be waiting results.
        while let Some(j) = self.waiting.iter().position(|x| w.reads.contains(&x.dst)) {
            self.flush(j)?;
        }
        let mut epilogue = Vec::with_capacity(body.nodes.len());
        for n in &body.nodes {
            let node = match &n.node {
                Node::Load { binding, map } => {
                    let buf = body.reads[*binding as usize];
                    if buf == w.dst {
                        Node::Acc
                    } else {
                        let at = match w.reads.iter().position(|&b| b == buf) {
                            Some(at) => at,
                            None => {
                                w.reads.push(buf);
                                w.reads.len() - 1
                            }
                        };
                        let strides = w.regroup(&onto_product(map).strides).unwrap_or([0; 3]);
                        Node::Load {
                            binding: at as u32,
                            map: IndexMap::new(map.offset, &strides),
                        }
                    }
                }
                other => other.clone(),
            };
            epilogue.push(KernelNode {
                node,
                dtype: n.dtype,
            });
        }
        let (bindings, uses) = self.bindings_of(&w.reads, dst)?;
        w.kernel.store = Store {
            binding: w.reads.len() as u32,
            map: IndexMap::new(store.offset, &store_strides),
        };
        w.kernel.bindings = bindings;
        w.kernel.epilogue = epilogue;
        w.kernel.result = body.result;
        w.sources.extend(&body.sources);
        w.sources.sort_unstable();
        w.sources.dedup();
        self.emit_contraction(w.kernel, uses, w.sources)?;
        Ok(true)
    }
}

/// For a reader over `dims` loading the product (over `product_dims`, row-major `identity`)
/// through `map`: the product axis each reader axis walks, if `map` is the product's
/// row-major map with its axes permuted. Axes of extent ≤ 1 pair up in order.
fn axis_permutation(
    dims: &[u64],
    product_dims: &[Dim],
    map: &IndexMap,
    identity: &IndexMap,
) -> Option<Vec<usize>> {
    if map.offset != 0 || dims.len() != product_dims.len() || map.strides.len() != dims.len() {
        return None;
    }
    let mut taken = vec![false; product_dims.len()];
    let mut perm = Vec::with_capacity(dims.len());
    for (i, &n) in dims.iter().enumerate() {
        let j = (0..product_dims.len()).find(|&j| {
            !taken[j]
                && if n <= 1 {
                    product_dims[j] <= 1
                } else {
                    product_dims[j] == n && identity.strides[j] == map.strides[i]
                }
        })?;
        taken[j] = true;
        perm.push(j);
    }
    Some(perm)
}
