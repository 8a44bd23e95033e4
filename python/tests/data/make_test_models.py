"""Writes the small ONNX models of the Python tests (python/tests/data/*.onnx).

Needs the `onnx` package (not needed to run the tests: the .onnx files are committed).
  python python/tests/data/make_test_models.py
identity_all.onnx: one Identity per tierjit dtype, input in_<dtype> [N, 2] -> output out_<dtype>,
  N symbolic; plus input `u` with an unnamed unknown dim -> Neg -> `neg_u`.
multi_out.onnx: a[N, 3] float -> sum = a + a, neg = -a, sq = a * a (three outputs, model order
  sum, neg, sq).
shared_out.onnx: x[N, 4] float -> same = Identity(x), w = Identity(initializer w [4] = 1..4),
  y = x + w, y2 = Identity(y) and y_row = Slice(Relu(y), rows 0:1) (outputs that share storage
  with a feed, a model constant, each other, or are a slice of a larger buffer: the zero-copy
  output rule's cases).
"""
import os

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "int8": TensorProto.INT8, "int16": TensorProto.INT16, "int32": TensorProto.INT32,
    "int64": TensorProto.INT64, "uint8": TensorProto.UINT8, "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64, "bool": TensorProto.BOOL,
    "string": TensorProto.STRING,
}


def save(graph, name):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="tierjit-python-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


def identity_all():
    inputs, outputs, nodes = [], [], []
    for name, code in DTYPES.items():
        inputs.append(helper.make_tensor_value_info(f"in_{name}", code, ["N", 2]))
        outputs.append(helper.make_tensor_value_info(f"out_{name}", code, ["N", 2]))
        nodes.append(helper.make_node("Identity", [f"in_{name}"], [f"out_{name}"]))
    u = helper.make_tensor_value_info("u", TensorProto.FLOAT, [None])
    inputs.append(u)
    outputs.append(helper.make_tensor_value_info("neg_u", TensorProto.FLOAT, [None]))
    nodes.append(helper.make_node("Neg", ["u"], ["neg_u"]))
    save(helper.make_graph(nodes, "identity_all", inputs, outputs), "identity_all.onnx")


def multi_out():
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 3]) for n in ("sum", "neg", "sq")]
    nodes = [helper.make_node("Add", ["a", "a"], ["sum"]), helper.make_node("Neg", ["a"], ["neg"]),
             helper.make_node("Mul", ["a", "a"], ["sq"])]
    save(helper.make_graph(nodes, "multi_out", [a], outs), "multi_out.onnx")


def shared_out():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    outs = [helper.make_tensor_value_info("same", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("w_out", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("y2", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("y_row", TensorProto.FLOAT, [1, 4])]
    w = helper.make_tensor("w", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
    ints = [helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in (("zero", 0), ("one", 1))]
    nodes = [helper.make_node("Identity", ["x"], ["same"]), helper.make_node("Identity", ["w"], ["w_out"]),
             helper.make_node("Add", ["x", "w"], ["y"]), helper.make_node("Identity", ["y"], ["y2"]),
             helper.make_node("Relu", ["y"], ["r"]),
             helper.make_node("Slice", ["r", "zero", "one", "zero"], ["y_row"])]
    save(helper.make_graph(nodes, "shared_out", [x], outs, [w] + ints), "shared_out.onnx")


if __name__ == "__main__":
    identity_all()
    multi_out()
    shared_out()
