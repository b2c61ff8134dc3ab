//! Decoding one instruction: opcode, declared result type, then the op's operands and
//! attributes in the order `docs/wire-format.md` lists them.

use accy_ir::{Axes, DType, Instruction, Op, Tensor, TensorData, Type, ValueId};

use crate::codes::{self, opcode};
use crate::decode::{dims, dtype, ty, MIN_TYPE_BYTES};
use crate::reader::{invalid, FileVersion, Reader};
use crate::DecodeError;

/// The fewest bytes any instruction occupies: opcode, result type, and the smallest body
/// (a select's or a unary's operands, a reshape's id and empty dims, …) — at least 4 bytes.
pub(crate) const MIN_INSTRUCTION_BYTES: usize = 1 + MIN_TYPE_BYTES + 4;

/// One instruction.
pub(crate) fn instruction(
    r: &mut Reader<'_>,
    version: FileVersion,
) -> Result<Instruction, DecodeError> {
    let op_at = r.pos();
    let code = r.u8("opcode")?;
    let Some(&(_, name)) = codes::OPCODES.iter().find(|&&(c, _)| c == code) else {
        return Err(version.unknown_code(op_at, "opcode", code));
    };
    let inst = ty(r, version).and_then(|result| {
        let op = body(r, version, code)?;
        Ok(Instruction { op, ty: result })
    });
    inst.map_err(|e| e.within(|| format!("`{name}`")))
}

/// The operands and attributes of the op `code` names (one of `codes::OPCODES`).
fn body(r: &mut Reader<'_>, version: FileVersion, code: u8) -> Result<Op, DecodeError> {
    Ok(match code {
        opcode::UNARY => {
            let op = sub_op(r, version, "unary function", codes::unary_from_code)?;
            Op::Unary { op, x: value(r)? }
        }
        opcode::BINARY => {
            let op = sub_op(r, version, "binary function", codes::binary_from_code)?;
            Op::Binary {
                op,
                lhs: value(r)?,
                rhs: value(r)?,
            }
        }
        opcode::COMPARE => {
            let op = sub_op(r, version, "comparison", codes::compare_from_code)?;
            Op::Compare {
                op,
                lhs: value(r)?,
                rhs: value(r)?,
            }
        }
        opcode::SELECT => Op::Select {
            cond: value(r)?,
            on_true: value(r)?,
            on_false: value(r)?,
        },
        opcode::CONVERT => Op::Convert {
            x: value(r)?,
            to: dtype(r, version)?,
        },
        opcode::CONSTANT => Op::Constant(tensor(r, version)?),
        opcode::IOTA => Op::Iota {
            ty: ty(r, version)?,
            axis: r.u32("axis")?,
        },
        opcode::BROADCAST => Op::Broadcast {
            x: value(r)?,
            dims: dims(r, "dims")?,
            axes: axes(r, "axes")?,
        },
        opcode::RESHAPE => Op::Reshape {
            x: value(r)?,
            dims: dims(r, "dims")?,
        },
        opcode::TRANSPOSE => Op::Transpose {
            x: value(r)?,
            perm: axes(r, "permutation")?,
        },
        opcode::SLICE => Op::Slice {
            x: value(r)?,
            start: dims(r, "start")?,
            limit: dims(r, "limit")?,
            stride: dims(r, "stride")?,
        },
        opcode::CONCAT => {
            let n = r.count(4, "concat operand count")?;
            Op::Concat {
                xs: list(r, n, value)?,
                axis: r.u32("axis")?,
            }
        }
        opcode::PAD => Op::Pad {
            x: value(r)?,
            value: value(r)?,
            low: offsets(r, "low")?,
            high: offsets(r, "high")?,
            interior: dims(r, "interior")?,
        },
        opcode::REVERSE => Op::Reverse {
            x: value(r)?,
            axes: axes(r, "axes")?,
        },
        opcode::REDUCE => {
            let op = sub_op(r, version, "reduction", codes::reduce_from_code)?;
            Op::Reduce {
                op,
                x: value(r)?,
                axes: axes(r, "axes")?,
            }
        }
        opcode::DOT => Op::Dot {
            lhs: value(r)?,
            rhs: value(r)?,
            lhs_batch: axes(r, "lhs batch axes")?,
            rhs_batch: axes(r, "rhs batch axes")?,
            lhs_contract: axes(r, "lhs contracting axes")?,
            rhs_contract: axes(r, "rhs contracting axes")?,
        },
        opcode::GATHER => Op::Gather {
            x: value(r)?,
            indices: value(r)?,
            axis: r.u32("axis")?,
        },
        other => {
            return Err(invalid(
                r.pos(),
                format!("opcode {other:#04x} has no decoder"),
            ))
        }
    })
}

fn value(r: &mut Reader<'_>) -> Result<ValueId, DecodeError> {
    r.u32("operand value id").map(ValueId)
}

fn sub_op<T>(
    r: &mut Reader<'_>,
    version: FileVersion,
    what: &str,
    from: fn(u8) -> Option<T>,
) -> Result<T, DecodeError> {
    let at = r.pos();
    let code = r.u8(what)?;
    from(code).ok_or_else(|| version.unknown_code(at, what, code))
}

/// `n` items read by `item`, collected into whatever list type the caller's field has.
/// Callers have checked `n` (against `MAX_RANK` or the bytes left) before calling.
fn list<'a, T, C: FromIterator<T>>(
    r: &mut Reader<'a>,
    n: usize,
    mut item: impl FnMut(&mut Reader<'a>) -> Result<T, DecodeError>,
) -> Result<C, DecodeError> {
    (0..n).map(|_| item(r)).collect()
}

/// An axes list: u64 count (at most `MAX_RANK`), then that many u32s.
fn axes(r: &mut Reader<'_>, what: &str) -> Result<Axes, DecodeError> {
    let n = r.rank_count(what)?;
    list(r, n, |r| r.u32(what))
}

/// A signed list (pad `low`/`high`): u64 count (at most `MAX_RANK`), then that many i64s.
fn offsets<C: FromIterator<i64>>(r: &mut Reader<'_>, what: &str) -> Result<C, DecodeError> {
    let n = r.rank_count(what)?;
    list(r, n, |r| r.i64(what))
}

/// A constant: dtype code, dims list, then the elements' little-endian bytes, row-major. The
/// payload's length is implied by the dims, and is checked against what remains before the
/// elements are copied.
fn tensor(r: &mut Reader<'_>, version: FileVersion) -> Result<Tensor, DecodeError> {
    let dtype = dtype(r, version)?;
    let dims_at = r.pos();
    let dims = dims(r, "constant dims")?;
    let payload_at = r.pos();
    let bytes = accy_ir::element_count(&dims)
        .and_then(|n| n.checked_mul(dtype.size_bytes()))
        .and_then(|b| usize::try_from(b).ok())
        .filter(|&b| b <= r.remaining())
        .ok_or_else(|| {
            invalid(
                dims_at,
                format!(
                    "constant of type {} needs more payload bytes than the {} left in the {}",
                    Type {
                        dtype,
                        dims: dims.clone()
                    },
                    r.remaining(),
                    r.region()
                ),
            )
        })?;
    let raw = r.take(bytes, "constant payload")?;
    if dtype == DType::Bool {
        if let Some(bad) = raw.iter().position(|&b| b > 1) {
            return Err(invalid(
                payload_at + bad,
                format!("bool element {bad} is {:#04x}; it must be 0 or 1", raw[bad]),
            ));
        }
    }
    let data = TensorData::from_le_bytes(dtype, raw)
        .ok_or_else(|| invalid(payload_at, format!("malformed {dtype} constant payload")))?;
    Tensor::new(&dims, data).map_err(|e| invalid(dims_at, e.to_string()))
}
