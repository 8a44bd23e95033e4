#!/usr/bin/env python3
"""Turn the JSON of bench/micro (Google Benchmark, --benchmark_out_format=json) into the
micro-benchmark section of docs/performance.md: best (min) and median wall time per case,
GFLOP/s and % of the FMA peak measured in the same run, ratios vs tier 0 and vs the library.

Only the text between <!-- micro:begin --> and <!-- micro:end --> is replaced (appended with
the markers if they are missing). Standard library only. Benchmark names follow the convention
of bench/micro/micro.h: "<family>.<case>/<system>" (Google Benchmark appends "/real_time").
"""
import argparse
import json
import os
import re
import statistics
import sys
from collections import OrderedDict

BEGIN = "<!-- micro:begin -->"
END = "<!-- micro:end -->"

TIERS = ["tier0", "tier1", "tier2", "tier3"]
SYSTEM_TITLES = {"tier0": "tier 0", "tier1": "tier 1", "tier2": "tier 2", "tier3": "tier 3",
                 "library": "library"}

# family -> (title, description, systems shown as columns even without data)
FAMILIES = OrderedDict([
    ("matmul", ("MatMul", "C[M,N] = A[M,K] x B[K,N], float32; case `MxKxN`. tier 0 = one MatMul "
                "node (oneDNN sgemm inside the interpreter); library = `dnnl_sgemm` called "
                "directly. For the large shapes both run the same sgemm, so the spread of their ratio "
                "around 1.00x is this run's noise floor.", TIERS + ["library"])),
    ("conv", ("Conv (ResNet-18 layers, N=1, 224x224 input)",
              "float32 NCHW with bias, weights as initializers; tier 0 = one Conv node "
              "(oneDNN convolution).", TIERS)),
    ("elementwise", ("Elementwise chain",
                     "`Y = Mul(Tanh(Add(Mul(X, A), B)), C)`, X [1024,1024] (1M floats), "
                     "A, B, C [1024] broadcast; tier 0 runs 4 separate nodes.", TIERS)),
    ("session", ("Per-call overhead of Session::run",
                 "An Add of two float32 [16] (models/add16.onnx) through the C++ API, the p50 of "
                 "100,000 calls per repetition (bench/micro/session_bench.cc); target <= 2 µs. "
                 "interpret = interpret-only, adaptive = the default mode, tier2 = pinned tier 2.",
                 ["interpret", "adaptive", "tier2"])),
    ("reduction", ("Softmax and LayerNormalization [64,512]",
                   "Softmax-13 and LayerNormalization-17 over the last axis.", TIERS)),
])

# Representative regions whose compile time each compiled tier will report (family "compile").
COMPILE_REGIONS = ["elementwise chain (4 nodes)", "softmax [64,512]", "layernorm [64,512]",
                   "matmul 512x512x512", "MLP (3 Gemm + Relu)", "BERT layer", "ResNet-18 conv"]

UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def parse_name(name):
    parts = [p for p in name.split("/") if p not in ("real_time", "manual_time") and ":" not in p]
    if len(parts) < 2:
        return name, "?"
    return parts[0], "/".join(parts[1:])


def load(path):
    with open(path) as f:
        data = json.load(f)
    cases = OrderedDict()  # family_case -> system -> {"times": [...us], "flop": x, "error": s}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        fc, system = parse_name(b.get("run_name", b["name"]))
        entry = cases.setdefault(fc, OrderedDict()).setdefault(
            system, {"times": [], "flop": 0.0, "error": None, "selection": []})
        if b.get("error_occurred"):
            entry["error"] = b.get("error_message", "error")
            continue
        entry["times"].append(b["real_time"] * UNIT_TO_US[b.get("time_unit", "ns")])
        entry["flop"] = float(b.get("flop", 0.0))
        if "fastest_candidate_us" in b:  # tier 3: what kernel selection measured
            entry["selection"].append((b["fastest_candidate_us"], b["chosen_candidate_us"]))
    return data.get("context", {}), cases


def fmt_time(us):
    if us >= 1e4:
        return f"{us / 1e3:.1f} ms"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    if us >= 10:
        return f"{us:.0f} µs"
    return f"{us:.2f} µs"


def best(entry):
    return min(entry["times"]) if entry and entry["times"] else None


def gflops(entry, us):
    return entry["flop"] / (us * 1e-6) / 1e9 if entry["flop"] and us else None


def cell(entry, system, row, peak):
    if entry is None:
        if system in ("tier1", "tier2", "tier3"):
            return "_not run_"
        return "n/a"
    if entry["error"]:
        return "error: " + entry["error"].replace("|", "/")
    t_best, t_med = min(entry["times"]), statistics.median(entry["times"])
    lines = [f"**{fmt_time(t_best)}** / {fmt_time(t_med)}"]
    g = gflops(entry, t_best)
    if g:
        lines.append(f"{g:.1f} GFLOP/s" + (f" ({100 * g / peak:.0f}% peak)" if peak else ""))
    t0 = best(row.get("tier0"))
    if system != "tier0" and t0:
        lines.append(f"{t0 / t_best:.2f}x vs tier 0")
    lib = best(row.get("library"))
    if system != "library" and lib:
        lines.append(f"{lib / t_best:.2f}x vs library")
    return "<br>".join(lines)


def peak_section(cases):
    out = ["### Single-core FMA peak", "",
           "Register-only FMA loop (bench/micro/bench_peak.cc), per instruction set the CPU "
           "supports. The peak used for \"% peak\" below is the best of these.", "",
           "| instruction set | best GFLOP/s | median GFLOP/s | repetitions |",
           "| --- | --- | --- | --- |"]
    peak = None
    for fc, row in cases.items():
        if not fc.startswith("peak."):
            continue
        for system, e in row.items():
            if not e["times"]:
                out.append(f"| {system} | error: {e['error']} | | |")
                continue
            g_best = gflops(e, min(e["times"]))
            g_med = gflops(e, statistics.median(e["times"]))
            peak = max(peak or 0, g_best)
            out.append(f"| {system} | {g_best:.1f} | {g_med:.1f} | {len(e['times'])} |")
    if peak is None:
        out.append("| (not measured in this run) | | | |")
    else:
        out += ["", f"**Peak: {peak:.1f} GFLOP/s** (single core, float32 FMA)."]
    return out, peak


def case_key(family_case):
    """Rows in a stable order (the JSON order is random when interleaved): untagged cases
    first, then by tag ("_mlp", "_bert"), then naturally (numbers by value)."""
    name = family_case.split(".", 1)[1] if "." in family_case else family_case
    tag = name.rsplit("_", 1)[1] if family_case.startswith("matmul.") and "_" in name else ""
    natural = [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]
    return (tag != "", tag, natural)


def family_section(family, cases, peak):
    title, desc, expected = FAMILIES.get(family, (family, "", ["tier0"]))
    rows = OrderedDict((fc, cases[fc]) for fc in sorted(
        (fc for fc in cases if fc.split(".")[0] == family), key=case_key))
    systems = list(expected)
    for r in rows.values():
        for s in r:
            if s not in systems:
                systems.append(s)
    out = [f"### {title}", "", desc, "",
           "| case | " + " | ".join(SYSTEM_TITLES.get(s, s) for s in systems) + " |",
           "| --- |" + " --- |" * len(systems)]
    if not rows:
        out.append("| (no case of this family in this run) |" + " |" * len(systems))
    for fc, r in rows.items():
        out.append(f"| `{fc.split('.', 1)[1]}` | " +
                   " | ".join(cell(r.get(s), s, r, peak) for s in systems) + " |")
    return out


def compile_section(cases):
    rows = OrderedDict((fc, cases[fc]) for fc in sorted(
        (fc for fc in cases if fc.startswith("compile.")), key=case_key))
    out = ["### Compile time per tier", "",
           "Time to compile one region (kernel IR -> machine code), best / median."]
    if not rows:
        out += ["", "_Placeholder: the compiled tiers (src/kir, src/codegen) are not wired into "
                "the benchmarks yet, so no compile time is reported. They register "
                "`compile.<region>/tier1..3` cases (bench/micro/micro.h) and the table fills "
                "in._", "",
                "| region | tier 1 | tier 2 | tier 3 |", "| --- | --- | --- | --- |"]
        for region in COMPILE_REGIONS:
            out.append(f"| {region} | _not built yet_ | _not built yet_ | _not built yet_ |")
        return out
    systems = ["tier1", "tier2", "tier3"]
    for r in rows.values():
        systems += [s for s in r if s not in systems]
    out += ["", "| region | " + " | ".join(SYSTEM_TITLES.get(s, s) for s in systems) + " |",
            "| --- |" + " --- |" * len(systems)]
    for fc, r in rows.items():
        cells = []
        for s in systems:
            e = r.get(s)
            if e is None:
                cells.append("_not run_")
            elif not e["times"]:
                cells.append("error: " + (e["error"] or "?"))
            else:
                cells.append(f"{fmt_time(min(e['times']))} / "
                             f"{fmt_time(statistics.median(e['times']))}")
        out.append(f"| `{fc.split('.', 1)[1]}` | " + " | ".join(cells) + " |")
    return out


def selection_section(cases):
    rows = [(fc, r["tier3"]) for fc, r in cases.items() if "tier3" in r and r["tier3"]["selection"]]
    out = ["### Tier 3 kernel selection", "",
           "Per case, what kernel selection (src/runtime/kernel_select.h) measured when it chose: "
           "the fastest candidate's best time and the chosen one's (the tile sizes of the generated "
           "code and the library, repetitions interleaved), and the tier 3 column's best time "
           "re-measured by this benchmark against that fastest candidate (noise of this machine "
           "included)."]
    if not rows:
        return out + ["", "_No tier-3 case in this run._"]
    out += ["", "| case | fastest candidate | chosen | chosen / fastest | re-measured tier 3 / fastest |",
            "| --- | --- | --- | --- | --- |"]
    for fc, e in rows:
        fastest, chosen = min(e["selection"])
        remeasured = min(e["times"]) if e["times"] else None
        out.append(f"| `{fc}` | {fmt_time(fastest)} | {fmt_time(chosen)} | {chosen / fastest:.3f} | "
                   + (f"{remeasured / fastest:.3f}" if remeasured else "n/a") + " |")
    return out


def render(context, cases, args):
    counts = [len(s["times"]) for fc, r in cases.items() if not fc.startswith("peak.")
              for s in r.values() if s["times"]]
    reps = statistics.mode(counts) if counts else 0
    peak_reps = max((len(s["times"]) for fc, r in cases.items() if fc.startswith("peak.")
                     for s in r.values()), default=0)
    lines = [BEGIN, "", "## Micro-benchmarks (bench/micro)", "",
             "Reproduce (builds `tierjit_micro_bench`, runs it, rewrites this section):", "",
             "```sh", args.command, "```", ""]
    info = [f"Taken {context.get('date', '?')} at commit `{args.git_rev}` on "
            f"{args.cpu} ({context.get('num_cpus', '?')} logical CPUs, "
            f"{context.get('mhz_per_cpu', '?')} MHz reported), single thread "
            f"(OMP_NUM_THREADS=1, intra-op threads 1).",
            f"Each case ran {reps} repetitions of at least {args.min_time} s, all cases "
            "interleaved in random order in one process (`--benchmark_enable_random_interleaving`)"
            "; times are wall-clock per iteration, **best** (min) / median.",
            f"**Machine load:** /proc/loadavg was `{args.loadavg_before}` before and "
            f"`{args.loadavg_after}` after the run — the 2-core machine was shared with parallel "
            "builds, so medians are noisy; the best of the repetitions is the number to compare.",
            "Ratios: `Nx vs tier 0` = tier-0 best time / this system's best time "
            "(> 1 = faster than tier 0); `vs library` likewise against the library column. "
            "`% peak` = GFLOP/s at the best time / the FMA peak measured in the same run.",
            f"The FMA peak runs {peak_reps} repetitions spread over the run. Best and median "
            "differ by up to ~1.5x on most cases, the register-only FMA loop included: the "
            "speed of a core of this KVM guest varies with foreign load, not the kernels; a "
            "kernel above 100% of the peak caught a faster moment than the peak's best "
            "repetition.",
            "Absolute numbers can move by 1.5x between runs minutes apart on this machine "
            "(the FMA peak measured 174 to 281 GFLOP/s in the runs of one afternoon); compare "
            "the ratios and % of peak, which come from one run.",
            "_not run_ marks a tier with no benchmark for that case in this run (not registered, "
            "or filtered out); nothing is estimated."]
    lines += ["\n".join(info), ""]
    peak_lines, peak = peak_section(cases)
    lines += peak_lines + [""]
    lines += ["Targets (issue 3): the generated GEMM reaches >= 70% of this peak on MatMul "
              "512x512x512 (tier 2 column: the whole generated GEMM, packing included); tier 2 is "
              ">= 3x tier 0 on the elementwise chain and >= 2x on Softmax and LayerNormalization; "
              "the median region compile time over the six shared models is < 10 ms at tier 1 and "
              "< 100 ms at tier 2 (compile table); tier 3's choice is within 3% of the fastest "
              "candidate it measured (tier 3 selection table).", ""]
    for family in FAMILIES:
        lines += family_section(family, cases, peak) + [""]
    known = set(FAMILIES) | {"peak", "compile"}
    for family in OrderedDict.fromkeys(fc.split(".")[0] for fc in cases):
        if family not in known:
            lines += family_section(family, cases, peak) + [""]
    lines += compile_section(cases) + [""] + selection_section(cases) + ["", END]
    return "\n".join(lines)


def update_doc(path, section):
    text = open(path).read() if os.path.exists(path) else "# Performance\n"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(path, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", required=True, help="Google Benchmark JSON output")
    ap.add_argument("--doc", default="docs/performance.md", help="markdown file to update")
    ap.add_argument("--command", default="scripts/bench-micro.sh", help="command to print")
    ap.add_argument("--loadavg-before", default="?")
    ap.add_argument("--loadavg-after", default="?")
    ap.add_argument("--git-rev", default="?")
    ap.add_argument("--cpu", default="?", help="CPU model name")
    ap.add_argument("--min-time", default="?", help="--benchmark_min_time used")
    ap.add_argument("--stdout", action="store_true", help="print the section instead of writing")
    args = ap.parse_args()
    context, cases = load(args.json)
    if not cases:
        sys.exit(f"{args.json}: no benchmark results")
    section = render(context, cases, args)
    if args.stdout:
        print(section)
    else:
        update_doc(args.doc, section)
        print(f"updated {args.doc}")


if __name__ == "__main__":
    main()
