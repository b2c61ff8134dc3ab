//! The encoder: a [`Program`] to version 1.0 wire bytes, exactly as `docs/wire-format.md`
//! lays them out.

use accy_ir::{Instruction, Op, Output, Param, Program, Tensor, Type, ValueId};

use crate::codes::{self, opcode, section, SECTION_REQUIRED};
use crate::{MAGIC, VERSION_MAJOR, VERSION_MINOR};

/// Encodes `program` as wire bytes of version [`VERSION_MAJOR`].[`VERSION_MINOR`].
///
/// Any program can be encoded, verified or not, and the same program always gives the same
/// bytes. For every program that passes [`accy_ir::verify`], `decode(&encode(p)) == Ok(p)`
/// (float constants bit for bit, NaN payloads and `-0.0` included). An unverified program
/// whose lists exceed [`accy_ir::MAX_RANK`] entries is still written faithfully, and decoding
/// refuses it.
pub fn encode(program: &Program) -> Vec<u8> {
    let mut w = Writer {
        buf: Vec::with_capacity(size_hint(program)),
    };
    w.buf.extend_from_slice(&MAGIC);
    w.u16(VERSION_MAJOR);
    w.u16(VERSION_MINOR);
    w.u32(codes::SECTIONS.len() as u32);
    w.section(section::PARAMS, |w| {
        w.count(program.params.len());
        program.params.iter().for_each(|p| w.param(p));
    });
    w.section(section::INSTRUCTIONS, |w| {
        w.count(program.instructions.len());
        program.instructions.iter().for_each(|i| w.instruction(i));
    });
    w.section(section::OUTPUTS, |w| {
        w.count(program.outputs.len());
        program.outputs.iter().for_each(|o| w.output(o));
    });
    w.buf
}

/// A rough byte count, so the buffer rarely reallocates; constants dominate large programs.
fn size_hint(program: &Program) -> usize {
    let constants: usize = program
        .instructions
        .iter()
        .map(|i| match &i.op {
            Op::Constant(t) => t
                .data()
                .len()
                .saturating_mul(t.dtype().size_bytes() as usize),
            _ => 0,
        })
        .fold(0, usize::saturating_add);
    constants
        .saturating_add(program.params.len().saturating_mul(48))
        .saturating_add(program.instructions.len().saturating_mul(64))
        .saturating_add(program.outputs.len().saturating_mul(9))
        .saturating_add(64)
}

struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// Counts and lengths are u64 so that every in-memory length fits without a failure case
    /// (`usize` is at most 64 bits on every target Rust supports).
    fn count(&mut self, n: usize) {
        self.u64(n as u64);
    }

    fn value(&mut self, v: ValueId) {
        self.u32(v.0);
    }

    fn dims(&mut self, dims: &[u64]) {
        self.count(dims.len());
        dims.iter().for_each(|&d| self.u64(d));
    }

    fn axes(&mut self, axes: &[u32]) {
        self.count(axes.len());
        axes.iter().for_each(|&a| self.u32(a));
    }

    fn offsets(&mut self, values: &[i64]) {
        self.count(values.len());
        values
            .iter()
            .for_each(|v| self.buf.extend_from_slice(&v.to_le_bytes()));
    }

    fn ty(&mut self, ty: &Type) {
        self.u8(codes::dtype_code(ty.dtype));
        self.dims(&ty.dims);
    }

    /// Writes a section header, the payload `body` produces, then patches the payload length.
    fn section(&mut self, id: u16, body: impl FnOnce(&mut Writer)) {
        self.u16(id);
        self.u16(SECTION_REQUIRED);
        let len_at = self.buf.len();
        self.u64(0);
        body(self);
        let len = (self.buf.len() - len_at - 8) as u64;
        self.buf[len_at..len_at + 8].copy_from_slice(&len.to_le_bytes());
    }

    fn param(&mut self, p: &Param) {
        self.u8(codes::param_kind_code(p.kind));
        self.count(p.name.len());
        self.buf.extend_from_slice(p.name.as_bytes());
        self.ty(&p.ty);
    }

    fn output(&mut self, o: &Output) {
        self.value(o.value);
        match o.donates {
            None => self.u8(0),
            Some(input) => {
                self.u8(1);
                self.u32(input);
            }
        }
    }

    fn tensor(&mut self, t: &Tensor) {
        self.u8(codes::dtype_code(t.dtype()));
        self.dims(t.dims());
        self.buf.extend_from_slice(&t.data().to_le_bytes());
    }

    fn instruction(&mut self, inst: &Instruction) {
        self.u8(op_code(&inst.op));
        self.ty(&inst.ty);
        match &inst.op {
            Op::Unary { op, x } => {
                self.u8(codes::unary_code(*op));
                self.value(*x);
            }
            Op::Binary { op, lhs, rhs } => {
                self.u8(codes::binary_code(*op));
                self.value(*lhs);
                self.value(*rhs);
            }
            Op::Compare { op, lhs, rhs } => {
                self.u8(codes::compare_code(*op));
                self.value(*lhs);
                self.value(*rhs);
            }
            Op::Select {
                cond,
                on_true,
                on_false,
            } => {
                self.value(*cond);
                self.value(*on_true);
                self.value(*on_false);
            }
            Op::Convert { x, to } => {
                self.value(*x);
                self.u8(codes::dtype_code(*to));
            }
            Op::Constant(t) => self.tensor(t),
            Op::Iota { ty, axis } => {
                self.ty(ty);
                self.u32(*axis);
            }
            Op::Broadcast { x, dims, axes } => {
                self.value(*x);
                self.dims(dims);
                self.axes(axes);
            }
            Op::Reshape { x, dims } => {
                self.value(*x);
                self.dims(dims);
            }
            Op::Transpose { x, perm } => {
                self.value(*x);
                self.axes(perm);
            }
            Op::Slice {
                x,
                start,
                limit,
                stride,
            } => {
                self.value(*x);
                self.dims(start);
                self.dims(limit);
                self.dims(stride);
            }
            Op::Concat { xs, axis } => {
                self.count(xs.len());
                xs.iter().for_each(|&x| self.value(x));
                self.u32(*axis);
            }
            Op::Pad {
                x,
                value,
                low,
                high,
                interior,
            } => {
                self.value(*x);
                self.value(*value);
                self.offsets(low);
                self.offsets(high);
                self.dims(interior);
            }
            Op::Reverse { x, axes } => {
                self.value(*x);
                self.axes(axes);
            }
            Op::Reduce { op, x, axes } => {
                self.u8(codes::reduce_code(*op));
                self.value(*x);
                self.axes(axes);
            }
            Op::Dot {
                lhs,
                rhs,
                lhs_batch,
                rhs_batch,
                lhs_contract,
                rhs_contract,
            } => {
                self.value(*lhs);
                self.value(*rhs);
                self.axes(lhs_batch);
                self.axes(rhs_batch);
                self.axes(lhs_contract);
                self.axes(rhs_contract);
            }
            Op::Gather { x, indices, axis } => {
                self.value(*x);
                self.value(*indices);
                self.u32(*axis);
            }
            // `op_code` wrote the invalid opcode 0 for this op; no body follows.
            _ => {}
        }
    }
}

/// The opcode of `op`'s variant (see `codes::opcode`).
fn op_code(op: &Op) -> u8 {
    match op {
        Op::Unary { .. } => opcode::UNARY,
        Op::Binary { .. } => opcode::BINARY,
        Op::Compare { .. } => opcode::COMPARE,
        Op::Select { .. } => opcode::SELECT,
        Op::Convert { .. } => opcode::CONVERT,
        Op::Constant(_) => opcode::CONSTANT,
        Op::Iota { .. } => opcode::IOTA,
        Op::Broadcast { .. } => opcode::BROADCAST,
        Op::Reshape { .. } => opcode::RESHAPE,
        Op::Transpose { .. } => opcode::TRANSPOSE,
        Op::Slice { .. } => opcode::SLICE,
        Op::Concat { .. } => opcode::CONCAT,
        Op::Pad { .. } => opcode::PAD,
        Op::Reverse { .. } => opcode::REVERSE,
        Op::Reduce { .. } => opcode::REDUCE,
        Op::Dot { .. } => opcode::DOT,
        Op::Gather { .. } => opcode::GATHER,
        // `Op` is `#[non_exhaustive]`: a variant added to the IR before this table learns it
        // is written as an opcode no decoder accepts, never as another op.
        _ => opcode::INVALID,
    }
}
