//! Elementwise math and logic: unary functions, binary arithmetic with broadcasting, variadic
//! `Max`/`Min`/`Sum`/`Mean`, comparisons, `Where`, `Cast`, `CastLike`.

use accy_ir::{BinaryOp, CompareOp, DType, UnaryOp};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeResult};
use crate::node::Node;
use crate::tensor::dtype;

/// `Abs`, `Neg`, `Sqrt`, `Exp`, `Log`, `Tanh`, `Sigmoid`, `Erf`, `Sin`, `Cos`, `Tan`, `Floor`,
/// `Ceil`, `Round`, `Not`, `BitwiseNot`, `Reciprocal`, `Sign`, `IsNaN`, `IsInf`.
pub(super) fn unary(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let attrs: &[&str] = if node.op() == "IsInf" {
        &["detect_negative", "detect_positive"]
    } else {
        &[]
    };
    node.check_attrs(attrs)?;
    let x = node.input(0)?;
    let op = match node.op() {
        "Abs" => UnaryOp::Abs,
        "Neg" => UnaryOp::Neg,
        "Sqrt" => UnaryOp::Sqrt,
        "Exp" => UnaryOp::Exp,
        "Log" => UnaryOp::Log,
        "Tanh" => UnaryOp::Tanh,
        "Sigmoid" => UnaryOp::Sigmoid,
        "Erf" => UnaryOp::Erf,
        "Sin" => UnaryOp::Sin,
        "Cos" => UnaryOp::Cos,
        "Floor" => UnaryOp::Floor,
        "Ceil" => UnaryOp::Ceil,
        "Round" => UnaryOp::Round,
        "Not" | "BitwiseNot" => UnaryOp::Not,
        "Tan" => {
            node.expect_float(em, x)?;
            let s = em.unary(UnaryOp::Sin, x)?;
            let c = em.unary(UnaryOp::Cos, x)?;
            return Ok(vec![em.binary(BinaryOp::Div, s, c)?]);
        }
        "Reciprocal" => {
            node.expect_float(em, x)?;
            let one = em.scalar(em.dtype(x), 1.0);
            return Ok(vec![em.binary(BinaryOp::Div, one, x)?]);
        }
        "Sign" => return Ok(vec![sign(em, x)?]),
        "IsNaN" => {
            node.expect_float(em, x)?;
            return Ok(vec![em.compare(CompareOp::Ne, x, x)?]);
        }
        "IsInf" => {
            let d = node.expect_float(em, x)?;
            let (neg, pos) = (
                node.int("detect_negative", 1)?,
                node.int("detect_positive", 1)?,
            );
            let inf = em.scalar(d, f64::INFINITY);
            let minus_inf = em.scalar(d, f64::NEG_INFINITY);
            let is_pos = em.compare(CompareOp::Eq, x, inf)?;
            let is_neg = em.compare(CompareOp::Eq, x, minus_inf)?;
            let out = match (neg != 0, pos != 0) {
                (true, true) => em.binary(BinaryOp::Or, is_pos, is_neg)?,
                (false, true) => is_pos,
                (true, false) => is_neg,
                (false, false) => em.full(DType::Bool, &em.dims(x), 0.0)?,
            };
            return Ok(vec![out]);
        }
        other => return unsupported(format!("`{other}` has no importer")),
    };
    Ok(vec![em.unary(op, x)?])
}

/// -1, 0 or 1 by the sign of `x` (NaN stays NaN, as NumPy's `sign`).
fn sign(em: &mut Emitter, x: Val) -> NodeResult<Val> {
    let d = em.dtype(x);
    let zero = em.scalar(d, 0.0);
    let one = em.scalar(d, 1.0);
    let pos = em.compare(CompareOp::Gt, x, zero)?;
    let mut out = em.select(pos, one, zero)?;
    if d != DType::U8 {
        let minus = em.scalar(d, -1.0);
        let neg = em.compare(CompareOp::Lt, x, zero)?;
        out = em.select(neg, minus, out)?;
    }
    if d.is_float() {
        let nan = em.compare(CompareOp::Ne, x, x)?;
        out = em.select(nan, x, out)?;
    }
    Ok(out)
}

/// Two-operand ops with NumPy broadcasting.
pub(super) fn binary(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    let attrs: &[&str] = match node.op() {
        "Mod" => &["fmod"],
        "BitShift" => &["direction"],
        _ => &[],
    };
    node.check_attrs(attrs)?;
    let (a, b) = (node.input(0)?, node.input(1)?);
    let arith = |op| -> NodeResult<BinaryOp> {
        if em.dtype(a) == DType::Bool {
            return invalid(format!("{} needs numeric operands, got bool", node.op()));
        }
        Ok(op)
    };
    let out = match node.op() {
        "Add" => em.binary(arith(BinaryOp::Add)?, a, b)?,
        "Sub" => em.binary(arith(BinaryOp::Sub)?, a, b)?,
        "Mul" => em.binary(arith(BinaryOp::Mul)?, a, b)?,
        "Div" => em.binary(arith(BinaryOp::Div)?, a, b)?,
        "And" | "BitwiseAnd" => em.binary(BinaryOp::And, a, b)?,
        "Or" | "BitwiseOr" => em.binary(BinaryOp::Or, a, b)?,
        "Xor" | "BitwiseXor" => em.binary(BinaryOp::Xor, a, b)?,
        "Equal" => em.compare(CompareOp::Eq, a, b)?,
        "Less" => em.compare(CompareOp::Lt, a, b)?,
        "LessOrEqual" => em.compare(CompareOp::Le, a, b)?,
        "Greater" => em.compare(CompareOp::Gt, a, b)?,
        "GreaterOrEqual" => em.compare(CompareOp::Ge, a, b)?,
        "Pow" => pow(em, a, b)?,
        "Mod" => modulo(em, node, a, b)?,
        "BitShift" => {
            if em.dtype(a) != DType::U8 {
                return invalid("BitShift takes unsigned integers");
            }
            let op = match node.string("direction", "")?.as_str() {
                "LEFT" => BinaryOp::Shl,
                "RIGHT" => BinaryOp::ShrLogical,
                d => return invalid(format!("direction `{d}` must be LEFT or RIGHT")),
            };
            em.binary(op, a, b)?
        }
        other => return unsupported(format!("`{other}` has no importer")),
    };
    Ok(vec![out])
}

/// `Pow(T, T1) -> T`, as NumPy computes it: in the operands' common type (f64 for mixed
/// float/int or mixed widths), then converted to `T`.
fn pow(em: &mut Emitter, a: Val, b: Val) -> NodeResult<Val> {
    let (ta, tb) = (em.dtype(a), em.dtype(b));
    if ta == tb {
        return em.binary(BinaryOp::Pow, a, b);
    }
    let common = if ta.is_integer() && tb.is_integer() {
        DType::I64
    } else {
        DType::F64
    };
    let a2 = em.convert(a, common)?;
    let b2 = em.convert(b, common)?;
    let p = em.binary(BinaryOp::Pow, a2, b2)?;
    em.convert(p, ta)
}

/// `Mod`: with `fmod=1` C's `fmod` (sign of the dividend); with `fmod=0` (integers only)
/// Python's `%` (sign of the divisor).
fn modulo(em: &mut Emitter, node: &Node, a: Val, b: Val) -> NodeResult<Val> {
    let fmod = node.int("fmod", 0)?;
    let d = em.dtype(a);
    let r = em.binary(BinaryOp::Rem, a, b)?;
    if fmod != 0 || d == DType::U8 {
        return Ok(r);
    }
    if d.is_float() {
        return invalid("Mod on floats needs fmod=1");
    }
    // Python's result differs when the remainder is non-zero and its sign differs from the
    // divisor's: then it is r + b.
    let zero = em.scalar(d, 0.0);
    let r_nonzero = em.compare(CompareOp::Ne, r, zero)?;
    let r_neg = em.compare(CompareOp::Lt, r, zero)?;
    let b_neg = em.compare(CompareOp::Lt, b, zero)?;
    let differ = em.binary(BinaryOp::Xor, r_neg, b_neg)?;
    let fix = em.binary(BinaryOp::And, r_nonzero, differ)?;
    let shifted = em.binary(BinaryOp::Add, r, b)?;
    em.select(fix, shifted, r)
}

/// `Max`, `Min`, `Sum`, `Mean` over one or more operands, with broadcasting.
pub(super) fn variadic(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let op = match node.op() {
        "Max" => BinaryOp::Max,
        "Min" => BinaryOp::Min,
        _ => BinaryOp::Add,
    };
    let n = node.input_count();
    if n == 0 {
        return invalid("needs at least one input");
    }
    let mut acc = node.input(0)?;
    for i in 1..n {
        acc = em.binary(op, acc, node.input(i)?)?;
    }
    if node.op() == "Mean" {
        node.expect_float(em, acc)?;
        acc = em.binary_scalar(BinaryOp::Div, acc, n as f64)?;
    }
    Ok(vec![acc])
}

/// `Where(cond, x, y)`.
pub(super) fn where_(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&[])?;
    let (c, x, y) = (node.input(0)?, node.input(1)?, node.input(2)?);
    Ok(vec![em.select(c, x, y)?])
}

/// `Cast(x, to)` and `CastLike(x, like)`. The `saturate` and `round_mode` attributes concern
/// only float8 targets, which accy refuses anyway.
pub(super) fn cast(em: &mut Emitter, node: &Node) -> NodeResult<Vec<Val>> {
    node.check_attrs(&["to", "saturate", "round_mode"])?;
    let x = node.input(0)?;
    let to = if node.op() == "CastLike" {
        em.dtype(node.input(1)?)
    } else {
        let code = node.int("to", 0)?;
        dtype(i32::try_from(code).unwrap_or(0)).or_else(|m| unsupported(format!("`to`: {m}")))?
    };
    Ok(vec![em.convert(x, to)?])
}
