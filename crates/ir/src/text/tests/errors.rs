//! Parse errors (position and message for every kind) and the parser's no-panic,
//! round-trip-whatever-it-accepts contract on arbitrary and mutated text.

use proptest::prelude::*;

use super::parsed;
use crate::text::{parse, print, ParseError};

/// Checks that parsing `text` fails at `line:column` with a message containing `message`;
/// returns a description of the mismatch otherwise.
fn error_mismatch(text: &str, line: usize, column: usize, message: &str) -> Option<String> {
    match parse(text) {
        Ok(p) => Some(format!("parsed {text:?} as {p:?}")),
        Err(e) if (e.line, e.column) == (line, column) && e.message.contains(message) => None,
        Err(e) => Some(format!(
            "{text:?}: wanted {line}:{column}: …{message}…, got\n{e}"
        )),
    }
}

fn check_error(text: &str, line: usize, column: usize, message: &str) {
    if let Some(m) = error_mismatch(text, line, column, message) {
        panic!("{m}");
    }
}

#[test]
fn errors_point_at_the_offending_token() {
    // Each body follows `program {` and `%0 = input "x" : f32[2]`, so it starts on line 3.
    let mut mismatches = Vec::new();
    let mut check = |body: &str, line, column, message: &str| {
        let text = format!("program {{\n  %0 = input \"x\" : f32[2]\n{body}");
        mismatches.extend(error_mismatch(&text, line, column, message));
    };
    check("  %1 = expp %0 : f32[2]\n}", 3, 8, "unknown op `expp`");
    check(
        "  %1 = compare lq %0, %0 : bool[2]\n}",
        3,
        16,
        "unknown comparison `lq`",
    );
    check(
        "  %1 = reduce avg %0, axes=[0] : f32[]\n}",
        3,
        15,
        "unknown reduction `avg`",
    );
    check("  %1 = exp %0 : f16[2]\n}", 3, 17, "unknown dtype `f16`");
    check(
        "  %1 = convert %0, to=f8 : f32[2]\n}",
        3,
        23,
        "unknown dtype `f8`",
    );
    check(
        "  %1 = constant [1.0, 1..5] : f32[2]\n}",
        3,
        23,
        "bad f32 value `1..5`",
    );
    check(
        "  %1 = constant [1, 256] : u8[2]\n}",
        3,
        21,
        "bad u8 value `256`",
    );
    check(
        "  %1 = constant 1.0 : i32[]\n}",
        3,
        17,
        "bad i32 value `1.0`",
    );
    check(
        "  %1 = constant [1e39] : f32[1]\n}",
        3,
        18,
        "bad f32 value `1e39`",
    );
    check("  %1 = exp %0 : f32[2x]\n}", 3, 21, "bad dim `2x`");
    check("  %1 = iota axis=-1 : i32[2]\n}", 3, 18, "bad axis `-1`");
    check("  output %0 donates x\n}", 3, 21, "bad input number `x`");
    check(
        "  %1 = constant [1.0] : f32[2]\n}",
        3,
        17,
        "literal has 1 elements but f32[2] has 2",
    );
    check(
        "  %1 = constant [] : f32[99999999999999]\n}",
        3,
        17,
        "literal has 0 elements but f32[99999999999999] has 99999999999999",
    );
    check(
        "  %1 = constant [] : f32[4294967296,4294967296]\n}",
        3,
        17,
        "has more than 2^64",
    );
    check(
        "  %1 = constant [[1], [2, 3]] : i32[2,2]\n}",
        3,
        18,
        "axis 1 has dim 2 but this list has 1 entries",
    );
    check(
        "  %1 = constant [[1, 2]] : i32[2,1]\n}",
        3,
        17,
        "axis 0 has dim 2 but this list has 1",
    );
    check(
        "  %1 = constant [[1], 2] : i32[2,1]\n}",
        3,
        23,
        "expected a list for axis 1",
    );
    check(
        "  %1 = constant [1, [2]] : i32[2]\n}",
        3,
        21,
        "flat literal cannot contain lists",
    );
    check("  %1 = constant [1] : i32[]\n}", 3, 17, "bare value");
    check(
        "  %1 = constant [[[[[[[[[1]]]]]]]]] : i32[]\n}",
        3,
        25,
        "deeper than the maximum rank",
    );
    check(
        "  %1 = reduce sum %0, axis=[0] : f32[]\n}",
        3,
        23,
        "unknown attribute `axis` for `reduce`",
    );
    check(
        "  %1 = exp %0, axes=[0] : f32[2]\n}",
        3,
        16,
        "unknown attribute `axes` for `exp`",
    );
    check(
        "  %1 = reverse %0, axes=[0], axes=[0] : f32[2]\n}",
        3,
        30,
        "attribute `axes` given twice",
    );
    check(
        "  %1 = reduce sum %0 : f32[]\n}",
        3,
        8,
        "`reduce` needs attribute `axes`",
    );
    check(
        "  %1 = dot %0, %0, lhs_batch=[], rhs_batch=[], lhs_contract=[0] : f32[]\n}",
        3,
        8,
        "needs attribute `rhs_contract`",
    );
    check(
        "  %1 = reverse %0, axes=0 : f32[2]\n}",
        3,
        25,
        "takes a list",
    );
    check("  %1 = iota axis=[0] : i32[2]\n}", 3, 18, "single number");
    check(
        "  %1 = add %0 : f32[2]\n}",
        3,
        8,
        "`add` takes 2 operands, found 1",
    );
    check(
        "  %1 = concat axis=0 : f32[2]\n}",
        3,
        8,
        "at least 1 operand",
    );
    check(
        "  %1 = exp %0, %0 : f32[2]\n}",
        3,
        8,
        "`exp` takes 1 operand, found 2",
    );
    check(
        "  %1 = exp : f32[2]\n}",
        3,
        8,
        "`exp` takes 1 operand, found 0",
    );
    check(
        "  %1 = reverse axes=[0], %0 : f32[2]\n}",
        3,
        26,
        "operands must come before attributes",
    );
    check("  %1 = add %0 %0 : f32[2]\n}", 3, 15, "expected `,` or `:`");
    check(
        "  %1 = exp %0 : f32[1,1,1,1,1,1,1,1,1]\n}",
        3,
        37,
        "more than 8 entries",
    );
    check(
        "  %1 = weight \"w : f32[2]\n}",
        3,
        15,
        "unterminated string",
    );
    check(
        "  %1 = weight \"w\\\" : f32[2]\n}",
        3,
        17,
        "escapes are not supported",
    );
    check(
        "  %1 = exp %0 : f32[2]",
        3,
        23,
        "expected `%name = …`, `output` or `}`, found end of input",
    );
    check("  %1 = exp %0 : f32[2", 3, 22, "found end of input");
    check(
        "  %1 = exp %0 : f32[2]\n  # only a comment\n\n",
        3,
        23,
        "found end of input",
    );
    check("  %1 = exp %2 : f32[2]\n}", 3, 12, "undefined value `%2`");
    check("  %1 = exp %1 : f32[2]\n}", 3, 12, "undefined value `%1`");
    check("  output %y\n}", 3, 10, "undefined value `%y`");
    check(
        "  %0 = exp %0 : f32[2]\n}",
        3,
        3,
        "value `%0` is already defined",
    );
    check(
        "  %1 = exp %0 : f32[2]\n  %2 = input \"y\" : f32[2]\n}",
        4,
        8,
        "parameters must come before instructions",
    );
    check(
        "  output %0\n  %1 = exp %0 : f32[2]\n}",
        4,
        3,
        "definitions must come before the `output` lines",
    );
    check(
        "  output %0\n}\n\n  }",
        6,
        3,
        "unexpected `}` after the closing `}`",
    );
    check(
        "  output %0\n} program",
        4,
        3,
        "unexpected `program` after the closing `}`",
    );
    check("  output %0\n  @\n}", 4, 3, "unexpected character `@`");
    check(
        "  %1 = exp % : f32[2]\n}",
        3,
        12,
        "expected a value name after `%`",
    );
    check(
        "  exp %0\n}",
        3,
        3,
        "expected `%name = …`, `output` or `}`, found `exp`",
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
    check_error("", 1, 1, "expected `program`, found end of input");
    check_error("  prog {}", 1, 3, "expected `program`, found `prog`");
    check_error("program [", 1, 9, "expected `{` after `program`");
    check_error(
        "program {\n  %0 = input x : f32[2]\n}",
        2,
        14,
        "parameter's name in quotes",
    );
    // Columns count chars, not bytes.
    check_error(
        "program {\n  %0 = input \"é\" : g32[]\n}",
        2,
        20,
        "unknown dtype `g32`",
    );
}

#[test]
fn parse_error_displays_position_source_line_and_caret() {
    let err = parse("program {\n\t%0 = input \"x\" : f32[2]\n\t%1 = ad %0, %0 : f32[2]\n}");
    let want = ParseError {
        line: 3,
        column: 7,
        message: "unknown op `ad`".into(),
        source_line: "\t%1 = ad %0, %0 : f32[2]".into(),
    };
    assert_eq!(err, Err(want.clone()));
    assert_eq!(
        want.to_string(),
        "3:7: unknown op `ad`\n\t%1 = ad %0, %0 : f32[2]\n\t     ^"
    );
    let crlf = parse("program {\r\n  %0 = exp %9 : f32[2]\r\n}").unwrap_err();
    assert_eq!((crlf.line, crlf.column), (2, 12));
    assert_eq!(crlf.source_line, "  %0 = exp %9 : f32[2]");
}

/// A program exercising most of the syntax, the seed for mutation tests.
const SAMPLE: &str = r#"program {
  %0 = input "x" : f32[2,3]
  %1 = weight "w" : i32[3]
  %2 = constant [[1.0, nan:0x7fc00001], [-0.0, inf]] : f32[2,2]
  %3 = constant [] : u8[0,4]
  %4 = slice %0, start=[0,1], limit=[2,3], stride=[1,1] : f32[2,2]
  %5 = reduce max %2, axes=[0,1] : f32[]
  %6 = pad %0, %5, low=[1,-1], high=[0,2], interior=[0,1] : f32[3,6]
  output %4 donates 0
}
"#;

/// Asserts the parser's contract on `text`: no panic, and anything accepted round-trips.
fn check_parse_total(text: &str) -> Result<(), TestCaseError> {
    if let Ok(p) = parse(text) {
        let printed = print(&p);
        prop_assert_eq!(parse(&printed), Ok(p), "printed:\n{}", printed);
    }
    Ok(())
}

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Insert(usize, String),
    Duplicate(usize, usize),
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for edit in edits {
        let n = chars.len();
        match edit {
            Edit::Delete(at, len) => {
                let at = at % (n + 1);
                chars.drain(at..(at + len).min(n));
            }
            Edit::Insert(at, s) => {
                let at = at % (n + 1);
                chars.splice(at..at, s.chars());
            }
            Edit::Duplicate(at, len) => {
                let at = at % (n + 1);
                let piece: Vec<char> = chars[at..(at + len).min(n)].to_vec();
                chars.splice(at..at, piece);
            }
        }
    }
    chars.into_iter().collect()
}

fn arb_edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1..8usize).prop_map(|(a, l)| Edit::Delete(a, l)),
        (any::<usize>(), "[-+%=:,\\[\\]{}\"#\n .0-9a-z]{1,6}")
            .prop_map(|(a, s)| Edit::Insert(a, s)),
        (any::<usize>(), 1..40usize).prop_map(|(a, l)| Edit::Duplicate(a, l)),
    ]
}

#[test]
fn sample_is_valid_syntax() {
    // The mutation test below starts from text the parser accepts.
    let p = parsed(SAMPLE);
    assert_eq!(p.instructions.len(), 5);
    assert!(check_parse_total(SAMPLE).is_ok());
}

proptest! {
    #[test]
    fn parse_never_panics_on_arbitrary_text(text in any::<String>()) {
        check_parse_total(&text)?;
    }

    #[test]
    fn parse_never_panics_on_format_like_text(
        text in "[-+%=:,\\[\\]{}\"#\n .0-9a-z]{0,120}",
    ) {
        check_parse_total(&format!("program {{\n{text}"))?;
    }

    #[test]
    fn parse_never_panics_on_mutated_programs(edits in prop::collection::vec(arb_edit(), 1..4)) {
        check_parse_total(&apply(SAMPLE, &edits))?;
    }
}
