//! The importer on models built here (no Python needed): shape folding, `--shape`-style
//! fixing of symbolic dims, constants for inputs a node needs, refusals naming what is
//! missing, declared output types, and results checked with the reference interpreter.

use accy_ir::{interp, Op, Tensor, TensorData};
use accy_onnx::{import, ErrorKind, ImportOptions};

/// A minimal protobuf writer for ONNX messages.
#[derive(Default)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(b);
                return;
            }
            self.0.push(b | 0x80);
        }
    }
    fn int(mut self, field: u32, v: i64) -> Pb {
        self.varint(u64::from(field) << 3);
        self.varint(v as u64);
        self
    }
    fn bytes(mut self, field: u32, b: &[u8]) -> Pb {
        self.varint(u64::from(field) << 3 | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, field: u32, s: &str) -> Pb {
        self.bytes(field, s.as_bytes())
    }
    fn msg(self, field: u32, m: Pb) -> Pb {
        self.bytes(field, &m.0)
    }
}

/// `TypeProto` of a tensor; `None` dims are symbolic (`dim_param` "n").
fn tensor_type(elem: i64, dims: &[Option<i64>]) -> Pb {
    let mut shape = Pb::default();
    for d in dims {
        shape = shape.msg(
            1,
            match d {
                Some(v) => Pb::default().int(1, *v),
                None => Pb::default().str(2, "n"),
            },
        );
    }
    Pb::default().msg(1, Pb::default().int(1, elem).msg(2, shape))
}

fn value_info(name: &str, elem: i64, dims: &[Option<i64>]) -> Pb {
    Pb::default().str(1, name).msg(2, tensor_type(elem, dims))
}

fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: Vec<Pb>) -> Pb {
    let mut n = Pb::default();
    for i in inputs {
        n = n.str(1, i);
    }
    for o in outputs {
        n = n.str(2, o);
    }
    n = n.str(4, op);
    for a in attrs {
        n = n.msg(5, a);
    }
    n
}

fn attr_int(name: &str, v: i64) -> Pb {
    Pb::default().str(1, name).int(20, 2).int(3, v)
}

fn int64_initializer(name: &str, values: &[i64]) -> Pb {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Pb::default()
        .int(1, values.len() as i64)
        .int(2, 7)
        .str(8, name)
        .bytes(9, &raw)
}

fn model(opset: i64, nodes: Vec<Pb>, inputs: Vec<Pb>, outputs: Vec<Pb>, inits: Vec<Pb>) -> Vec<u8> {
    let mut g = Pb::default();
    for n in nodes {
        g = g.msg(1, n);
    }
    for i in inits {
        g = g.msg(5, i);
    }
    for i in inputs {
        g = g.msg(11, i);
    }
    for o in outputs {
        g = g.msg(12, o);
    }
    Pb::default()
        .int(1, 8)
        .msg(8, Pb::default().int(2, opset))
        .msg(7, g)
        .0
}

const F32: i64 = 1;
const I64: i64 = 7;

/// x[2, n] reshaped to [n, 2] through a shape computed from `Shape(x)`.
fn reshape_model() -> Vec<u8> {
    model(
        18,
        vec![
            node("Shape", &["x"], &["s"], vec![]),
            node("Gather", &["s", "one"], &["n"], vec![]),
            node("Unsqueeze", &["n", "zero_axis"], &["n1"], vec![]),
            node(
                "Concat",
                &["n1", "two"],
                &["target"],
                vec![attr_int("axis", 0)],
            ),
            node("Reshape", &["x", "target"], &["y"], vec![]),
        ],
        vec![value_info("x", F32, &[Some(2), None])],
        vec![value_info("y", F32, &[None, Some(2)])],
        vec![
            Pb::default()
                .int(2, 7)
                .str(8, "one")
                .bytes(9, &1i64.to_le_bytes()),
            int64_initializer("zero_axis", &[0]),
            int64_initializer("two", &[2]),
        ],
    )
}

fn options(shapes: &[(&str, &[u64])]) -> ImportOptions {
    let mut o = ImportOptions::default();
    for (name, dims) in shapes {
        o.shapes.insert((*name).to_owned(), dims.to_vec());
    }
    o
}

#[test]
fn shape_computations_fold_away() {
    let m = import(&reshape_model(), &options(&[("x", &[2, 3])])).unwrap();
    // Only the reshape reaches the program: Shape, Gather, Unsqueeze and Concat folded.
    assert_eq!(m.program.instructions.len(), 1, "{:?}", m.program);
    assert!(matches!(m.program.instructions[0].op, Op::Reshape { .. }));
    let x = Tensor::f32s(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let y = interp::eval(&m.program, &[x]).unwrap();
    assert_eq!(y[0].dims(), &[3, 2]);
    assert_eq!(m.outputs, vec!["y".to_owned()]);
}

#[test]
fn symbolic_dims_must_be_fixed_consistently() {
    let e = import(&reshape_model(), &ImportOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Shape);
    assert!(
        e.message
            .contains("input `x` has symbolic dim `n` at axis 1"),
        "{e}"
    );
    let e = import(&reshape_model(), &options(&[("x", &[3, 3])])).unwrap_err();
    assert!(e.message.contains("dim 2 at axis 0, not 3"), "{e}");
    let e = import(&reshape_model(), &options(&[("x", &[2])])).unwrap_err();
    assert!(
        e.message.contains("rank 2 but the shape given has 1"),
        "{e}"
    );
    let e = import(&reshape_model(), &options(&[("z", &[2, 3])])).unwrap_err();
    assert!(e.message.contains("no input `z` (its inputs: x)"), "{e}");
}

#[test]
fn values_a_node_needs_must_be_known() {
    let bytes = model(
        18,
        vec![node("Reshape", &["x", "shape"], &["y"], vec![])],
        vec![
            value_info("x", F32, &[Some(6)]),
            value_info("shape", I64, &[Some(2)]),
        ],
        vec![value_info("y", F32, &[Some(2), Some(3)])],
        vec![],
    );
    let e = import(&bytes, &ImportOptions::default()).unwrap_err();
    assert_eq!(
        e.kind,
        ErrorKind::NeedsConstant {
            value: "shape".into()
        }
    );
    assert!(
        e.message
            .contains("node #0 (Reshape, output `y`): `shape` (input 1)"),
        "{e}"
    );
    let mut o = ImportOptions::default();
    o.constants
        .insert("shape".into(), Tensor::i64s(&[2], vec![2, 3]));
    let m = import(&bytes, &o).unwrap();
    assert_eq!(m.program.inputs().count(), 1);
    assert_eq!(m.inputs[1].param, None);
}

#[test]
fn refusals_name_the_node_and_what_is_missing() {
    let f16 = model(
        18,
        vec![node("Relu", &["x"], &["y"], vec![])],
        vec![value_info("x", 10, &[Some(2)])],
        vec![value_info("y", 10, &[Some(2)])],
        vec![],
    );
    let e = import(&f16, &ImportOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("input `x`: element type float16"), "{e}");

    let softmax = |opset, attrs| {
        model(
            opset,
            vec![node("Softmax", &["x"], &["y"], attrs)],
            vec![value_info("x", F32, &[Some(2)])],
            vec![value_info("y", F32, &[Some(2)])],
            vec![],
        )
    };
    let e = import(&softmax(12, vec![]), &ImportOptions::default()).unwrap_err();
    assert!(
        e.message.contains("opset 12; accy imports opsets 13 to 24"),
        "{e}"
    );
    let e = import(&softmax(25, vec![]), &ImportOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    let e = import(
        &softmax(18, vec![attr_int("bogus", 1)]),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(
        e.message
            .contains("node #0 (Softmax, output `y`): attribute `bogus` is not supported"),
        "{e}"
    );
    let e = import(
        &softmax(18, vec![attr_int("axis", 3)]),
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("axis 3 is out of range for rank 1"),
        "{e}"
    );

    // A Slice with more starts than its input has axes, and no axes input (found by the
    // `onnx` fuzz target: it indexed past the input's dims).
    let slice = model(
        18,
        vec![node("Slice", &["x", "s", "e"], &["y"], vec![])],
        vec![value_info("x", F32, &[Some(2)])],
        vec![value_info("y", F32, &[Some(1)])],
        vec![
            int64_initializer("s", &[0, 0]),
            int64_initializer("e", &[1, 1]),
        ],
    );
    let e = import(&slice, &ImportOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message
            .contains("2 starts without axes for an input of rank 1"),
        "{e}"
    );
}

#[test]
fn declared_output_types_are_checked() {
    let bytes = model(
        18,
        vec![node("Relu", &["x"], &["y"], vec![])],
        vec![value_info("x", F32, &[Some(2)])],
        vec![value_info("y", F32, &[Some(3)])],
        vec![],
    );
    let e = import(&bytes, &ImportOptions::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Invalid);
    assert!(
        e.message.contains("output `y`: the model declares shape"),
        "{e}"
    );
}

#[test]
fn imported_ops_compute_what_onnx_defines() {
    // y = Softmax(Gemm(x, w, b; transB=1)), checked against values computed here in f64.
    let w: Vec<f32> = vec![1.0, -1.0, 0.5, 2.0, 0.0, 1.0];
    let raw: Vec<u8> = w.iter().flat_map(|v| v.to_le_bytes()).collect();
    let w_init = Pb::default()
        .int(1, 2)
        .int(1, 3)
        .int(2, F32)
        .str(8, "w")
        .bytes(9, &raw);
    let b_init = Pb::default()
        .int(1, 2)
        .int(2, F32)
        .str(8, "b")
        .bytes(9, &[0.5f32.to_le_bytes(), (-0.5f32).to_le_bytes()].concat());
    let bytes = model(
        18,
        vec![
            node(
                "Gemm",
                &["x", "w", "b"],
                &["g"],
                vec![attr_int("transB", 1)],
            ),
            node("Softmax", &["g"], &["y"], vec![]),
        ],
        vec![value_info("x", F32, &[Some(1), Some(3)])],
        vec![value_info("y", F32, &[Some(1), Some(2)])],
        vec![w_init, b_init],
    );
    let m = import(&bytes, &ImportOptions::default()).unwrap();
    let x = [0.25f32, -1.0, 3.0];
    let g: Vec<f64> = (0..2)
        .map(|j| {
            (0..3)
                .map(|k| f64::from(x[k]) * f64::from(w[j * 3 + k]))
                .sum::<f64>()
                + [0.5, -0.5][j]
        })
        .collect();
    let e: Vec<f64> = g.iter().map(|v| v.exp()).collect();
    let want: Vec<f64> = e.iter().map(|v| v / (e[0] + e[1])).collect();
    // Weights are inlined (6 elements ≤ the inline limit): the program has no parameters
    // but x.
    assert_eq!(m.program.params.len(), 1);
    let y = interp::eval(&m.program, &[Tensor::f32s(&[1, 3], x.to_vec())]).unwrap();
    let TensorData::F32(got) = y[0].data() else {
        panic!("dtype")
    };
    for (g, w) in got.iter().zip(&want) {
        assert!((f64::from(*g) - w).abs() < 1e-6, "{got:?} vs {want:?}");
    }
}
