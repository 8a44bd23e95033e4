#!/usr/bin/python3
"""Make models/add16.onnx: C = Add(A, B) with A, B, C float32 [16] (opset 17), the model of the
per-call overhead benchmark (bench/micro/session_bench.cc: an Add of two float32 [16] tensors
should cost at most 2 µs per call through the C++ API).

Run with Debian's interpreter (python3-onnx):  /usr/bin/python3 scripts/make_add_model.py
"""
import os

import onnx
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

graph = helper.make_graph(
    [helper.make_node("Add", ["A", "B"], ["C"], name="add")], "add16",
    [helper.make_tensor_value_info("A", TensorProto.FLOAT, [16]),
     helper.make_tensor_value_info("B", TensorProto.FLOAT, [16])],
    [helper.make_tensor_value_info("C", TensorProto.FLOAT, [16])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="tierjit scripts/make_add_model.py")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(ROOT, "models", "add16.onnx"))
