//! The recursive-descent parser: program structure, names, types and the generic
//! `operands, name=value` argument list. Turning a mnemonic and its arguments into an
//! [`crate::Op`] is `ops.rs`'s job.

use std::collections::HashMap;

use super::lex::{Kind, Lexer, Token};
use super::literal::{read_int, Literal};
use super::ops::{self, Args, Attr, AttrValue, Head};
use super::{fail, Fail, Pos, SourceMap};
use crate::{
    BinaryOp, CompareOp, DType, Dims, Instruction, Output, Param, ParamKind, Program, ReduceOp,
    Type, UnaryOp, ValueId, MAX_RANK,
};

/// Parses a whole program, and notes where each of its items begins.
pub(super) fn program(text: &str) -> Result<(Program, SourceMap), Fail> {
    let mut parser = Parser {
        lexer: Lexer::new(text),
        peeked: None,
        names: HashMap::new(),
        program: Program::default(),
        map: SourceMap::default(),
    };
    parser.program()?;
    Ok((parser.program, parser.map))
}

/// Parses one literal that must make up all of `text`, as a tensor of type `ty`.
pub(super) fn literal_tensor(text: &str, ty: &Type) -> Result<crate::Tensor, Fail> {
    let mut parser = Parser {
        lexer: Lexer::new(text),
        peeked: None,
        names: HashMap::new(),
        program: Program::default(),
        map: SourceMap::default(),
    };
    let literal = parser.literal(0)?;
    let tok = parser.next()?;
    if tok.kind != Kind::Eof {
        return fail(
            tok.pos,
            format!("unexpected {} after the literal", tok.kind),
        );
    }
    super::literal::tensor(&literal, ty)
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    /// The lookahead token, lexed only when the parser asks for it.
    peeked: Option<Token>,
    /// Value names (without `%`) and the ids they were given, in definition order.
    names: HashMap<String, ValueId>,
    program: Program,
    /// Where each parameter, instruction and output parsed so far begins.
    map: SourceMap,
}

impl Parser<'_> {
    fn peek(&mut self) -> Result<&Token, Fail> {
        let tok = match self.peeked.take() {
            Some(tok) => tok,
            None => self.lexer.next_token()?,
        };
        Ok(self.peeked.insert(tok))
    }

    fn next(&mut self) -> Result<Token, Fail> {
        match self.peeked.take() {
            Some(tok) => Ok(tok),
            None => self.lexer.next_token(),
        }
    }

    /// Consumes the next token if it is `kind`.
    fn eat(&mut self, kind: &Kind) -> Result<bool, Fail> {
        let found = self.peek()?.kind == *kind;
        if found {
            self.next()?;
        }
        Ok(found)
    }

    /// Consumes a token of `kind`, or fails naming `what` was expected.
    fn expect(&mut self, kind: &Kind, what: &str) -> Result<Pos, Fail> {
        let tok = self.next()?;
        if tok.kind == *kind {
            Ok(tok.pos)
        } else {
            fail(tok.pos, format!("expected {what}, found {}", tok.kind))
        }
    }

    fn expect_word(&mut self, what: &str) -> Result<(String, Pos), Fail> {
        let tok = self.next()?;
        match tok.kind {
            Kind::Word(word) => Ok((word, tok.pos)),
            other => fail(tok.pos, format!("expected {what}, found {other}")),
        }
    }

    fn program(&mut self) -> Result<(), Fail> {
        let (word, pos) = self.expect_word("`program`")?;
        if word != "program" {
            return fail(pos, format!("expected `program`, found `{word}`"));
        }
        self.expect(&Kind::LBrace, "`{` after `program`")?;
        loop {
            let tok = self.peek()?;
            match &tok.kind {
                Kind::RBrace => break,
                Kind::Value(_) => self.definition()?,
                Kind::Word(w) if w == "output" => self.output()?,
                other => {
                    return fail(
                        tok.pos,
                        format!("expected `%name = …`, `output` or `}}`, found {other}"),
                    )
                }
            }
        }
        self.next()?;
        let tok = self.next()?;
        if tok.kind != Kind::Eof {
            return fail(
                tok.pos,
                format!("unexpected {} after the closing `}}`", tok.kind),
            );
        }
        Ok(())
    }

    /// `%name = input|weight "name" : type` or `%name = op … : type`.
    fn definition(&mut self) -> Result<(), Fail> {
        let tok = self.next()?;
        let Kind::Value(name) = tok.kind else {
            return fail(tok.pos, format!("expected `%name`, found {}", tok.kind));
        };
        if self.names.contains_key(&name) {
            return fail(tok.pos, format!("value `%{name}` is already defined"));
        }
        if !self.program.outputs.is_empty() {
            return fail(tok.pos, "definitions must come before the `output` lines");
        }
        let Ok(id) = u32::try_from(self.program.value_count()) else {
            return fail(tok.pos, "too many values for 32-bit ids");
        };
        self.expect(&Kind::Equals, "`=` after the value name")?;
        let (word, pos) = self.expect_word("an op, `input` or `weight`")?;
        let kind = match word.as_str() {
            "input" => Some(ParamKind::Input),
            "weight" => Some(ParamKind::Weight),
            _ => None,
        };
        if let Some(kind) = kind {
            if !self.program.instructions.is_empty() {
                return fail(pos, "parameters must come before instructions");
            }
            let param = self.param(kind)?;
            self.program.params.push(param);
            self.map.params.push(tok.pos.into());
        } else {
            let instruction = self.instruction(&word, pos)?;
            self.program.instructions.push(instruction);
            self.map.instructions.push(tok.pos.into());
        }
        self.names.insert(name, ValueId(id));
        Ok(())
    }

    /// The rest of a parameter after `input` or `weight`: `"name" : type`.
    fn param(&mut self, kind: ParamKind) -> Result<Param, Fail> {
        let tok = self.next()?;
        let Kind::Str(name) = tok.kind else {
            return fail(
                tok.pos,
                format!(
                    "expected the parameter's name in quotes, found {}",
                    tok.kind
                ),
            );
        };
        self.expect(&Kind::Colon, "`:` and the parameter's type")?;
        let ty = self.ty()?;
        Ok(Param { kind, name, ty })
    }

    /// `output %v` or `output %v donates N`.
    fn output(&mut self) -> Result<(), Fail> {
        let start = self.next()?.pos;
        let value = self.value_ref()?;
        let donates = match &self.peek()?.kind {
            Kind::Word(w) if w == "donates" => {
                self.next()?;
                let (word, pos) = self.expect_word("an input number after `donates`")?;
                Some(int(&word, pos, "input number")?)
            }
            _ => None,
        };
        self.program.outputs.push(Output { value, donates });
        self.map.outputs.push(start.into());
        Ok(())
    }

    /// A use of a value: `%name`, which must already be defined.
    fn value_ref(&mut self) -> Result<ValueId, Fail> {
        let tok = self.next()?;
        match tok.kind {
            Kind::Value(name) => self.resolve(&name, tok.pos),
            other => fail(tok.pos, format!("expected a value `%name`, found {other}")),
        }
    }

    fn resolve(&self, name: &str, pos: Pos) -> Result<ValueId, Fail> {
        match self.names.get(name) {
            Some(&id) => Ok(id),
            None => fail(pos, format!("undefined value `%{name}`")),
        }
    }

    /// `dtype[d0,d1,…]` with at most [`MAX_RANK`] dims.
    fn ty(&mut self) -> Result<Type, Fail> {
        let (word, pos) = self.expect_word("a type such as `f32[2,3]`")?;
        let Some(dtype) = DType::from_name(&word) else {
            return fail(pos, format!("unknown dtype `{word}`"));
        };
        let words = self.int_list("dim")?;
        let mut dims = Dims::new();
        for (word, pos) in words {
            dims.push(int(&word, pos, "dim")?);
        }
        Ok(Type { dtype, dims })
    }

    /// `[w, …]`: up to [`MAX_RANK`] words, each meant as one entry per axis.
    fn int_list(&mut self, what: &str) -> Result<Vec<(String, Pos)>, Fail> {
        self.expect(&Kind::LBracket, "`[`")?;
        let mut entries = Vec::new();
        if self.eat(&Kind::RBracket)? {
            return Ok(entries);
        }
        loop {
            let (word, pos) = self.expect_word(&format!("a {what}"))?;
            if entries.len() == MAX_RANK {
                return fail(
                    pos,
                    format!("more than {MAX_RANK} entries (the maximum rank)"),
                );
            }
            entries.push((word, pos));
            let tok = self.next()?;
            match tok.kind {
                Kind::Comma => {}
                Kind::RBracket => return Ok(entries),
                other => return fail(tok.pos, format!("expected `,` or `]`, found {other}")),
            }
        }
    }

    /// An instruction after `%name =`, from its mnemonic `word` (at `pos`) to its type.
    fn instruction(&mut self, word: &str, pos: Pos) -> Result<Instruction, Fail> {
        let head = if let Some(op) = UnaryOp::from_name(word) {
            Head::Unary(op)
        } else if let Some(op) = BinaryOp::from_name(word) {
            Head::Binary(op)
        } else {
            match word {
                "compare" => {
                    let (w, p) = self.expect_word("a comparison (eq, ne, lt, le, gt, ge)")?;
                    match CompareOp::from_name(&w) {
                        Some(op) => Head::Compare(op),
                        None => return fail(p, format!("unknown comparison `{w}`")),
                    }
                }
                "reduce" => {
                    let (w, p) = self.expect_word("a reduction (sum, prod, max, min)")?;
                    match ReduceOp::from_name(&w) {
                        Some(op) => Head::Reduce(op),
                        None => return fail(p, format!("unknown reduction `{w}`")),
                    }
                }
                "constant" => Head::Constant(self.literal(0)?),
                _ => match Head::from_name(word) {
                    Some(head) => head,
                    None => return fail(pos, format!("unknown op `{word}`")),
                },
            }
        };
        let args = self.args()?;
        self.expect(&Kind::Colon, "`,` or `:` and the result type")?;
        let ty = self.ty()?;
        let op = ops::build(head, pos, args, &ty)?;
        Ok(Instruction { op, ty })
    }

    /// A constant's literal; `depth` counts the enclosing `[`s.
    fn literal(&mut self, depth: usize) -> Result<Literal, Fail> {
        let tok = self.next()?;
        match tok.kind {
            Kind::Word(word) => Ok(Literal::Scalar(word, tok.pos)),
            Kind::LBracket if depth == MAX_RANK => fail(
                tok.pos,
                format!("literal nested deeper than the maximum rank {MAX_RANK}"),
            ),
            Kind::LBracket => {
                let mut items = Vec::new();
                if self.eat(&Kind::RBracket)? {
                    return Ok(Literal::List(items, tok.pos));
                }
                loop {
                    items.push(self.literal(depth + 1)?);
                    let sep = self.next()?;
                    match sep.kind {
                        Kind::Comma => {}
                        Kind::RBracket => return Ok(Literal::List(items, tok.pos)),
                        other => {
                            return fail(sep.pos, format!("expected `,` or `]`, found {other}"))
                        }
                    }
                }
            }
            other => fail(
                tok.pos,
                format!("expected a literal value or `[`, found {other}"),
            ),
        }
    }

    /// The comma-separated operands and then attributes of an instruction, up to its `:`.
    fn args(&mut self) -> Result<Args, Fail> {
        let mut args = Args::default();
        if self.peek()?.kind == Kind::Colon {
            return Ok(args);
        }
        loop {
            let tok = self.next()?;
            match tok.kind {
                Kind::Value(name) => {
                    if !args.attrs.is_empty() {
                        return fail(tok.pos, "operands must come before attributes");
                    }
                    args.operands.push(self.resolve(&name, tok.pos)?);
                }
                Kind::Word(name) => {
                    self.expect(&Kind::Equals, "`=` after the attribute name")?;
                    let value = self.attr_value()?;
                    args.attrs.push(Attr {
                        name,
                        pos: tok.pos,
                        value,
                    });
                }
                other => {
                    return fail(
                        tok.pos,
                        format!(
                        "expected an operand `%name` or an attribute `name=value`, found {other}"
                    ),
                    )
                }
            }
            if !self.eat(&Kind::Comma)? {
                return Ok(args);
            }
        }
    }

    /// An attribute value: a word (number or dtype) or a list `[…]` of words.
    fn attr_value(&mut self) -> Result<AttrValue, Fail> {
        let tok = self.peek()?;
        let pos = tok.pos;
        match &tok.kind {
            Kind::LBracket => Ok(AttrValue::List(self.int_list("list entry")?, pos)),
            Kind::Word(_) => {
                let (word, pos) = self.expect_word("an attribute value")?;
                Ok(AttrValue::Word(word, pos))
            }
            other => fail(
                pos,
                format!(
                    "expected an attribute value (a number, dtype or `[…]` list), found {other}"
                ),
            ),
        }
    }
}

/// `word` read as an integer of type `T`; `what` names it in the error.
pub(super) fn int<T: std::str::FromStr>(word: &str, pos: Pos, what: &str) -> Result<T, Fail> {
    match read_int(word) {
        Some(v) => Ok(v),
        None => fail(
            pos,
            format!(
                "bad {what} `{word}`: expected a decimal {} integer",
                std::any::type_name::<T>()
            ),
        ),
    }
}
