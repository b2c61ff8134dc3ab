//! The program under construction: values known at import time, values computed at run time,
//! and constant folding between them.
//!
//! Every ONNX value becomes a [`Val`]. A value whose elements are known when importing
//! (initializers, `Constant` nodes, and anything computed only from small known values — in
//! particular every shape computation) is [`Val::Const`]; it enters the program only when a
//! run-time value needs it, as a `constant` instruction or, for initializers larger than
//! [`INLINE_LIMIT`] elements, as a named weight. [`Emitter::apply`] folds an op whose operands
//! are all small known values by running the reference interpreter on it, so folding has
//! exactly the semantics the compiled program would have.

use accy_ir::{
    infer_type, interp, Builder, DType, Dims, Instruction, Op, Output, Program, Tensor, Type,
    ValueId,
};

use crate::error::{NodeError, NodeResult};

/// Known operands and results up to this many elements are folded at import time; larger ones
/// are left to the compiled program (so a weight is never copied into a constant).
pub(crate) const FOLD_LIMIT: u64 = 4096;

/// A folded result may exceed its operands' total size only up to this many elements.
pub(crate) const EXPAND_LIMIT: u64 = 64;

/// Initializers with at most this many elements enter the program as constants; larger ones
/// become named weights.
pub(crate) const INLINE_LIMIT: u64 = 16;

/// An ONNX value during import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Val {
    /// Known at import time: an index into the emitter's known values.
    Const(usize),
    /// Computed at run time: a value of the program being built.
    Dyn(ValueId),
}

#[derive(Debug)]
struct Known {
    tensor: Tensor,
    /// The program value holding it, once a run-time value has needed it.
    value: Option<ValueId>,
    /// The weight name, for initializers.
    weight: Option<String>,
    /// True once it entered the program as a weight parameter.
    is_param: bool,
}

/// Builds the program: a [`Builder`] plus the known values and the type of every program
/// value.
#[derive(Debug, Default)]
pub(crate) struct Emitter {
    b: Builder,
    known: Vec<Known>,
    /// Type of each program value, indexed by id (the builder numbers values in creation
    /// order, and every creation goes through this emitter).
    types: Vec<Type>,
}

impl Emitter {
    /// An empty program.
    pub(crate) fn new() -> Emitter {
        Emitter::default()
    }

    /// Adds a run-time input.
    pub(crate) fn input(&mut self, name: &str, ty: Type) -> NodeResult<Val> {
        let id = self.b.input(name, ty.clone())?;
        self.types.push(ty);
        Ok(Val::Dyn(id))
    }

    /// A value known at import time.
    pub(crate) fn constant(&mut self, tensor: Tensor) -> Val {
        self.known.push(Known {
            tensor,
            value: None,
            weight: None,
            is_param: false,
        });
        Val::Const(self.known.len() - 1)
    }

    /// An initializer: known, and a weight named `name` if the program needs it at run time.
    pub(crate) fn initializer(&mut self, name: String, tensor: Tensor) -> Val {
        let v = self.constant(tensor);
        if let Val::Const(i) = v {
            self.known[i].weight = Some(name);
        }
        v
    }

    /// The type of `v`.
    pub(crate) fn ty(&self, v: Val) -> Type {
        match v {
            Val::Const(i) => self.known[i].tensor.ty(),
            Val::Dyn(id) => self.types[id.index()].clone(),
        }
    }

    /// The dims of `v`.
    pub(crate) fn dims(&self, v: Val) -> Dims {
        match v {
            Val::Const(i) => Dims::from_slice(self.known[i].tensor.dims()),
            Val::Dyn(id) => self.types[id.index()].dims.clone(),
        }
    }

    /// The rank of `v`.
    pub(crate) fn rank(&self, v: Val) -> usize {
        self.dims(v).len()
    }

    /// The dtype of `v`.
    pub(crate) fn dtype(&self, v: Val) -> DType {
        match v {
            Val::Const(i) => self.known[i].tensor.dtype(),
            Val::Dyn(id) => self.types[id.index()].dtype,
        }
    }

    /// The elements of `v` if they are known at import time.
    pub(crate) fn value(&self, v: Val) -> Option<&Tensor> {
        match v {
            Val::Const(i) => Some(&self.known[i].tensor),
            Val::Dyn(_) => None,
        }
    }

    /// True for an initializer large enough to enter the program as a weight.
    fn is_weight(&self, v: Val) -> bool {
        match v {
            Val::Const(i) => {
                let k = &self.known[i];
                k.weight.is_some()
                    && k.tensor
                        .ty()
                        .element_count()
                        .is_none_or(|n| n > INLINE_LIMIT)
            }
            Val::Dyn(_) => false,
        }
    }

    /// The program value holding `v`, adding a constant or weight the first time a known
    /// value is needed at run time.
    pub(crate) fn id(&mut self, v: Val) -> NodeResult<ValueId> {
        let i = match v {
            Val::Dyn(id) => return Ok(id),
            Val::Const(i) => i,
        };
        if let Some(id) = self.known[i].value {
            return Ok(id);
        }
        let k = &self.known[i];
        let ty = k.tensor.ty();
        let large = ty.element_count().is_none_or(|n| n > INLINE_LIMIT);
        let (id, is_param) = match &k.weight {
            Some(name) if large => (self.b.weight(name, ty.clone())?, true),
            _ => (self.b.constant(k.tensor.clone())?, false),
        };
        self.types.push(ty);
        self.known[i].value = Some(id);
        self.known[i].is_param = is_param;
        Ok(id)
    }

    /// Applies the op `make` builds from operand ids to `operands`: folded at import time
    /// when every operand is a small known value and so is the result, otherwise appended to
    /// the program.
    pub(crate) fn apply(
        &mut self,
        operands: &[Val],
        make: impl Fn(&[ValueId]) -> Op,
    ) -> NodeResult<Val> {
        if let Some(t) = self.fold(operands, &make) {
            return Ok(self.constant(t));
        }
        let ids = operands
            .iter()
            .map(|&v| self.id(v))
            .collect::<NodeResult<Vec<_>>>()?;
        let op = make(&ids);
        let id = self.b.push(op)?;
        let ty = self.b.type_of(id)?.clone();
        self.types.push(ty);
        Ok(Val::Dyn(id))
    }

    /// The result of `make` on known operands, evaluated by the reference interpreter, or
    /// `None` when an operand is not known, something is larger than [`FOLD_LIMIT`], or the
    /// op does not type-check (the caller then reports that through the builder).
    fn fold(&self, operands: &[Val], make: &impl Fn(&[ValueId]) -> Op) -> Option<Tensor> {
        let tensors = operands
            .iter()
            .map(|&v| self.value(v))
            .collect::<Option<Vec<&Tensor>>>()?;
        let small = |t: &Type| t.element_count().is_some_and(|n| n <= FOLD_LIMIT);
        if !tensors.iter().all(|t| small(&t.ty())) {
            return None;
        }
        // Weights stay weights: an op reading one runs in the program, so the weight keeps
        // its name and can be replaced without re-importing.
        if operands.iter().any(|&v| self.is_weight(v)) {
            return None;
        }
        let ids: Vec<ValueId> = (0..tensors.len() as u32).map(ValueId).collect();
        let op = make(&ids);
        let types: Vec<Type> = tensors.iter().map(|t| t.ty()).collect();
        let refs: Vec<&Type> = types.iter().collect();
        let ty = infer_type(&op, &refs).ok()?;
        // Fold results that are small, and no larger than their operands beyond a few
        // elements: an expansion (`broadcast` of a scalar, `iota`) stays an instruction rather
        // than becoming a large literal.
        let operand_elements: u64 = types.iter().filter_map(|t| t.element_count()).sum();
        if !small(&ty)
            || ty
                .element_count()
                .is_none_or(|n| n > operand_elements.max(EXPAND_LIMIT))
        {
            return None;
        }
        let mut program = Program::default();
        for t in tensors {
            program.instructions.push(Instruction {
                ty: t.ty(),
                op: Op::Constant(t.clone()),
            });
        }
        program.instructions.push(Instruction { op, ty });
        program.outputs.push(Output {
            value: ValueId(ids.len() as u32),
            donates: None,
        });
        interp::eval(&program, &[]).ok()?.pop()
    }

    /// Marks `v` as the next program output.
    pub(crate) fn output(&mut self, v: Val) -> NodeResult<()> {
        let id = self.id(v)?;
        self.b.output(id)?;
        Ok(())
    }

    /// The verified program and the data of every weight it uses, by name.
    pub(crate) fn finish(self) -> Result<(Program, Vec<(String, Tensor)>), NodeError> {
        let program = self.b.finish()?;
        let weights = self
            .known
            .into_iter()
            .filter(|k| k.is_param)
            .filter_map(|k| Some((k.weight?, k.tensor)))
            .collect();
        Ok((program, weights))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accy_ir::{BinaryOp, ParamKind};

    #[test]
    fn known_operands_fold_and_run_time_ones_do_not() {
        let mut e = Emitter::new();
        let a = e.constant(Tensor::i64s(&[2], vec![3, 4]));
        let b = e.constant(Tensor::i64s(&[2], vec![10, 20]));
        let add = |ids: &[ValueId]| Op::Binary {
            op: BinaryOp::Add,
            lhs: ids[0],
            rhs: ids[1],
        };
        let c = e.apply(&[a, b], add).unwrap();
        assert_eq!(e.value(c), Some(&Tensor::i64s(&[2], vec![13, 24])));
        let x = e.input("x", Type::new(DType::I64, &[2])).unwrap();
        let y = e.apply(&[x, c], add).unwrap();
        assert!(matches!(y, Val::Dyn(_)));
        e.output(y).unwrap();
        let (p, weights) = e.finish().unwrap();
        // The folded constant is the only constant in the program: a and b never entered it.
        assert_eq!(p.instructions.len(), 2);
        assert_eq!(
            p.instructions[0].op,
            Op::Constant(Tensor::i64s(&[2], vec![13, 24]))
        );
        assert!(weights.is_empty());
    }

    #[test]
    fn large_initializers_become_weights_and_small_ones_constants() {
        let mut e = Emitter::new();
        let big = e.initializer("w".into(), Tensor::f32s(&[20], vec![1.0; 20]));
        let small = e.initializer("s".into(), Tensor::f32s(&[20], vec![2.0; 20]));
        let tiny = e.initializer("t".into(), Tensor::f32s(&[], vec![2.0]));
        let _ = small;
        e.output(big).unwrap();
        e.output(tiny).unwrap();
        let (p, weights) = e.finish().unwrap();
        assert_eq!(p.params.len(), 1);
        assert_eq!(p.params[0].kind, ParamKind::Weight);
        assert_eq!(weights.len(), 1);
        assert_eq!(weights[0].0, "w");
        assert_eq!(p.instructions.len(), 1, "the scalar is inlined");
    }
}
