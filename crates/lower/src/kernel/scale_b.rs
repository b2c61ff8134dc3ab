//! The kernel interpreter's [`Node::ScaleB`](super::Node::ScaleB): `x · 2^⌊n⌋` rounded once,
//! with the special cases of AVX-512's `vscalefps`/`vscalefpd` (Intel SDM, table "VSCALEFPD/SD/
//! PS/SS Special Cases", checked against the instruction), so the interpreter and the
//! instruction agree bit for bit, NaN payloads included: a NaN operand comes back quieted (the
//! first one's if both are NaN) except that a quiet NaN scaled by an infinite power gives
//! `+inf` or `+0`, and the two invalid cases give the default NaN.

/// The default NaN x86 produces for an invalid operation (sign set).
const DEFAULT_NAN_32: u32 = 0xFFC0_0000;
const DEFAULT_NAN_64: u64 = 0xFFF8_0000_0000_0000;

/// `x · 2^⌊n⌋` in f32.
pub(crate) fn f32(x: f32, n: f32) -> f32 {
    if x.is_nan() {
        return match nan_by(x.to_bits() & 0x0040_0000 != 0, n.into()) {
            Some(v) => v as f32,
            None => f32::from_bits(x.to_bits() | 0x0040_0000),
        };
    }
    if n.is_nan() {
        return f32::from_bits(n.to_bits() | 0x0040_0000);
    }
    match special(x == 0.0, x.is_infinite(), n) {
        Some(Special::Nan) => f32::from_bits(DEFAULT_NAN_32),
        Some(Special::Inf) => f32::INFINITY.copysign(x),
        Some(Special::Zero) => 0f32.copysign(x),
        Some(Special::Same) => x,
        // Beyond ±400 every finite non-zero f32 overflows or underflows all the same; within,
        // the f64 product is exact (24 significant bits, exponents well inside f64's range)
        // and the conversion rounds it once, to nearest even, subnormals included.
        None => {
            let k = n.floor().clamp(-400.0, 400.0) as i32;
            ((x as f64) * 2f64.powi(k)) as f32
        }
    }
}

/// `x · 2^⌊n⌋` in f64.
pub(crate) fn f64(x: f64, n: f64) -> f64 {
    if x.is_nan() {
        return match nan_by(x.to_bits() & 0x0008_0000_0000_0000 != 0, n) {
            Some(v) => v,
            None => f64::from_bits(x.to_bits() | 0x0008_0000_0000_0000),
        };
    }
    if n.is_nan() {
        return f64::from_bits(n.to_bits() | 0x0008_0000_0000_0000);
    }
    match special(x == 0.0, x.is_infinite(), n) {
        Some(Special::Nan) => f64::from_bits(DEFAULT_NAN_64),
        Some(Special::Inf) => f64::INFINITY.copysign(x),
        Some(Special::Zero) => 0f64.copysign(x),
        Some(Special::Same) => x,
        None => ldexp(x, n.floor().clamp(-2200.0, 2200.0) as i32),
    }
}

/// A quiet NaN scaled by an infinite power is not a NaN: `+inf` by `2^+inf` and `+0` by
/// `2^-inf`, whatever the NaN's sign (measured on the instruction; a signalling NaN comes
/// back quieted). `None` when the result is the NaN itself, quieted.
fn nan_by(quiet: bool, n: f64) -> Option<f64> {
    match n {
        _ if !quiet => None,
        f64::INFINITY => Some(f64::INFINITY),
        f64::NEG_INFINITY => Some(0.0),
        _ => None,
    }
}

/// What a non-NaN operand pair gives when it is not a plain scaling.
enum Special {
    Nan,
    Inf,
    Zero,
    Same,
}

fn special(zero: bool, infinite: bool, n: impl Into<f64>) -> Option<Special> {
    let n: f64 = n.into();
    if n == f64::INFINITY {
        Some(if zero { Special::Nan } else { Special::Inf })
    } else if n == f64::NEG_INFINITY {
        Some(if infinite {
            Special::Nan
        } else {
            Special::Zero
        })
    } else if zero || infinite {
        Some(Special::Same)
    } else {
        None
    }
}

/// `x · 2^k` for finite non-zero `x`, rounded once to nearest even.
fn ldexp(x: f64, k: i32) -> f64 {
    const MANT: u64 = (1 << 52) - 1;
    let sign = x.to_bits() & (1 << 63);
    // x = mant · 2^(e - 52) with mant in [2^52, 2^53): a subnormal is first made normal
    // (multiplying by 2^64 is exact).
    let (bits, bias) = if x.abs() < f64::MIN_POSITIVE {
        ((x * 2f64.powi(64)).to_bits(), 1023 + 64)
    } else {
        (x.to_bits(), 1023)
    };
    let e = ((bits >> 52) & 0x7FF) as i32 - bias;
    let mant = (bits & MANT) | (1 << 52);
    let t = e + k;
    if t > 1023 {
        return f64::INFINITY.copysign(x);
    }
    if t >= -1022 {
        return f64::from_bits(sign | (((t + 1023) as u64) << 52) | (mant & MANT));
    }
    // A subnormal result: mant · 2^(t - 52) in units of 2^-1074 is mant / 2^s.
    let s = -(t + 1022) as u32;
    if s > 53 {
        return 0f64.copysign(x);
    }
    let (mut q, rem, half) = (mant >> s, mant & ((1 << s) - 1), 1u64 << (s - 1));
    if rem > half || (rem == half && q & 1 == 1) {
        q += 1;
    }
    // q = 2^52 is the smallest normal number's bits, as it should be.
    f64::from_bits(sign | q)
}

#[cfg(test)]
mod tests {
    #[test]
    fn f64_scaling_rounds_once_into_the_subnormals() {
        let tiny = f64::from_bits(1);
        assert_eq!(
            super::f64(1.5, -1074.0),
            2.0 * tiny,
            "a tie to even, upwards"
        );
        assert_eq!(super::f64(1.25, -1074.0), tiny);
        assert_eq!(
            super::f64(2.5, -1074.0),
            2.0 * tiny,
            "a tie to even, downwards"
        );
        assert_eq!(super::f64(0.75, -1074.0), tiny);
        assert_eq!(super::f64(0.5, -1074.0), 0.0, "a tie to even zero");
        assert_eq!(super::f64(-1.0, -1080.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(super::f64(tiny, 1074.0), 1.0, "a subnormal operand");
        assert_eq!(super::f64(3.0, 5.9), 96.0, "the floor of n");
        assert_eq!(super::f64(1.0, -0.5), 0.5);
        assert_eq!(super::f64(1.0, 1024.0), f64::INFINITY);
        assert_eq!(
            super::f64(f64::MAX, -2000.0),
            f64::MAX * 2f64.powi(-1000) / 2f64.powi(1000)
        );
        assert_eq!(
            super::f64(1.9999999999999998, -1023.0),
            f64::MIN_POSITIVE,
            "rounds up to normal"
        );
    }

    #[test]
    fn special_operands_follow_the_instruction() {
        let nan32 = |v: f32| v.to_bits();
        assert_eq!(nan32(super::f32(0.0, f32::INFINITY)), super::DEFAULT_NAN_32);
        assert_eq!(
            nan32(super::f32(f32::INFINITY, f32::NEG_INFINITY)),
            super::DEFAULT_NAN_32
        );
        assert_eq!(super::f32(-2.0, f32::INFINITY), f32::NEG_INFINITY);
        assert_eq!(
            super::f32(-2.0, f32::NEG_INFINITY).to_bits(),
            (-0.0f32).to_bits()
        );
        assert_eq!(super::f32(f32::NEG_INFINITY, -5.0), f32::NEG_INFINITY);
        assert_eq!(super::f32(-0.0, 100.0).to_bits(), (-0.0f32).to_bits());
        let snan = f32::from_bits(0x7F80_0001);
        assert_eq!(
            nan32(super::f32(snan, 1.0)),
            0x7FC0_0001,
            "quieted, payload kept"
        );
        assert_eq!(nan32(super::f32(1.0, snan)), 0x7FC0_0001);
        assert!(super::f64(f64::NAN, 1.0).is_nan());
        // Every f32 scaling agrees with the exact f64 one rounded once.
        for (x, k) in [
            (f32::MIN_POSITIVE, -23.0f32),
            (3.0e-45, 1.0),
            (1.5, -149.0),
            (0.75, -149.0),
        ] {
            let wide = super::f64(f64::from(x), f64::from(k)) as f32;
            assert_eq!(super::f32(x, k).to_bits(), wide.to_bits(), "{x} {k}");
        }
    }
}
