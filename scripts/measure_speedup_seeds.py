#!/usr/bin/env python3
"""Measures the tier policy's speedup seeds on this machine and writes them as data.

Runs the micro-benchmark cases `seeds.*` (bench/micro/bench_seeds.cc: a documented mixed list of
layer shapes per region kind, each at tier 0, 1, 2 and 3, one thread), takes each case's median
over --reps interleaved repetitions (CPU time, one thread: robust to a shared machine), and
writes per region kind the geometric mean of each tier
step's speedup (t_tier / t_tier+1) to src/runtime/speedup_seeds/<isa>.json, where <isa> is
avx512 on CPUs with AVX-512F and avx2 otherwise. The runtime embeds those files at build time
(src/runtime/CMakeLists.txt) and seeds its SpeedupModel from the one of the CPU it runs on.

Usage: scripts/measure_speedup_seeds.py [--isa native|avx2] [--bench build/bin/tierjit_micro_bench]
       [--reps 5] [--min-time 0.1] [--filter REGEX] [--out FILE] [--doc-only]
Afterwards the tables of docs/performance.md between <!-- seeds:begin --> and <!-- seeds:end -->
are rewritten from both data files (--doc-only: just that, nothing measured).
--isa avx2 measures the AVX2 paths on an AVX-512 CPU (TIERJIT_ISA=avx2 for tierjit, and
ONEDNN_MAX_CPU_ISA=AVX2 for tier 0's oneDNN convolutions); the file says which CPU ran it.
Measure on a quiet machine (uptime below 0.5, nothing else building): docs/performance.md.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys

KINDS = ["elementwise", "matmul_epilogue", "reduction", "conv", "conv_pointwise", "conv_depthwise",
         "conv_pool"]


def kind_of(case):
    """The seed kind of a case: its name's prefix, convolutions by family (the cases name their
    kernel as KxK and end in _dw when depthwise)."""
    if case.startswith("conv_pool_"):
        return "conv_pool"
    if case.startswith("conv_"):
        if case.endswith("_dw"):
            return "conv_depthwise"
        return "conv_pointwise" if "_1x1s" in case else "conv"
    return next((k for k in KINDS if case.startswith(k + "_")), None)
SYSTEMS = ["tier0", "tier1", "tier2", "tier3"]


def spreads_from_tier0(times):
    """Per kind, the sample standard deviation over its cases of log(t0 / t1), log(t0 / t2) and
    log(t0 / t3): how far one region's speedup over tier 0 strays from the kind's mean (the tier
    policy weighs it when it decides to try a kind whose mean is near 1). Kinds with fewer than
    two cases are left out."""
    out = {}
    for kind in KINDS:
        logs = [[] for _ in range(3)]
        for case, t in times.items():
            if kind_of(case) != kind:
                continue
            for s in range(3):
                a, b = t.get(SYSTEMS[0]), t.get(SYSTEMS[s + 1])
                if a and b:
                    logs[s].append(math.log(a / b))
        if all(len(l) >= 2 for l in logs):
            sd = []
            for l in logs:
                mean = sum(l) / len(l)
                sd.append(round(math.sqrt(sum((x - mean) ** 2 for x in l) / (len(l) - 1)), 4))
            out[kind] = sd
    return out


def cpu_model():
    """'AMD EPYC (family 25 model 17)': the name alone does not tell Zen 3 from Zen 4."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if ":" in line:
                    k, v = line.split(":", 1)
                    fields.setdefault(k.strip(), v.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or "unknown"
    if "cpu family" in fields and "model" in fields:
        name += " (family %s model %s)" % (fields["cpu family"], fields["model"])
    return name


def isa():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        flags = ""
    return "avx512" if " avx512f" in flags else "avx2"


def doc_tables(root):
    """The markdown tables of every src/runtime/speedup_seeds/*.json, for docs/performance.md."""
    out = []
    for isa, title in [("avx512", "AVX-512 (native)"),
                       ("avx2", "AVX2 (`--isa avx2`: TIERJIT_ISA=avx2 and oneDNN limited to AVX2)")]:
        path = os.path.join(root, "src/runtime/speedup_seeds", isa + ".json")
        if not os.path.exists(path):
            continue
        d = json.load(open(path))
        out += ["### " + title, "", "`%s` on %s, %s." % (d["command"], d["cpu"], d["generated"]), "",
                "| case | tier 0 (µs) | tier 1 | tier 2 | tier 3 |", "| --- | ---: | ---: | ---: | ---: |"]
        for c, t in d["cases_us"].items():
            t0 = t.get("tier0")
            if not t0:
                continue
            cell = lambda k: ("%.2fx" % (t0 / t[k])) if t.get(k) else "-"
            out.append("| %s | %s | %s | %s | %s |" % (c, format(round(t0), ","), cell("tier1"),
                                                       cell("tier2"), cell("tier3")))
        out += ["", "Per kind, the geometric mean of each step (the seeds, 0->1 / 1->2 / 2->3): " +
                "; ".join("%s %.2f / %.2f / %.2f" % (k, *v) for k, v in d["steps"].items()) + ".", ""]
    return out


def rewrite_doc(root):
    path = os.path.join(root, "docs/performance.md")
    text = open(path).read()
    begin, end = "<!-- seeds:begin -->", "<!-- seeds:end -->"
    if begin not in text or end not in text:
        print("no seeds markers in", path, file=sys.stderr)
        return
    a, b = text.index(begin) + len(begin), text.index(end)
    text = text[:a] + "\n" + "\n".join(doc_tables(root)) + "\n" + text[b:]
    open(path, "w").write(text)
    print("rewrote the seeds tables of", path, file=sys.stderr)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", default=os.path.join(root, "build/bin/tierjit_micro_bench"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.1)
    ap.add_argument("--filter", default=r"^seeds\.")
    ap.add_argument("--out", default=None)
    ap.add_argument("--isa", choices=["native", "avx2"], default="native")
    ap.add_argument("--doc-only", action="store_true")
    args = ap.parse_args()
    if args.doc_only:
        rewrite_doc(root)
        return
    env = dict(os.environ)
    target = isa()
    if args.isa == "avx2":
        env["TIERJIT_ISA"] = "avx2"
        env["ONEDNN_MAX_CPU_ISA"] = "AVX2"
        target = "avx2"
    out = args.out or os.path.join(root, "src/runtime/speedup_seeds", target + ".json")
    cmd = [args.bench, "--benchmark_filter=" + args.filter,
           "--benchmark_min_time=%g" % args.min_time,
           "--benchmark_repetitions=%d" % args.reps,
           "--benchmark_enable_random_interleaving=true",
           "--benchmark_report_aggregates_only=true", "--benchmark_format=json"]
    print("running:", " ".join(cmd), file=sys.stderr)
    res = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    data = json.loads(res.stdout)
    times = {}  # case -> system -> median µs
    for b in data["benchmarks"]:
        if b.get("aggregate_name") != "median" or b.get("error_occurred"):
            continue
        m = re.match(r"seeds\.([^/]+)/([^/]+)/", b["name"])
        if not m:
            continue
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
        times.setdefault(m.group(1), {})[m.group(2)] = b["cpu_time"] * unit
    steps = {}
    for kind in KINDS:
        logs = [[] for _ in range(3)]
        for case, t in times.items():
            if kind_of(case) != kind:
                continue
            for s in range(3):
                a, b = t.get(SYSTEMS[s]), t.get(SYSTEMS[s + 1])
                if a and b:
                    logs[s].append(math.log(a / b))
        if all(logs):
            steps[kind] = [round(math.exp(sum(l) / len(l)), 4) for l in logs]
    spread = spreads_from_tier0(times)
    doc = {
        "isa": target,
        "cpu": cpu_model(),
        "generated": datetime.date.today().isoformat(),
        "command": "scripts/measure_speedup_seeds.py --isa %s --reps %d --min-time %g"
                   % (args.isa, args.reps, args.min_time),
        "note": "steps[kind] = geometric means over the cases of t0/t1, t1/t2, t2/t3 (one thread, "
                "CPU time: robust to other processes on a shared machine)",
        "steps": steps,
        "spread_from_tier0": spread,
        "cases_us": {c: {s: round(v, 3) for s, v in sorted(t.items())} for c, t in sorted(times.items())},
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", out, file=sys.stderr)
    for kind, s in steps.items():
        print("%-16s 0->1 %.3g  1->2 %.3g  2->3 %.3g" % (kind, *s))
    rewrite_doc(root)


if __name__ == "__main__":
    main()
