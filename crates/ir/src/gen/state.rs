//! The program under construction and the ways a step obtains operands: picking an existing
//! value, deriving one of a needed type, or adding a parameter or constant.

use super::choices::Choices;
use super::data::constant_data;
use super::{GenConfig, OpKind};
use crate::{
    axes, infer_type, BuildError, Builder, DType, Dim, Op, Program, Tensor, Type, ValueId,
};

/// Dims for fresh axes, indexed by a choice number: 1 first (the shrink target), then mostly
/// small primes and 1, with 0 at one entry in twenty.
const DIM_TABLE: [Dim; 20] = [1, 2, 3, 1, 5, 7, 2, 4, 3, 1, 0, 6, 5, 8, 11, 13, 2, 7, 3, 1];

/// Name shapes for parameters, so text and wire tests meet every allowed name character.
const INPUT_NAMES: [&str; 4] = ["x", "input_", "in.", "batch/a-"];
const WEIGHT_NAMES: [&str; 4] = ["w", "layer.weight:", "model/enc_", "bias-"];

/// Builder state plus what the generator needs to know about each value.
pub(super) struct Gen<'c> {
    pub(super) cfg: &'c GenConfig,
    b: Builder,
    /// Type of every value, indexed by builder id.
    pub(super) types: Vec<Type>,
    /// For input parameters, their input number (donation target).
    input_number: Vec<Option<u32>>,
    params: usize,
    inputs: u32,
    weights: u32,
    instructions: usize,
}

/// Picks dims one axis at a time while keeping the element count within the limit.
pub(super) struct DimPicker<'c> {
    cfg: &'c GenConfig,
    /// Product of the dims fixed so far (0 once any is 0: then every dim fits).
    product: u64,
}

impl DimPicker<'_> {
    pub(super) fn pick(&mut self, ch: &mut Choices) -> Dim {
        let d = DIM_TABLE[ch.below(DIM_TABLE.len())].min(self.cfg.max_dim);
        // A product of 0 means the count is 0 whatever this dim is.
        let d = match self.cfg.max_elements.checked_div(self.product) {
            Some(cap) => d.min(cap),
            None => d,
        };
        self.product = self.product.saturating_mul(d);
        d
    }
}

impl<'c> Gen<'c> {
    pub(super) fn new(cfg: &'c GenConfig) -> Gen<'c> {
        Gen {
            cfg,
            b: Builder::new(),
            types: Vec::new(),
            input_number: Vec::new(),
            params: 0,
            inputs: 0,
            weights: 0,
            instructions: 0,
        }
    }

    pub(super) fn instruction_count(&self) -> usize {
        self.instructions
    }

    pub(super) fn allowed(&self, kind: OpKind) -> bool {
        self.cfg.ops.contains(&kind)
    }

    pub(super) fn has_dtype(&self, d: DType) -> bool {
        self.cfg.dtypes.contains(&d)
    }

    /// The configured dtypes that satisfy `ok`.
    pub(super) fn dtypes_where(&self, ok: impl Fn(DType) -> bool) -> Vec<DType> {
        self.cfg.dtypes.iter().copied().filter(|&d| ok(d)).collect()
    }

    /// True if a value of `ty` respects the configured limits.
    pub(super) fn fits(&self, ty: &Type) -> bool {
        ty.rank() <= self.cfg.max_rank
            && ty
                .element_count()
                .is_some_and(|n| n <= self.cfg.max_elements)
            && self.has_dtype(ty.dtype)
    }

    pub(super) fn ty(&self, v: ValueId) -> Type {
        self.types[v.index()].clone()
    }

    pub(super) fn dim_picker(&self, product: u64) -> DimPicker<'c> {
        DimPicker {
            cfg: self.cfg,
            product,
        }
    }

    /// Appends `op` if the instruction limit allows, its operands type-check and its result
    /// fits the limits; otherwise changes nothing.
    pub(super) fn push(&mut self, op: Op) -> Option<ValueId> {
        if self.instructions >= self.cfg.max_instructions {
            return None;
        }
        let operands = op.operands();
        let types = operands
            .iter()
            .map(|v| self.types.get(v.index()))
            .collect::<Option<Vec<&Type>>>()?;
        let ty = infer_type(&op, &types).ok()?;
        if !self.fits(&ty) {
            return None;
        }
        let v = self.b.push(op).ok()?;
        self.types.push(ty);
        self.input_number.push(None);
        self.instructions += 1;
        Some(v)
    }

    /// Existing values whose type satisfies `ok`.
    pub(super) fn candidates(&self, ok: impl Fn(&Type) -> bool) -> Vec<ValueId> {
        (0..self.types.len())
            .filter(|&i| ok(&self.types[i]))
            .map(|i| ValueId(i as u32))
            .collect()
    }

    /// One of `cands`, the most recent for choice 0 (so chains of ops grow deep).
    pub(super) fn pick_recent(ch: &mut Choices, cands: &[ValueId]) -> Option<ValueId> {
        let n = cands.len();
        let i = ch.below(n);
        cands.get(n.checked_sub(1 + i)?).copied()
    }

    /// A type with a dtype from `dtypes` and rank in `min_rank..=max_rank` (also bounded by
    /// the config), fitting the element limit.
    pub(super) fn fresh_type(
        &self,
        ch: &mut Choices,
        dtypes: &[DType],
        min_rank: usize,
        max_rank: usize,
    ) -> Option<Type> {
        let dtype = ch.pick(dtypes)?;
        let max_rank = max_rank.min(self.cfg.max_rank);
        if min_rank > max_rank {
            return None;
        }
        let rank = min_rank + ch.below(max_rank - min_rank + 1);
        let mut picker = self.dim_picker(1);
        let dims: Vec<Dim> = (0..rank).map(|_| picker.pick(ch)).collect();
        Some(Type::new(dtype, &dims))
    }

    /// A new parameter of `ty`, if the parameter limit allows.
    pub(super) fn param(&mut self, ch: &mut Choices, ty: &Type) -> Option<ValueId> {
        if self.params >= self.cfg.max_params || !self.fits(ty) {
            return None;
        }
        let weight = self.cfg.weights && ch.chance(30);
        self.add_param(ch, ty, weight)
    }

    fn add_param(&mut self, ch: &mut Choices, ty: &Type, weight: bool) -> Option<ValueId> {
        let v = if weight {
            let name = format!("{}{}", ch.pick(&WEIGHT_NAMES)?, self.weights);
            self.weights += 1;
            self.b.weight(&name, ty.clone()).ok()?
        } else {
            let name = format!("{}{}", ch.pick(&INPUT_NAMES)?, self.inputs);
            self.b.input(&name, ty.clone()).ok()?
        };
        self.types.push(ty.clone());
        self.input_number.push((!weight).then_some(self.inputs));
        if !weight {
            self.inputs += 1;
        }
        self.params += 1;
        Some(v)
    }

    /// A constant of `ty` with edge-case-biased elements.
    pub(super) fn constant(&mut self, ch: &mut Choices, ty: &Type) -> Option<ValueId> {
        if !self.allowed(OpKind::Constant) {
            return None;
        }
        let n = usize::try_from(ty.element_count()?).ok()?;
        let data = constant_data(ty.dtype, n, ch.seed());
        self.push(Op::Constant(Tensor::new(&ty.dims, data).ok()?))
    }

    /// An iota of `ty` (numeric, rank ≥ 1) along a random axis.
    pub(super) fn iota(&mut self, ch: &mut Choices, ty: &Type) -> Option<ValueId> {
        if !self.allowed(OpKind::Iota) || !ty.dtype.is_numeric() || ty.rank() == 0 {
            return None;
        }
        let axis = ch.below(ty.rank()) as u32;
        self.push(Op::Iota {
            ty: ty.clone(),
            axis,
        })
    }

    /// A new value of `ty` with no operands: mostly a parameter, else a constant or an iota,
    /// falling back on whichever of them is possible.
    pub(super) fn fresh(&mut self, ch: &mut Choices, ty: &Type) -> Option<ValueId> {
        let first = match ch.below(10) {
            0..=5 => 0,
            6..=8 => 1,
            _ => 2,
        };
        for k in [first, 0, 1, 2] {
            let v = match k {
                0 => self.param(ch, ty),
                1 => self.constant(ch, ty),
                _ => self.iota(ch, ty),
            };
            if v.is_some() {
                return v;
            }
        }
        None
    }

    /// An operand whose dtype satisfies `dtype_ok` and whose rank is in `min_rank..=max_rank`:
    /// usually an existing value, sometimes (or when none fits) a fresh one.
    pub(super) fn operand(
        &mut self,
        ch: &mut Choices,
        dtype_ok: &dyn Fn(DType) -> bool,
        min_rank: usize,
        max_rank: usize,
    ) -> Option<ValueId> {
        let cands =
            self.candidates(|t| dtype_ok(t.dtype) && t.rank() >= min_rank && t.rank() <= max_rank);
        if cands.is_empty() || ch.chance(15) {
            let dtypes = self.dtypes_where(dtype_ok);
            if let Some(ty) = self.fresh_type(ch, &dtypes, min_rank, max_rank) {
                if let Some(v) = self.fresh(ch, &ty) {
                    return Some(v);
                }
            }
        }
        Self::pick_recent(ch, &cands)
    }

    /// A value of exactly `ty`: an existing one, a fresh one, or one derived from an existing
    /// value by broadcast, convert or reshape.
    pub(super) fn value_of_type(&mut self, ch: &mut Choices, ty: &Type) -> Option<ValueId> {
        if !self.fits(ty) {
            return None;
        }
        let exact = self.candidates(|t| t == ty);
        let mut broadcastable = Vec::new();
        if self.allowed(OpKind::Broadcast) {
            for v in self.candidates(|t| t.dtype == ty.dtype && t.rank() <= ty.rank()) {
                if let Some(a) = broadcast_axes(&self.types[v.index()].dims, &ty.dims) {
                    broadcastable.push((v, a));
                }
            }
        }
        let convertible = if self.allowed(OpKind::Convert) {
            self.candidates(|t| t.dims == ty.dims && t.dtype != ty.dtype)
        } else {
            Vec::new()
        };
        let reshapeable = if self.allowed(OpKind::Reshape) {
            let n = ty.element_count();
            self.candidates(|t| t.dtype == ty.dtype && t.element_count() == n)
        } else {
            Vec::new()
        };
        // Option 0 is an existing value when there is one, else a fresh one.
        let mut options = Vec::new();
        if !exact.is_empty() {
            options.push(0);
        }
        options.push(1);
        if !broadcastable.is_empty() {
            options.push(2);
        }
        if !convertible.is_empty() {
            options.push(3);
        }
        if !reshapeable.is_empty() {
            options.push(4);
        }
        let derived = match ch.pick(&options)? {
            0 => Self::pick_recent(ch, &exact),
            1 => self.fresh(ch, ty),
            2 => {
                let i = ch.below(broadcastable.len());
                let (x, a) = broadcastable.swap_remove(i);
                self.push(Op::Broadcast {
                    x,
                    dims: ty.dims.clone(),
                    axes: axes(&a),
                })
            }
            3 => {
                let x = Self::pick_recent(ch, &convertible)?;
                self.push(Op::Convert { x, to: ty.dtype })
            }
            _ => {
                let x = Self::pick_recent(ch, &reshapeable)?;
                self.push(Op::Reshape {
                    x,
                    dims: ty.dims.clone(),
                })
            }
        };
        // A derivation can fail on the instruction limit; an existing value still serves.
        derived.or_else(|| Self::pick_recent(ch, &exact))
    }

    /// Adds the outputs (the last value, then a few chosen ones, some donating) and finishes.
    pub(super) fn finish(mut self, nums: &[u32]) -> Result<Program, BuildError> {
        let mut ch = Choices::new(nums);
        if self.types.is_empty() {
            // Nothing was made (no steps, or none applied): one input keeps the program valid.
            let dtype = ch.pick(&self.cfg.dtypes).unwrap_or(DType::F32);
            let ty = Type::scalar(dtype);
            if self.param(&mut ch, &ty).is_none() {
                self.add_param(&mut ch, &ty, false);
            }
        }
        let n = self.types.len();
        let mut outs = vec![ValueId(n.saturating_sub(1) as u32)];
        for _ in 0..ch.below(4) {
            let i = ch.below(n);
            outs.push(ValueId((n - 1 - i) as u32));
        }
        let mut donated = Vec::new();
        for v in outs {
            let target = if self.cfg.donation && ch.chance(40) {
                let ty = &self.types[v.index()];
                let free: Vec<u32> = (0..n)
                    .filter(|&i| &self.types[i] == ty)
                    .filter_map(|i| self.input_number[i])
                    .filter(|d| !donated.contains(d))
                    .collect();
                ch.pick(&free)
            } else {
                None
            };
            match target {
                Some(d) => {
                    donated.push(d);
                    self.b.output_donating(v, d)?;
                }
                None => self.b.output(v)?,
            }
        }
        self.b.finish()
    }
}

/// Strictly increasing result axes mapping each of `from`'s axes to one of `to`'s with an
/// equal dim (or from a dim of 1), if any exist. Greedy leftmost matching finds a mapping
/// whenever one exists.
pub(super) fn broadcast_axes(from: &[Dim], to: &[Dim]) -> Option<Vec<u32>> {
    let mut axes = Vec::with_capacity(from.len());
    let mut j = 0;
    for &d in from {
        while j < to.len() && d != to[j] && d != 1 {
            j += 1;
        }
        if j == to.len() {
            return None;
        }
        axes.push(j as u32);
        j += 1;
    }
    Some(axes)
}
