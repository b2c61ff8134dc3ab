//! [`Model`]: the convenient path — one program and its weights, and plans for other shapes
//! of the same network sharing them.

use std::sync::Arc;

use accy_artifact::model::{self as plan, ModelPlan};
use accy_executable::Weights;
use accy_ir::{Program, Type};

use super::definition::Fragment;
use super::{Allocation, ModelContext, ModelDefinition, ModelFailure, PreparedModel};
use crate::mapping::Inner;
use crate::{Descriptor, Error};

/// A network and its weights, ready to be prepared for any shape of it.
///
/// Built on the general models API: a [`ModelDefinition`] whose immutable allocations are the
/// weights and whose scratch allocations are one per program input and output (each up to
/// [`Model::MAX_IO_BYTES`]; a plan takes memory only for what its shape uses). `Send + Sync`.
#[derive(Debug)]
pub struct Model {
    definition: ModelDefinition,
    program: Program,
    base: Arc<Fragment>,
    inputs: Vec<Allocation>,
    outputs: Vec<Allocation>,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Model>();
};

impl Model {
    /// The most bytes one input or output of a prepared shape may have.
    pub const MAX_IO_BYTES: u64 = 1 << 40;

    /// A model of `program` with `weights` (bound by name, each the exact size of its
    /// parameter), in a new [`ModelContext`] with default options. Compiles the program and
    /// computes the weights' packed forms, once.
    pub fn new(program: &Program, weights: Weights) -> Result<Model, Error> {
        Model::with_context(&ModelContext::new()?, program, weights)
    }

    /// [`Model::new`] in `context` (its code generator and thread pool).
    pub fn with_context(
        context: &ModelContext,
        program: &Program,
        weights: Weights,
    ) -> Result<Model, Error> {
        let mut recorder = context.record_with(&weights);
        let inputs = (0..program.inputs().count())
            .map(|_| recorder.scratch(Model::MAX_IO_BYTES))
            .collect();
        let outputs = (0..program.outputs.len())
            .map(|_| recorder.scratch(Model::MAX_IO_BYTES))
            .collect();
        let kernel = recorder.fragment(program)?;
        let definition = recorder.freeze(context)?;
        let base = definition.fragment_of(kernel)?;
        Ok(Model {
            definition,
            program: program.clone(),
            base,
            inputs,
            outputs,
        })
    }

    /// The definition underneath (weights, allocations, the general `prepare`).
    pub fn definition(&self) -> &ModelDefinition {
        &self.definition
    }

    /// The program the model was made from.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The physical bytes of the weights and their packed forms, counted once however many
    /// plans and slots use them.
    pub fn weight_bytes(&self) -> u64 {
        self.definition.weight_bytes()
    }

    /// A plan for `variant` — the model's program itself, or another shape of the same
    /// network (batch 1, 8, 37, …): as many inputs and outputs with the same dtypes, and the
    /// same weights (names and types) — with `capacity` inference slots. The variant is compiled now
    /// (the model's own program is not compiled again) and shares the model's weights and
    /// their packed forms; nothing about other plans changes.
    pub fn prepare(&self, variant: &Program, capacity: usize) -> Result<PreparedModel, Error> {
        let fragment = if *variant == self.program {
            Arc::clone(&self.base)
        } else {
            self.check_variant(variant)?;
            self.definition.load(variant)?
        };
        let region = |allocations: &[Allocation], index: usize, d: &Descriptor| {
            plan::Region::new(allocations[index].index, 0, d.byte_size as u64)
        };
        let inputs: Vec<plan::Region> = (fragment.inputs.iter().enumerate())
            .map(|(i, d)| region(&self.inputs, i, d))
            .collect();
        let outputs: Vec<plan::Region> = (fragment.outputs.iter().enumerate())
            .map(|(i, d)| region(&self.outputs, i, d))
            .collect();
        let io = |regions: &[plan::Region]| -> Vec<plan::Io> {
            regions
                .iter()
                .map(|&region| plan::Io {
                    region,
                    bytes: region.bytes,
                })
                .collect()
        };
        let model_plan = ModelPlan {
            allocations: self.definition.plan_allocations(),
            fragments: vec![fragment.loaded.signature()],
            inputs: io(&inputs),
            outputs: io(&outputs),
            commands: vec![plan::Command::Dispatch {
                fragment: 0,
                inputs,
                outputs,
            }],
        };
        self.definition.prepare_plan(
            &model_plan,
            &[Arc::clone(&fragment)],
            fragment.inputs.clone(),
            fragment.outputs.clone(),
            capacity,
        )
    }

    /// Refuses a variant whose interface is not the model's (see [`Model::prepare`]).
    fn check_variant(&self, variant: &Program) -> Result<(), Error> {
        let fail = |failure| Err(Inner::Model(failure).into_error());
        let model_inputs: Vec<&Type> = self.program.inputs().map(|(_, p)| &p.ty).collect();
        let variant_inputs: Vec<&Type> = variant.inputs().map(|(_, p)| &p.ty).collect();
        let output_types = |p: &Program| -> Vec<Option<Type>> {
            p.outputs
                .iter()
                .map(|o| p.value_type(o.value).cloned())
                .collect()
        };
        let (model_outputs, variant_outputs) = (output_types(&self.program), output_types(variant));
        let pairs = [
            (
                "input",
                model_inputs
                    .iter()
                    .map(|t| Some(t.dtype))
                    .collect::<Vec<_>>(),
                variant_inputs
                    .iter()
                    .map(|t| Some(t.dtype))
                    .collect::<Vec<_>>(),
            ),
            (
                "output",
                model_outputs
                    .iter()
                    .map(|t| t.as_ref().map(|t| t.dtype))
                    .collect(),
                variant_outputs
                    .iter()
                    .map(|t| t.as_ref().map(|t| t.dtype))
                    .collect(),
            ),
        ];
        for (what, model, variant) in &pairs {
            if model.len() != variant.len() {
                return fail(ModelFailure::VariantCount {
                    what,
                    model: model.len(),
                    variant: variant.len(),
                });
            }
            for (index, (m, v)) in model.iter().zip(variant).enumerate() {
                if let (Some(m), Some(v)) = (m, v) {
                    if m != v {
                        return fail(ModelFailure::VariantDtype {
                            what,
                            index,
                            model: *m,
                            variant: *v,
                        });
                    }
                }
            }
        }
        let weight_type = |p: &Program, name: &str| {
            p.weights()
                .find(|(_, w)| w.name == name)
                .map(|(_, w)| w.ty.clone())
        };
        let names = self
            .program
            .weights()
            .chain(variant.weights())
            .map(|(_, w)| &w.name);
        for name in names {
            let (model, variant) = (weight_type(&self.program, name), weight_type(variant, name));
            if model != variant {
                return fail(ModelFailure::VariantWeight {
                    name: name.clone(),
                    model,
                    variant,
                });
            }
        }
        let sizes = [
            (
                "input",
                variant_inputs
                    .iter()
                    .map(|t| t.byte_size())
                    .collect::<Vec<_>>(),
            ),
            (
                "output",
                variant_outputs
                    .iter()
                    .map(|t| t.as_ref().and_then(Type::byte_size))
                    .collect(),
            ),
        ];
        for (what, sizes) in sizes {
            for (index, bytes) in sizes.into_iter().enumerate() {
                match bytes {
                    Some(b) if b <= Model::MAX_IO_BYTES => {}
                    other => {
                        return fail(ModelFailure::IoTooLarge {
                            what,
                            index,
                            bytes: other
                                .map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX)),
                            max: Model::MAX_IO_BYTES,
                        })
                    }
                }
            }
        }
        Ok(())
    }
}
