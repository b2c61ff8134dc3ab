//! Property tests of the text format over generated programs: printing then parsing gives the
//! same program bit for bit, and mangled printed text never makes the parser panic.

#![cfg(feature = "gen")]

use accy_ir::{gen, text, verify};
use proptest::prelude::*;

/// Deletes `len` chars at `at` (both reduced to fit) and inserts `insert` there.
fn splice(text: &str, at: usize, len: usize, insert: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = at % (chars.len() + 1);
    let end = (at + len).min(chars.len());
    let mut out: String = chars[..at].iter().collect();
    out.push_str(insert);
    out.extend(&chars[end..]);
    out
}

proptest! {
    #[test]
    fn parse_inverts_print(p in gen::arb_program()) {
        let printed = text::print(&p);
        let parsed = text::parse(&printed);
        prop_assert_eq!(parsed.as_ref(), Ok(&p), "printed:\n{}", printed);
        // What the parser returns prints identically, and is still a valid program.
        if let Ok(q) = &parsed {
            prop_assert_eq!(text::print(q), printed);
            prop_assert!(verify(q).is_ok());
        }
    }

    #[test]
    fn parse_survives_mangled_programs(
        p in gen::arb_program(),
        edits in prop::collection::vec(
            (any::<usize>(), 0..6usize, "[-+%=:,\\[\\]{}\"#\n .0-9a-z]{0,4}"),
            1..4,
        ),
    ) {
        let mut mangled = text::print(&p);
        for (at, len, insert) in &edits {
            mangled = splice(&mangled, *at, *len, insert);
        }
        // No panic; and whatever is accepted round-trips like any parsed program.
        if let Ok(q) = text::parse(&mangled) {
            let printed = text::print(&q);
            prop_assert_eq!(text::parse(&printed), Ok(q), "printed:\n{}", printed);
        }
    }
}
