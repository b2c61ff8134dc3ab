//! [`ModelContext`]: the shared scheduling and allocation domain models are bound to.

use std::sync::Arc;

use accy_executable::{Executor, Weights};

use super::{next_id, ModelRecorder};
use crate::{Error, Session, SessionOptions};

/// What model definitions are bound to: a code generator for this CPU, its options, and the
/// executor (thread pool) their inferences run on. Cheap to clone (clones are the same
/// context); `Send + Sync`.
///
/// It holds a [`Session`] of its own for compiling fragments; model fragments take none of
/// that session's [`crate::MAX_PROGRAMS`] slots.
#[derive(Clone, Debug)]
pub struct ModelContext {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    id: u64,
    session: Session,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ModelContext>();
};

impl ModelContext {
    /// A context generating code for this CPU with default options and its own thread pool.
    pub fn new() -> Result<ModelContext, Error> {
        ModelContext::with_options(SessionOptions::default())
    }

    /// A context with explicit options (see [`SessionOptions`]).
    pub fn with_options(options: SessionOptions) -> Result<ModelContext, Error> {
        Ok(ModelContext::from_session(Session::with_options(options)?))
    }

    /// A context whose inferences run their tiles on `executor` (see
    /// [`Session::with_executor`]).
    pub fn with_executor(
        options: SessionOptions,
        executor: Arc<dyn Executor>,
    ) -> Result<ModelContext, Error> {
        Ok(ModelContext::from_session(Session::with_executor(
            options, executor,
        )?))
    }

    fn from_session(session: Session) -> ModelContext {
        ModelContext {
            inner: Arc::new(Inner {
                id: next_id(),
                session,
            }),
        }
    }

    /// This context's identifier (unique in the process; what
    /// [`super::ModelFailure::ForeignContext`] names).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The name of the code generator in use (e.g. `x64-avx2`).
    pub fn target_name(&self) -> &'static str {
        self.inner.session.target_name()
    }

    /// The most threads that work on one inference.
    pub fn threads(&self) -> usize {
        self.inner.session.threads()
    }

    /// Starts recording a model definition in this context, with no weights yet.
    pub fn record<'w>(&self) -> ModelRecorder<'w> {
        ModelRecorder::new(self.clone(), Weights::empty())
    }

    /// Starts recording a model definition whose first immutable allocations are the weights
    /// of `weights`, in their order, used as they are (shared, not copied: a set mapped from
    /// a file stays mapped).
    pub fn record_with<'w>(&self, weights: &Weights) -> ModelRecorder<'w> {
        ModelRecorder::new(self.clone(), weights.clone())
    }

    /// The session that compiles and loads this context's fragments.
    pub(crate) fn session(&self) -> &Session {
        &self.inner.session
    }

    /// The executor inferences run on.
    pub(crate) fn executor(&self) -> Arc<dyn Executor> {
        Arc::clone(self.inner.session.executor())
    }
}
