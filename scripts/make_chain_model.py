#!/usr/bin/python3
"""Make models/demo_chain.onnx: one elementwise chain with a dynamic batch,
y = Mul(Sigmoid(Tanh(Add(Mul(x, x), bias))), x), x and y float32 [N, 1024], bias a float32 [1024]
initializer (i % 97 / 1000), opset 17. The demo MLP's Gemm regions stay on tier 0's oneDNN under
the adaptive policy (generic and exact GEMM code are predicted no faster); this chain is what
compiles (about 1 ms per call at tier 0 for N = 256): `tierjit explain` tests use it.

Run with Debian's interpreter (python3-onnx):  /usr/bin/python3 scripts/make_chain_model.py
"""
import os

import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

bias = helper.make_tensor("bias", TensorProto.FLOAT, [1024], [0.001 * (i % 97) for i in range(1024)])
graph = helper.make_graph(
    [helper.make_node("Mul", ["x", "x"], ["a"], name="square"),
     helper.make_node("Add", ["a", "bias"], ["b"], name="add_bias"),
     helper.make_node("Tanh", ["b"], ["c"], name="tanh"),
     helper.make_node("Sigmoid", ["c"], ["d"], name="sigmoid"),
     helper.make_node("Mul", ["d", "x"], ["y"], name="gate")],
    "demo_chain",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1024])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1024])],
    initializer=[bias])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="tierjit scripts/make_chain_model.py")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(ROOT, "models", "demo_chain.onnx"))
