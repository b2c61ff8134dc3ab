//! [`ModelDefinition`]: a frozen model — weights on read-only pages, allocations, fragments —
//! and [`ModelDefinition::prepare`], which turns commands over its regions into a
//! [`PreparedModel`].

use std::sync::{Arc, PoisonError, RwLock};

use accy_artifact::model::{self as plan, IoKind, ModelPlan, Site};
use accy_executable::{LoadedArtifact, PlanParts, PreparedPlan, Weights};
use accy_ir::Program;

use super::{
    Allocation, Command, DefinitionId, Kernel, ModelContext, ModelFailure, PreparedModel, Region,
};
use crate::mapping::Inner;
use crate::{Descriptor, Error};

/// An allocation as recorded: a weight (by name) or a scratch size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Spec {
    Weight(String),
    Scratch(u64),
}

/// A loaded fragment with the descriptors of its inputs and outputs.
#[derive(Debug)]
pub(crate) struct Fragment {
    pub(crate) loaded: Arc<LoadedArtifact>,
    pub(crate) inputs: Vec<Descriptor>,
    pub(crate) outputs: Vec<Descriptor>,
}

impl Fragment {
    pub(crate) fn new(loaded: LoadedArtifact) -> Result<Arc<Fragment>, Error> {
        let (inputs, outputs) =
            Descriptor::of_artifact(&loaded).map_err(|e| Inner::Session(e).into_error())?;
        Ok(Arc::new(Fragment {
            loaded: Arc::new(loaded),
            inputs,
            outputs,
        }))
    }
}

/// A frozen model: its weights (on read-only pages, shared by every plan and slot and counted
/// once), its allocations and its fragments, bound to the [`ModelContext`] it was frozen into.
/// Cheap to clone (clones are the same definition); `Send + Sync`.
#[derive(Clone, Debug)]
pub struct ModelDefinition {
    inner: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    id: DefinitionId,
    context: ModelContext,
    weights: Weights,
    allocations: Vec<plan::Allocation>,
    /// Per allocation: the weight an immutable one is.
    weight_names: Vec<Option<String>>,
    /// Appended to by [`ModelDefinition::fragment`]; read (cloned) by `prepare`, never by runs.
    kernels: RwLock<Vec<Arc<Fragment>>>,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ModelDefinition>();
};

impl ModelDefinition {
    pub(crate) fn new(
        id: DefinitionId,
        context: ModelContext,
        weights: Weights,
        specs: &[Spec],
        fragments: Vec<Arc<Fragment>>,
    ) -> Result<ModelDefinition, Error> {
        let mut allocations = Vec::with_capacity(specs.len());
        let mut weight_names = Vec::with_capacity(specs.len());
        for spec in specs {
            match spec {
                Spec::Weight(name) => {
                    // The recorder only names weights the set holds.
                    let bytes = weights.get(name).map_or(0, <[u8]>::len);
                    let alignment = weights.alignment(name).unwrap_or(1);
                    allocations.push(plan::Allocation::immutable(bytes as u64, alignment as u64));
                    weight_names.push(Some(name.clone()));
                }
                Spec::Scratch(bytes) => {
                    allocations.push(plan::Allocation::scratch(*bytes));
                    weight_names.push(None);
                }
            }
        }
        Ok(ModelDefinition {
            inner: Arc::new(Shared {
                id,
                context,
                weights,
                allocations,
                weight_names,
                kernels: RwLock::new(fragments),
            }),
        })
    }

    /// This definition's identifier (what its regions and kernels carry).
    pub fn id(&self) -> DefinitionId {
        self.inner.id
    }

    /// The context it is bound to.
    pub fn context(&self) -> &ModelContext {
        &self.inner.context
    }

    /// Its weights (clones share their memory).
    pub fn weights(&self) -> &Weights {
        &self.inner.weights
    }

    /// The physical bytes of its weights — as given plus every packed form computed from
    /// them — counted once however many plans and inference slots use them.
    pub fn weight_bytes(&self) -> u64 {
        self.inner.weights.weight_bytes()
    }

    /// The number of allocations (weights and scratch).
    pub fn allocation_count(&self) -> usize {
        self.inner.allocations.len()
    }

    /// The immutable allocation holding the weight `name`, if there is one.
    pub fn allocation(&self, name: &str) -> Option<Allocation> {
        let index = self
            .inner
            .weight_names
            .iter()
            .position(|n| n.as_deref() == Some(name))?;
        Some(Allocation {
            definition: self.id(),
            index: index as u32,
        })
    }

    /// The size of `allocation` (a weight's bytes, or a scratch allocation's most), or
    /// `None` if it is not an allocation of this definition.
    pub fn allocation_bytes(&self, allocation: Allocation) -> Option<u64> {
        if allocation.definition != self.id() {
            return None;
        }
        let a = self.inner.allocations.get(allocation.index as usize)?;
        Some(a.bytes)
    }

    /// The allocations as plan data.
    pub(crate) fn plan_allocations(&self) -> Vec<plan::Allocation> {
        self.inner.allocations.clone()
    }

    fn kernels(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<Fragment>>> {
        // The list only ever has whole entries pushed, so a poisoned lock is consistent.
        self.inner
            .kernels
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The number of fragments.
    pub fn kernel_count(&self) -> usize {
        self.kernels().len()
    }

    /// Adds a fragment after freezing: `program`, compiled and loaded against this
    /// definition's weights (sharing their packed forms). A program whose weight is missing
    /// or of another size fails as when compiling it into a session.
    pub fn fragment(&self, program: &Program) -> Result<Kernel, Error> {
        let fragment = self.load(program)?;
        let mut kernels = self
            .inner
            .kernels
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        kernels.push(fragment);
        Ok(Kernel {
            definition: self.id(),
            index: u32::try_from(kernels.len() - 1).unwrap_or(u32::MAX),
        })
    }

    /// `program` compiled and loaded against the weights, not added to the definition.
    pub(crate) fn load(&self, program: &Program) -> Result<Arc<Fragment>, Error> {
        let loaded = self
            .context()
            .session()
            .build(program, &self.inner.weights)
            .map_err(Inner::into_error)?;
        Fragment::new(loaded)
    }

    pub(crate) fn fragment_of(&self, kernel: Kernel) -> Result<Arc<Fragment>, Error> {
        if kernel.definition != self.id() {
            return Err(Inner::Model(ModelFailure::ForeignKernel {
                command: 0,
                kernel: kernel.definition,
                definition: self.id(),
            })
            .into_error());
        }
        let kernels = self.kernels();
        kernels.get(kernel.index as usize).cloned().ok_or_else(|| {
            Inner::Model(ModelFailure::NoSuchKernel {
                definition: self.id(),
                index: kernel.index,
                count: kernels.len(),
            })
            .into_error()
        })
    }

    /// The descriptors of `kernel`'s inputs, in order: what a dispatch's input regions must
    /// match (exact byte size, alignment).
    pub fn kernel_inputs(&self, kernel: Kernel) -> Result<Vec<Descriptor>, Error> {
        Ok(self.fragment_of(kernel)?.inputs.clone())
    }

    /// The descriptors of `kernel`'s outputs, in order.
    pub fn kernel_outputs(&self, kernel: Kernel) -> Result<Vec<Descriptor>, Error> {
        Ok(self.fragment_of(kernel)?.outputs.clone())
    }

    /// Prepares a shape-specific plan: `commands` run in order over this definition's
    /// regions; each run copies its input buffers into the first bytes of the `inputs`
    /// regions (described by their descriptors) and copies the `outputs` regions' first bytes
    /// out. The plan gets `capacity` inference slots, each with private scratch at fixed
    /// addresses, sized to the extent the plan uses of each scratch allocation (an unused
    /// allocation takes nothing); weights and packed forms are shared.
    ///
    /// Everything is validated here, once, and each broken rule is its own error (see the
    /// module documentation): regions and kernels must be this definition's, regions must
    /// fit their allocations, descriptors must be non-empty, consistent and fit their
    /// regions, IO may not alias weights, no fill or dispatch output may touch weights, and
    /// each dispatch binding must match its fragment's descriptor in size and alignment.
    ///
    /// This is a safe function, unlike the reference design's `prepare`: there the kernels
    /// are opaque code whose accesses the caller must vouch for, while accy's fragments are
    /// its own validated artifacts, whose every access is described by their plans and
    /// checked against the regions here.
    pub fn prepare(
        &self,
        commands: &[Command],
        inputs: &[(Region, Descriptor)],
        outputs: &[(Region, Descriptor)],
        capacity: usize,
    ) -> Result<PreparedModel, Error> {
        let fragments = self.kernels().clone();
        let model_plan = self.plan(commands, inputs, outputs, &fragments)?;
        let descriptors =
            |list: &[(Region, Descriptor)]| list.iter().map(|(_, d)| d.clone()).collect();
        self.prepare_plan(
            &model_plan,
            &fragments,
            descriptors(inputs),
            descriptors(outputs),
            capacity,
        )
    }

    /// The data of a plan, after the identity and descriptor checks.
    fn plan(
        &self,
        commands: &[Command],
        inputs: &[(Region, Descriptor)],
        outputs: &[(Region, Descriptor)],
        fragments: &[Arc<Fragment>],
    ) -> Result<ModelPlan, Error> {
        let mut plan = ModelPlan {
            allocations: self.inner.allocations.clone(),
            fragments: fragments.iter().map(|f| f.loaded.signature()).collect(),
            commands: Vec::with_capacity(commands.len()),
            inputs: Vec::with_capacity(inputs.len()),
            outputs: Vec::with_capacity(outputs.len()),
        };
        for (kind, list) in [(IoKind::Input, inputs), (IoKind::Output, outputs)] {
            for (index, (region, d)) in list.iter().enumerate() {
                let region = self.region(Site::Io { kind, index }, region)?;
                let computed = d
                    .dims
                    .iter()
                    .try_fold(d.dtype.size_bytes(), |n, &dim| n.checked_mul(dim));
                if computed != Some(d.byte_size as u64) {
                    return Err(Inner::Model(ModelFailure::DescriptorSize {
                        kind,
                        index,
                        declared: d.byte_size,
                        dtype: d.dtype,
                        dims: d.dims.to_vec(),
                        computed,
                    })
                    .into_error());
                }
                let io = plan::Io {
                    region,
                    bytes: d.byte_size as u64,
                };
                match kind {
                    IoKind::Input => plan.inputs.push(io),
                    IoKind::Output => plan.outputs.push(io),
                }
            }
        }
        for (command, c) in commands.iter().enumerate() {
            plan.commands.push(match c {
                Command::Fill { region, value } => plan::Command::Fill {
                    region: self.region(Site::Fill { command }, region)?,
                    value: *value,
                },
                Command::Dispatch {
                    kernel,
                    inputs,
                    outputs,
                } => {
                    if kernel.definition != self.id() {
                        return Err(Inner::Model(ModelFailure::ForeignKernel {
                            command,
                            kernel: kernel.definition,
                            definition: self.id(),
                        })
                        .into_error());
                    }
                    let bind = |kind, regions: &[Region]| {
                        regions
                            .iter()
                            .enumerate()
                            .map(|(index, r)| {
                                self.region(
                                    Site::Binding {
                                        command,
                                        kind,
                                        index,
                                    },
                                    r,
                                )
                            })
                            .collect::<Result<Vec<_>, Error>>()
                    };
                    plan::Command::Dispatch {
                        fragment: kernel.index,
                        inputs: bind(IoKind::Input, inputs)?,
                        outputs: bind(IoKind::Output, outputs)?,
                    }
                }
            });
        }
        Ok(plan)
    }

    /// `region` as plan data, if it belongs to this definition.
    fn region(&self, site: Site, region: &Region) -> Result<plan::Region, Error> {
        if region.allocation.definition != self.id() {
            return Err(Inner::Model(ModelFailure::ForeignRegion {
                site,
                region: region.allocation.definition,
                definition: self.id(),
            })
            .into_error());
        }
        Ok(plan::Region::new(
            region.allocation.index,
            region.offset,
            region.bytes,
        ))
    }

    /// Prepares `model_plan`, whose fragment `i` is `fragments[i]`.
    pub(crate) fn prepare_plan(
        &self,
        model_plan: &ModelPlan,
        fragments: &[Arc<Fragment>],
        inputs: Vec<Descriptor>,
        outputs: Vec<Descriptor>,
        capacity: usize,
    ) -> Result<PreparedModel, Error> {
        let weight_names: Vec<Option<&str>> = self
            .inner
            .weight_names
            .iter()
            .map(Option::as_deref)
            .collect();
        let loaded: Vec<Arc<LoadedArtifact>> =
            fragments.iter().map(|f| Arc::clone(&f.loaded)).collect();
        let parts = PlanParts {
            plan: model_plan,
            weights: &self.inner.weights,
            weight_names: &weight_names,
            fragments: &loaded,
        };
        let prepared = PreparedPlan::new(&parts, self.context().executor(), capacity)
            .map_err(|e| Inner::Prepare(e).into_error())?;
        Ok(PreparedModel::new(prepared, inputs, outputs, self.clone()))
    }
}
