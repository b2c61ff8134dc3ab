//! Binding a plan with many outputs, where `prepare_borrowed` sorts the buffers' address ranges
//! to find overlaps instead of comparing every pair: clean layouts in any address order bind
//! and run, and every overlap (output with output, output with input) is still refused,
//! naming two buffers that really share a byte.

mod common;

use accy_artifact::{Command, Region, SlotRole};
use accy_executable::{
    prepare_borrowed, run, BindingError, BufferKind, Inline, LoadedArtifact, Scratch,
};
use accy_ir::DType;
use common::*;

/// Outputs of the test plan: far above the count up to which pairs are compared.
const OUTPUTS: usize = 200;

/// Input: u8[8]. Outputs: `OUTPUTS` × u8[4], output `i` = input bytes `i % 5 .. i % 5 + 4`.
fn loaded() -> LoadedArtifact {
    let mut a = artifact();
    let input = slot(&mut a, SlotRole::Input(0), DType::U8, 8);
    for i in 0..OUTPUTS {
        let out = slot(&mut a, SlotRole::Output(i as u32), DType::U8, 4);
        a.launch.push(Command::Copy {
            src: Region::new(input, (i % 5) as u64, 4),
            dst: whole(out, 4),
        });
    }
    load(&a, &host()).unwrap()
}

/// A deterministic permutation of `0..n` (multiplication by a unit modulo a prime `p >= n`).
fn permutation(n: usize) -> Vec<usize> {
    let p = 211;
    assert!(n <= p);
    (0..p).map(|i| (i * 97) % p).filter(|&i| i < n).collect()
}

/// Output `i` at byte `at[i]` of `memory`, each 4 bytes long (they may overlap on purpose, as
/// buffers from a foreign caller might).
///
/// # Safety
/// `memory` stays alive and otherwise unused while the slices are, and the caller never
/// reads or writes through two overlapping slices: it only hands them to `prepare_borrowed`,
/// which refuses an overlap before touching any byte, and runs only layouts without one.
unsafe fn outputs_at<'m>(memory: *mut u8, len: usize, at: &[usize]) -> Vec<&'m mut [u8]> {
    at.iter()
        .map(|&offset| {
            assert!(offset + 4 <= len);
            // SAFETY: in bounds (asserted) of the live allocation `memory`; aliasing is the
            // caller's promise above.
            unsafe { std::slice::from_raw_parts_mut(memory.add(offset), 4) }
        })
        .collect()
}

fn bind(
    loaded: &LoadedArtifact,
    input: &[u8],
    outputs: &mut [&mut [u8]],
) -> Result<(), BindingError> {
    let mut scratch = Scratch::new();
    prepare_borrowed(loaded, &[input], outputs, &mut scratch, &Inline).map(|b| run(b).unwrap())
}

#[test]
fn many_outputs_in_shuffled_order_bind_and_run() {
    let loaded = loaded();
    let input = [10u8, 11, 12, 13, 14, 15, 16, 17];
    let mut memory = vec![0u8; 4 * OUTPUTS];
    let at: Vec<usize> = permutation(OUTPUTS).iter().map(|&p| 4 * p).collect();
    // SAFETY: the ranges are the disjoint 4-byte chunks of `memory`, used only through them
    // until they are dropped.
    let mut outs = unsafe { outputs_at(memory.as_mut_ptr(), memory.len(), &at) };
    bind(&loaded, &input, &mut outs).unwrap();
    drop(outs);
    for (i, &offset) in at.iter().enumerate() {
        let k = i % 5;
        assert_eq!(&memory[offset..offset + 4], &input[k..k + 4], "output {i}");
    }
}

#[test]
fn every_overlap_among_many_outputs_is_refused_naming_a_real_pair() {
    let loaded = loaded();
    let input = [0u8; 8];
    let mut memory = vec![0u8; 4 * OUTPUTS + 8];
    let clean: Vec<usize> = permutation(OUTPUTS).iter().map(|&p| 4 * p).collect();
    // Move output `moved` onto a byte of the output `victim` (first, middle or last byte).
    for (moved, victim, shift) in [(0, 1, 0), (199, 3, 3), (57, 150, 1), (120, 120, 0)] {
        let mut at = clean.clone();
        if moved != victim {
            at[moved] = clean[victim] + shift;
        } else {
            // An output overlapping its neighbour in memory.
            at[moved] += 2;
        }
        // SAFETY: nothing is read or written through them, since binding refuses the overlap
        // first; `memory` is not used otherwise meanwhile.
        let mut outs = unsafe { outputs_at(memory.as_mut_ptr(), memory.len(), &at) };
        let err = bind(&loaded, &input, &mut outs).unwrap_err();
        let BindingError::Overlap {
            output,
            output_range,
            other_kind: BufferKind::Output,
            other,
            other_range,
        } = err
        else {
            panic!("{err:?}")
        };
        assert!(other < output, "{err}");
        let base = outs[0].as_ptr() as usize - at[0];
        let range = |i: usize| (base + at[i], base + at[i] + 4);
        assert_eq!((output_range, other_range), (range(output), range(other)));
        assert!(
            output_range.0 < other_range.1 && other_range.0 < output_range.1,
            "{err}"
        );
    }

    // An output over the input.
    let mut at = clean.clone();
    let mut joint = vec![0u8; 4 * OUTPUTS + 16];
    at[33] = 4 * OUTPUTS + 6;
    let base = joint.as_mut_ptr();
    // SAFETY: as above; the input would only be read, and only if binding succeeded.
    let mut outs = unsafe { outputs_at(base, joint.len(), &at) };
    // SAFETY: bytes 4·OUTPUTS + 4 .. + 12 of the live `joint`, never written while shared.
    let input_bytes = unsafe { std::slice::from_raw_parts(base.add(4 * OUTPUTS + 4), 8) };
    let err = bind(&loaded, input_bytes, &mut outs).unwrap_err();
    assert!(
        matches!(
            err,
            BindingError::Overlap {
                output: 33,
                other_kind: BufferKind::Input,
                other: 0,
                ..
            }
        ),
        "{err}"
    );
}
