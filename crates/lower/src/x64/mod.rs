//! The x86-64 backend: [`X64Target`] translates [`LoopKernel`](crate::kernel::LoopKernel)s into System V AMD64 machine
//! code with `dynasm`, for one of three instruction-set tiers ([`X64Tier`]).
//!
//! Files, in the order a later `aarch64/` directory mirrors them:
//! - `mod.rs` (this file): tiers, their exact feature sets, the [`Target`] impl;
//! - `asm.rs`: the assembler type, frame addressing and checked immediates;
//! - `kernel.rs`: prologue and epilogue, the loop nest, index maps, stores and reductions;
//!   `prologue.rs`: the entry checks and the workgroup split; `on_line.rs`: a streaming
//!   transpose's second function, in sub-stripes, for outputs on a 64-byte line;
//! - `scalar.rs` and `convert.rs`: per-node scalar code (SSE2 for floats, general registers
//!   for integers and bools) covering every node and dtype;
//! - `vector.rs`, `vector_ops.rs` and `vector_reduce.rs`: the AVX2 path along the innermost
//!   dim (elementwise, with contiguous, broadcast or gathered loads; and reductions over the
//!   innermost dim); `tile.rs`: transposing loads read through tiles;
//! - `evex.rs`: the AVX-512 instructions dynasm cannot encode (masked moves, `kmovw`,
//!   `kandw`), used by the AVX-512 tier's masked tails and reductions; `vex.rs`: the FMA forms
//!   and `vgatherdpd`, which dynasm encodes wrongly.
//!
//! What each tier emits: SSE2 runs every kernel with the scalar loops; AVX2 vectorizes the
//! kernels `vector.rs` accepts (others stay scalar, whole kernel); AVX-512 is AVX2 plus a
//! masked final iteration instead of the scalar tail (except in kernels that gather or read
//! tiles, which keep the scalar tail).
//!
//! Every kernel is emitted into one `dynasmrt::VecAssembler`; each kernel is committed on its
//! own so an assembler error names the kernel. Run-time values never reach an encoding that
//! could panic: immediates go through the range checks in `asm.rs`.

pub(crate) mod asm;
mod bit_select;
mod convert;
pub(crate) mod evex;
pub(crate) mod evex_zmm;
mod gemm;
pub(crate) mod kernel;
pub(crate) mod micro;
mod on_line;
mod pin;
mod prologue;
mod scalar;
mod tile;
mod vector;
mod vector_ops;
pub(crate) mod vector_plan;
mod vector_reduce;
mod vector_zmm;
pub(crate) mod vex;

#[cfg(test)]
mod tests;

use accy_artifact::{Arch, CpuFeature, FeatureSet, TargetSpec};

use crate::compile::Options;
use crate::kernel::Kernel;
use crate::target::{EmitError, EmittedCode, Target, TransposeBlock};

/// An x86-64 instruction-set tier: which instructions the emitted code may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum X64Tier {
    /// Baseline x86-64: SSE2 scalar code only; rounding and transcendentals call imports.
    Sse2,
    /// AVX2: 256-bit vector loops for contiguous elementwise kernels, SSE4.1 `roundss` for
    /// scalar floor/ceil/round.
    Avx2,
    /// AVX-512 machines: the AVX2 tier's code, except that vector loops end with one
    /// masked 256-bit iteration (AVX-512F + VL `k`-masked loads and stores, which never touch
    /// masked-off lanes) instead of a scalar tail. Arithmetic stays 256-bit VEX: on current
    /// cores (Zen 4 double-pumps zmm) wider vectors would not pay for their encoder here.
    Avx512,
}

impl X64Tier {
    /// Every tier, lowest first.
    pub const ALL: [X64Tier; 3] = [X64Tier::Sse2, X64Tier::Avx2, X64Tier::Avx512];

    /// The backend name for this tier (`x64-sse2`, `x64-avx2`, `x64-avx512`).
    pub const fn name(self) -> &'static str {
        match self {
            X64Tier::Sse2 => "x64-sse2",
            X64Tier::Avx2 => "x64-avx2",
            X64Tier::Avx512 => "x64-avx512",
        }
    }

    /// Exactly the features the code emitted for this tier uses; recorded in the artifact.
    pub fn code_features(self) -> FeatureSet {
        match self {
            X64Tier::Sse2 => FeatureSet::of(&[CpuFeature::Sse2]),
            // roundss/roundsd (SSE4.1) in scalar code; VEX 256-bit float ops (AVX); 256-bit
            // integer ops, vpbroadcast and variable shifts (AVX2); FMA in the contraction
            // microkernels of default mode (exact mode emits none, but the tier is the same
            // machines either way). An AVX2 CPU without FMA gets the SSE2 tier.
            X64Tier::Avx2 => FeatureSet::of(&[
                CpuFeature::Sse2,
                CpuFeature::Sse41,
                CpuFeature::Avx,
                CpuFeature::Avx2,
                CpuFeature::Fma,
            ]),
            // Masked EVEX ymm moves and kmovw: AVX-512F with VL; `vrangeps` for float max and
            // min reductions: DQ.
            X64Tier::Avx512 => X64Tier::Avx2
                .code_features()
                .with(CpuFeature::Avx512f)
                .with(CpuFeature::Avx512vl)
                .with(CpuFeature::Avx512dq),
        }
    }

    /// The features a host must have for this tier to be chosen: the code's features, plus
    /// for [`X64Tier::Avx512`] the rest of the x86-64-v4 set the tier is named after (BW),
    /// so the tier means the same machines whatever subset its code uses today.
    pub fn host_features(self) -> FeatureSet {
        match self {
            X64Tier::Avx512 => self.code_features().with(CpuFeature::Avx512bw),
            _ => self.code_features(),
        }
    }

    /// Whether this tier emits 256-bit vector loops.
    pub(crate) const fn has_avx2(self) -> bool {
        matches!(self, X64Tier::Avx2 | X64Tier::Avx512)
    }
}

/// The x86-64 [`Target`] for one [`X64Tier`]. Immutable; construct it with [`X64Target::new`]
/// for cross-compiling, or with [`X64Target::new_checked`] / [`X64Target::for_host`], which
/// are the feature check for running the code here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct X64Target {
    tier: X64Tier,
}

impl X64Target {
    /// A target for `tier`, whatever the host has (the code may not run here).
    pub const fn new(tier: X64Tier) -> X64Target {
        X64Target { tier }
    }

    /// A target for `tier` if `host` has every feature the tier needs
    /// ([`X64Tier::host_features`]), else `None`.
    pub fn new_checked(tier: X64Tier, host: FeatureSet) -> Option<X64Target> {
        tier.host_features()
            .is_subset(host)
            .then_some(X64Target::new(tier))
    }

    /// The best tier `host` supports (SSE2 at least: it is the x86-64 baseline).
    pub fn for_host(host: FeatureSet) -> X64Target {
        X64Tier::ALL
            .into_iter()
            .rev()
            .find_map(|tier| X64Target::new_checked(tier, host))
            .unwrap_or(X64Target::new(X64Tier::Sse2))
    }

    /// The tier this target emits code for.
    pub const fn tier(&self) -> X64Tier {
        self.tier
    }
}

impl Target for X64Target {
    fn name(&self) -> &'static str {
        self.tier.name()
    }

    fn spec(&self) -> TargetSpec {
        TargetSpec::new(Arch::X86_64, self.tier.code_features())
    }

    fn host_features(&self) -> FeatureSet {
        self.tier.host_features()
    }

    fn micro_tile(&self, dtype: accy_ir::DType) -> (u64, u64) {
        let m = micro::Micro::for_tier(self.tier, dtype, true);
        (m.mr, m.nr())
    }

    fn blocks_k(&self) -> bool {
        true
    }

    fn copies_a(&self) -> bool {
        // The SSE2 and AVX2 tiles' 4 and 6 rows fit an 8-way L1 set even when they fall into
        // one, and reading A in place saves the copy: paired runs on a Zen 3 core, 1 thread,
        // AVX2 2048³ 1.3%, 1024³ 0.9%, 512³ 1.1%, 256³ 3%, 64³ 4%, 128×768×3072 1.5%,
        // 96×4096×256 11%, 256×8192×256 7% and 48×16384×128 18% faster in place; SSE2 512³
        // 0.6%, 1024³ 2.3%, 64³ 4.7% (medians of call-by-call pairs; the harness favoured the
        // second of a pair by 0.7% at 2048³, subtracted there, and by 0.2% or less at 256³ and
        // 64³). The AVX-512 tile's 14 rows do not fit 8 ways: it keeps the copy (unmeasured
        // here).
        self.tier == X64Tier::Avx512
    }

    fn has_fma(&self) -> bool {
        // The AVX2 tier's feature set includes FMA; the SSE2 tier's CPUs may lack it.
        self.tier.has_avx2()
    }

    fn has_scale_b(&self) -> bool {
        // vscalefps/pd (zmm, and ymm with AVX512VL) and vscalefss/sd (scalar code).
        self.tier == X64Tier::Avx512
    }

    fn transpose_block(&self) -> TransposeBlock {
        // The vector paths read a transposing load's source lines whole (`tile.rs`). On a
        // 4096² f32 transpose (`accy bench`, Xeon, 1 thread; L1 prefetches then), 256 bytes
        // × 64 rows measured 25-30 ms; 64 × 64: 29-34 ms; 64 × 8: 41-50 ms. Later, on a
        // quieter host (copy of the same bytes 5.7 ms): 256 × 64 12.0-12.6 ms, 128 × 64
        // 14.1 ms, 512 × 64 8.6-8.8 ms, 1024 × 32 8.3-8.5 ms (2 threads 7.4 → 5.0 ms p50),
        // 1024 × 64 8.1-8.2 ms, 2048 × 32 8.1-8.4 ms, 2048 × 16 8.9 ms, 4096 × 16 9.9 ms:
        // more of each source page per visit helps until a block's rows outgrow the L1.
        // Blocks along the source rows instead (EPYC, 64-byte-aligned buffers, non-temporal
        // stores, 1 thread; noisy host): 256 × 256 6.1-6.7 ms, 128 × 256 6.4-6.8 ms, 256 ×
        // 128 6.8-7.3 ms, 512 × 128 7.1-8.0 ms, against 7.2-7.7 ms for 1024 × 32 in the old
        // order: each destination row takes a run of 1 KiB per block, written whole. With
        // zmm tiles (same host, min of `accy bench`): 256 × 256 6.3-6.8 ms, 128 × 256 6.2-6.5
        // ms, 64 × 256 6.1-6.6 ms, 512 × 256 7.3 ms, 256 × 128 8.0 ms, 1024 × 64 9.9 ms,
        // blocks along the columns 9.2-9.3 ms; runs of 512 rows (32 KiB of tiles) 7.2-7.6 ms.
        if self.tier.has_avx2() {
            TransposeBlock {
                line_bytes: 256,
                run: 256,
                along_rows: true,
            }
        } else {
            crate::plan::blocking::LINE_BY_ROWS
        }
    }

    fn streams_stores(&self, k: &crate::kernel::LoopKernel, options: &Options) -> bool {
        kernel::uses_non_temporal_stores(k, self.tier, options.reassociate, &options.caches)
    }

    fn on_line_dims(
        &self,
        k: &crate::kernel::LoopKernel,
        options: &Options,
    ) -> Option<accy_ir::Dims> {
        on_line::form(k, self.tier, options.reassociate, &options.caches).map(|form| form.dims)
    }

    fn emit(&self, kernels: &[Kernel], options: &Options) -> Result<EmittedCode, EmitError> {
        crate::emit::assemble(kernels, Kernel::name, |ops, k| match k {
            Kernel::Loop(k) => {
                let caches = Some(&options.caches);
                kernel::emit_kernel(ops, k, self.tier, options.reassociate, caches)
                    .map(|()| crate::emit::frame::row_scratch_limits(k).0)
            }
            Kernel::Contraction(k) => gemm::emit_contraction(ops, k, self.tier, options),
        })
    }
}
