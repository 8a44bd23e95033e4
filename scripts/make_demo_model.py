#!/usr/bin/python3
"""Make tierjit's demo model: models/demo_mlp.onnx, a small MLP 64 -> 128 -> 10 with ReLU.

Input `x` [N, 64] float32 with a dynamic batch dim N, output `logits` [N, 10] float32.
Exported with torch.onnx.export at opset 17 (Gemm, Relu). Also writes one reference pair
(batch 3) to models/demo_ref/ in the layout of the shared model zoo (meta.json + .npy), which
the models test uses to check tierjit without any external data.

Run with Debian's interpreter, which has torch 1.13 (apt-get install python3-torch python3-onnx):
    /usr/bin/python3 scripts/make_demo_model.py
Deterministic: the weights and the reference input come from fixed seeds.
"""
import json
import os
import sys

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "demo_mlp.onnx")
REF = os.path.join(ROOT, "models", "demo_ref")


class DemoMlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    torch.manual_seed(2024)
    model = DemoMlp().eval()
    example = torch.zeros(2, 64)
    os.makedirs(os.path.dirname(MODEL), exist_ok=True)
    torch.onnx.export(model, (example,), MODEL, opset_version=17,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "N"}, "logits": {0: "N"}})
    try:
        import onnx
        onnx.checker.check_model(onnx.load(MODEL))
    except ImportError:
        print("note: python3-onnx not installed; skipped onnx.checker", file=sys.stderr)

    rng = np.random.default_rng(7)
    x = rng.uniform(-1.0, 1.0, size=(3, 64)).astype(np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    os.makedirs(REF, exist_ok=True)
    np.save(os.path.join(REF, "input_x.npy"), x)
    np.save(os.path.join(REF, "output_0.npy"), y)
    meta = {
        "model": "demo_mlp.onnx",
        "inputs": {"x": {"dtype": "float32", "file": "input_x.npy", "shape": list(x.shape)}},
        "outputs": [{"name": "logits", "dtype": "float32", "file": "output_0.npy",
                     "shape": list(y.shape), "max_abs": float(np.abs(y).max())}],
    }
    with open(os.path.join(REF, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    print(f"wrote {os.path.relpath(MODEL, ROOT)} ({os.path.getsize(MODEL)} bytes) and "
          f"{os.path.relpath(REF, ROOT)}/")


if __name__ == "__main__":
    main()
