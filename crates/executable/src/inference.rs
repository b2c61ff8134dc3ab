//! [`PreparedPlan`]: a model plan (`accy_artifact::model::ModelPlan`) made runnable with a
//! bounded number of inference slots (DESIGN.md "Models", after seed `002_…`).
//!
//! Preparing validates the plan, checks that its immutable allocations are weights of the
//! given [`Weights`] (exact size, enough alignment) and that its fragment signatures are those
//! of the loaded fragments, then builds `capacity` inference slots. Each slot owns private
//! memory at fixed addresses: one block holding every scratch allocation the plan uses (sized
//! to its extent), one block of fragment scratch (the largest any fragment needs; dispatches
//! run one after another), and one worker-scratch slice per executor worker. Because nothing
//! moves, each dispatch's slot and binding address tables are computed once per slot, here;
//! a run only copies the inputs in, walks the commands and copies the outputs out. Weights,
//! constants and packed forms are shared by every slot. A run allocates nothing.
//!
//! [`PreparedPlan::run`] takes a free slot from a [`SlotPool`] — eventually fair, waiting
//! when all are busy — and [`PreparedPlan::try_run`] fails with
//! [`RunError::Busy`] instead of waiting. Any number of threads may run one plan at once.

use std::fmt;
use std::sync::Arc;

use accy_artifact::model::{AllocationKind, Command, ModelPlan, Port, Signature};

use crate::binding::BufferKind;
use crate::fpenv::FpEnvGuard;
use crate::loaded::LoadedArtifact;
use crate::pool::Executor;
use crate::run::{execute, Workers};
use crate::slot_pool::SlotPool;
use crate::weights::Weights;

mod error;
mod slots;

pub use error::{PrepareError, RunError};
use slots::{SlotMemory, SlotShape};

/// What [`PreparedPlan::new`] prepares: a plan, the weights its immutable allocations are
/// (by name, per allocation), and its loaded fragments (in the plan's fragment order).
#[derive(Clone, Copy, Debug)]
pub struct PlanParts<'a> {
    /// The plan.
    pub plan: &'a ModelPlan,
    /// The weights the immutable allocations and the fragments' weight slots use.
    pub weights: &'a Weights,
    /// Per allocation: the name of the weight an immutable allocation is; `None` for scratch.
    pub weight_names: &'a [Option<&'a str>],
    /// The loaded fragments.
    pub fragments: &'a [Arc<LoadedArtifact>],
}

/// A plan command, with host-sized numbers.
#[derive(Clone, Copy, Debug)]
enum Step {
    Fill {
        allocation: usize,
        offset: usize,
        len: usize,
        value: u8,
    },
    Dispatch {
        fragment: usize,
        /// Index into a slot's tables.
        table: usize,
    },
}

/// A plan input's or output's bytes: the first `len` bytes at `offset` of an allocation.
#[derive(Clone, Copy, Debug)]
struct IoSpan {
    allocation: usize,
    offset: usize,
    len: usize,
}

/// A model plan ready to run, with `capacity` inference slots (see the module
/// documentation). `Send + Sync`: share it (in an `Arc`) among the threads serving requests.
#[derive(Debug)]
pub struct PreparedPlan {
    fragments: Vec<Arc<LoadedArtifact>>,
    steps: Vec<Step>,
    inputs: Vec<IoSpan>,
    outputs: Vec<IoSpan>,
    slots: SlotPool<SlotMemory>,
    executor: Arc<dyn Executor>,
    worker_stride: usize,
    worker_count: usize,
    slot_bytes: usize,
    /// Keeps the weights the slots' tables point into alive.
    _weights: Weights,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PreparedPlan>();
};

impl LoadedArtifact {
    /// What a model plan needs to know of this artifact as a fragment: the size and
    /// alignment of each input and output.
    pub fn signature(&self) -> Signature {
        let summary = self.summary();
        let ports = |slots: &[accy_artifact::SlotId]| {
            slots
                .iter()
                .map(|&slot| {
                    let usage = summary.usage(slot);
                    Port {
                        bytes: usage.map_or(0, |u| u.byte_size),
                        alignment: usage.map_or(1, |u| u.alignment),
                    }
                })
                .collect()
        };
        Signature {
            inputs: ports(&summary.inputs),
            outputs: ports(&summary.outputs),
        }
    }
}

/// `value` as a `usize`, or [`PrepareError::TooLarge`].
fn host(value: u64, what: &'static str) -> Result<usize, PrepareError> {
    usize::try_from(value).map_err(|_| PrepareError::TooLarge { what, bytes: value })
}

impl PreparedPlan {
    /// Validates `parts.plan`, checks it against the weights and fragments, and makes
    /// `capacity` inference slots whose dispatches run on `executor`.
    pub fn new(
        parts: &PlanParts<'_>,
        executor: Arc<dyn Executor>,
        capacity: usize,
    ) -> Result<PreparedPlan, PrepareError> {
        PreparedPlan::build(parts, executor, capacity, false)
    }

    /// [`PreparedPlan::new`], with each scratch allocation of each slot in a buffer of its
    /// own that ends at a guard page (and starts one page after another), so a test sees any
    /// access outside a plan's extents fault. Each allocation's alignment must be at most a
    /// page; an extent that is a multiple of it ends exactly at the guard.
    #[cfg(any(test, feature = "testing"))]
    pub fn new_guarded(
        parts: &PlanParts<'_>,
        executor: Arc<dyn Executor>,
        capacity: usize,
    ) -> Result<PreparedPlan, PrepareError> {
        PreparedPlan::build(parts, executor, capacity, true)
    }

    fn build(
        parts: &PlanParts<'_>,
        executor: Arc<dyn Executor>,
        capacity: usize,
        guarded: bool,
    ) -> Result<PreparedPlan, PrepareError> {
        let plan = parts.plan;
        let layout = plan.validate()?;
        if capacity == 0 {
            return Err(PrepareError::NoSlots);
        }
        let weight_bases = bind_weights(parts)?;
        if plan.fragments.len() != parts.fragments.len() {
            return Err(PrepareError::FragmentCount {
                plan: plan.fragments.len(),
                loaded: parts.fragments.len(),
            });
        }
        for (fragment, (signature, loaded)) in
            plan.fragments.iter().zip(parts.fragments).enumerate()
        {
            let actual = loaded.signature();
            if *signature != actual {
                return Err(PrepareError::SignatureMismatch {
                    fragment: fragment as u32,
                    plan: signature.clone(),
                    loaded: actual,
                });
            }
        }
        let (steps, inputs, outputs) = steps(plan)?;
        let fragments = parts.fragments.to_vec();
        let worker_stride = fragments
            .iter()
            .map(|f| f.worker_scratch_stride())
            .max()
            .unwrap_or(0);
        let worker_count = executor.workers().max(1);
        let shape = SlotShape {
            plan,
            layout: &layout,
            weight_bases: &weight_bases,
            fragments: &fragments,
            steps: &steps,
            worker_bytes: worker_stride.checked_mul(worker_count).ok_or(
                PrepareError::TooLarge {
                    what: "worker scratch",
                    bytes: u64::MAX,
                },
            )?,
            guarded,
        };
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(capacity)
            .map_err(|_| PrepareError::OutOfMemory {
                slot: 0,
                bytes: capacity.saturating_mul(size_of::<SlotMemory>()),
                alignment: align_of::<SlotMemory>(),
            })?;
        let mut slot_bytes = 0;
        for slot in 0..capacity {
            let (memory, bytes) = shape.make(slot)?;
            slots.push(memory);
            slot_bytes = bytes;
        }
        Ok(PreparedPlan {
            fragments,
            steps,
            inputs,
            outputs,
            slots: SlotPool::new(slots).ok_or(PrepareError::NoSlots)?,
            executor,
            worker_stride,
            worker_count,
            slot_bytes,
            _weights: parts.weights.clone(),
        })
    }

    /// The number of inference slots.
    pub fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    /// The private bytes one inference slot holds: the plan's scratch allocations (to their
    /// extents), fragment scratch and worker scratch. Weights are shared, not counted here.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// The exact byte size of each input buffer a run takes.
    pub fn input_sizes(&self) -> impl Iterator<Item = usize> + '_ {
        self.inputs.iter().map(|io| io.len)
    }

    /// The exact byte size of each output buffer a run fills.
    pub fn output_sizes(&self) -> impl Iterator<Item = usize> + '_ {
        self.outputs.iter().map(|io| io.len)
    }

    /// How many slots nobody is running right now (a snapshot).
    pub fn idle_slots(&self) -> usize {
        self.slots.idle()
    }

    /// Runs the plan on a free inference slot, waiting (eventually fair, see [`SlotPool`])
    /// while all are busy: copies `inputs` into their regions, runs the commands, copies the output
    /// regions into `outputs`. Buffer counts and sizes are checked first, without taking a
    /// slot. Allocates nothing.
    pub fn run(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<(), RunError> {
        self.check_buffers(inputs, outputs)?;
        let mut slot = self.slots.acquire();
        self.run_in(&mut slot, inputs, outputs)
    }

    /// [`PreparedPlan::run`] if [`SlotPool::try_acquire`] gives a slot now (one is free, and
    /// no waiter has been passed over for `FAIR_AFTER`); otherwise [`RunError::Busy`] at
    /// once.
    pub fn try_run(&self, inputs: &[&[u8]], outputs: &mut [&mut [u8]]) -> Result<(), RunError> {
        self.check_buffers(inputs, outputs)?;
        let mut slot = self.slots.try_acquire().ok_or(RunError::Busy {
            capacity: self.capacity(),
        })?;
        self.run_in(&mut slot, inputs, outputs)
    }

    fn check_buffers(&self, inputs: &[&[u8]], outputs: &[&mut [u8]]) -> Result<(), RunError> {
        let lens = |kind, spans: &[IoSpan], buffers: &mut dyn Iterator<Item = usize>| {
            let mut count = 0;
            for (index, actual) in buffers.enumerate() {
                count += 1;
                match spans.get(index) {
                    Some(io) if io.len == actual => {}
                    Some(io) => {
                        return Err(RunError::Size {
                            kind,
                            index,
                            expected: io.len,
                            actual,
                        })
                    }
                    None => break,
                }
            }
            if count == spans.len() {
                Ok(())
            } else {
                Err(RunError::Count {
                    kind,
                    expected: spans.len(),
                    actual: count,
                })
            }
        };
        // Counts first, so a surplus buffer is a count error, not a size error.
        for (kind, expected, actual) in [
            (BufferKind::Input, self.inputs.len(), inputs.len()),
            (BufferKind::Output, self.outputs.len(), outputs.len()),
        ] {
            if expected != actual {
                return Err(RunError::Count {
                    kind,
                    expected,
                    actual,
                });
            }
        }
        lens(
            BufferKind::Input,
            &self.inputs,
            &mut inputs.iter().map(|b| b.len()),
        )?;
        lens(
            BufferKind::Output,
            &self.outputs,
            &mut outputs.iter().map(|b| b.len()),
        )
    }

    fn run_in(
        &self,
        slot: &mut SlotMemory,
        inputs: &[&[u8]],
        outputs: &mut [&mut [u8]],
    ) -> Result<(), RunError> {
        let _fp = FpEnvGuard::enter();
        for (io, input) in self.inputs.iter().zip(inputs) {
            // SAFETY: validation put the input in a scratch allocation this plan uses, at
            // `offset + len <= extent`, so the destination lies in this slot's own memory,
            // which the slot guard gives us alone; `check_buffers` proved `input.len() ==
            // len`; caller memory and slot memory are distinct allocations.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    input.as_ptr(),
                    slot.bases[io.allocation].add(io.offset),
                    io.len,
                );
            }
        }
        let workers = Workers {
            base: slot.workers.as_mut_ptr(),
            stride: self.worker_stride as u64,
            // The pool's worker slices were made for `worker_count`; an executor reporting
            // more workers later gets the ABI's worker-mismatch status, not another's slice.
            count: self.executor.workers().min(self.worker_count) as u32,
        };
        for (command, step) in self.steps.iter().enumerate() {
            match *step {
                Step::Fill {
                    allocation,
                    offset,
                    len,
                    value,
                } => {
                    if len > 0 {
                        // SAFETY: validation put the fill inside a scratch allocation the
                        // plan uses, within its extent: this slot's memory, ours alone.
                        unsafe {
                            std::ptr::write_bytes(slot.bases[allocation].add(offset), value, len);
                        }
                    }
                }
                Step::Dispatch { fragment, table } => {
                    let loaded = &self.fragments[fragment];
                    let tables = &slot.tables[table];
                    // SAFETY: `tables` were made for `loaded` in this slot by `SlotShape::make`:
                    // each input and output slot is its dispatch region (exactly the slot's
                    // size and aligned, by validation and the signature check; outputs in
                    // this slot's scratch, overlapping no other binding of the dispatch;
                    // inputs in scratch or weights), weights, constants and packed blocks
                    // are `loaded`'s own (read only: validation of its artifact), scratch
                    // slots are in the slot's fragment-scratch block (sized for the largest
                    // fragment); the binding pointers come from those bases for
                    // `loaded.steps`; the worker slices are this slot's, one per worker
                    // index below `workers.count`.
                    unsafe {
                        execute(
                            loaded,
                            self.executor.as_ref(),
                            &workers,
                            &loaded.steps,
                            &tables.bases,
                            &tables.binding_ptrs,
                        )
                    }
                    .map_err(|source| RunError::Launch { command, source })?;
                }
            }
        }
        for (io, output) in self.outputs.iter().zip(outputs.iter_mut()) {
            // SAFETY: as for the inputs: the source is `len` bytes of this slot's memory,
            // `output` has exactly `len` bytes and is a distinct allocation.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    slot.bases[io.allocation].add(io.offset).cast_const(),
                    output.as_mut_ptr(),
                    io.len,
                );
            }
        }
        Ok(())
    }
}

/// The base of each immutable allocation (its weight), after checking it is one.
fn bind_weights(parts: &PlanParts<'_>) -> Result<Vec<Option<*mut u8>>, PrepareError> {
    let plan = parts.plan;
    if parts.weight_names.len() != plan.allocations.len() {
        return Err(PrepareError::WeightNames {
            allocations: plan.allocations.len(),
            names: parts.weight_names.len(),
        });
    }
    let mut bases = Vec::with_capacity(plan.allocations.len());
    for (index, (a, name)) in plan.allocations.iter().zip(parts.weight_names).enumerate() {
        let allocation = index as u32;
        let unbound = || PrepareError::UnboundWeight {
            allocation,
            kind: a.kind,
            name: name.map(str::to_owned),
        };
        let (AllocationKind::Immutable, Some(name)) = (a.kind, name) else {
            if a.kind == AllocationKind::Immutable || name.is_some() {
                return Err(unbound());
            }
            bases.push(None);
            continue;
        };
        let weights = parts.weights;
        let w = weights.position(name).ok_or_else(unbound)?;
        let (len, alignment) = (weights.len_of(w).unwrap_or(0), weights.alignment_of(w));
        if len as u64 != a.bytes || (alignment as u64) < a.alignment {
            return Err(PrepareError::WeightMismatch {
                allocation,
                name: (*name).to_owned(),
                bytes: a.bytes,
                alignment: a.alignment,
                weight_bytes: len,
                weight_alignment: alignment,
            });
        }
        bases.push(weights.ptr(w).map(<*const u8>::cast_mut));
    }
    Ok(bases)
}

type PlanSteps = (Vec<Step>, Vec<IoSpan>, Vec<IoSpan>);

/// The plan's commands and IO with host-sized numbers (a validated plan's regions lie inside
/// allocations whose extents are allocated, so they fit `usize` once the block does; checked
/// anyway).
fn steps(plan: &ModelPlan) -> Result<PlanSteps, PrepareError> {
    let span = |region: &accy_artifact::model::Region, len: u64| -> Result<IoSpan, PrepareError> {
        Ok(IoSpan {
            allocation: region.allocation as usize,
            offset: host(region.offset, "plan scratch")?,
            len: host(len, "plan scratch")?,
        })
    };
    let mut steps = Vec::with_capacity(plan.commands.len());
    let mut tables = 0;
    for command in &plan.commands {
        steps.push(match command {
            Command::Fill { region, value } => {
                let s = span(region, region.bytes)?;
                Step::Fill {
                    allocation: s.allocation,
                    offset: s.offset,
                    len: s.len,
                    value: *value,
                }
            }
            Command::Dispatch { fragment, .. } => {
                tables += 1;
                Step::Dispatch {
                    fragment: *fragment as usize,
                    table: tables - 1,
                }
            }
        });
    }
    let io = |ios: &[accy_artifact::model::Io]| -> Result<Vec<IoSpan>, PrepareError> {
        ios.iter().map(|io| span(&io.region, io.bytes)).collect()
    };
    Ok((steps, io(&plan.inputs)?, io(&plan.outputs)?))
}

impl fmt::Display for PreparedPlan {
    /// `3 commands over 2 fragments, 1 input, 1 output, 4 slots of 1024 bytes`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} commands over {} fragments, {} inputs, {} outputs, {} slots of {} bytes",
            self.steps.len(),
            self.fragments.len(),
            self.inputs.len(),
            self.outputs.len(),
            self.capacity(),
            self.slot_bytes
        )
    }
}
