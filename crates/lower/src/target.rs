//! The one interface arch-neutral lowering sees of an ISA backend, and the one lookup from an
//! architecture, CPU features or a name to a backend.
//!
//! Backends are cargo features of this crate (`x64`, `aarch64`, both on by default). The lookup
//! tells apart an architecture whose backend this build left out ([`LookupError::NotBuiltIn`])
//! from a host no backend serves ([`LookupError::UnsupportedHost`]) and from a named target
//! whose features this CPU lacks ([`LookupError::MissingFeatures`]).

use accy_artifact::{Arch, FeatureSet, KernelEntry, TargetSpec};

use crate::compile::Options;
use crate::kernel::Kernel;

/// An ISA backend: translates kernel descriptions into machine code for one instruction-set
/// tier. Implementations are immutable and shareable (`Send + Sync`), so one can serve many
/// compiles at once.
pub trait Target: Send + Sync + std::fmt::Debug {
    /// A short stable name (`x64-sse2`, `x64-avx2`, `x64-avx512`, `aarch64-neon`), used by
    /// tools and test names.
    fn name(&self) -> &'static str;

    /// The architecture and the exact CPU features the emitted code needs; recorded in the
    /// artifact so a runtime refuses to run it on a CPU that lacks any of them.
    fn spec(&self) -> TargetSpec;

    /// The features a host must have for [`lookup_host`] to choose this target: at least
    /// [`Target::spec`]'s, possibly more (a tier named after an ISA level asks for the whole
    /// level, whatever subset its code uses today).
    fn host_features(&self) -> FeatureSet {
        self.spec().features
    }

    /// The `(rows, columns)` of the register tile this target's contraction microkernels
    /// compute for `dtype` (f32 or f64): the planner makes contraction tiles multiples of it
    /// and panels the right operand to its width (see `crate::emit::contraction`).
    fn micro_tile(&self, dtype: accy_ir::DType) -> (u64, u64);

    /// Whether this target's contraction code walks k in blocks of the kernel's `tile_k`,
    /// outermost in each tile (see `crate::emit::contraction`): the planner then sizes tiles
    /// for that order, and gives other targets `tile_k = k`. The default is `false`.
    fn blocks_k(&self) -> bool {
        false
    }

    /// Whether this target's contraction code should copy each row panel's block of the left
    /// operand into worker scratch, rows an odd number of cache lines apart, before the column
    /// panels read it (`crate::emit::contraction::PackA`), instead of reading it in place:
    /// for a register tile with more rows than an L1 cache set has ways, whose rows of a
    /// row-major A a power of two apart would evict each other on every step of k. The planner
    /// records the choice in each [`crate::kernel::ContractionKernel`] where a copy would be
    /// made. The default is `false`: the AArch64 backend reads A in place.
    fn copies_a(&self) -> bool {
        false
    }

    /// Whether this target's code may use a fused multiply-add instruction everywhere (the
    /// vector paths and scalar code). In default mode [`crate::compile()`] then expands
    /// transcendentals into node sequences built on `Fma` (see `crate::math`); without one
    /// they call the runtime's import table. The default is `false`.
    fn has_fma(&self) -> bool {
        false
    }

    /// Whether every code path of this target computes [`crate::kernel::Node::ScaleB`] (a
    /// scaling by a power of two, rounded once) in one instruction. Expansions only produce
    /// that node for such targets. The default is `false`.
    fn has_scale_b(&self) -> bool {
        false
    }

    /// The blocks a transposing kernel of 4- or 8-byte elements is cut into (see
    /// `plan::blocking`):
    /// the bytes of the block along the dim its load reads contiguously, and the elements of
    /// the inner run (the source rows of a block). The default, one 64-byte line by 8 rows
    /// (below any L1's associativity), suits code that uses up each loaded line element by
    /// element while it stays cached; an emitter that reads whole lines at once (x64's
    /// tiles) asks for larger blocks.
    fn transpose_block(&self) -> TransposeBlock {
        crate::plan::blocking::LINE_BY_ROWS
    }

    /// Whether this target's code for `k`, compiled with `options`, writes its result with
    /// non-temporal stores: [`crate::streams_stores`] allows it, and the target's code for `k`
    /// has the vector loop that uses them (by default: never). Some stores may still be
    /// ordinary (x64's tiled loops use them where an address is not aligned). Shown by
    /// `accy inspect`.
    fn streams_stores(&self, k: &crate::kernel::LoopKernel, options: &Options) -> bool {
        let _ = (k, options);
        false
    }

    /// The dims of a second visiting order of `k`'s points that this target's code, compiled
    /// with `options`, runs instead when the store binding starts on a 64-byte line (x64's
    /// streaming transposes in sub-stripes, `x64/on_line.rs`), or `None` (by default: never).
    /// Shown by `accy inspect`.
    fn on_line_dims(
        &self,
        k: &crate::kernel::LoopKernel,
        options: &Options,
    ) -> Option<accy_ir::Dims> {
        let _ = (k, options);
        None
    }

    /// Machine code for `kernels`, one entry per kernel in the same order, each entry following
    /// the dispatch ABI (`accy_artifact::abi`). The kernels have passed [`Kernel::validate`].
    /// `options` carries the numeric mode ([`Options::reassociate`]). Never panics: an
    /// encoding problem is an [`EmitError`].
    fn emit(&self, kernels: &[Kernel], options: &Options) -> Result<EmittedCode, EmitError>;
}

/// How a transposing kernel is blocked ([`Target::transpose_block`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposeBlock {
    /// Bytes of a block along the dim the transposed load reads contiguously (a multiple of
    /// 64, one cache line).
    pub line_bytes: u64,
    /// Elements of a block along the innermost (stored contiguously) dim. Both fields apply
    /// to kernels whose values are all 4 bytes or all 8 bytes; others use one line by 8.
    pub run: u64,
    /// The order of the blocks: `true` visits the blocks of one stripe of source rows (one
    /// stripe of destination columns) one after another, each reading the next lines of the
    /// same rows; `false` visits the blocks of one stripe of source columns (destination
    /// rows), each reading the same lines of the next rows. Applies only where a run is at
    /// least a 64-byte line (so each block writes whole destination lines); shorter runs
    /// keep `false`.
    pub along_rows: bool,
}

/// What a [`Target`] produces: position-independent code and where each kernel starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmittedCode {
    /// The code bytes of all kernels.
    pub code: Vec<u8>,
    /// One entry per kernel, in the order given to [`Target::emit`].
    pub entries: Vec<KernelEntry>,
}

/// Why a backend could not emit code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EmitError {
    /// The kernel uses something this backend does not implement (a bug or a missing feature,
    /// never bad user input: the verifier and planner accept only what every backend handles).
    #[error("kernel `{kernel}`: {what} is not supported by the {target} backend")]
    Unsupported {
        /// Kernel name.
        kernel: String,
        /// What was missing.
        what: String,
        /// Backend name.
        target: &'static str,
    },
    /// The assembler refused an instruction or could not resolve a label.
    #[error("kernel `{kernel}`: assembler error: {message}")]
    Assembler {
        /// Kernel name.
        kernel: String,
        /// The assembler's message (for dynasm, including the label name).
        message: String,
    },
    /// The code grew past what an artifact can address (4 GiB).
    #[error("generated code is too large ({bytes} bytes)")]
    TooLarge {
        /// Bytes generated.
        bytes: u64,
    },
}

/// Why no target could be looked up.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// accy has a backend for this architecture, but this build was compiled without it (the
    /// crate feature named here is off).
    #[error("the {arch} backend is not built in (enable accy-lower's `{feature}` feature)")]
    NotBuiltIn {
        /// The architecture asked for.
        arch: Arch,
        /// The cargo feature that builds its backend.
        feature: &'static str,
    },
    /// The host's architecture is one accy generates no code for.
    #[error("accy generates no code for this host's architecture ({host})")]
    UnsupportedHost {
        /// The host architecture's name (`std::env::consts::ARCH`).
        host: &'static str,
    },
    /// No target has this name.
    #[error("unknown target `{name}`: expected one of {known}")]
    UnknownName {
        /// The name given.
        name: String,
        /// The names this build knows, comma-separated.
        known: String,
    },
    /// The named target needs features this CPU lacks (or that are masked away).
    #[error("this CPU cannot run {target} code: it lacks {missing}")]
    MissingFeatures {
        /// The target's name.
        target: &'static str,
        /// What the host lacks.
        missing: FeatureSet,
    },
}

/// The architectures whose backends this build contains.
pub const BUILT_IN: &[Arch] = &[
    #[cfg(feature = "x64")]
    Arch::X86_64,
    #[cfg(feature = "aarch64")]
    Arch::Aarch64,
];

/// The cargo feature that builds `arch`'s backend.
const fn feature_of(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x64",
        Arch::Aarch64 => "aarch64",
    }
}

/// Every target of `arch`, lowest tier first, if `built_in` holds its backend.
fn targets_in(arch: Arch, built_in: &[Arch]) -> Result<Vec<Box<dyn Target>>, LookupError> {
    if !built_in.contains(&arch) {
        return Err(LookupError::NotBuiltIn {
            arch,
            feature: feature_of(arch),
        });
    }
    let targets: Vec<Box<dyn Target>> = match arch {
        #[cfg(feature = "x64")]
        Arch::X86_64 => crate::x64::X64Tier::ALL
            .into_iter()
            .map(|tier| Box::new(crate::x64::X64Target::new(tier)) as Box<dyn Target>)
            .collect(),
        #[cfg(feature = "aarch64")]
        Arch::Aarch64 => vec![Box::new(crate::aarch64::A64Target::new())],
        #[allow(
            unreachable_patterns,
            reason = "reached only in builds that leave a backend out"
        )]
        _ => Vec::new(),
    };
    Ok(targets)
}

/// Every target of `arch` this build contains, lowest tier first.
pub fn targets(arch: Arch) -> Result<Vec<Box<dyn Target>>, LookupError> {
    targets_in(arch, BUILT_IN)
}

/// The best target for a host of architecture `arch` (`None`: one accy knows nothing of) whose
/// code may use `features`: the highest tier whose [`Target::host_features`] the host has.
pub fn lookup_host(
    arch: Option<Arch>,
    features: FeatureSet,
) -> Result<Box<dyn Target>, LookupError> {
    lookup_host_in(arch, features, BUILT_IN)
}

fn lookup_host_in(
    arch: Option<Arch>,
    features: FeatureSet,
    built_in: &[Arch],
) -> Result<Box<dyn Target>, LookupError> {
    let arch = arch.ok_or(LookupError::UnsupportedHost {
        host: std::env::consts::ARCH,
    })?;
    let mut targets = targets_in(arch, built_in)?;
    let missing = targets
        .first()
        .map(|t| t.host_features().missing(features))
        .unwrap_or_default();
    let best = targets
        .iter()
        .rposition(|t| t.host_features().is_subset(features));
    match best {
        Some(i) => Ok(targets.swap_remove(i)),
        None => Err(LookupError::MissingFeatures {
            target: targets.first().map_or("", |t| t.name()),
            missing,
        }),
    }
}

/// The target called `name` (as [`Target::name`] prints it). With `host`, also checks that a
/// CPU with those features can run its code ([`LookupError::MissingFeatures`] otherwise);
/// without, the target may be one this machine cannot run (for inspecting or cross-compiling).
pub fn lookup_name(name: &str, host: Option<FeatureSet>) -> Result<Box<dyn Target>, LookupError> {
    let mut known = Vec::new();
    for &arch in BUILT_IN {
        for target in targets(arch)? {
            if target.name() != name {
                known.push(target.name());
                continue;
            }
            if let Some(host) = host {
                let missing = target.host_features().missing(host);
                if !missing.is_empty() {
                    return Err(LookupError::MissingFeatures {
                        target: target.name(),
                        missing,
                    });
                }
            }
            return Ok(target);
        }
    }
    Err(LookupError::UnknownName {
        name: name.to_owned(),
        known: known.join(", "),
    })
}

/// The names of every target this build contains, lowest tier first per architecture.
pub fn names() -> Vec<&'static str> {
    BUILT_IN
        .iter()
        .filter_map(|&arch| targets(arch).ok())
        .flatten()
        .map(|t| t.name())
        .collect()
}

#[cfg(test)]
mod tests {
    use accy_artifact::CpuFeature;

    use super::*;

    #[test]
    fn a_backend_left_out_of_the_build_is_not_built_in() {
        let only_x64 = [Arch::X86_64];
        let e = lookup_host_in(Some(Arch::Aarch64), Arch::Aarch64.all_features(), &only_x64)
            .unwrap_err();
        assert_eq!(
            e,
            LookupError::NotBuiltIn {
                arch: Arch::Aarch64,
                feature: "aarch64"
            }
        );
        assert!(e.to_string().contains("not built in"), "{e}");
        // The same question against this build's real table.
        for arch in Arch::ALL {
            let answer = lookup_host(Some(arch), arch.all_features());
            if BUILT_IN.contains(&arch) {
                assert!(answer.is_ok(), "{arch}: {answer:?}");
            } else {
                assert!(
                    matches!(answer, Err(LookupError::NotBuiltIn { .. })),
                    "{arch}: {answer:?}"
                );
            }
        }
    }

    #[test]
    fn hosts_get_their_best_tier_and_unknown_ones_a_clear_answer() {
        assert_eq!(
            lookup_host(None, FeatureSet::EMPTY).unwrap_err(),
            LookupError::UnsupportedHost {
                host: std::env::consts::ARCH
            }
        );
        #[cfg(feature = "x64")]
        {
            let sse2 = FeatureSet::of(&[CpuFeature::Sse2]);
            assert_eq!(
                lookup_host(Some(Arch::X86_64), sse2).unwrap().name(),
                "x64-sse2"
            );
            let all = Arch::X86_64.all_features();
            assert_eq!(
                lookup_host(Some(Arch::X86_64), all).unwrap().name(),
                "x64-avx512"
            );
            assert!(matches!(
                lookup_host(Some(Arch::X86_64), FeatureSet::EMPTY),
                Err(LookupError::MissingFeatures { .. })
            ));
            let e = lookup_name("x64-avx512", Some(sse2)).unwrap_err();
            assert!(
                matches!(e, LookupError::MissingFeatures { target: "x64-avx512", missing }
                    if missing.contains(CpuFeature::Avx512f)),
                "{e:?}"
            );
            assert_eq!(lookup_name("x64-avx2", None).unwrap().name(), "x64-avx2");
        }
        #[cfg(feature = "aarch64")]
        assert_eq!(
            lookup_name("aarch64-neon", None).unwrap().spec().arch,
            Arch::Aarch64
        );
        let e = lookup_name("x86", None).unwrap_err();
        assert!(matches!(e, LookupError::UnknownName { .. }), "{e:?}");
        for name in names() {
            assert!(e.to_string().contains(name), "{e}");
        }
    }
}
