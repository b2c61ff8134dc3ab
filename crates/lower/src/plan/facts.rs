//! Facts the planner proves about values from the program's structure, which the math
//! expansions (`crate::math`) use to leave out guards that can never fire.
//!
//! One so far: `x - max(x)`, the max taken over some axes and broadcast back along them, is at
//! most zero (or NaN) at every point. Each element of `x` is at most the max of the elements
//! it was reduced with, and the rounded difference of `a ≤ b` is at most zero; the max is
//! NaN when one of them is, and `inf - inf` is NaN too. A softmax's `exp` of it then needs no
//! guard against overflow (`LoopKernel::at_most_zero`): on AVX-512, one `vminps` less per
//! vector in the pass that computes, stores and sums the terms, and a 4096×1024 f32 softmax
//! went from 1.67-1.68 to 1.64-1.65 ms (`accy bench`, 1 thread, p50, three alternating
//! rounds), in `cargo xtask bench memory` from 68% to 71% of a copy (1.69-1.70 → 1.63-1.64
//! ms).

use accy_ir::{Instruction, Op, Program, ReduceOp, ValueId};

/// The instruction defining `v`, if an instruction does (not a parameter).
fn definition(program: &Program, v: ValueId) -> Option<&Instruction> {
    let k = v.index().checked_sub(program.params.len())?;
    program.instructions.get(k)
}

/// Whether `rhs` is `lhs`'s max over some of its axes, broadcast back to `lhs`'s dims along
/// them: directly (the broadcast puts the max's axes at `lhs`'s other axes, in order), or
/// through a reshape that puts the reduced axes back as 1s (ONNX's `keepdims`), broadcast
/// axis for axis. Then `lhs - rhs` is at most zero or NaN (see the module doc).
pub(super) fn is_minus_own_max(program: &Program, lhs: ValueId, rhs: ValueId) -> bool {
    let Some(Instruction {
        op: Op::Broadcast { x, dims, axes },
        ..
    }) = definition(program, rhs)
    else {
        return false;
    };
    let Some(ty) = program.value_type(lhs) else {
        return false;
    };
    if *dims != ty.dims || !ty.dtype.is_float() {
        return false;
    }
    let rank = dims.len() as u32;
    // Through a reshape only when it is broadcast axis for axis.
    let (max, reshaped) = match definition(program, *x) {
        Some(Instruction {
            op: Op::Reshape { x: max, dims: kept },
            ..
        }) if axes.iter().copied().eq(0..rank) => (*max, Some(kept)),
        _ => (*x, None),
    };
    let Some(reduced) = reduced_axes(program, max, lhs) else {
        return false;
    };
    let is_reduced = |a: usize| reduced.contains(&(a as u32));
    match reshaped {
        // The reshape inserts 1s at the reduced axes and keeps the others' extents.
        Some(kept) => {
            kept.len() == dims.len()
                && kept
                    .iter()
                    .zip(dims)
                    .enumerate()
                    .all(|(a, (&k, &d))| k == if is_reduced(a) { 1 } else { d })
        }
        // The broadcast puts the max's axes at the others, in order.
        None => axes
            .iter()
            .copied()
            .eq((0..rank).filter(|&a| !is_reduced(a as usize))),
    }
}

/// The axes `max` reduces, when it is `reduce max` of `x`.
fn reduced_axes(program: &Program, max: ValueId, x: ValueId) -> Option<Vec<u32>> {
    match definition(program, max) {
        Some(Instruction {
            op:
                Op::Reduce {
                    op: ReduceOp::Max,
                    x: of,
                    axes,
                },
            ..
        }) if *of == x => Some(axes.to_vec()),
        _ => None,
    }
}
