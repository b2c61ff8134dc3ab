//! Helpers shared by the verifier's negative tests: building programs from their public
//! fields and checking where and why verification fails.

#![allow(
    dead_code,
    reason = "each test binary uses a different subset of the helpers"
)]

use accy_ir::{
    verify, DType, Instruction, Location, Op, Output, Param, ParamKind, Program, Type, ValueId,
    VerifyError,
};

pub fn ty(dtype: DType, d: &[u64]) -> Type {
    Type::new(dtype, d)
}

pub fn f32s(d: &[u64]) -> Type {
    ty(DType::F32, d)
}

pub fn param(kind: ParamKind, name: &str, ty: Type) -> Param {
    Param {
        kind,
        name: name.to_owned(),
        ty,
    }
}

pub fn out(v: u32) -> Output {
    Output {
        value: ValueId(v),
        donates: None,
    }
}

pub fn donating(v: u32, input: u32) -> Output {
    Output {
        value: ValueId(v),
        donates: Some(input),
    }
}

/// A program with inputs `p0, p1, …` of `params`, one instruction `op` declared as `declared`,
/// and that instruction as its output.
pub fn one_op(params: &[Type], op: Op, declared: Type) -> Program {
    Program {
        params: params
            .iter()
            .enumerate()
            .map(|(i, t)| param(ParamKind::Input, &format!("p{i}"), t.clone()))
            .collect(),
        instructions: vec![Instruction { op, ty: declared }],
        outputs: vec![out(params.len() as u32)],
    }
}

/// All errors of `p`, which must fail verification.
pub fn errors(p: &Program) -> Vec<VerifyError> {
    match verify(p) {
        Ok(()) => panic!("verified but should not have: {p:?}"),
        Err(e) => {
            assert!(!e.0.is_empty());
            assert!(e
                .to_string()
                .contains(&format!("{} verifier error", e.0.len())));
            e.0
        }
    }
}

/// Asserts `p` has exactly one error, at `location`, whose message contains every needle.
pub fn expect_error(p: &Program, location: Location, needles: &[&str]) {
    let errs = errors(p);
    assert_eq!(errs.len(), 1, "expected one error, got {errs:#?}");
    check(&errs[0], location, needles);
}

pub fn check(e: &VerifyError, location: Location, needles: &[&str]) {
    assert_eq!(e.location, location, "{e:?}");
    for n in needles {
        assert!(e.message.contains(n), "message `{}` lacks `{n}`", e.message);
    }
    assert_eq!(e.text.is_empty(), location == Location::Program, "{e:?}");
}

/// Asserts the op over inputs of `params` fails its typing rule with a message containing the
/// needles.
pub fn bad_op(params: &[Type], op: Op, needles: &[&str]) {
    let p = one_op(params, op, f32s(&[]));
    expect_error(&p, Location::Instruction(0), needles);
}

/// Asserts the op over inputs of `params` types as `expected` and verifies: the positive
/// control that shows the neighbouring negative tests fail for the reason they name.
pub fn good_op(params: &[Type], op: Op, expected: Type) {
    let p = one_op(params, op, expected);
    if let Err(e) = verify(&p) {
        panic!("should verify: {e}");
    }
}

pub fn v(i: u32) -> ValueId {
    ValueId(i)
}
