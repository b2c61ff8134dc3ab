//! What a compile produces, independent of how it runs (internal crate; the public API is
//! `accy-session`).
//!
//! An [`Artifact`] is inert data: machine code bytes with named [`KernelEntry`] points, the
//! constant payloads, an [`ArtifactPlan`] of memory slots and a [`LaunchPlan`] of fill / copy /
//! dispatch commands over regions of those slots, plus the [`TargetSpec`] the code needs. It
//! is the contract between the compiler (`accy-lower`, which produces it) and the runtime
//! (`accy-executable`, which maps the code and runs the commands). Nothing here maps memory,
//! holds a function pointer or knows an instruction: an artifact can be printed, compared and
//! stored, and only the runtime makes it live.
//!
//! Modules, one purpose each:
//! - [`target`]: architectures, CPU features, [`TargetSpec`];
//! - [`slots`]: [`ArtifactPlan`], the slots (caller inputs/outputs, weights, constants,
//!   scratch) and their invariants, including how donation is expressed;
//! - [`launch`]: [`LaunchPlan`], commands, regions, and their execution semantics;
//! - [`abi`]: the fixed, versioned dispatch ABI every kernel follows;
//! - [`model`]: [`model::ModelPlan`], one inference of a model as commands over its
//!   allocations (weights and scratch) and its compiled fragments, and the rules
//!   [`model::ModelPlan::validate`] checks before a runtime prepares inference slots for it;
//! - [`imports`]: the math functions the runtime lends generated code through the ABI;
//! - [`Artifact::validate`] (module `validate`): proves an artifact well formed and returns the
//!   per-slot [`PlanSummary`] a runtime checks caller buffers against in one pass;
//!   [`ArtifactError`] says why not;
//! - [`serial`]: the versioned file form ([`Artifact::to_bytes`], [`Artifact::from_bytes`]),
//!   for shipping a compiled program; [`SerialError`] says why bytes were refused.
//!
//! A runtime must validate an artifact before loading it; validation guarantees that running
//! the commands as described touches no byte outside the slots and never writes read-only
//! data, provided the kernels keep the ABI's rules. It does not prove the results correct.

#![deny(missing_docs)]

use std::fmt;

pub mod abi;
mod error;
pub mod imports;
pub mod launch;
pub mod model;
pub mod serial;
pub mod slots;
pub mod target;
mod validate;

pub use abi::DispatchState;
pub use error::ArtifactError;
pub use imports::Import;
pub use launch::{Access, Binding, Command, LaunchPlan, Operand, Region};
pub use serial::{SerialError, Validated};
pub use slots::{ArtifactPlan, DerivedSource, ScratchLayout, Slot, SlotId, SlotKind, SlotRole};
pub use target::{Arch, CpuFeature, FeatureSet, TargetSpec, UnknownFeature};
pub use validate::{PlanSummary, SlotUsage};

/// One kernel's entry point in [`Artifact::code`]. A dispatch names a kernel by its index in
/// [`Artifact::kernels`]; the runtime calls `code[offset..]` with the signature
/// [`abi::KernelFn`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelEntry {
    /// A unique, non-empty name, used in messages, dumps and profiles.
    pub name: String,
    /// Byte offset of the entry point in [`Artifact::code`].
    pub offset: u32,
    /// Length of the kernel's code in bytes (at least 1); `offset..offset + len` lies inside
    /// the code. Kernels may share code bytes (e.g. a common tail), so ranges may overlap.
    pub len: u32,
    /// Bytes of worker scratch each worker running this kernel needs (0 for none); see
    /// [`abi`]'s "Workgroups and workers".
    pub worker_scratch: u64,
}

/// The cache sizes a compile blocked its kernels for (contraction tiles, panel widths, which
/// stores bypass the cache): part of the artifact, so that the same program, target and
/// blocking always give the same plan, and a loader can tell what the code was tuned for. Zero
/// means "not recorded".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Blocking {
    /// Bytes of level-1 data cache per logical CPU.
    pub l1d: u64,
    /// Bytes of level-2 cache per logical CPU.
    pub l2: u64,
    /// Bytes of the last-level cache, taken whole rather than per sharer (the executable's
    /// `CacheInfo::blocking` bounds it per sharer, against guests that report a whole
    /// socket's cache): an output of at least half this size is written with non-temporal
    /// stores, and passes sharing a region that large are chained.
    pub llc: u64,
    /// Leave out the prefetches a transpose's tile fills make for their next block (one line
    /// in each of a block's source rows, hundreds of pages at once) where the rows start on
    /// a 64-byte line; rows off a line keep them, which measured faster either way. Set where
    /// the CPU is slower with them (detected as Intel's: on an Intel Xeon, a 4096² f32
    /// transpose ran 30-40% faster without them at every distance tried, while on an AMD
    /// EPYC they made it 10-15% faster). `false` in artifacts from before this field, which
    /// always had them.
    pub skip_scattered_prefetch: bool,
}

impl fmt::Display for Blocking {
    /// `l1d 48 KiB, l2 2048 KiB, llc 32768 KiB`, then `, tile fills prefetch only rows off a
    /// line` when [`Blocking::skip_scattered_prefetch`] is set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "l1d {} KiB, l2 {} KiB, llc {} KiB",
            self.l1d >> 10,
            self.l2 >> 10,
            self.llc >> 10
        )?;
        if self.skip_scattered_prefetch {
            f.write_str(", tile fills prefetch only rows off a line")?;
        }
        Ok(())
    }
}

/// The complete, inert result of compiling one program for one target.
///
/// A compiler fills every field; a runtime calls [`Artifact::validate`] and loads it only if
/// that succeeds. The code is position independent within itself: it refers to no absolute
/// address, and reaches memory only through the [`abi::DispatchState`] it is given.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Artifact {
    /// The dispatch ABI version the code follows; must equal [`abi::ABI_VERSION`].
    pub abi_version: u32,
    /// The architecture and exactly the CPU features the code uses.
    pub target: TargetSpec,
    /// The cache sizes the kernels were blocked for.
    pub blocking: Blocking,
    /// Whether runs execute with subnormal floats flushed to zero: the kernels' inputs that
    /// are subnormal read as zero of the same sign, and results that would be subnormal are
    /// written as zero (x86-64 MXCSR FTZ and DAZ; AArch64 FPCR.FZ). Off by default: then
    /// every float operation follows IEEE 754 with gradual underflow, as the op semantics and
    /// the interpreter do. On, results differ from the interpreter's wherever a subnormal
    /// appears, and work that produces subnormals (an attention's products of far-apart
    /// scores) runs at full speed instead of through the CPU's microcode assists.
    pub flush_subnormals: bool,
    /// Machine code of all kernels, in one block the runtime maps read/execute.
    pub code: Vec<u8>,
    /// Kernel entry points into `code`.
    pub kernels: Vec<KernelEntry>,
    /// Payloads of the [`SlotRole::Constant`] slots, addressed by their `offset`.
    pub constants: Vec<u8>,
    /// The slots the commands use.
    pub plan: ArtifactPlan,
    /// The commands that compute the derived slots ([`SlotRole::Derived`]), run once when the
    /// artifact is bound to its weights, before any run. Each writes exactly one derived slot
    /// and reads only that slot's source; a runtime may run just the commands of the slots it
    /// has not computed for these weights before.
    pub setup: LaunchPlan,
    /// The commands of one run, in order.
    pub launch: LaunchPlan,
}

impl Artifact {
    /// An empty artifact for `target` at the current [`abi::ABI_VERSION`], to be filled in by
    /// a compiler.
    pub fn new(target: TargetSpec) -> Artifact {
        Artifact {
            abi_version: abi::ABI_VERSION,
            target,
            blocking: Blocking::default(),
            flush_subnormals: false,
            code: Vec::new(),
            kernels: Vec::new(),
            constants: Vec::new(),
            plan: ArtifactPlan::default(),
            setup: LaunchPlan::default(),
            launch: LaunchPlan::default(),
        }
    }

    /// The index and entry of the kernel called `name`, if any.
    pub fn kernel(&self, name: &str) -> Option<(u32, &KernelEntry)> {
        let i = self.kernels.iter().position(|k| k.name == name)?;
        Some((u32::try_from(i).ok()?, &self.kernels[i]))
    }

    /// The code bytes of kernel `index`, or `None` if there is no such kernel or its range
    /// lies outside the code (which validation rules out).
    pub fn kernel_code(&self, index: u32) -> Option<&[u8]> {
        let k = self.kernels.get(usize::try_from(index).ok()?)?;
        let start = usize::try_from(k.offset).ok()?;
        let end = start.checked_add(usize::try_from(k.len).ok()?)?;
        self.code.get(start..end)
    }
}

impl fmt::Display for Artifact {
    /// A human-readable dump (for `accy inspect` and test failures): target, kernels, slots
    /// and commands, one item per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "artifact abi {} target {}",
            self.abi_version, self.target
        )?;
        if self.blocking != Blocking::default() {
            write!(f, " blocked for {}", self.blocking)?;
        }
        if self.flush_subnormals {
            write!(f, " flushing subnormals")?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "code {} bytes, constants {} bytes",
            self.code.len(),
            self.constants.len()
        )?;
        for (i, k) in self.kernels.iter().enumerate() {
            writeln!(
                f,
                "kernel {i} `{}` at {} length {}",
                k.name, k.offset, k.len
            )?;
        }
        writeln!(f, "slots:")?;
        fmt::Display::fmt(&self.plan, f)?;
        if !self.setup.commands.is_empty() {
            writeln!(f, "setup:")?;
            fmt::Display::fmt(&self.setup, f)?;
        }
        writeln!(f, "commands:")?;
        fmt::Display::fmt(&self.launch, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accy_ir::{DType, Type};

    #[test]
    fn kernel_lookup_and_dump() {
        let mut a = Artifact::new(TargetSpec::new(
            Arch::X86_64,
            FeatureSet::of(&[CpuFeature::Avx2]),
        ));
        a.code = vec![0x90, 0x90, 0xc3];
        a.kernels.push(KernelEntry {
            name: "k0".into(),
            offset: 1,
            len: 2,
            worker_scratch: 0,
        });
        a.kernels.push(KernelEntry {
            name: "bad".into(),
            offset: 2,
            len: 5,
            worker_scratch: 0,
        });
        let ty = Type::new(DType::F32, &[2]);
        let s = a
            .plan
            .add(Slot::typed(SlotRole::Output(0), ty, 4).unwrap())
            .unwrap();
        a.launch.push(Command::Fill {
            dst: Region::new(s, 0, 8),
            pattern: 0,
            width: 4,
        });
        assert_eq!(a.kernel("k0").map(|(i, _)| i), Some(0));
        assert_eq!(a.kernel("nope"), None);
        assert_eq!(a.kernel_code(0), Some(&[0x90, 0xc3][..]));
        assert_eq!(a.kernel_code(1), None);
        assert_eq!(a.kernel_code(2), None);
        assert_eq!(
            a.to_string(),
            "artifact abi 2 target x86_64+avx2\n\
             code 3 bytes, constants 0 bytes\n\
             kernel 0 `k0` at 1 length 2\n\
             kernel 1 `bad` at 2 length 5\n\
             slots:\n\
             s0: output 0 f32[2] 8 bytes align 4\n\
             commands:\n\
             0: fill s0[0..8] pattern 0x0 width 4\n"
        );
    }
}
