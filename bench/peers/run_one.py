#!/usr/bin/env python3
"""Runs ONE system on ONE ONNX model over ONE shape trace in this process; prints one JSON line.

The output has the fields of the shared benchmark README (../shared/bench/README.md, the same as
`tierjit bench --json`): peer, peer_version, model, trace, threads, n_requests, n_shapes,
session_create_ms, first_run_ms, total_wall_ms, overall{p50_ms p90_ms p99_ms mean_ms max_ms},
shapes[] {shape count first_ms p50_ms p90_ms p99_ms mean_ms max_ms mean_after_first_ms}, plus
latencies_ms and request_shape_index (per request, trace order), inputs_digest (sha256 of every
feed: equal digests = identical inputs across systems), load (foreign CPU use during the loop)
and settings. Percentiles are nearest-rank; times in ms rounded to 1 us. `model` is the model
file's stem, or its folder's name for a file named model.onnx (model_name).

Systems (each needs its own interpreter; bench/peers/setup.sh installs them, README.md):
  tierjit        import tierjit (ONNX Runtime's API, docs/python.md), SessionOptions.intra_op_threads
  onnxruntime    InferenceSession, CPU provider, intra_op_num_threads=THREADS, inter_op_num_threads=1
  torch-eager    onnx2torch.convert(model) -> nn.Module (fx), run under torch.inference_mode()
                 (one fix to the converted module: see fix_layernorms)
  torchscript    the same module, torch.jit.trace on the first request + freeze +
                 optimize_for_inference, run under torch.no_grad()
  torch-compile  the same module under torch.compile (inductor, default mode; needs torch >= 2)
A system that cannot run a model (no converter for an op, a trace that bakes in shapes, torch < 2)
prints {"peer", "model", "trace", "na": "<reason>"} and exits 3: it is never faked.

Inputs (the README's rules): per distinct request shape, in order of first appearance, before the
timed loop; floats uniform in [-1, 1), integer inputs whose name contains 'mask' all ones, other
integers uniform in [0, 1000), bools 0/1. Drawn from numpy's PCG64 seeded with (seed, shape
index) through Generator.random() only, so every numpy version and every system gets the same bits.

Usage: run_one.py SYSTEM MODEL.onnx TRACE.txt [--threads 2] [--seed 0] [--max-requests N] [--verify]
Exit: 0 result printed, 3 n/a, 2 usage or bad trace, 1 the system failed on a request.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import resource
import sys
import time

SYSTEMS = ("tierjit", "onnxruntime", "torch-eager", "torchscript", "torch-compile")
TORCH_SYSTEMS = SYSTEMS[2:]
# ONNX tensor types -> numpy dtype names (as ONNX Runtime's NodeArg.type spells them).
ONNX_TYPES = {"tensor(float)": "float32", "tensor(double)": "float64", "tensor(float16)": "float16",
              "tensor(int64)": "int64", "tensor(int32)": "int32", "tensor(int16)": "int16",
              "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(bool)": "bool"}
ONNX_ELEM = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool",
             10: "float16", 11: "float64"}
EXIT_NA, EXIT_USAGE, EXIT_FAIL = 3, 2, 1


class NotAvailable(Exception):
    """The system cannot run this model; the message is the reason."""


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="See bench/peers/README.md.")
    ap.add_argument("system", choices=SYSTEMS)
    ap.add_argument("model", help="ONNX model file")
    ap.add_argument("trace", help="trace file: one request per line, name=DxD;name=DxD")
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads (default 2)")
    ap.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    ap.add_argument("--verify", action="store_true",
                    help="after timing, check outputs against <model dir>/ref/<model>/ and "
                         "<model dir>/test_data_set_*/ (where present) and, for "
                         "torchscript/torch-compile, against eager at every shape")
    ap.add_argument("--max-requests", type=int, default=0,
                    help="run only the first N requests of the trace (default 0: all)")
    ap.add_argument("--warm-inductor-cache", action="store_true",
                    help="torch-compile: use inductor's on-disk cache as left by earlier runs "
                         "(default: a fresh empty cache per process, i.e. a cold start)")
    ap.add_argument("--pretty", action="store_true", help="indent the JSON")
    args = ap.parse_args(argv)
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    return args


def model_name(path):
    """A run's model name: the file's stem, or for `model.onnx` (the ONNX test-folder layout) its
    folder's name, e.g. ../shared/models-extra/efficientnet_b0/model.onnx -> efficientnet_b0."""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "model":
        folder = os.path.basename(os.path.dirname(os.path.abspath(path)))
        return folder or stem
    return stem


def parse_trace(path):
    """Returns [(key, {name: shape tuple})] in trace order; raises ValueError naming the line."""
    reqs = []
    with open(path) as fh:
        for no, line in enumerate(fh, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            req = {}
            for part in line.split(";"):
                name, eq, dims = part.strip().partition("=")
                if not eq or not name or name in req:
                    raise ValueError(f"{path}:{no}: bad input '{part}'")
                try:
                    req[name] = tuple(int(d) for d in dims.split("x")) if dims else ()
                except ValueError:
                    raise ValueError(f"{path}:{no}: bad shape '{dims}' of input '{name}'") from None
                if any(d < 0 for d in req[name]):
                    raise ValueError(f"{path}:{no}: negative dim in '{part}'")
            reqs.append((line.replace(" ", ""), req))
    if not reqs:
        raise ValueError(f"{path}: no requests")
    return reqs


def make_feeds(np, inputs, reqs, seed):
    """inputs: [(name, numpy dtype name)] in model order. Returns keys (distinct shapes in order of
    first appearance), per-key list of arrays in model order, and the sha256 of all of them."""
    names = [n for n, _ in inputs]
    feeds, digest = {}, hashlib.sha256()
    for key, req in reqs:
        if key in feeds:
            continue
        if sorted(req) != sorted(names):
            raise ValueError(f"request '{key}': inputs {sorted(req)} != the model's {names}")
        rng = np.random.Generator(np.random.PCG64([seed, len(feeds)]))
        arrs = []
        for name, dt in inputs:
            shape = req[name]
            u = rng.random(int(np.prod(shape, dtype=np.int64)))  # doubles in [0, 1)
            if dt.startswith("float"):
                a = (u * 2.0 - 1.0).astype(dt)
            elif dt == "bool":
                a = u < 0.5
            elif "mask" in name:
                a = np.ones(u.shape, dtype=dt)
            else:
                a = np.floor(u * 1000.0).astype(dt)
            a = np.ascontiguousarray(a.reshape(shape))
            digest.update(key.encode() + name.encode() + a.tobytes())
            arrs.append(a)
        feeds[key] = arrs
    return list(feeds), feeds, digest.hexdigest()


def pct(sorted_vals, p):
    rank = max(1, math.ceil(p / 100.0 * len(sorted_vals)))
    return sorted_vals[min(rank, len(sorted_vals)) - 1]


def summarize(vals):
    s = sorted(vals)
    return {"p50_ms": pct(s, 50), "p90_ms": pct(s, 90), "p99_ms": pct(s, 99),
            "mean_ms": sum(s) / len(s), "max_ms": s[-1]}


def round_ms(obj, key=""):
    if isinstance(obj, float) and (key.endswith("_ms") or key == "latencies_ms"):
        return round(obj, 3)
    if isinstance(obj, dict):
        return {k: round_ms(v, k) for k, v in obj.items()}
    if isinstance(obj, list):
        return [round_ms(v, key) for v in obj]
    return obj


def cpu_snapshot():
    """(machine busy seconds over all cores from /proc/stat, this process's CPU seconds)."""
    busy = None
    try:
        with open("/proc/stat") as fh:
            f = [int(x) for x in fh.readline().split()[1:]]
        busy = (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    except (OSError, ValueError, IndexError):
        pass
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return busy, ru.ru_utime + ru.ru_stime


# ---- systems: each returns (runner(arrays) -> outputs, version, settings, create breakdown) -----

def ort_like(module, args, model):
    so = module.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    t0 = time.perf_counter()
    sess = module.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
    create = (time.perf_counter() - t0) * 1e3
    inputs = [(i.name, ONNX_TYPES.get(i.type, i.type)) for i in sess.get_inputs()]
    names = [n for n, _ in inputs]

    def run(arrs):
        return sess.run(None, dict(zip(names, arrs)))
    settings = {"intra_op_num_threads": so.intra_op_num_threads,
                "inter_op_num_threads": so.inter_op_num_threads}
    if hasattr(so, "intra_op_threads"):  # tierjit: its own name for it, and the build
        settings = {"intra_op_threads": so.intra_op_threads, "build": module.get_version()}
    return run, inputs, module.__version__, settings, create, {}


def torch_system(args, model):
    import torch
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    if args.system == "torch-compile" and int(torch.__version__.split(".")[0]) < 2:
        raise NotAvailable(f"torch.compile needs torch >= 2, this interpreter has {torch.__version__}")
    try:
        import onnx
        import onnx2torch
    except ImportError as e:
        raise NotAvailable(f"no ONNX->torch converter: {e}") from None
    breakdown = {}
    t0 = time.perf_counter()
    proto = onnx.load(model)
    t1 = time.perf_counter()
    try:
        module = onnx2torch.convert(proto).eval()
    except Exception as e:  # onnx2torch raises NotImplementedError for ops it lacks
        from importlib.metadata import version as dist_version
        raise NotAvailable(f"onnx2torch {dist_version('onnx2torch')} cannot convert: "
                           f"{' '.join(str(e).split())[:200]}") from None
    t2 = time.perf_counter()
    fixes = fix_layernorms(torch, module)
    breakdown.update(onnx_load_ms=(t1 - t0) * 1e3, convert_ms=(t2 - t1) * 1e3)
    init = {i.name for i in proto.graph.initializer}
    inputs = [(i.name, ONNX_ELEM.get(i.type.tensor_type.elem_type, "?"))
              for i in proto.graph.input if i.name not in init]
    eager = module
    grad = torch.inference_mode if args.system == "torch-eager" else torch.no_grad
    return torch, eager, module, inputs, grad, breakdown, t0, fixes


def fix_layernorms(torch, module):
    """onnx2torch builds nn.LayerNorm(input_shape[axis:]) from the input's value_info; where the
    model has none (bert_tiny) that is () and the module fails. The scale it copies in has
    exactly the normalized shape X.shape[axis:] (ONNX LayerNormalization-17), so use that."""
    fixed = 0
    for m in module.modules():
        if isinstance(m, torch.nn.LayerNorm) and len(m.normalized_shape) == 0 \
                and m.weight is not None and m.weight.dim() > 0:
            m.normalized_shape = tuple(m.weight.shape)
            fixed += 1
    return fixed


def main(argv=None):
    args = parse_args(argv)
    if args.system in TORCH_SYSTEMS:  # pools are sized before torch (and its BLAS) start
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # see ../shared/bench/README.md
        if args.system == "torch-compile" and not args.warm_inductor_cache:
            import atexit
            import shutil
            import tempfile
            cache_dir = tempfile.mkdtemp(prefix="peers-inductor-")
            atexit.register(shutil.rmtree, cache_dir, True)
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir
    import numpy as np
    head = {"peer": args.system, "model": model_name(args.model),
            "trace": os.path.splitext(os.path.basename(args.trace))[0]}

    def emit(obj):
        print(json.dumps(round_ms(obj), indent=2 if args.pretty else None), flush=True)
    try:
        reqs = parse_trace(args.trace)
        trace_requests = len(reqs)
        if args.max_requests > 0:
            reqs = reqs[:args.max_requests]
    except (OSError, ValueError) as e:
        print(f"run_one: {e}", file=sys.stderr)
        return EXIT_USAGE
    to_arg = lambda a: a  # noqa: E731  (torch systems replace it with torch.from_numpy)
    t_import = time.perf_counter()
    try:
        if args.system in ("tierjit", "onnxruntime"):
            mod = __import__(args.system)
            import_ms = (time.perf_counter() - t_import) * 1e3
            run, inputs, version, settings, create_ms, breakdown = ort_like(mod, args, args.model)
        else:
            torch, eager, module, inputs, grad, breakdown, t0, fixes = torch_system(args, args.model)
            import_ms = (t0 - t_import) * 1e3
            version = torch.__version__
            settings = {"torch_threads": torch.get_num_threads(),
                        "interop_threads": torch.get_num_interop_threads(),
                        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                        "grad_mode": grad.__name__}
            if fixes:
                settings["layernorm_fixes"] = fixes
            to_arg = torch.from_numpy
    except NotAvailable as e:
        emit({**head, "na": str(e)})
        return EXIT_NA
    except ImportError as e:
        emit({**head, "na": f"not installed in {sys.executable}: {e}"})
        return EXIT_NA
    try:
        keys, feeds, digest = make_feeds(np, inputs, reqs, args.seed)
    except ValueError as e:
        print(f"run_one: {args.trace}: {e}", file=sys.stderr)
        return EXIT_USAGE
    if args.system in TORCH_SYSTEMS:
        feeds = {k: [to_arg(a) for a in v] for k, v in feeds.items()}
        if args.system == "torchscript":
            t = time.perf_counter()
            with torch.no_grad():
                try:
                    module = torch.jit.trace(module, tuple(feeds[keys[0]]), check_trace=False)
                    module = torch.jit.optimize_for_inference(torch.jit.freeze(module.eval()))
                except Exception as e:
                    emit({**head, "na": f"torch.jit.trace failed: {' '.join(str(e).split())[:200]}"})
                    return EXIT_NA
            breakdown["trace_freeze_optimize_ms"] = (time.perf_counter() - t) * 1e3
            settings["trace_example"] = keys[0]
        elif args.system == "torch-compile":
            t = time.perf_counter()
            module = torch.compile(module)
            breakdown["compile_call_ms"] = (time.perf_counter() - t) * 1e3
            settings["compile"] = "torch.compile(module) default (inductor, lazy: compiles in run)"
            settings["inductor_cache"] = "warm" if args.warm_inductor_cache else "fresh (cold)"
        create_ms = sum(breakdown.values())

        def run(arrs, m=module, g=grad):
            with g():
                return m(*arrs)
    index = {k: i for i, k in enumerate(keys)}
    order = [index[k] for k, _ in reqs]
    lat = [0.0] * len(reqs)
    arg_lists = [feeds[k] for k in keys]
    load0 = os.getloadavg()[0]
    busy0, own0 = cpu_snapshot()
    try:
        loop0 = time.perf_counter()
        for i, si in enumerate(order):
            arrs = arg_lists[si]
            s = time.perf_counter()
            run(arrs)
            lat[i] = (time.perf_counter() - s) * 1e3
        total_ms = (time.perf_counter() - loop0) * 1e3
    except Exception as e:
        print(f"run_one: {args.system} failed on request {i + 1} ({reqs[i][0]}): "
              f"{' '.join(str(e).split())[:300]}", file=sys.stderr)
        return EXIT_FAIL
    busy1, own1 = cpu_snapshot()
    per = [[] for _ in keys]
    for si, v in zip(order, lat):
        per[si].append(v)
    shapes = [{"shape": k, "count": len(v), "first_ms": v[0], **summarize(v),
               "mean_after_first_ms": sum(v[1:]) / (len(v) - 1) if len(v) > 1 else None}
              for k, v in zip(keys, per)]
    foreign = None
    if busy0 is not None:
        foreign = max(0.0, (busy1 - busy0) - (own1 - own0)) / (total_ms / 1e3 * os.cpu_count())
    result = {**head, "peer_version": version, "model_path": os.path.abspath(args.model),
              "trace_path": os.path.abspath(args.trace), "threads": args.threads,
              "n_requests": len(reqs), "trace_requests": trace_requests, "n_shapes": len(keys),
              "session_create_ms": create_ms,
              "first_run_ms": lat[0], "total_wall_ms": total_ms, "overall": summarize(lat),
              "shapes": shapes, "import_ms": import_ms, "create_breakdown_ms": breakdown,
              "settings": {**settings, "seed": args.seed, "python": sys.version.split()[0]},
              "inputs_digest": digest,
              "load": {"loadavg_1m_before": load0, "foreign_cpu_frac": foreign,
                       "cores": os.cpu_count()},
              "latencies_ms": lat, "request_shape_index": order}
    if args.verify:
        from verify import verify_outputs  # bench/peers/verify.py
        result["verify"] = verify_outputs(np, args, run, inputs, keys, arg_lists,
                                          eager if args.system in ("torchscript", "torch-compile")
                                          else None, to_arg)
    emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
