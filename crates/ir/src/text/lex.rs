//! Splits source text into tokens, each tagged with the position where it starts.

use std::fmt;
use std::str::Chars;

use super::{fail, Fail, Pos};

/// What a token is. Words cover keywords, mnemonics, dtypes, attribute names and numbers
/// alike; the parser decides what a word means from where it appears.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Equals,
    Colon,
    /// `%name`, holding `name`.
    Value(String),
    /// `"text"`, holding `text`.
    Str(String),
    /// A run of word characters, e.g. `add`, `f32`, `-1.5e3`, `nan:0x7fc00001`.
    Word(String),
    Eof,
}

impl fmt::Display for Kind {
    /// Names the token for "found …" in error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::LBrace => f.write_str("`{`"),
            Kind::RBrace => f.write_str("`}`"),
            Kind::LBracket => f.write_str("`[`"),
            Kind::RBracket => f.write_str("`]`"),
            Kind::Comma => f.write_str("`,`"),
            Kind::Equals => f.write_str("`=`"),
            Kind::Colon => f.write_str("`:`"),
            Kind::Value(name) => write!(f, "value `%{name}`"),
            Kind::Str(text) => write!(f, "string \"{text}\""),
            Kind::Word(word) => write!(f, "`{word}`"),
            Kind::Eof => f.write_str("end of input"),
        }
    }
}

/// One token and where it starts.
#[derive(Clone, Debug)]
pub(super) struct Token {
    pub kind: Kind,
    pub pos: Pos,
}

/// Characters of a `%name` after the `%`.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

/// Characters of a word. Signs and dots are included so that `-1.5e-3` and `-inf` are single
/// words.
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-')
}

/// Produces tokens on demand, so an error is reported at the first bad token the parser
/// reaches rather than the first bad character of the file.
#[derive(Debug)]
pub(super) struct Lexer<'a> {
    rest: Chars<'a>,
    /// Position of the next char of `rest`.
    pos: Pos,
    /// Position just past the last token, where "end of input" is reported: pointing after
    /// the last real token is more useful than pointing at trailing blank lines.
    last_end: Pos,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Lexer<'a> {
        let start = Pos { line: 1, column: 1 };
        Lexer {
            rest: text.chars(),
            pos: start,
            last_end: start,
        }
    }

    fn peek_char(&self) -> Option<char> {
        self.rest.clone().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.rest.next()?;
        if c == '\n' {
            self.pos.line += 1;
            self.pos.column = 1;
        } else {
            self.pos.column += 1;
        }
        Some(c)
    }

    fn take_while(&mut self, into: &mut String, keep: fn(char) -> bool) {
        while let Some(c) = self.peek_char().filter(|&c| keep(c)) {
            into.push(c);
            self.bump();
        }
    }

    fn skip_blanks_and_comments(&mut self) {
        while let Some(c) = self.peek_char() {
            match c {
                ' ' | '\t' | '\r' | '\n' => {
                    self.bump();
                }
                '#' => {
                    while self.peek_char().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                }
                _ => break,
            }
        }
    }

    /// The next token, or an error for a malformed one (bad character, unterminated string).
    pub fn next_token(&mut self) -> Result<Token, Fail> {
        self.skip_blanks_and_comments();
        let start = self.pos;
        let Some(c) = self.bump() else {
            return Ok(Token {
                kind: Kind::Eof,
                pos: self.last_end,
            });
        };
        let kind = match c {
            '{' => Kind::LBrace,
            '}' => Kind::RBrace,
            '[' => Kind::LBracket,
            ']' => Kind::RBracket,
            ',' => Kind::Comma,
            '=' => Kind::Equals,
            ':' => Kind::Colon,
            '%' => {
                let mut name = String::new();
                self.take_while(&mut name, is_name_char);
                if name.is_empty() {
                    return fail(start, "expected a value name after `%`");
                }
                Kind::Value(name)
            }
            '"' => Kind::Str(self.string(start)?),
            c if is_word_char(c) => {
                let mut word = String::from(c);
                self.take_while(&mut word, is_word_char);
                // `nan:0x…` spells a NaN by its bits; the colon joins the word only when the
                // hex digits follow at once, so `nan : f32[]` still reads as a type annotation.
                let mut after = self.rest.clone();
                if word == "nan"
                    && after.next() == Some(':')
                    && after.next() == Some('0')
                    && matches!(after.next(), Some('x' | 'X'))
                {
                    word.push(':');
                    self.bump();
                    self.take_while(&mut word, is_word_char);
                }
                Kind::Word(word)
            }
            c => {
                return fail(
                    start,
                    format!("unexpected character `{}`", c.escape_debug()),
                )
            }
        };
        self.last_end = self.pos;
        Ok(Token { kind, pos: start })
    }

    /// The contents of a string whose opening quote (at `start`) was just consumed.
    fn string(&mut self, start: Pos) -> Result<String, Fail> {
        let mut text = String::new();
        loop {
            let here = self.pos;
            match self.bump() {
                None | Some('\n') => return fail(start, "unterminated string"),
                Some('"') => return Ok(text),
                Some('\\') => return fail(here, "escapes are not supported in strings"),
                Some(c) if c.is_control() => {
                    return fail(
                        here,
                        format!("control character `{}` in string", c.escape_debug()),
                    )
                }
                Some(c) => text.push(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Kind> {
        let mut lexer = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let Ok(tok) = lexer.next_token() else {
                panic!("lex error in {text:?}")
            };
            if tok.kind == Kind::Eof {
                return out;
            }
            out.push(tok.kind);
        }
    }

    fn word(w: &str) -> Kind {
        Kind::Word(w.into())
    }

    #[test]
    fn splits_words_numbers_and_punctuation() {
        assert_eq!(
            kinds("%h1 = dot %0,%x.y: f32[2] # note\n-1.5e-3 nan:0x7fc00001 nan : -inf"),
            vec![
                Kind::Value("h1".into()),
                Kind::Equals,
                word("dot"),
                Kind::Value("0".into()),
                Kind::Comma,
                Kind::Value("x.y".into()),
                Kind::Colon,
                word("f32"),
                Kind::LBracket,
                word("2"),
                Kind::RBracket,
                word("-1.5e-3"),
                word("nan:0x7fc00001"),
                word("nan"),
                Kind::Colon,
                word("-inf"),
            ]
        );
    }

    #[test]
    fn positions_count_chars_and_lines() {
        let mut lexer = Lexer::new("é \"ü\"\n  {");
        let first = lexer.next_token();
        assert!(first.is_err_and(|e| e.pos == Pos { line: 1, column: 1 }));
        let mut lexer = Lexer::new("\"ü\" x\n  {");
        let positions: Vec<Pos> = (0..4)
            .filter_map(|_| lexer.next_token().ok())
            .map(|t| t.pos)
            .collect();
        assert_eq!(
            positions,
            vec![
                Pos { line: 1, column: 1 },
                Pos { line: 1, column: 5 },
                Pos { line: 2, column: 3 },
                Pos { line: 2, column: 4 },
            ]
        );
    }
}
