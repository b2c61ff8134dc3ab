//! [`ModelFailure`]: the models API's own rules, the ones about identity and interfaces that
//! a plan's data alone cannot show (the rest are `accy_artifact`'s `ModelPlanError`).

use accy_ir::{DType, Type};

use super::{DefinitionId, Site};

/// A type, or `absent`.
fn shown(ty: &Option<Type>) -> String {
    ty.as_ref().map_or("absent".to_owned(), ToString::to_string)
}

/// A rule of the models API broken by a request (the cause of an
/// [`crate::Error::InvalidModel`]). Each variant carries the numbers and names involved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFailure {
    /// A recording was frozen into a context other than the one it was recorded in.
    #[error("the recording belongs to context {recorded}, not to context {given}")]
    ForeignContext {
        /// The recording's context.
        recorded: u64,
        /// The context given to `freeze`.
        given: u64,
    },
    /// A region of another definition was used.
    #[error("{site}: the region belongs to {region}, not to {definition}")]
    ForeignRegion {
        /// Where it was used.
        site: Site,
        /// The region's definition.
        region: DefinitionId,
        /// The definition preparing the plan.
        definition: DefinitionId,
    },
    /// A kernel of another definition was dispatched.
    #[error("command {command}: the kernel belongs to {kernel}, not to {definition}")]
    ForeignKernel {
        /// The dispatch command.
        command: usize,
        /// The kernel's definition.
        kernel: DefinitionId,
        /// The definition preparing the plan.
        definition: DefinitionId,
    },
    /// An allocation handle of another definition was asked about.
    #[error("the allocation belongs to {allocation}, not to {definition}")]
    ForeignAllocation {
        /// The allocation's definition.
        allocation: DefinitionId,
        /// The definition asked.
        definition: DefinitionId,
    },
    /// A plan input's or output's descriptor gives a byte size its dtype and dims do not.
    #[error("plan {kind} {index}: descriptor says {declared} bytes, but {dtype} {dims:?} is {computed:?} bytes")]
    DescriptorSize {
        /// Input or output.
        kind: super::IoKind,
        /// Its position.
        index: usize,
        /// The descriptor's `byte_size`.
        declared: usize,
        /// Its dtype.
        dtype: DType,
        /// Its dims.
        dims: Vec<u64>,
        /// What they come to (`None` if that overflows).
        computed: Option<u64>,
    },
    /// A recorded weight has an empty or repeated name.
    #[error("weight {name:?}: {reason}")]
    WeightName {
        /// The name.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A kernel index beyond the definition's fragments was asked about.
    #[error("{definition} has {count} fragments; there is no fragment {index}")]
    NoSuchKernel {
        /// The definition.
        definition: DefinitionId,
        /// The index asked for.
        index: u32,
        /// How many it has.
        count: usize,
    },
    /// A variant given to `Model::prepare` has a different number of inputs or outputs than
    /// the model's program.
    #[error("the model's program has {model} {what}s, but the variant has {variant}")]
    VariantCount {
        /// `input` or `output`.
        what: &'static str,
        /// The model's count.
        model: usize,
        /// The variant's count.
        variant: usize,
    },
    /// A variant's input or output has another dtype than the model's.
    #[error("{what} {index} is {model} in the model's program but {variant} in the variant")]
    VariantDtype {
        /// `input` or `output`.
        what: &'static str,
        /// Its position.
        index: usize,
        /// The model's dtype.
        model: DType,
        /// The variant's.
        variant: DType,
    },
    /// A variant and the model's program differ in a weight: one lacks it, or they give it
    /// different types (a variant is the same network, so it has the same weights).
    #[error("weight {name:?} is {} in the variant, but {} in the model's program", shown(.variant), shown(.model))]
    VariantWeight {
        /// The weight's name.
        name: String,
        /// Its type in the model's program, if it has it.
        model: Option<Type>,
        /// Its type in the variant, if it has it.
        variant: Option<Type>,
    },
    /// A plan input or output is larger than `Model` allows one to be.
    #[error(
        "{what} {index} has {bytes} bytes; a model's inputs and outputs may have at most {max}"
    )]
    IoTooLarge {
        /// `input` or `output`.
        what: &'static str,
        /// Its position.
        index: usize,
        /// Its size.
        bytes: usize,
        /// The limit.
        max: u64,
    },
}
