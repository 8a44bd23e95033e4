"""Concurrent runs: one session shared by many Python threads, with the GIL released in run; the
OpenMP spin the module sets for its threads."""
import os
import pathlib
import re
import subprocess
import sys
import threading
import time

import numpy as np

import tierjit


def test_threads_share_one_session(demo_model, demo_ref):
    x = np.load(demo_ref / "input_x.npy")
    expected = np.load(demo_ref / "output_0.npy")
    sess = tierjit.InferenceSession(demo_model)
    errors = []

    def worker(k):
        try:
            for i in range(30):
                row = (k + i) % 3
                (y,) = sess.run(None, {"x": x[row:row + 1]})
                np.testing.assert_allclose(y, expected[row:row + 1], rtol=1e-5, atol=1e-5)
        except Exception as e:  # reported below: an assert in a thread does not fail the test
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_run_releases_the_gil(demo_model):
    # With a 10 s switch interval, a waiting thread only gets the GIL when its holder releases it.
    # The counter thread advances many times during run() only if run() releases the GIL while
    # the model runs (measured: ~100 per run); numpy's own short GIL releases (copying the output)
    # allow about one step per run when tierjit holds the GIL. On a loaded machine the counter
    # may get few wake-ups in one run, so up to 30 runs are tried and one reaching 10 steps is
    # enough; if run() held the GIL, none would (each stays at about one).
    sess = tierjit.InferenceSession(demo_model)
    x = np.random.default_rng(0).standard_normal((20000, 64)).astype(np.float32)
    sess.run(None, {"x": x})  # warm-up
    count = [0]
    stop = threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1
            time.sleep(0)

    old = sys.getswitchinterval()
    thread = threading.Thread(target=counter)
    thread.start()
    try:
        time.sleep(0.05)
        sys.setswitchinterval(10.0)
        time.sleep(0.01)  # let the counter run before the window opens
        deltas = []
        for _ in range(30):
            before = count[0]
            sess.run(None, {"x": x})
            deltas.append(count[0] - before)
            if deltas[-1] >= 10:
                break
    finally:
        sys.setswitchinterval(old)
        stop.set()
        thread.join()
    assert max(deltas) >= 10, deltas


def _spin_after_import(extra_env):
    """GOMP_SPINCOUNT in a fresh interpreter after `import tierjit`, or None when unset."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(extra_env)
    # The child finds tierjit where this process found it.
    pkg_root = str(pathlib.Path(tierjit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    code = "import os, tierjit; print(os.environ.get('GOMP_SPINCOUNT'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout.strip()
    return None if out == "None" else out


def test_import_sets_the_serving_spin_unless_the_user_chose():
    # The value the CLI re-executes with (kServingSpinCount, src/support/serving_defaults.h).
    header = pathlib.Path(__file__).resolve().parents[2] / "src/support/serving_defaults.h"
    cli = re.search(r'kServingSpinCount = "(\d+)"', header.read_text()).group(1)
    assert _spin_after_import({}) == cli == "10000"
    assert _spin_after_import({"GOMP_SPINCOUNT": "77"}) == "77"
    assert _spin_after_import({"OMP_WAIT_POLICY": "passive"}) is None
