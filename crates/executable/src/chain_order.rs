//! The order a chain's workgroups are handed to the executor's workers.
//!
//! A chain's last link hints the cache to fetch the rows of the *next* workgroup index
//! (`accy-lower`'s `plan/chain.rs`), so that workgroup's first pass finds them cached. Tiles
//! are claimed one at a time from a shared counter, so with two workers claiming in turn,
//! tile `t + 1` goes to the other worker and every hint would fetch rows that the other core
//! is already reading. So tile `t` runs workgroup [`workgroup_of`]`(t)`: the workgroups are cut
//! into one contiguous range per worker and the tiles take the ranges in turn, so that
//! workers claiming in turn each walk one range in order and the next workgroup index is
//! their own next one. A worker that is not scheduled only means another takes its tiles,
//! still each range in order; an executor that runs all tiles on one thread (a pool busy with
//! another caller's job runs ours inline) walks the ranges in turn, so the hints then fetch
//! rows that are used later or not at all: wasted, never wrong. Any order is right for a
//! chain (no workgroup touches bytes another one writes); this one only decides which rows
//! are cached when.

/// The workgroup that tile `tile` of a chain with `workgroups` workgroups runs when
/// `workers` threads claim tiles: a bijection of `0..workgroups`, ranges of
/// `⌈workgroups / workers⌉` consecutive workgroups (the last one shorter) taken in turn; the
/// identity for one worker or when the ranges would leave one empty.
pub(crate) fn workgroup_of(tile: u32, workgroups: u32, workers: u32) -> u32 {
    if workers < 2 || workgroups <= workers {
        return tile;
    }
    // In u64: `per · (workers - 1)` may exceed u32 for huge counts; every result is below
    // `workgroups`, so it fits u32 again.
    let (t, n, w) = (u64::from(tile), u64::from(workgroups), u64::from(workers));
    let per = n.div_ceil(w);
    // Every range but the last holds `per`; the last holds `last` (at least 1, or the
    // identity).
    let Some(last) = n.checked_sub(per * (w - 1)).filter(|&l| l > 0) else {
        return tile;
    };
    // The first `last` columns of the (range, position) grid are full, the others lack the
    // last range.
    let full = last * w;
    let (range, position) = if t < full {
        (t % w, t / w)
    } else {
        let rest = t - full;
        (rest % (w - 1), last + rest / (w - 1))
    };
    u32::try_from(range * per + position).unwrap_or(tile)
}

#[cfg(test)]
mod tests {
    use super::workgroup_of;

    #[test]
    fn is_a_bijection_walking_each_range_in_order() {
        for workers in 1..6u32 {
            for workgroups in 1..80u32 {
                let order: Vec<u32> = (0..workgroups)
                    .map(|t| workgroup_of(t, workgroups, workers))
                    .collect();
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(
                    sorted,
                    (0..workgroups).collect::<Vec<_>>(),
                    "{workgroups} workgroups, {workers} workers: {order:?}"
                );
                // Tiles `t` and `t + workers` (the same worker's next claim when the workers
                // claim in turn) run consecutive workgroups.
                let per = workgroups.div_ceil(workers);
                let ranges =
                    workers > 1 && workgroups > workers && workgroups > per * (workers - 1);
                if !ranges {
                    assert_eq!(sorted, order, "the identity otherwise");
                    continue;
                }
                // While every range has workgroups left (the full columns).
                let full = (workgroups - per * (workers - 1)) * workers;
                for t in 0..full - workers {
                    let (a, b) = (order[t as usize], order[(t + workers) as usize]);
                    assert!(
                        b == a + 1,
                        "{workgroups} workgroups, {workers} workers: {order:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn huge_counts_stay_in_range() {
        for (n, w) in [
            (u32::MAX, 2),
            (u32::MAX, u32::MAX - 1),
            ((1 << 31) + 1, u32::MAX),
        ] {
            for t in [0, 1, n / 2, n - 2, n - 1] {
                assert!(workgroup_of(t, n, w) < n, "tile {t} of {n}, {w} workers");
            }
        }
        // Both halves of 2^32 - 1 workgroups, in turn.
        assert_eq!(workgroup_of(1, u32::MAX, 2), 1 << 31);
        assert_eq!(workgroup_of(u32::MAX - 1, u32::MAX, 2), (1 << 31) - 1);
    }

    #[test]
    fn two_workers_take_the_halves_in_turn() {
        let order: Vec<u32> = (0..7).map(|t| workgroup_of(t, 7, 2)).collect();
        assert_eq!(order, [0, 4, 1, 5, 2, 6, 3]);
        let order: Vec<u32> = (0..4).map(|t| workgroup_of(t, 4, 1)).collect();
        assert_eq!(order, [0, 1, 2, 3]);
    }
}
