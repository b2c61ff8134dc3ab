//! The file form of an [`Artifact`]: what `accy compile --artifact` writes and
//! `Session::load_artifact` reads, so a program compiled once can be shipped as bytes.
//!
//! [`Artifact::to_bytes`] writes version [`FORMAT_VERSION`]; [`Artifact::from_bytes`] reads it
//! back and returns an artifact that has passed [`Artifact::validate`], so
//! `from_bytes(&a.to_bytes()?)? == a` for every valid artifact `a`.
//!
//! # Layout (version 2; version 1 had a 64-byte header without the last-level cache size)
//!
//! Little-endian throughout. A 72-byte header, a table of six 24-byte section entries, then
//! the sections, each starting at the first multiple of [`SECTION_ALIGN`] after the previous
//! one (or after the table), padded with zero bytes:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | [`MAGIC`] |
//! | 8 | 4 | format version ([`FORMAT_VERSION`]) |
//! | 12 | 4 | dispatch ABI version ([`crate::abi::ABI_VERSION`]) |
//! | 16 | 4 | architecture: 1 x86-64, 2 AArch64 |
//! | 20 | 4 | section count (6) |
//! | 24 | 8 | CPU features the code uses ([`crate::FeatureSet::bits`]) |
//! | 32 | 8 | blocking: L1d bytes the kernels were tiled for ([`crate::Blocking`]) |
//! | 40 | 8 | blocking: L2 bytes |
//! | 48 | 8 | total file length in bytes |
//! | 56 | 4 | CRC-32 (IEEE) of every byte of the file except these four |
//! | 60 | 4 | flags: bit 0 set when runs flush subnormals ([`crate::Artifact::flush_subnormals`]), bit 1 when tile fills prefetch only rows off a line ([`crate::Blocking::skip_scattered_prefetch`]); the other bits zero |
//! | 64 | 8 | blocking: last-level cache bytes |
//!
//! A section entry is `kind u32, reserved u32 (zero), offset u64, length u64`; the kinds are
//! [`SectionKind`]s, listed once each in their numeric order. `code` and `constants` are the raw
//! bytes; `kernels`, `plan`, `setup` and `launch` are the structures of [`crate::KernelEntry`],
//! [`crate::ArtifactPlan`] and [`crate::LaunchPlan`] written field by field (counts as `u32`,
//! strings as a `u32` byte length and UTF-8, tags as `u8`; see `write.rs`, whose functions the
//! reader mirrors one for one).
//!
//! # What reading checks, in order
//!
//! 1. the magic ([`SerialError::BadMagic`], naming what the input looks like instead);
//! 2. the format version ([`SerialError::UnsupportedVersion`] for any other, before any other
//!    field is trusted, so a newer layout is reported as such and not as corruption);
//! 3. the header and declared length ([`SerialError::Truncated`],
//!    [`SerialError::LengthMismatch`]);
//! 4. the checksum ([`SerialError::ChecksumMismatch`]): any single changed byte, and any burst
//!    of up to 32 changed bits, is caught here;
//! 5. the header fields and the section table ([`SerialError::BadHeader`],
//!    [`SerialError::BadSectionTable`]): every section in bounds, aligned, in order;
//! 6. each section's contents ([`SerialError::BadSection`], with the byte offset): every count
//!    and length is checked against the bytes that remain *before* anything is allocated, so
//!    reading allocates in proportion to the input;
//! 7. [`Artifact::validate`] ([`SerialError::Invalid`]).
//!
//! Reading never panics. The encoding is canonical (one byte string per artifact; padding and
//! reserved fields must be zero), so a file that reads back always writes back identically.
//!
//! # What reading does not check
//!
//! The checksum detects accidents, not tampering, and validation proves the *plan* stays in
//! bounds, not what the machine code does. Whether the code may run on this host (its
//! architecture and CPU features) is the runtime's check at load time. Loading code from a
//! file is as trustworthy as the file: only load artifacts that accy wrote.
//!
//! # Position independence
//!
//! The `code` section is stored as emitted and loaded at whatever address the runtime maps it:
//! generated code refers to no absolute address (branches and calls between kernels are
//! PC-relative, imports are called through the table in [`crate::DispatchState`], memory is
//! reached through the bindings), so no relocation is needed.

use std::fmt;

use thiserror::Error;

use crate::{Arch, Artifact, ArtifactError, PlanSummary};

mod read;
mod write;

#[cfg(test)]
mod tests;

/// The first eight bytes of every artifact file: `89 41 43 43 59 41 0D 0A` (`\x89ACCYA\r\n`).
///
/// Like the wire format's magic, the non-ASCII first byte and the CR LF tail make a text-mode
/// transfer visibly break it; the sixth byte (`A`, for artifact) tells it from wire bytes.
pub const MAGIC: [u8; 8] = [0x89, b'A', b'C', b'C', b'Y', b'A', 0x0D, 0x0A];

/// The format version [`Artifact::to_bytes`] writes and the only one [`Artifact::from_bytes`]
/// reads. An artifact is tied to the compiler that made it (its code follows one ABI), so
/// there are no minor versions: a file of any other version is refused with
/// [`SerialError::UnsupportedVersion`], and recompiling the program is the remedy.
pub const FORMAT_VERSION: u32 = 2;

/// Every section starts at a multiple of this many bytes from the start of the file.
pub const SECTION_ALIGN: usize = 16;

/// Bytes of the fixed header.
pub(crate) const HEADER_LEN: usize = 72;
/// Bytes of one section-table entry.
pub(crate) const ENTRY_LEN: usize = 24;
/// Where the checksum field sits in the header.
pub(crate) const CHECKSUM_AT: usize = 56;
/// The header flag ([`CHECKSUM_AT`] + 4) of an artifact whose runs flush subnormals.
pub(crate) const FLAG_FLUSH_SUBNORMALS: u32 = 1;
/// The header flag of an artifact blocked with [`crate::Blocking::skip_scattered_prefetch`].
pub(crate) const FLAG_SKIP_SCATTERED_PREFETCH: u32 = 2;

/// The sections of an artifact file, with their fixed numbers (their `kind` in the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SectionKind {
    /// [`Artifact::code`], raw.
    Code = 1,
    /// [`Artifact::constants`], raw.
    Constants = 2,
    /// [`Artifact::kernels`].
    Kernels = 3,
    /// [`Artifact::plan`].
    Plan = 4,
    /// [`Artifact::setup`].
    Setup = 5,
    /// [`Artifact::launch`].
    Launch = 6,
}

impl SectionKind {
    /// Every section, in the order the table lists them and the file holds them.
    pub const ALL: [SectionKind; 6] = [
        SectionKind::Code,
        SectionKind::Constants,
        SectionKind::Kernels,
        SectionKind::Plan,
        SectionKind::Setup,
        SectionKind::Launch,
    ];

    /// The number stored in the section table.
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// The lowercase name used in messages.
    pub const fn name(self) -> &'static str {
        match self {
            SectionKind::Code => "code",
            SectionKind::Constants => "constants",
            SectionKind::Kernels => "kernels",
            SectionKind::Plan => "plan",
            SectionKind::Setup => "setup",
            SectionKind::Launch => "launch",
        }
    }
}

impl fmt::Display for SectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The architecture's number in the header.
pub(crate) const fn arch_code(arch: Arch) -> u32 {
    match arch {
        Arch::X86_64 => 1,
        Arch::Aarch64 => 2,
    }
}

/// The architecture with header number `code`, if any.
pub(crate) fn arch_from_code(code: u32) -> Option<Arch> {
    Arch::ALL.into_iter().find(|a| arch_code(*a) == code)
}

/// Why [`Artifact::from_bytes`] refused its input, or [`Artifact::to_bytes`] could not write.
///
/// A caller branches on the variant: [`SerialError::UnsupportedVersion`] means "recompile with
/// this accy"; the others mean the bytes are not a whole, undamaged artifact (or, for
/// [`SerialError::Invalid`], one that fails validation). Messages carry the numbers.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SerialError {
    /// The input does not start with [`MAGIC`].
    #[error("not an accy artifact: it starts with {found} instead of the magic {expected}{}", looks_like_note(*.looks_like))]
    BadMagic {
        /// The first bytes of the input (up to eight), in hex.
        found: String,
        /// The magic expected, in hex.
        expected: String,
        /// What the input seems to be instead, when recognisable.
        looks_like: Option<&'static str>,
    },
    /// An accy artifact of a format version this reader does not implement.
    #[error(
        "unsupported artifact format version {found} (this reader implements version \
         {supported}): recompile the program with this accy"
    )]
    UnsupportedVersion {
        /// The file's version.
        found: u32,
        /// [`FORMAT_VERSION`].
        supported: u32,
    },
    /// The input ends before something it declares.
    #[error("truncated artifact: the {what} needs {needed} bytes, but the input has {available}")]
    Truncated {
        /// What was cut off: `magic`, `version`, `header`, `file`.
        what: &'static str,
        /// Bytes needed from the start of the file.
        needed: u64,
        /// Bytes the input has.
        available: u64,
    },
    /// The input is longer than the length its header declares.
    #[error("the artifact declares {declared} bytes, but the input has {actual}")]
    LengthMismatch {
        /// The header's total length.
        declared: u64,
        /// The input's length.
        actual: u64,
    },
    /// The bytes are not the ones written: the stored CRC-32 differs from the computed one.
    #[error("artifact checksum mismatch: stored {stored:#010x}, computed {computed:#010x} (the file is damaged)")]
    ChecksumMismatch {
        /// The header's checksum.
        stored: u32,
        /// The checksum of the input.
        computed: u32,
    },
    /// A header field has a value no writer produces.
    #[error("bad artifact header: {field} is {value:#x}: {reason}")]
    BadHeader {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The section table is malformed: a wrong count or kind, a section out of bounds, out of
    /// order or misaligned.
    #[error("bad artifact section table: {reason}")]
    BadSectionTable {
        /// What is wrong, with the numbers.
        reason: String,
    },
    /// A section's contents are malformed.
    #[error("bad artifact {section} section at byte {offset}: {reason}")]
    BadSection {
        /// The section.
        section: SectionKind,
        /// Byte offset from the start of the file.
        offset: u64,
        /// What is wrong, with the numbers.
        reason: String,
    },
    /// A list or string is too long for the format's `u32` counts (writing only).
    #[error(
        "cannot write the artifact: {what} has {len} entries, more than the format's limit {}",
        u32::MAX
    )]
    TooLong {
        /// What is too long.
        what: &'static str,
        /// Its length.
        len: usize,
    },
    /// A value this version of the format has no code for (writing only), e.g. a dtype added
    /// to the IR after it.
    #[error("cannot write the artifact: {0}")]
    Unencodable(String),
    /// The bytes decode, but the artifact fails [`Artifact::validate`].
    #[error("invalid artifact: {0}")]
    Invalid(#[from] ArtifactError),
}

fn looks_like_note(looks_like: Option<&'static str>) -> String {
    looks_like.map_or_else(String::new, |what| format!(" (this looks like {what})"))
}

/// True when `bytes` start with [`MAGIC`], so a host can tell an artifact from a program
/// (wire bytes or text) before choosing a reader. It says nothing about the rest.
pub fn has_magic(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

impl Artifact {
    /// Writes the artifact as version [`FORMAT_VERSION`] bytes (layout in the module
    /// documentation). The bytes hold everything but the named weights, which a loader binds
    /// by name as for a freshly compiled artifact. Fails only for an artifact the format
    /// cannot express: a list longer than `u32::MAX` entries, or a dtype it has no code for.
    /// It does not validate; [`Artifact::from_bytes`] will.
    pub fn to_bytes(&self) -> Result<Vec<u8>, SerialError> {
        write::write(self)
    }

    /// Reads an artifact written by [`Artifact::to_bytes`] and validates it; on success the
    /// artifact is exactly the one written and has passed [`Artifact::validate`]. Any other
    /// input is a [`SerialError`] (the checks and their order are in the module
    /// documentation); reading never panics and allocates in proportion to `bytes.len()`.
    /// The result owns its data: `bytes` may be freed afterwards.
    pub fn from_bytes(bytes: &[u8]) -> Result<Artifact, SerialError> {
        Ok(Artifact::from_bytes_validated(bytes)?.into_artifact())
    }

    /// [`Artifact::from_bytes`], keeping what validation computed, so a loader need not
    /// validate again.
    pub fn from_bytes_validated(bytes: &[u8]) -> Result<Validated, SerialError> {
        let artifact = read::read(bytes)?;
        let summary = artifact.validate()?;
        Ok(Validated { artifact, summary })
    }
}

/// An artifact that has passed [`Artifact::validate`], with the [`PlanSummary`] validation
/// computed. Only validation makes one, and neither part can be changed afterwards, so the
/// summary always describes the artifact.
#[derive(Clone, Debug)]
pub struct Validated {
    artifact: Artifact,
    summary: PlanSummary,
}

impl Validated {
    /// The artifact.
    pub fn artifact(&self) -> &Artifact {
        &self.artifact
    }

    /// What validation computed for it.
    pub fn summary(&self) -> &PlanSummary {
        &self.summary
    }

    /// The artifact alone.
    pub fn into_artifact(self) -> Artifact {
        self.artifact
    }

    /// The artifact and its validation summary, for a loader that takes the artifact apart
    /// instead of copying from it.
    pub fn into_parts(self) -> (Artifact, PlanSummary) {
        (self.artifact, self.summary)
    }
}
