#!/usr/bin/env python3
"""Side-by-side comparison: tierjit, ONNX Runtime and PyTorch on the same models, traces and inputs.

For each (model, trace) it runs every system through run_one.py as a FRESH PROCESS per repetition,
all systems once per repetition in a rotated order (so each system runs early and late in turn and
load bursts hit all of them), collects the JSON lines into a .jsonl file and rewrites its section
of docs/performance.md (between <!-- peers:begin --> and <!-- peers:end -->, appended if missing).
Standard library only; the systems run under their own interpreters (bench/peers/README.md).

  compare.py [--data DIR] [--models mlp,bert_tiny] [--sets short,long] [--long-dists zipf]
             [--long-requests N] [--systems tierjit,onnxruntime,...] [--reps 5] [--threads 2]
             [--out docs/performance.md]
  compare.py --from-jsonl RESULTS.jsonl      # only rewrite the doc from saved results

DIR (default: ../shared next to the repository) holds models/<m>.onnx, bench/traces/<m>.zipf.txt
(500 requests; 60 for the image models) and bench/traces/long/<m>.<dist>.txt. A model file named
model.onnx (the ONNX test-folder layout) is named after its folder; where that folder holds
test_data_set_*/, every run's outputs are checked against them (pass/fail per system in the
printed line, the JSON and the doc; a failure never stops the run), e.g.
  compare.py --only-traces --trace ../shared/models-extra/efficientnet_b0/model.onnx:\
../shared/models-extra/efficientnet_b0/trace.zipf.txt
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import pathlib
import shlex
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
import report  # noqa: E402  (bench/peers/report.py: the markdown)
from run_one import model_name  # noqa: E402  (a run's model name: stem, or folder of model.onnx)

MODELS = ("mlp", "convnet_small", "resnet18", "mobilenet_v2", "bert_tiny", "lstm_small")
SYSTEMS = ("tierjit", "onnxruntime", "torch-eager", "torchscript", "torch-compile")
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache")) / "tierjit"
DEFAULT_PYTHON = {  # interpreters made by scripts/python-dev.sh and bench/peers/setup.sh
    "tierjit": CACHE / "venv/bin/python",
    "onnxruntime": CACHE / "peers-venv/bin/python",
    "torch-eager": CACHE / "peers-torch113-venv/bin/python",
    "torchscript": CACHE / "peers-torch113-venv/bin/python",
    "torch-compile": CACHE / "peers-venv/bin/python",
}


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--data", default=str(REPO.parent / "shared"),
                    help="folder with models/ and bench/traces/ (default: %(default)s)")
    ap.add_argument("--models", default=",".join(MODELS), help="comma list (default: all six)")
    ap.add_argument("--sets", default="short,long",
                    help="short = bench/traces/<m>.zipf.txt, long = bench/traces/long/ "
                         "(default: %(default)s)")
    ap.add_argument("--long-dists", default="zipf",
                    help="distributions of the long traces: zipf,drift,static (default: %(default)s)")
    ap.add_argument("--long-requests", type=int, default=0, metavar="N",
                    help="run only the first N requests of each long trace (default 0: all)")
    ap.add_argument("--trace", action="append", default=[], metavar="MODEL.onnx:TRACE.txt",
                    help="an extra (model, trace) pair, repeatable; with --only-traces, the only ones")
    ap.add_argument("--only-traces", action="store_true", help="run only the --trace pairs")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma list (default: all)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads (default: 2)")
    ap.add_argument("--seed", type=int, default=0, help="input seed (default: 0)")
    ap.add_argument("--python", action="append", default=[], metavar="SYSTEM=PATH",
                    help="interpreter for a system (defaults: ~/.cache/tierjit/{venv,peers-venv,"
                         "peers-torch113-venv}/bin/python, see README.md)")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per run (default: 900)")
    ap.add_argument("--no-verify", action="store_true", help="skip run_one.py --verify")
    ap.add_argument("--jsonl", help="where to save results (default: ~/.cache/tierjit/peers-results/"
                                    "<UTC time>.jsonl; appended to, so a run can be resumed)")
    ap.add_argument("--from-jsonl", action="append", default=[],
                    help="do not run: rewrite the doc from saved results (repeatable)")
    ap.add_argument("--out", default=str(REPO / "docs/performance.md"),
                    help="markdown file whose peers section is rewritten (default: %(default)s)")
    ap.add_argument("--no-doc", action="store_true", help="do not touch the markdown file")
    ap.add_argument("--note", action="append", default=[],
                    help="a sentence for the doc section (repeatable), e.g. which tiers ran")
    ap.add_argument("--dry-run", action="store_true", help="print the runs, do nothing")
    args = ap.parse_args(argv)
    args.systems = [s for s in args.systems.split(",") if s]
    for s in args.systems:
        if s not in SYSTEMS:
            ap.error(f"unknown system '{s}' (known: {', '.join(SYSTEMS)})")
    args.pythons = {k: str(v) for k, v in DEFAULT_PYTHON.items()}
    for p in args.python:
        k, eq, v = p.partition("=")
        if not eq or k not in SYSTEMS:
            ap.error(f"--python wants SYSTEM=PATH with SYSTEM one of {', '.join(SYSTEMS)}: '{p}'")
        args.pythons[k] = v
    if args.reps < 1:
        ap.error("--reps must be >= 1")
    return args


def work_list(args):
    """[(set name, model path, trace path)] in run order; missing files are an error."""
    data = pathlib.Path(args.data)
    items = []
    if not args.only_traces:
        sets = [s for s in args.sets.split(",") if s]
        for m in [m for m in args.models.split(",") if m]:
            model = data / "models" / f"{m}.onnx"
            if "short" in sets:
                items.append(("short", model, data / "bench/traces" / f"{m}.zipf.txt"))
            if "long" in sets:
                for d in [d for d in args.long_dists.split(",") if d]:
                    items.append(("long", model, data / "bench/traces/long" / f"{m}.{d}.txt"))
    for t in args.trace:
        model, sep, trace = t.rpartition(":")
        if not sep:
            raise SystemExit(f"compare: --trace wants MODEL.onnx:TRACE.txt, got '{t}'")
        items.append(("extra", pathlib.Path(model), pathlib.Path(trace)))
    for _, model, trace in items:
        for f in (model, trace):
            if not f.exists():
                raise SystemExit(f"compare: {f} not found (--data {args.data})")
    return items


def machine_note():
    load = " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg") else "?"
    return {"utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "loadavg": load, "uptime": subprocess.run(["uptime"], capture_output=True,
                                                     text=True).stdout.strip()}


def git_head():
    p = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %cI"],
                       capture_output=True, text=True)
    return p.stdout.strip() or None


def run_once(args, system, set_name, model, trace, rep):
    cmd = [args.pythons[system], str(HERE / "run_one.py"), system, str(model), str(trace),
           "--threads", str(args.threads), "--seed", str(args.seed)]
    if not args.no_verify:
        cmd.append("--verify")
    if set_name == "long" and args.long_requests > 0:
        cmd += ["--max-requests", str(args.long_requests)]
    rec = {"set": set_name, "rep": rep, "system": system, "cmd": " ".join(map(shlex.quote, cmd))}
    if not os.path.exists(args.pythons[system]):
        return {**rec, "na": f"interpreter {args.pythons[system]} missing (bench/peers/setup.sh)"}
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {**rec, "error": f"timed out after {args.timeout:.0f} s"}
    rec["process_s"] = round(time.perf_counter() - t0, 3)
    out = p.stdout.strip().splitlines()
    try:
        res = json.loads(out[-1]) if out else None
    except json.JSONDecodeError:
        res = None
    if p.returncode in (0, 3) and isinstance(res, dict):
        return {**rec, **res}
    lines = p.stderr.strip().splitlines()
    own = [line for line in lines if line.startswith("run_one: ")]  # run_one's own message
    err = (own[-1] if own else " ".join(lines[-3:]))[:400] or f"exit {p.returncode}"
    return {**rec, "error": err}


def test_data_summary(rec):
    """", test data pass (3 sets)" / ", test data FAIL (...)" for a run checked against the
    test_data_set_* folders beside its model (run_one.py --verify); "" when there are none."""
    td = (rec.get("verify") or {}).get("test_data")
    if not td:
        return ""
    if td.get("ok"):
        return f", test data pass ({td['sets']} sets, max abs diff {td['max_abs_diff']:.2g})"
    return f", test data FAIL ({'; '.join(td.get('failed', []))[:300]})"


def main(argv=None):
    args = parse_args(argv)
    if args.from_jsonl:
        records = [json.loads(line) for f in args.from_jsonl for line in open(f) if line.strip()]
        write_doc(args, records)
        return 0
    items = work_list(args)
    jsonl = pathlib.Path(args.jsonl) if args.jsonl else CACHE / "peers-results" / (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + ".jsonl")
    if args.dry_run:
        for set_name, model, trace in items:
            for s in args.systems:
                print(f"{set_name}: {args.pythons[s]} run_one.py {s} {model} {trace} x{args.reps}")
        return 0
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    start = machine_note()
    meta = {"meta": "start", "argv": sys.argv, **start, "nproc": os.cpu_count(),
            "cpu": report.cpu_model(), "pythons": args.pythons, "git": git_head()}
    records = [meta]
    with open(jsonl, "a") as fh:
        fh.write(json.dumps(meta) + "\n")
        for set_name, model, trace in items:
            skip = {}  # system -> why (n/a, or failed: no point repeating)
            for rep in range(args.reps):
                order = args.systems[rep % len(args.systems):] + args.systems[:rep % len(args.systems)]
                for s in order:
                    if s in skip:
                        continue
                    rec = run_once(args, s, set_name, model, trace, rep)
                    rec.setdefault("model", model_name(str(model)))
                    rec.setdefault("trace", trace.stem)
                    rec.pop("trace_path_", None)
                    if "na" in rec or "error" in rec:
                        skip[s] = True
                    summary = rec.get("na") or rec.get("error") or (
                        f"create {rec['session_create_ms']:.1f} ms, loop {rec['total_wall_ms']:.1f} ms,"
                        f" foreign cpu {100 * (rec['load']['foreign_cpu_frac'] or 0):.0f}%"
                        + test_data_summary(rec))
                    print(f"[{set_name} {rec['model']} {trace.stem} rep {rep + 1}/{args.reps}] {s}: "
                          f"{summary}", flush=True)
                    fh.write(json.dumps(rec) + "\n")
                    fh.flush()
                    records.append(rec)
        end = {"meta": "end", **machine_note()}
        fh.write(json.dumps(end) + "\n")
        records.append(end)
    print(f"compare: results in {jsonl}")
    if not args.no_doc:
        write_doc(args, records, jsonl)
    return 0


def write_doc(args, records, jsonl=None):
    if args.no_doc:
        return
    section = report.render(records, jsonl, args.note)
    path = pathlib.Path(args.out)
    text = path.read_text() if path.exists() else "# Performance\n"
    begin, end = "<!-- peers:begin -->", "<!-- peers:end -->"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + begin + "\n" + section + "\n" + end + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + begin + "\n" + section + "\n" + end + "\n"
    path.write_text(text)
    print(f"compare: wrote the peers section of {path}")


if __name__ == "__main__":
    sys.exit(main())
