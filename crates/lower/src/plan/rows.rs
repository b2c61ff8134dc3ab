//! Row-chunked regions: a run of row-local instructions (softmax, layer norm) executed a block
//! of rows at a time, so its passes over a block find it in the L2 cache. Only with
//! [`Options::row_blocks`], which is off by default (measured slower; see its doc).
//!
//! A row softmax is several kernels — a max, an exp, a sum, a division — each a pass over the
//! whole tensor; beyond the cache size each pass reads memory again. But every one of them
//! works on each row alone. So a *region* of consecutive instructions that are all row-local
//! (elementwise ops, reductions over other axes than the first, broadcasts that keep the first
//! axis or add it, scalar constants) over one first-axis extent is planned as a program of its
//! own for a block of [`Chunking::rows`] rows (`plan_chunk`), and its commands are repeated for
//! each block with their regions moved to the block's rows (`Planner::chunked`): memory
//! traffic falls to one read of the inputs and one write of the results, and the temporaries
//! of one block live in small scratch buffers the blocks reuse.
//!
//! A region qualifies when it reduces something, its largest value exceeds half the L2 cache
//! (smaller ones stay in the cache anyway), and every value from outside is used either whole
//! (a weight broadcast along the rows) or as rows; the region's values used later, or
//! returned, are stored in full. Chunking is skipped — the instructions are planned as usual —
//! whenever a block's program does not have the simple shape this needs.

use std::collections::HashMap;

use accy_artifact::{Command, Region, SlotId, SlotRole};
use accy_ir::{Builder, Op, Program, Type, ValueId};

use super::expr::{BufId, ExprKind};
use super::{buffers, views, Buffer, Home, LoweredProgram, Pending, Planner};
use crate::compile::Options;
use crate::error::CompileError;
use crate::kernel::Kernel;

/// A run of row-local instructions, `start..end`, over a first axis of `rows`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Chunking {
    pub(super) start: usize,
    pub(super) end: usize,
    /// The first axis' extent.
    pub(super) total: u64,
    /// Rows per block.
    pub(super) rows: u64,
}

/// How a value from outside a region is used in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    /// Row by row (its first axis is the region's).
    Rows,
    /// Whole, by every block.
    Whole,
}

/// The rows of `ty` (its first axis) if it has any.
fn first(ty: &Type) -> Option<u64> {
    ty.dims.first().copied()
}

/// Whether instruction `inst` works on each of `total` rows alone, recording how it uses each
/// operand defined before `start`.
fn row_local(
    program: &Program,
    inst: &accy_ir::Instruction,
    total: u64,
    start: usize,
    outside: &mut Vec<(ValueId, Use)>,
) -> bool {
    // Values are numbered params first, then instructions.
    let defined_before = |v: ValueId| {
        v.index()
            .checked_sub(program.params.len())
            .is_none_or(|i| i < start)
    };
    let mut record = |v: ValueId, how: Use| -> bool {
        if !defined_before(v) {
            return true;
        }
        match outside.iter().find(|(w, _)| *w == v) {
            Some((_, was)) => *was == how,
            None => {
                outside.push((v, how));
                true
            }
        }
    };
    let ty = |v: ValueId| program.value_type(v);
    match &inst.op {
        Op::Constant(t) => t.ty().dims.is_empty(),
        _ if first(&inst.ty) != Some(total) => false,
        Op::Unary { x, .. } | Op::Convert { x, .. } => record(*x, Use::Rows),
        Op::Binary { lhs, rhs, .. } | Op::Compare { lhs, rhs, .. } => {
            record(*lhs, Use::Rows) && record(*rhs, Use::Rows)
        }
        Op::Select {
            cond,
            on_true,
            on_false,
        } => {
            record(*cond, Use::Rows) && record(*on_true, Use::Rows) && record(*on_false, Use::Rows)
        }
        Op::Reduce { x, axes, .. } => !axes.contains(&0) && record(*x, Use::Rows),
        Op::Broadcast { x, axes, .. } => {
            let Some(xt) = ty(*x) else {
                return false;
            };
            match axes.iter().position(|&a| a == 0) {
                // The operand's first axis must become the rows.
                Some(0) if first(xt) == Some(total) => record(*x, Use::Rows),
                Some(_) => false,
                // Used whole by every block: a value from outside, or a scalar of the region
                // (a constant); a value of the region has rows, which must stay rows.
                None if defined_before(*x) => record(*x, Use::Whole),
                None => xt.dims.is_empty(),
            }
        }
        _ => false,
    }
}

/// The regions of `program` worth chunking for a level-2 cache of `l2` bytes (see the module
/// documentation), in order.
pub(super) fn regions(program: &Program, l2: u64) -> Vec<Chunking> {
    let mut found = Vec::new();
    let n = program.instructions.len();
    let mut k = 0;
    while k < n {
        let Some(total) = first(&program.instructions[k].ty).filter(|&t| t > 1) else {
            k += 1;
            continue;
        };
        let mut outside = Vec::new();
        let mut end = k;
        while end < n && row_local(program, &program.instructions[end], total, k, &mut outside) {
            end += 1;
        }
        let insts = &program.instructions[k..end];
        let reduces = insts.iter().any(|i| matches!(i.op, Op::Reduce { .. }));
        let largest = insts
            .iter()
            .filter_map(|i| i.ty.byte_size())
            .max()
            .unwrap_or(0);
        if reduces && end - k >= 3 && largest > l2 / 2 {
            // A block's largest value takes an eighth of the cache: the passes over a block
            // read a few of them.
            let row_bytes = (largest / total).max(1);
            let rows = (l2 / 8 / row_bytes).clamp(1, total);
            if rows < total {
                found.push(Chunking {
                    start: k,
                    end,
                    total,
                    rows,
                });
            }
        }
        k = end.max(k + 1);
    }
    found
}

/// A region's block program, the outside values it reads (with how each is used) and the
/// values it exports.
type BlockProgram = (Program, Vec<(ValueId, Use)>, Vec<ValueId>);

/// The region's instructions as a program over `rows` rows: outside values become inputs (in
/// first-use order), the region's values used after it or returned become outputs. Returns
/// the program, the outside values and the exported values.
fn block_program(program: &Program, c: &Chunking, rows: u64) -> Option<BlockProgram> {
    let mut outside = Vec::new();
    for inst in &program.instructions[c.start..c.end] {
        if !row_local(program, inst, c.total, c.start, &mut outside) {
            return None;
        }
    }
    let resize = |ty: &Type| -> Type {
        let mut dims = ty.dims.clone();
        if let Some(d) = dims.first_mut() {
            *d = rows;
        }
        Type::new(ty.dtype, &dims)
    };
    let mut b = Builder::new();
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for (i, (v, how)) in outside.iter().enumerate() {
        let ty = program.value_type(*v)?;
        let ty = match how {
            Use::Rows => resize(ty),
            Use::Whole => ty.clone(),
        };
        map.insert(*v, b.input(&format!("in{i}"), ty).ok()?);
    }
    for k in c.start..c.end {
        let inst = &program.instructions[k];
        let m = |v: &ValueId| map.get(v).copied();
        let op = match &inst.op {
            Op::Unary { op, x } => Op::Unary { op: *op, x: m(x)? },
            Op::Convert { x, to } => Op::Convert { x: m(x)?, to: *to },
            Op::Binary { op, lhs, rhs } => Op::Binary {
                op: *op,
                lhs: m(lhs)?,
                rhs: m(rhs)?,
            },
            Op::Compare { op, lhs, rhs } => Op::Compare {
                op: *op,
                lhs: m(lhs)?,
                rhs: m(rhs)?,
            },
            Op::Select {
                cond,
                on_true,
                on_false,
            } => Op::Select {
                cond: m(cond)?,
                on_true: m(on_true)?,
                on_false: m(on_false)?,
            },
            Op::Reduce { op, x, axes } => Op::Reduce {
                op: *op,
                x: m(x)?,
                axes: axes.clone(),
            },
            Op::Broadcast { x, dims, axes } => {
                let mut dims = dims.clone();
                if let Some(d) = dims.first_mut() {
                    *d = rows;
                }
                Op::Broadcast {
                    x: m(x)?,
                    dims,
                    axes: axes.clone(),
                }
            }
            Op::Constant(t) => Op::Constant(t.clone()),
            _ => return None,
        };
        map.insert(program.instruction_value(k), b.push(op).ok()?);
    }
    let used_after = |v: ValueId| {
        program.instructions[c.end..]
            .iter()
            .any(|i| i.op.operands().contains(&v))
            || program.outputs.iter().any(|o| o.value == v)
    };
    let mut exported = Vec::new();
    for k in c.start..c.end {
        let v = program.instruction_value(k);
        if used_after(v) {
            // An exported value is stored block by block at its rows: one without them (a
            // scalar constant of the region used later) cannot be, so the region is not
            // chunked.
            if first(program.value_type(v)?) != Some(c.total) {
                return None;
            }
            b.output(*map.get(&v)?).ok()?;
            exported.push(v);
        }
    }
    Some((b.finish().ok()?, outside, exported))
}

/// The block program planned, if it has the shape stitching needs: inputs, outputs and
/// scratch slots only, no setup.
fn plan_block(program: &Program, options: &Options) -> Option<LoweredProgram> {
    let lowered = super::plan_unchunked(program, options).ok()?;
    let simple = lowered.setup.is_empty()
        && lowered.plan.slots.iter().all(|s| {
            matches!(
                s.role,
                SlotRole::Input(_) | SlotRole::Output(_) | SlotRole::Scratch
            )
        });
    simple.then_some(lowered)
}

impl Planner<'_> {
    /// Plans region `c` block by block (see the module documentation); returns false, having
    /// planned nothing, when the region does not fit the scheme after all.
    pub(super) fn chunked(&mut self, c: &Chunking) -> Result<bool, CompileError> {
        let program = self.program;
        let rem = c.total % c.rows;
        let Some((full, outside, exported)) = block_program(program, c, c.rows) else {
            return Ok(false);
        };
        let Some(full_plan) = plan_block(&full, &self.options) else {
            return Ok(false);
        };
        let rest = if rem > 0 {
            match block_program(program, c, rem).and_then(|(p, ..)| plan_block(&p, &self.options)) {
                Some(plan) => Some(plan),
                None => return Ok(false),
            }
        } else {
            None
        };
        // The buffers: outside values as dense buffers, exported values' destinations.
        let mut inputs = Vec::with_capacity(outside.len());
        for &(v, _) in &outside {
            inputs.push(self.dense_buffer(v)?);
        }
        let mut outputs = Vec::with_capacity(exported.len());
        for &v in &exported {
            outputs.push(self.destination(v)?);
        }
        let row_bytes = |buf: BufId, p: &Planner<'_>| -> Result<u64, CompileError> {
            Ok(p.buffer(buf)?.bytes() / c.total.max(1))
        };
        let mut blocks = Vec::new();
        let mut r0 = 0;
        while r0 + c.rows <= c.total {
            blocks.push((r0, &full_plan));
            r0 += c.rows;
        }
        if let Some(rest) = &rest {
            blocks.push((r0, rest));
        }
        // Each block plan's kernels once, and its scratch slots as buffers all blocks reuse.
        let mut stitched: Vec<(u32, Vec<BufId>)> = Vec::new();
        for plan in std::iter::once(&full_plan).chain(rest.as_ref()) {
            let first = u32::try_from(self.kernels.len())
                .map_err(|_| CompileError::unsupported("more than 2^32 kernels"))?;
            for (kernel, sources) in plan.kernels.iter().zip(&plan.sources) {
                let mut kernel = kernel.clone();
                let number = self.kernels.len();
                match &mut kernel {
                    Kernel::Loop(k) => k.name = format!("k{number}"),
                    Kernel::Contraction(k) => k.name = format!("k{number}"),
                }
                self.kernels.push(kernel);
                self.sources
                    .push(sources.iter().map(|&s| s + c.start as u32).collect());
            }
            let mut scratch = Vec::new();
            for slot in &plan.plan.slots {
                if slot.role == SlotRole::Scratch {
                    scratch.push(self.add_buffer(Buffer {
                        dtype: accy_ir::DType::U8,
                        elements: slot.byte_size,
                        home: Home::Scratch,
                    })?);
                }
            }
            stitched.push((first, scratch));
        }
        for (r0, plan) in blocks {
            let which = usize::from(!std::ptr::eq(plan, &full_plan));
            let (first_kernel, scratch) = &stitched[which];
            // Each block slot as (buffer, byte offset of this block in it).
            let mut place: Vec<(BufId, u64)> = Vec::with_capacity(plan.plan.slots.len());
            let mut next_scratch = scratch.iter();
            for slot in &plan.plan.slots {
                let at = match slot.role {
                    SlotRole::Input(n) => {
                        let (buf, how) = (inputs[n as usize], outside[n as usize].1);
                        match how {
                            Use::Rows => (buf, r0 * row_bytes(buf, self)?),
                            Use::Whole => (buf, 0),
                        }
                    }
                    SlotRole::Output(n) => {
                        let buf = outputs[n as usize];
                        (buf, r0 * row_bytes(buf, self)?)
                    }
                    _ => (
                        *next_scratch
                            .next()
                            .ok_or_else(|| CompileError::internal("block scratch missing"))?,
                        0,
                    ),
                };
                place.push(at);
            }
            for command in &plan.commands {
                let moved = move_command(command, &place, *first_kernel)?;
                self.push(Pending::Placed(moved))?;
            }
        }
        for (&v, &buf) in exported.iter().zip(&outputs) {
            let ty = self.ty(v)?;
            let view = self.view_of(buf, ty)?;
            self.set_val(v, view)?;
        }
        Ok(true)
    }

    /// Value `v` in a buffer of its own, dense and row-major from byte 0.
    fn dense_buffer(&mut self, v: ValueId) -> Result<BufId, CompileError> {
        let ty = self.ty(v)?;
        let e = self.buffered(v)?;
        if let ExprKind::Load { binding, map } = &self.exprs.get(e)?.kind {
            if *map == views::row_major(&ty.dims, 0)? {
                return Ok(*binding);
            }
        }
        let buf = self.add_buffer(Buffer {
            dtype: ty.dtype,
            elements: super::elements(ty)?,
            home: Home::Scratch,
        })?;
        self.store_all(&ty.dims, e, buf)?;
        Ok(buf)
    }
}

/// `command` of a block plan with every region moved into its parent buffer (`place[slot]`:
/// the buffer, whose id the returned regions carry as their slot, and the block's byte offset
/// in it) and kernel numbers shifted by `first_kernel`.
fn move_command(
    command: &Command,
    place: &[(BufId, u64)],
    first_kernel: u32,
) -> Result<Command, CompileError> {
    let moved = |r: &Region| -> Result<Region, CompileError> {
        let &(buf, at) = place
            .get(r.slot.index())
            .ok_or_else(|| CompileError::internal("block region of no slot"))?;
        Ok(Region::new(SlotId(buf), at + r.offset, r.len))
    };
    buffers::map_regions(command, first_kernel, &moved)
}

#[cfg(test)]
mod tests {
    use accy_ir::{interp, text};
    use proptest::test_runner::TestRunner;

    use crate::compile::Options;
    use crate::plan::plan_with;
    use crate::testing::{run_lowered, same_results, validate_plan};
    use accy_artifact::Blocking;

    const SOFTMAX: &str = "program {
      %x = input \"x\" : f32[45,100]
      %m = reduce max %x, axes=[1] : f32[45]
      %mb = broadcast %m, dims=[45,100], axes=[0] : f32[45,100]
      %s = sub %x, %mb : f32[45,100]
      %e = exp %s : f32[45,100]
      %t = reduce sum %e, axes=[1] : f32[45]
      %tb = broadcast %t, dims=[45,100], axes=[0] : f32[45,100]
      %y = div %e, %tb : f32[45,100]
      output %y
      output %m
    }";

    const LAYERNORM: &str = "program {
      %x = input \"x\" : f32[37,64]
      %g = weight \"g\" : f32[64]
      %b = weight \"b\" : f32[64]
      %n = constant 0.015625 : f32[]
      %nb = broadcast %n, dims=[37], axes=[] : f32[37]
      %s = reduce sum %x, axes=[1] : f32[37]
      %mean = mul %s, %nb : f32[37]
      %mb = broadcast %mean, dims=[37,64], axes=[0] : f32[37,64]
      %c = sub %x, %mb : f32[37,64]
      %sq = mul %c, %c : f32[37,64]
      %v = reduce sum %sq, axes=[1] : f32[37]
      %var = mul %v, %nb : f32[37]
      %r = rsqrt %var : f32[37]
      %rb = broadcast %r, dims=[37,64], axes=[0] : f32[37,64]
      %xn = mul %c, %rb : f32[37,64]
      %gb = broadcast %g, dims=[37,64], axes=[1] : f32[37,64]
      %bb = broadcast %b, dims=[37,64], axes=[1] : f32[37,64]
      %y0 = mul %xn, %gb : f32[37,64]
      %y = add %y0, %bb : f32[37,64]
      %z = neg %y : f32[37,64]
      output %z
    }";

    #[test]
    fn row_regions_run_block_by_block_and_compute_the_same() {
        for (source, blocks) in [(SOFTMAX, 4usize), (LAYERNORM, 4)] {
            let program = text::parse(source).unwrap();
            // A cache small enough that the region is chunked into blocks of a few rows.
            let options = Options::default()
                .with_row_blocks(true)
                .with_caches(Blocking {
                    l1d: 4096,
                    l2: 8192,
                    llc: 0,
                    ..Default::default()
                });
            let regions = super::regions(&program, 8192);
            assert_eq!(regions.len(), 1, "{source}");
            let c = &regions[0];
            assert!(
                c.rows < c.total && c.total.div_ceil(c.rows) >= blocks as u64,
                "{c:?}"
            );
            let lowered = plan_with(&program, &options).unwrap();
            validate_plan(&lowered).unwrap();
            let unchunked = super::super::plan_unchunked(&program, &options).unwrap();
            assert!(lowered.commands.len() >= blocks * unchunked.commands.len() / 2);
            let mut runner = TestRunner::deterministic();
            runner
                .run(&accy_ir::gen::arb_args(&program), |args| {
                    let expected = interp::eval(&program, &args).unwrap();
                    let actual = run_lowered(&lowered, &program, &args).unwrap();
                    same_results(&expected, &actual)
                        .map_err(proptest::test_runner::TestCaseError::fail)
                })
                .unwrap();
        }
    }

    #[test]
    fn small_or_reduction_free_runs_are_not_chunked() {
        let program = text::parse(SOFTMAX).unwrap();
        assert!(
            super::regions(&program, 1 << 20).is_empty(),
            "fits the cache"
        );
        let chain = text::parse(
            "program {
              %x = input \"x\" : f32[64,100]
              %a = neg %x : f32[64,100]
              %b = abs %a : f32[64,100]
              %c = exp %b : f32[64,100]
              output %c
            }",
        )
        .unwrap();
        assert!(super::regions(&chain, 1024).is_empty(), "nothing reduced");
    }
}
