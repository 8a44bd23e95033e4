"""bench/peers: naming runs by a model.onnx's folder, reading ONNX TensorProto files without the
onnx package (tensor_pb.py), checking outputs against a folder's test_data_set_* (verify.py, and
run_one.py --verify end to end with tierjit on the demo model), and report.py's per-shape rows for
every shape with at least 20 calls and its pass/fail notes on the test data.
"""
import json
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest

from conftest import SOURCE_DIR

PEERS = SOURCE_DIR / "bench" / "peers"
sys.path.insert(0, str(PEERS))
import compare  # noqa: E402
import report  # noqa: E402
import run_one  # noqa: E402
import tensor_pb  # noqa: E402
import verify  # noqa: E402


def _varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _field(number, wire, payload):
    key = _varint(number << 3 | wire)
    return key + (_varint(len(payload)) + payload if wire == 2 else payload)


def tensor_bytes(arr, raw=True):
    """A serialized TensorProto of float32 / int64 `arr` (raw_data, or the typed fields)."""
    code = {np.dtype("float32"): 1, np.dtype("int64"): 7}[arr.dtype]
    out = _field(1, 2, b"".join(_varint(d) for d in arr.shape)) + _field(2, 0, _varint(code))
    if raw:
        return out + _field(9, 2, arr.astype(arr.dtype.newbyteorder("<")).tobytes())
    if code == 1:
        return out + _field(4, 2, struct.pack(f"<{arr.size}f", *arr.ravel()))
    return out + _field(7, 2, b"".join(_varint(int(v)) for v in arr.ravel()))


def test_model_name():
    assert run_one.model_name("/x/models/mlp.onnx") == "mlp"
    assert run_one.model_name("../shared/models-extra/efficientnet_b0/model.onnx") == "efficientnet_b0"
    assert run_one.model_name("/a/b/distilbert_tiny/model.onnx") == "distilbert_tiny"


def test_tensor_pb_raw_and_typed_fields():
    a = np.arange(-3, 9, dtype=np.float32).reshape(3, 4) / 4
    for raw in (True, False):
        got = tensor_pb.parse_tensor(np, tensor_bytes(a, raw))
        assert got.dtype == np.float32 and np.array_equal(got, a)
    i = np.array([[-5, 0, 2**40]], dtype=np.int64)
    for raw in (True, False):
        got = tensor_pb.parse_tensor(np, tensor_bytes(i, raw))
        assert got.dtype == np.int64 and np.array_equal(got, i)
    scalar = tensor_pb.parse_tensor(np, tensor_bytes(np.array(2.5, dtype=np.float32)))
    assert scalar.shape == () and scalar == 2.5
    with pytest.raises(ValueError, match="truncated"):
        tensor_pb.parse_tensor(np, tensor_bytes(a)[:-4])  # the message cut short
    short = _field(1, 2, _varint(3) + _varint(4)) + _field(2, 0, _varint(1)) + \
        _field(9, 2, np.zeros(11, "<f4").tobytes())
    with pytest.raises(ValueError, match="11 values for dims"):
        tensor_pb.parse_tensor(np, short)
    with pytest.raises(ValueError, match="string"):
        tensor_pb.parse_tensor(np, _field(2, 0, _varint(8)) + _field(6, 2, b"abc"))


def write_test_data(folder, sets):
    """sets: [(inputs, outputs)] -> folder/test_data_set_N/{input,output}_K.pb"""
    for n, (ins, outs) in enumerate(sets):
        d = folder / f"test_data_set_{n}"
        d.mkdir(parents=True)
        for k, a in enumerate(ins):
            (d / f"input_{k}.pb").write_bytes(tensor_bytes(a))
        for k, a in enumerate(outs):
            (d / f"output_{k}.pb").write_bytes(tensor_bytes(a))


def test_check_test_data_pass_fail_and_errors(tmp_path):
    model = tmp_path / "m" / "model.onnx"
    model.parent.mkdir()
    model.write_bytes(b"")
    assert verify.check_test_data(np, str(model), None, 1, lambda a: a) is None  # no folders
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    want = 2 * x + 100
    off = want.copy()
    off[1, 2] += 1e-3  # within the tolerance: 1e-5 + 1e-3 * 102 ~ 0.1
    worse = want.copy()
    worse[0, 1] = 0.0  # the model gives 98.8 there
    nan = np.array([np.nan, 1.0], dtype=np.float32)
    write_test_data(model.parent, [([x], [want]), ([x], [off]), ([x], [worse]), ([nan], [nan]),
                                   ([x, x], [want])])
    (model.parent / "test_data_set_10").mkdir()  # sorted by number: set 10 comes last, no files

    def run(arrs):
        return [2 * arrs[0] + 100 if arrs[0].shape == (2, 3) else arrs[0]]
    r = verify.check_test_data(np, str(model), run, 1, lambda a: a)
    assert r["sets"] == 6 and not r["ok"]
    assert len(r["failed"]) == 3, r["failed"]
    assert r["failed"][0].startswith("test_data_set_2: output 0: 1 of 6 elements differ")
    assert "(got 98.8, expected 0)" in r["failed"][0]
    assert r["failed"][1] == "test_data_set_4: 2 inputs, the model takes 1"
    assert r["failed"][2] == "test_data_set_10: 0 inputs, the model takes 1"
    assert r["max_abs_diff"] == pytest.approx(98.8, rel=1e-6)
    # A runner that raises is a failure of that set, not of the check.
    def broken(arrs):
        raise RuntimeError("kernel\nexploded")
    r = verify.check_test_data(np, str(model), broken, 1, lambda a: a)
    assert not r["ok"] and r["failed"][0] == "test_data_set_0: RuntimeError: kernel exploded"


def test_compare_infinities_and_tolerance():
    f = lambda *v: np.array(v, dtype=np.float32)  # noqa: E731
    assert verify._compare(np, f(np.inf, np.nan), f(np.inf, np.nan))[1] is None
    assert verify._compare(np, f(1.0), f(np.inf))[1] is not None
    assert verify._compare(np, f(-np.inf), f(np.inf))[1] is not None
    assert verify._compare(np, f(np.nan), f(1.0))[1] is not None
    assert verify._compare(np, f(1e-5), f(0.0))[1] is None           # atol 1e-5
    assert verify._compare(np, f(3e-5), f(0.0))[1] is not None
    assert verify._compare(np, f(1000.9), f(1000.0))[1] is None       # rtol 1e-3 * 1000 = 1
    assert verify._compare(np, f(1001.2), f(1000.0))[1] is not None
    assert verify._compare(np, f(1, 2), f(1, 2, 3))[1] == "shape [2], expected [3]"


def record(system, model, trace, shapes, lat, idx, set_name="long", td=None):
    r = {"set": set_name, "rep": 0, "system": system, "model": model, "trace": trace,
         "n_requests": len(lat), "session_create_ms": 1.0, "total_wall_ms": sum(lat),
         "first_run_ms": lat[0], "shapes": shapes, "latencies_ms": lat, "request_shape_index": idx}
    if td is not None:
        r["verify"] = {"test_data": td}
    return r


def test_report_rows_for_every_shape_with_20_calls_and_test_data():
    # Shapes: x=64x256 (25 calls: batch 64 used to be left out for mlp), x=1x256 (20), x=2x256 (19).
    idx = [0] * 25 + [1] * 20 + [2] * 19
    lat = [1.0] * len(idx)
    shapes = [{"shape": s, "count": idx.count(i)} for i, s in enumerate(["x=64x256", "x=1x256", "x=2x256"])]
    good = {"sets": 3, "ok": True, "max_abs_diff": 2e-6, "failed": []}
    bad = {"sets": 3, "ok": False, "max_abs_diff": 0.5, "failed": ["test_data_set_1: output 0: 4 of 10 differ"]}
    recs = [record("tierjit", "mlp", "mlp.zipf", shapes, lat, idx, "short", good),
            record("onnxruntime", "mlp", "mlp.zipf", shapes, lat, idx, "short", bad)]
    text = report.render(recs)
    assert "`x=64x256` | 25 |" in text and "`x=1x256` | 20 |" in text
    assert "`x=2x256`" not in text
    assert "Steady state per shape" in text  # short traces get the table too
    line = next(l for l in text.splitlines() if "test_data_set_*" in l and "mlp / mlp.zipf" in l)
    assert "`tierjit` pass (1 runs" in line
    assert "`onnxruntime` **FAIL** in 1 of 1 runs (test_data_set_1: output 0: 4 of 10 differ)" in line
    assert compare.test_data_summary(recs[0]) == ", test data pass (3 sets, max abs diff 2e-06)"
    assert compare.test_data_summary(recs[1]).startswith(", test data FAIL (test_data_set_1")
    assert compare.test_data_summary({"verify": {"test_data": None}}) == ""


def test_run_one_names_folder_and_checks_test_data(tmp_path, demo_model, demo_ref):
    folder = tmp_path / "demo_folder"
    folder.mkdir()
    shutil.copy(demo_model, folder / "model.onnx")
    x = np.load(demo_ref / "input_x.npy")
    y = np.load(demo_ref / "output_0.npy")
    y_bad = y.copy()
    y_bad.flat[3] += 0.5
    write_test_data(folder, [([x], [y]), ([x], [y_bad])])
    trace = tmp_path / "t.txt"
    trace.write_text("x=1x64\nx=2x64\n")
    p = subprocess.run([sys.executable, str(PEERS / "run_one.py"), "tierjit", str(folder / "model.onnx"),
                        str(trace), "--threads", "1", "--verify"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr  # a failed check never fails the run
    res = json.loads(p.stdout.strip().splitlines()[-1])
    assert res["model"] == "demo_folder"
    td = res["verify"]["test_data"]
    assert td["sets"] == 2 and not td["ok"]
    assert len(td["failed"]) == 1 and td["failed"][0].startswith("test_data_set_1: output 0: 1 of ")
    assert td["max_abs_diff"] == pytest.approx(0.5, abs=1e-4)  # float32 rounding of y + 0.5
