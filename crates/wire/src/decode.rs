//! The decoder's top level: header, section table, parameters and outputs. Instructions are
//! in `decode_op`.

use accy_ir::{Dims, Instruction, Output, Param, Program, Type, ValueId};

use crate::codes::{self, section, SECTIONS, SECTION_HEADER_LEN, SECTION_REQUIRED};
use crate::decode_op::{instruction, MIN_INSTRUCTION_BYTES};
use crate::magic::read_header;
use crate::reader::{invalid, FileVersion, Reader};
use crate::DecodeError;

/// Decodes wire bytes into a [`Program`].
///
/// Structural only: the result is made of well-formed IR values (see the crate doc) but has
/// not been verified; run [`accy_ir::verify`] before trusting it. The program owns all its
/// data. Errors:
/// - [`DecodeError::UnsupportedVersion`]: another major version; a required section this
///   decoder does not know; or, in a file of a newer minor version, a code this version does
///   not define.
/// - [`DecodeError::InvalidProgram`]: anything else, with the byte offset of the problem.
///
/// Never panics, and allocates at most a small multiple of `bytes.len()`.
pub fn decode(bytes: &[u8]) -> Result<Program, DecodeError> {
    let mut r = Reader::new(bytes);
    let header = read_header(&mut r, bytes)?;
    let version = header.version;
    let count_at = r.pos() - 4;
    let needed = u64::from(header.sections) * SECTION_HEADER_LEN as u64;
    if needed > r.remaining() as u64 {
        return Err(invalid(
            count_at,
            format!(
                "section count {} needs at least {needed} bytes of section headers, but only {} \
                 bytes follow the header",
                header.sections,
                r.remaining()
            ),
        ));
    }

    let mut params: Option<Vec<Param>> = None;
    let mut instructions: Option<Vec<Instruction>> = None;
    let mut outputs: Option<Vec<Output>> = None;
    // Index into SECTIONS of the next known section allowed; known sections come in order.
    let mut next_known = 0;
    for index in 0..header.sections {
        let at = r.pos();
        let id = r.u16("section id")?;
        let flags = r.u16("section flags")?;
        let len = r.u64("section length")?;
        if flags & !SECTION_REQUIRED != 0 && !version.is_newer_minor() {
            return Err(invalid(
                at + 2,
                format!("section {index} (id {id:#06x}) sets reserved flag bits {flags:#06x}"),
            ));
        }
        let Some(pos) = SECTIONS.iter().position(|&(known, _)| known == id) else {
            skip_unknown(&mut r, version, at, index, id, flags, len)?;
            continue;
        };
        let name = SECTIONS[pos].1;
        if pos < next_known {
            return Err(invalid(
                at,
                format!(
                    "section `{name}` appears twice or out of order (sections must be {})",
                    section_order()
                ),
            ));
        }
        next_known = pos + 1;
        let mut s = r.sub(len, section_region(id))?;
        match id {
            section::PARAMS => params = Some(read_params(&mut s, version)?),
            section::INSTRUCTIONS => instructions = Some(read_instructions(&mut s, version)?),
            _ => outputs = Some(read_outputs(&mut s, version)?),
        }
        if s.remaining() > 0 && !version.is_newer_minor() {
            return Err(invalid(
                s.pos(),
                format!(
                    "{} unread bytes at the end of section `{name}`",
                    s.remaining()
                ),
            ));
        }
    }
    if r.remaining() > 0 {
        return Err(invalid(
            r.pos(),
            format!(
                "{} trailing bytes after the last of the {} sections the header declares",
                r.remaining(),
                header.sections
            ),
        ));
    }
    let missing = |name: &str| {
        invalid(
            bytes.len(),
            format!("the required section `{name}` is missing"),
        )
    };
    Ok(Program {
        params: params.ok_or_else(|| missing("params"))?,
        instructions: instructions.ok_or_else(|| missing("instructions"))?,
        outputs: outputs.ok_or_else(|| missing("outputs"))?,
    })
}

/// Handles a section id this version does not define: a required one means the file needs a
/// feature this decoder lacks; an optional one is skipped if a newer minor version may have
/// added it, and is corruption otherwise.
fn skip_unknown(
    r: &mut Reader<'_>,
    version: FileVersion,
    at: usize,
    index: u32,
    id: u16,
    flags: u16,
    len: u64,
) -> Result<(), DecodeError> {
    if flags & SECTION_REQUIRED != 0 {
        return Err(version.unsupported(
            at,
            format!(
                "section {index} has id {id:#06x}, which is required but unknown to this decoder"
            ),
        ));
    }
    if !version.is_newer_minor() {
        return Err(invalid(
            at,
            format!(
                "section {index} has unknown id {id:#06x}; a file of this minor version has only \
                 the sections {}",
                section_order()
            ),
        ));
    }
    r.sub(len, "unknown optional section")?;
    Ok(())
}

fn section_order() -> String {
    let names: Vec<String> = SECTIONS.iter().map(|(_, n)| format!("`{n}`")).collect();
    names.join(", ")
}

fn section_region(id: u16) -> &'static str {
    match id {
        section::PARAMS => "section `params`",
        section::INSTRUCTIONS => "section `instructions`",
        _ => "section `outputs`",
    }
}

/// The fewest bytes an encoded type occupies: its dtype code and an empty dims list's count.
pub(crate) const MIN_TYPE_BYTES: usize = 1 + 8;

/// A dims list: u64 count (at most `MAX_RANK`), then that many u64s.
pub(crate) fn dims(r: &mut Reader<'_>, what: &str) -> Result<Dims, DecodeError> {
    let n = r.rank_count(what)?;
    let mut out = Dims::new();
    for _ in 0..n {
        out.push(r.u64(what)?);
    }
    Ok(out)
}

/// A type: dtype code, then a dims list.
pub(crate) fn ty(r: &mut Reader<'_>, version: FileVersion) -> Result<Type, DecodeError> {
    let dtype = dtype(r, version)?;
    let dims = dims(r, "dims")?;
    Ok(Type { dtype, dims })
}

/// A dtype code.
pub(crate) fn dtype(
    r: &mut Reader<'_>,
    version: FileVersion,
) -> Result<accy_ir::DType, DecodeError> {
    let at = r.pos();
    let code = r.u8("dtype")?;
    if let Some(d) = codes::dtype_from_code(code) {
        return Ok(d);
    }
    match codes::RESERVED_DTYPES.iter().find(|&&(c, _)| c == code) {
        Some((_, name)) if !version.is_newer_minor() => Err(invalid(
            at,
            format!(
                "dtype code {code:#04x} is reserved for {name}, which this version does not define"
            ),
        )),
        _ => Err(version.unknown_code(at, "dtype", code)),
    }
}

fn read_params(r: &mut Reader<'_>, version: FileVersion) -> Result<Vec<Param>, DecodeError> {
    // kind, name length, type
    const MIN_PARAM_BYTES: usize = 1 + 8 + MIN_TYPE_BYTES;
    let n = r.count(MIN_PARAM_BYTES, "parameter count")?;
    let mut params = Vec::with_capacity(n);
    for i in 0..n {
        let p = read_param(r, version).map_err(|e| e.within(|| format!("parameter {i}")))?;
        params.push(p);
    }
    Ok(params)
}

fn read_param(r: &mut Reader<'_>, version: FileVersion) -> Result<Param, DecodeError> {
    let at = r.pos();
    let code = r.u8("parameter kind")?;
    let kind = codes::param_kind_from_code(code)
        .ok_or_else(|| version.unknown_code(at, "parameter kind", code))?;
    let len = r.count(1, "name length")?;
    let name_at = r.pos();
    let raw = r.take(len, "name")?;
    let name = std::str::from_utf8(raw)
        .map_err(|e| {
            invalid(
                name_at + e.valid_up_to(),
                "name is not valid UTF-8".to_string(),
            )
        })?
        .to_owned();
    let ty = ty(r, version)?;
    Ok(Param { kind, name, ty })
}

fn read_instructions(
    r: &mut Reader<'_>,
    version: FileVersion,
) -> Result<Vec<Instruction>, DecodeError> {
    let n = r.count(MIN_INSTRUCTION_BYTES, "instruction count")?;
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        let inst = instruction(r, version).map_err(|e| e.within(|| format!("instruction {k}")))?;
        out.push(inst);
    }
    Ok(out)
}

fn read_outputs(r: &mut Reader<'_>, version: FileVersion) -> Result<Vec<Output>, DecodeError> {
    // value id, flags
    const MIN_OUTPUT_BYTES: usize = 4 + 1;
    let n = r.count(MIN_OUTPUT_BYTES, "output count")?;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let o = read_output(r, version).map_err(|e| e.within(|| format!("output {i}")))?;
        out.push(o);
    }
    Ok(out)
}

fn read_output(r: &mut Reader<'_>, version: FileVersion) -> Result<Output, DecodeError> {
    let value = ValueId(r.u32("output value")?);
    let at = r.pos();
    let flags = r.u8("output flags")?;
    if flags > 1 {
        return Err(if version.is_newer_minor() {
            version.unsupported(
                at,
                format!("output flags {flags:#04x} set bits this version does not define"),
            )
        } else {
            invalid(at, format!("output flags {flags:#04x} set reserved bits (only bit 0, donation, is defined)"))
        });
    }
    let donates = if flags == 1 {
        Some(r.u32("donated input number")?)
    } else {
        None
    };
    Ok(Output { value, donates })
}
