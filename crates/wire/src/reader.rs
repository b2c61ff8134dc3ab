//! A bounds-checked little-endian cursor over the input, and the version rules for codes the
//! decoder does not know.
//!
//! Every read goes through [`Reader::take`], which refuses to pass the end of the current
//! region (the whole input, or one section's payload), so no decoding path can index out of
//! bounds. Offsets in errors are absolute positions in the input.

use accy_ir::MAX_RANK;

use crate::{DecodeError, VERSION_MINOR};

/// An [`DecodeError::InvalidProgram`] at `offset`.
pub(crate) fn invalid(offset: usize, reason: impl Into<String>) -> DecodeError {
    DecodeError::InvalidProgram {
        offset,
        reason: reason.into(),
    }
}

/// The version a file declares, which decides how unknown codes and extensions are judged.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileVersion {
    /// The file's major version (always [`crate::VERSION_MAJOR`] once the header is accepted).
    pub(crate) major: u16,
    /// The file's minor version.
    pub(crate) minor: u16,
}

impl FileVersion {
    /// True when the file was written by a newer minor version than this decoder implements,
    /// so it may legitimately contain codes, flags and optional extensions unknown here.
    pub(crate) fn is_newer_minor(self) -> bool {
        self.minor > VERSION_MINOR
    }

    /// An [`DecodeError::UnsupportedVersion`] for this file.
    pub(crate) fn unsupported(self, offset: usize, reason: impl Into<String>) -> DecodeError {
        DecodeError::UnsupportedVersion {
            major: self.major,
            minor: self.minor,
            offset,
            reason: reason.into(),
        }
    }

    /// The error for a code no table of this version assigns: a newer minor may have added
    /// it (unsupported), while a file of this or an older minor cannot contain it (invalid).
    pub(crate) fn unknown_code(self, offset: usize, what: &str, code: u8) -> DecodeError {
        if self.is_newer_minor() {
            self.unsupported(
                offset,
                format!("{what} code {code:#04x} is not defined in version 1.{VERSION_MINOR}"),
            )
        } else {
            invalid(offset, format!("unknown {what} code {code:#04x}"))
        }
    }
}

/// A cursor over `data[pos..end]`; `data` is the whole input so offsets stay absolute.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    end: usize,
    /// Names the region in messages (`header`, `section params`, …).
    region: &'static str,
}

impl<'a> Reader<'a> {
    /// A cursor over the whole input.
    pub(crate) fn new(data: &'a [u8]) -> Reader<'a> {
        Reader {
            data,
            pos: 0,
            end: data.len(),
            region: "input",
        }
    }

    /// The absolute offset of the next byte.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left in this region.
    pub(crate) fn remaining(&self) -> usize {
        self.end - self.pos
    }

    /// The name of this region, for messages.
    pub(crate) fn region(&self) -> &'static str {
        self.region
    }

    /// The next `n` bytes, or an error naming `what` if the region ends first.
    pub(crate) fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(invalid(
                self.pos,
                format!(
                    "unexpected end of {} reading {what}: {n} bytes needed, {} left",
                    self.region,
                    self.remaining()
                ),
            ));
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    /// A byte.
    pub(crate) fn u8(&mut self, what: &str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A little-endian u16.
    pub(crate) fn u16(&mut self, what: &str) -> Result<u16, DecodeError> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// A little-endian u32.
    pub(crate) fn u32(&mut self, what: &str) -> Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian u64.
    pub(crate) fn u64(&mut self, what: &str) -> Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A little-endian two's-complement i64.
    pub(crate) fn i64(&mut self, what: &str) -> Result<i64, DecodeError> {
        self.array(what).map(i64::from_le_bytes)
    }

    /// A u64 count of items that each occupy at least `min_item_bytes`, checked against the
    /// bytes left so that a caller may allocate `count` items afterwards: a lying count fails
    /// here, before any allocation.
    pub(crate) fn count(
        &mut self,
        min_item_bytes: usize,
        what: &str,
    ) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = self.u64(what)?;
        let fits = usize::try_from(n).ok().filter(|&n| {
            n.checked_mul(min_item_bytes)
                .is_some_and(|b| b <= self.remaining())
        });
        fits.ok_or_else(|| {
            invalid(
                at,
                format!(
                    "{what} {n} needs at least {} bytes, but only {} are left in the {}",
                    u128::from(n) * min_item_bytes as u128,
                    self.remaining(),
                    self.region
                ),
            )
        })
    }

    /// The u64 entry count of a dims or axes list, which may not exceed [`MAX_RANK`].
    pub(crate) fn rank_count(&mut self, what: &str) -> Result<usize, DecodeError> {
        let at = self.pos;
        let n = self.u64(what)?;
        match usize::try_from(n) {
            Ok(n) if n <= MAX_RANK => Ok(n),
            _ => Err(invalid(
                at,
                format!("{what} has {n} entries; at most MAX_RANK = {MAX_RANK} are allowed"),
            )),
        }
    }

    /// Splits off the next `len` bytes as their own region named `region`.
    pub(crate) fn sub(
        &mut self,
        len: u64,
        region: &'static str,
    ) -> Result<Reader<'a>, DecodeError> {
        let at = self.pos;
        match usize::try_from(len) {
            Ok(n) if n <= self.remaining() => {
                self.pos += n;
                Ok(Reader {
                    data: self.data,
                    pos: at,
                    end: at + n,
                    region,
                })
            }
            _ => Err(invalid(
                at,
                format!(
                    "{region} claims {len} bytes, but only {} are left in the {}",
                    self.remaining(),
                    self.region
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_and_stops_at_the_end() {
        let bytes = [1, 2, 0, 3, 0, 0, 0, 0xff];
        let mut r = Reader::new(&bytes);
        assert_eq!(r.u8("a").unwrap(), 1);
        assert_eq!(r.u16("b").unwrap(), 2);
        assert_eq!(r.u32("c").unwrap(), 3);
        assert_eq!(r.pos(), 7);
        let err = r.u16("d").unwrap_err();
        assert!(
            matches!(err, DecodeError::InvalidProgram { offset: 7, .. }),
            "{err}"
        );
        assert_eq!(r.u8("e").unwrap(), 0xff);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn counts_are_checked_against_what_remains() {
        let mut bytes = 3u64.to_le_bytes().to_vec();
        bytes.extend([0; 6]);
        assert_eq!(Reader::new(&bytes).count(2, "n").unwrap(), 3);
        let err = Reader::new(&bytes).count(3, "n").unwrap_err();
        assert!(err.to_string().contains("needs at least 9 bytes"), "{err}");
        let huge = u64::MAX.to_le_bytes();
        assert!(Reader::new(&huge).count(1, "n").is_err());
        assert!(Reader::new(&huge).rank_count("dims").is_err());
        let nine = 9u64.to_le_bytes();
        assert!(Reader::new(&nine).rank_count("dims").is_err());
    }

    #[test]
    fn sub_regions_keep_absolute_offsets() {
        let bytes = [0, 1, 2, 3, 4];
        let mut r = Reader::new(&bytes);
        r.u8("skip").unwrap();
        let mut s = r.sub(2, "section x").unwrap();
        assert_eq!(r.pos(), 3);
        assert_eq!(s.u8("a").unwrap(), 1);
        let err = s.u16("b").unwrap_err();
        assert!(matches!(err, DecodeError::InvalidProgram { offset: 2, .. }));
        assert!(err.to_string().contains("section x"), "{err}");
        assert!(r.sub(3, "section y").is_err());
        assert!(r.sub(u64::MAX, "section z").is_err());
    }
}
