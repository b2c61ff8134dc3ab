//! The printer. It reads nothing but the item it prints (operand ids are printed, never looked
//! up), so it cannot fail or panic on an invalid program.

use std::fmt::{self, Write};

use super::literal::{NAN_F32, NAN_F64};
use crate::{Op, Output, Param, ParamKind, Program, Tensor, TensorData, Type, MAX_RANK};

/// Runs `write` into a fresh string. Writing to a `String` never fails, so the `fmt::Result`
/// carries no information.
fn render(write: impl FnOnce(&mut String) -> fmt::Result) -> String {
    let mut out = String::new();
    let _ = write(&mut out);
    out
}

pub(super) fn program(p: &Program) -> String {
    render(|out| {
        out.push_str("program {\n");
        for (i, param) in p.params.iter().enumerate() {
            out.push_str("  ");
            write_param(out, i, param)?;
            out.push('\n');
        }
        for (k, inst) in p.instructions.iter().enumerate() {
            out.push_str("  ");
            write_instruction(out, p.params.len().saturating_add(k), &inst.op, &inst.ty)?;
            out.push('\n');
        }
        for o in &p.outputs {
            out.push_str("  ");
            write_output(out, o)?;
            out.push('\n');
        }
        out.push_str("}\n");
        Ok(())
    })
}

pub(super) fn param(p: &Program, i: usize) -> String {
    match p.params.get(i) {
        Some(param) => render(|out| write_param(out, i, param)),
        None => format!("<no parameter {i}>"),
    }
}

pub(super) fn instruction(p: &Program, k: usize) -> String {
    match p.instructions.get(k) {
        Some(inst) => render(|out| {
            write_instruction(out, p.params.len().saturating_add(k), &inst.op, &inst.ty)
        }),
        None => format!("<no instruction {k}>"),
    }
}

pub(super) fn output(p: &Program, i: usize) -> String {
    match p.outputs.get(i) {
        Some(o) => render(|out| write_output(out, o)),
        None => format!("<no output {i}>"),
    }
}

fn write_param(out: &mut String, id: usize, param: &Param) -> fmt::Result {
    let kind = match param.kind {
        ParamKind::Input => "input",
        ParamKind::Weight => "weight",
    };
    // Names the parser could not read back (quotes, backslashes, control characters; the
    // verifier rejects them all) are escaped so the line stays readable in error messages.
    let name = &param.name;
    if name
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        write!(out, "%{id} = {kind} {name:?} : {}", param.ty)
    } else {
        write!(out, "%{id} = {kind} \"{name}\" : {}", param.ty)
    }
}

fn write_output(out: &mut String, o: &Output) -> fmt::Result {
    write!(out, "output {}", o.value)?;
    if let Some(d) = o.donates {
        write!(out, " donates {d}")?;
    }
    Ok(())
}

/// `[a,b,c]`, the spelling of attribute lists (and of dims inside types).
fn list<T: fmt::Display>(out: &mut String, items: &[T]) -> fmt::Result {
    out.push('[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write!(out, "{x}")?;
    }
    out.push(']');
    Ok(())
}

fn write_instruction(out: &mut String, id: usize, op: &Op, ty: &Type) -> fmt::Result {
    write!(out, "%{id} = {}", op.mnemonic())?;
    // The words between the mnemonic and the operands.
    match op {
        Op::Compare { op, .. } => write!(out, " {op}")?,
        Op::Reduce { op, .. } => write!(out, " {op}")?,
        Op::Constant(t) => {
            out.push(' ');
            write_literal(out, t)?;
        }
        _ => {}
    }
    let mut first = true;
    let mut sep = |out: &mut String| {
        out.push_str(if first { " " } else { ", " });
        first = false;
    };
    for v in op.operands() {
        sep(out);
        write!(out, "{v}")?;
    }
    match op {
        Op::Unary { .. }
        | Op::Binary { .. }
        | Op::Compare { .. }
        | Op::Select { .. }
        | Op::Constant(_) => {}
        Op::Convert { to, .. } => {
            sep(out);
            write!(out, "to={to}")?;
        }
        Op::Iota { axis, .. } | Op::Concat { axis, .. } | Op::Gather { axis, .. } => {
            sep(out);
            write!(out, "axis={axis}")?;
        }
        Op::Broadcast { dims, axes, .. } => {
            sep(out);
            attr(out, "dims", dims)?;
            sep(out);
            attr(out, "axes", axes)?;
        }
        Op::Reshape { dims, .. } => {
            sep(out);
            attr(out, "dims", dims)?;
        }
        Op::Transpose { perm, .. } => {
            sep(out);
            attr(out, "perm", perm)?;
        }
        Op::Slice {
            start,
            limit,
            stride,
            ..
        } => {
            sep(out);
            attr(out, "start", start)?;
            sep(out);
            attr(out, "limit", limit)?;
            sep(out);
            attr(out, "stride", stride)?;
        }
        Op::Pad {
            low,
            high,
            interior,
            ..
        } => {
            sep(out);
            attr(out, "low", low)?;
            sep(out);
            attr(out, "high", high)?;
            sep(out);
            attr(out, "interior", interior)?;
        }
        Op::Reverse { axes, .. } | Op::Reduce { axes, .. } => {
            sep(out);
            attr(out, "axes", axes)?;
        }
        Op::Dot {
            lhs_batch,
            rhs_batch,
            lhs_contract,
            rhs_contract,
            ..
        } => {
            sep(out);
            attr(out, "lhs_batch", lhs_batch)?;
            sep(out);
            attr(out, "rhs_batch", rhs_batch)?;
            sep(out);
            attr(out, "lhs_contract", lhs_contract)?;
            sep(out);
            attr(out, "rhs_contract", rhs_contract)?;
        }
    }
    // An `iota`'s own type is not printed: the annotation stands for it (and for a
    // `constant`'s dims and dtype), which is exact for every program that verifies.
    write!(out, " : {ty}")
}

fn attr<T: fmt::Display>(out: &mut String, name: &str, items: &[T]) -> fmt::Result {
    write!(out, "{name}=")?;
    list(out, items)
}

/// A constant's elements: a bare value for rank 0, lists nested like the dims otherwise.
/// Empty tensors print as `[]` (nesting would print one pair per index of a possibly huge
/// leading dim), as do those of a rank the format cannot have.
fn write_literal(out: &mut String, t: &Tensor) -> fmt::Result {
    let data = t.data();
    if t.dims().is_empty() {
        return write_element(out, data, 0);
    }
    if data.is_empty() || t.dims().len() > MAX_RANK {
        out.push('[');
        for i in 0..data.len() {
            if i > 0 {
                out.push_str(", ");
            }
            write_element(out, data, i)?;
        }
        out.push(']');
        return Ok(());
    }
    let mut next = 0;
    write_nested(out, t.dims(), data, &mut next)
}

/// Writes the elements from `*next` on as lists nested like `dims`. The tensor is non-empty,
/// so every dim is at least 1 and the loops together run once per element and list.
fn write_nested(
    out: &mut String,
    dims: &[u64],
    data: &TensorData,
    next: &mut usize,
) -> fmt::Result {
    let Some((&dim, inner)) = dims.split_first() else {
        let i = *next;
        *next += 1;
        return write_element(out, data, i);
    };
    out.push('[');
    for j in 0..dim {
        if j > 0 {
            out.push_str(", ");
        }
        write_nested(out, inner, data, next)?;
    }
    out.push(']');
    Ok(())
}

fn write_element(out: &mut String, data: &TensorData, i: usize) -> fmt::Result {
    let written = match data {
        TensorData::F32(v) => v.get(i).map(|&x| write_f32(out, x)),
        TensorData::F64(v) => v.get(i).map(|&x| write_f64(out, x)),
        TensorData::I32(v) => v.get(i).map(|x| write!(out, "{x}")),
        TensorData::I64(v) => v.get(i).map(|x| write!(out, "{x}")),
        TensorData::U8(v) => v.get(i).map(|x| write!(out, "{x}")),
        TensorData::Bool(v) => v.get(i).map(|x| write!(out, "{x}")),
    };
    // A Tensor always holds as many elements as its dims say, so `None` cannot happen; a
    // marker is printed rather than panicking should that invariant ever break.
    written.unwrap_or_else(|| {
        out.push('?');
        Ok(())
    })
}

/// Floats print as the shortest decimal that reads back to the same value (Rust's `{:?}`),
/// `inf`/`-inf`, `nan` for the canonical quiet NaN, and `nan:0x…` with all the bits for any
/// other NaN, so every bit pattern round-trips.
fn write_f32(out: &mut String, x: f32) -> fmt::Result {
    if x.is_nan() {
        if x.to_bits() == NAN_F32 {
            out.push_str("nan");
            Ok(())
        } else {
            write!(out, "nan:0x{:08x}", x.to_bits())
        }
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
        Ok(())
    } else {
        write!(out, "{x:?}")
    }
}

fn write_f64(out: &mut String, x: f64) -> fmt::Result {
    if x.is_nan() {
        if x.to_bits() == NAN_F64 {
            out.push_str("nan");
            Ok(())
        } else {
            write!(out, "nan:0x{:016x}", x.to_bits())
        }
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
        Ok(())
    } else {
        write!(out, "{x:?}")
    }
}
