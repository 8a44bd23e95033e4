"""An ONNX Runtime script (ort_script.py) runs on tierjit with only its import line changed."""
import os
import pathlib
import subprocess
import sys

import tierjit

HERE = pathlib.Path(__file__).resolve().parent
ORT_IMPORT = "import onnxruntime as ort"


def run_script(path, demo_model, demo_ref):
    env = dict(os.environ)
    # The child finds tierjit where this process found it.
    pkg_root = str(pathlib.Path(tierjit.__file__).resolve().parents[1])
    env["PYTHONPATH"] = pkg_root + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, str(path), demo_model, str(demo_ref)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_ort_script_runs_with_only_the_import_changed(tmp_path, demo_model, demo_ref):
    lines = (HERE / "ort_script.py").read_text().splitlines(keepends=True)
    assert sum(line.strip() == ORT_IMPORT for line in lines) == 1
    changed = ["import tierjit as ort\n" if line.strip() == ORT_IMPORT else line for line in lines]
    diff = [(a, b) for a, b in zip(lines, changed) if a != b]
    assert diff == [(ORT_IMPORT + "\n", "import tierjit as ort\n")]
    script = tmp_path / "tierjit_script.py"
    script.write_text("".join(changed))
    result = run_script(script, demo_model, demo_ref)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "input x ['N', 64] tensor(float) outputs ['logits']" in result.stdout
    assert "wrong dtype rejected: InvalidArgument" in result.stdout
    assert "provider CPUExecutionProvider device CPU" in result.stdout
