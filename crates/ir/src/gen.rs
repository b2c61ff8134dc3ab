//! Random valid programs and arguments for property tests, differential tests and fuzzing
//! (cargo feature `gen`).
//!
//! A program is not generated directly. The strategies generate a [`Plan`]: a list of steps,
//! each a fixed array of random "choice numbers", plus a few numbers for the outputs. The
//! deterministic [`build`] then interprets every step through [`crate::Builder`]: the first
//! number picks an op kind, later ones pick operands among the values made so far (only those
//! the op accepts) and derive attributes that are valid by construction (increasing broadcast
//! axes, in-range slices, permutations, paired dot axes, …). When no fitting operand exists,
//! the step adds a parameter or constant of a fitting type; a step that still cannot apply is
//! skipped. The result always passes [`crate::verify`], because [`crate::Builder::finish`]
//! verifies it.
//!
//! This split is what makes failures shrink well: proptest shrinks a plan by dropping steps
//! and moving choice numbers toward 0, and choice 0 always means the simplest option (the most
//! recent value, no extra operand, a full slice, an identity permutation, dim 1, …), so a
//! failing program shrinks to a short one with plain attributes. Fuzzers reuse the same path
//! through [`Plan::from_bytes`].

mod choices;
mod data;
mod state;
mod steps;
#[cfg(test)]
mod tests;

use proptest::prelude::*;

use crate::{BinaryOp, BuildError, CompareOp, DType, Op, Program, ReduceOp, Tensor, UnaryOp};

pub use data::arb_tensor;

/// Limits and op sets for generated programs. Backends restrict `ops`, the sub-op lists and
/// `dtypes` to what they support; tests shrink the size limits to keep interpretation fast.
///
/// [`GenConfig::default`] gives small programs that use every op, sub-op and dtype.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Most parameters (inputs and weights together) a program gets. When a step needs a new
    /// operand and this is reached, it uses a constant instead (or is skipped). The one
    /// exception: a program that would otherwise have no value at all gets one input.
    pub max_params: usize,
    /// Most instructions a program gets (also the most steps a plan has).
    pub max_instructions: usize,
    /// Largest rank of any value (clamped to [`crate::MAX_RANK`]).
    pub max_rank: usize,
    /// Largest dim picked for a fresh axis; derived dims (concat, pad results) may be longer.
    pub max_dim: u64,
    /// Most elements any value has (at least 1), so interpreting a program stays fast.
    pub max_elements: u64,
    /// Dtypes every value of the program has. Ops whose result or operands need another dtype
    /// (compare and select need bool, gather an integer index dtype) are skipped. Empty means
    /// all dtypes.
    pub dtypes: Vec<DType>,
    /// Op kinds instructions may use. Steps never use other kinds, not even to make operands.
    pub ops: Vec<OpKind>,
    /// Functions `unary` instructions may use.
    pub unary_ops: Vec<UnaryOp>,
    /// Functions `binary` instructions may use.
    pub binary_ops: Vec<BinaryOp>,
    /// Relations `compare` instructions may use.
    pub compare_ops: Vec<CompareOp>,
    /// Combiners `reduce` instructions may use.
    pub reduce_ops: Vec<ReduceOp>,
    /// Whether parameters may be weights (otherwise all are inputs).
    pub weights: bool,
    /// Whether outputs may donate to inputs of their type.
    pub donation: bool,
}

impl Default for GenConfig {
    fn default() -> GenConfig {
        GenConfig {
            max_params: 4,
            max_instructions: 12,
            max_rank: 4,
            max_dim: 13,
            max_elements: 256,
            dtypes: DType::ALL.to_vec(),
            ops: OpKind::ALL.to_vec(),
            unary_ops: UnaryOp::ALL.to_vec(),
            binary_ops: BinaryOp::ALL.to_vec(),
            compare_ops: CompareOp::ALL.to_vec(),
            reduce_ops: ReduceOp::ALL.to_vec(),
            weights: true,
            donation: true,
        }
    }
}

impl GenConfig {
    /// The same limits with out-of-range values clamped: rank at most [`crate::MAX_RANK`],
    /// at least one element, and all dtypes when `dtypes` is empty.
    fn normalized(&self) -> GenConfig {
        let mut c = self.clone();
        c.max_rank = c.max_rank.min(crate::MAX_RANK);
        c.max_elements = c.max_elements.max(1);
        if c.dtypes.is_empty() {
            c.dtypes = DType::ALL.to_vec();
        }
        c
    }
}

/// The kind of an [`Op`], without operands or attributes: what [`GenConfig::ops`] filters on
/// and what coverage checks count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(
    missing_docs,
    reason = "each variant is the `Op` variant of the same name"
)]
pub enum OpKind {
    Unary,
    Binary,
    Compare,
    Select,
    Convert,
    Constant,
    Iota,
    Broadcast,
    Reshape,
    Transpose,
    Slice,
    Concat,
    Pad,
    Reverse,
    Reduce,
    Dot,
    Gather,
}

impl OpKind {
    /// Every kind, in the order of the [`Op`] variants.
    pub const ALL: [OpKind; 17] = [
        OpKind::Unary,
        OpKind::Binary,
        OpKind::Compare,
        OpKind::Select,
        OpKind::Convert,
        OpKind::Constant,
        OpKind::Iota,
        OpKind::Broadcast,
        OpKind::Reshape,
        OpKind::Transpose,
        OpKind::Slice,
        OpKind::Concat,
        OpKind::Pad,
        OpKind::Reverse,
        OpKind::Reduce,
        OpKind::Dot,
        OpKind::Gather,
    ];

    /// The kind of `op`.
    pub fn of(op: &Op) -> OpKind {
        match op {
            Op::Unary { .. } => OpKind::Unary,
            Op::Binary { .. } => OpKind::Binary,
            Op::Compare { .. } => OpKind::Compare,
            Op::Select { .. } => OpKind::Select,
            Op::Convert { .. } => OpKind::Convert,
            Op::Constant(_) => OpKind::Constant,
            Op::Iota { .. } => OpKind::Iota,
            Op::Broadcast { .. } => OpKind::Broadcast,
            Op::Reshape { .. } => OpKind::Reshape,
            Op::Transpose { .. } => OpKind::Transpose,
            Op::Slice { .. } => OpKind::Slice,
            Op::Concat { .. } => OpKind::Concat,
            Op::Pad { .. } => OpKind::Pad,
            Op::Reverse { .. } => OpKind::Reverse,
            Op::Reduce { .. } => OpKind::Reduce,
            Op::Dot { .. } => OpKind::Dot,
            Op::Gather { .. } => OpKind::Gather,
        }
    }
}

/// Choice numbers per step. Steps needing more derive further numbers from these.
pub const STEP_CHOICES: usize = 24;

/// Choice numbers for the outputs.
pub const OUTPUT_CHOICES: usize = 8;

/// The random decisions behind one program; [`build`] turns it into the program. All zeros
/// means "the simplest choice" everywhere, which is what shrinking moves toward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// One entry per step; its first number picks the op kind.
    pub steps: Vec<[u32; STEP_CHOICES]>,
    /// Which values are outputs (the last value always is) and which donate.
    pub outputs: [u32; OUTPUT_CHOICES],
}

impl Plan {
    /// A plan read from arbitrary bytes (little-endian `u32`s: the output numbers first, then
    /// the steps, the last one zero-padded), so fuzz targets can turn their input into a valid
    /// program with [`build`]. Every byte string gives a plan.
    pub fn from_bytes(bytes: &[u8]) -> Plan {
        let mut nums = bytes.chunks(4).map(|c| {
            let mut a = [0u8; 4];
            a[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(a)
        });
        let mut outputs = [0; OUTPUT_CHOICES];
        for (slot, n) in outputs.iter_mut().zip(nums.by_ref()) {
            *slot = n;
        }
        let rest: Vec<u32> = nums.collect();
        let steps = rest
            .chunks(STEP_CHOICES)
            .map(|c| {
                let mut s = [0; STEP_CHOICES];
                s[..c.len()].copy_from_slice(c);
                s
            })
            .collect();
        Plan { steps, outputs }
    }
}

/// The program `plan` describes under `config`'s limits; the same inputs always give the same
/// program. Steps beyond the instruction limit are ignored.
///
/// The result is verified; an `Err` would mean a bug in this generator (tests assert it never
/// happens), not a bad plan: every plan is acceptable.
pub fn build(plan: &Plan, config: &GenConfig) -> Result<Program, BuildError> {
    let cfg = config.normalized();
    let mut g = state::Gen::new(&cfg);
    for step in &plan.steps {
        if g.instruction_count() >= cfg.max_instructions {
            break;
        }
        g.step(step);
    }
    g.finish(&plan.outputs)
}

/// Plans of up to `config.max_instructions` steps.
pub fn arb_plan(config: &GenConfig) -> impl Strategy<Value = Plan> {
    (
        prop::collection::vec(
            prop::array::uniform24(any::<u32>()),
            0..=config.max_instructions,
        ),
        prop::array::uniform8(any::<u32>()),
    )
        .prop_map(|(steps, outputs)| Plan { steps, outputs })
}

/// Valid programs under the default [`GenConfig`].
pub fn arb_program() -> impl Strategy<Value = Program> {
    arb_program_with(GenConfig::default())
}

/// Valid programs under `config`.
///
/// Panics (failing the test that draws it) only if the generator itself has a bug and builds
/// a program the verifier refuses.
pub fn arb_program_with(config: GenConfig) -> impl Strategy<Value = Program> {
    arb_plan(&config).prop_map(move |plan| match build(&plan, &config) {
        Ok(p) => p,
        Err(e) => panic!("generator bug: plan {plan:?} built an invalid program: {e}"),
    })
}

/// Arguments for `program`: one tensor per parameter (inputs and weights, in `params` order)
/// of exactly the parameter's type, with elements biased toward edge cases (NaN, ±inf, ±0,
/// subnormals, integer MIN/MAX, small integers that make shift amounts and gather indices
/// mostly in range). Meant for small types, such as the generator's.
pub fn arb_args(program: &Program) -> impl Strategy<Value = Vec<Tensor>> {
    program
        .params
        .iter()
        .map(|p| arb_tensor(&p.ty))
        .collect::<Vec<_>>()
}

/// Valid programs under the default [`GenConfig`] with arguments from [`arb_args`].
pub fn arb_program_and_args() -> impl Strategy<Value = (Program, Vec<Tensor>)> {
    arb_program_and_args_with(GenConfig::default())
}

/// Valid programs under `config` with arguments from [`arb_args`].
pub fn arb_program_and_args_with(
    config: GenConfig,
) -> impl Strategy<Value = (Program, Vec<Tensor>)> {
    arb_program_with(config).prop_flat_map(|p| {
        let args = arb_args(&p);
        (Just(p), args)
    })
}
