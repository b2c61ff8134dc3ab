//! What a run does: the [`LaunchPlan`], an ordered list of fill, copy and dispatch
//! [`Command`]s over [`Region`]s of slots.
//!
//! The vocabulary mirrors IREE's command buffer (fill / copy / dispatch), which is enough for a
//! CPU runtime and maps one-to-one onto a GPU queue later.
//!
//! Execution semantics a runtime must give and a compiler may rely on:
//! - commands run in order, and each completes entirely (all its workgroups) before the next
//!   starts, so a later command sees every byte an earlier one wrote — except within a
//!   *chain*: a dispatch marked [`Command::Dispatch::chained`] and the dispatch after it
//!   (itself possibly chained on) have the same workgroup count and run together, workgroup
//!   by workgroup: for each workgroup index `g`, on one thread and in order, each link's call
//!   with index `g`, all with the same worker index (whose scratch carries bytes from link to
//!   link, [`crate::abi`]); different indices may run concurrently and in any order. The
//!   compiler guarantees that every binding byte a link's workgroup `g` reads or writes that
//!   another link of the chain writes is touched by no other index of any link: so a chain computes
//!   what its dispatches run one after the other would, while the data one link leaves for the
//!   next is still in the cache (`accy-lower`'s `plan/chain.rs` forms them: a row softmax's or
//!   layer norm's passes over a block of rows). Its kernels may rely on this order: one that
//!   keeps a workgroup's rows of an intermediate in worker scratch for the next link
//!   (`accy-lower`'s `plan/row_scratch.rs`) computes the chain only run this way. Setup plans
//!   have no chains;
//! - the workgroups `0..workgroups` of one dispatch may run concurrently and in any order: the
//!   compiler guarantees that no two workgroups write the same byte and that no workgroup reads
//!   a byte another one of the same dispatch writes;
//! - a kernel touches only the bytes of its bindings (see [`crate::abi`]).
//!
//! The validator ([`crate::Artifact::validate`]) proves every region lies inside its slot, no
//! command writes a read-only slot (input, weight, constant), copies do not overlap, fills are
//! well formed, dispatches name existing kernels and each chained dispatch is followed by a
//! dispatch of as many workgroups (not that the chain keeps its promise, which is the
//! compiler's, as the workgroups' is). Whether two bindings of one dispatch may
//! overlap is the kernel's own contract (an in-place elementwise kernel may bind the same
//! bytes for reading and writing); the validator does not restrict it.

use std::fmt;

use crate::SlotId;

/// A byte range of one slot: `offset..offset + len`. Commands address memory only this way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    /// The slot addressed.
    pub slot: SlotId,
    /// First byte, counted from the slot's base.
    pub offset: u64,
    /// Number of bytes.
    pub len: u64,
}

impl Region {
    /// The region `offset..offset + len` of `slot`.
    pub fn new(slot: SlotId, offset: u64, len: u64) -> Region {
        Region { slot, offset, len }
    }

    /// One past the last byte, or `None` if `offset + len` overflows `u64`.
    pub fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.len)
    }

    /// True if the two regions share at least one byte (same slot, intersecting non-empty
    /// ranges). Exact even when `offset + len` overflows `u64`.
    pub fn overlaps(&self, other: &Region) -> bool {
        // u128 holds every u64 sum, so no end is clamped.
        let end = |r: &Region| u128::from(r.offset) + u128::from(r.len);
        self.slot == other.slot
            && self.len > 0
            && other.len > 0
            && u128::from(self.offset) < end(other)
            && u128::from(other.offset) < end(self)
    }
}

impl fmt::Display for Region {
    /// `s2[16..48]`: slot, first byte, one past the last byte.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.end() {
            Some(end) => write!(f, "{}[{}..{}]", self.slot, self.offset, end),
            None => write!(
                f,
                "{}[{}..{}+{}]",
                self.slot, self.offset, self.offset, self.len
            ),
        }
    }
}

/// How a command uses a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Only reads.
    Read,
    /// Only writes (may write any subset of the bytes; reads none).
    Write,
    /// Reads and writes.
    ReadWrite,
}

impl Access {
    /// True for [`Access::Read`] and [`Access::ReadWrite`].
    pub const fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// True for [`Access::Write`] and [`Access::ReadWrite`].
    pub const fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }

    /// `r`, `w` or `rw`.
    pub const fn short_name(self) -> &'static str {
        match self {
            Access::Read => "r",
            Access::Write => "w",
            Access::ReadWrite => "rw",
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

/// One memory range a dispatch hands its kernel. Binding `i` of a dispatch becomes entry `i`
/// of the kernel's binding arrays (base address of the region, and its `len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// The bytes bound.
    pub region: Region,
    /// What the kernel does with them.
    pub access: Access,
}

impl Binding {
    /// A binding of `region` with `access`.
    pub fn new(region: Region, access: Access) -> Binding {
        Binding { region, access }
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.region, self.access)
    }
}

/// One step of a [`LaunchPlan`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// Writes `pattern` repeatedly over `dst`. The bytes written are the first `width` bytes
    /// of `pattern.to_le_bytes()`, repeated `dst.len / width` times. Valid when `width` is 1,
    /// 2 or 4, `pattern` fits in `width` bytes, and `dst.offset` and `dst.len` are multiples
    /// of `width`.
    Fill {
        /// The bytes filled.
        dst: Region,
        /// The value, little-endian, in the low `width` bytes.
        pattern: u32,
        /// The pattern's size in bytes: 1, 2 or 4.
        width: u8,
    },
    /// Copies `src` to `dst`. Valid when the lengths are equal and the regions do not overlap.
    Copy {
        /// The bytes read.
        src: Region,
        /// The bytes written.
        dst: Region,
    },
    /// Runs kernel number `kernel` of [`crate::Artifact::kernels`] once per workgroup index
    /// `0..workgroups`, with `bindings` and `scalars` passed through
    /// [`crate::abi::DispatchState`].
    Dispatch {
        /// Index into [`crate::Artifact::kernels`].
        kernel: u32,
        /// The memory the kernel may touch, in the order the kernel expects.
        bindings: Vec<Binding>,
        /// Plain 64-bit values the kernel reads (sizes, strides, bit patterns of constants).
        scalars: Vec<u64>,
        /// Number of workgroups, at least 1.
        workgroups: u32,
        /// Whether this dispatch runs workgroup by workgroup with the next command, which is
        /// then a dispatch with the same workgroup count (see the module doc: a chain).
        chained: bool,
    },
}

/// Which region of a command something refers to, for messages and usage walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operand {
    /// The `dst` of a [`Command::Fill`].
    FillDst,
    /// The `src` of a [`Command::Copy`].
    CopySrc,
    /// The `dst` of a [`Command::Copy`].
    CopyDst,
    /// Binding number `n` of a [`Command::Dispatch`].
    Binding(usize),
}

impl fmt::Display for Operand {
    /// `fill dst`, `copy src`, `copy dst`, `binding 2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::FillDst => f.write_str("fill dst"),
            Operand::CopySrc => f.write_str("copy src"),
            Operand::CopyDst => f.write_str("copy dst"),
            Operand::Binding(n) => write!(f, "binding {n}"),
        }
    }
}

impl Command {
    /// `fill`, `copy` or `dispatch`.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Fill { .. } => "fill",
            Command::Copy { .. } => "copy",
            Command::Dispatch { .. } => "dispatch",
        }
    }

    /// Every region the command touches, with which operand it is and how it is used, in
    /// operand order (copy: src then dst; dispatch: bindings in order).
    pub fn accesses(&self) -> impl Iterator<Item = (Operand, Region, Access)> + '_ {
        type Use = (Operand, Region, Access);
        let (fixed, bindings): ([Option<Use>; 2], &[Binding]) = match self {
            Command::Fill { dst, .. } => {
                ([Some((Operand::FillDst, *dst, Access::Write)), None], &[])
            }
            Command::Copy { src, dst } => (
                [
                    Some((Operand::CopySrc, *src, Access::Read)),
                    Some((Operand::CopyDst, *dst, Access::Write)),
                ],
                &[],
            ),
            Command::Dispatch { bindings, .. } => ([None, None], bindings),
        };
        fixed.into_iter().flatten().chain(
            bindings
                .iter()
                .enumerate()
                .map(|(i, b)| (Operand::Binding(i), b.region, b.access)),
        )
    }
}

impl fmt::Display for Command {
    /// `fill s1[0..64] pattern 0x3f800000 width 4`, `copy s0[0..16] -> s2[0..16]`,
    /// `dispatch kernel 1 x4 (s0[0..16] r, s2[0..16] w) scalars [3, 5]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Fill {
                dst,
                pattern,
                width,
            } => write!(f, "fill {dst} pattern {pattern:#x} width {width}"),
            Command::Copy { src, dst } => write!(f, "copy {src} -> {dst}"),
            Command::Dispatch {
                kernel,
                bindings,
                scalars,
                workgroups,
                chained,
            } => {
                write!(f, "dispatch kernel {kernel} x{workgroups} (")?;
                for (i, b) in bindings.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{b}")?;
                }
                f.write_str(")")?;
                if !scalars.is_empty() {
                    write!(f, " scalars {scalars:?}")?;
                }
                if *chained {
                    f.write_str(", chained to the next")?;
                }
                Ok(())
            }
        }
    }
}

/// The commands of one run, in execution order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LaunchPlan {
    /// The commands; a runtime executes them in this order.
    pub commands: Vec<Command>,
}

impl LaunchPlan {
    /// Appends `command`.
    pub fn push(&mut self, command: Command) {
        self.commands.push(command);
    }
}

impl fmt::Display for LaunchPlan {
    /// One numbered line per command: `3: copy s0[0..16] -> s2[0..16]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.commands.iter().enumerate() {
            writeln!(f, "{i}: {c}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_overlap() {
        let r = |s, o, l| Region::new(SlotId(s), o, l);
        assert!(r(0, 0, 8).overlaps(&r(0, 7, 1)));
        assert!(r(0, 7, 1).overlaps(&r(0, 0, 8)));
        assert!(!r(0, 0, 8).overlaps(&r(0, 8, 8)));
        assert!(!r(0, 8, 8).overlaps(&r(0, 0, 8)));
        assert!(!r(0, 0, 8).overlaps(&r(1, 0, 8)));
        assert!(!r(0, 4, 0).overlaps(&r(0, 0, 8)));
        assert!(r(0, u64::MAX, 2).overlaps(&r(0, u64::MAX - 1, 2)));
        assert_eq!(r(0, 4, 4).end(), Some(8));
        assert_eq!(r(0, u64::MAX, 1).end(), None);
    }

    #[test]
    fn accesses_in_operand_order() {
        let a = Region::new(SlotId(0), 0, 4);
        let b = Region::new(SlotId(1), 4, 4);
        let copy = Command::Copy { src: a, dst: b };
        assert_eq!(
            copy.accesses().collect::<Vec<_>>(),
            vec![
                (Operand::CopySrc, a, Access::Read),
                (Operand::CopyDst, b, Access::Write)
            ]
        );
        let dispatch = Command::Dispatch {
            kernel: 0,
            bindings: vec![
                Binding::new(a, Access::ReadWrite),
                Binding::new(b, Access::Read),
            ],
            scalars: vec![],
            workgroups: 1,
            chained: false,
        };
        assert_eq!(
            dispatch.accesses().collect::<Vec<_>>(),
            vec![
                (Operand::Binding(0), a, Access::ReadWrite),
                (Operand::Binding(1), b, Access::Read)
            ]
        );
        let fill = Command::Fill {
            dst: b,
            pattern: 0,
            width: 1,
        };
        assert_eq!(
            fill.accesses().collect::<Vec<_>>(),
            vec![(Operand::FillDst, b, Access::Write)]
        );
    }

    #[test]
    fn display() {
        let a = Region::new(SlotId(0), 0, 16);
        let b = Region::new(SlotId(2), 16, 16);
        let mut plan = LaunchPlan::default();
        plan.push(Command::Fill {
            dst: b,
            pattern: 0x3f80_0000,
            width: 4,
        });
        plan.push(Command::Copy { src: a, dst: b });
        plan.push(Command::Dispatch {
            kernel: 1,
            bindings: vec![
                Binding::new(a, Access::Read),
                Binding::new(b, Access::Write),
            ],
            scalars: vec![3, 5],
            workgroups: 4,
            chained: false,
        });
        assert_eq!(
            plan.to_string(),
            "0: fill s2[16..32] pattern 0x3f800000 width 4\n\
             1: copy s0[0..16] -> s2[16..32]\n\
             2: dispatch kernel 1 x4 (s0[0..16] r, s2[16..32] w) scalars [3, 5]\n"
        );
        assert_eq!(
            Region::new(SlotId(1), u64::MAX, 2).to_string(),
            format!("s1[{0}..{0}+2]", u64::MAX)
        );
    }
}
