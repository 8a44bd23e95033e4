"""bench/peers/run_one.py: runs tierjit (this interpreter) and ONNX Runtime on models/demo_mlp.onnx
over the first requests of models/demo_mlp.zipf.txt and checks the result JSON's fields
(../shared/bench/README.md), the per-request latencies and that both systems got the same inputs.

ONNX Runtime is looked up in this interpreter, then in bench/peers/setup.sh's venv
($TIERJIT_PEERS_VENV, default ~/.cache/tierjit/peers-venv); the test skips, saying so, when
neither has it.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

RUN_ONE = SOURCE_DIR / "bench" / "peers" / "run_one.py"
N_REQUESTS = 12
SHAPE_FIELDS = {"shape", "count", "first_ms", "p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms",
                "mean_after_first_ms"}


def ort_python():
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME", pathlib.Path.home() / ".cache"))
    candidates = [sys.executable,
                  os.environ.get("TIERJIT_PEERS_VENV", str(cache / "tierjit" / "peers-venv"))
                  + "/bin/python"]
    for py in candidates:
        if os.path.exists(py) and subprocess.run([py, "-c", "import onnxruntime, numpy"],
                                                 capture_output=True).returncode == 0:
            return py
    return None


@pytest.fixture(scope="module")
def short_trace(tmp_path_factory):
    lines = [l for l in (SOURCE_DIR / "models" / "demo_mlp.zipf.txt").read_text().splitlines()
             if l.strip() and not l.startswith("#")]
    path = tmp_path_factory.mktemp("peers") / "demo_mlp.short.txt"
    path.write_text("# first requests of demo_mlp.zipf.txt\n" + "\n".join(lines[:N_REQUESTS]) + "\n")
    return path, lines[:N_REQUESTS]


def run(python, system, model, trace, *extra):
    p = subprocess.run([python, str(RUN_ONE), system, str(model), str(trace), "--threads", "2",
                        *extra], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{system}: exit {p.returncode}: {p.stderr[-2000:]}"
    lines = p.stdout.strip().splitlines()
    assert len(lines) == 1, p.stdout
    return json.loads(lines[0])


def check_result(res, system, requests):
    assert res["peer"] == system and res["peer_version"]
    assert res["model"] == "demo_mlp" and res["trace"] == "demo_mlp.short"
    assert res["threads"] == 2
    assert res["n_requests"] == len(requests)
    keys = list(dict.fromkeys(requests))
    assert res["n_shapes"] == len(keys)
    for f in ("session_create_ms", "first_run_ms", "total_wall_ms"):
        assert isinstance(res[f], (int, float)) and res[f] >= 0, f
    assert set(res["overall"]) == {"p50_ms", "p90_ms", "p99_ms", "mean_ms", "max_ms"}
    assert [s["shape"] for s in res["shapes"]] == keys
    for s in res["shapes"]:
        assert set(s) == SHAPE_FIELDS
        assert s["count"] == requests.count(s["shape"])
        assert s["p50_ms"] <= s["p90_ms"] <= s["p99_ms"] <= s["max_ms"]
        assert (s["mean_after_first_ms"] is None) == (s["count"] == 1)
    lat, idx = res["latencies_ms"], res["request_shape_index"]
    assert len(lat) == len(idx) == len(requests)
    assert [keys[i] for i in idx] == requests
    assert lat[0] == res["first_run_ms"]
    assert max(lat) == res["overall"]["max_ms"]
    assert sum(lat) <= res["total_wall_ms"] + 0.01 * len(lat)  # 3-decimal rounding
    assert res["verify"]["ref"] is None  # demo_mlp has no ref/demo_mlp/ folder


def test_tierjit_and_onnxruntime_same_fields_same_inputs(short_trace, demo_model):
    trace, requests = short_trace
    requests = [r.replace(" ", "") for r in requests]
    tj = run(sys.executable, "tierjit", demo_model, trace, "--verify")
    check_result(tj, "tierjit", requests)
    py = ort_python()
    if py is None:
        pytest.skip("onnxruntime is not installed (here or in the peers venv: "
                    "bench/peers/setup.sh); tierjit's JSON was checked")
    ort = run(py, "onnxruntime", demo_model, trace, "--verify")
    check_result(ort, "onnxruntime", requests)
    assert tj["inputs_digest"] == ort["inputs_digest"]


def test_max_requests_and_bad_trace(tmp_path, short_trace, demo_model):
    trace, requests = short_trace
    res = run(sys.executable, "tierjit", demo_model, trace, "--max-requests", "3")
    assert res["n_requests"] == 3 and res["trace_requests"] == len(requests)
    bad = tmp_path / "bad.txt"
    bad.write_text("x=4xq\n")
    p = subprocess.run([sys.executable, str(RUN_ONE), "tierjit", demo_model, str(bad)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "bad.txt:1" in p.stderr and "4xq" in p.stderr
