"""tierjit.InferenceSession against ONNX Runtime's Python API: results on the demo model,
metadata, output selection, feed conversion of every dtype, options, providers and errors."""
import os
import pathlib

import numpy as np
import pytest

import tierjit


def load_demo_ref(ref_dir):
    return np.load(ref_dir / "input_x.npy"), np.load(ref_dir / "output_0.npy")


# --- results ----------------------------------------------------------------------------------

def test_demo_model_matches_reference(demo_model, demo_ref):
    x, expected = load_demo_ref(demo_ref)
    sess = tierjit.InferenceSession(demo_model, providers=["CPUExecutionProvider"])
    (logits,) = sess.run(None, {"x": x})
    assert isinstance(logits, np.ndarray)
    assert logits.dtype == np.float32 and logits.shape == (3, 10)
    np.testing.assert_allclose(logits, expected, rtol=1e-5, atol=1e-5)


def test_symbolic_batch_dim_runs_other_sizes(demo_model, demo_ref):
    x, expected = load_demo_ref(demo_ref)
    sess = tierjit.InferenceSession(demo_model)
    (one,) = sess.run(["logits"], {"x": x[1:2]})
    np.testing.assert_allclose(one, expected[1:2], rtol=1e-5, atol=1e-5)
    (none,) = sess.run(["logits"], {"x": x[:0]})
    assert none.shape == (0, 10)


def test_non_contiguous_feed_is_made_contiguous(demo_model, demo_ref):
    x, expected = load_demo_ref(demo_ref)
    wide = np.zeros((3, 128), np.float32)
    wide[:, ::2] = x
    strided = wide[:, ::2]
    assert not strided.flags.c_contiguous
    (out,) = tierjit.InferenceSession(demo_model).run(None, {"x": strided})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    fortran = np.asfortranarray(x)
    (out,) = tierjit.InferenceSession(demo_model).run(None, {"x": fortran})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_list_feed_converted_to_declared_dtype(demo_model, demo_ref):
    # ONNX Runtime converts a non-array feed to the input's declared dtype (float here).
    x, expected = load_demo_ref(demo_ref)
    (out,) = tierjit.InferenceSession(demo_model).run(None, {"x": x.astype(np.float64).tolist()})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_outputs_are_independent_copies(demo_model, demo_ref):
    x, _ = load_demo_ref(demo_ref)
    sess = tierjit.InferenceSession(demo_model)
    (a,) = sess.run(None, {"x": x})
    a[:] = 0  # writable, like ONNX Runtime's outputs
    (b,) = sess.run(None, {"x": x})
    assert np.abs(b).max() > 0
    assert not np.shares_memory(a, b)


def test_feeds_are_read_in_place_and_never_written(demo_model, demo_ref):
    # Aligned C-contiguous feeds are borrowed, not copied (as ONNX Runtime reads them); unaligned
    # ones are copied. Either way the feed is unchanged and the results equal the reference.
    x, expected = load_demo_ref(demo_ref)
    sess = tierjit.InferenceSession(demo_model)
    before = x.copy()
    (out,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(x, before)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    raw = bytearray(x.nbytes + 1)
    unaligned = np.frombuffer(raw, dtype=np.float32, count=x.size, offset=1).reshape(x.shape)
    assert not unaligned.flags.aligned
    unaligned[...] = x  # numpy writes through the unaligned view
    (out,) = sess.run(None, {"x": unaligned})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    readonly = x.copy()
    readonly.flags.writeable = False
    (out,) = sess.run(None, {"x": readonly})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_outputs_never_alias_feeds_constants_or_each_other(data_dir):
    # Outputs are handed to numpy without a copy only when nothing else holds their bytes: an
    # Identity of a feed, of an initializer, and two outputs of one value are copies.
    sess = tierjit.InferenceSession(str(data_dir / "shared_out.onnx"))
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    for _ in range(2):  # the second call through the plan the first one made
        same, w, y, y2, _ = sess.run(None, {"x": x})
        assert not np.shares_memory(same, x)
        assert not np.shares_memory(y, y2)
        np.testing.assert_array_equal(same, x)
        np.testing.assert_array_equal(w, [1, 2, 3, 4])
        np.testing.assert_array_equal(y, x + w)
        np.testing.assert_array_equal(y2, y)
        same[...] = -1
        w[...] = -1
        y[...] = -1
        np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32).reshape(2, 4))
        np.testing.assert_array_equal(y2, x + np.array([1, 2, 3, 4], np.float32))
    (w_again,) = sess.run(["w_out"], {"x": x})
    np.testing.assert_array_equal(w_again, [1, 2, 3, 4])


def test_a_slice_output_does_not_keep_its_whole_buffer(data_dir):
    # y_row = Slice(Relu(x + w))[0:1]: a view of the Relu result in tier 0. Handed over without a copy
    # it would keep all of x's size alive per returned row (a tester's 20 rows of a 4096 x 4096
    # Relu: +1.3 GiB); it is copied into an array of its own size.
    sess = tierjit.InferenceSession(str(data_dir / "shared_out.onnx"))
    x = np.arange(4096 * 4, dtype=np.float32).reshape(4096, 4) - 100
    row = sess.run(["y_row"], {"x": x})[0]
    np.testing.assert_array_equal(row, np.maximum(x[:1] + np.array([1, 2, 3, 4], np.float32), 0))
    assert row.base is None  # a copy owning its 16 bytes, not the Relu result's 64 KiB


def test_outputs_outlive_the_session(demo_model, demo_ref):
    # A zero-copy output keeps its own bytes: valid after the session and later calls are gone.
    x, expected = load_demo_ref(demo_ref)
    sess = tierjit.InferenceSession(demo_model)
    outs = [sess.run(None, {"x": x})[0] for _ in range(3)]
    assert all(o.base is not None and o.flags.writeable for o in outs)  # handed over, not copied
    del sess
    import gc
    gc.collect()
    for out in outs:
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_model_given_as_bytes_and_pathlike(demo_model, demo_ref):
    x, expected = load_demo_ref(demo_ref)
    data = pathlib.Path(demo_model).read_bytes()
    (out,) = tierjit.InferenceSession(data).run(None, {"x": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    (out,) = tierjit.InferenceSession(pathlib.Path(demo_model)).run(None, {"x": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_model_given_as_bytes_errors_name_model_bytes(demo_model, demo_ref):
    # The bytes are loaded from memory (never a temporary file): errors at load and at run name
    # "<model bytes>"; the exception class stays; the session goes on serving.
    with pytest.raises(tierjit.InvalidModel) as info:
        tierjit.InferenceSession(b"\x00\x01 this is not a model")
    assert str(info.value).startswith("<model bytes>: ") and "tierjit-model-" not in str(info.value)
    assert info.value.code == "InvalidModel"
    sess = tierjit.InferenceSession(pathlib.Path(demo_model).read_bytes())
    with pytest.raises(tierjit.InvalidArgument) as info:
        sess.run(None, {"x": np.zeros((2, 63), np.float32)})
    assert "<model bytes>" in str(info.value) and "tierjit-model-" not in str(info.value)
    assert isinstance(info.value, ValueError)
    x, expected = load_demo_ref(demo_ref)
    (out,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def _pb_varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _pb(field, value):
    """One protobuf field: an int (varint) or bytes/str (length-delimited)."""
    if isinstance(value, int):
        return _pb_varint(field << 3) + _pb_varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _pb_varint(field << 3 | 2) + _pb_varint(len(data)) + data


def external_data_model(location, n=3):
    """ModelProto bytes (written field by field: the tests do not need the onnx package) of
    y = w + w, w a float32 [n] initializer stored in external data file `location`."""
    tensor = (_pb(1, n) + _pb(2, 1) + _pb(8, "w") + _pb(13, _pb(1, "location") + _pb(2, location))
              + _pb(14, 1))  # dims, FLOAT, name, external_data {location}, data_location EXTERNAL
    node = _pb(1, "w") + _pb(1, "w") + _pb(2, "y") + _pb(4, "Add")
    y_type = _pb(1, _pb(1, 1) + _pb(2, _pb(1, _pb(1, n))))  # tensor_type {FLOAT, shape [n]}
    graph = _pb(1, node) + _pb(2, "g") + _pb(5, tensor) + _pb(12, _pb(1, "y") + _pb(2, y_type))
    return _pb(1, 8) + _pb(7, graph) + _pb(8, _pb(1, "") + _pb(2, 17))


def test_model_bytes_external_data_only_from_a_named_folder(tmp_path):
    # A model given as bytes has no folder: its external data is refused unless the caller names
    # one (tierjit's external_data_folder, or ONNX Runtime's config entry). It used to be read
    # relative to the temporary directory, where any process can plant files.
    w = np.array([1.5, -2.0, 4.0], np.float32)
    planted = f"tierjit_planted_{os.getpid()}.bin"
    import tempfile
    planted_path = pathlib.Path(tempfile.gettempdir()) / planted
    planted_path.write_bytes(w.tobytes())
    try:
        with pytest.raises(tierjit.InvalidModel,
                           match=f"^<model bytes>: initializer 'w': external data file '{planted}' "
                                 "needs a folder"):
            tierjit.InferenceSession(external_data_model(planted))
    finally:
        planted_path.unlink()
    (tmp_path / "w.bin").write_bytes(w.tobytes())
    data = external_data_model("w.bin")
    with pytest.raises(tierjit.InvalidModel, match="session.model_external_initializers_file_folder_path"):
        tierjit.InferenceSession(data)
    so = tierjit.SessionOptions(external_data_folder=str(tmp_path))
    (y,) = tierjit.InferenceSession(data, sess_options=so).run(None, {})
    np.testing.assert_array_equal(y, w + w)
    ort = tierjit.SessionOptions()
    key = "session.model_external_initializers_file_folder_path"
    ort.add_session_config_entry(key, str(tmp_path))
    assert ort.get_session_config_entry(key) == str(tmp_path)
    assert ort.external_data_folder == str(tmp_path)
    (y,) = tierjit.InferenceSession(bytearray(data), sess_options=ort).run(None, {})
    np.testing.assert_array_equal(y, w + w)
    # The named folder confines the data as a model's own folder does: no link out of it.
    os.symlink("/etc", tmp_path / "etc_link")
    with pytest.raises(tierjit.InvalidModel, match="resolves to '/etc/passwd', outside the model's folder"):
        tierjit.InferenceSession(external_data_model("etc_link/passwd"), sess_options=so)


def test_model_path_external_data_confined_to_its_folder(tmp_path):
    w = np.array([0.5, 1.0, -3.0], np.float32)
    (tmp_path / "w.bin").write_bytes(w.tobytes())
    (tmp_path / "m.onnx").write_bytes(external_data_model("w.bin"))
    (y,) = tierjit.InferenceSession(str(tmp_path / "m.onnx")).run(None, {})
    np.testing.assert_array_equal(y, w + w)
    os.symlink("/etc", tmp_path / "etc_link")
    (tmp_path / "leak.onnx").write_bytes(external_data_model("etc_link/passwd"))
    with pytest.raises(tierjit.InvalidModel,
                       match=r"leak.onnx: initializer 'w': external data path 'etc_link/passwd' "
                             r"resolves to '/etc/passwd', outside the model's folder"):
        tierjit.InferenceSession(str(tmp_path / "leak.onnx"))


# --- metadata -----------------------------------------------------------------------------------

def test_inputs_and_outputs_metadata(demo_model):
    sess = tierjit.InferenceSession(demo_model)
    (inp,) = sess.get_inputs()
    (out,) = sess.get_outputs()
    assert (inp.name, inp.shape, inp.type) == ("x", ["N", 64], "tensor(float)")
    assert (out.name, out.shape, out.type) == ("logits", ["N", 10], "tensor(float)")
    assert isinstance(inp.shape[1], int)
    assert repr(inp) == "NodeArg(name='x', type='tensor(float)', shape=['N', 64])"
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert tierjit.get_available_providers() == ["CPUExecutionProvider"]


def test_metadata_of_every_dtype_and_unknown_dim(data_dir):
    sess = tierjit.InferenceSession(str(data_dir / "identity_all.onnx"))
    types = {i.name: i.type for i in sess.get_inputs()}
    assert types["in_float32"] == "tensor(float)"
    assert types["in_float64"] == "tensor(double)"
    assert types["in_float16"] == "tensor(float16)"
    assert types["in_uint64"] == "tensor(uint64)"
    assert types["in_bool"] == "tensor(bool)"
    assert types["in_string"] == "tensor(string)"
    shapes = {i.name: i.shape for i in sess.get_inputs()}
    assert shapes["in_int8"] == ["N", 2]
    assert shapes["u"] == [None]  # an unnamed unknown dim, as ONNX Runtime shows it


# --- feeds of every dtype -----------------------------------------------------------------------

NUMERIC = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64", "bool"]


def identity_feeds(n):
    feeds = {}
    for name in NUMERIC:
        values = np.arange(n * 2).reshape(n, 2) % 5
        if name == "bool":
            feeds[f"in_{name}"] = values % 2 == 1
        elif name.startswith("int"):
            feeds[f"in_{name}"] = (values - 2).astype(name)  # negatives too
        else:
            feeds[f"in_{name}"] = values.astype(name)
    feeds["in_string"] = np.array([[f"s{i}", "é"] for i in range(n)])
    feeds["u"] = np.array([1.5, -2.0, 0.0], np.float32)
    return feeds


def test_every_dtype_round_trips(data_dir):
    sess = tierjit.InferenceSession(str(data_dir / "identity_all.onnx"))
    feeds = identity_feeds(3)
    names = [f"out_{n}" for n in NUMERIC] + ["out_string", "neg_u"]
    results = dict(zip(names, sess.run(names, feeds)))
    for name in NUMERIC:
        got = results[f"out_{name}"]
        assert got.dtype == np.dtype(name), name
        np.testing.assert_array_equal(got, feeds[f"in_{name}"])
    assert results["out_string"].dtype == object
    assert results["out_string"].tolist() == feeds["in_string"].tolist()
    np.testing.assert_array_equal(results["neg_u"], np.array([-1.5, 2.0, -0.0], np.float32))


def test_string_feed_as_object_and_bytes(data_dir):
    sess = tierjit.InferenceSession(str(data_dir / "identity_all.onnx"))
    feeds = identity_feeds(1)
    feeds["in_string"] = np.array([["a", "bc"]], dtype=object)
    (out,) = sess.run(["out_string"], feeds)
    assert out.tolist() == [["a", "bc"]]
    feeds["in_string"] = np.array([[b"x", b"yz"]])
    (out,) = sess.run(["out_string"], feeds)
    assert out.tolist() == [["x", "yz"]]
    feeds["in_string"] = np.array([["a", 3]], dtype=object)
    with pytest.raises(TypeError, match="in_string"):
        sess.run(["out_string"], feeds)


def test_big_endian_feed_is_converted(demo_model, demo_ref):
    x, expected = load_demo_ref(demo_ref)
    (out,) = tierjit.InferenceSession(demo_model).run(None, {"x": x.astype(">f4")})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# --- output selection ---------------------------------------------------------------------------

def test_output_names_subset_and_order(data_dir):
    sess = tierjit.InferenceSession(str(data_dir / "multi_out.onnx"))
    assert [o.name for o in sess.get_outputs()] == ["sum", "neg", "sq"]
    a = np.array([[1, -2, 3], [0.5, 4, -1]], np.float32)
    s, n, q = sess.run(None, {"a": a})
    np.testing.assert_array_equal(s, a + a)
    np.testing.assert_array_equal(n, -a)
    np.testing.assert_array_equal(q, a * a)
    q2, s2 = sess.run(["sq", "sum"], {"a": a})
    np.testing.assert_array_equal(q2, a * a)
    np.testing.assert_array_equal(s2, a + a)
    (n2,) = sess.run(("neg",), {"a": a})
    np.testing.assert_array_equal(n2, -a)
    assert len(sess.run([], {"a": a})) == 3  # [] means every output, as in ONNX Runtime


# --- options and providers ----------------------------------------------------------------------

def test_session_options_fields(demo_model, demo_ref):
    so = tierjit.SessionOptions()
    assert so.intra_op_threads == 1
    assert so.memory_limit_bytes == 16 << 30
    so.intra_op_num_threads = 2  # ONNX Runtime's name for intra_op_threads
    assert so.intra_op_threads == 2
    so.inter_op_num_threads = 4  # accepted, unused
    so.graph_optimization_level = tierjit.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = tierjit.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    assert so.inter_op_num_threads == 4
    with pytest.raises(AttributeError, match="no attribute 'intra_op_thread'"):
        so.intra_op_thread = 3  # a typo is an error, not a silent no-op
    with pytest.raises(TypeError):
        so.intra_op_threads = "2"
    with pytest.raises(ValueError):
        so.memory_limit_bytes = -1
    with pytest.raises(ValueError, match="= 100000000000000000000 is too large"):
        so.intra_op_num_threads = 10**20  # beyond the C++ int: one line, not pybind's TypeError
    with pytest.raises(tierjit.InvalidArgument, match="compile_threads must be 0 .default. to 256"):
        tierjit.InferenceSession(demo_model, sess_options=tierjit.SessionOptions(compile_threads=100000))
    # slower_margin < 0 means "never remove slower code" (C++ accepts it, so Python does too).
    assert tierjit.SessionOptions(slower_margin=-1).slower_margin == -1
    with pytest.raises(ValueError, match="whole_plan_calls must be >= 0"):
        tierjit.SessionOptions(whole_plan_calls=-1)
    with pytest.raises(tierjit.InvalidArgument, match="whole_plan_max_us must be a number >= 0, got nan"):
        tierjit.InferenceSession(demo_model, sess_options=tierjit.SessionOptions(whole_plan_max_us=float("nan")))
    with pytest.raises(tierjit.InvalidArgument, match="benefit_horizon_windows must be a finite number >= 0, got nan"):
        tierjit.InferenceSession(demo_model, sess_options=tierjit.SessionOptions(benefit_horizon_windows=float("nan")))
    seeded = tierjit.SessionOptions(speedup_seeds=[("matmul_epilogue", 1, 117)])
    assert seeded.speedup_seeds == [("matmul_epilogue", 1, 117.0)]
    tierjit.InferenceSession(demo_model, sess_options=seeded)
    with pytest.raises(TypeError, match="speedup_seeds must be a list of"):
        seeded.speedup_seeds = [("matmul_epilogue", 1)]
    with pytest.raises(ValueError, match=r"speedup_seeds\[0\]: from_tier must be 0, 1 or 2, got 100000000000000000000"):
        seeded.speedup_seeds = [("elementwise", 10**20, 1.5)]
    with pytest.raises(ValueError, match=r"speedup_seeds\[1\]: speedup 1000.* is too large for a float"):
        seeded.speedup_seeds = [("conv", 0, 2.0), ("reduction", 1, 10**400)]
    with pytest.raises(ValueError, match=r"speedup_seeds\[0\]: kind .* is not valid UTF-8"):
        seeded.speedup_seeds = [("\udcff", 1, 2.0)]
    assert seeded.speedup_seeds == [("matmul_epilogue", 1, 117.0)]  # unchanged by the refusals
    with pytest.raises(tierjit.InvalidArgument, match=r'speedup_seeds\[0\]: kind "Gemm" is not'):
        tierjit.InferenceSession(demo_model, sess_options=tierjit.SessionOptions(speedup_seeds=[("Gemm", 1, 2.0)]))
    x, expected = load_demo_ref(demo_ref)
    sess = tierjit.InferenceSession(demo_model, sess_options=so)
    assert sess.get_session_options() is so
    (out,) = sess.run(None, {"x": x})
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    assert "intra_op_threads=2" in repr(tierjit.SessionOptions(intra_op_threads=2))


def test_every_core_option_is_exposed():
    # CoreSessionOptions binds tierjit::SessionOptions field by field (python/tierjit_py.cc).
    so = tierjit.SessionOptions()
    for field in tierjit._tierjit.CoreSessionOptions._fields:
        setattr(so, field, getattr(so, field))
    assert set(tierjit._tierjit.CoreSessionOptions._fields) >= {"intra_op_threads",
                                                               "memory_limit_bytes"}


def test_memory_limit_is_enforced(demo_model):
    so = tierjit.SessionOptions(memory_limit_bytes=64)  # the weights are bigger than 64 bytes
    with pytest.raises(tierjit.ResourceExhausted) as info:
        tierjit.InferenceSession(demo_model, sess_options=so)
    assert "demo_mlp.onnx" in str(info.value)


def test_every_option_is_range_checked_by_the_cpp_check():
    # The one range check (tierjit::validate in C++) refuses each bad value when it is set, with
    # the C++ message; NaN is refused wherever a number is expected.
    nan, inf = float("nan"), float("inf")
    bad = [
        ("theta_spec", 2, "theta_spec must be a number in [0, 1], got 2"),
        ("theta_spec", nan, "theta_spec must be a number in [0, 1], got nan"),
        ("demotion_epsilon", 5, "demotion_epsilon must be a number in [0, 1], got 5"),
        ("demotion_epsilon", -0.1, "demotion_epsilon must be a number in [0, 1], got -0.1"),
        ("theta0", nan, "theta0 must be a finite number >= 0 (calls), got nan"),
        ("theta0", inf, "theta0 must be a finite number >= 0 (calls), got inf"),
        ("gamma", nan, "gamma must be a finite number >= 1, got nan"),
        ("gamma", 0.5, "gamma must be a finite number >= 1, got 0.5"),
        ("version_cap", 0, "version_cap must be >= 1, got 0"),
        ("max_plans", 0, "max_plans must be >= 1, got 0"),
        ("memory_limit_bytes", 0, "memory_limit_bytes must be >= 1 (bytes), got 0"),
        ("arena_limit_bytes", -1, "arena_limit_bytes must be >= 0 (bytes; 0 = no limit), got -1"),
        ("pinned_tier", 4, "pinned_tier must be 1, 2 or 3, got 4"),
        ("slower_margin", nan, "slower_margin must be a number (negative: never remove), got nan"),
        ("whole_plan_calls", -1, "whole_plan_calls must be >= 0 (0 disables), got -1"),
        ("intra_op_num_threads", 5000, "intra_op_threads must be 0 (all cores) to 1024, got 5000"),
    ]
    so = tierjit.SessionOptions()
    for field, value, message in bad:
        with pytest.raises(tierjit.InvalidArgument) as info:
            setattr(so, field, value)
        assert str(info.value) == "SessionOptions." + message, field
        with pytest.raises(ValueError):  # InvalidArgument is a ValueError too
            tierjit.SessionOptions(**{field: value})
    assert so.theta_spec == 0.1 and so.gamma == 10  # unchanged by the refusals
    edge = tierjit.SessionOptions(theta_spec=1, demotion_epsilon=0, theta0=0, gamma=1,
                                  slower_margin=-inf, arena_limit_bytes=0)
    assert edge.theta_spec == 1.0


def test_feeds_and_live_intermediates_are_bounded(demo_model):
    # memory_limit_bytes applies to every feed; arena_limit_bytes to the intermediates of a run.
    sess = tierjit.InferenceSession(demo_model, sess_options=tierjit.SessionOptions(
        memory_limit_bytes=1 << 20, mode="interpret-only"))
    with pytest.raises(tierjit.ResourceExhausted, match=r"input 'x': float32\[8192, 64\] is 2097152 "
                                                        r"bytes, over the memory limit of 1048576 bytes"):
        sess.run(None, {"x": np.zeros((8192, 64), np.float32)})
    (y,) = sess.run(None, {"x": np.ones((2, 64), np.float32)})
    assert y.shape == (2, 10)
    sess = tierjit.InferenceSession(demo_model, sess_options=tierjit.SessionOptions(arena_limit_bytes=64 << 10))
    with pytest.raises(tierjit.ResourceExhausted, match=r"signature \(float32\[4096,64\]\).* over the arena "
                                                        r"limit of 65536 bytes"):
        sess.run(None, {"x": np.ones((4096, 64), np.float32)})
    (y,) = sess.run(None, {"x": np.ones((2, 64), np.float32)})
    assert y.shape == (2, 10)


def test_a_feed_too_large_to_copy_is_a_clear_error(demo_model):
    # A non-contiguous feed is copied to C order first; a 2 TiB copy (a broadcast row) cannot be
    # allocated: one line naming the input and the size, and the session goes on serving.
    # (Only where the kernel refuses such an allocation outright: overcommit modes 0 and 2.)
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            mode = f.read().strip()
    except OSError:
        mode = "?"
    if mode not in ("0", "2"):
        pytest.skip(f"vm.overcommit_memory is {mode}: a 2 TiB allocation might succeed")
    sess = tierjit.InferenceSession(demo_model)
    row = np.zeros(64, np.float32)
    huge = np.lib.stride_tricks.as_strided(row, (2**33, 64), (0, 4))
    with pytest.raises(tierjit.ResourceExhausted,
                       match=r"input 'x': .*8589934592x64 array \(2199023255552 bytes\) could not be allocated"):
        sess.run(None, {"x": huge})
    (y,) = sess.run(None, {"x": np.ones((2, 64), np.float32)})
    assert y.shape == (2, 10)


def test_providers(demo_model):
    tierjit.InferenceSession(demo_model, providers=["CPUExecutionProvider"])
    tierjit.InferenceSession(demo_model, providers=[("CPUExecutionProvider", {})])
    tierjit.InferenceSession(demo_model, providers=["CPUExecutionProvider"], provider_options=[{}])
    with pytest.raises(ValueError, match="CUDAExecutionProvider"):
        tierjit.InferenceSession(demo_model, providers=["CUDAExecutionProvider"])
    with pytest.raises(ValueError, match="only CPUExecutionProvider"):
        tierjit.InferenceSession(demo_model, providers=["CPUExecutionProvider", "Foo"])
    with pytest.raises(TypeError):
        tierjit.InferenceSession(demo_model, providers="CPUExecutionProvider")


# --- errors -------------------------------------------------------------------------------------

def test_missing_file(tmp_path):
    path = str(tmp_path / "no_such_model.onnx")
    with pytest.raises(tierjit.TierjitError) as info:
        tierjit.InferenceSession(path)
    assert isinstance(info.value, tierjit.NotFound)
    assert isinstance(info.value, RuntimeError)
    assert path in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.code == "NotFound"


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\x00\x01 this is not a model")
    with pytest.raises(tierjit.InvalidModel) as info:
        tierjit.InferenceSession(str(path))
    assert str(path) in str(info.value)


def test_wrong_dtype_feed(demo_model):
    sess = tierjit.InferenceSession(demo_model)
    with pytest.raises(tierjit.InvalidArgument) as info:
        sess.run(None, {"x": np.zeros((2, 64), np.float64)})
    assert "'x'" in str(info.value) or " x" in str(info.value)
    assert isinstance(info.value, ValueError)  # as ONNX Runtime's feed checks
    with pytest.raises(TypeError, match="complex"):
        sess.run(None, {"x": np.zeros((2, 64), np.complex64)})


def test_wrong_shape_feed(demo_model):
    sess = tierjit.InferenceSession(demo_model)
    with pytest.raises(tierjit.InvalidArgument):
        sess.run(None, {"x": np.zeros((2, 63), np.float32)})
    with pytest.raises(tierjit.InvalidArgument):
        sess.run(None, {"x": np.zeros((64,), np.float32)})


def test_missing_and_unknown_feed(demo_model):
    sess = tierjit.InferenceSession(demo_model)
    with pytest.raises(tierjit.InvalidArgument, match="'x' is missing"):
        sess.run(None, {})
    with pytest.raises(tierjit.InvalidArgument, match="no input 'y'"):
        sess.run(None, {"x": np.zeros((1, 64), np.float32), "y": np.zeros(1, np.float32)})


def test_none_feed_is_named(demo_model):
    sess = tierjit.InferenceSession(demo_model)
    with pytest.raises(tierjit.InvalidArgument, match="input 'x' is None"):
        sess.run(None, {"x": None})
    assert sess.run(None, {"x": np.zeros((1, 64), np.float32)})[0].shape[0] == 1  # still serving


def test_unknown_output_name(demo_model):
    sess = tierjit.InferenceSession(demo_model)
    with pytest.raises(tierjit.InvalidArgument, match="no output 'probs'"):
        sess.run(["probs"], {"x": np.zeros((1, 64), np.float32)})


def test_bad_argument_types(demo_model):
    sess = tierjit.InferenceSession(demo_model)
    with pytest.raises(TypeError):
        sess.run(None, [np.zeros((1, 64), np.float32)])
    with pytest.raises(TypeError):
        sess.run("logits", {"x": np.zeros((1, 64), np.float32)})
    with pytest.raises(TypeError, match=r"output_names must hold output names \(str\), got int 0"):
        sess.run([0], {"x": np.zeros((1, 64), np.float32)})
    with pytest.raises(TypeError):
        sess.run(None, {1: np.zeros((1, 64), np.float32)})
    with pytest.raises(TypeError):
        tierjit.InferenceSession(42)
    with pytest.raises(TypeError):
        tierjit.InferenceSession(demo_model, sess_options={"intra_op_threads": 1})
    with pytest.raises(TypeError):
        tierjit.InferenceSession(demo_model, not_an_option=1)


def test_get_modelmeta_is_a_clear_not_implemented(demo_model):
    with pytest.raises(NotImplementedError, match="metadata"):
        tierjit.InferenceSession(demo_model).get_modelmeta()


def test_version():
    assert tierjit.__version__.count(".") == 2
    assert tierjit.get_version().startswith(tierjit.__version__)
