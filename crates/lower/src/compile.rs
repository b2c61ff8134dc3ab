//! [`compile`]: the whole pipeline from a program to a validated [`Artifact`].

use accy_artifact::{Artifact, LaunchPlan, TargetSpec};
use accy_ir::Program;

use crate::error::CompileError;
use crate::plan::{plan_with, LoweredProgram};
use crate::target::{EmittedCode, Target};

/// Knobs of one compile. [`Options::default`] is what production uses; others are built from
/// it with the `with_*` methods (`Options::default().with_fuse(false)`), so adding a knob
/// breaks no caller.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Fuse elementwise chains into their consumers (default `true`). With `false`, every
    /// value that is not a view of memory is computed by its own kernel, which makes each op
    /// visible in a dump when debugging; results are identical.
    pub fuse: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options { fuse: true }
    }
}

impl Options {
    /// These options with [`Options::fuse`] set to `fuse`.
    pub fn with_fuse(mut self, fuse: bool) -> Options {
        self.fuse = fuse;
        self
    }
}

/// Compiles `program` for `target`: verifies it, plans it (fusion, buffers, commands), emits
/// the kernels' code and assembles an [`Artifact`] that has passed
/// [`Artifact::validate`]. Never panics; every failure is a [`CompileError`].
pub fn compile(
    program: &Program,
    target: &dyn Target,
    options: &Options,
) -> Result<Artifact, CompileError> {
    accy_ir::verify(program).map_err(CompileError::Invalid)?;
    let lowered = plan_with(program, options)?;
    let code = target.emit(&lowered.kernels)?;
    let artifact = lowered.into_artifact(target.spec(), code)?;
    artifact.validate()?;
    Ok(artifact)
}

impl LoweredProgram {
    /// The artifact running this plan with `code` (one entry per kernel, in order) for
    /// `target`. Does not validate it; [`compile`] does.
    pub fn into_artifact(
        self,
        target: TargetSpec,
        code: EmittedCode,
    ) -> Result<Artifact, CompileError> {
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
        artifact.launch = LaunchPlan {
            commands: self.commands,
        };
        Ok(artifact)
    }
}
