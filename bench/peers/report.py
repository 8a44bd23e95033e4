"""Markdown for compare.py: the peers section of docs/performance.md from run_one.py records.

Records are run_one.py's JSON objects plus compare.py's "set", "rep", "system", "cmd" (and "na" or
"error" for a system that could not run), with {"meta": "start"|"end", ...} lines around them.
Standard library only. Statistics: best and median over repetitions; per-shape steady state =
nearest-rank p50 of a shape's latencies after its first 10 calls, best over repetitions, for
every shape with at least 20 calls, in every set of traces.
"""
from __future__ import annotations

import math
import os
import shlex
import statistics

SYSTEM_ORDER = ("tierjit", "onnxruntime", "torch-eager", "torchscript", "torch-compile")
WARM_SKIP = 10          # calls of a shape left out of its steady-state p50
MIN_COUNT = 20          # every shape that occurs at least this often has a steady-state row
SET_TITLES = {"short": "Zipf traces (500 requests; 60 for the image models)",
              "long": "Long traces (../shared/bench/traces/long)", "extra": "Other traces"}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def _p50(vals):
    s = sorted(vals)
    return s[max(1, math.ceil(0.5 * len(s))) - 1]


def _fmt(ms):
    if ms is None:
        return "–"
    if ms >= 100:
        return f"{ms:,.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def _group(records):
    """{(set, model, trace, n_requests-or-None): {system: [records]}} in first-seen order."""
    groups = {}
    for r in records:
        if "meta" in r or "system" not in r:
            continue
        key = (r.get("set", "extra"), r.get("model"), r.get("trace"))
        groups.setdefault(key, {}).setdefault(r["system"], []).append(r)
    return groups


def _systems(groups):
    seen = {s for g in groups.values() for s in g}
    return [s for s in SYSTEM_ORDER if s in seen]


def _reason(runs):
    r = next((r for r in runs if "run_one: " in r.get("error", "")), runs[0])
    if "na" in r:
        return f"n/a: {r['na']}"
    err = r["error"]
    err = err[err.index("run_one: "):] if "run_one: " in err else err
    return "failed: " + (err if len(err) <= 260 else err[:260] + " …")


def _ok_runs(runs):
    return [r for r in runs if "na" not in r and "error" not in r]


def _notes_for(runs):
    return [r for r in runs if "na" in r or "error" in r]


def render(records, jsonl=None, notes=()):
    groups = _group(records)
    systems = _systems(groups)
    reps = max((r.get("rep", 0) + 1 for r in records if "system" in r), default=0)
    out = ["", "## Peers: tierjit, ONNX Runtime and PyTorch on the shared models (bench/peers)", ""]
    out.append("Written by `bench/peers/compare.py` (how to install the peers and run it: "
               "`bench/peers/README.md`). Every number is one system in a fresh process "
               f"(`bench/peers/run_one.py`), up to {reps} repetitions (a cell says when it has "
               "fewer), the systems alternating within each repetition in a rotated order; same model file, trace and input arrays for all "
               "(the `inputs_digest` of every run is compared below), 2 intra-op threads each, "
               "latency = wall time of one run call from Python.")
    for n in notes:
        out += ["", n]
    out.append("")
    for m in (r for r in records if r.get("meta") in ("start", "end")):
        if m["meta"] == "start":
            out.append(f"- `{' '.join(shlex.quote(a) for a in m.get('argv', []))}`: started "
                       f"{m.get('utc')} UTC on {m.get('cpu', '?')} ({m.get('nproc', '?')} cores)"
                       + (f", git {m['git']}" if m.get("git") else "")
                       + f"; `uptime`: {m.get('uptime')}")
        else:
            out.append(f"  - finished {m.get('utc')} UTC; `uptime`: {m.get('uptime')}")
    if jsonl:
        out.append(f"- Raw results (every request's latency): `{jsonl}` (not in the repository;"
                   " `compare.py --from-jsonl FILE` rewrites this section from it)")
    out += _versions(groups, systems) + [""]
    out += _load_note(groups, systems) + [""]
    for set_name in ("short", "long", "extra"):
        sel = {k: v for k, v in groups.items() if k[0] == set_name}
        if not sel:
            continue
        out += [f"### {SET_TITLES[set_name]}", ""]
        out += _totals_table(sel, systems) + [""]
        out += _first_table(sel, systems) + [""]
        out += _steady_table(sel, systems) + [""]
    out += _problems(groups, systems)
    return "\n".join(out).rstrip("\n") + "\n"


def _versions(groups, systems):
    lines = []
    for s in systems:
        runs = [r for g in groups.values() for r in _ok_runs(g.get(s, []))]
        if runs:
            st = runs[-1].get("settings", {})
            extra = ", ".join(f"{k}={v}" for k, v in st.items()
                              if k not in ("seed", "trace_example", "layernorm_fixes"))
            lines.append(f"- `{s}` {runs[-1].get('peer_version')}: {extra}")
    return lines


def _load_note(groups, systems):
    lines = ["Foreign CPU load during the request loops (share of both cores busy with other "
             "processes, from /proc/stat minus the run's own CPU time; 0% = quiet machine): "]
    parts = []
    for s in systems:
        f = [r["load"]["foreign_cpu_frac"] for g in groups.values() for r in _ok_runs(g.get(s, []))
             if r.get("load", {}).get("foreign_cpu_frac") is not None]
        if f:
            parts.append(f"`{s}` median {100 * statistics.median(f):.0f}% (max {100 * max(f):.0f}%)")
    lines[0] += "; ".join(parts) + "."
    if any(float(p.split("median ")[1].split("%")[0]) > 10 for p in parts):
        lines.append("The machine was shared with other work (builds) during this run: absolute "
                     "numbers are inflated and noisy, by different amounts for different runs; "
                     "best-of-N is the fairest figure, and ratios within one repetition are "
                     "more trustworthy than absolute times.")
    return lines


def _row_label(key, runs_by_sys):
    set_name, model, trace = key
    n = next((r.get("n_requests") for rs in runs_by_sys.values() for r in _ok_runs(rs)), "?")
    return f"{model} / {trace}" + (" (long)" if set_name == "long" else ""), n


def _totals_table(sel, systems):
    lines = ["Total = `session_create_ms` + `total_wall_ms` (create the session, then the whole "
             "trace), ms, **best / median** over the repetitions; last column: tierjit's best "
             "divided by ONNX Runtime's best.", "",
             "| model / trace | requests | " + " | ".join(systems) + " | tierjit ÷ ORT |",
             "| --- | ---: | " + " | ".join("---:" for _ in systems) + " | ---: |"]
    for key, by_sys in sel.items():
        label, n = _row_label(key, by_sys)
        cells, best = [], {}
        for s in systems:
            runs = by_sys.get(s, [])
            ok = _ok_runs(runs)
            if not ok:
                cells.append(_short_reason(runs))
                continue
            tot = [r["session_create_ms"] + r["total_wall_ms"] for r in ok]
            best[s] = min(tot)
            cells.append(f"{_fmt(min(tot))} / {_fmt(statistics.median(tot))}" if len(tot) > 1
                         else f"{_fmt(tot[0])} (1 run)")
        ratio = (f"{best['tierjit'] / best['onnxruntime']:.1f}x"
                 if "tierjit" in best and "onnxruntime" in best else "–")
        lines.append(f"| {label} | {n} | " + " | ".join(cells) + f" | {ratio} |")
    return lines


def _first_table(sel, systems):
    lines = ["Cold start, ms, median over the repetitions: `session_create_ms` + `first_run_ms` "
             "(the first request of the trace, lazy initialisation included).", "",
             "| model / trace | " + " | ".join(systems) + " |",
             "| --- | " + " | ".join("---:" for _ in systems) + " |"]
    for key, by_sys in sel.items():
        label, _ = _row_label(key, by_sys)
        cells = []
        for s in systems:
            ok = _ok_runs(by_sys.get(s, []))
            if not ok:
                cells.append("–")
                continue
            c = statistics.median(r["session_create_ms"] for r in ok)
            f = statistics.median(r["first_run_ms"] for r in ok)
            cells.append(f"{_fmt(c)} + {_fmt(f)}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def _steady_table(sel, systems):
    lines = [f"Steady state per shape: **p50** latency (ms) of a shape's calls after its first "
             f"{WARM_SKIP}, best over the repetitions, and in brackets the fastest of those calls "
             "(on a loaded machine the p50 can be mostly waiting for a core; the fastest call "
             f"shows the cost without that); every shape with >= {MIN_COUNT} calls. "
             "Last column: tierjit ÷ ONNX Runtime.", "",
             "| model / trace | shape | calls | " + " | ".join(systems) + " | tierjit ÷ ORT |",
             "| --- | --- | ---: | " + " | ".join("---:" for _ in systems) + " | ---: |"]
    for key, by_sys in sel.items():
        label, _ = _row_label(key, by_sys)
        ref = next((_ok_runs(by_sys.get(s, [])) for s in systems if _ok_runs(by_sys.get(s, []))), [])
        if not ref:
            continue
        shapes = [(i, sh) for i, sh in enumerate(ref[0]["shapes"]) if sh["count"] >= MIN_COUNT]
        shapes.sort(key=lambda t: -t[1]["count"])
        for i, sh in shapes:
            cells, best = [], {}
            for s in systems:
                vals, fastest = [], []
                for r in _ok_runs(by_sys.get(s, [])):
                    lat = [v for v, si in zip(r["latencies_ms"], r["request_shape_index"]) if si == i]
                    if len(lat) > WARM_SKIP:
                        vals.append(_p50(lat[WARM_SKIP:]))
                        fastest.append(min(lat[WARM_SKIP:]))
                if vals:
                    best[s] = min(vals)
                cells.append(f"**{_fmt(best[s])}** ({_fmt(min(fastest))})" if vals else "–")
            ratio = (f"{best['tierjit'] / best['onnxruntime']:.1f}x"
                     if best.get("onnxruntime") and "tierjit" in best else "–")
            lines.append(f"| {label} | `{sh['shape']}` | {sh['count']} | " + " | ".join(cells)
                         + f" | {ratio} |")
    return lines


def _short_reason(runs):
    if not runs:
        return "not run"
    r = _notes_for(runs)
    return ("n/a¹" if "na" in r[0] else "failed¹") if r else "–"


def _problems(groups, systems):
    lines = ["### Notes on the runs", ""]
    seen = set()
    for key, by_sys in groups.items():
        for s in systems:
            runs = by_sys.get(s, [])
            bad = _notes_for(runs)
            if bad:
                msg = f"- ¹ `{s}` on {key[1]} / {key[2]}: {_reason(bad)}"
                if msg not in seen:
                    seen.add(msg)
                    lines.append(msg)
            for r in _ok_runs(runs):
                v = r.get("verify") or {}
                for what in ("ref", "vs_eager"):
                    c = v.get(what)
                    if c and not c.get("ok"):
                        msg = (f"- `{s}` on {key[1]} / {key[2]}: outputs differ ({what}: "
                               f"{ {k: c[k] for k in c if k != 'ok'} }) — its times are not "
                               "comparable")
                        if msg not in seen:
                            seen.add(msg)
                            lines.append(msg)
        digests = {r.get("inputs_digest") for rs in by_sys.values() for r in _ok_runs(rs)}
        if len(digests) > 1:
            lines.append(f"- {key[1]} / {key[2]}: input arrays differ between systems "
                         f"({len(digests)} digests)!")
    lines += _test_data_lines(groups, systems)
    checked = sum(1 for g in groups.values() for rs in g.values() for r in _ok_runs(rs)
                  if (r.get("verify") or {}).get("ref"))
    lines.append(f"- Outputs were checked after every timed loop (`run_one.py --verify`): "
                 f"{checked} runs against the model zoo's reference outputs "
                 "(|diff| <= 1e-4 + 1e-3·|ref|), torchscript and torch-compile also against "
                 "eager at every shape of the trace; only failures are listed above. Every run "
                 "of a (model, trace) got the same input arrays unless listed above.")
    return lines


def _test_data_lines(groups, systems):
    """Per (model, trace) whose runs were checked against the test_data_set_* folders beside the
    model (run_one.py --verify): pass/fail per system, with the first failure's reason."""
    lines = []
    for key, by_sys in groups.items():
        parts = []
        for s in systems:
            checked = [r["verify"]["test_data"] for r in _ok_runs(by_sys.get(s, []))
                       if (r.get("verify") or {}).get("test_data")]
            if not checked:
                continue
            bad = [c for c in checked if not c.get("ok")]
            if not bad:
                parts.append(f"`{s}` pass ({len(checked)} runs, max abs diff "
                             f"{max(c.get('max_abs_diff', 0) for c in checked):.2g})")
            else:
                reason = "; ".join(bad[0].get("failed", []))[:200]
                parts.append(f"`{s}` **FAIL** in {len(bad)} of {len(checked)} runs ({reason})")
        if parts:
            sets = max(r["verify"]["test_data"]["sets"] for rs in by_sys.values() for r in _ok_runs(rs)
                       if (r.get("verify") or {}).get("test_data"))
            lines.append(f"- {key[1]} / {key[2]}: outputs against the model folder's {sets} "
                         f"`test_data_set_*` (|diff| <= 1e-5 + 1e-3·|want|): " + ", ".join(parts))
    return lines
