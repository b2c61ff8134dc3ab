//! The memory an artifact's commands work on: the [`ArtifactPlan`], a list of [`Slot`]s.
//!
//! A slot is one logical buffer: a caller's input or output, a named weight, a constant baked
//! into the artifact, or private scratch. Commands address memory only as byte ranges of slots
//! ([`crate::Region`]), so the plan alone says how much memory a run needs and who provides it.
//!
//! Invariants the validator ([`crate::Artifact::validate`]) establishes:
//! - slot `i` has id `SlotId(i)`; ids are dense by construction;
//! - alignments are powers of two;
//! - input and output numbers are each dense `0..n` without duplicates; weight names are
//!   non-empty and unique;
//! - input, output and weight slots carry their [`Type`], and its dense byte size is exactly
//!   the slot's `byte_size` (so a runtime can describe the buffer to the caller);
//! - a constant slot's payload lies inside [`crate::Artifact::constants`] at an offset that is
//!   a multiple of the slot's alignment;
//! - a derived slot names a weight or constant slot of the plan as its source and a non-empty
//!   layout, and the setup commands ([`crate::Artifact::setup`]) write every byte of it,
//!   reading nothing but its source.
//!
//! **Derived data.** A weight or constant in another layout (a dot's right operand packed into
//! the panels the microkernels stream) is a derived slot: computed once, when the artifact is
//! bound to its weights, by the setup commands, and read-only for every run. Its identity is
//! its source and its layout, so a runtime may compute it once for every artifact that binds
//! the same weights and asks for the same layout (plans for several batch sizes of one model).
//!
//! **Donation.** A program output that reuses an input's buffer (`ir::Output::donates`) needs
//! no special slot kind: lower computes the output's value straight into the output slot,
//! reading the input slot like any other input. Input slots are never written (the validator
//! refuses it), so the caller's inputs are never changed and a runtime need not know about
//! donation at all; donation stays a placement hint.
//!
//! Distinct slots never share memory. A runtime must provide each slot its own, disjoint
//! buffer (callers' buffers are checked for overlap at binding time).

use std::fmt;

use accy_ir::Type;

/// Names one slot of an [`ArtifactPlan`]: `SlotId(i)` is `plan.slots[i]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotId(pub u32);

impl SlotId {
    /// The id as an index into [`ArtifactPlan::slots`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for SlotId {
    /// `s3`, the form used in plan dumps.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// Who provides a slot's memory and what its contents are when a run starts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SlotRole {
    /// The caller's input buffer number `n` (counting the program's input parameters only, in
    /// order). Holds the caller's data; read-only for every command.
    Input(u32),
    /// The caller's output buffer number `n`, in program output order. Its contents at the
    /// start are unspecified; the plan writes every byte of it.
    Output(u32),
    /// The immutable weight with this name, bound once and shared by every run and every
    /// inference slot. Read-only for every command.
    Weight(String),
    /// Bytes baked into the artifact: the slot's payload is
    /// `constants[offset..offset + byte_size]` of [`crate::Artifact::constants`]. Read-only
    /// for every command. A runtime places the `constants` block at an address aligned to the
    /// largest constant-slot alignment, so each slot is aligned too.
    Constant {
        /// Byte offset of the payload in [`crate::Artifact::constants`].
        offset: u64,
    },
    /// Private working memory of one run. Its contents at the start of a run are unspecified
    /// (a runtime may reuse it between runs); commands write bytes before reading them (a
    /// promise of the compiler that the validator does not check).
    Scratch,
    /// Data derived from a weight or a constant by the setup commands, once, before any run
    /// (see the module documentation). Read-only for every run command.
    Derived {
        /// The slot it is computed from.
        source: DerivedSource,
        /// What the bytes are, precisely enough that equal `(source, layout)` pairs always
        /// hold equal bytes (e.g. `f32 panels 32 wide of [k 784, n 512] strides [0,512,1] @0`).
        layout: String,
    },
}

/// What a [`SlotRole::Derived`] slot is computed from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DerivedSource {
    /// The weight with this name.
    Weight(String),
    /// This constant slot of the same plan.
    Constant(SlotId),
}

impl fmt::Display for DerivedSource {
    /// `weight "w1"` or `constant s3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DerivedSource::Weight(name) => write!(f, "weight {name:?}"),
            DerivedSource::Constant(slot) => write!(f, "constant {slot}"),
        }
    }
}

impl SlotRole {
    /// The role without its payload, for messages and summaries.
    pub fn kind(&self) -> SlotKind {
        match self {
            SlotRole::Input(_) => SlotKind::Input,
            SlotRole::Output(_) => SlotKind::Output,
            SlotRole::Weight(_) => SlotKind::Weight,
            SlotRole::Constant { .. } => SlotKind::Constant,
            SlotRole::Scratch => SlotKind::Scratch,
            SlotRole::Derived { .. } => SlotKind::Derived,
        }
    }
}

impl fmt::Display for SlotRole {
    /// `input 0`, `output 1`, `weight "w.q"`, `constant @64`, `scratch`,
    /// `derived from weight "w" (layout)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SlotRole::Input(n) => write!(f, "input {n}"),
            SlotRole::Output(n) => write!(f, "output {n}"),
            SlotRole::Weight(name) => write!(f, "weight {name:?}"),
            SlotRole::Constant { offset } => write!(f, "constant @{offset}"),
            SlotRole::Scratch => f.write_str("scratch"),
            SlotRole::Derived { source, layout } => write!(f, "derived from {source} ({layout})"),
        }
    }
}

/// The kind of a [`SlotRole`], without its number, name or offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SlotKind {
    /// [`SlotRole::Input`].
    Input,
    /// [`SlotRole::Output`].
    Output,
    /// [`SlotRole::Weight`].
    Weight,
    /// [`SlotRole::Constant`].
    Constant,
    /// [`SlotRole::Scratch`].
    Scratch,
    /// [`SlotRole::Derived`].
    Derived,
}

impl SlotKind {
    /// True for the kinds no run command may write: inputs, weights, constants and derived
    /// data (which only setup commands write).
    pub const fn is_read_only(self) -> bool {
        matches!(
            self,
            SlotKind::Input | SlotKind::Weight | SlotKind::Constant | SlotKind::Derived
        )
    }

    /// True for the kinds whose memory the caller supplies on every run.
    pub const fn is_caller_buffer(self) -> bool {
        matches!(self, SlotKind::Input | SlotKind::Output)
    }

    /// The lowercase name used in messages.
    pub const fn name(self) -> &'static str {
        match self {
            SlotKind::Input => "input",
            SlotKind::Output => "output",
            SlotKind::Weight => "weight",
            SlotKind::Constant => "constant",
            SlotKind::Scratch => "scratch",
            SlotKind::Derived => "derived",
        }
    }
}

impl fmt::Display for SlotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One logical buffer of a plan.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Slot {
    /// Who provides the memory and what it holds at the start of a run.
    pub role: SlotRole,
    /// The exact size in bytes. A caller's input or output buffer must have exactly this size;
    /// every region of the slot lies within it.
    pub byte_size: u64,
    /// The alignment in bytes (a power of two) the slot's base address must have. For caller
    /// buffers this is what binding checks against, so a compiler should ask no more than the
    /// element's natural alignment there.
    pub alignment: u64,
    /// The tensor type held, if the slot holds one. Required for inputs, outputs and weights
    /// (a runtime describes those buffers with it); optional for constants and scratch.
    pub ty: Option<Type>,
}

impl Slot {
    /// A slot holding one dense tensor of type `ty`, sized from the type. Returns `None` if the
    /// byte size overflows `u64`.
    pub fn typed(role: SlotRole, ty: Type, alignment: u64) -> Option<Slot> {
        Some(Slot {
            role,
            byte_size: ty.byte_size()?,
            alignment,
            ty: Some(ty),
        })
    }

    /// An untyped scratch slot.
    pub fn scratch(byte_size: u64, alignment: u64) -> Slot {
        Slot {
            role: SlotRole::Scratch,
            byte_size,
            alignment,
            ty: None,
        }
    }
}

impl fmt::Display for Slot {
    /// `input 0 f32[2,3] 24 bytes align 4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.role)?;
        if let Some(ty) = &self.ty {
            write!(f, " {ty}")?;
        }
        write!(f, " {} bytes align {}", self.byte_size, self.alignment)
    }
}

/// Where each scratch slot sits in one block that holds them all; see
/// [`ArtifactPlan::scratch_layout`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScratchLayout {
    /// Each scratch slot with its byte offset in the block, in slot order. Offsets are
    /// multiples of the slot's alignment and the slots do not overlap.
    pub offsets: Vec<(SlotId, u64)>,
    /// The block size in bytes.
    pub size: u64,
    /// The alignment the block's base must have (the largest scratch alignment, at least 1).
    pub alignment: u64,
}

/// Every slot an artifact's commands use. Slot `i` has id `SlotId(i)`.
///
/// A compiler builds it with [`ArtifactPlan::add`]; a runtime reads the roles to learn which
/// buffers the caller, the weights, the constants and private scratch provide.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ArtifactPlan {
    /// The slots, indexed by [`SlotId`].
    pub slots: Vec<Slot>,
}

impl ArtifactPlan {
    /// Appends `slot` and returns its id, or `None` (and leaves the plan unchanged) if the plan
    /// already holds `u32::MAX + 1` slots.
    pub fn add(&mut self, slot: Slot) -> Option<SlotId> {
        let id = SlotId(u32::try_from(self.slots.len()).ok()?);
        self.slots.push(slot);
        Some(id)
    }

    /// The slot `id`, or `None` if there is no such slot.
    pub fn slot(&self, id: SlotId) -> Option<&Slot> {
        self.slots.get(id.index())
    }

    /// Every slot with its id, in id order (stops at `u32::MAX` slots).
    pub fn iter(&self) -> impl Iterator<Item = (SlotId, &Slot)> {
        (0..=u32::MAX).map(SlotId).zip(&self.slots)
    }

    /// The input slots, ordered by input number (for a validated plan, item `n` is input `n`).
    pub fn input_slots(&self) -> Vec<SlotId> {
        self.numbered(|role| match role {
            SlotRole::Input(n) => Some(*n),
            _ => None,
        })
    }

    /// The output slots, ordered by output number (for a validated plan, item `n` is output
    /// `n`).
    pub fn output_slots(&self) -> Vec<SlotId> {
        self.numbered(|role| match role {
            SlotRole::Output(n) => Some(*n),
            _ => None,
        })
    }

    /// The derived slots with their sources and layouts, in slot order.
    pub fn derived_slots(&self) -> impl Iterator<Item = (SlotId, &DerivedSource, &str)> {
        self.iter().filter_map(|(id, s)| match &s.role {
            SlotRole::Derived { source, layout } => Some((id, source, layout.as_str())),
            _ => None,
        })
    }

    /// The weight slots with their names, in slot order.
    pub fn weight_slots(&self) -> impl Iterator<Item = (SlotId, &str)> {
        self.iter().filter_map(|(id, s)| match &s.role {
            SlotRole::Weight(name) => Some((id, name.as_str())),
            _ => None,
        })
    }

    fn numbered(&self, number: impl Fn(&SlotRole) -> Option<u32>) -> Vec<SlotId> {
        let mut found: Vec<(u32, SlotId)> = self
            .iter()
            .filter_map(|(id, s)| Some((number(&s.role)?, id)))
            .collect();
        found.sort_unstable();
        found.into_iter().map(|(_, id)| id).collect()
    }

    /// Places every scratch slot in one block, in slot order, each at the next offset that is
    /// a multiple of its alignment. A runtime allocates one block of `size` bytes per inference
    /// slot with this layout. Returns `None` if the size overflows `u64` or an alignment is
    /// not a power of two (the validator refuses both).
    pub fn scratch_layout(&self) -> Option<ScratchLayout> {
        let mut layout = ScratchLayout {
            offsets: Vec::new(),
            size: 0,
            alignment: 1,
        };
        for (id, slot) in self.iter() {
            if slot.role != SlotRole::Scratch {
                continue;
            }
            if !slot.alignment.is_power_of_two() {
                return None;
            }
            let offset = layout.size.checked_next_multiple_of(slot.alignment)?;
            layout.size = offset.checked_add(slot.byte_size)?;
            layout.alignment = layout.alignment.max(slot.alignment);
            layout.offsets.push((id, offset));
        }
        Some(layout)
    }
}

impl fmt::Display for ArtifactPlan {
    /// One line per slot: `s0: input 0 f32[4] 16 bytes align 4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (id, slot) in self.iter() {
            writeln!(f, "{id}: {slot}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accy_ir::DType;

    fn plan() -> ArtifactPlan {
        let mut p = ArtifactPlan::default();
        let f32x4 = Type::new(DType::F32, &[4]);
        p.add(Slot::typed(SlotRole::Output(1), f32x4.clone(), 4).unwrap());
        p.add(Slot::scratch(10, 1));
        p.add(Slot::typed(SlotRole::Input(0), f32x4.clone(), 4).unwrap());
        p.add(Slot::scratch(8, 16));
        p.add(Slot::typed(SlotRole::Output(0), f32x4.clone(), 4).unwrap());
        p.add(Slot::typed(SlotRole::Weight("w".into()), f32x4, 4).unwrap());
        p.add(Slot::scratch(3, 2));
        p
    }

    #[test]
    fn io_slots_ordered_by_number() {
        let p = plan();
        assert_eq!(p.input_slots(), vec![SlotId(2)]);
        assert_eq!(p.output_slots(), vec![SlotId(4), SlotId(0)]);
        assert_eq!(p.weight_slots().collect::<Vec<_>>(), vec![(SlotId(5), "w")]);
        assert_eq!(p.slot(SlotId(1)).map(|s| s.byte_size), Some(10));
        assert_eq!(p.slot(SlotId(7)), None);
    }

    #[test]
    fn scratch_layout_aligns_each_slot() {
        let layout = plan().scratch_layout().unwrap();
        assert_eq!(
            layout.offsets,
            vec![(SlotId(1), 0), (SlotId(3), 16), (SlotId(6), 24)]
        );
        assert_eq!(layout.size, 27);
        assert_eq!(layout.alignment, 16);

        let mut bad = ArtifactPlan::default();
        bad.add(Slot::scratch(1, 3));
        assert_eq!(bad.scratch_layout(), None);
        let mut huge = ArtifactPlan::default();
        huge.add(Slot::scratch(u64::MAX, 1));
        huge.add(Slot::scratch(1, 1));
        assert_eq!(huge.scratch_layout(), None);
    }

    #[test]
    fn typed_slot_sizes_from_type() {
        let s = Slot::typed(SlotRole::Input(0), Type::new(DType::F64, &[3, 5]), 8).unwrap();
        assert_eq!(s.byte_size, 120);
        assert_eq!(s.to_string(), "input 0 f64[3,5] 120 bytes align 8");
        assert_eq!(
            Slot::typed(SlotRole::Scratch, Type::new(DType::F64, &[u64::MAX, 2]), 8),
            None
        );
    }

    #[test]
    fn role_kinds() {
        assert!(SlotRole::Input(0).kind().is_read_only());
        assert!(SlotRole::Weight("w".into()).kind().is_read_only());
        assert!(SlotRole::Constant { offset: 0 }.kind().is_read_only());
        assert!(!SlotRole::Output(0).kind().is_read_only());
        assert!(!SlotRole::Scratch.kind().is_read_only());
        let derived = SlotRole::Derived {
            source: DerivedSource::Weight("w".into()),
            layout: "panels".into(),
        };
        assert!(derived.kind().is_read_only());
        assert_eq!(derived.to_string(), "derived from weight \"w\" (panels)");
        assert!(SlotKind::Output.is_caller_buffer());
        assert!(!SlotKind::Weight.is_caller_buffer());
        assert_eq!(SlotRole::Weight("a.b".into()).to_string(), "weight \"a.b\"");
        assert_eq!(
            SlotRole::Constant { offset: 64 }.to_string(),
            "constant @64"
        );
    }
}
