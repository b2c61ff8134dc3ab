//! Programs: parameters, SSA instructions and outputs.

use std::fmt;

use crate::{Op, Type};

/// Names one value of a [`Program`]. Parameters take ids `0..params.len()` in order, and
/// instruction `k` defines id `params.len() + k`, so an id says where its value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    /// The id as an index into a program's values.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ValueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// Where a parameter's data comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// Supplied by the caller on every invocation.
    Input,
    /// A named, immutable tensor bound once (model weights); shared by every invocation.
    Weight,
}

/// A program parameter: an input or a weight, with a name and a type.
///
/// Names are what hosts use to bind data (`--input x=…`, a weight file's tensor names). The
/// verifier requires them to be 1–255 bytes of `[A-Za-z0-9_.:/-]` and unique among the
/// parameters of the same kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Input or weight.
    pub kind: ParamKind,
    /// The binding name.
    pub name: String,
    /// The type the caller's data must have.
    pub ty: Type,
}

/// One SSA instruction: an operation and the declared type of the value it defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    /// The operation and its operands.
    pub op: Op,
    /// The result type; the verifier checks it against the op's typing rule.
    pub ty: Type,
}

/// A program result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The value returned.
    pub value: ValueId,
    /// When set, this output is written into the buffer of input number `donates` (counting
    /// input parameters only, in order), for in-place updates. The input must have exactly the
    /// output's type and may be donated to at most one output. Donation is a buffer-placement
    /// promise only: results are the same as without it, and the runtime copies a caller's
    /// input first so the caller's data is never changed.
    pub donates: Option<u32>,
}

/// A tensor program: typed parameters, SSA instructions in order, and outputs. Plain data:
/// build it with [`crate::Builder`], decode it from wire bytes or parse its text, and call
/// [`crate::verify`] before trusting it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Program {
    /// Parameters; parameter `i` is value `%i`.
    pub params: Vec<Param>,
    /// Instructions; instruction `k` defines value `%(params.len() + k)`.
    pub instructions: Vec<Instruction>,
    /// Results, in order. A program may return a parameter directly, or one value twice.
    pub outputs: Vec<Output>,
}

impl Program {
    /// Total number of values (parameters plus instructions).
    pub fn value_count(&self) -> usize {
        self.params.len() + self.instructions.len()
    }

    /// The type of `value`, or `None` if no such value exists.
    pub fn value_type(&self, value: ValueId) -> Option<&Type> {
        let i = value.index();
        match self.params.get(i) {
            Some(p) => Some(&p.ty),
            None => self
                .instructions
                .get(i - self.params.len())
                .map(|inst| &inst.ty),
        }
    }

    /// The id of the value instruction `k` defines.
    pub fn instruction_value(&self, k: usize) -> ValueId {
        ValueId((self.params.len() + k) as u32)
    }

    /// Parameters of kind [`ParamKind::Input`] with their value ids, in order (input number
    /// `n` is the `n`-th item).
    pub fn inputs(&self) -> impl Iterator<Item = (ValueId, &Param)> {
        self.params_of(ParamKind::Input)
    }

    /// Parameters of kind [`ParamKind::Weight`] with their value ids, in order.
    pub fn weights(&self) -> impl Iterator<Item = (ValueId, &Param)> {
        self.params_of(ParamKind::Weight)
    }

    fn params_of(&self, kind: ParamKind) -> impl Iterator<Item = (ValueId, &Param)> {
        self.params
            .iter()
            .enumerate()
            .filter(move |(_, p)| p.kind == kind)
            .map(|(i, p)| (ValueId(i as u32), p))
    }
}
