#!/usr/bin/env python3
"""Builds the ONNX example models and their reference data (checked in beside this script).

    python3 -m venv .venv-onnx && .venv-onnx/bin/pip install onnx==1.19.0 onnxruntime numpy
    .venv-onnx/bin/python examples/onnx/make_models.py          # rewrite models and data
    .venv-onnx/bin/python examples/onnx/make_models.py --bench  # time them in onnxruntime

Models (weights from a fixed seed, so reruns give the same bytes):
- mlp.onnx: an MLP classifier, 256 -> 256 -> 256 -> 10 with ReLU and a softmax, batch dim
  symbolic (`batch`), as exporters write it. Data: mlp_x.npy (batch 8), mlp_probs.npy.
- encoder.onnx: a small transformer encoder layer as torch exports it: token embedding Gather
  plus positions, 4-head self-attention (Q/K/V MatMul, Reshape/Transpose with shapes computed
  by Shape/Gather/Concat, scaled QK^T, Softmax, output projection), residual + LayerNorm, an
  erf-GELU MLP, residual + LayerNorm. Sequence length symbolic (`seq`). Data: encoder_ids.npy
  (1 x 16 int64), encoder_out.npy.
- Malformed models for the CLI's error tests: unknown_op.onnx, cyclic.onnx,
  bad_initializer.onnx, external_missing.onnx (external data file absent), and
  external_ok.onnx + external_ok.bin.

Expected outputs come from ONNX Runtime (1 thread), so tests need no Python.
"""

import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = [helper.make_opsetid("", 18)]


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def mlp(rng):
    sizes = [256, 256, 256, 10]
    nodes, inits = [], []
    x = "x"
    for i in range(3):
        w = (rng.standard_normal((sizes[i], sizes[i + 1])) / np.sqrt(sizes[i])).astype(np.float32)
        b = (rng.standard_normal(sizes[i + 1]) * 0.1).astype(np.float32)
        inits += [init(f"fc{i}.weight", w.T.copy()), init(f"fc{i}.bias", b)]
        out = f"h{i}"
        nodes.append(helper.make_node("Gemm", [x, f"fc{i}.weight", f"fc{i}.bias"], [out], transB=1))
        x = out
        if i < 2:
            nodes.append(helper.make_node("Relu", [x], [f"r{i}"]))
            x = f"r{i}"
    nodes.append(helper.make_node("Softmax", [x], ["probs"], axis=-1))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10])],
        inits,
    )
    return helper.make_model(graph, opset_imports=OPSET, producer_name="accy-examples")


def encoder(rng):
    vocab, d, heads, ff, max_len = 100, 64, 4, 128, 32
    hd = d // heads
    nodes, inits = [], []

    def w(name, shape, scale, offset=0.0):
        inits.append(init(name, (rng.standard_normal(shape) * scale + offset).astype(np.float32)))
        return name

    def c(name, value):
        inits.append(init(name, np.asarray(value)))
        return name

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    tok = node("Gather", [w("tok_emb", (vocab, d), 0.5), "ids"], "tok")
    # Positions 0..seq-1 from the runtime shape, as exporters compute them.
    shape = node("Shape", ["ids"], "ids_shape")
    seq = node("Gather", [shape, c("one_i", np.array(1, np.int64))], "seq")
    pos_ids = node("Range", [c("zero_i", np.array(0, np.int64)), seq, c("step_i", np.array(1, np.int64))], "pos_ids")
    pos = node("Gather", [w("pos_emb", (max_len, d), 0.5), pos_ids], "pos")
    h = node("Add", [tok, pos], "emb")

    # Shapes for the head split, computed from the activations.
    batch = node("Gather", [shape, c("zero_idx", np.array(0, np.int64))], "batch")
    b1 = node("Unsqueeze", [batch, c("axes0", np.array([0], np.int64))], "b1")
    s1 = node("Unsqueeze", [seq, c("axes0b", np.array([0], np.int64))], "s1")
    split_shape = node("Concat", [b1, s1, c("heads_hd", np.array([heads, hd], np.int64))], "split_shape", axis=0)
    merge_shape = node("Concat", [b1, s1, c("d_model", np.array([d], np.int64))], "merge_shape", axis=0)

    def proj(x, name, n_in, n_out):
        y = node("MatMul", [x, w(f"{name}.weight", (n_in, n_out), 1 / np.sqrt(n_in))], f"{name}.mm")
        return node("Add", [y, w(f"{name}.bias", (n_out,), 0.1)], f"{name}.out")

    def heads_first(x, name):
        r = node("Reshape", [x, split_shape], f"{name}.split")
        return node("Transpose", [r], f"{name}.heads", perm=[0, 2, 1, 3])

    q = heads_first(proj(h, "q", d, d), "q")
    k = heads_first(proj(h, "k", d, d), "k")
    v = heads_first(proj(h, "v", d, d), "v")
    kt = node("Transpose", [k], "kt", perm=[0, 1, 3, 2])
    scores = node("MatMul", [q, kt], "scores")
    scaled = node("Div", [scores, c("sqrt_hd", np.array(np.sqrt(hd), np.float32))], "scaled")
    probs = node("Softmax", [scaled], "attn", axis=-1)
    ctx = node("MatMul", [probs, v], "ctx")
    ctx = node("Transpose", [ctx], "ctx_t", perm=[0, 2, 1, 3])
    ctx = node("Reshape", [ctx, merge_shape], "ctx_m")
    att = proj(ctx, "o", d, d)
    h = node("Add", [h, att], "res1")
    h = node("LayerNormalization", [h, w("ln1.weight", (d,), 0.1, 1.0), w("ln1.bias", (d,), 0.1)], "ln1", axis=-1, epsilon=1e-5)
    # erf GELU, as torch.nn.GELU() exports.
    f = proj(h, "ff1", d, ff)
    g = node("Div", [f, c("sqrt2", np.array(np.sqrt(2.0), np.float32))], "g_div")
    g = node("Erf", [g], "g_erf")
    g = node("Add", [g, c("one_f", np.array(1.0, np.float32))], "g_add")
    g = node("Mul", [f, g], "g_mul")
    g = node("Mul", [g, c("half_f", np.array(0.5, np.float32))], "gelu")
    f = proj(g, "ff2", ff, d)
    h = node("Add", [h, f], "res2")
    node("LayerNormalization", [h, w("ln2.weight", (d,), 0.1, 1.0), w("ln2.bias", (d,), 0.1)], "hidden", axis=-1, epsilon=1e-5)
    graph = helper.make_graph(
        nodes,
        "encoder",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "seq"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, "seq", d])],
        inits,
    )
    return helper.make_model(graph, opset_imports=OPSET, producer_name="accy-examples")


def malformed():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    # An op no importer knows.
    g = helper.make_graph([helper.make_node("FancyOp", ["x"], ["y"], name="fancy")], "unknown", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=OPSET), os.path.join(HERE, "unknown_op.onnx"))
    # A cycle: a reads b, b reads a.
    g = helper.make_graph(
        [helper.make_node("Add", ["x", "b"], ["a"], name="first"), helper.make_node("Relu", ["a"], ["b"], name="second"),
         helper.make_node("Identity", ["b"], ["y"])],
        "cyclic", [x], [y])
    onnx.save(helper.make_model(g, opset_imports=OPSET), os.path.join(HERE, "cyclic.onnx"))
    # An initializer whose data disagrees with its dims (3 floats for dims [4]).
    bad = helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0])
    bad.ClearField("float_data")
    bad.raw_data = np.array([1, 2, 3], np.float32).tobytes()
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "bad_init",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [bad])
    onnx.save(helper.make_model(g, opset_imports=OPSET), os.path.join(HERE, "bad_initializer.onnx"))
    # External data: present and missing.
    for name, write_data in (("external_ok", True), ("external_missing", False)):
        w = numpy_helper.from_array(np.arange(32, dtype=np.float32), "w")
        w.data_location = TensorProto.EXTERNAL
        w.ClearField("raw_data")
        for k, v in (("location", f"{name}.bin"), ("offset", "0"), ("length", "128")):
            e = w.external_data.add()
            e.key, e.value = k, v
        if write_data:
            np.arange(32, dtype=np.float32).tofile(os.path.join(HERE, f"{name}.bin"))
        g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32])], [w])
        with open(os.path.join(HERE, f"{name}.onnx"), "wb") as f:
            f.write(helper.make_model(g, opset_imports=OPSET).SerializeToString())


def session(path):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])


def bench(path, feeds, seconds=3.0):
    sess = session(path)
    for _ in range(10):
        sess.run(None, feeds)
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append(time.perf_counter() - t)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] * 1e6
    print(f"{os.path.basename(path)}: onnxruntime {sess.get_providers()[0]}, 1 thread, "
          f"{len(times)} runs: min {pick(0):.1f} us, p50 {pick(0.5):.1f} us, p90 {pick(0.9):.1f} us")


def main():
    rng = np.random.default_rng(20240607)
    mlp_path, enc_path = os.path.join(HERE, "mlp.onnx"), os.path.join(HERE, "encoder.onnx")
    if "--bench" in sys.argv:
        x = np.load(os.path.join(HERE, "mlp_x.npy"))
        bench(mlp_path, {"x": x})
        ids = np.load(os.path.join(HERE, "encoder_ids.npy"))
        bench(enc_path, {"ids": ids})
        return
    save(mlp(rng), "mlp.onnx")
    save(encoder(rng), "encoder.onnx")
    malformed()
    x = rng.uniform(-1, 1, (8, 256)).astype(np.float32)
    ids = rng.integers(0, 100, (1, 16)).astype(np.int64)
    np.save(os.path.join(HERE, "mlp_x.npy"), x)
    np.save(os.path.join(HERE, "encoder_ids.npy"), ids)
    np.save(os.path.join(HERE, "mlp_probs.npy"), session(mlp_path).run(None, {"x": x})[0])
    np.save(os.path.join(HERE, "encoder_out.npy"), session(enc_path).run(None, {"ids": ids})[0])
    print("wrote", ", ".join(sorted(f for f in os.listdir(HERE) if not f.endswith(".py"))))


if __name__ == "__main__":
    main()
