//! [`ModelRecorder`]: the recording phase of a model definition.

use accy_artifact::Artifact;
use accy_executable::Weights;
use accy_ir::Program;

use super::definition::{Fragment, Spec};
use super::{
    next_id, Allocation, DefinitionId, Kernel, ModelContext, ModelDefinition, ModelFailure,
};
use crate::mapping::Inner;
use crate::Error;

/// Collects a model's allocations and fragments, then [`ModelRecorder::freeze`]s them into a
/// [`ModelDefinition`]. Weights added with [`ModelRecorder::weight`] are borrowed until the
/// freeze copies them (once) onto read-only pages; fragments are compiled as they are added,
/// so a bad program is refused by the call that adds it.
///
/// Allocation and kernel handles it returns stay valid for the definition it freezes into.
#[derive(Debug)]
pub struct ModelRecorder<'w> {
    context: ModelContext,
    id: DefinitionId,
    base: Weights,
    added: Vec<(String, &'w [u8])>,
    allocations: Vec<Spec>,
    kernels: Vec<Artifact>,
}

impl<'w> ModelRecorder<'w> {
    pub(crate) fn new(context: ModelContext, base: Weights) -> ModelRecorder<'w> {
        let allocations = base.names().map(|n| Spec::Weight(n.to_owned())).collect();
        ModelRecorder {
            context,
            id: DefinitionId(next_id()),
            base,
            added: Vec::new(),
            allocations,
            kernels: Vec::new(),
        }
    }

    /// The identifier the frozen definition will have.
    pub fn id(&self) -> DefinitionId {
        self.id
    }

    fn allocation_handle(&self, index: usize) -> Allocation {
        Allocation {
            definition: self.id,
            // At most one allocation per call, so the count stays far below `u32::MAX`
            // unless a caller makes billions; saturating keeps the handle checkable.
            index: u32::try_from(index).unwrap_or(u32::MAX),
        }
    }

    /// Adds an immutable allocation: the weight `name` with contents `bytes`, which fragments'
    /// weight parameters of that name bind to and regions may read. The name must be
    /// non-empty and new ([`ModelFailure::WeightName`] otherwise).
    pub fn weight(&mut self, name: &str, bytes: &'w [u8]) -> Result<Allocation, Error> {
        let reason = if name.is_empty() {
            Some("a weight needs a name")
        } else if self.allocation(name).is_some() {
            Some("the model already has a weight of that name")
        } else {
            None
        };
        if let Some(reason) = reason {
            let failure = ModelFailure::WeightName {
                name: name.to_owned(),
                reason,
            };
            return Err(Inner::Model(failure).into_error());
        }
        self.added.push((name.to_owned(), bytes));
        self.allocations.push(Spec::Weight(name.to_owned()));
        Ok(self.allocation_handle(self.allocations.len() - 1))
    }

    /// Adds a scratch allocation of at most `bytes` bytes. It takes no memory here: each
    /// inference slot of a prepared plan gets private memory for the extent that plan uses.
    pub fn scratch(&mut self, bytes: u64) -> Allocation {
        self.allocations.push(Spec::Scratch(bytes));
        self.allocation_handle(self.allocations.len() - 1)
    }

    /// The immutable allocation holding the weight `name`, if there is one.
    pub fn allocation(&self, name: &str) -> Option<Allocation> {
        let index = self
            .allocations
            .iter()
            .position(|a| matches!(a, Spec::Weight(n) if n == name))?;
        Some(self.allocation_handle(index))
    }

    /// Adds a fragment: `program`, compiled now for the context's target. Its weight
    /// parameters bind by name to the model's weights when the recording is frozen.
    pub fn fragment(&mut self, program: &Program) -> Result<Kernel, Error> {
        let artifact = self
            .context
            .session()
            .compile_to_artifact(program)
            .map_err(Inner::into_error)?;
        self.kernels.push(artifact);
        Ok(Kernel {
            definition: self.id,
            index: u32::try_from(self.kernels.len() - 1).unwrap_or(u32::MAX),
        })
    }

    /// Ends the recording: copies the added weights onto read-only pages (once), loads every
    /// fragment against the weights (computing their packed forms, shared by all plans) and
    /// returns the definition, bound to `context`. A context other than the recording's is
    /// refused with [`ModelFailure::ForeignContext`]; a fragment whose weight is missing or
    /// of another size fails as when compiling it into a session.
    pub fn freeze(self, context: &ModelContext) -> Result<ModelDefinition, Error> {
        if context.id() != self.context.id() {
            let failure = ModelFailure::ForeignContext {
                recorded: self.context.id(),
                given: context.id(),
            };
            return Err(Inner::Model(failure).into_error());
        }
        let weights = if self.added.is_empty() {
            self.base
        } else {
            let added: Vec<(&str, &[u8])> =
                self.added.iter().map(|(n, b)| (n.as_str(), *b)).collect();
            self.base
                .extend(&added)
                .map_err(|e| Inner::Weights(e).into_error())?
        };
        let session = context.session();
        let mut fragments = Vec::with_capacity(self.kernels.len());
        for artifact in self.kernels {
            let loaded = session
                .map_artifact(artifact, &weights)
                .map_err(Inner::into_error)?;
            fragments.push(Fragment::new(loaded)?);
        }
        ModelDefinition::new(self.id, self.context, weights, &self.allocations, fragments)
    }
}
