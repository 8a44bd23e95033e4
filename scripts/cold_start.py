#!/usr/bin/env python3
"""Cold start of tierjit builds: session creation and first call, fresh processes, variants alternated.

Each repetition runs every variant once, in turn, as a fresh process:
  tierjit bench MODEL --shapes SHAPE --requests 2 --threads T --json J --interp-share-requests 0
where SHAPE is the first request of ../shared/bench/traces/<model>.zipf.txt. Prints, per model
and variant, the median session_create_ms, first_run_ms (the first request), the second call of
the same shape and create + first, with every first_run_ms sorted, and the load before and after.

Usage: scripts/cold_start.py VARIANT[,VARIANT...] [--reps 5] [--models mlp,bert_tiny,...]
                             [--threads 2] [--shared DIR]
A VARIANT is a tierjit binary, optionally with extra bench arguments after ':' joined by '+',
e.g. build/bin/tierjit:--no-warm-up. Exit 1 when a run fails.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def first_shape(trace):
    with open(trace) as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                return line
    raise ValueError(f"{trace}: no request")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variants")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--models", default="mlp,bert_tiny,convnet_small,lstm_small")
    ap.add_argument("--threads", default="2")
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    args = ap.parse_args()
    variants = args.variants.split(",")
    models = args.models.split(",")
    shapes = {m: first_shape(os.path.join(args.shared, "bench/traces", f"{m}.zipf.txt")) for m in models}
    res = {}
    print("before:", os.popen("uptime").read().strip())
    for m in models:
        for _ in range(args.reps):
            for v in variants:
                binary, _, extra = v.partition(":")
                fd, out = tempfile.mkstemp(suffix=".json")
                os.close(fd)
                cmd = [binary, "bench", os.path.join(args.shared, "models", f"{m}.onnx"), "--shapes",
                       shapes[m], "--requests", "2", "--threads", args.threads, "--no-progress",
                       "--json", out, "--interp-share-requests", "0"] + (extra.split("+") if extra else [])
                p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                if p.returncode != 0:
                    print(f"failed: {' '.join(cmd)}: {p.stderr.strip()}", file=sys.stderr)
                    return 1
                with open(out) as fh:
                    j = json.load(fh)
                os.unlink(out)
                second = j["shapes"][0]["mean_after_first_ms"] or 0.0
                res.setdefault((m, v), []).append((j["session_create_ms"], j["first_run_ms"], second))
    print("after: ", os.popen("uptime").read().strip())
    for m in models:
        print(f"{m} ({shapes[m]}), ms, medians of {args.reps}:")
        for v in variants:
            x = res[(m, v)]
            c, f, s = (statistics.median(a[i] for a in x) for i in range(3))
            print(f"  {v:50s} create {c:7.2f}  first {f:7.2f}  second {s:7.3f}  create+first {c + f:7.2f}"
                  f"  firsts {sorted(round(a[1], 2) for a in x)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
