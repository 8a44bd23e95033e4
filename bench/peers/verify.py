"""Output checks for run_one.py --verify (run after the timed loop, so they never affect timing).

1. Against the reference pair <model dir>/ref/<model>/{meta.json, input_*.npy, output_*.npy} of the
   shared model zoo, when present: pass if |got - ref| <= 1e-4 + 1e-3 * |ref| elementwise (the
   tolerance ../shared/models/MODELS.md holds runtimes to).
2. For torchscript and torch-compile: against the eager onnx2torch module at every distinct
   request shape of the trace (same tolerance), since a trace or a compiled graph may have baked in
   the shape it first saw.
3. Against the ONNX backend-test data beside the model, when its folder has test_data_set_*/
   (input_K.pb fed to the K-th model input, output_K.pb the expected K-th output; e.g.
   ../shared/models-extra/*/): pass if |got - want| <= 1e-5 + 1e-3 * |want| elementwise, NaN
   matching NaN (references made by another runtime differ from any float32 run by summation
   order, ~1e-6 of the largest value).
A mismatch or an error is reported in the result, never raised.
"""
from __future__ import annotations

import json
import os
import re

from tensor_pb import read_tensor  # bench/peers/tensor_pb.py

ATOL, RTOL = 1e-4, 1e-3
TEST_DATA_ATOL, TEST_DATA_RTOL = 1e-5, 1e-3


def _as_numpy_list(np, out):
    if isinstance(out, dict):
        out = list(out.values())
    if not isinstance(out, (list, tuple)):
        out = [out]
    res = []
    for o in out:
        if hasattr(o, "detach"):
            o = o.detach().cpu().numpy()
        res.append(np.asarray(o))
    return res


def _worst(np, got, want):
    """Largest |got-want| - tolerance (<= 0 passes) and largest |got-want|; inf on a shape mismatch."""
    if len(got) != len(want):
        return float("inf"), float("inf")
    excess, diff = -float("inf"), 0.0
    for g, w in zip(got, want):
        if g.shape != w.shape:
            return float("inf"), float("inf")
        if g.size == 0:
            continue
        d = np.abs(g.astype(np.float64) - w.astype(np.float64))
        diff = max(diff, float(np.nanmax(d)) if not np.isnan(d).all() else float("nan"))
        excess = max(excess, float(np.nanmax(d - (ATOL + RTOL * np.abs(w.astype(np.float64))))))
    return excess, diff


def test_data_sets(model_path):
    """The test_data_set_<N> folders beside `model_path`, by N (empty when there are none)."""
    folder = os.path.dirname(os.path.abspath(model_path))
    sets = []
    for name in os.listdir(folder):
        m = re.fullmatch(r"test_data_set_(\d+)", name)
        if m and os.path.isdir(os.path.join(folder, name)):
            sets.append((int(m.group(1)), os.path.join(folder, name)))
    return [p for _, p in sorted(sets)]


def _numbered(folder, prefix):
    paths = []
    while os.path.exists(os.path.join(folder, f"{prefix}{len(paths)}.pb")):
        paths.append(os.path.join(folder, f"{prefix}{len(paths)}.pb"))
    return paths


def _compare(np, got, want):
    """(max |got - want|, None when every element is within the TEST_DATA tolerances, else the
    reason). NaN matches NaN and infinities must be equal; non-float outputs compare exactly."""
    if got.shape != want.shape:
        return float("inf"), f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.size == 0:
        return 0.0, None
    if want.dtype.kind not in "fc":
        bad = int(np.count_nonzero(got != want))
        return (float("inf"), f"{bad} of {want.size} values differ") if bad else (0.0, None)
    g, w = got.astype(np.float64), want.astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    with np.errstate(invalid="ignore"):
        d = np.where(same, 0.0, np.abs(g - w))
    d = np.where(np.isnan(d), np.inf, d)  # NaN on one side, or opposite infinities
    ok = same | (np.isfinite(d) & (d <= TEST_DATA_ATOL + TEST_DATA_RTOL * np.abs(w)))
    worst = float(d.max())
    if ok.all():
        return worst, None
    i = int(np.argmax(np.where(ok, -1.0, d)))
    return worst, (f"{int((~ok).sum())} of {want.size} elements differ, max abs diff {worst:.3g}; "
                   f"worst at flat index {i} (got {g.flat[i]:.7g}, expected {w.flat[i]:.7g})")


def check_test_data(np, model_path, run, n_inputs, to_arg):
    """{"sets", "ok", "tolerance", "max_abs_diff", "failed": [reasons]} for the test_data_set_*
    folders beside the model, or None when there are none. Never raises."""
    sets = test_data_sets(model_path)
    if not sets:
        return None
    failed, worst = [], 0.0
    for folder in sets:
        where = os.path.basename(folder)
        try:
            ins = [read_tensor(np, p) for p in _numbered(folder, "input_")]
            want = [read_tensor(np, p) for p in _numbered(folder, "output_")]
            if len(ins) != n_inputs:
                failed.append(f"{where}: {len(ins)} inputs, the model takes {n_inputs}")
                continue
            got = _as_numpy_list(np, run([to_arg(a) for a in ins]))
            if len(got) != len(want):
                failed.append(f"{where}: {len(got)} outputs, the test data has {len(want)}")
                continue
            for k, (g, w) in enumerate(zip(got, want)):
                diff, reason = _compare(np, g, w)
                worst = max(worst, diff)
                if reason:
                    failed.append(f"{where}: output {k}: {reason}")
        except Exception as e:  # a failure here is a finding, reported, not a crash
            failed.append(f"{where}: {type(e).__name__}: {' '.join(str(e).split())[:200]}")
    return {"sets": len(sets), "ok": not failed, "max_abs_diff": worst,
            "tolerance": f"|diff| <= {TEST_DATA_ATOL} + {TEST_DATA_RTOL}*|want|", "failed": failed[:5]}


def verify_outputs(np, args, run, inputs, keys, arg_lists, eager, to_arg):
    """Returns {"ref": {...} or reason, "vs_eager": {...} or None, "test_data": {...} or None};
    never raises for a mismatch."""
    report = {"tolerance": f"|diff| <= {ATOL} + {RTOL}*|ref|"}
    name = os.path.splitext(os.path.basename(args.model))[0]
    ref_dir = os.path.join(os.path.dirname(os.path.abspath(args.model)), "ref", name)
    meta_path = os.path.join(ref_dir, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as fh:
            meta = json.load(fh)
        try:
            arrs = [to_arg(np.load(os.path.join(ref_dir, meta["inputs"][n]["file"])))
                    for n, _ in inputs]
            want = [np.load(os.path.join(ref_dir, o["file"])) for o in meta["outputs"]]
            excess, diff = _worst(np, _as_numpy_list(np, run(arrs)), want)
            report["ref"] = {"max_abs_diff": diff, "ok": excess <= 0}
        except Exception as e:  # a failure here is a finding, reported, not a crash
            report["ref"] = {"error": " ".join(str(e).split())[:200], "ok": False}
    else:
        report["ref"] = None
    if eager is not None:
        import torch
        worst_excess, worst_diff, bad = -float("inf"), 0.0, []
        for key, arrs in zip(keys, arg_lists):
            with torch.no_grad():
                try:
                    got = _as_numpy_list(np, run(arrs))
                except Exception as e:
                    bad.append(f"{key}: {' '.join(str(e).split())[:100]}")
                    continue
                want = _as_numpy_list(np, eager(*arrs))
            excess, diff = _worst(np, got, want)
            worst_excess, worst_diff = max(worst_excess, excess), max(worst_diff, diff)
            if excess > 0:
                bad.append(key)
        report["vs_eager"] = {"shapes_checked": len(keys), "max_abs_diff": worst_diff,
                              "ok": not bad, "bad_shapes": bad[:5]}
    report["test_data"] = check_test_data(np, args.model, run, len(inputs), to_arg)
    return report
