//! [`compile`]: the whole pipeline from a program to a validated [`Artifact`].

use accy_artifact::{Artifact, Blocking, LaunchPlan, TargetSpec};
use accy_ir::{DType, Program};

use crate::error::CompileError;
use crate::kernel::Kernel;
use crate::plan::{plan_with, LoweredProgram};
use crate::target::{EmittedCode, Target, TransposeBlock};

/// Knobs of one compile: the one carrier of everything a caller chooses about lowering, from
/// fusion to the numeric mode. [`Options::default`] is what production uses; others are built
/// from it with the `with_*` methods (`Options::default().with_fuse(false)`), so adding a knob
/// breaks no caller.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Fuse elementwise chains into their consumers (default `true`). With `false`, every
    /// value that is not a view of memory is computed by its own kernel, which makes each op
    /// visible in a dump when debugging; results are identical.
    pub fuse: bool,
    /// The numeric mode (default `true`): whether float sums (and so dots) may be
    /// reassociated for speed. With `false` ("exact mode") every result is bit-identical to
    /// the reference interpreter's; with `true` float sums may differ by rounding, within the
    /// bounds the op documentation states.
    pub reassociate: bool,
    /// The cache sizes kernels are blocked for (default: 32 KiB L1d, 512 KiB L2, 8 MiB
    /// last-level cache, at or below what current machines have). A session passes the host's;
    /// recorded in the artifact.
    pub caches: Blocking,
    /// The contraction register tiles `(rows, columns)` for f32 and f64; [`compile`] sets them
    /// from the target ([`Target::micro_tile`]).
    pub micro_tiles: [(u64, u64); 2],
    /// Whether the target's contraction code blocks k ([`Target::blocks_k`]); [`compile`]
    /// sets it from the target. The planner then walks long contractions in blocks of k
    /// (`plan/contract.rs`); without it every tile runs the whole of k at once.
    pub blocks_k: bool,
    /// Whether the target's contraction code should copy A's row panels
    /// ([`Target::copies_a`]); [`compile`] sets it from the target, and the planner records it
    /// in each contraction kernel ([`crate::kernel::ContractionKernel::copy_a`]).
    pub copies_a: bool,
    /// Whether the target has a fused multiply-add; [`compile`] sets it from the target
    /// ([`Target::has_fma`]). In default mode ([`Options::reassociate`]) it lets transcendentals
    /// be expanded into vectorisable node sequences (`crate::math`) instead of calling the
    /// import table.
    pub fma: bool,
    /// Whether the target scales by a power of two in one instruction (AVX-512's
    /// `vscalefps`); [`compile`] sets it from the target ([`Target::has_scale_b`]). The
    /// expansions of `exp` and its relatives then scale with [`crate::kernel::Node::ScaleB`]
    /// instead of exponent-field arithmetic, which makes them cheap enough for the planner to
    /// recompute a shared one larger than the L2 rather than store it (`plan/mod.rs`).
    pub scale_b: bool,
    /// The blocks a transposing kernel is cut into; [`compile`] sets them from the target
    /// ([`Target::transpose_block`]).
    pub transpose_block: TransposeBlock,
    /// Whether row-local runs of instructions over a value larger than half the L2 cache
    /// (softmax, layer norm) are planned a block of rows at a time (`plan/rows.rs`). Off by
    /// default: measured on a 2-core host (`cargo xtask bench memory` / `parallel`), the
    /// per-block dispatches cost more than the cache reuse saves (4096×1024 layer norm 4.2 ms
    /// without, 5.5 ms with; the softmax's 2-thread speedup fell from 2.0× to 1.4×). Measured
    /// again once the kernels were vectorised (AVX-512 host, 1 thread, `accy bench`, 4096×1024
    /// f32): still slower, also with blocks of half the L2 and the block outputs streamed.
    /// Layer norm ran 411-466 invocations a second against 673-941 without: planned for a
    /// block small enough to stay cached, the rows' centred values are materialised (4
    /// kernels, not 3); the softmax, 454-521 against 430-587, within the noise. Again once a
    /// shared `exp` no larger than the L2 was stored once (so a block's softmax computes one
    /// `exp` per element, not two; 1 thread, min over three rounds, 4096×1024 f32): softmax
    /// 1.81-2.05 ms against 1.43-1.52 ms without, layer norm 1.46-1.56 ms against 0.66-0.98
    /// ms — a block's rows are neither fetched ahead nor streamed out as the chains'
    /// (`plan/chain.rs`) are.
    pub row_blocks: bool,
    /// Whether the artifact's runs flush subnormal floats to zero (default `false`; see
    /// `accy_artifact::Artifact::flush_subnormals`). The generated code is the same; the
    /// runtime sets the floating-point environment the artifact asks for.
    pub flush_subnormals: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            fuse: true,
            reassociate: true,
            caches: Blocking {
                l1d: 32 << 10,
                l2: 512 << 10,
                llc: 8 << 20,
                skip_scattered_prefetch: false,
            },
            micro_tiles: [(6, 16), (6, 8)],
            blocks_k: false,
            copies_a: true,
            fma: false,
            scale_b: false,
            transpose_block: crate::plan::blocking::LINE_BY_ROWS,
            row_blocks: false,
            flush_subnormals: false,
        }
    }
}

impl Options {
    /// These options with [`Options::fuse`] set to `fuse`.
    pub fn with_fuse(mut self, fuse: bool) -> Options {
        self.fuse = fuse;
        self
    }

    /// These options with [`Options::row_blocks`] set to `row_blocks`.
    pub fn with_row_blocks(mut self, row_blocks: bool) -> Options {
        self.row_blocks = row_blocks;
        self
    }

    /// These options with [`Options::flush_subnormals`] set to `flush`.
    pub fn with_flush_subnormals(mut self, flush: bool) -> Options {
        self.flush_subnormals = flush;
        self
    }

    /// These options with [`Options::reassociate`] set to `reassociate`.
    pub fn with_reassociate(mut self, reassociate: bool) -> Options {
        self.reassociate = reassociate;
        self
    }

    /// These options with [`Options::caches`] set; zero sizes keep the defaults, and
    /// [`Blocking::skip_scattered_prefetch`] is taken as given.
    pub fn with_caches(mut self, caches: Blocking) -> Options {
        let defaults = Options::default().caches;
        self.caches = Blocking {
            l1d: if caches.l1d == 0 {
                defaults.l1d
            } else {
                caches.l1d
            },
            l2: if caches.l2 == 0 {
                defaults.l2
            } else {
                caches.l2
            },
            llc: if caches.llc == 0 {
                defaults.llc
            } else {
                caches.llc
            },
            skip_scattered_prefetch: caches.skip_scattered_prefetch,
        };
        self
    }

    /// These options with the register tiles, FMA and scaling flags of `target`.
    pub fn for_target(mut self, target: &dyn Target) -> Options {
        self.micro_tiles = [target.micro_tile(DType::F32), target.micro_tile(DType::F64)];
        self.blocks_k = target.blocks_k();
        self.copies_a = target.copies_a();
        self.fma = target.has_fma();
        self.scale_b = target.has_scale_b();
        self.transpose_block = target.transpose_block();
        self
    }

    /// Whether compiles with these options expand transcendentals (`crate::math`): default
    /// mode on a target with FMA.
    pub(crate) fn expands_math(&self) -> bool {
        self.reassociate && self.fma
    }

    /// The contraction register tile for `dtype`.
    pub(crate) fn micro_tile(&self, dtype: DType) -> (u64, u64) {
        if dtype == DType::F64 {
            self.micro_tiles[1]
        } else {
            self.micro_tiles[0]
        }
    }
}

/// Everything one compile produced: the artifact, and the kernel descriptions its code was
/// generated from (kernel `i` is `artifact.kernels[i]`), for tools that show them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compilation {
    /// The validated artifact.
    pub artifact: Artifact,
    /// The kernels, in the artifact's kernel order; each prints itself (`Display`).
    pub kernels: Vec<Kernel>,
    /// For each kernel, the program's instructions (by index, ascending) whose work it does:
    /// what the kernel fused.
    pub sources: Vec<Vec<u32>>,
}

/// Compiles `program` for `target`: verifies it, plans it (fusion, buffers, commands), in
/// default mode expands transcendentals into vector math (`crate::math`), emits the kernels'
/// code and assembles an [`Artifact`] that has passed
/// [`Artifact::validate`]. Never panics; every failure is a [`CompileError`].
pub fn compile(
    program: &Program,
    target: &dyn Target,
    options: &Options,
) -> Result<Artifact, CompileError> {
    compile_detailed(program, target, options).map(|c| c.artifact)
}

/// [`compile`], keeping the kernel descriptions beside the artifact (for `accy inspect`).
pub fn compile_detailed(
    program: &Program,
    target: &dyn Target,
    options: &Options,
) -> Result<Compilation, CompileError> {
    accy_ir::verify(program).map_err(CompileError::Invalid)?;
    let options = options.clone().for_target(target);
    let mut lowered = plan_with(program, &options)?;
    if options.expands_math() {
        crate::math::expand(&mut lowered.kernels, options.scale_b)?;
    }
    let code = target.emit(&lowered.kernels, &options)?;
    let mut compiled = lowered.into_compilation(target.spec(), code)?;
    compiled.artifact.blocking = options.caches;
    compiled.artifact.flush_subnormals = options.flush_subnormals;
    compiled.artifact.validate()?;
    Ok(compiled)
}

impl LoweredProgram {
    /// The artifact running this plan with `code` (one entry per kernel, in order) for
    /// `target`. Does not validate it; [`compile`] does.
    pub fn into_artifact(
        self,
        target: TargetSpec,
        code: EmittedCode,
    ) -> Result<Artifact, CompileError> {
        self.into_compilation(target, code).map(|c| c.artifact)
    }

    /// [`LoweredProgram::into_artifact`] (not validated yet), with the kernels and each
    /// kernel's source instructions moved beside it rather than copied (a copy was a deep copy
    /// of every kernel, made on each compile and dropped by [`compile`]).
    fn into_compilation(
        self,
        target: TargetSpec,
        code: EmittedCode,
    ) -> Result<Compilation, CompileError> {
        if code.entries.len() != self.kernels.len() {
            return Err(CompileError::internal(format!(
                "the backend emitted {} entries for {} kernels",
                code.entries.len(),
                self.kernels.len()
            )));
        }
        let mut artifact = Artifact::new(target);
        artifact.code = code.code;
        artifact.kernels = code.entries;
        artifact.constants = self.constants;
        artifact.plan = self.plan;
        artifact.setup = LaunchPlan {
            commands: self.setup,
        };
        artifact.launch = LaunchPlan {
            commands: self.commands,
        };
        Ok(Compilation {
            artifact,
            kernels: self.kernels,
            sources: self.sources,
        })
    }
}
