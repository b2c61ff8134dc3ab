//! [`SessionOptions`]: how a [`Session`](crate::Session) generates code and how many threads
//! run inside one invocation.

use accy_executable::Tier;

/// How a [`Session`](crate::Session) generates code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionOptions {
    /// The highest instruction-set tier generated code may use. `None` uses what the CPU
    /// offers, lowered by the `ACCY_CPU_FEATURES_MAX` environment variable when it is set.
    pub max_tier: Option<Tier>,
    /// The code generator by name (`x64-avx2`, …; see `accy_lower::target::names`). `None`
    /// picks the best one for this CPU (within `max_tier`). A named one this CPU cannot run is
    /// refused by [`Session::with_options`](crate::Session::with_options).
    pub target: Option<&'static str>,
    /// Threads working on one invocation: the caller plus `threads - 1` pool threads the
    /// session starts (1 starts none). `None` uses one per CPU this process may use
    /// (`std::thread::available_parallelism`). Results do not depend on it: the tile grid of
    /// every kernel is fixed at compile time, whatever runs the tiles.
    pub threads: Option<usize>,
    /// Whether float sum reductions (and so `dot`) may be reassociated for speed (default
    /// `true`). Then they may differ from the reference interpreter's row-major sum by
    /// rounding; with `false` every result is bit-identical to the interpreter's, up to the
    /// payload and sign of NaNs (which the op semantics leave unspecified).
    pub reassociate_float_sums: bool,
    /// Whether runs flush subnormal floats to zero (default `false`; ONNX Runtime's
    /// `session.set_denormal_as_zero`): subnormal inputs of float arithmetic read as zero
    /// and subnormal results are written as zero, so results differ from the
    /// interpreter's wherever a subnormal appears, and work that underflows (an attention's
    /// products of far-apart scores) is not slowed down tens of times by the CPU's microcode
    /// assists. Recorded in each artifact ([`accy_artifact::Artifact::flush_subnormals`]), so
    /// a saved artifact runs the same way; the caller's own floating-point environment is
    /// restored after every run.
    pub flush_subnormals: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            max_tier: None,
            target: None,
            threads: None,
            reassociate_float_sums: true,
            flush_subnormals: false,
        }
    }
}

impl SessionOptions {
    /// These options with `max_tier` set.
    pub fn with_max_tier(mut self, tier: Tier) -> Self {
        self.max_tier = Some(tier);
        self
    }

    /// These options with the code generator called `name` (see [`SessionOptions::target`]).
    pub fn with_target(mut self, name: &'static str) -> Self {
        self.target = Some(name);
        self
    }

    /// These options with `threads` threads per invocation (see [`SessionOptions::threads`]).
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = Some(threads);
        self
    }

    /// These options with `reassociate_float_sums` set.
    pub fn with_reassociate_float_sums(mut self, allow: bool) -> Self {
        self.reassociate_float_sums = allow;
        self
    }

    /// These options with `flush_subnormals` set (see [`SessionOptions::flush_subnormals`]).
    pub fn with_flush_subnormals(mut self, flush: bool) -> Self {
        self.flush_subnormals = flush;
        self
    }

    /// Every name [`SessionOptions::target`] may hold in this build (lowest tier first per
    /// architecture), whether or not this CPU can run it. A host that reads a target name
    /// from outside (a C caller, a configuration file) finds the `&'static str` here.
    pub fn target_names() -> Vec<&'static str> {
        accy_lower::target::names()
    }
}
