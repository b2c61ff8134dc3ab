//! The overlap check of [`crate::prepare_borrowed`]: no output may share a byte with an input
//! or with another output (inputs may share bytes with each other: they are only read).
//!
//! A few buffers are compared pair by pair, which is the cheapest for the typical program. Past
//! [`PAIRWISE_MAX`] buffers the check sorts their address ranges by start and sweeps once,
//! so it costs O(n log n) instead of O(n²) for a program with thousands of outputs. The sort
//! runs in the caller's reusable table (kept in [`crate::Scratch`]) and is in place
//! (`sort_unstable`), so once the table has grown to the program's buffer count, the check
//! allocates nothing.

use crate::binding::{BindingError, BufferKind};

/// Up to this many buffers (inputs plus outputs), compare pairs; above it, sort and sweep.
pub(crate) const PAIRWISE_MAX: usize = 16;

/// One caller buffer's address range, `start..end`, and which buffer it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extent {
    start: usize,
    end: usize,
    kind: BufferKind,
    index: usize,
}

impl Extent {
    fn of(kind: BufferKind, index: usize, buffer: &[u8]) -> Extent {
        let start = buffer.as_ptr() as usize;
        Extent {
            start,
            // A slice never wraps the address space, so this cannot overflow.
            end: start + buffer.len(),
            kind,
            index,
        }
    }

    fn is_empty(&self) -> bool {
        self.start >= self.end
    }

    /// Whether the two share a byte (an empty range shares none).
    fn overlaps(&self, other: &Extent) -> bool {
        !self.is_empty() && !other.is_empty() && self.start < other.end && other.start < self.end
    }
}

/// The error for two overlapping extents, at least one of them an output: it names the output
/// (the later one if both are) and the buffer it overlaps.
fn overlap_error(a: Extent, b: Extent) -> BindingError {
    let (output, other) = match (a.kind, b.kind) {
        (BufferKind::Output, BufferKind::Output) if a.index < b.index => (b, a),
        (BufferKind::Output, _) => (a, b),
        _ => (b, a),
    };
    BindingError::Overlap {
        output: output.index,
        output_range: (output.start, output.end),
        other_kind: other.kind,
        other: other.index,
        other_range: (other.start, other.end),
    }
}

/// Refuses `outputs` if one shares a byte with an input or with another output. `table` is
/// reusable memory for the sorted check; it is cleared first and grows only when this call
/// has more buffers than any before. With several overlaps, which pair is named is
/// unspecified (up to [`PAIRWISE_MAX`] buffers: the first output, in order, that overlaps
/// an input or an earlier output).
#[inline]
pub(crate) fn check(
    inputs: &[&[u8]],
    outputs: &[&mut [u8]],
    table: &mut Vec<Extent>,
) -> Result<(), BindingError> {
    let ins = inputs
        .iter()
        .enumerate()
        .map(|(i, b)| Extent::of(BufferKind::Input, i, b));
    let outs = outputs
        .iter()
        .enumerate()
        .map(|(i, b)| Extent::of(BufferKind::Output, i, b));
    if inputs.len() + outputs.len() <= PAIRWISE_MAX {
        for (index, output) in outs.clone().enumerate() {
            let earlier = outs.clone().take(index);
            if let Some(other) = ins.clone().chain(earlier).find(|o| output.overlaps(o)) {
                return Err(overlap_error(output, other));
            }
        }
        return Ok(());
    }
    table.clear();
    table.reserve(inputs.len() + outputs.len());
    table.extend(ins.chain(outs).filter(|e| !e.is_empty()));
    sweep(table)
}

/// Sorts `extents` by start and finds a pair sharing a byte of which at least one is an
/// output (empty extents share nothing). The sweep keeps, of the extents seen so far, the output and the input
/// reaching furthest: a later extent overlapping any earlier output overlaps the furthest one,
/// since starts only grow, and likewise an output overlapping any earlier input.
pub(crate) fn sweep(extents: &mut [Extent]) -> Result<(), BindingError> {
    extents.sort_unstable_by_key(|e| e.start);
    let (mut output, mut input): (Option<Extent>, Option<Extent>) = (None, None);
    for &e in extents.iter().filter(|e| !e.is_empty()) {
        if let Some(o) = output.filter(|o| e.start < o.end) {
            return Err(overlap_error(e, o));
        }
        if e.kind == BufferKind::Output {
            if let Some(i) = input.filter(|i| e.start < i.end) {
                return Err(overlap_error(e, i));
            }
        }
        let furthest = match e.kind {
            BufferKind::Output => &mut output,
            BufferKind::Input => &mut input,
        };
        if furthest.is_none_or(|f| e.end > f.end) {
            *furthest = Some(e);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent(kind: BufferKind, index: usize, start: usize, len: usize) -> Extent {
        Extent {
            start,
            end: start + len,
            kind,
            index,
        }
    }

    /// Whether any output shares a byte with an input or another output, pair by pair.
    fn brute_force(extents: &[Extent]) -> bool {
        extents.iter().enumerate().any(|(i, a)| {
            extents[..i].iter().any(|b| {
                (a.kind == BufferKind::Output || b.kind == BufferKind::Output) && a.overlaps(b)
            })
        })
    }

    #[test]
    fn the_sweep_agrees_with_pairwise_comparison_and_names_a_real_overlap() {
        // SplitMix64 over many small random layouts, dense enough that about half overlap.
        let mut state = 1u64;
        let mut next = |bound: u64| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % bound) as usize
        };
        let (mut overlapping, mut clean) = (0, 0);
        for _ in 0..20_000 {
            let (n_in, n_out) = (next(4), 1 + next(8));
            let mut extents = Vec::new();
            for i in 0..n_in {
                extents.push(extent(BufferKind::Input, i, next(200), next(12) + 1));
            }
            for i in 0..n_out {
                extents.push(extent(BufferKind::Output, i, next(200), next(12)));
            }
            let expected = brute_force(&extents);
            let mut sorted = extents.clone();
            let got = sweep(&mut sorted);
            assert_eq!(got.is_err(), expected, "{extents:?}");
            if let Err(BindingError::Overlap {
                output,
                output_range,
                other_kind,
                other,
                other_range,
            }) = got
            {
                overlapping += 1;
                let find = |kind, index| {
                    *extents
                        .iter()
                        .find(|e| e.kind == kind && e.index == index)
                        .unwrap()
                };
                let (o, b) = (find(BufferKind::Output, output), find(other_kind, other));
                assert_eq!((o.start, o.end), output_range);
                assert_eq!((b.start, b.end), other_range);
                assert!(o.overlaps(&b) && (o.kind, o.index) != (b.kind, b.index));
                if other_kind == BufferKind::Output {
                    assert!(other < output, "the later output is named first");
                }
            } else {
                clean += 1;
            }
        }
        assert!(overlapping > 1000 && clean > 1000, "{overlapping} {clean}");
    }

    #[test]
    fn inputs_may_overlap_each_other_and_empty_ranges_overlap_nothing() {
        let mut e = [
            extent(BufferKind::Input, 0, 100, 50),
            extent(BufferKind::Input, 1, 120, 50),
            extent(BufferKind::Output, 0, 170, 10),
            extent(BufferKind::Output, 1, 175, 0),
        ];
        assert_eq!(sweep(&mut e), Ok(()));
        let mut e = [
            extent(BufferKind::Output, 0, 100, 50),
            extent(BufferKind::Input, 0, 10, 500),
        ];
        assert_eq!(
            sweep(&mut e),
            Err(BindingError::Overlap {
                output: 0,
                output_range: (100, 150),
                other_kind: BufferKind::Input,
                other: 0,
                other_range: (10, 510),
            })
        );
    }
}
