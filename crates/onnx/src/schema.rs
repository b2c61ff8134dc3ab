//! The subset of `onnx.proto` the importer reads, as views over the input bytes.
//!
//! Each `parse` walks one message once, keeps strings and nested messages as borrowed slices
//! and skips fields it does not know (as protobuf requires). Repeated nested messages are kept
//! as slices and parsed only when the importer reaches them, so memory stays proportional to
//! the input: an empty repeated entry costs 2 input bytes and one 24-byte slice here. Nothing
//! recurses: subgraphs (`If`, `Loop`) are recorded but never parsed.
//!
//! Singular fields follow protobuf's rule that the last occurrence wins, except embedded
//! messages (`graph`, `type`, `shape`), which protobuf would merge; a second occurrence of one
//! of those is refused instead, since no ONNX writer produces it.

use crate::pb::{error, Field, Msg};
use crate::DecodeError;

/// `ModelProto`.
#[derive(Debug, Default)]
pub(crate) struct ModelProto<'a> {
    /// `ir_version` (field 1).
    pub(crate) ir_version: i64,
    /// `opset_import` (field 8): (domain, version).
    pub(crate) opsets: Vec<(&'a str, i64)>,
    /// `graph` (field 7).
    pub(crate) graph: Option<Msg<'a>>,
    /// `functions` (field 25): model-local functions, as (domain, name).
    pub(crate) functions: Vec<(&'a str, &'a str)>,
}

/// `GraphProto`.
#[derive(Debug, Default)]
pub(crate) struct GraphProto<'a> {
    /// `node` (field 1), in order.
    pub(crate) nodes: Vec<Msg<'a>>,
    /// `initializer` (field 5).
    pub(crate) initializers: Vec<Msg<'a>>,
    /// How many `sparse_initializer` entries (field 15) there are.
    pub(crate) sparse_initializers: usize,
    /// `input` (field 11).
    pub(crate) inputs: Vec<Msg<'a>>,
    /// `output` (field 12).
    pub(crate) outputs: Vec<Msg<'a>>,
}

/// `NodeProto`.
#[derive(Debug, Default)]
pub(crate) struct NodeProto<'a> {
    /// `input` (field 1); an empty name is an omitted optional input.
    pub(crate) inputs: Vec<&'a str>,
    /// `output` (field 2); an empty name is an omitted optional output.
    pub(crate) outputs: Vec<&'a str>,
    /// `name` (field 3).
    pub(crate) name: &'a str,
    /// `op_type` (field 4).
    pub(crate) op_type: &'a str,
    /// `domain` (field 7).
    pub(crate) domain: &'a str,
    /// `attribute` (field 5).
    pub(crate) attributes: Vec<AttributeProto<'a>>,
}

/// What an attribute holds (`AttributeProto.AttributeType`, or inferred from the fields set
/// when a writer left `type` out).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum AttrKind {
    /// No value field set.
    #[default]
    Undefined,
    /// `f`.
    Float,
    /// `i`.
    Int,
    /// `s`.
    String,
    /// `t`.
    Tensor,
    /// `floats`.
    Floats,
    /// `ints`.
    Ints,
    /// `strings`.
    Strings,
    /// Graphs, sparse tensors, type protos and lists of tensors: never read by the importer.
    Other(i64),
}

impl AttrKind {
    fn from_code(code: i64) -> AttrKind {
        match code {
            0 => AttrKind::Undefined,
            1 => AttrKind::Float,
            2 => AttrKind::Int,
            3 => AttrKind::String,
            4 => AttrKind::Tensor,
            6 => AttrKind::Floats,
            7 => AttrKind::Ints,
            8 => AttrKind::Strings,
            other => AttrKind::Other(other),
        }
    }

    /// The ONNX name of the kind, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            AttrKind::Undefined => "UNDEFINED",
            AttrKind::Float => "FLOAT",
            AttrKind::Int => "INT",
            AttrKind::String => "STRING",
            AttrKind::Tensor => "TENSOR",
            AttrKind::Floats => "FLOATS",
            AttrKind::Ints => "INTS",
            AttrKind::Strings => "STRINGS",
            AttrKind::Other(5) => "GRAPH",
            AttrKind::Other(9) => "TENSORS",
            AttrKind::Other(10) => "GRAPHS",
            AttrKind::Other(11 | 12) => "SPARSE_TENSOR(S)",
            AttrKind::Other(13 | 14) => "TYPE_PROTO(S)",
            AttrKind::Other(_) => "an unknown attribute type",
        }
    }
}

/// `AttributeProto`.
#[derive(Debug, Default)]
pub(crate) struct AttributeProto<'a> {
    /// `name` (field 1).
    pub(crate) name: &'a str,
    /// `ref_attr_name` (field 21): set only inside function bodies.
    pub(crate) ref_attr_name: &'a str,
    /// What the attribute holds.
    pub(crate) kind: AttrKind,
    /// `f` (field 2).
    pub(crate) f: f32,
    /// `i` (field 3).
    pub(crate) i: i64,
    /// `s` (field 4).
    pub(crate) s: &'a [u8],
    /// `t` (field 5).
    pub(crate) t: Option<Msg<'a>>,
    /// `floats` (field 7).
    pub(crate) floats: Vec<f32>,
    /// `ints` (field 8).
    pub(crate) ints: Vec<i64>,
    /// `strings` (field 9).
    pub(crate) strings: Vec<&'a [u8]>,
}

/// `ValueInfoProto`.
#[derive(Debug, Default)]
pub(crate) struct ValueInfoProto<'a> {
    /// `name` (field 1).
    pub(crate) name: &'a str,
    /// `type` (field 2).
    pub(crate) ty: Option<TypeProto<'a>>,
}

/// `TypeProto`, as far as the importer cares: a tensor type, or the name of another kind.
#[derive(Debug)]
pub(crate) enum TypeProto<'a> {
    /// `tensor_type`: element type and, if given, the shape.
    Tensor {
        /// `elem_type` (a `TensorProto.DataType` code).
        elem_type: i32,
        /// `shape`, absent when the rank is unknown.
        shape: Option<Vec<DimProto<'a>>>,
    },
    /// A sequence, map, optional or sparse tensor type (named for messages).
    Other(&'static str),
}

/// `TensorShapeProto.Dimension`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DimProto<'a> {
    /// `dim_value`.
    Value(i64),
    /// `dim_param`: a symbolic size.
    Param(&'a str),
    /// Neither set.
    Unknown,
}

/// `TensorProto`.
#[derive(Debug, Default)]
pub(crate) struct TensorProto<'a> {
    /// `name` (field 8).
    pub(crate) name: &'a str,
    /// `dims` (field 1).
    pub(crate) dims: Vec<i64>,
    /// `data_type` (field 2).
    pub(crate) data_type: i32,
    /// Whether `segment` (field 3) is present.
    pub(crate) segment: bool,
    /// `raw_data` (field 9).
    pub(crate) raw_data: Option<Msg<'a>>,
    /// `float_data` (field 4), as bits.
    pub(crate) float_data: Vec<u32>,
    /// `int32_data` (field 5).
    pub(crate) int32_data: Vec<i64>,
    /// Number of `string_data` entries (field 6).
    pub(crate) string_data: usize,
    /// `int64_data` (field 7).
    pub(crate) int64_data: Vec<i64>,
    /// `double_data` (field 10), as bits.
    pub(crate) double_data: Vec<u64>,
    /// `uint64_data` (field 11).
    pub(crate) uint64_data: Vec<i64>,
    /// `external_data` (field 13), as (key, value).
    pub(crate) external_data: Vec<(&'a str, &'a str)>,
    /// `data_location` (field 14): 1 = EXTERNAL.
    pub(crate) data_location: i64,
}

/// Walks `msg`, calling `f` on each field with its number.
fn each<'a>(
    msg: Msg<'a>,
    mut f: impl FnMut(Field<'a>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    for field in msg.fields() {
        f(field?)?;
    }
    Ok(())
}

/// Stores a singular embedded message, refusing a second occurrence.
fn once<'a>(slot: &mut Option<Msg<'a>>, field: &Field<'a>, what: &str) -> Result<(), DecodeError> {
    if slot.is_some() {
        return Err(error(field.offset, format!("{what} appears twice")));
    }
    *slot = Some(field.msg(what)?);
    Ok(())
}

/// A `StringStringEntryProto` as (key, value).
fn string_pair<'a>(msg: Msg<'a>, what: &str) -> Result<(&'a str, &'a str), DecodeError> {
    let (mut key, mut value) = ("", "");
    each(msg, |f| {
        match f.number {
            1 => key = f.str(what)?,
            2 => value = f.str(what)?,
            _ => {}
        }
        Ok(())
    })?;
    Ok((key, value))
}

impl<'a> ModelProto<'a> {
    /// Parses a `ModelProto` (the whole `.onnx` file).
    pub(crate) fn parse(msg: Msg<'a>) -> Result<ModelProto<'a>, DecodeError> {
        let mut m = ModelProto::default();
        each(msg, |f| {
            match f.number {
                1 => m.ir_version = f.int("ModelProto.ir_version")?,
                7 => once(&mut m.graph, &f, "ModelProto.graph")?,
                8 => {
                    let (mut domain, mut version) = ("", 0);
                    each(f.msg("ModelProto.opset_import")?, |g| {
                        match g.number {
                            1 => domain = g.str("OperatorSetIdProto.domain")?,
                            2 => version = g.int("OperatorSetIdProto.version")?,
                            _ => {}
                        }
                        Ok(())
                    })?;
                    m.opsets.push((domain, version));
                }
                25 => {
                    let (mut domain, mut name) = ("", "");
                    each(f.msg("ModelProto.functions")?, |g| {
                        match g.number {
                            1 => name = g.str("FunctionProto.name")?,
                            10 => domain = g.str("FunctionProto.domain")?,
                            _ => {}
                        }
                        Ok(())
                    })?;
                    m.functions.push((domain, name));
                }
                _ => {}
            }
            Ok(())
        })?;
        Ok(m)
    }
}

impl<'a> GraphProto<'a> {
    /// Parses a `GraphProto`, keeping its repeated entries unparsed.
    pub(crate) fn parse(msg: Msg<'a>) -> Result<GraphProto<'a>, DecodeError> {
        let mut g = GraphProto::default();
        each(msg, |f| {
            match f.number {
                1 => g.nodes.push(f.msg("GraphProto.node")?),
                5 => g.initializers.push(f.msg("GraphProto.initializer")?),
                11 => g.inputs.push(f.msg("GraphProto.input")?),
                12 => g.outputs.push(f.msg("GraphProto.output")?),
                15 => g.sparse_initializers += 1,
                _ => {}
            }
            Ok(())
        })?;
        Ok(g)
    }
}

impl<'a> NodeProto<'a> {
    /// Parses a `NodeProto` with its attributes.
    pub(crate) fn parse(msg: Msg<'a>) -> Result<NodeProto<'a>, DecodeError> {
        let mut n = NodeProto::default();
        each(msg, |f| {
            match f.number {
                1 => n.inputs.push(f.str("NodeProto.input")?),
                2 => n.outputs.push(f.str("NodeProto.output")?),
                3 => n.name = f.str("NodeProto.name")?,
                4 => n.op_type = f.str("NodeProto.op_type")?,
                5 => n
                    .attributes
                    .push(AttributeProto::parse(f.msg("NodeProto.attribute")?)?),
                7 => n.domain = f.str("NodeProto.domain")?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(n)
    }
}

impl<'a> AttributeProto<'a> {
    fn parse(msg: Msg<'a>) -> Result<AttributeProto<'a>, DecodeError> {
        let mut a = AttributeProto::default();
        let mut code = 0;
        // Which value field appeared, for attributes written without `type`.
        let mut seen = AttrKind::Undefined;
        each(msg, |f| {
            match f.number {
                1 => a.name = f.str("AttributeProto.name")?,
                21 => a.ref_attr_name = f.str("AttributeProto.ref_attr_name")?,
                20 => code = f.int("AttributeProto.type")?,
                2 => (a.f, seen) = (f.float("AttributeProto.f")?, AttrKind::Float),
                3 => (a.i, seen) = (f.int("AttributeProto.i")?, AttrKind::Int),
                4 => (a.s, seen) = (f.msg("AttributeProto.s")?.bytes, AttrKind::String),
                5 => {
                    once(&mut a.t, &f, "AttributeProto.t")?;
                    seen = AttrKind::Tensor;
                }
                7 => {
                    let mut bits = Vec::new();
                    f.fixed32s_into("AttributeProto.floats", &mut bits)?;
                    a.floats.extend(bits.into_iter().map(f32::from_bits));
                    seen = AttrKind::Floats;
                }
                8 => {
                    f.ints_into("AttributeProto.ints", &mut a.ints)?;
                    seen = AttrKind::Ints;
                }
                9 => {
                    a.strings.push(f.msg("AttributeProto.strings")?.bytes);
                    seen = AttrKind::Strings;
                }
                6 => seen = AttrKind::Other(5),
                10 => seen = AttrKind::Other(9),
                11 => seen = AttrKind::Other(10),
                14 | 15 => seen = AttrKind::Other(13),
                22 | 23 => seen = AttrKind::Other(11),
                _ => {}
            }
            Ok(())
        })?;
        a.kind = if code == 0 {
            seen
        } else {
            AttrKind::from_code(code)
        };
        Ok(a)
    }
}

impl<'a> ValueInfoProto<'a> {
    /// Parses a `ValueInfoProto` with its type.
    pub(crate) fn parse(msg: Msg<'a>) -> Result<ValueInfoProto<'a>, DecodeError> {
        let mut v = ValueInfoProto::default();
        let mut ty = None;
        each(msg, |f| {
            match f.number {
                1 => v.name = f.str("ValueInfoProto.name")?,
                2 => once(&mut ty, &f, "ValueInfoProto.type")?,
                _ => {}
            }
            Ok(())
        })?;
        v.ty = ty.map(TypeProto::parse).transpose()?;
        Ok(v)
    }
}

impl<'a> TypeProto<'a> {
    fn parse(msg: Msg<'a>) -> Result<TypeProto<'a>, DecodeError> {
        let mut tensor = None;
        let mut other = None;
        each(msg, |f| {
            match f.number {
                1 => once(&mut tensor, &f, "TypeProto.tensor_type")?,
                4 => other = Some("sequence"),
                5 => other = Some("map"),
                9 => other = Some("optional"),
                8 => other = Some("sparse tensor"),
                _ => {}
            }
            Ok(())
        })?;
        let Some(tensor) = tensor else {
            return Ok(TypeProto::Other(other.unwrap_or("unknown")));
        };
        let mut elem_type = 0;
        let mut shape = None;
        each(tensor, |f| {
            match f.number {
                1 => elem_type = f.int32("TypeProto.Tensor.elem_type")?,
                2 => once(&mut shape, &f, "TypeProto.Tensor.shape")?,
                _ => {}
            }
            Ok(())
        })?;
        let shape = match shape {
            None => None,
            Some(shape) => {
                let mut dims = Vec::new();
                each(shape, |f| {
                    if f.number == 1 {
                        dims.push(DimProto::parse(f.msg("TensorShapeProto.dim")?)?);
                    }
                    Ok(())
                })?;
                Some(dims)
            }
        };
        Ok(TypeProto::Tensor { elem_type, shape })
    }
}

impl<'a> DimProto<'a> {
    fn parse(msg: Msg<'a>) -> Result<DimProto<'a>, DecodeError> {
        let mut d = DimProto::Unknown;
        each(msg, |f| {
            match f.number {
                1 => d = DimProto::Value(f.int("Dimension.dim_value")?),
                2 => d = DimProto::Param(f.str("Dimension.dim_param")?),
                _ => {}
            }
            Ok(())
        })?;
        Ok(d)
    }
}

impl<'a> TensorProto<'a> {
    /// Parses a `TensorProto`; its data stays in the input (`raw_data`) or is collected from
    /// the typed fields, whose size is bounded by the bytes they occupy.
    pub(crate) fn parse(msg: Msg<'a>) -> Result<TensorProto<'a>, DecodeError> {
        let mut t = TensorProto::default();
        each(msg, |f| {
            match f.number {
                1 => f.ints_into("TensorProto.dims", &mut t.dims)?,
                2 => t.data_type = f.int32("TensorProto.data_type")?,
                3 => t.segment = true,
                4 => f.fixed32s_into("TensorProto.float_data", &mut t.float_data)?,
                5 => f.ints_into("TensorProto.int32_data", &mut t.int32_data)?,
                6 => t.string_data += 1,
                7 => f.ints_into("TensorProto.int64_data", &mut t.int64_data)?,
                8 => t.name = f.str("TensorProto.name")?,
                9 => t.raw_data = Some(f.msg("TensorProto.raw_data")?),
                10 => f.fixed64s_into("TensorProto.double_data", &mut t.double_data)?,
                11 => f.ints_into("TensorProto.uint64_data", &mut t.uint64_data)?,
                13 => t.external_data.push(string_pair(
                    f.msg("TensorProto.external_data")?,
                    "external_data",
                )?),
                14 => t.data_location = f.int("TensorProto.data_location")?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Minimal protobuf writer for tests.
    fn key(number: u32, wire: u8) -> Vec<u8> {
        varint(u64::from(number) << 3 | u64::from(wire))
    }

    fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    fn len(number: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = key(number, 2);
        out.extend(varint(payload.len() as u64));
        out.extend(payload);
        out
    }

    #[test]
    fn a_node_with_attributes_parses() {
        let mut attr = len(1, b"axis");
        attr.extend(key(20, 0));
        attr.extend(varint(2));
        attr.extend(key(3, 0));
        attr.extend(varint(-1i64 as u64));
        let mut untyped = len(1, b"perm");
        untyped.extend(len(8, &[1, 0]));
        let mut node = len(1, b"x");
        node.extend(len(1, b""));
        node.extend(len(2, b"y"));
        node.extend(len(4, b"Softmax"));
        node.extend(len(5, &attr));
        node.extend(len(5, &untyped));
        let n = NodeProto::parse(Msg::new(&node)).unwrap();
        assert_eq!(n.inputs, vec!["x", ""]);
        assert_eq!(n.outputs, vec!["y"]);
        assert_eq!(n.op_type, "Softmax");
        assert_eq!(n.attributes[0].kind, AttrKind::Int);
        assert_eq!(n.attributes[0].i, -1);
        assert_eq!(n.attributes[1].kind, AttrKind::Ints);
        assert_eq!(n.attributes[1].ints, vec![1, 0]);
    }

    #[test]
    fn types_shapes_and_tensors_parse() {
        let mut dim0 = len(2, b"batch");
        dim0 = len(1, &dim0);
        let mut dim1 = key(1, 0);
        dim1.extend(varint(4));
        dim1 = len(1, &dim1);
        let shape = [dim0, dim1].concat();
        let mut tensor_type = key(1, 0);
        tensor_type.extend(varint(1));
        tensor_type.extend(len(2, &shape));
        let ty = len(1, &tensor_type);
        let mut vi = len(1, b"x");
        vi.extend(len(2, &ty));
        let v = ValueInfoProto::parse(Msg::new(&vi)).unwrap();
        let Some(TypeProto::Tensor { elem_type, shape }) = v.ty else {
            panic!("not a tensor type");
        };
        assert_eq!(elem_type, 1);
        assert_eq!(
            shape.unwrap(),
            vec![DimProto::Param("batch"), DimProto::Value(4)]
        );

        let mut t = len(1, &[2, 3]);
        t.extend(key(2, 0));
        t.extend(varint(1));
        t.extend(len(9, &[0; 24]));
        t.extend(len(8, b"w"));
        let tp = TensorProto::parse(Msg::new(&t)).unwrap();
        assert_eq!(tp.dims, vec![2, 3]);
        assert_eq!(tp.raw_data.unwrap().bytes.len(), 24);
        assert_eq!(tp.name, "w");

        let twice = [len(2, &ty), len(2, &ty)].concat();
        let e = ValueInfoProto::parse(Msg::new(&twice)).unwrap_err();
        assert!(e.message.contains("appears twice"), "{e}");
    }
}
