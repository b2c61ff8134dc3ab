//! Turning a parsed mnemonic, its operands and `name=value` attributes into an [`Op`].
//!
//! Each op's operand count and attribute names live in [`Head::attributes`] and in
//! [`build`]; `print.rs` writes the same names in the same order.

use std::str::FromStr;

use smallvec::SmallVec;

use super::literal::{self, Literal};
use super::parse::int;
use super::{fail, Fail, Pos};
use crate::{BinaryOp, CompareOp, DType, Op, ReduceOp, Type, UnaryOp, ValueId};

/// What the words before an instruction's operands said: the op, with its function or
/// literal where the mnemonic carries one.
#[derive(Debug)]
pub(super) enum Head {
    Unary(UnaryOp),
    Binary(BinaryOp),
    Compare(CompareOp),
    Reduce(ReduceOp),
    Constant(Literal),
    Select,
    Convert,
    Iota,
    Broadcast,
    Reshape,
    Transpose,
    Slice,
    Concat,
    Pad,
    Reverse,
    Dot,
    Gather,
}

impl Head {
    /// The head of the ops whose mnemonic is the whole head (not unary or binary functions,
    /// nor `compare`, `reduce` and `constant`, which carry more words).
    pub fn from_name(word: &str) -> Option<Head> {
        Some(match word {
            "select" => Head::Select,
            "convert" => Head::Convert,
            "iota" => Head::Iota,
            "broadcast" => Head::Broadcast,
            "reshape" => Head::Reshape,
            "transpose" => Head::Transpose,
            "slice" => Head::Slice,
            "concat" => Head::Concat,
            "pad" => Head::Pad,
            "reverse" => Head::Reverse,
            "dot" => Head::Dot,
            "gather" => Head::Gather,
            _ => return None,
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Head::Unary(op) => op.name(),
            Head::Binary(op) => op.name(),
            Head::Compare(_) => "compare",
            Head::Reduce(_) => "reduce",
            Head::Constant(_) => "constant",
            Head::Select => "select",
            Head::Convert => "convert",
            Head::Iota => "iota",
            Head::Broadcast => "broadcast",
            Head::Reshape => "reshape",
            Head::Transpose => "transpose",
            Head::Slice => "slice",
            Head::Concat => "concat",
            Head::Pad => "pad",
            Head::Reverse => "reverse",
            Head::Dot => "dot",
            Head::Gather => "gather",
        }
    }

    /// The attribute names the op takes, in printed order; each is required.
    fn attributes(&self) -> &'static [&'static str] {
        match self {
            Head::Convert => &["to"],
            Head::Iota | Head::Concat | Head::Gather => &["axis"],
            Head::Broadcast => &["dims", "axes"],
            Head::Reshape => &["dims"],
            Head::Transpose => &["perm"],
            Head::Slice => &["start", "limit", "stride"],
            Head::Pad => &["low", "high", "interior"],
            Head::Reverse | Head::Reduce(_) => &["axes"],
            Head::Dot => &["lhs_batch", "rhs_batch", "lhs_contract", "rhs_contract"],
            Head::Unary(_)
            | Head::Binary(_)
            | Head::Compare(_)
            | Head::Constant(_)
            | Head::Select => &[],
        }
    }
}

/// An instruction's arguments as written: operands first, then attributes.
#[derive(Debug, Default)]
pub(super) struct Args {
    pub operands: Vec<ValueId>,
    pub attrs: Vec<Attr>,
}

/// One `name=value` attribute.
#[derive(Debug)]
pub(super) struct Attr {
    pub name: String,
    pub pos: Pos,
    pub value: AttrValue,
}

/// An attribute's value before it is read as the type its op needs.
#[derive(Debug)]
pub(super) enum AttrValue {
    /// A single word (a number or a dtype) and its position.
    Word(String, Pos),
    /// `[w, …]`: the entries and the position of the `[`.
    List(Vec<(String, Pos)>, Pos),
}

/// The op `head` (whose mnemonic is at `pos`) applied to `args`, declared to give `ty`.
///
/// `ty` supplies what the text does not repeat: an `iota`'s result type and a `constant`'s
/// dims and dtype.
pub(super) fn build(head: Head, pos: Pos, args: Args, ty: &Type) -> Result<Op, Fail> {
    let op = head.name();
    let allowed = head.attributes();
    for (i, attr) in args.attrs.iter().enumerate() {
        if !allowed.contains(&attr.name.as_str()) {
            let expected = match allowed {
                [] => "none".to_owned(),
                names => names.join(", "),
            };
            return fail(
                attr.pos,
                format!(
                    "unknown attribute `{}` for `{op}` (expected: {expected})",
                    attr.name
                ),
            );
        }
        if args.attrs[..i].iter().any(|a| a.name == attr.name) {
            return fail(attr.pos, format!("attribute `{}` given twice", attr.name));
        }
    }
    let a = Reader {
        args: &args,
        op,
        pos,
    };
    Ok(match head {
        Head::Unary(f) => {
            let [x] = a.operands()?;
            Op::Unary { op: f, x }
        }
        Head::Binary(f) => {
            let [lhs, rhs] = a.operands()?;
            Op::Binary { op: f, lhs, rhs }
        }
        Head::Compare(f) => {
            let [lhs, rhs] = a.operands()?;
            Op::Compare { op: f, lhs, rhs }
        }
        Head::Select => {
            let [cond, on_true, on_false] = a.operands()?;
            Op::Select {
                cond,
                on_true,
                on_false,
            }
        }
        Head::Convert => {
            let [x] = a.operands()?;
            Op::Convert {
                x,
                to: a.dtype("to")?,
            }
        }
        Head::Constant(lit) => {
            let [] = a.operands()?;
            Op::Constant(literal::tensor(&lit, ty)?)
        }
        Head::Iota => {
            let [] = a.operands()?;
            Op::Iota {
                ty: ty.clone(),
                axis: a.scalar("axis")?,
            }
        }
        Head::Broadcast => {
            let [x] = a.operands()?;
            Op::Broadcast {
                x,
                dims: a.list("dims")?,
                axes: a.list("axes")?,
            }
        }
        Head::Reshape => {
            let [x] = a.operands()?;
            Op::Reshape {
                x,
                dims: a.list("dims")?,
            }
        }
        Head::Transpose => {
            let [x] = a.operands()?;
            Op::Transpose {
                x,
                perm: a.list("perm")?,
            }
        }
        Head::Slice => {
            let [x] = a.operands()?;
            Op::Slice {
                x,
                start: a.list("start")?,
                limit: a.list("limit")?,
                stride: a.list("stride")?,
            }
        }
        Head::Concat => {
            if args.operands.is_empty() {
                return fail(pos, "`concat` takes at least 1 operand, found 0");
            }
            Op::Concat {
                xs: SmallVec::from_slice(&args.operands),
                axis: a.scalar("axis")?,
            }
        }
        Head::Pad => {
            let [x, value] = a.operands()?;
            Op::Pad {
                x,
                value,
                low: a.list("low")?,
                high: a.list("high")?,
                interior: a.list("interior")?,
            }
        }
        Head::Reverse => {
            let [x] = a.operands()?;
            Op::Reverse {
                x,
                axes: a.list("axes")?,
            }
        }
        Head::Reduce(f) => {
            let [x] = a.operands()?;
            Op::Reduce {
                op: f,
                x,
                axes: a.list("axes")?,
            }
        }
        Head::Dot => {
            let [lhs, rhs] = a.operands()?;
            Op::Dot {
                lhs,
                rhs,
                lhs_batch: a.list("lhs_batch")?,
                rhs_batch: a.list("rhs_batch")?,
                lhs_contract: a.list("lhs_contract")?,
                rhs_contract: a.list("rhs_contract")?,
            }
        }
        Head::Gather => {
            let [x, indices] = a.operands()?;
            Op::Gather {
                x,
                indices,
                axis: a.scalar("axis")?,
            }
        }
    })
}

/// Reads one op's arguments, reporting missing pieces at the mnemonic.
struct Reader<'a> {
    args: &'a Args,
    op: &'static str,
    pos: Pos,
}

impl Reader<'_> {
    fn operands<const N: usize>(&self) -> Result<[ValueId; N], Fail> {
        match <[ValueId; N]>::try_from(self.args.operands.as_slice()) {
            Ok(operands) => Ok(operands),
            Err(_) => fail(
                self.pos,
                format!(
                    "`{}` takes {N} operand{}, found {}",
                    self.op,
                    if N == 1 { "" } else { "s" },
                    self.args.operands.len()
                ),
            ),
        }
    }

    fn attr(&self, name: &str) -> Result<&AttrValue, Fail> {
        match self.args.attrs.iter().find(|a| a.name == name) {
            Some(attr) => Ok(&attr.value),
            None => fail(self.pos, format!("`{}` needs attribute `{name}`", self.op)),
        }
    }

    fn scalar<T: FromStr>(&self, name: &str) -> Result<T, Fail> {
        match self.attr(name)? {
            AttrValue::Word(word, pos) => int(word, *pos, name),
            AttrValue::List(_, pos) => fail(
                *pos,
                format!("attribute `{name}` takes a single number, not a list"),
            ),
        }
    }

    fn list<T: FromStr>(&self, name: &str) -> Result<SmallVec<[T; 4]>, Fail> {
        match self.attr(name)? {
            AttrValue::List(entries, _) => entries
                .iter()
                .map(|(word, pos)| int(word, *pos, &format!("`{name}` entry")))
                .collect(),
            AttrValue::Word(_, pos) => fail(
                *pos,
                format!("attribute `{name}` takes a list such as `[0,1]`"),
            ),
        }
    }

    fn dtype(&self, name: &str) -> Result<DType, Fail> {
        match self.attr(name)? {
            AttrValue::Word(word, pos) => match DType::from_name(word) {
                Some(dtype) => Ok(dtype),
                None => fail(*pos, format!("unknown dtype `{word}`")),
            },
            AttrValue::List(_, pos) => fail(
                *pos,
                format!("attribute `{name}` takes a dtype, not a list"),
            ),
        }
    }
}
