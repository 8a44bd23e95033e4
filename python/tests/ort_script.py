"""A small script written for ONNX Runtime's Python API, used unchanged but for its import line
by test_ort_compat.py (`import onnxruntime as ort` -> `import tierjit as ort`).

Usage: python ort_script.py MODEL.onnx REF_DIR   (REF_DIR holds input_x.npy and output_0.npy)
Prints the provider, the mean time of one run (ms) and the largest difference to the reference.
"""
import sys
import time

import numpy as np
import onnxruntime as ort


def main(model_path, ref_dir):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model_path, sess_options=so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    out_names = [o.name for o in sess.get_outputs()]
    print("input", inp.name, inp.shape, inp.type, "outputs", out_names)
    x = np.load(f"{ref_dir}/input_x.npy")
    expected = np.load(f"{ref_dir}/output_0.npy")
    sess.run(out_names, {inp.name: x})  # warm-up
    runs = 20
    start = time.perf_counter()
    for _ in range(runs):
        outputs = sess.run(out_names, {inp.name: x})
    ms = (time.perf_counter() - start) * 1000 / runs
    diff = float(np.max(np.abs(outputs[0] - expected)))
    try:
        sess.run(None, {inp.name: x.astype(np.float64)})
        print("error: a float64 feed was accepted")
        return 1
    except Exception as e:  # ONNX Runtime raises InvalidArgument here
        print("wrong dtype rejected:", type(e).__name__)
    print(f"provider {sess.get_providers()[0]} device {ort.get_device()} run {ms:.3f} ms max_abs_diff {diff:.3g}")
    return 0 if diff < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
