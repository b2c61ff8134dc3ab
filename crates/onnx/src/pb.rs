//! The protobuf wire format, read in place: varints, fixed-width values and length-delimited
//! fields, borrowed from the input.
//!
//! Invariants: no read passes the end of the current message (every length is checked against
//! the bytes that remain before it is used); nothing here allocates; offsets in errors are
//! absolute positions in the file, so a message's fields report where they really are.
//! Groups (wire types 3 and 4, deprecated and unused by ONNX) are refused.

use crate::DecodeError;

/// One encoded message: its bytes and the absolute offset of its first byte.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Msg<'a> {
    /// The message's bytes.
    pub(crate) bytes: &'a [u8],
    /// Offset of `bytes[0]` in the whole input.
    pub(crate) base: usize,
}

/// A field's payload, by wire type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1 (little-endian 8 bytes).
    Fixed64(u64),
    /// Wire type 2: a string, bytes, an embedded message or a packed repeated field.
    Len(Msg<'a>),
    /// Wire type 5 (little-endian 4 bytes).
    Fixed32(u32),
}

/// One field of a message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field<'a> {
    /// The field number from the tag.
    pub(crate) number: u32,
    /// The payload.
    pub(crate) value: Value<'a>,
    /// Absolute offset of the field's tag.
    pub(crate) offset: usize,
}

/// An error at absolute `offset`.
pub(crate) fn error(offset: usize, message: impl Into<String>) -> DecodeError {
    DecodeError {
        offset,
        message: message.into(),
    }
}

impl<'a> Msg<'a> {
    /// The whole input as the top-level message.
    pub(crate) fn new(bytes: &'a [u8]) -> Msg<'a> {
        Msg { bytes, base: 0 }
    }

    /// The fields in order of appearance.
    pub(crate) fn fields(self) -> Fields<'a> {
        Fields { msg: self, pos: 0 }
    }

    /// The bytes as UTF-8 (protobuf `string`), or an error naming `what`.
    pub(crate) fn str(self, what: &str) -> Result<&'a str, DecodeError> {
        std::str::from_utf8(self.bytes).map_err(|e| {
            error(
                self.base + e.valid_up_to(),
                format!("{what} is not valid UTF-8"),
            )
        })
    }

    /// Reads a varint at `pos`, returning it and the position after it.
    fn varint(self, pos: usize) -> Result<(u64, usize), DecodeError> {
        read_varint(self.bytes, pos).map_err(|reason| error(self.base + pos, reason))
    }
}

/// Reads one varint from `bytes` at `pos`; the error says why it is malformed.
pub(crate) fn read_varint(bytes: &[u8], pos: usize) -> Result<(u64, usize), &'static str> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some(&b) = bytes.get(pos + i) else {
            return Err("truncated varint");
        };
        if i == 9 && b > 1 {
            return Err("varint longer than 64 bits");
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok((value, pos + i + 1));
        }
    }
    Err("varint longer than 10 bytes")
}

/// Iterator over a message's fields; yields an error (and then stops) at the first malformed
/// byte.
#[derive(Debug)]
pub(crate) struct Fields<'a> {
    msg: Msg<'a>,
    pos: usize,
}

impl<'a> Fields<'a> {
    fn field(&mut self) -> Result<Field<'a>, DecodeError> {
        let msg = self.msg;
        let offset = msg.base + self.pos;
        let (tag, pos) = msg.varint(self.pos)?;
        let number = u32::try_from(tag >> 3)
            .ok()
            .filter(|&n| n != 0 && n < (1 << 29))
            .ok_or_else(|| error(offset, format!("invalid field number {}", tag >> 3)))?;
        let fixed = |pos: usize, n: usize| -> Result<(&'a [u8], usize), DecodeError> {
            let end = pos
                .checked_add(n)
                .filter(|&e| e <= msg.bytes.len())
                .ok_or_else(|| {
                    error(
                        msg.base + pos,
                        format!(
                            "field {number} needs {n} bytes but {} remain",
                            msg.bytes.len() - pos
                        ),
                    )
                })?;
            Ok((&msg.bytes[pos..end], end))
        };
        let (value, next) = match tag & 7 {
            0 => {
                let (v, next) = msg.varint(pos)?;
                (Value::Varint(v), next)
            }
            1 => {
                let (b, next) = fixed(pos, 8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                (Value::Fixed64(u64::from_le_bytes(a)), next)
            }
            2 => {
                let (len, start) = msg.varint(pos)?;
                let remaining = msg.bytes.len() - start;
                let len = usize::try_from(len)
                    .ok()
                    .filter(|&l| l <= remaining)
                    .ok_or_else(|| {
                        error(
                            msg.base + pos,
                            format!(
                                "field {number} has length {len} but only {remaining} bytes remain"
                            ),
                        )
                    })?;
                let bytes = &msg.bytes[start..start + len];
                let sub = Msg {
                    bytes,
                    base: msg.base + start,
                };
                (Value::Len(sub), start + len)
            }
            5 => {
                let (b, next) = fixed(pos, 4)?;
                let mut a = [0u8; 4];
                a.copy_from_slice(b);
                (Value::Fixed32(u32::from_le_bytes(a)), next)
            }
            w => {
                return Err(error(
                    offset,
                    format!("field {number} has wire type {w}, which ONNX does not use"),
                ))
            }
        };
        self.pos = next;
        Ok(Field {
            number,
            value,
            offset,
        })
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<Field<'a>, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.msg.bytes.len() {
            return None;
        }
        let item = self.field();
        if item.is_err() {
            // Stop after the first error: the position of anything after it is unknown.
            self.pos = self.msg.bytes.len();
        }
        Some(item)
    }
}

impl<'a> Field<'a> {
    fn wrong_type(&self, what: &str, expected: &str) -> DecodeError {
        error(
            self.offset,
            format!("{what} (field {}) must be {expected}", self.number),
        )
    }

    /// The payload as an integer (`int32`, `int64`, enums: two's complement of the varint).
    pub(crate) fn int(&self, what: &str) -> Result<i64, DecodeError> {
        match self.value {
            Value::Varint(v) => Ok(v as i64),
            _ => Err(self.wrong_type(what, "a varint")),
        }
    }

    /// The payload as an `int32`-typed field, refusing values outside `i32`.
    pub(crate) fn int32(&self, what: &str) -> Result<i32, DecodeError> {
        let v = self.int(what)?;
        i32::try_from(v).map_err(|_| error(self.offset, format!("{what} {v} does not fit int32")))
    }

    /// The payload as a `float`.
    pub(crate) fn float(&self, what: &str) -> Result<f32, DecodeError> {
        match self.value {
            Value::Fixed32(v) => Ok(f32::from_bits(v)),
            _ => Err(self.wrong_type(what, "a 32-bit float")),
        }
    }

    /// The payload as a length-delimited message, string or bytes.
    pub(crate) fn msg(&self, what: &str) -> Result<Msg<'a>, DecodeError> {
        match self.value {
            Value::Len(m) => Ok(m),
            _ => Err(self.wrong_type(what, "length-delimited")),
        }
    }

    /// The payload as a UTF-8 string.
    pub(crate) fn str(&self, what: &str) -> Result<&'a str, DecodeError> {
        self.msg(what)?.str(what)
    }

    /// Appends the value(s) of a repeated varint field, packed or not, to `out`.
    pub(crate) fn ints_into(&self, what: &str, out: &mut Vec<i64>) -> Result<(), DecodeError> {
        match self.value {
            Value::Varint(v) => out.push(v as i64),
            Value::Len(m) => {
                let mut pos = 0;
                while pos < m.bytes.len() {
                    let (v, next) = m.varint(pos)?;
                    out.push(v as i64);
                    pos = next;
                }
            }
            _ => return Err(self.wrong_type(what, "varints")),
        }
        Ok(())
    }

    /// Appends the value(s) of a repeated 4-byte field, packed or not, to `out` as raw bits.
    pub(crate) fn fixed32s_into(&self, what: &str, out: &mut Vec<u32>) -> Result<(), DecodeError> {
        let single = match self.value {
            Value::Fixed32(v) => Some(v),
            _ => None,
        };
        self.fixed_into(what, single, out, u32::from_le_bytes)
    }

    /// Appends the value(s) of a repeated 8-byte field, packed or not, to `out` as raw bits.
    pub(crate) fn fixed64s_into(&self, what: &str, out: &mut Vec<u64>) -> Result<(), DecodeError> {
        let single = match self.value {
            Value::Fixed64(v) => Some(v),
            _ => None,
        };
        self.fixed_into(what, single, out, u64::from_le_bytes)
    }

    /// A repeated `N`-byte field: one unpacked value (`single`) or a packed run.
    fn fixed_into<T, const N: usize>(
        &self,
        what: &str,
        single: Option<T>,
        out: &mut Vec<T>,
        decode: fn([u8; N]) -> T,
    ) -> Result<(), DecodeError> {
        if let Some(v) = single {
            out.push(v);
            return Ok(());
        }
        let Value::Len(m) = self.value else {
            return Err(self.wrong_type(what, &format!("{}-bit values", N * 8)));
        };
        if m.bytes.len() % N != 0 {
            return Err(error(
                m.base,
                format!(
                    "packed {what} has {} bytes, not a multiple of {N}",
                    m.bytes.len()
                ),
            ));
        }
        out.extend(m.bytes.chunks_exact(N).map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            decode(a)
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8]) -> Result<Vec<Field<'_>>, DecodeError> {
        Msg::new(bytes).fields().collect()
    }

    #[test]
    fn varints_and_wire_types_decode() {
        // field 1 varint 300, field 2 bytes "hi", field 3 fixed32 1.0f, field 4 fixed64 7.
        let mut bytes = vec![0x08, 0xac, 0x02, 0x12, 2, b'h', b'i', 0x1d];
        bytes.extend(1.0f32.to_le_bytes());
        bytes.push(0x21);
        bytes.extend(7u64.to_le_bytes());
        let fields = all(&bytes).unwrap();
        assert_eq!(fields.len(), 4);
        assert_eq!(fields[0].int("a").unwrap(), 300);
        assert_eq!(fields[1].str("b").unwrap(), "hi");
        assert_eq!(fields[1].msg("b").unwrap().base, 5);
        assert_eq!(fields[2].float("c").unwrap(), 1.0);
        assert!(matches!(fields[3].value, Value::Fixed64(7)));
        assert_eq!(fields[3].offset, 12);
        // Negative int64 is a 10-byte varint.
        let neg = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert_eq!(all(&neg).unwrap()[0].int("n").unwrap(), -1);
    }

    #[test]
    fn malformed_bytes_are_errors_with_offsets() {
        let e = all(&[0x08, 0x80]).unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (1, "truncated varint"));
        let e = all(&[0x12, 5, 1, 2]).unwrap_err();
        assert!(
            e.message.contains("length 5 but only 2 bytes remain"),
            "{e}"
        );
        let e = all(&[0x0b]).unwrap_err();
        assert!(e.message.contains("wire type 3"), "{e}");
        assert!(all(&[0x00, 0x00]).is_err(), "field number 0");
        let mut long = vec![0x08];
        long.extend([0xff; 11]);
        let e = all(&long).unwrap_err();
        assert!(e.message.contains("varint"), "{e}");
        assert!(all(&[0x1d, 0, 0]).is_err(), "short fixed32");
        let e = Msg::new(&[0xff, 0xfe]).str("name").unwrap_err();
        assert_eq!(e.offset, 0);
    }

    #[test]
    fn packed_and_unpacked_repeated_fields_agree() {
        let packed = [0x0a, 3, 1, 0xac, 0x02];
        let mut out = Vec::new();
        for f in all(&packed).unwrap() {
            f.ints_into("ints", &mut out).unwrap();
        }
        let unpacked = [0x08, 1, 0x08, 0xac, 0x02];
        let mut out2 = Vec::new();
        for f in all(&unpacked).unwrap() {
            f.ints_into("ints", &mut out2).unwrap();
        }
        assert_eq!(out, vec![1, 300]);
        assert_eq!(out, out2);
        let mut floats = Vec::new();
        let odd = [0x0a, 3, 0, 0, 0];
        let e = all(&odd).unwrap()[0]
            .fixed32s_into("floats", &mut floats)
            .unwrap_err();
        assert!(e.message.contains("not a multiple of 4"), "{e}");
    }
}
