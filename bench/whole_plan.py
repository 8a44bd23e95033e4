#!/usr/bin/env python3
"""Whole-plan compilation against one kernel call per region, side by side.

Two sessions of MODEL at a pinned tier 2, one with whole_plan_calls = 0 (per-region dispatch) and
one compiling each plan whole after 4 calls, warmed up, then timed alternately: REPS rounds of
CALLS calls each with the same float32 input of shape SHAPE (e.g. 1x256). Prints best and median
µs per call (Python API, one intra-op thread).

Usage: bench/whole_plan.py MODEL SHAPE [--input x] [--reps 7] [--calls 2000]
Needs the tierjit Python module (scripts/python-dev.sh) and numpy.
"""
import argparse
import statistics
import time

import numpy as np
import tierjit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("shape")
    ap.add_argument("--input", default="x")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    a = ap.parse_args()
    shape = [int(d) for d in a.shape.split("x")]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    sessions = {}
    for name, calls in (("per-region", 0), ("whole", 4)):
        o = tierjit.SessionOptions()
        o.mode = "pinned-tier"
        o.pinned_tier = 2
        o.whole_plan_calls = calls
        s = tierjit.InferenceSession(a.model, o)
        for _ in range(50):
            s.run(None, {a.input: x})
        sessions[name] = s
    times = {k: [] for k in sessions}
    for _ in range(a.reps):
        for k, s in sessions.items():
            t0 = time.perf_counter()
            for _ in range(a.calls):
                s.run(None, {a.input: x})
            times[k].append((time.perf_counter() - t0) / a.calls * 1e6)
    for k, v in times.items():
        print(f"{k:10s} best {min(v):8.2f} us  median {statistics.median(v):8.2f} us per call")


if __name__ == "__main__":
    main()
