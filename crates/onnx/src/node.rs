//! One node as an op importer sees it: its inputs as [`Val`]s, typed attribute access that
//! refuses attributes the importer does not handle, and inputs that must be known at import
//! time.

use std::path::Path;

use accy_ir::{DType, Tensor, TensorData};

use crate::emit::{Emitter, Val};
use crate::error::{invalid, unsupported, NodeError, NodeResult};
use crate::schema::{AttrKind, AttributeProto, NodeProto, TensorProto};

/// The node being imported.
#[derive(Debug)]
pub(crate) struct Node<'p, 'a> {
    /// The parsed node.
    pub(crate) proto: &'p NodeProto<'a>,
    /// Each input's value; `None` for an omitted optional input (empty name).
    pub(crate) inputs: Vec<Option<Val>>,
    /// The model's `ai.onnx` opset version.
    pub(crate) opset: i64,
    /// Where external data of tensor attributes is looked up.
    pub(crate) base_dir: Option<&'p Path>,
}

/// `axis` in `-rank..rank` as an index in `0..rank`.
pub(crate) fn norm_axis(axis: i64, rank: usize) -> NodeResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return invalid(format!("axis {axis} is out of range for rank {rank}"));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// Every axis of `axes` normalized, refusing duplicates.
pub(crate) fn norm_axes(axes: &[i64], rank: usize) -> NodeResult<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = norm_axis(a, rank)?;
        if out.contains(&a) {
            return invalid(format!("axis {a} appears twice in {axes:?}"));
        }
        out.push(a);
    }
    Ok(out)
}

/// The elements of an integer tensor as i64s.
pub(crate) fn tensor_ints(t: &Tensor) -> Option<Vec<i64>> {
    Some(match t.data() {
        TensorData::I64(v) => v.clone(),
        TensorData::I32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        TensorData::U8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        TensorData::Bool(v) => v.iter().map(|&x| i64::from(x)).collect(),
        _ => return None,
    })
}

/// The elements of a tensor as f64s.
pub(crate) fn tensor_f64s(t: &Tensor) -> Vec<f64> {
    match t.data() {
        TensorData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        TensorData::F64(v) => v.clone(),
        TensorData::I64(v) => v.iter().map(|&x| x as f64).collect(),
        TensorData::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        TensorData::U8(v) => v.iter().map(|&x| f64::from(x)).collect(),
        TensorData::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
        _ => Vec::new(),
    }
}

impl Node<'_, '_> {
    /// The op type.
    pub(crate) fn op(&self) -> &str {
        self.proto.op_type
    }

    /// Refuses any attribute not named in `allowed` (an attribute the importer would ignore
    /// could change the result).
    pub(crate) fn check_attrs(&self, allowed: &[&str]) -> NodeResult<()> {
        for a in &self.proto.attributes {
            if !a.ref_attr_name.is_empty() {
                return unsupported(format!(
                    "attribute `{}` refers to a function attribute",
                    a.name
                ));
            }
            if !allowed.contains(&a.name) {
                return unsupported(format!(
                    "attribute `{}` is not supported (this importer handles: {})",
                    a.name,
                    if allowed.is_empty() {
                        "none".to_owned()
                    } else {
                        allowed.join(", ")
                    }
                ));
            }
        }
        Ok(())
    }

    fn attr(&self, name: &str, kind: AttrKind) -> NodeResult<Option<&AttributeProto<'_>>> {
        match self.proto.attributes.iter().rev().find(|a| a.name == name) {
            None => Ok(None),
            Some(a) if a.kind == kind => Ok(Some(a)),
            Some(a) => invalid(format!(
                "attribute `{name}` must be {} but is {}",
                kind.name(),
                a.kind.name()
            )),
        }
    }

    /// Whether attribute `name` is present.
    pub(crate) fn has_attr(&self, name: &str) -> bool {
        self.proto.attributes.iter().any(|a| a.name == name)
    }

    /// An INT attribute, or `default`.
    pub(crate) fn int(&self, name: &str, default: i64) -> NodeResult<i64> {
        Ok(self.attr(name, AttrKind::Int)?.map_or(default, |a| a.i))
    }

    /// A FLOAT attribute, or `default`.
    pub(crate) fn float(&self, name: &str, default: f32) -> NodeResult<f32> {
        Ok(self.attr(name, AttrKind::Float)?.map_or(default, |a| a.f))
    }

    /// An INTS attribute, if present.
    pub(crate) fn ints(&self, name: &str) -> NodeResult<Option<Vec<i64>>> {
        Ok(self.attr(name, AttrKind::Ints)?.map(|a| a.ints.clone()))
    }

    /// A FLOATS attribute, if present.
    pub(crate) fn floats(&self, name: &str) -> NodeResult<Option<Vec<f32>>> {
        Ok(self.attr(name, AttrKind::Floats)?.map(|a| a.floats.clone()))
    }

    /// A STRING attribute, or `default`.
    pub(crate) fn string(&self, name: &str, default: &str) -> NodeResult<String> {
        match self.attr(name, AttrKind::String)? {
            None => Ok(default.to_owned()),
            Some(a) => String::from_utf8(a.s.to_vec())
                .map_err(|_| NodeError::Invalid(format!("attribute `{name}` is not UTF-8"))),
        }
    }

    /// A TENSOR attribute, if present.
    pub(crate) fn tensor(&self, name: &str) -> NodeResult<Option<Tensor>> {
        let Some(msg) = self.attr(name, AttrKind::Tensor)?.and_then(|a| a.t) else {
            return Ok(None);
        };
        let proto = TensorProto::parse(msg).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let what = format!("attribute `{name}`");
        crate::tensor::to_tensor(&proto, &what, self.base_dir)
            .map(Some)
            .map_err(|e| match e.kind {
                crate::ErrorKind::Unsupported => NodeError::Unsupported(e.message),
                _ => NodeError::Invalid(e.message),
            })
    }

    /// The number of inputs given (trailing omitted ones included).
    pub(crate) fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Input `i`, which must be present.
    pub(crate) fn input(&self, i: usize) -> NodeResult<Val> {
        self.opt_input(i)
            .ok_or_else(|| NodeError::Invalid(format!("required input {i} is missing")))
    }

    /// Input `i`, or `None` when omitted.
    pub(crate) fn opt_input(&self, i: usize) -> Option<Val> {
        self.inputs.get(i).copied().flatten()
    }

    /// Input `i`'s value, which must be known at import time; `what` names its role.
    pub(crate) fn const_input<'e>(
        &self,
        em: &'e Emitter,
        i: usize,
        what: &str,
    ) -> NodeResult<Option<&'e Tensor>> {
        let Some(v) = self.opt_input(i) else {
            return Ok(None);
        };
        match em.value(v) {
            Some(t) => Ok(Some(t)),
            None => Err(NodeError::NeedsConstant {
                value: self.proto.inputs.get(i).copied().unwrap_or("").to_owned(),
                what: format!("`{what}` (input {i})"),
            }),
        }
    }

    /// Input `i` as known integers (`None` when omitted).
    pub(crate) fn const_ints(
        &self,
        em: &Emitter,
        i: usize,
        what: &str,
    ) -> NodeResult<Option<Vec<i64>>> {
        match self.const_input(em, i, what)? {
            None => Ok(None),
            Some(t) => match tensor_ints(t) {
                Some(v) => Ok(Some(v)),
                None => invalid(format!("`{what}` (input {i}) must hold integers")),
            },
        }
    }

    /// Input `i` as one known number (`None` when omitted).
    pub(crate) fn const_scalar(
        &self,
        em: &Emitter,
        i: usize,
        what: &str,
    ) -> NodeResult<Option<f64>> {
        match self.const_input(em, i, what)? {
            None => Ok(None),
            Some(t) => match tensor_f64s(t).as_slice() {
                [x] => Ok(Some(*x)),
                _ => invalid(format!("`{what}` (input {i}) must hold one element")),
            },
        }
    }

    /// Refuses a float-only op on another dtype.
    pub(crate) fn expect_float(&self, em: &Emitter, v: Val) -> NodeResult<DType> {
        let d = em.dtype(v);
        if !d.is_float() {
            return invalid(format!("{} needs a float tensor, got {d}", self.op()));
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_normalize_and_refuse_out_of_range() {
        assert_eq!(norm_axis(-1, 3).unwrap(), 2);
        assert_eq!(norm_axis(0, 3).unwrap(), 0);
        assert!(norm_axis(3, 3).is_err());
        assert!(norm_axis(-4, 3).is_err());
        assert!(norm_axes(&[1, -2], 3).is_err());
        assert_eq!(norm_axes(&[-1, 0], 3).unwrap(), vec![2, 0]);
    }
}
