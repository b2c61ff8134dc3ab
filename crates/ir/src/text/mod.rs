//! The text format: a human-readable spelling of a [`Program`] that prints and parses
//! losslessly, for tests, examples, the CLI and error messages.
//!
//! ```text
//! program {
//!   %0 = input "x" : f32[2,3]
//!   %1 = weight "w" : f32[3]
//!   %2 = broadcast %1, dims=[2,3], axes=[1] : f32[2,3]
//!   %3 = add %0, %2 : f32[2,3]
//!   output %3
//! }
//! ```
//!
//! The grammar, every op's spelling and the literal syntax are specified in
//! `docs/text-format.md`. Guarantees:
//! - `parse(&print(p)) == Ok(p)` for every program the verifier accepts, bit for bit
//!   (float constants included, NaN payloads too), and for every program `parse` returns.
//! - [`parse`] checks syntax, names and literal shapes only; it never runs the verifier, so a
//!   parsed program may still be ill-typed. It never panics, and never allocates in proportion
//!   to a number written in the input (only to the input's length).
//! - The single-line printers ([`param_text`], [`instruction_text`], [`output_text`]) never
//!   panic, even for invalid programs, so the verifier can quote any offending line.

use std::fmt;

use crate::{Location, Program};

mod lex;
mod literal;
mod ops;
mod parse;
mod print;

#[cfg(test)]
mod tests;

/// The text of `program`: a `program { … }` block with one item per line (parameters,
/// instructions, outputs), values named `%N` by id, ending in a newline.
pub fn print(program: &Program) -> String {
    print::program(program)
}

/// The program spelled by `text`, or the first syntax error found. The result is not verified:
/// call [`crate::verify`] before trusting it.
pub fn parse(text: &str) -> Result<Program, ParseError> {
    parse_with_source_map(text).map(|(program, _)| program)
}

/// As [`parse`], also returning where each item of the program begins in `text`, so that
/// errors found later (the verifier's) can point at their line and column.
pub fn parse_with_source_map(text: &str) -> Result<(Program, SourceMap), ParseError> {
    parse::program(text).map_err(|fail| ParseError::new(text, fail))
}

/// Where the items of a parsed program begin in its text: the value name (`%x`) that starts
/// each parameter and instruction, and the `output` keyword of each output.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    params: Vec<LineColumn>,
    instructions: Vec<LineColumn>,
    outputs: Vec<LineColumn>,
}

/// A 1-based line and 1-based column counted in chars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineColumn {
    /// The line.
    pub line: usize,
    /// The column.
    pub column: usize,
}

impl From<Pos> for LineColumn {
    fn from(pos: Pos) -> LineColumn {
        LineColumn {
            line: pos.line,
            column: pos.column,
        }
    }
}

impl SourceMap {
    /// Where the item a verifier error is about begins; `None` for
    /// [`Location::Program`] and for items the text did not have.
    pub fn position(&self, location: Location) -> Option<LineColumn> {
        match location {
            Location::Param(i) => self.params.get(i).copied(),
            Location::Instruction(k) => self.instructions.get(k).copied(),
            Location::Output(i) => self.outputs.get(i).copied(),
            Location::Program => None,
        }
    }
}

/// The tensor of type `ty` spelled by `text`, which must hold exactly one literal in the
/// syntax of a `constant` (docs/text-format.md): a bare value for a scalar type (`2.5`,
/// `-inf`, `true`), nested lists matching the dims or one flat row-major list otherwise
/// (`[[1, 2], [3, 4]]` or `[1, 2, 3, 4]` for `i32[2,2]`). For tools that take tensor values
/// on a command line; errors carry the position within `text`.
pub fn parse_literal(text: &str, ty: &crate::Type) -> Result<crate::Tensor, ParseError> {
    parse::literal_tensor(text, ty).map_err(|fail| ParseError::new(text, fail))
}

/// The printed line of parameter `i` (`%0 = input "x" : f32[2]`), without indentation or
/// newline; a placeholder naming `i` if the program has no such parameter.
pub fn param_text(program: &Program, i: usize) -> String {
    print::param(program, i)
}

/// The printed line of instruction `k` (`%3 = add %1, %2 : f32[2]`), without indentation or
/// newline; a placeholder naming `k` if the program has no such instruction. Operands that do
/// not exist and types that do not fit the op are printed as they are.
pub fn instruction_text(program: &Program, k: usize) -> String {
    print::instruction(program, k)
}

/// The printed line of output `i` (`output %3 donates 0`), without indentation or newline; a
/// placeholder naming `i` if the program has no such output.
pub fn output_text(program: &Program, i: usize) -> String {
    print::output(program, i)
}

/// A place in the source: 1-based line and 1-based column counted in chars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pos {
    line: usize,
    column: usize,
}

/// A parse failure before the source line is attached (see [`ParseError::new`]).
#[derive(Debug)]
struct Fail {
    pos: Pos,
    message: String,
}

/// Builds the `Err` of a [`Fail`] at `pos`.
fn fail<T>(pos: Pos, message: impl Into<String>) -> Result<T, Fail> {
    Err(Fail {
        pos,
        message: message.into(),
    })
}

/// Why text could not be parsed, and where.
///
/// Displays as `line:column: message`, then the source line, then a caret under the column, so
/// it can be shown to a user as is:
///
/// ```text
/// 3:8: unknown op `ad`
///   %2 = ad %0, %1 : f32[2]
///        ^
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ParseError {
    /// 1-based line of the offending token (or of the end of input).
    pub line: usize,
    /// 1-based column of the offending token, counted in chars.
    pub column: usize,
    /// What is wrong, naming the token found and, where it helps, what was expected.
    pub message: String,
    /// The full text of line `line`, without its line terminator (empty past the end).
    pub source_line: String,
}

impl ParseError {
    fn new(text: &str, fail: Fail) -> ParseError {
        let source_line = text
            .split('\n')
            .nth(fail.pos.line.saturating_sub(1))
            .unwrap_or("");
        ParseError {
            line: fail.pos.line,
            column: fail.pos.column,
            message: fail.message,
            source_line: source_line
                .strip_suffix('\r')
                .unwrap_or(source_line)
                .to_owned(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}:{}: {}", self.line, self.column, self.message)?;
        writeln!(f, "{}", self.source_line)?;
        // Tabs are kept so the caret lines up however the terminal expands them.
        let pad: String = self
            .source_line
            .chars()
            .take(self.column.saturating_sub(1))
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "{pad}^")
    }
}
