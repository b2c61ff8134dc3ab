//! Numbers and constant literals: reading words as numbers of a given type, and checking a
//! bracketed literal against the declared type of its `constant`.

use std::str::FromStr;

use super::{fail, Fail, Pos};
use crate::{DType, Tensor, TensorData, Type};

/// A constant's literal as written, before the type annotation that follows it is known:
/// a scalar word, or a bracketed list of literals.
#[derive(Debug)]
pub(super) enum Literal {
    Scalar(String, Pos),
    /// The items and the position of the opening `[`.
    List(Vec<Literal>, Pos),
}

/// The tensor of type `ty` that `literal` spells.
///
/// A scalar type takes a bare word. Any other type takes either nested lists that match its
/// dims exactly, or one flat list of all elements in row-major order (the form for an empty
/// tensor, and a shorthand). Counts are compared against the literal's actual length with
/// checked arithmetic, so a huge declared dim costs nothing.
pub(super) fn tensor(literal: &Literal, ty: &Type) -> Result<Tensor, Fail> {
    let mut words = Vec::new();
    match literal {
        Literal::Scalar(word, pos) if ty.rank() == 0 => words.push((word.as_str(), *pos)),
        Literal::List(_, pos) if ty.rank() == 0 => {
            return fail(*pos, format!("a {ty} constant is a bare value, not a list"))
        }
        Literal::Scalar(_, pos) => {
            return fail(*pos, format!("a {ty} constant needs a list `[…]`"))
        }
        Literal::List(items, _) if matches!(items.first(), Some(Literal::List(..))) => {
            nested(literal, &ty.dims, 0, &mut words)?;
        }
        Literal::List(items, pos) => {
            for item in items {
                match item {
                    Literal::Scalar(word, at) => words.push((word.as_str(), *at)),
                    Literal::List(_, at) => {
                        return fail(*at, "a flat literal cannot contain lists")
                    }
                }
            }
            let expected = ty.element_count();
            if expected != Some(words.len() as u64) {
                let needs = match expected {
                    Some(n) => n.to_string(),
                    None => "more than 2^64".into(),
                };
                return fail(
                    *pos,
                    format!("literal has {} elements but {ty} has {needs}", words.len()),
                );
            }
        }
    }
    let data = elements(ty.dtype, &words)?;
    match Tensor::new(&ty.dims, data) {
        Ok(t) => Ok(t),
        // Unreachable by the counts checked above; reported rather than trusted.
        Err(e) => fail(literal_pos(literal), e.to_string()),
    }
}

fn literal_pos(literal: &Literal) -> Pos {
    match literal {
        Literal::Scalar(_, pos) | Literal::List(_, pos) => *pos,
    }
}

/// Collects the scalars of a nested literal whose list at `axis` must have `dims[0]` entries.
fn nested<'l>(
    literal: &'l Literal,
    dims: &[u64],
    axis: usize,
    out: &mut Vec<(&'l str, Pos)>,
) -> Result<(), Fail> {
    match (dims.split_first(), literal) {
        (None, Literal::Scalar(word, pos)) => out.push((word.as_str(), *pos)),
        (None, Literal::List(_, pos)) => {
            return fail(
                *pos,
                format!("expected a value, the type has only {axis} axes"),
            )
        }
        (Some(_), Literal::Scalar(_, pos)) => {
            return fail(*pos, format!("expected a list for axis {axis}"))
        }
        (Some((&dim, inner)), Literal::List(items, pos)) => {
            if items.len() as u64 != dim {
                return fail(
                    *pos,
                    format!(
                        "axis {axis} has dim {dim} but this list has {} entries",
                        items.len()
                    ),
                );
            }
            for item in items {
                nested(item, inner, axis + 1, out)?;
            }
        }
    }
    Ok(())
}

/// The elements spelled by `words`, each read as a `dtype` value.
fn elements(dtype: DType, words: &[(&str, Pos)]) -> Result<TensorData, Fail> {
    fn all<T>(
        words: &[(&str, Pos)],
        dtype: DType,
        read: fn(&str) -> Option<T>,
    ) -> Result<Vec<T>, Fail> {
        words
            .iter()
            .map(|&(word, pos)| match read(word) {
                Some(v) => Ok(v),
                None => fail(pos, format!("bad {dtype} value `{word}`")),
            })
            .collect()
    }
    Ok(match dtype {
        DType::F32 => TensorData::F32(all(words, dtype, read_f32)?),
        DType::F64 => TensorData::F64(all(words, dtype, read_f64)?),
        DType::I32 => TensorData::I32(all(words, dtype, read_int)?),
        DType::I64 => TensorData::I64(all(words, dtype, read_int)?),
        DType::U8 => TensorData::U8(all(words, dtype, read_int)?),
        DType::Bool => TensorData::Bool(all(words, dtype, read_bool)?),
    })
}

/// Skips leading ASCII digits, returning how many there were and the rest.
fn digits(s: &str) -> (usize, &str) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    (n, &s[n..])
}

fn strip_sign(s: &str) -> &str {
    s.strip_prefix(['+', '-']).unwrap_or(s)
}

/// True for `[+-]? digit+`.
fn is_integer(word: &str) -> bool {
    let (n, rest) = digits(strip_sign(word));
    n > 0 && rest.is_empty()
}

/// True for `[+-]? digit+ ('.' digit+)? ([eE] [+-]? digit+)?`: the decimals the format accepts
/// (Rust's own parser also takes forms such as `.5` and `infinity` that the format does not).
fn is_decimal(word: &str) -> bool {
    let (n, mut rest) = digits(strip_sign(word));
    if n == 0 {
        return false;
    }
    if let Some(frac) = rest.strip_prefix('.') {
        let (n, r) = digits(frac);
        if n == 0 {
            return false;
        }
        rest = r;
    }
    if let Some(exp) = rest.strip_prefix(['e', 'E']) {
        let (n, r) = digits(strip_sign(exp));
        if n == 0 {
            return false;
        }
        rest = r;
    }
    rest.is_empty()
}

/// An integer of type `T` written in decimal with an optional sign, or `None` if the word is
/// not one or is out of `T`'s range.
pub(super) fn read_int<T: FromStr>(word: &str) -> Option<T> {
    if is_integer(word) {
        word.parse().ok()
    } else {
        None
    }
}

fn read_bool(word: &str) -> Option<bool> {
    match word {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The bits of a `nan:0x…` word, if it is one with 1 to 16 hex digits.
fn nan_bits(word: &str) -> Option<u64> {
    let hex = word
        .strip_prefix("nan:0x")
        .or_else(|| word.strip_prefix("nan:0X"))?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// The bits `nan` stands for: the quiet NaN with sign and payload zero. Spelled out because
/// Rust does not promise which NaN `f32::NAN` is.
pub(super) const NAN_F32: u32 = 0x7fc0_0000;
/// As [`NAN_F32`], for f64.
pub(super) const NAN_F64: u64 = 0x7ff8_0000_0000_0000;

/// Float words: decimals that do not round to infinity, `inf`, `+inf`, `-inf`, `nan` (the
/// canonical quiet NaN) and `nan:0x…` (a NaN given by its bits).
macro_rules! read_float {
    ($name:ident, $t:ty, $bits:ty, $nan:expr) => {
        fn $name(word: &str) -> Option<$t> {
            match word {
                "inf" | "+inf" => return Some(<$t>::INFINITY),
                "-inf" => return Some(<$t>::NEG_INFINITY),
                "nan" => return Some(<$t>::from_bits($nan)),
                _ => {}
            }
            if let Some(bits) = nan_bits(word) {
                let x = <$t>::from_bits(<$bits>::try_from(bits).ok()?);
                return x.is_nan().then_some(x);
            }
            if !is_decimal(word) {
                return None;
            }
            word.parse::<$t>().ok().filter(|x| x.is_finite())
        }
    };
}
read_float!(read_f32, f32, u32, NAN_F32);
read_float!(read_f64, f64, u64, NAN_F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_specials_decimals_and_nan_bits() {
        assert_eq!(read_f32("-0.0").map(f32::to_bits), Some(0x8000_0000));
        assert_eq!(read_f32("1e-45").map(f32::to_bits), Some(1));
        assert_eq!(read_f32("+inf"), Some(f32::INFINITY));
        assert_eq!(read_f64("-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(read_f32("nan").map(f32::to_bits), Some(0x7fc0_0000));
        assert_eq!(
            read_f32("nan:0xFFC00001").map(f32::to_bits),
            Some(0xffc0_0001)
        );
        assert_eq!(
            read_f64("nan:0x7ff0000000000001").map(f64::to_bits),
            Some(0x7ff0_0000_0000_0001)
        );
        assert_eq!(read_f64("2.5E+3"), Some(2500.0));
        assert_eq!(read_f64("7"), Some(7.0));
        for bad in [
            "1e39",
            ".5",
            "5.",
            "1e",
            "--1",
            "infinity",
            "NaN",
            "nan:0x",
            "nan:0x7f800000",
            "nan:0x17fc00000",
            "nan:0x7ff00000000000000",
            "1_0",
            "0x10",
        ] {
            assert_eq!(read_f32(bad), None, "{bad}");
        }
        assert_eq!(read_f64("1e309"), None);
        assert_eq!(read_f64("nan:0x7fc00001"), None);
    }

    #[test]
    fn integers_are_decimal_and_range_checked() {
        assert_eq!(read_int::<i64>("-9223372036854775808"), Some(i64::MIN));
        assert_eq!(read_int::<u8>("255"), Some(255));
        assert_eq!(read_int::<u8>("+7"), Some(7));
        assert_eq!(read_int::<u8>("256"), None);
        assert_eq!(read_int::<u8>("-1"), None);
        assert_eq!(read_int::<i32>("1.0"), None);
        assert_eq!(read_int::<i32>("-"), None);
        assert_eq!(read_bool("true"), Some(true));
        assert_eq!(read_bool("1"), None);
    }
}
