//! Writing an [`Artifact`]: the header, the section table, then each section. `read.rs`
//! mirrors every function here.

use accy_ir::{DType, Type};

use super::{arch_code, SectionKind, SerialError, CHECKSUM_AT, ENTRY_LEN, HEADER_LEN, MAGIC};
use super::{FLAG_FLUSH_SUBNORMALS, FLAG_SKIP_SCATTERED_PREFETCH, FORMAT_VERSION, SECTION_ALIGN};
use crate::{
    Access, Artifact, ArtifactPlan, Binding, Command, DerivedSource, KernelEntry, LaunchPlan,
    Region, Slot, SlotRole,
};

/// The dtype's number in the format. Numbers are fixed: a new dtype gets a new number.
pub(super) fn dtype_code(dtype: DType) -> Option<u8> {
    DTYPE_CODES
        .iter()
        .find(|(d, _)| *d == dtype)
        .map(|(_, code)| *code)
}

/// The dtypes this version of the format can hold, with their numbers.
pub(super) const DTYPE_CODES: [(DType, u8); 6] = [
    (DType::F32, 0),
    (DType::F64, 1),
    (DType::I32, 2),
    (DType::I64, 3),
    (DType::U8, 4),
    (DType::Bool, 5),
];

/// Tags of [`SlotRole`] variants.
pub(super) mod role {
    pub(crate) const INPUT: u8 = 0;
    pub(crate) const OUTPUT: u8 = 1;
    pub(crate) const WEIGHT: u8 = 2;
    pub(crate) const CONSTANT: u8 = 3;
    pub(crate) const SCRATCH: u8 = 4;
    pub(crate) const DERIVED: u8 = 5;
    /// [`crate::DerivedSource`] tags.
    pub(crate) const FROM_WEIGHT: u8 = 0;
    pub(crate) const FROM_CONSTANT: u8 = 1;
}

/// Tags of [`Command`] variants.
pub(super) mod command {
    pub(crate) const FILL: u8 = 0;
    pub(crate) const COPY: u8 = 1;
    pub(crate) const DISPATCH: u8 = 2;
    /// A dispatch chained to the next command (same fields as [`DISPATCH`]); added without
    /// a version change, as readers before it refuse an unknown tag.
    pub(crate) const CHAINED_DISPATCH: u8 = 3;
}

/// [`Access`] codes.
pub(super) const fn access_code(access: Access) -> u8 {
    match access {
        Access::Read => 0,
        Access::Write => 1,
        Access::ReadWrite => 2,
    }
}

/// A growing little-endian buffer.
#[derive(Default)]
struct Out {
    buf: Vec<u8>,
}

impl Out {
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }

    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    fn count(&mut self, what: &'static str, len: usize) -> Result<(), SerialError> {
        let n = u32::try_from(len).map_err(|_| SerialError::TooLong { what, len })?;
        self.u32(n);
        Ok(())
    }

    fn str(&mut self, what: &'static str, s: &str) -> Result<(), SerialError> {
        self.count(what, s.len())?;
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

pub(super) fn write(a: &Artifact) -> Result<Vec<u8>, SerialError> {
    let sections: [(SectionKind, Vec<u8>); 6] = [
        (SectionKind::Code, a.code.clone()),
        (SectionKind::Constants, a.constants.clone()),
        (SectionKind::Kernels, kernels(&a.kernels)?),
        (SectionKind::Plan, plan(&a.plan)?),
        (SectionKind::Setup, launch(&a.setup)?),
        (SectionKind::Launch, launch(&a.launch)?),
    ];
    let table_end = HEADER_LEN + ENTRY_LEN * sections.len();
    let mut placed = Vec::with_capacity(sections.len());
    let mut end = table_end;
    for (kind, body) in &sections {
        let offset = end.next_multiple_of(SECTION_ALIGN);
        end = offset + body.len();
        placed.push((*kind, offset, body.len()));
    }

    let mut out = Out {
        buf: Vec::with_capacity(end),
    };
    out.buf.extend_from_slice(&MAGIC);
    out.u32(FORMAT_VERSION);
    out.u32(a.abi_version);
    out.u32(arch_code(a.target.arch));
    out.u32(sections.len() as u32);
    out.u64(a.target.features.bits());
    out.u64(a.blocking.l1d);
    out.u64(a.blocking.l2);
    out.u64(end as u64);
    out.u32(0); // checksum, filled in last
    let flag = |set: bool, bit: u32| if set { bit } else { 0 };
    out.u32(
        flag(a.flush_subnormals, FLAG_FLUSH_SUBNORMALS)
            | flag(
                a.blocking.skip_scattered_prefetch,
                FLAG_SKIP_SCATTERED_PREFETCH,
            ),
    );
    out.u64(a.blocking.llc);
    debug_assert_eq!(out.buf.len(), HEADER_LEN);
    for (kind, offset, len) in &placed {
        out.u32(kind.code());
        out.u32(0);
        out.u64(*offset as u64);
        out.u64(*len as u64);
    }
    for ((_, offset, _), (_, body)) in placed.iter().zip(&sections) {
        out.buf.resize(*offset, 0);
        out.buf.extend_from_slice(body);
    }
    let mut buf = out.buf;
    let sum = checksum(&buf);
    buf[CHECKSUM_AT..CHECKSUM_AT + 4].copy_from_slice(&sum.to_le_bytes());
    Ok(buf)
}

/// The CRC-32 of every byte except the checksum field's four (the caller ensures `bytes`
/// holds a whole header).
pub(super) fn checksum(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..CHECKSUM_AT]);
    h.update(&bytes[CHECKSUM_AT + 4..]);
    h.finalize()
}

fn kernels(kernels: &[KernelEntry]) -> Result<Vec<u8>, SerialError> {
    let mut out = Out::default();
    out.count("the kernel list", kernels.len())?;
    for k in kernels {
        out.str("a kernel name", &k.name)?;
        out.u32(k.offset);
        out.u32(k.len);
        out.u64(k.worker_scratch);
    }
    Ok(out.buf)
}

fn plan(plan: &ArtifactPlan) -> Result<Vec<u8>, SerialError> {
    let mut out = Out::default();
    out.count("the slot list", plan.slots.len())?;
    for s in &plan.slots {
        slot(&mut out, s)?;
    }
    Ok(out.buf)
}

fn slot(out: &mut Out, s: &Slot) -> Result<(), SerialError> {
    match &s.role {
        SlotRole::Input(n) => {
            out.u8(role::INPUT);
            out.u32(*n);
        }
        SlotRole::Output(n) => {
            out.u8(role::OUTPUT);
            out.u32(*n);
        }
        SlotRole::Weight(name) => {
            out.u8(role::WEIGHT);
            out.str("a weight name", name)?;
        }
        SlotRole::Constant { offset } => {
            out.u8(role::CONSTANT);
            out.u64(*offset);
        }
        SlotRole::Scratch => out.u8(role::SCRATCH),
        SlotRole::Derived { source, layout } => {
            out.u8(role::DERIVED);
            match source {
                DerivedSource::Weight(name) => {
                    out.u8(role::FROM_WEIGHT);
                    out.str("a weight name", name)?;
                }
                DerivedSource::Constant(id) => {
                    out.u8(role::FROM_CONSTANT);
                    out.u32(id.0);
                }
            }
            out.str("a layout", layout)?;
        }
    }
    out.u64(s.byte_size);
    out.u64(s.alignment);
    match &s.ty {
        None => out.u8(0),
        Some(ty) => {
            out.u8(1);
            typ(out, ty)?;
        }
    }
    Ok(())
}

fn typ(out: &mut Out, ty: &Type) -> Result<(), SerialError> {
    let code = dtype_code(ty.dtype).ok_or_else(|| {
        SerialError::Unencodable(format!("dtype {} has no code in this format", ty.dtype))
    })?;
    out.u8(code);
    let rank = u8::try_from(ty.dims.len()).map_err(|_| SerialError::TooLong {
        what: "a type's dims",
        len: ty.dims.len(),
    })?;
    out.u8(rank);
    for d in &ty.dims {
        out.u64(*d);
    }
    Ok(())
}

fn launch(plan: &LaunchPlan) -> Result<Vec<u8>, SerialError> {
    let mut out = Out::default();
    out.count("a command list", plan.commands.len())?;
    for c in &plan.commands {
        match c {
            Command::Fill {
                dst,
                pattern,
                width,
            } => {
                out.u8(command::FILL);
                region(&mut out, dst);
                out.u32(*pattern);
                out.u8(*width);
            }
            Command::Copy { src, dst } => {
                out.u8(command::COPY);
                region(&mut out, src);
                region(&mut out, dst);
            }
            Command::Dispatch {
                kernel,
                bindings,
                scalars,
                workgroups,
                chained,
            } => {
                out.u8(if *chained {
                    command::CHAINED_DISPATCH
                } else {
                    command::DISPATCH
                });
                out.u32(*kernel);
                out.u32(*workgroups);
                out.count("a dispatch's bindings", bindings.len())?;
                for Binding { region: r, access } in bindings {
                    region(&mut out, r);
                    out.u8(access_code(*access));
                }
                out.count("a dispatch's scalars", scalars.len())?;
                for s in scalars {
                    out.u64(*s);
                }
            }
        }
    }
    Ok(out.buf)
}

fn region(out: &mut Out, r: &Region) {
    out.u32(r.slot.0);
    out.u64(r.offset);
    out.u64(r.len);
}
