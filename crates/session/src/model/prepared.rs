//! [`PreparedModel`]: a shape-specific plan with a bounded number of inference slots.

use accy_executable::{PreparedPlan, RunError};
use smallvec::SmallVec;

use super::ModelDefinition;
use crate::mapping::Inner;
use crate::session::check_typed;
use crate::{Descriptor, Error};

/// [`PreparedModel::run`] or [`PreparedModel::try_run`], for the typed conveniences.
type RunFn = fn(&PreparedModel, &[&[u8]], &mut [&mut [u8]]) -> Result<(), Error>;

/// A prepared plan of a model: runs one inference per call on one of its inference slots.
///
/// Thread contract: `Send + Sync`; [`PreparedModel::run`] takes `&self` and may be called
/// from any number of threads at once. At most [`PreparedModel::capacity`] runs are in flight;
/// further callers wait, served in arrival order, though a caller arriving while a slot is
/// free takes it unless the head of the queue has waited 4 ms there (`accy_executable`'s
/// `FAIR_AFTER`): slots stay busy, and each waiter is passed over for at most 4 ms once it
/// heads the queue. Each slot's private memory was
/// allocated when the plan was prepared, at fixed addresses, so a run allocates nothing.
#[derive(Debug)]
pub struct PreparedModel {
    plan: PreparedPlan,
    inputs: Vec<Descriptor>,
    outputs: Vec<Descriptor>,
    definition: ModelDefinition,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PreparedModel>();
};

impl PreparedModel {
    pub(crate) fn new(
        plan: PreparedPlan,
        inputs: Vec<Descriptor>,
        outputs: Vec<Descriptor>,
        definition: ModelDefinition,
    ) -> PreparedModel {
        PreparedModel {
            plan,
            inputs,
            outputs,
            definition,
        }
    }

    /// The descriptors of the input buffers a run takes, in order.
    pub fn inputs(&self) -> &[Descriptor] {
        &self.inputs
    }

    /// The descriptors of the output buffers a run fills, in order.
    pub fn outputs(&self) -> &[Descriptor] {
        &self.outputs
    }

    /// The number of inference slots: how many runs may be in flight at once.
    pub fn capacity(&self) -> usize {
        self.plan.capacity()
    }

    /// The private bytes one inference slot holds (the plan's scratch to its extents,
    /// fragment scratch, worker scratch). Weights are shared and not counted here.
    pub fn slot_bytes(&self) -> usize {
        self.plan.slot_bytes()
    }

    /// The private bytes of all slots: [`PreparedModel::slot_bytes`] × capacity.
    pub fn scratch_bytes(&self) -> usize {
        self.slot_bytes().saturating_mul(self.capacity())
    }

    /// How many slots are idle right now (a snapshot, for reports).
    pub fn idle_slots(&self) -> usize {
        self.plan.idle_slots()
    }

    /// The definition this plan belongs to (and keeps alive).
    pub fn definition(&self) -> &ModelDefinition {
        &self.definition
    }

    /// Runs one inference: takes a free inference slot (waiting while all are busy, as the
    /// type's documentation says), copies `inputs` into it, runs the commands, and copies the
    /// outputs into `outputs`. Each buffer must have exactly its descriptor's byte size (any
    /// alignment will do: the bytes are copied); a wrong count or size is
    /// [`Error::InvalidBuffer`], checked before taking a slot. Allocates nothing.
    pub fn run(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<(), Error> {
        self.plan.run(inputs, outputs).map_err(map_run)
    }

    /// [`PreparedModel::run`] if it would get a slot at once (one is free, and no waiting
    /// caller is due: see the type's documentation); otherwise [`Error::Busy`] at once,
    /// without waiting.
    pub fn try_run(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<(), Error> {
        self.plan.try_run(inputs, outputs).map_err(map_run)
    }

    /// [`PreparedModel::run`] over typed slices (`&[f32]`, `&mut [i64]`, …): each slice's
    /// element size must be its descriptor's dtype size and its length the descriptor's
    /// element count.
    pub fn run_typed<I: bytemuck::Pod, O: bytemuck::Pod>(
        &self,
        inputs: &[&[I]],
        outputs: &mut [&mut [O]],
    ) -> Result<(), Error> {
        self.typed(inputs, outputs, PreparedModel::run)
    }

    /// [`PreparedModel::try_run`] over typed slices (see [`PreparedModel::run_typed`]).
    pub fn try_run_typed<I: bytemuck::Pod, O: bytemuck::Pod>(
        &self,
        inputs: &[&[I]],
        outputs: &mut [&mut [O]],
    ) -> Result<(), Error> {
        self.typed(inputs, outputs, PreparedModel::try_run)
    }

    fn typed<I: bytemuck::Pod, O: bytemuck::Pod>(
        &self,
        inputs: &[&[I]],
        outputs: &mut [&mut [O]],
        run: RunFn,
    ) -> Result<(), Error> {
        let input_lens = inputs.iter().map(|s| s.len());
        let output_lens = outputs.iter().map(|s| s.len());
        check_typed("input", &self.inputs, input_lens, size_of::<I>())
            .and_then(|()| check_typed("output", &self.outputs, output_lens, size_of::<O>()))
            .map_err(|failure| Inner::Session(failure).into_error())?;
        // Inline capacity covers typical models, so this convenience allocates nothing either.
        let input_bytes: SmallVec<[&[u8]; 8]> =
            inputs.iter().map(|s| bytemuck::cast_slice(s)).collect();
        let mut output_bytes: SmallVec<[&mut [u8]; 8]> = outputs
            .iter_mut()
            .map(|s| bytemuck::cast_slice_mut(s))
            .collect();
        run(self, &input_bytes, &mut output_bytes)
    }
}

/// The session error for a failed run.
fn map_run(e: RunError) -> Error {
    match e {
        RunError::Busy { capacity } => Error::Busy { capacity },
        e => Inner::Run(e).into_error(),
    }
}
