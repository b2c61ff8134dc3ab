//! Distances between floats in ULPs: the number of representable values between them.

/// `bits` mapped to an integer that is monotonic in the float's value (both zeros map to 0,
/// the negative floats below it, +inf one above the largest finite float).
fn ordered32(x: f32) -> i64 {
    let bits = i64::from(x.to_bits() & 0x7fff_ffff);
    if x.is_sign_negative() {
        -bits
    } else {
        bits
    }
}

fn ordered64(x: f64) -> i128 {
    let bits = i128::from(x.to_bits() & 0x7fff_ffff_ffff_ffff);
    if x.is_sign_negative() {
        -bits
    } else {
        bits
    }
}

/// How many f32 values lie between `got` and `want` (0 when equal or both NaN, `u64::MAX`
/// when exactly one is NaN). `+0` and `-0` count as equal here; the sign of zero is checked by
/// the special-value tests.
pub fn ulps32(got: f32, want: f32) -> u64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0,
        (false, false) => ordered32(got).abs_diff(ordered32(want)),
        _ => u64::MAX,
    }
}

/// [`ulps32`] for f64.
pub fn ulps64(got: f64, want: f64) -> u64 {
    match (got.is_nan(), want.is_nan()) {
        (true, true) => 0,
        (false, false) => {
            u64::try_from(ordered64(got).abs_diff(ordered64(want))).unwrap_or(u64::MAX)
        }
        _ => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_count_representable_values() {
        assert_eq!(ulps32(1.0, 1.0), 0);
        assert_eq!(ulps32(1.0, f32::from_bits(1.0f32.to_bits() + 3)), 3);
        assert_eq!(ulps32(-0.0, 0.0), 0);
        assert_eq!(ulps32(f32::from_bits(1), -f32::from_bits(1)), 2);
        assert_eq!(ulps32(f32::MAX, f32::INFINITY), 1);
        assert_eq!(ulps32(f32::NAN, -f32::NAN), 0);
        assert_eq!(ulps32(f32::NAN, 0.0), u64::MAX);
        assert_eq!(ulps64(1.0, 1.0 + f64::EPSILON), 1);
        assert_eq!(ulps64(-f64::MAX, f64::MAX), 2 * f64::MAX.to_bits());
    }
}
