//! Reading decisions from a step's choice numbers.

/// One round of SplitMix64: a fast, well-mixed hash used to stretch a few numbers into many.
pub(super) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hands out a step's choice numbers in order. Past the end it derives more from a hash of
/// all of them, except that an all-zero step keeps yielding zeros, so a fully shrunk step
/// really is the simplest one.
pub(super) struct Choices<'a> {
    nums: &'a [u32],
    pos: usize,
    state: u64,
    all_zero: bool,
}

impl<'a> Choices<'a> {
    pub(super) fn new(nums: &'a [u32]) -> Choices<'a> {
        let mut state = 0x5EED_u64;
        for &n in nums {
            state ^= u64::from(n);
            splitmix64(&mut state);
            state = state.rotate_left(17);
        }
        Choices {
            nums,
            pos: 0,
            state,
            all_zero: nums.iter().all(|&n| n == 0),
        }
    }

    /// The next raw number.
    pub(super) fn next(&mut self) -> u32 {
        let v = match self.nums.get(self.pos) {
            Some(&n) => n,
            None if self.all_zero => 0,
            None => (splitmix64(&mut self.state) >> 32) as u32,
        };
        self.pos += 1;
        v
    }

    /// A number in `0..n` (0 when `n` is 0); 0 is the simplest option by convention.
    pub(super) fn below(&mut self, n: usize) -> usize {
        let c = self.next() as usize;
        if n == 0 {
            0
        } else {
            c % n
        }
    }

    /// True with about `percent`% probability; false for choice 0, so shrinking moves toward
    /// "not taken".
    pub(super) fn chance(&mut self, percent: u32) -> bool {
        self.next() % 100 >= 100 - percent.min(100)
    }

    /// One of `items`, or `None` if there are none.
    pub(super) fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        let i = self.below(items.len());
        items.get(i).copied()
    }

    /// A 64-bit seed for bulk data (constant elements); 0 when the two numbers it uses are 0.
    pub(super) fn seed(&mut self) -> u64 {
        (u64::from(self.next()) << 32) | u64::from(self.next())
    }

    /// A permutation of `0..n`; all-zero choices give the identity.
    pub(super) fn permutation(&mut self, n: usize) -> Vec<u32> {
        let mut p: Vec<u32> = (0..n as u32).collect();
        for i in 0..n {
            let j = i + self.below(n - i);
            p.swap(i, j);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_mean_simplest_and_numbers_run_on() {
        let zeros = [0u32; 4];
        let mut c = Choices::new(&zeros);
        assert_eq!(c.permutation(5), vec![0, 1, 2, 3, 4]);
        assert!(!c.chance(99));
        assert_eq!(c.seed(), 0);

        let nums = [7u32, 1, 2];
        let mut c = Choices::new(&nums);
        assert_eq!(c.below(5), 2);
        assert_eq!(c.below(0), 0);
        assert_eq!(c.pick(&[10, 20]), Some(10));
        let derived: Vec<u32> = (0..8).map(|_| c.next()).collect();
        assert!(derived.iter().any(|&d| d != 0));
        let mut p = c.permutation(6);
        p.sort_unstable();
        assert_eq!(p, vec![0, 1, 2, 3, 4, 5]);
    }
}
