//! Reading an [`Artifact`]: header, checksum, section table, then each section, every length
//! checked against the bytes that remain before it is used or anything is allocated.

use accy_ir::{Dims, Type, MAX_RANK};

use super::write::{access_code, checksum, command, role, DTYPE_CODES};
use super::{arch_from_code, SectionKind, SerialError, CHECKSUM_AT, ENTRY_LEN, HEADER_LEN};
use super::{
    FLAG_FLUSH_SUBNORMALS, FLAG_SKIP_SCATTERED_PREFETCH, FORMAT_VERSION, MAGIC, SECTION_ALIGN,
};
use crate::{
    Access, Artifact, ArtifactPlan, Binding, Blocking, Command, DerivedSource, FeatureSet,
    KernelEntry, LaunchPlan, Region, Slot, SlotId, SlotRole, TargetSpec,
};

/// Formats whose first bytes identify them, for [`SerialError::BadMagic`].
const KNOWN_FORMATS: [(&[u8], &str); 5] = [
    (
        b"\x89ACCY\r\n\x1a",
        "accy wire bytes (a program: compile it, or pass it to `accy run` directly)",
    ),
    (b"\x7fELF", "an ELF executable or object file"),
    (b"\x93NUMPY", "a NumPy .npy array file"),
    (b"PK\x03\x04", "a zip archive"),
    (b"\x1f\x8b", "gzip-compressed data (decompress it first)"),
];

fn hex(bytes: &[u8]) -> String {
    let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.join(" ")
}

fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

fn truncated(what: &'static str, needed: usize, available: usize) -> SerialError {
    SerialError::Truncated {
        what,
        needed: needed as u64,
        available: available as u64,
    }
}

fn table_error(reason: String) -> SerialError {
    SerialError::BadSectionTable { reason }
}

/// Checks the magic, version, length and checksum, in that order (see the module doc).
fn check_envelope(bytes: &[u8]) -> Result<(), SerialError> {
    let len = bytes.len();
    if !bytes.starts_with(&MAGIC) {
        if len < MAGIC.len() && MAGIC.starts_with(bytes) {
            return Err(truncated("magic", MAGIC.len(), len));
        }
        let looks_like = KNOWN_FORMATS
            .iter()
            .find(|(prefix, _)| bytes.starts_with(prefix))
            .map(|(_, what)| *what);
        return Err(SerialError::BadMagic {
            found: hex(&bytes[..len.min(MAGIC.len())]),
            expected: hex(&MAGIC),
            looks_like,
        });
    }
    if len < 12 {
        return Err(truncated("version", 12, len));
    }
    let version = le_u32(bytes, 8);
    if version != FORMAT_VERSION {
        return Err(SerialError::UnsupportedVersion {
            found: version,
            supported: FORMAT_VERSION,
        });
    }
    if len < HEADER_LEN {
        return Err(truncated("header", HEADER_LEN, len));
    }
    let declared = le_u64(bytes, 48);
    if declared > len as u64 {
        return Err(SerialError::Truncated {
            what: "file",
            needed: declared,
            available: len as u64,
        });
    }
    if declared < len as u64 {
        return Err(SerialError::LengthMismatch {
            declared,
            actual: len as u64,
        });
    }
    let stored = le_u32(bytes, CHECKSUM_AT);
    let computed = checksum(bytes);
    if stored != computed {
        return Err(SerialError::ChecksumMismatch { stored, computed });
    }
    Ok(())
}

/// Reads the section table and returns each section's bytes with its file offset, in
/// [`SectionKind::ALL`] order.
fn sections(bytes: &[u8]) -> Result<[(&[u8], usize); 6], SerialError> {
    let count = le_u32(bytes, 20);
    if count as usize != SectionKind::ALL.len() {
        return Err(table_error(format!(
            "{count} sections, but version {FORMAT_VERSION} has exactly {}",
            SectionKind::ALL.len()
        )));
    }
    let table_end = HEADER_LEN + ENTRY_LEN * SectionKind::ALL.len();
    if bytes.len() < table_end {
        return Err(table_error(format!(
            "the table ends at byte {table_end}, past the end of the {}-byte file",
            bytes.len()
        )));
    }
    let mut found = [(&bytes[..0], 0); 6];
    let mut end = table_end;
    for (i, kind) in SectionKind::ALL.into_iter().enumerate() {
        let at = HEADER_LEN + ENTRY_LEN * i;
        let (code, reserved) = (le_u32(bytes, at), le_u32(bytes, at + 4));
        let (offset, len) = (le_u64(bytes, at + 8), le_u64(bytes, at + 16));
        if code != kind.code() || reserved != 0 {
            return Err(table_error(format!(
                "entry {i} has kind {code} and reserved field {reserved:#x}; expected kind {} \
                 ({kind}) and 0",
                kind.code()
            )));
        }
        let expected = end.next_multiple_of(SECTION_ALIGN);
        if offset != expected as u64 {
            return Err(table_error(format!(
                "the {kind} section starts at byte {offset}; it must start at {expected}, the \
                 first multiple of {SECTION_ALIGN} after the previous section"
            )));
        }
        let section_end = usize::try_from(len)
            .ok()
            .and_then(|len| expected.checked_add(len))
            .filter(|e| *e <= bytes.len())
            .ok_or_else(|| {
                table_error(format!(
                    "the {kind} section ({len} bytes at {offset}) ends past the end of the \
                     {}-byte file",
                    bytes.len()
                ))
            })?;
        if bytes[end..expected].iter().any(|b| *b != 0) {
            return Err(table_error(format!(
                "padding before the {kind} section (bytes {end}..{expected}) is not zero"
            )));
        }
        found[i] = (&bytes[expected..section_end], expected);
        end = section_end;
    }
    if end != bytes.len() {
        return Err(table_error(format!(
            "the sections end at byte {end}, but the file has {} bytes",
            bytes.len()
        )));
    }
    Ok(found)
}

pub(super) fn read(bytes: &[u8]) -> Result<Artifact, SerialError> {
    check_envelope(bytes)?;
    let abi_version = le_u32(bytes, 12);
    let arch_field = le_u32(bytes, 16);
    let arch = arch_from_code(arch_field).ok_or(SerialError::BadHeader {
        field: "architecture",
        value: u64::from(arch_field),
        reason: "not a known architecture (1 x86-64, 2 AArch64)",
    })?;
    let feature_bits = le_u64(bytes, 24);
    let features =
        FeatureSet::from_bits(feature_bits).map_err(|unknown| SerialError::BadHeader {
            field: "CPU features",
            value: unknown,
            reason: "these feature bits name no CPU feature this accy knows",
        })?;
    let flags = le_u32(bytes, CHECKSUM_AT + 4);
    if flags & !(FLAG_FLUSH_SUBNORMALS | FLAG_SKIP_SCATTERED_PREFETCH) != 0 {
        return Err(SerialError::BadHeader {
            field: "flags",
            value: u64::from(flags),
            reason: "only bits 0 (flush subnormals) and 1 (no scattered prefetches) are defined",
        });
    }
    let [code, constants, kernels, plan, setup, launch] = sections(bytes)?;
    Ok(Artifact {
        abi_version,
        target: TargetSpec::new(arch, features),
        blocking: Blocking {
            l1d: le_u64(bytes, 32),
            l2: le_u64(bytes, 40),
            llc: le_u64(bytes, 64),
            skip_scattered_prefetch: flags & FLAG_SKIP_SCATTERED_PREFETCH != 0,
        },
        flush_subnormals: flags & FLAG_FLUSH_SUBNORMALS != 0,
        code: code.0.to_vec(),
        constants: constants.0.to_vec(),
        kernels: Reader::new(kernels, SectionKind::Kernels).whole(read_kernels)?,
        plan: Reader::new(plan, SectionKind::Plan).whole(read_plan)?,
        setup: Reader::new(setup, SectionKind::Setup).whole(read_launch)?,
        launch: Reader::new(launch, SectionKind::Launch).whole(read_launch)?,
    })
}

/// A cursor over one section.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The section's offset in the file, for messages.
    base: usize,
    section: SectionKind,
}

impl<'a> Reader<'a> {
    fn new((bytes, base): (&'a [u8], usize), section: SectionKind) -> Reader<'a> {
        Reader {
            bytes,
            pos: 0,
            base,
            section,
        }
    }

    fn error(&self, reason: String) -> SerialError {
        SerialError::BadSection {
            section: self.section,
            offset: (self.base + self.pos) as u64,
            reason,
        }
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// Runs `f` and requires that it consumed the whole section.
    fn whole<T>(
        mut self,
        f: fn(&mut Reader<'a>) -> Result<T, SerialError>,
    ) -> Result<T, SerialError> {
        let value = f(&mut self)?;
        if self.remaining() != 0 {
            return Err(self.error(format!("{} bytes left over", self.remaining())));
        }
        Ok(value)
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], SerialError> {
        if n > self.remaining() {
            return Err(self.error(format!(
                "{what} needs {n} bytes, but the section has {} left",
                self.remaining()
            )));
        }
        let taken = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(taken)
    }

    fn u8(&mut self, what: &str) -> Result<u8, SerialError> {
        Ok(self.take(1, what)?[0])
    }

    fn u32(&mut self, what: &str) -> Result<u32, SerialError> {
        let mut b = [0; 4];
        b.copy_from_slice(self.take(4, what)?);
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self, what: &str) -> Result<u64, SerialError> {
        let mut b = [0; 8];
        b.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(b))
    }

    /// A count of items each at least `min_item` bytes long, checked against the bytes left.
    fn count(&mut self, what: &str, min_item: usize) -> Result<usize, SerialError> {
        let at = self.pos;
        let n = self.u32(what)? as usize;
        if n.saturating_mul(min_item) > self.remaining() {
            self.pos = at;
            return Err(self.error(format!(
                "{what} has {n} entries of at least {min_item} bytes, but the section has {} \
                 bytes left",
                self.remaining() - 4
            )));
        }
        Ok(n)
    }

    fn string(&mut self, what: &str) -> Result<String, SerialError> {
        let len = self.u32(what)? as usize;
        let at = self.pos;
        let raw = self.take(len, what)?;
        match std::str::from_utf8(raw) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => {
                self.pos = at;
                Err(self.error(format!("{what} is not UTF-8: {e}")))
            }
        }
    }

    fn bad_tag(&mut self, what: &str, tag: u8) -> SerialError {
        self.pos -= 1;
        self.error(format!("{what} has unknown tag {tag}"))
    }
}

fn read_kernels(r: &mut Reader<'_>) -> Result<Vec<KernelEntry>, SerialError> {
    // Name length, offset, length, worker scratch.
    let n = r.count("the kernel list", 4 + 4 + 4 + 8)?;
    let mut kernels = Vec::with_capacity(n);
    for _ in 0..n {
        kernels.push(KernelEntry {
            name: r.string("a kernel name")?,
            offset: r.u32("a kernel offset")?,
            len: r.u32("a kernel length")?,
            worker_scratch: r.u64("a kernel's worker scratch")?,
        });
    }
    Ok(kernels)
}

fn read_plan(r: &mut Reader<'_>) -> Result<ArtifactPlan, SerialError> {
    // Role tag, byte size, alignment, type flag.
    let n = r.count("the slot list", 1 + 8 + 8 + 1)?;
    let mut slots = Vec::with_capacity(n);
    for _ in 0..n {
        slots.push(read_slot(r)?);
    }
    Ok(ArtifactPlan { slots })
}

fn read_slot(r: &mut Reader<'_>) -> Result<Slot, SerialError> {
    let tag = r.u8("a slot role")?;
    let role = match tag {
        role::INPUT => SlotRole::Input(r.u32("an input number")?),
        role::OUTPUT => SlotRole::Output(r.u32("an output number")?),
        role::WEIGHT => SlotRole::Weight(r.string("a weight name")?),
        role::CONSTANT => SlotRole::Constant {
            offset: r.u64("a constant offset")?,
        },
        role::SCRATCH => SlotRole::Scratch,
        role::DERIVED => {
            let source = match r.u8("a derived slot's source")? {
                role::FROM_WEIGHT => DerivedSource::Weight(r.string("a weight name")?),
                role::FROM_CONSTANT => DerivedSource::Constant(SlotId(r.u32("a slot id")?)),
                other => return Err(r.bad_tag("a derived slot's source", other)),
            };
            SlotRole::Derived {
                source,
                layout: r.string("a layout")?,
            }
        }
        other => return Err(r.bad_tag("a slot role", other)),
    };
    let byte_size = r.u64("a slot size")?;
    let alignment = r.u64("a slot alignment")?;
    let ty = match r.u8("a slot's type flag")? {
        0 => None,
        1 => Some(read_type(r)?),
        other => return Err(r.bad_tag("a slot's type flag", other)),
    };
    Ok(Slot {
        role,
        byte_size,
        alignment,
        ty,
    })
}

fn read_type(r: &mut Reader<'_>) -> Result<Type, SerialError> {
    let code = r.u8("a dtype")?;
    let dtype = DTYPE_CODES
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(d, _)| *d)
        .ok_or_else(|| r.bad_tag("a dtype", code))?;
    let rank = r.u8("a rank")? as usize;
    if rank > MAX_RANK {
        r.pos -= 1;
        return Err(r.error(format!("rank {rank} exceeds the IR's limit {MAX_RANK}")));
    }
    let mut dims = Dims::new();
    for _ in 0..rank {
        dims.push(r.u64("a dim")?);
    }
    Ok(Type { dtype, dims })
}

fn read_launch(r: &mut Reader<'_>) -> Result<LaunchPlan, SerialError> {
    // The smallest command is a copy: tag and two regions.
    let n = r.count("the command list", 1 + 2 * REGION_LEN)?;
    let mut commands = Vec::with_capacity(n);
    for _ in 0..n {
        let tag = r.u8("a command tag")?;
        commands.push(match tag {
            command::FILL => Command::Fill {
                dst: read_region(r)?,
                pattern: r.u32("a fill pattern")?,
                width: r.u8("a fill width")?,
            },
            command::COPY => Command::Copy {
                src: read_region(r)?,
                dst: read_region(r)?,
            },
            tag @ (command::DISPATCH | command::CHAINED_DISPATCH) => {
                let kernel = r.u32("a kernel index")?;
                let workgroups = r.u32("a workgroup count")?;
                let n = r.count("a dispatch's bindings", REGION_LEN + 1)?;
                let mut bindings = Vec::with_capacity(n);
                for _ in 0..n {
                    let region = read_region(r)?;
                    let code = r.u8("an access")?;
                    let access = [Access::Read, Access::Write, Access::ReadWrite]
                        .into_iter()
                        .find(|a| access_code(*a) == code)
                        .ok_or_else(|| r.bad_tag("an access", code))?;
                    bindings.push(Binding { region, access });
                }
                let n = r.count("a dispatch's scalars", 8)?;
                let mut scalars = Vec::with_capacity(n);
                for _ in 0..n {
                    scalars.push(r.u64("a scalar")?);
                }
                Command::Dispatch {
                    kernel,
                    bindings,
                    scalars,
                    workgroups,
                    chained: tag == command::CHAINED_DISPATCH,
                }
            }
            other => return Err(r.bad_tag("a command", other)),
        });
    }
    Ok(LaunchPlan { commands })
}

/// Bytes of one region: slot, offset, length.
const REGION_LEN: usize = 4 + 8 + 8;

fn read_region(r: &mut Reader<'_>) -> Result<Region, SerialError> {
    Ok(Region {
        slot: SlotId(r.u32("a slot id")?),
        offset: r.u64("a region offset")?,
        len: r.u64("a region length")?,
    })
}
