//! How much arithmetic and memory traffic one run of a program represents, for `accy bench`'s
//! GFLOPS and GB/s figures.
//!
//! The counting rule (documented in `accy bench --help` too), per instruction of the program
//! as written, before any fusion:
//! - `dot`: 2 · (elements of the result) · (product of the contracted dims), i.e.
//!   2·m·n·k·batch — one multiply and one add per multiply-add;
//! - elementwise ops (`unary`, `binary`, `compare`, `select`, `convert`): 1 per result element;
//! - `reduce`: 1 per operand element;
//! - everything else (constants, iota, broadcast, reshape, transpose, slice, concat, pad,
//!   reverse, gather) moves or makes data and counts 0.
//!
//! Bytes are the program's interface: inputs read plus outputs written per run (weights are
//! reported separately, since they stay resident across runs). Scratch traffic between kernels
//! is not counted: it depends on the compiler's fusion, and the figure is meant to compare
//! compilers on the same program.

use accy_ir::{Op, Program};

/// The work of one run of a program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// Floating-point (or integer) operations by the rule in the module doc.
    pub flops: u64,
    /// Bytes of all inputs.
    pub input_bytes: u64,
    /// Bytes of all weights.
    pub weight_bytes: u64,
    /// Bytes of all outputs.
    pub output_bytes: u64,
}

/// The work of `program`, which must be verified (an unverified program's ill-formed
/// instructions count 0). Sums saturate rather than overflow.
pub fn of(program: &Program) -> Work {
    let mut work = Work::default();
    for (_, p) in program.inputs() {
        work.input_bytes = work
            .input_bytes
            .saturating_add(p.ty.byte_size().unwrap_or(u64::MAX));
    }
    for (_, p) in program.weights() {
        work.weight_bytes = work
            .weight_bytes
            .saturating_add(p.ty.byte_size().unwrap_or(u64::MAX));
    }
    for out in &program.outputs {
        let bytes = program
            .value_type(out.value)
            .and_then(|t| t.byte_size())
            .unwrap_or(0);
        work.output_bytes = work.output_bytes.saturating_add(bytes);
    }
    for inst in &program.instructions {
        let result = inst.ty.element_count().unwrap_or(0);
        let flops = match &inst.op {
            Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Compare { .. }
            | Op::Select { .. }
            | Op::Convert { .. } => result,
            Op::Reduce { x, .. } => program
                .value_type(*x)
                .and_then(|t| t.element_count())
                .unwrap_or(0),
            Op::Dot {
                lhs, lhs_contract, ..
            } => {
                let contracted = program.value_type(*lhs).map_or(0, |t| {
                    lhs_contract
                        .iter()
                        .map(|&a| t.dims.get(a as usize).copied().unwrap_or(0))
                        .fold(1u64, u64::saturating_mul)
                });
                result.saturating_mul(contracted).saturating_mul(2)
            }
            _ => 0,
        };
        work.flops = work.flops.saturating_add(flops);
    }
    work
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_dots_elementwise_and_reductions() {
        let program = accy_ir::text::parse(
            "program {\n\
               %x = input \"x\" : f32[2,3]\n\
               %w = weight \"w\" : f32[3,4]\n\
               %h = dot %x, %w, lhs_batch=[], rhs_batch=[], lhs_contract=[1], rhs_contract=[0] : f32[2,4]\n\
               %e = exp %h : f32[2,4]\n\
               %s = reduce sum %e, axes=[1] : f32[2]\n\
               %t = transpose %e, perm=[1,0] : f32[4,2]\n\
               output %s\n\
               output %t\n\
             }",
        )
        .unwrap();
        accy_ir::verify(&program).unwrap();
        let w = of(&program);
        assert_eq!(w.flops, 2 * 2 * 4 * 3 + 8 + 8);
        assert_eq!(w.input_bytes, 24);
        assert_eq!(w.weight_bytes, 48);
        assert_eq!(w.output_bytes, 8 + 32);
    }
}
