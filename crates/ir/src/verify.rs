//! The verifier: proves a [`Program`] well-formed so later stages can trust it.
//!
//! Verification guarantees that lowering and interpreting the program cannot crash or index out
//! of bounds; it does not judge whether the program computes anything useful. It checks:
//!
//! 1. every parameter's type has rank ≤ [`crate::MAX_RANK`] and non-zero dims whose product
//!    times the element size fits `isize` (also when another dim is 0 and the type holds 0
//!    bytes, so the strides of every valid type fit `i64`);
//! 2. every parameter name is 1–255 bytes of `[A-Za-z0-9_.:/-]`, unique among its kind;
//! 3. every operand names a value defined before the instruction that reads it (SSA order);
//! 4. every instruction's declared type equals the type its op's rule gives
//!    ([`crate::infer_type`]), which also checks attributes (axes, dims, dtypes);
//! 5. the program has at least one output, and every output names an existing value;
//! 6. a donating output names an existing input of exactly the output's type, and no input is
//!    donated twice.
//!
//! Not checked, by design: unused values, duplicate computations, numeric ranges of data.
//!
//! Every violation is collected (a bad operand stops only that instruction's type check), and
//! each error names its parameter, instruction or output by its printed text.

use std::collections::HashSet;
use std::fmt;

use crate::infer::check_type;
use crate::{infer_type, text, ParamKind, Program, Type};

/// Which part of a program an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Parameter `i` (value `%i`).
    Param(usize),
    /// Instruction `k` (defining value `%(params + k)`).
    Instruction(usize),
    /// Output `i`.
    Output(usize),
    /// The program as a whole.
    Program,
}

/// One rule violation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// Where it is.
    pub location: Location,
    /// The offending line in the text format (empty for [`Location::Program`]).
    pub text: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.text.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "`{}`: {}", self.text, self.message)
        }
    }
}

/// Every violation found in one program, in program order (never empty).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct VerifyErrors(pub Vec<VerifyError>);

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} verifier error(s)", self.0.len())?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// The longest parameter name, in bytes.
pub const MAX_NAME_LEN: usize = 255;

/// True if `name` is an acceptable parameter name (see [`crate::Param`]).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:/-".contains(&b))
}

/// Checks every rule listed in the module doc and returns all violations.
pub fn verify(program: &Program) -> Result<(), VerifyErrors> {
    let mut errors = Vec::new();
    let mut report = |location: Location, message: String| {
        let text = match location {
            Location::Param(i) => text::param_text(program, i),
            Location::Instruction(k) => text::instruction_text(program, k),
            Location::Output(i) => text::output_text(program, i),
            Location::Program => String::new(),
        };
        errors.push(VerifyError {
            location,
            text,
            message,
        });
    };

    if program.value_count() > u32::MAX as usize {
        report(Location::Program, "too many values for 32-bit ids".into());
        return Err(VerifyErrors(errors));
    }

    let mut names: HashSet<(ParamKind, &str)> = HashSet::new();
    for (i, p) in program.params.iter().enumerate() {
        if let Err(e) = check_type(&p.ty) {
            report(Location::Param(i), e.0);
        }
        if !is_valid_name(&p.name) {
            report(
                Location::Param(i),
                format!("name must be 1-{MAX_NAME_LEN} bytes of [A-Za-z0-9_.:/-]"),
            );
        } else if !names.insert((p.kind, &p.name)) {
            report(
                Location::Param(i),
                format!("name `{}` is used twice", p.name),
            );
        }
    }

    for (k, inst) in program.instructions.iter().enumerate() {
        let own = program.params.len() + k;
        let operands = inst.op.operands();
        let mut types: Vec<&Type> = Vec::with_capacity(operands.len());
        for v in &operands {
            if v.index() >= own {
                report(
                    Location::Instruction(k),
                    format!("operand {v} is not defined before this instruction"),
                );
            } else if let Some(t) = program.value_type(*v) {
                types.push(t);
            }
        }
        if types.len() != operands.len() {
            continue;
        }
        match infer_type(&inst.op, &types) {
            Ok(ty) if ty == inst.ty => {}
            Ok(ty) => report(
                Location::Instruction(k),
                format!("declared type {} but the op gives {ty}", inst.ty),
            ),
            Err(e) => report(Location::Instruction(k), e.0),
        }
    }

    if program.outputs.is_empty() {
        report(Location::Program, "program has no outputs".into());
    }
    let inputs: Vec<_> = program.inputs().collect();
    let mut donated = HashSet::new();
    for (i, out) in program.outputs.iter().enumerate() {
        let Some(ty) = program.value_type(out.value) else {
            report(
                Location::Output(i),
                format!("value {} does not exist", out.value),
            );
            continue;
        };
        let Some(d) = out.donates else { continue };
        match inputs.get(d as usize) {
            None => report(
                Location::Output(i),
                format!(
                    "donates to input {d}, but the program has {} inputs",
                    inputs.len()
                ),
            ),
            Some((_, p)) if p.ty != *ty => report(
                Location::Output(i),
                format!(
                    "donates to input {d} of type {}, but the output is {ty}",
                    p.ty
                ),
            ),
            Some(_) if !donated.insert(d) => {
                report(Location::Output(i), format!("input {d} is donated twice"))
            }
            Some(_) => {}
        }
    }

    if errors.is_empty() {
        Ok(())
    } else {
        Err(VerifyErrors(errors))
    }
}
