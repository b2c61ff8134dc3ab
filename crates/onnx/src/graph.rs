//! The import driver: opset check, initializers, graph inputs with their shapes, every node in
//! order, and the graph outputs checked against the types the model declares.

use std::collections::HashMap;

use accy_ir::{Dims, Type, MAX_RANK};

use crate::emit::{Emitter, Val};
use crate::error::{ErrorKind, ImportError, NodeError};
use crate::names::Names;
use crate::node::Node;
use crate::pb::Msg;
use crate::schema::{
    DimProto, GraphProto, ModelProto, NodeProto, TensorProto, TypeProto, ValueInfoProto,
};
use crate::tensor::{dtype, onnx_dtype_name, to_tensor};
use crate::{ImportOptions, Model, ModelInput, MAX_OPSET, MIN_OPSET};

/// Imports a model; see [`crate::import`].
pub(crate) fn import(bytes: &[u8], options: &ImportOptions) -> Result<Model, ImportError> {
    let model = ModelProto::parse(Msg::new(bytes))?;
    let opset = default_opset(&model)?;
    let graph = model
        .graph
        .ok_or_else(|| ImportError::invalid("the model has no graph"))?;
    let graph = GraphProto::parse(graph)?;
    if graph.sparse_initializers > 0 {
        return Err(ImportError::unsupported(
            "the graph has sparse initializers, which accy does not import",
        ));
    }
    let base_dir = options.base_dir.as_deref();
    let mut em = Emitter::new();
    let mut names = Names::default();
    let mut values: HashMap<&str, Val> = HashMap::new();

    for &msg in &graph.initializers {
        let t = TensorProto::parse(msg)?;
        if t.name.is_empty() {
            return Err(ImportError::invalid("an initializer has no name"));
        }
        let tensor = to_tensor(&t, &format!("initializer `{}`", t.name), base_dir)?;
        let v = em.initializer(names.assign(t.name), tensor);
        if values.insert(t.name, v).is_some() {
            return Err(ImportError::invalid(format!(
                "initializer `{}` is defined twice",
                t.name
            )));
        }
    }

    // Names first, so that a misspelt option is reported before any input's own problem.
    let input_names = graph
        .inputs
        .iter()
        .map(|&m| ValueInfoProto::parse(m).map(|vi| vi.name))
        .filter(|n| n.as_ref().map_or(true, |n| !values.contains_key(n)))
        .collect::<Result<Vec<&str>, _>>()?;
    for name in options.shapes.keys().chain(options.constants.keys()) {
        if !input_names.contains(&name.as_str()) {
            return Err(ImportError::new(
                ErrorKind::Shape,
                format!(
                    "the model has no input `{name}` (its inputs: {})",
                    input_names.join(", ")
                ),
            ));
        }
    }

    let mut inputs = Vec::new();
    for &msg in &graph.inputs {
        let vi = ValueInfoProto::parse(msg)?;
        if values.contains_key(vi.name) {
            // An initializer listed as an input (required before IR version 4): a weight.
            continue;
        }
        let ty = input_type(&vi, options)?;
        let (v, param) = match options.constants.get(vi.name) {
            Some(t) if t.ty() == ty => (em.constant(t.clone()), None),
            Some(t) => {
                return Err(ImportError::new(
                    ErrorKind::Shape,
                    format!(
                        "the value given for input `{}` is {} but the input is {ty}",
                        vi.name,
                        t.ty()
                    ),
                ))
            }
            None => {
                let name = names.assign(vi.name);
                let v = em
                    .input(&name, ty)
                    .map_err(|e| ImportError::invalid(format!("input `{}`: {e}", vi.name)))?;
                (v, Some(name))
            }
        };
        values.insert(vi.name, v);
        inputs.push(ModelInput {
            onnx_name: vi.name.to_owned(),
            param,
        });
    }
    for (k, &msg) in graph.nodes.iter().enumerate() {
        let proto = NodeProto::parse(msg)?;
        let describe = || describe(k, &proto);
        let mut node_inputs = Vec::with_capacity(proto.inputs.len());
        for &name in &proto.inputs {
            if name.is_empty() {
                node_inputs.push(None);
                continue;
            }
            let v = values.get(name).copied().ok_or_else(|| {
                ImportError::invalid(format!(
                    "{} reads `{name}`, which is not defined before it (the graph is cyclic, \
                     not topologically sorted, or `{name}` is missing)",
                    describe()
                ))
            })?;
            node_inputs.push(Some(v));
        }
        if !matches!(proto.domain, "" | "ai.onnx") {
            let local = model
                .functions
                .iter()
                .any(|&(d, n)| d == proto.domain && n == proto.op_type);
            return Err(ImportError::unsupported(format!(
                "{}: domain `{}` is not supported{} (accy imports the default ai.onnx domain)",
                describe(),
                proto.domain,
                if local {
                    " (a model-local function)"
                } else {
                    ""
                }
            )));
        }
        let node = Node {
            proto: &proto,
            inputs: node_inputs,
            opset,
            base_dir,
        };
        let outs = crate::ops::import(&mut em, &node).map_err(|e| node_error(&describe(), e))?;
        for (i, &name) in proto.outputs.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            let Some(&v) = outs.get(i) else {
                return Err(ImportError::unsupported(format!(
                    "{}: output {i} (`{name}`) is not supported",
                    describe()
                )));
            };
            if values.insert(name, v).is_some() {
                return Err(ImportError::invalid(format!(
                    "{} defines `{name}`, which is already defined",
                    describe()
                )));
            }
        }
    }

    let mut outputs = Vec::new();
    for &msg in &graph.outputs {
        let vi = ValueInfoProto::parse(msg)?;
        let v = *values.get(vi.name).ok_or_else(|| {
            ImportError::invalid(format!("graph output `{}` is never defined", vi.name))
        })?;
        check_declared(&vi, &em.ty(v))?;
        em.output(v)
            .map_err(|e| node_error(&format!("output `{}`", vi.name), e))?;
        outputs.push(vi.name.to_owned());
    }
    if outputs.is_empty() {
        return Err(ImportError::invalid("the graph has no outputs"));
    }
    let (program, weights) = em
        .finish()
        .map_err(|e| node_error("the imported program", e))?;
    Ok(Model {
        program,
        weights,
        inputs,
        outputs,
        opset,
    })
}

/// The version of the default (`ai.onnx`) opset, checked to be one accy imports.
fn default_opset(model: &ModelProto<'_>) -> Result<i64, ImportError> {
    let Some(&(_, version)) = model
        .opsets
        .iter()
        .rev()
        .find(|(d, _)| matches!(*d, "" | "ai.onnx"))
    else {
        let domains: Vec<&str> = model.opsets.iter().map(|&(d, _)| d).collect();
        return Err(ImportError::unsupported(format!(
            "the model imports no version of the default ai.onnx opset, only domains [{}]; \
             accy imports the default domain",
            domains.join(", ")
        )));
    };
    if !(MIN_OPSET..=MAX_OPSET).contains(&version) {
        return Err(ImportError::unsupported(format!(
            "the model uses ai.onnx opset {version}; accy imports opsets {MIN_OPSET} to \
             {MAX_OPSET} (convert older models with onnx.version_converter)"
        )));
    }
    Ok(version)
}

/// `node `name` (#k, Op)`, or `node #k (Op, output `y`)` for an unnamed node.
fn describe(k: usize, proto: &NodeProto<'_>) -> String {
    if proto.name.is_empty() {
        let out = proto.outputs.first().copied().unwrap_or("");
        format!("node #{k} ({}, output `{out}`)", proto.op_type)
    } else {
        format!("node `{}` (#{k}, {})", proto.name, proto.op_type)
    }
}

fn node_error(what: &str, e: NodeError) -> ImportError {
    let message = format!("{what}: {e}");
    match e {
        NodeError::Unsupported(_) => ImportError::unsupported(message),
        NodeError::Invalid(_) => ImportError::invalid(message),
        NodeError::NeedsConstant { value, .. } => {
            ImportError::new(ErrorKind::NeedsConstant { value }, message)
        }
    }
}

/// A graph input's type, its unknown dims taken from the caller's shapes.
fn input_type(vi: &ValueInfoProto<'_>, options: &ImportOptions) -> Result<Type, ImportError> {
    let name = vi.name;
    let shape_error = |m: String| ImportError::new(ErrorKind::Shape, m);
    let (elem_type, shape) = match &vi.ty {
        None => {
            return Err(ImportError::invalid(format!("input `{name}` has no type")));
        }
        Some(TypeProto::Other(kind)) => {
            return Err(ImportError::unsupported(format!(
                "input `{name}` has {kind} type; accy imports tensor inputs only"
            )));
        }
        Some(TypeProto::Tensor { elem_type, shape }) => (*elem_type, shape),
    };
    let dtype =
        dtype(elem_type).map_err(|m| ImportError::unsupported(format!("input `{name}`: {m}")))?;
    let given = options.shapes.get(name);
    let dims: Dims = match (shape, given) {
        (None, None) => {
            return Err(shape_error(format!(
                "input `{name}` has no shape in the model; give one (e.g. --shape {name}=1x3)"
            )))
        }
        (None, Some(g)) => Dims::from_slice(g),
        (Some(dims), given) => {
            if let Some(g) = given {
                if g.len() != dims.len() {
                    return Err(shape_error(format!(
                        "input `{name}` has rank {} but the shape given has {} dims",
                        dims.len(),
                        g.len()
                    )));
                }
            }
            let mut out = Dims::new();
            for (axis, d) in dims.iter().enumerate() {
                let fixed = given.map(|g| g[axis]);
                out.push(match (*d, fixed) {
                    (DimProto::Value(v), _) if v < 0 => {
                        return Err(ImportError::invalid(format!(
                            "input `{name}` has negative dim {v} at axis {axis}"
                        )))
                    }
                    (DimProto::Value(v), Some(f)) if f != v as u64 => {
                        return Err(shape_error(format!(
                            "input `{name}` has dim {v} at axis {axis}, not {f} as given"
                        )))
                    }
                    (DimProto::Value(v), _) => v as u64,
                    (_, Some(f)) => f,
                    (DimProto::Param(p), None) => {
                        return Err(shape_error(format!(
                            "input `{name}` has symbolic dim `{p}` at axis {axis}; fix its \
                             shape (e.g. --shape {name}=…)"
                        )))
                    }
                    (DimProto::Unknown, None) => {
                        return Err(shape_error(format!(
                            "input `{name}` has an unknown dim at axis {axis}; fix its shape \
                             (e.g. --shape {name}=…)"
                        )))
                    }
                });
            }
            out
        }
    };
    if dims.len() > MAX_RANK {
        return Err(ImportError::unsupported(format!(
            "input `{name}` has rank {}; accy's maximum rank is {MAX_RANK}",
            dims.len()
        )));
    }
    Ok(Type { dtype, dims })
}

/// Refuses an output whose computed type disagrees with what the model declares (an unknown
/// or symbolic dim matches anything).
fn check_declared(vi: &ValueInfoProto<'_>, ty: &Type) -> Result<(), ImportError> {
    let Some(TypeProto::Tensor { elem_type, shape }) = &vi.ty else {
        return match &vi.ty {
            Some(TypeProto::Other(kind)) => Err(ImportError::unsupported(format!(
                "output `{}` has {kind} type; accy produces tensors only",
                vi.name
            ))),
            _ => Ok(()),
        };
    };
    let mismatch = |what: String| {
        Err(ImportError::invalid(format!(
            "output `{}`: the model declares {what}, but the imported program computes {ty}",
            vi.name
        )))
    };
    if *elem_type != 0 && dtype(*elem_type) != Ok(ty.dtype) {
        return mismatch(format!("element type {}", onnx_dtype_name(*elem_type)));
    }
    if let Some(dims) = shape {
        let agrees = dims.len() == ty.rank()
            && dims.iter().zip(&ty.dims).all(|(d, &n)| match d {
                DimProto::Value(v) => *v as u64 == n,
                _ => true,
            });
        if !agrees {
            return mismatch(format!("shape {dims:?}"));
        }
    }
    Ok(())
}
