//! accy's versioned binary encoding of tensor programs (internal crate; the public API is
//! `accy-session`).
//!
//! A host hands accy a program as wire bytes. [`encode`] writes an [`accy_ir::Program`] as version
//! [`VERSION_MAJOR`].[`VERSION_MINOR`] bytes and [`decode`] reads them back:
//! `decode(&encode(&p)) == Ok(p)` for every program that verifies. The layout of every byte
//! is specified in `docs/wire-format.md`; a golden file pins it.
//!
//! Decoding is structural only: it guarantees that the result is a well-formed value of the IR
//! types (tensors whose element count matches their dims, dims and axes lists of at most
//! [`accy_ir::MAX_RANK`] entries, UTF-8 names) but not that the program is well-typed; callers
//! run [`accy_ir::verify`] next. Decoding never panics, never reads outside the input, checks
//! every count and length against the bytes that remain before allocating (so it allocates
//! O(input length)), and copies everything it keeps: the result never borrows the input.

#![deny(missing_docs)]

mod codes;
mod decode;
mod decode_op;
#[cfg(test)]
mod doc_tables;
mod encode;
mod magic;
mod reader;

pub use decode::decode;
pub use encode::encode;

/// The first eight bytes of every wire file: `89 41 43 43 59 0D 0A 1A`.
///
/// As in PNG, the non-ASCII first byte and the CR LF / Ctrl-Z tail make a text-mode transfer
/// that rewrites line endings or strips the high bit visibly break the magic, and the readable
/// `ACCY` identifies the file in a hex dump.
pub const MAGIC: [u8; 8] = [0x89, b'A', b'C', b'C', b'Y', 0x0D, 0x0A, 0x1A];

/// The major version this crate writes and the only one it reads. A file of another major
/// version is refused with [`DecodeError::UnsupportedVersion`].
pub const VERSION_MAJOR: u16 = 1;

/// The minor version this crate writes. Files of an older or equal minor are read completely;
/// files of a newer minor are read when everything they use beyond this minor is optional.
pub const VERSION_MINOR: u16 = 0;

/// Why [`decode`] refused its input.
///
/// The two variants map onto the session's `UnsupportedVersion` and `InvalidProgram` status
/// codes; callers branch on the variant, and the message is for humans.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes are accy wire bytes, but of a version this decoder cannot read: another
    /// major version, a required section it does not know, or a code that a newer minor
    /// version (than [`VERSION_MINOR`]) may have added. Upgrading accy may help.
    #[error(
        "unsupported wire version {major}.{minor} (this decoder implements \
         {VERSION_MAJOR}.{VERSION_MINOR}): {reason} (at byte {offset})"
    )]
    UnsupportedVersion {
        /// The file's major version.
        major: u16,
        /// The file's minor version.
        minor: u16,
        /// Byte offset of the version field, section header or code refused.
        offset: usize,
        /// What this decoder does not support, with the numbers involved.
        reason: String,
    },
    /// The bytes are not a well-formed encoding: a wrong magic, a truncated or overlong
    /// field, a count larger than the bytes that remain, an unknown code in a file whose
    /// version says it should be known, invalid UTF-8, trailing bytes, and so on.
    #[error("invalid wire bytes at byte {offset}: {reason}")]
    InvalidProgram {
        /// Byte offset into the input where the problem was found.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
}

impl DecodeError {
    /// Prefixes the reason with where in the program the problem is (e.g. `instruction 3`).
    pub(crate) fn within(self, place: impl FnOnce() -> String) -> DecodeError {
        match self {
            DecodeError::InvalidProgram { offset, reason } => DecodeError::InvalidProgram {
                offset,
                reason: format!("{}: {reason}", place()),
            },
            DecodeError::UnsupportedVersion {
                major,
                minor,
                offset,
                reason,
            } => DecodeError::UnsupportedVersion {
                major,
                minor,
                offset,
                reason: format!("{}: {reason}", place()),
            },
        }
    }
}

/// Returns true when `bytes` start with [`MAGIC`], so a host can tell wire bytes from the text
/// format before choosing a decoder. It says nothing about whether the rest is valid.
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}
