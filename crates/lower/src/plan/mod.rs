//! Planning: a verified [`Program`] becomes slots, commands and [`LoopKernel`]s
//! ([`LoweredProgram`]), with elementwise chains and movement ops fused into the kernels that
//! consume them.
//!
//! # How values are represented
//!
//! Each IR value is an expression over its own dims (see `expr`): either a *view* — one load of
//! a buffer through an affine map — or a *fusible expression* of elementwise ops, iotas,
//! constants and gathers over views. Nothing is computed when an elementwise op, iota, scalar
//! constant, gather, broadcast, transpose, slice, reverse or size-1 reshape is planned: the op
//! only builds or rewrites an expression (movement ops push their point map into the leaves,
//! see `views`). Code is generated when a value has to be in memory:
//! - `reduce` and `dot` are kernels with a reduction (their operands fused in; a dot's
//!   operands are materialized first unless they are constants, so no expression is
//!   recomputed `m·n·k` times); their result is a buffer;
//! - `pad` (a fill or kernel storing the padding value, then a kernel storing the cropped
//!   operand at strided positions) and `concat` (one kernel per operand storing at its offset
//!   along the axis) produce buffers;
//! - a reshape that is not a view (its operand is not a contiguous row-major view and the
//!   reshape does more than insert or remove dims of 1) materializes its operand first, and
//!   `gather` materializes the tensor it reads;
//! - a fusible expression with more than one consumer (counting distinct consuming
//!   instructions and outputs) is materialized once, unless it is cheap to recompute: it reads
//!   no memory and has at most four nodes, or it is a short chain of plain arithmetic over at
//!   most two buffers, which costs less to recompute than to store and reread
//!   (`Exprs::is_recomputable`; `exp`, `tanh` and `sigmoid` count as arithmetic only when
//!   they will be expanded into vector code that scales in one instruction, AVX-512's, and
//!   the value is larger than the L2 cache or at least half the last-level cache, so its
//!   reread would come from further away); so is one grown past [`MAX_FUSED_NODES`] nodes;
//! - a reduction that reads, point for point, the value the kernel just before it stored
//!   computes that value itself and stores it while it reduces it (a softmax's `exp`, see
//!   `keep`), so the value is not reread;
//! - each output gets its value stored into its slot: a value materialized while planning is
//!   stored straight into the first output slot that returns it; a later output of the same
//!   value, a parameter, a constant or a contiguous view is a `Copy` command; any other view or
//!   expression is one kernel.
//!
//! Values with no elements are constants (nothing can read them) and produce no commands; no
//! kernel is generated for an empty iteration space.
//!
//! # Memory
//!
//! Every materialized value gets its own virtual buffer; buffers of inputs, weights, outputs
//! and non-scalar constants live in their slots, and the others get scratch slots by liveness
//! (see `buffers`). Inputs are never written.
//!
//! # Donation
//!
//! An output that donates an input (`Output::donates`) is planned exactly like any other
//! output: its value is computed into the output slot and the input slot is only read. The
//! results therefore equal the interpreter's, the caller's input is never changed (as the
//! artifact requires), and donation is honoured as the placement hint it is: the runtime may
//! hand the same memory for both only where the caller allows, which needs no support here.

pub(crate) mod blocking;
mod buffers;
mod chain;
mod coalesce;
mod contract;
mod contract_tiles;
mod expr;
mod facts;
mod fuse;
mod keep;
mod ops;
mod outputs;
mod row_scratch;
mod rows;
mod stream_hint;
mod tiles;
mod views;

use std::collections::HashMap;

use accy_artifact::{Access, ArtifactPlan, Command, Slot, SlotRole};
use accy_ir::{Dims, ParamKind, Program, ReduceOp, Type, ValueId};

use crate::compile::Options;
use crate::error::CompileError;
use crate::kernel::{IndexMap, Kernel, KernelBinding, LoopKernel, Store};
use buffers::{Buffer, Home};
use expr::{BufId, ExprId, ExprKind, Exprs};

/// The most expression nodes a value may fuse before it is materialized: bounds the size of
/// kernel bodies (and so emitters' register pressure) and the planner's work per movement op.
pub const MAX_FUSED_NODES: usize = 64;

/// What planning produces: everything of an [`accy_artifact::Artifact`] except the machine
/// code, which a [`crate::Target`] emits from `kernels`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoweredProgram {
    /// The slots: one per input, weight and output (typed), one per non-scalar constant, and
    /// the scratch slots.
    pub plan: ArtifactPlan,
    /// The payloads of the constant slots.
    pub constants: Vec<u8>,
    /// The commands that compute the derived slots (packed weights and constants), run once
    /// before any run; see `accy_artifact::Artifact::setup`.
    pub setup: Vec<Command>,
    /// For each kernel, the IR instructions (by index, ascending) whose work it does: what it
    /// fused.
    pub sources: Vec<Vec<u32>>,
    /// The commands of one run, in order; `Dispatch::kernel` indexes `kernels`, and binding
    /// `i` of a dispatch is binding `i` of its kernel (same dtype, element count and access).
    pub commands: Vec<Command>,
    /// The kernels, each valid ([`Kernel::validate`]) and named uniquely.
    pub kernels: Vec<Kernel>,
}

/// Plans `program` with fusion on. The program must be verified (`accy_ir::verify`); an
/// unverified one may be refused with [`CompileError::Internal`] but never panics.
pub fn plan(program: &Program) -> Result<LoweredProgram, CompileError> {
    plan_with(program, &Options::default())
}

/// [`plan`] with explicit [`Options`].
pub fn plan_with(program: &Program, options: &Options) -> Result<LoweredProgram, CompileError> {
    plan_program(program, options, true)
}

/// [`plan_with`] without row-chunked regions: how a region's block is planned.
fn plan_unchunked(program: &Program, options: &Options) -> Result<LoweredProgram, CompileError> {
    plan_program(program, options, false)
}

fn plan_program(
    program: &Program,
    options: &Options,
    chunk: bool,
) -> Result<LoweredProgram, CompileError> {
    let mut planner = Planner::new(program, options)?;
    let regions = if chunk && options.fuse && options.row_blocks {
        rows::regions(program, options.caches.l2)
    } else {
        Vec::new()
    };
    let mut k = 0;
    while k < program.instructions.len() {
        if let Some(c) = regions.iter().find(|c| c.start == k) {
            if planner.chunked(c)? {
                k = c.end;
                continue;
            }
        }
        planner.instruction(k)?;
        k += 1;
    }
    planner.outputs()?;
    planner.finish()
}

/// A command over virtual buffers (turned into slot regions once scratch is assigned).
#[derive(Clone, Debug)]
enum Pending {
    Fill {
        buf: BufId,
        pattern: u32,
        width: u8,
    },
    Copy {
        src: BufId,
        src_offset: u64,
        dst: BufId,
        len: u64,
    },
    Dispatch {
        kernel: u32,
        bindings: Vec<(BufId, Access)>,
        workgroups: u32,
    },
    /// A command whose regions address buffers, not slots: each region's `slot` holds a
    /// [`BufId`], its offset and length are within that buffer (a row block's, see `rows`).
    Placed(Command),
}

struct Planner<'p> {
    program: &'p Program,
    options: Options,
    exprs: Exprs,
    bufs: Vec<Buffer>,
    /// The expression of each value planned so far.
    vals: Vec<Option<ExprId>>,
    /// Distinct consumers (instructions and outputs) of each value.
    uses: Vec<u32>,
    /// The buffer of each output slot.
    output_bufs: Vec<BufId>,
    /// Whether each output slot already holds its value.
    output_done: Vec<bool>,
    plan: ArtifactPlan,
    constants: Vec<u8>,
    commands: Vec<Pending>,
    /// Commands computing derived slots, run once before any run (see `contract`).
    setup: Vec<Pending>,
    /// While true, [`Planner::push`] appends to `setup` instead of `commands`.
    in_setup: bool,
    /// The derived buffer of each `(source buffer, layout)` made so far.
    derived: HashMap<(BufId, String), BufId>,
    kernels: Vec<Kernel>,
    /// `LoweredProgram::sources` so far.
    sources: Vec<Vec<u32>>,
    /// Contractions planned but not emitted yet (see `fuse`).
    waiting: Vec<fuse::Waiting>,
    /// The value [`Planner::materialize`] is storing into its own buffer, while it does:
    /// its consumers will read that store (see `fuse::read_by_another_kernel`).
    materializing: Option<ValueId>,
}

impl<'p> Planner<'p> {
    fn new(program: &'p Program, options: &Options) -> Result<Planner<'p>, CompileError> {
        let mut p = Planner {
            program,
            options: options.clone(),
            exprs: Exprs::default(),
            bufs: Vec::new(),
            vals: vec![None; program.value_count()],
            uses: vec![0; program.value_count()],
            output_bufs: Vec::new(),
            output_done: Vec::new(),
            plan: ArtifactPlan::default(),
            constants: Vec::new(),
            commands: Vec::new(),
            setup: Vec::new(),
            in_setup: false,
            derived: HashMap::new(),
            kernels: Vec::new(),
            sources: Vec::new(),
            waiting: Vec::new(),
            materializing: None,
        };
        for inst in &program.instructions {
            let mut operands = inst.op.operands();
            operands.sort_unstable();
            operands.dedup();
            for v in operands {
                *p.uses_mut(v)? += 1;
            }
        }
        for out in &program.outputs {
            *p.uses_mut(out.value)? += 1;
        }
        let mut input_number = 0u32;
        for (i, param) in program.params.iter().enumerate() {
            let role = match param.kind {
                ParamKind::Input => {
                    input_number += 1;
                    SlotRole::Input(input_number - 1)
                }
                ParamKind::Weight => SlotRole::Weight(param.name.clone()),
            };
            let buf = p.fixed_buffer(role, &param.ty)?;
            let e = p.view_of(buf, &param.ty)?;
            p.set_val(ValueId(i as u32), e)?;
        }
        for (i, out) in program.outputs.iter().enumerate() {
            let ty = p.ty(out.value)?.clone();
            let number =
                u32::try_from(i).map_err(|_| CompileError::unsupported("too many outputs"))?;
            let buf = p.fixed_buffer(SlotRole::Output(number), &ty)?;
            p.output_bufs.push(buf);
            p.output_done.push(false);
        }
        Ok(p)
    }

    fn uses_mut(&mut self, v: ValueId) -> Result<&mut u32, CompileError> {
        self.uses
            .get_mut(v.index())
            .ok_or_else(|| CompileError::internal(format!("value {v} does not exist")))
    }

    fn ty(&self, v: ValueId) -> Result<&'p Type, CompileError> {
        self.program
            .value_type(v)
            .ok_or_else(|| CompileError::internal(format!("value {v} does not exist")))
    }

    fn val(&self, v: ValueId) -> Result<ExprId, CompileError> {
        self.vals
            .get(v.index())
            .copied()
            .flatten()
            .ok_or_else(|| CompileError::internal(format!("value {v} used before it is planned")))
    }

    fn set_val(&mut self, v: ValueId, e: ExprId) -> Result<(), CompileError> {
        let slot = self
            .vals
            .get_mut(v.index())
            .ok_or_else(|| CompileError::internal(format!("value {v} does not exist")))?;
        *slot = Some(e);
        Ok(())
    }

    /// A new buffer in a new slot of `role` holding a `ty` tensor.
    fn fixed_buffer(&mut self, role: SlotRole, ty: &Type) -> Result<BufId, CompileError> {
        let slot = Slot::typed(role, ty.clone(), ty.dtype.alignment())
            .ok_or_else(|| CompileError::unsupported(format!("{ty} is too large")))?;
        let id = self
            .plan
            .add(slot)
            .ok_or_else(|| CompileError::unsupported("too many slots"))?;
        self.add_buffer(Buffer {
            dtype: ty.dtype,
            elements: elements(ty)?,
            home: Home::Slot(id),
        })
    }

    fn add_buffer(&mut self, buffer: Buffer) -> Result<BufId, CompileError> {
        let id = BufId::try_from(self.bufs.len())
            .map_err(|_| CompileError::unsupported("more than 2^32 buffers"))?;
        self.bufs.push(buffer);
        Ok(id)
    }

    fn buffer(&self, buf: BufId) -> Result<&Buffer, CompileError> {
        self.bufs
            .get(buf as usize)
            .ok_or_else(|| CompileError::internal(format!("buffer {buf} does not exist")))
    }

    /// The bindings of a kernel reading `reads` and writing `dst` (in that order), and the
    /// buffer uses of its dispatch.
    #[allow(clippy::type_complexity, reason = "the two halves of one dispatch")]
    fn bindings_of(
        &self,
        reads: &[BufId],
        dst: BufId,
    ) -> Result<(Vec<KernelBinding>, Vec<(BufId, Access)>), CompileError> {
        let mut bindings = Vec::with_capacity(reads.len() + 1);
        let mut uses = Vec::with_capacity(reads.len() + 1);
        for &buf in reads {
            let b = self.buffer(buf)?;
            bindings.push(expr::read_binding(b.dtype, b.elements));
            uses.push((buf, Access::Read));
        }
        let out = self.buffer(dst)?;
        bindings.push(KernelBinding {
            dtype: out.dtype,
            elements: out.elements,
            access: Access::Write,
        });
        uses.push((dst, Access::Write));
        Ok((bindings, uses))
    }

    /// The expression reading `buf` as a dense row-major tensor of `ty`; a constant when the
    /// tensor has no elements (nothing can read it).
    fn view_of(&mut self, buf: BufId, ty: &Type) -> Result<ExprId, CompileError> {
        if elements(ty)? == 0 {
            return self.exprs.push(ExprKind::Const { bits: 0 }, ty.dtype);
        }
        let map = views::row_major(&ty.dims, 0)?;
        self.exprs
            .push_view(ExprKind::Load { binding: buf, map }, ty.dtype)
    }

    /// The buffer value `v` is materialized into: the first output slot returning `v` that
    /// does not hold its value yet, or a new scratch buffer.
    fn destination(&mut self, v: ValueId) -> Result<BufId, CompileError> {
        let program = self.program;
        for (i, out) in program.outputs.iter().enumerate() {
            if out.value == v && !self.output_done.get(i).copied().unwrap_or(true) {
                self.output_done[i] = true;
                return self
                    .output_bufs
                    .get(i)
                    .copied()
                    .ok_or_else(|| CompileError::internal("output buffer missing"));
            }
        }
        let ty = self.ty(v)?;
        self.add_buffer(Buffer {
            dtype: ty.dtype,
            elements: elements(ty)?,
            home: Home::Scratch,
        })
    }

    /// Plans instruction `k`.
    fn instruction(&mut self, k: usize) -> Result<(), CompileError> {
        let program = self.program;
        let inst = program
            .instructions
            .get(k)
            .ok_or_else(|| CompileError::internal(format!("instruction {k} does not exist")))?;
        let v = program.instruction_value(k);
        self.exprs.current = u32::try_from(k).ok();
        let e = if elements(&inst.ty)? == 0 {
            self.exprs
                .push(ExprKind::Const { bits: 0 }, inst.ty.dtype)?
        } else {
            self.lower(v, &inst.op, &inst.ty)?
        };
        self.set_val(v, e)?;
        let is_view = matches!(self.exprs.get(e)?.kind, ExprKind::Load { .. });
        let uses = self.uses.get(v.index()).copied().unwrap_or(0);
        // An output is stored anyway, so its other consumers read it rather than recompute it.
        let output = program.outputs.iter().any(|o| o.value == v);
        // Whether recomputing an expanded `exp`, `tanh` or `sigmoid` in each consumer costs
        // less than storing it once and rereading it. Measured on a host with 1 MiB of L2 per
        // core and no SMT (`Options::caches.l2` is the share of one logical CPU; `accy
        // bench`, 1 thread, min of two or three rounds, f32 row softmax, whose `exp(x - max)`
        // feeds the sum and the division). With AVX-512's one-instruction scaling
        // (`Options::scale_b`) an expansion is about 10 vector FMAs per 16 lanes: more than a
        // round trip through the L2 — 64×1000 (`examples/softmax.accy`) 23.0-23.6 µs
        // recomputed, 18.4-18.7 µs stored once; 256×1024 95 against 82 µs — less than one
        // through the L3 or memory — 2048×1024 755 against 824 µs, 4096×1024 1.5 against 2.0
        // ms; at 2 threads 0.79-0.87 against 1.22-1.33 ms. A value of at least half the LLC,
        // the size from which stores may be streamed past the cache
        // (`crate::emit::streaming_size`), would be reread from memory: recomputed too.
        // Without it (AVX2's 8 lanes with the exponent-field arithmetic, the same code forced
        // on that host) storing once won at every size: 64×1000 52.7 against 34.6-34.8 µs,
        // 1024×1024 839-888 against 573-630 µs, 4096×1024 3.47-3.50 against 2.78-2.92 ms,
        // 16384×1024 15.6-16.1 against 14.2-14.5 ms, and at 2 threads alike or better; NEON's
        // 4 lanes follow. Unmeasured: NEON, f64 and `tanh`/`sigmoid` (whose expansions cost
        // more than `exp`'s, so storing once pays at least as well). On an Intel AVX-512
        // host (48 KiB L1d, 2 MiB L2, two 512-bit FMA ports; min of three alternating
        // rounds): 64×1024 stored 26.7-26.8 against 28.9-29.0 µs recomputed, 256×1024 130-132
        // against 118-122 µs (the three buffers outgrow the L2); the recomputed softmax is
        // bound by its ~40 vector operations a vector, the stored one by its division pass
        // (36% of samples at 64×1024; a reciprocal multiplication instead: 21.5 µs).
        let bytes = elements(&inst.ty)?.saturating_mul(inst.ty.dtype.size_bytes());
        let caches = &self.options.caches;
        // A value that large whose users keep its rows gets a dispatch chain and its rows a
        // home in worker scratch (`plan/row_scratch.rs`, with measurements).
        let streamed = crate::emit::streaming_size(bytes, caches);
        let chained = self.options.fuse
            && !self.options.row_blocks
            && streamed
            && row_scratch::may_stay_in_rows(program, v);
        let far = (bytes > caches.l2 || streamed) && !chained;
        let cheap_math = self.options.expands_math() && self.options.scale_b && far;
        let shared = uses > 1
            && !self.exprs.is_cheap(e)?
            && (output || !self.exprs.is_recomputable(e, cheap_math)?);
        let unfused = !self.options.fuse && !self.exprs.is_uniform(e)?;
        let large = !is_view && self.exprs.size(e)? > MAX_FUSED_NODES;
        if !is_view && uses > 0 && (shared || unfused || large) {
            self.materialize(v)?;
        }
        self.exprs.current = None;
        Ok(())
    }

    /// Computes value `v` into a buffer (unless it has no elements) and makes it a view of
    /// that buffer; returns the view.
    fn materialize(&mut self, v: ValueId) -> Result<ExprId, CompileError> {
        let ty = self.ty(v)?;
        let e = self.val(v)?;
        if elements(ty)? == 0 {
            return Ok(e);
        }
        let dst = self.destination(v)?;
        self.materializing = Some(v);
        let stored = self.store_all(&ty.dims, e, dst);
        self.materializing = None;
        stored?;
        let view = self.view_of(dst, ty)?;
        self.set_val(v, view)?;
        Ok(view)
    }

    /// Value `v` as a view of a buffer, materializing it if it is an expression; a constant
    /// expression (reading no memory, same value everywhere) is returned as it is.
    fn buffered(&mut self, v: ValueId) -> Result<ExprId, CompileError> {
        let e = self.val(v)?;
        match self.exprs.get(e)?.kind {
            ExprKind::Load { .. } | ExprKind::Const { .. } => Ok(e),
            _ => self.materialize(v),
        }
    }

    /// Stores `root` (an expression over `dims`, the dims of all of `dst`) at every point,
    /// row-major, into `dst`: a fill when `root` is a constant whose bytes a fill can repeat,
    /// otherwise a kernel.
    fn store_all(&mut self, dims: &[u64], root: ExprId, dst: BufId) -> Result<(), CompileError> {
        let expr = self.exprs.get(root)?;
        if let ExprKind::Const { bits } = expr.kind {
            if let Some((pattern, width)) = ops::fill_pattern(expr.dtype, bits) {
                return self.push(Pending::Fill {
                    buf: dst,
                    pattern,
                    width,
                });
            }
        }
        let map = views::row_major(dims, 0)?;
        self.kernel(dims, dims.len(), root, None, dst, map)
    }

    /// Emits a kernel over `dims` (`parallel` leading parallel dims) computing `root`, combined
    /// with `reduction` over the other dims, stored at `store_map(point)` of `dst`. Emits
    /// nothing when no point would be stored.
    fn kernel(
        &mut self,
        dims: &[u64],
        parallel: usize,
        root: ExprId,
        reduction: Option<ReduceOp>,
        dst: BufId,
        store_map: IndexMap,
    ) -> Result<(), CompileError> {
        let stored = match reduction {
            None => dims,
            Some(_) => dims.get(..parallel).unwrap_or(dims),
        };
        if stored.contains(&0) {
            return Ok(());
        }
        let body = self.exprs.body(root)?;
        if reduction.is_none() && self.try_fuse(dims, &body, dst, &store_map)? {
            return Ok(());
        }
        if body.reads.contains(&dst) {
            return Err(CompileError::internal(format!(
                "a kernel reads the buffer {dst} it writes"
            )));
        }
        if body.reads.len() + 1 > accy_artifact::abi::MAX_BINDINGS {
            return Err(CompileError::unsupported(format!(
                "a fused kernel reads {} buffers; at most {} bindings are allowed",
                body.reads.len(),
                accy_artifact::abi::MAX_BINDINGS - 1
            )));
        }
        let (bindings, uses) = self.bindings_of(&body.reads, dst)?;
        let mut kernel = LoopKernel {
            name: String::new(),
            dims: Dims::from_slice(dims),
            parallel_rank: u32::try_from(parallel)
                .map_err(|_| CompileError::internal("parallel rank overflows"))?,
            store: Store {
                binding: u32::try_from(body.reads.len())
                    .map_err(|_| CompileError::internal("binding count overflows"))?,
                map: store_map,
            },
            bindings,
            nodes: body.nodes,
            result: body.result,
            reduction,
            prefetch: None,
            row_scratch: Vec::new(),
            keep: None,
            at_most_zero: body.at_most_zero,
        };
        coalesce::coalesce(&mut kernel);
        blocking::block_transposes(&mut kernel, self.options.transpose_block);
        kernel.validate()?;
        let workgroups = tiles::workgroups(&kernel);
        // Waiting contractions this kernel reads are emitted first.
        let reads: Vec<BufId> = uses.iter().map(|&(b, _)| b).collect();
        while let Some(i) = self.waiting.iter().position(|w| reads.contains(&w.dst)) {
            self.flush(i)?;
        }
        // A reduction of the value the previous kernel stored may store it instead (`keep`).
        if kernel.reduction.is_some() && self.try_keep(&kernel, &uses, &body.sources) {
            return Ok(());
        }
        let number = u32::try_from(self.kernels.len())
            .map_err(|_| CompileError::unsupported("more than 2^32 kernels"))?;
        kernel.name = format!("k{number}");
        self.kernels.push(Kernel::Loop(kernel));
        self.sources.push(body.sources);
        self.push(Pending::Dispatch {
            kernel: number,
            bindings: uses,
            workgroups,
        })
    }

    fn finish(mut self) -> Result<LoweredProgram, CompileError> {
        self.flush_all()?;
        let options = self.options.clone();
        let mut lowered = buffers::assign(self)?;
        // Row-blocked regions (off by default) are the other way to the same reuse.
        if options.fuse && !options.row_blocks {
            chain::link(&mut lowered.commands, &mut lowered.kernels, &options.caches);
            row_scratch::place(
                &lowered.commands,
                &lowered.setup,
                &mut lowered.kernels,
                &lowered.plan,
            );
        }
        stream_hint::hint(&lowered.commands, &mut lowered.kernels, &options.caches);
        Ok(lowered)
    }
}

/// The element count of `ty`.
fn elements(ty: &Type) -> Result<u64, CompileError> {
    ty.element_count()
        .ok_or_else(|| CompileError::unsupported(format!("{ty} has too many elements")))
}

#[cfg(test)]
mod tests;
