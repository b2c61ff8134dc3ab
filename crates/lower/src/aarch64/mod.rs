//! The AArch64 backend: [`A64Target`] translates [`LoopKernel`](crate::kernel::LoopKernel)s into AAPCS64 machine code
//! with `dynasm` (`.arch aarch64`), for the ARMv8.0-A baseline with Advanced SIMD (NEON).
//!
//! Files mirror `x64/` one for one, so a diff between the two directories shows only ISA
//! differences:
//! - `mod.rs` (this file): the feature set and the [`Target`] impl;
//! - `asm.rs`: the assembler type, frame addressing and checked immediates;
//! - `kernel.rs`: prologue and epilogue, workgroup split, the loop nest, index maps, stores
//!   and reductions;
//! - `scalar.rs` and `convert.rs`: per-node scalar code (FP/SIMD registers for floats, general
//!   registers for integers and bools) covering every node and dtype;
//! - `vector.rs` and `vector_ops.rs`: the NEON loop (4 × 32-bit or 2 × 64-bit lanes) for
//!   contiguous elementwise kernels, followed by the scalar loop for the remaining points;
//!   `vector_reduce.rs`: the same for reductions along a contiguous innermost dim.
//!
//! Compared with x86-64's AVX2 path, NEON covers fewer kernels so far: no integer max/min or
//! float product reductions, one accumulator per reduction (x86 unrolls short ones into
//! several), no vector converts or gathers, and shifts only by constants. Those
//! run on the scalar loops, which handle every node, so every kernel is covered and every
//! result is bit-identical to the reference interpreter's. Floor, ceil and round are native (`frintm`,
//! `frintp`, `frintn`); transcendentals, `pow` and float `rem` call the import table.
//!
//! Every kernel is emitted into one `dynasmrt::VecAssembler`; each kernel is committed on its
//! own so an assembler error names the kernel. Run-time values never reach an encoding that
//! could panic: immediates and offsets go through the range checks in `asm.rs`.

pub(crate) mod asm;
mod convert;
mod gemm;
mod kernel;
mod micro;
mod scalar;
mod vector;
mod vector_ops;
mod vector_reduce;

#[cfg(test)]
mod tests;

use accy_artifact::{Arch, CpuFeature, FeatureSet, TargetSpec};

use crate::compile::Options;
use crate::kernel::Kernel;
use crate::target::{EmitError, EmittedCode, Target};

/// The backend name.
const NAME: &str = "aarch64-neon";

/// The AArch64 [`Target`] (ARMv8.0-A with NEON, which every AArch64 application core has).
/// Immutable; construct it with [`A64Target::new`] for cross-compiling, or with
/// [`A64Target::new_checked`] / [`A64Target::for_host`], which are the feature check for
/// running the code here.
///
/// This backend does not vectorize reductions yet, so it never reassociates and its results
/// are bit-identical to the reference interpreter's in either numeric mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct A64Target;

impl A64Target {
    /// The target, whatever the host has (the code may not run here).
    pub const fn new() -> A64Target {
        A64Target
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
}

impl Target for A64Target {
    fn name(&self) -> &'static str {
        NAME
    }

    fn spec(&self) -> TargetSpec {
        TargetSpec::new(Arch::Aarch64, A64Target::code_features())
    }

    fn blocks_k(&self) -> bool {
        true
    }

    fn micro_tile(&self, dtype: accy_ir::DType) -> (u64, u64) {
        let m = micro::Micro::for_dtype(dtype, true);
        (m.mr, m.nr())
    }

    fn has_fma(&self) -> bool {
        // fmadd/fmla are ARMv8.0-A baseline.
        true
    }

    fn emit(&self, kernels: &[Kernel], options: &Options) -> Result<EmittedCode, EmitError> {
        crate::emit::assemble(kernels, Kernel::name, |ops, k| match k {
            Kernel::Loop(k) => kernel::emit_kernel(ops, k, options.reassociate)
                .map(|()| crate::emit::frame::row_scratch_limits(k).0),
            Kernel::Contraction(k) => gemm::emit_contraction(ops, k, options.reassociate),
        })
    }
}
