//! Negative tests for the verifier's program-level rules (the numbered list in `verify.rs`'s
//! module doc): parameter types and names, SSA order, declared types, outputs, donation, and
//! collecting every violation. Op typing rules are in `verify_typing.rs`.
//!
//! Programs are built from their public fields, since the builder refuses most of these
//! mistakes up front. Each test checks where the error is reported and that its message names
//! the offending numbers or names; the `text` field comes from the text printer, so only its
//! presence is checked.

mod common;

use accy_ir::{
    axes, verify, BinaryOp, DType, Instruction, Location, Op, Output, ParamKind, Program, UnaryOp,
};
use common::*;

// ---- Rule 1: parameter types -------------------------------------------------------------

#[test]
fn param_rank_above_eight_is_refused() {
    let p = Program {
        params: vec![param(ParamKind::Input, "x", f32s(&[1; 9]))],
        instructions: vec![],
        outputs: vec![out(0)],
    };
    expect_error(&p, Location::Param(0), &["rank 9", "8"]);
    let ok = Program {
        params: vec![param(ParamKind::Input, "x", f32s(&[1; 8]))],
        ..p
    };
    assert!(verify(&ok).is_ok());
}

#[test]
fn param_byte_size_overflow_is_refused() {
    // Fits u64 elements but not isize bytes.
    let p = Program {
        params: vec![
            param(ParamKind::Weight, "big", f32s(&[1 << 62])),
            param(ParamKind::Input, "ok", ty(DType::U8, &[1 << 62])),
            param(
                ParamKind::Input,
                "huge",
                ty(DType::U8, &[1 << 32, 1 << 32, 2]),
            ),
        ],
        instructions: vec![],
        outputs: vec![out(1)],
    };
    let errs = errors(&p);
    assert_eq!(errs.len(), 2, "{errs:#?}");
    check(
        &errs[0],
        Location::Param(0),
        &["larger than", &i64::MAX.to_string()],
    );
    check(&errs[1], Location::Param(2), &["larger than"]);
}

// ---- Rule 2: parameter names -------------------------------------------------------------

#[test]
fn param_names_must_be_1_to_255_allowed_bytes() {
    let long = "a".repeat(256);
    for bad in ["", "has space", "é", "a,b", "x\n", long.as_str()] {
        let p = Program {
            params: vec![param(ParamKind::Input, bad, f32s(&[]))],
            instructions: vec![],
            outputs: vec![out(0)],
        };
        expect_error(&p, Location::Param(0), &["1-255", "[A-Za-z0-9_.:/-]"]);
    }
    let max = "Z".repeat(255);
    for good in ["a", "layer.0/w:b-c_d", max.as_str()] {
        let p = Program {
            params: vec![param(ParamKind::Weight, good, f32s(&[]))],
            instructions: vec![],
            outputs: vec![out(0)],
        };
        assert!(verify(&p).is_ok(), "{good}");
    }
}

#[test]
fn duplicate_names_within_a_kind_are_refused() {
    let p = Program {
        params: vec![
            param(ParamKind::Input, "x", f32s(&[])),
            param(ParamKind::Weight, "x", f32s(&[])),
            param(ParamKind::Input, "y", f32s(&[])),
            param(ParamKind::Input, "x", f32s(&[2])),
        ],
        instructions: vec![],
        outputs: vec![out(0)],
    };
    // An input and a weight may share a name; two inputs may not.
    expect_error(&p, Location::Param(3), &["`x`", "twice"]);
}

// ---- Rule 3: SSA order ---------------------------------------------------------------------

#[test]
fn operands_must_be_defined_earlier() {
    let neg = |x| Op::Unary {
        op: UnaryOp::Neg,
        x: v(x),
    };
    let p = Program {
        params: vec![param(ParamKind::Input, "x", f32s(&[2]))],
        instructions: vec![
            // Reads the next instruction's value.
            Instruction {
                op: neg(2),
                ty: f32s(&[2]),
            },
            Instruction {
                op: neg(0),
                ty: f32s(&[2]),
            },
            // Reads itself.
            Instruction {
                op: neg(3),
                ty: f32s(&[2]),
            },
            // Reads a value that does not exist at all.
            Instruction {
                op: neg(77),
                ty: f32s(&[2]),
            },
        ],
        outputs: vec![out(2)],
    };
    let errs = errors(&p);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    check(
        &errs[0],
        Location::Instruction(0),
        &["%2", "not defined before"],
    );
    check(
        &errs[1],
        Location::Instruction(2),
        &["%3", "not defined before"],
    );
    check(
        &errs[2],
        Location::Instruction(3),
        &["%77", "not defined before"],
    );
}

#[test]
fn a_bad_operand_skips_only_that_type_check() {
    let p = Program {
        params: vec![param(ParamKind::Input, "x", f32s(&[2]))],
        instructions: vec![
            // Both operands bad, and the declared type is wrong too: only the operand errors.
            Instruction {
                op: Op::Binary {
                    op: BinaryOp::Add,
                    lhs: v(1),
                    rhs: v(5),
                },
                ty: ty(DType::Bool, &[9]),
            },
            Instruction {
                op: Op::Unary {
                    op: UnaryOp::Exp,
                    x: v(0),
                },
                ty: f32s(&[3]),
            },
        ],
        outputs: vec![out(2)],
    };
    let errs = errors(&p);
    assert_eq!(errs.len(), 3, "{errs:#?}");
    check(&errs[0], Location::Instruction(0), &["%1"]);
    check(&errs[1], Location::Instruction(0), &["%5"]);
    check(&errs[2], Location::Instruction(1), &["f32[3]", "f32[2]"]);
}

// ---- Rule 4: declared types ------------------------------------------------------------------

#[test]
fn declared_type_must_equal_the_inferred_one() {
    let op = Op::Unary {
        op: UnaryOp::Abs,
        x: v(0),
    };
    let p = one_op(&[f32s(&[2, 3])], op.clone(), f32s(&[3, 2]));
    expect_error(
        &p,
        Location::Instruction(0),
        &["declared type f32[3,2]", "gives f32[2,3]"],
    );
    let p = one_op(&[f32s(&[2, 3])], op, ty(DType::F64, &[2, 3]));
    expect_error(&p, Location::Instruction(0), &["f64[2,3]", "f32[2,3]"]);
}

// ---- Rule 5: outputs ----------------------------------------------------------------------------

#[test]
fn a_program_needs_outputs_that_exist() {
    let p = Program {
        params: vec![param(ParamKind::Input, "x", f32s(&[]))],
        instructions: vec![],
        outputs: vec![],
    };
    expect_error(&p, Location::Program, &["no outputs"]);

    let p = Program {
        outputs: vec![out(0), out(1), out(0)],
        ..p
    };
    expect_error(&p, Location::Output(1), &["%1", "does not exist"]);
}

// ---- Rule 6: donation ---------------------------------------------------------------------------

/// Inputs `a: f32[2]`, weight `w: f32[2]`, input `b: i32[2]`.
fn donation_program(outputs: Vec<Output>) -> Program {
    Program {
        params: vec![
            param(ParamKind::Input, "a", f32s(&[2])),
            param(ParamKind::Weight, "w", f32s(&[2])),
            param(ParamKind::Input, "b", ty(DType::I32, &[2])),
        ],
        instructions: vec![Instruction {
            op: Op::Binary {
                op: BinaryOp::Add,
                lhs: v(0),
                rhs: v(1),
            },
            ty: f32s(&[2]),
        }],
        outputs,
    }
}

#[test]
fn donation_must_name_an_existing_input() {
    assert!(verify(&donation_program(vec![donating(3, 0), donating(2, 1)])).is_ok());
    // Input numbers count inputs only: the weight is not input 1, and there is no input 2.
    let p = donation_program(vec![donating(3, 2)]);
    expect_error(&p, Location::Output(0), &["input 2", "2 inputs"]);
    let p = donation_program(vec![out(3), donating(3, 99)]);
    expect_error(&p, Location::Output(1), &["input 99", "2 inputs"]);
}

#[test]
fn donation_needs_the_exact_type() {
    let p = donation_program(vec![donating(3, 1)]);
    expect_error(
        &p,
        Location::Output(0),
        &["input 1", "i32[2]", "output is f32[2]"],
    );
}

#[test]
fn an_input_is_donated_at_most_once() {
    let p = donation_program(vec![donating(3, 0), out(3), donating(0, 0)]);
    expect_error(&p, Location::Output(2), &["input 0 is donated twice"]);
}

// ---- Collecting -------------------------------------------------------------------------------

#[test]
fn every_violation_is_reported_in_program_order() {
    let p = Program {
        params: vec![
            param(ParamKind::Input, "bad name", f32s(&[2])),
            param(ParamKind::Input, "y", f32s(&[1; 9])),
        ],
        instructions: vec![
            Instruction {
                op: Op::Unary {
                    op: UnaryOp::Sqrt,
                    x: v(0),
                },
                ty: f32s(&[2]),
            },
            Instruction {
                op: Op::Unary {
                    op: UnaryOp::Not,
                    x: v(0),
                },
                ty: f32s(&[2]),
            },
            Instruction {
                op: Op::Transpose {
                    x: v(9),
                    perm: axes(&[0]),
                },
                ty: f32s(&[2]),
            },
            Instruction {
                op: Op::Unary {
                    op: UnaryOp::Exp,
                    x: v(2),
                },
                ty: f32s(&[3]),
            },
        ],
        outputs: vec![out(5), donating(2, 0), out(40)],
    };
    let errs = errors(&p);
    assert_eq!(errs.len(), 6, "{errs:#?}");
    check(&errs[0], Location::Param(0), &["1-255"]);
    check(&errs[1], Location::Param(1), &["rank 9"]);
    check(
        &errs[2],
        Location::Instruction(1),
        &["not does not accept f32"],
    );
    check(
        &errs[3],
        Location::Instruction(2),
        &["%9", "not defined before"],
    );
    check(
        &errs[4],
        Location::Instruction(3),
        &["declared type f32[3]", "f32[2]"],
    );
    // Output 1 is fine (sqrt of an f32[2] input donating to that input); output 2 is not.
    check(&errs[5], Location::Output(2), &["%40", "does not exist"]);
    // The Display form lists them all.
    let shown = verify(&p).unwrap_err().to_string();
    assert!(shown.starts_with("6 verifier error(s)"), "{shown}");
    assert_eq!(shown.lines().count(), 7, "{shown}");
}
