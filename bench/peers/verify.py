"""Output checks for run_one.py --verify (run after the timed loop, so they never affect timing).

1. Against the reference pair <model dir>/ref/<model>/{meta.json, input_*.npy, output_*.npy} of the
   shared model zoo, when present: pass if |got - ref| <= 1e-4 + 1e-3 * |ref| elementwise (the
   tolerance ../shared/models/MODELS.md holds runtimes to).
2. For torchscript and torch-compile: against the eager onnx2torch module at every distinct
   request shape of the trace (same tolerance), since a trace or a compiled graph may have baked in
   the shape it first saw.
"""
from __future__ import annotations

import json
import os

ATOL, RTOL = 1e-4, 1e-3


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


def verify_outputs(np, args, run, inputs, keys, arg_lists, eager, to_arg):
    """Returns {"ref": {...} or reason, "vs_eager": {...} or None}; never raises for a mismatch."""
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
    return report
