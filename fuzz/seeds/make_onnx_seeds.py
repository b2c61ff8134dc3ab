#!/usr/bin/env python3
"""Writes small static-shape ONNX models into fuzz/seeds/onnx/ as seeds for the `onnx` fuzz
target (`cargo xtask fuzz onnx`): each imports successfully, so mutations of them reach deep
into the importer. Needs the `onnx` package (see examples/onnx/make_models.py).

    .venv-onnx/bin/python fuzz/seeds/make_onnx_seeds.py
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onnx")
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(name, nodes, inputs, outputs, inits=(), opset=18):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, f"{name}.onnx"))


def vi(name, t, dims):
    return helper.make_tensor_value_info(name, t, dims)


def c(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def main():
    os.makedirs(OUT, exist_ok=True)
    x = vi("x", F, [2, 3, 4])
    model("elementwise", [
        helper.make_node("Add", ["x", "b"], ["a"]),
        helper.make_node("Mul", ["a", "a"], ["m"]),
        helper.make_node("Sqrt", ["m"], ["s"]),
        helper.make_node("Where", ["cond", "s", "x"], ["y"]),
    ], [x, vi("cond", TensorProto.BOOL, [4])], [vi("y", F, [2, 3, 4])],
        [c("b", np.arange(4, dtype=np.float32))])
    model("shapes", [
        helper.make_node("Shape", ["x"], ["sh"]),
        helper.make_node("Gather", ["sh", "i0"], ["d0"]),
        helper.make_node("Unsqueeze", ["d0", "ax"], ["d0u"]),
        helper.make_node("Concat", ["d0u", "rest"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ], [x], [vi("y", F, [2, 12])], [c("i0", np.array(0)), c("ax", np.array([0])), c("rest", np.array([-1]))])
    model("softmax_norm", [
        helper.make_node("Softmax", ["x"], ["p"], axis=-1),
        helper.make_node("LayerNormalization", ["p", "g", "b"], ["y"], axis=-1),
    ], [x], [vi("y", F, [2, 3, 4])], [c("g", np.ones(4, np.float32)), c("b", np.zeros(4, np.float32))])
    model("matmul", [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Gemm", ["a", "w2", "bias"], ["g"], transB=1, alpha=0.5),
        helper.make_node("ReduceSum", ["m", "axes"], ["y"], keepdims=0),
    ], [x, vi("a", F, [3, 5])], [vi("y", F, [2, 3]), vi("g", F, [3, 2])],
        [c("w", np.ones((4, 5), np.float32)), c("w2", np.ones((2, 5), np.float32)),
         c("bias", np.ones(2, np.float32)), c("axes", np.array([2]))])
    model("slices", [
        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["s"]),
        helper.make_node("Pad", ["s", "pads"], ["p"], mode="reflect"),
        helper.make_node("Transpose", ["p"], ["y"], perm=[2, 0, 1]),
    ], [x], [vi("y", F, [4, 2, 2])], [c("st", np.array([-1])), c("en", np.array([-4])),
                                       c("ax", np.array([1])), c("sp", np.array([-2])),
                                       c("pads", np.array([0, 0, 0, 0, 0, 0]))])
    model("indices", [
        helper.make_node("Gather", ["t", "ids"], ["e"], axis=0),
        helper.make_node("GatherElements", ["e", "idx"], ["ge"], axis=1),
        helper.make_node("ArgMax", ["ge"], ["y"], axis=1, keepdims=0),
        helper.make_node("CumSum", ["e", "cax"], ["cs"]),
    ], [vi("ids", I64, [3]), vi("idx", I64, [3, 2])], [vi("y", I64, [3]), vi("cs", F, [3, 4])],
        [c("t", np.arange(20, dtype=np.float32).reshape(5, 4)), c("cax", np.array(1))])
    model("generate", [
        helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
        helper.make_node("ConstantOfShape", ["shape"], ["z"]),
        helper.make_node("Trilu", ["z"], ["t"], upper=0),
        helper.make_node("Add", ["t", "r"], ["y"]),
    ], [], [vi("y", F, [4, 4])], [c("r0", np.array(0, np.float32)), c("r1", np.array(4, np.float32)),
                                   c("r2", np.array(1, np.float32)), c("shape", np.array([4, 4]))])
    model("attention", [
        helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1),
    ], [vi("q", F, [1, 2, 3, 4]), vi("k", F, [1, 2, 3, 4]), vi("v", F, [1, 2, 3, 4])],
        [vi("y", F, [1, 2, 3, 4])], opset=23)
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
