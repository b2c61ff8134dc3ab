//! The AArch64 backend: [`A64Target`] translates [`LoopKernel`]s into AAPCS64 machine code
//! with `dynasm` (`.arch aarch64`), for the ARMv8.0-A baseline with Advanced SIMD (NEON).
//!
//! Files mirror `x64/` one for one, so a diff between the two directories shows only ISA
//! differences:
//! - `mod.rs` (this file): the feature set and the [`Target`] impl;
//! - `asm.rs`: the assembler type, frame addressing and checked immediates;
//! - `layout.rs`: the stack frame of one kernel (shared with x86-64: it is arch-neutral);
//! - `kernel.rs`: prologue and epilogue, workgroup split, the loop nest, index maps, stores
//!   and reductions;
//! - `scalar.rs` and `convert.rs`: per-node scalar code (FP/SIMD registers for floats, general
//!   registers for integers and bools) covering every node and dtype;
//! - `vector.rs`: the NEON loop (4 × 32-bit or 2 × 64-bit lanes) for contiguous elementwise
//!   kernels, plan and ops in one file, followed by the scalar loop for the remaining points.
//!
//! Compared with x86-64's AVX2 path, NEON covers fewer kernels so far: no vector reductions
//! (`vector_reduce.rs`), no vector compares/selects/converts/bool masks and no register
//! spilling (kernels with more than 24 live nodes stay scalar). Those run on the scalar
//! loops, which handle every node, so every kernel is covered and every result is
//! bit-identical to the reference interpreter's. Floor, ceil and round are native (`frintm`,
//! `frintp`, `frintn`); transcendentals, `pow` and float `rem` call the import table.
//!
//! Every kernel is emitted into one `dynasmrt::VecAssembler`; each kernel is committed on its
//! own so an assembler error names the kernel. Run-time values never reach an encoding that
//! could panic: immediates and offsets go through the range checks in `asm.rs`.

pub(crate) mod asm;
mod convert;
mod kernel;
mod layout;
mod scalar;
mod vector;

#[cfg(test)]
mod tests;

use accy_artifact::{Arch, CpuFeature, FeatureSet, KernelEntry, TargetSpec};
use dynasmrt::DynasmApi;

use crate::kernel::LoopKernel;
use crate::target::{EmitError, EmittedCode, Target};

/// The backend name.
const NAME: &str = "aarch64-neon";

/// The AArch64 [`Target`] (ARMv8.0-A with NEON, which every AArch64 application core has).
/// Immutable; construct it with [`A64Target::new`] for cross-compiling, or with
/// [`A64Target::new_checked`] / [`A64Target::for_host`], which are the feature check for
/// running the code here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct A64Target {
    reassociate: bool,
}

impl Default for A64Target {
    fn default() -> Self {
        A64Target::new()
    }
}

impl A64Target {
    /// The target, whatever the host has (the code may not run here).
    pub const fn new() -> A64Target {
        A64Target { reassociate: true }
    }

    /// Exactly the features the emitted code uses (recorded in the artifact): NEON, i.e. the
    /// FP/SIMD register file (scalar `s`/`d` arithmetic is part of it).
    pub fn code_features() -> FeatureSet {
        FeatureSet::of(&[CpuFeature::Neon])
    }

    /// The target if `host` has every feature the code needs, else `None`.
    pub fn new_checked(host: FeatureSet) -> Option<A64Target> {
        A64Target::code_features()
            .is_subset(host)
            .then_some(A64Target::new())
    }

    /// The target for `host`. There is one tier, so this is [`A64Target::new`]; it exists so
    /// backend selection reads the same for every ISA.
    pub fn for_host(host: FeatureSet) -> A64Target {
        A64Target::new_checked(host).unwrap_or_default()
    }

    /// The same target, allowed (`true`, the default) or not to reassociate float sum
    /// reductions for speed. This backend does not vectorize reductions yet, so it never
    /// reassociates and results are bit-identical to the reference interpreter's either way;
    /// the flag is kept so callers treat every backend alike and a vector reduction can
    /// honour it.
    pub const fn with_float_reassociation(self, allow: bool) -> A64Target {
        A64Target { reassociate: allow }
    }

    /// Whether float sum reductions may be reassociated.
    pub const fn float_reassociation(&self) -> bool {
        self.reassociate
    }
}

impl Target for A64Target {
    fn name(&self) -> &'static str {
        NAME
    }

    fn spec(&self) -> TargetSpec {
        TargetSpec::new(Arch::Aarch64, A64Target::code_features())
    }

    fn emit(&self, kernels: &[LoopKernel]) -> Result<EmittedCode, EmitError> {
        let mut ops = asm::Asm::new(0);
        let mut entries = Vec::with_capacity(kernels.len());
        for k in kernels {
            let start = ops.offset().0;
            kernel::emit_kernel(&mut ops, k)?;
            ops.commit().map_err(|e| EmitError::Assembler {
                kernel: k.name.clone(),
                message: e.to_string(),
            })?;
            let end = ops.offset().0;
            let too_large = || EmitError::TooLarge { bytes: end as u64 };
            entries.push(KernelEntry {
                name: k.name.clone(),
                offset: u32::try_from(start).map_err(|_| too_large())?,
                len: u32::try_from(end - start).map_err(|_| too_large())?,
            });
        }
        let code = ops.finalize().map_err(|e| EmitError::Assembler {
            kernel: kernels.last().map(|k| k.name.clone()).unwrap_or_default(),
            message: e.to_string(),
        })?;
        Ok(EmittedCode { code, entries })
    }
}
