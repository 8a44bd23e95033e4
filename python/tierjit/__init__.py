"""tierjit: ONNX Runtime's Python API over tierjit, the adaptive tiered JIT for ONNX on CPU.

An ONNX Runtime script runs on tierjit by changing only its import::

    import tierjit as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    (logits,) = sess.run(None, {"x": x})

Everything runs through tierjit::Session (include/tierjit/session.h); the C++ core is the
extension module tierjit._tierjit (python/tierjit_py.cc). See docs/python.md.
"""

import os as _os

# Serving defaults (src/support/serving_defaults.h): libgomp reads its wait policy when it loads
# with the extension below; unless the user chose one, idle OpenMP threads spin 10,000 iterations
# (~0.3 ms, kServingSpinCount in src/support/serving_defaults.h, which gives the measurements)
# and then sleep, instead of libgomp's ~300k-iteration spin (mlp trace 0.15-0.55 s instead of
# 2.5-19 s on a shared 2-core machine) or sleeping at once (a 40-90 us wake per parallel region).
# OMP_WAIT_POLICY=passive suits contended machines.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "10000"


import os

import numpy as np

from . import _tierjit
from ._tierjit import (  # noqa: F401  (re-exported: the exception hierarchy)
    TierjitError,
    InvalidArgument,
    InvalidModel,
    NotFound,
    Unsupported,
    ResourceExhausted,
    InternalError,
    IoError,
)

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "NodeArg", "GraphOptimizationLevel",
    "ExecutionMode", "get_available_providers", "get_all_providers", "get_device", "get_version",
    "TierjitError", "InvalidArgument", "InvalidModel", "NotFound", "Unsupported",
    "ResourceExhausted", "InternalError", "IoError",
]

__version__ = _tierjit.version().split(" ")[0]

_CPU = "CPUExecutionProvider"


def get_version():
    """Full version string, e.g. '0.1.0 (git abc1234)'."""
    return _tierjit.version()


def get_available_providers():
    """ONNX Runtime's list of usable providers: tierjit has one, the CPU."""
    return [_CPU]


def get_all_providers():
    return [_CPU]


def get_device():
    return "CPU"


class GraphOptimizationLevel:
    """ONNX Runtime's enum; accepted by SessionOptions and unused (tierjit always optimizes)."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode:
    """ONNX Runtime's enum; accepted by SessionOptions and unused."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


# ONNX Runtime SessionOptions attributes that tierjit accepts and ignores (name -> default).
_ORT_IGNORED_OPTIONS = {
    "inter_op_num_threads": 0,
    "graph_optimization_level": GraphOptimizationLevel.ORT_ENABLE_ALL,
    "execution_mode": ExecutionMode.ORT_SEQUENTIAL,
    "execution_order": 0,
    "enable_cpu_mem_arena": True,
    "enable_mem_pattern": True,
    "enable_mem_reuse": True,
    "enable_profiling": False,
    "profile_file_prefix": "onnxruntime_profile_",
    "log_severity_level": 2,
    "log_verbosity_level": 0,
    "logid": "",
    "optimized_model_filepath": "",
    "use_deterministic_compute": False,
}


# ONNX Runtime's session config entry naming the external data folder of a model given as bytes.
_ORT_EXTERNAL_FOLDER_KEY = "session.model_external_initializers_file_folder_path"
# Defaults of the core fields: their types decide what each field accepts.
_CORE_DEFAULTS = _tierjit.CoreSessionOptions()


class SessionOptions(_tierjit.CoreSessionOptions):
    """Options of an InferenceSession.

    tierjit's own fields (tierjit::SessionOptions, every field of include/tierjit/session.h):
      intra_op_threads     threads one kernel may use; 0 = all cores (default 1)
      memory_limit_bytes   largest single tensor accepted (model, computed or fed), in bytes
                           (default 16 GiB)
      arena_limit_bytes    largest total of the intermediates alive at once in a run, in bytes;
                           0 = no limit (default 0)
      external_data_folder for a model given as bytes: the folder its external data files are
                           relative to and must lie in, symbolic links resolved; '' (default):
                           such a model's external data is refused (InvalidModel). Ignored for a
                           model given as a path (its own folder). ONNX Runtime's config entry
                           session.model_external_initializers_file_folder_path sets it too.
      mode                 'adaptive' (default), 'interpret-only' (tier 0) or 'pinned-tier'
      pinned_tier          with mode 'pinned-tier': 1, 2 or 3 (default 2)
      synchronous_compilation  adaptive mode: a call that triggers a compile waits (default False)
      verify               check each compiled version against tier 0 on first use (default False)
      compile_threads      background compile threads; 0 = max(1, 0.2 * cores) (default 0)
      theta0, gamma        promotion thresholds theta_i = theta0 * gamma^i (default 2, 10)
      version_cap          compiled versions per region (default 8)
      theta_spec           share of recent calls that earns an exact version (default 0.1)
      code_cache_bytes     bytes of compiled code and plans kept in memory (default 256 MiB)
      max_plans            plans (one per input signature) kept (default 64)
      benefit_horizon_windows  windows of 64 calls a compile is expected to serve, at least (1)
      lindy_horizon        the expected calls grow with the session's age (default True)
      demotion_epsilon     guard-failure rate (0..1) that demotes a region (default 0.3)
      demotion_cold_calls  region calls before an unused specialized version is freed; 0 = never
                           (default 256)
      slower_margin        new code slower than the tier below by more than this fraction is
                           removed (weighed again when the region's calls reach 4^k x
                           their count at its k-th eviction);
                           negative = never (default 0.1)
      whole_plan_calls     calls of a fully compiled plan before it becomes one function;
                           0 = never (default 64)
      whole_plan_max_us    largest per-call time of a plan compiled whole, us (default 2000)
      speedup_seeds        [(kind, from_tier, speedup)]: each replaces the speedup model's default
                           for that kind ('elementwise', 'matmul_epilogue', 'reduction',
                           'recurrent', 'conv', 'conv_pointwise', 'conv_depthwise',
                           'conv_pool')
                           and step (from_tier 0..2 -> the next tier); others keep theirs
                           (default [], docs/runtime.md "Speedup estimates")
      warm_up              run the model once at tier 0 on zeros (symbolic dims 1) when the
                           session is created: weights packed, threads started before the first
                           request; skipped (decision log) when the model fails on it (default
                           True, docs/runtime.md "Warm-up at session creation")
    ONNX Runtime's fields:
      intra_op_num_threads another name for intra_op_threads (note: tierjit's default is 1,
                           ONNX Runtime's is 0 = all cores; set it explicitly when comparing)
      inter_op_num_threads, graph_optimization_level, execution_mode, log_severity_level, ...
                           accepted and unused.
    Every value is range-checked when set by the same check the C++ Session runs
    (tierjit::validate): tierjit.InvalidArgument (a ValueError) with one line naming the field,
    its range and the value.
    Setting any other attribute raises AttributeError (a typo must not pass silently).
    Keyword arguments set fields: SessionOptions(intra_op_threads=2).
    """

    def __init__(self, **fields):
        super().__init__()
        object.__setattr__(self, "_ort", dict(_ORT_IGNORED_OPTIONS))
        object.__setattr__(self, "_config", {})
        for name, value in fields.items():
            setattr(self, name, value)

    @property
    def intra_op_num_threads(self):
        return self.intra_op_threads

    @intra_op_num_threads.setter
    def intra_op_num_threads(self, value):
        self.intra_op_threads = value

    def __getattr__(self, name):  # only called when normal lookup fails
        ort = self.__dict__.get("_ort", {})
        if name in ort:
            return ort[name]
        raise AttributeError(f"tierjit.SessionOptions has no attribute '{name}'")

    def __setattr__(self, name, value):
        if name in _ORT_IGNORED_OPTIONS:
            self._ort[name] = value
        elif name in self._core_fields() or name == "intra_op_num_threads":
            default = getattr(_CORE_DEFAULTS, "intra_op_threads" if name == "intra_op_num_threads" else name)
            if isinstance(default, list):  # speedup_seeds: [(kind, from_tier, speedup)]
                seeds = list(value) if isinstance(value, (list, tuple)) else None
                if seeds is None or not all(
                        isinstance(t, (list, tuple)) and len(t) == 3 and isinstance(t[0], str)
                        and isinstance(t[1], int) and not isinstance(t[1], bool)
                        and isinstance(t[2], (int, float)) and not isinstance(t[2], bool)
                        for t in seeds):
                    raise TypeError(f"SessionOptions.{name} must be a list of (kind: str, "
                                    f"from_tier: int, speedup: float) tuples, got {value!r}")
                for i, t in enumerate(seeds):  # what the C++ side cannot even receive
                    if not 0 <= t[1] <= 2:
                        raise ValueError(f"SessionOptions.{name}[{i}]: from_tier must be 0, 1 or 2, "
                                         f"got {t[1]}")
                    try:
                        float(t[2])
                    except OverflowError:
                        raise ValueError(f"SessionOptions.{name}[{i}]: speedup {t[2]} is too large "
                                         f"for a float") from None
                    try:
                        t[0].encode("utf-8")
                    except UnicodeEncodeError:
                        raise ValueError(f"SessionOptions.{name}[{i}]: kind {t[0]!r} is not valid "
                                         f"UTF-8") from None
                value = [(t[0], t[1], float(t[2])) for t in seeds]
            elif isinstance(default, bool):
                if not isinstance(value, bool):
                    raise TypeError(f"SessionOptions.{name} must be a bool, got {type(value).__name__}")
            elif isinstance(default, str):
                if not isinstance(value, str):
                    raise TypeError(f"SessionOptions.{name} must be a str, got {type(value).__name__}")
            elif isinstance(default, float):
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    raise TypeError(f"SessionOptions.{name} must be a number, got {type(value).__name__}")
                try:
                    value = float(value)
                except OverflowError:
                    raise ValueError(f"SessionOptions.{name} = {value} is too large") from None
            else:
                if not isinstance(value, int) or isinstance(value, bool):
                    raise TypeError(f"SessionOptions.{name} must be an int, got {type(value).__name__}")
            field = "intra_op_threads" if name == "intra_op_num_threads" else name
            probe = _tierjit.CoreSessionOptions()  # the other fields at their (valid) defaults
            try:
                object.__setattr__(probe, field, value)
            except TypeError:  # pybind11's conversion: the value does not fit the C++ field
                raise ValueError(f"SessionOptions.{name} = {value} is too large") from None
            error = _tierjit.options_error(probe)  # the C++ range check (tierjit::validate)
            if error:
                raise InvalidArgument(f"SessionOptions.{error}")
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(
                f"tierjit.SessionOptions has no attribute '{name}' (tierjit fields: "
                f"{', '.join(self._core_fields())}; ONNX Runtime fields accepted: "
                f"intra_op_num_threads, {', '.join(_ORT_IGNORED_OPTIONS)})")

    @staticmethod
    def _core_fields():
        return list(_tierjit.CoreSessionOptions._fields)

    def add_session_config_entry(self, key, value):
        """ONNX Runtime's config entries: stored; session.model_external_initializers_file_folder_path
        sets external_data_folder (the folder of a model given as bytes), the others are unused."""
        self._config[str(key)] = str(value)
        if key == _ORT_EXTERNAL_FOLDER_KEY:
            self.external_data_folder = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise TierjitError(f"SessionOptions: no config entry '{key}'")
        return self._config[key]

    def __repr__(self):
        core = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._core_fields())
        return f"tierjit.SessionOptions({core})"


class RunOptions:
    """ONNX Runtime's RunOptions: accepted by run() and unused."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False

    def add_run_config_entry(self, key, value):
        pass


class NodeArg:
    """An input or output of the model, as ONNX Runtime's NodeArg.

    name: str; type: 'tensor(float)', 'tensor(int64)', ...; shape: a list of ints, the name of
    a symbolic dim as a str, or None for an unnamed unknown dim ([] when the model has no shape).
    """

    __slots__ = ("name", "type", "shape")

    def __init__(self, name, type, shape):
        self.name = name
        self.type = type
        self.shape = shape

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


def _check_providers(providers, provider_options):
    """Accepts ONNX Runtime's provider forms: None, ['CPUExecutionProvider'],
    [('CPUExecutionProvider', {...})]. Anything else is a ValueError."""
    if providers is None:
        return
    if isinstance(providers, str):
        raise TypeError("providers must be a list of provider names, e.g. ['CPUExecutionProvider']")
    for p in providers:
        name = p[0] if isinstance(p, (tuple, list)) and len(p) == 2 else p
        if not isinstance(name, str):
            raise TypeError(f"provider {p!r} is not a name or a (name, options) pair")
        if name != _CPU:
            raise ValueError(
                f"tierjit supports only {_CPU}; '{name}' is not available "
                f"(available: {get_available_providers()})")
    if provider_options is not None and len(provider_options) != len(providers):
        raise ValueError("provider_options must have one dict per provider")


class InferenceSession:
    """ONNX Runtime's InferenceSession on tierjit.

    InferenceSession(path_or_bytes, sess_options=None, providers=None, provider_options=None)
      path_or_bytes: a model path (str or os.PathLike) or the serialized model (bytes,
        bytearray, memoryview; it has no folder: its external data files are read only from
        sess_options.external_data_folder, or ONNX Runtime's config entry
        session.model_external_initializers_file_folder_path, and refused without one).
      sess_options: tierjit.SessionOptions (None = defaults).
      providers: None or a list holding only 'CPUExecutionProvider' (or ('CPUExecutionProvider',
        {...})); any other provider raises ValueError.
    Errors while loading raise tierjit.TierjitError subclasses (NotFound for a missing file,
    InvalidModel, Unsupported, ResourceExhausted) whose message names the file ("<model bytes>"
    for a model given as bytes, at load and at run).
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None,
                 **kwargs):
        unknown = set(kwargs) - {"disabled_optimizers"}
        if unknown:
            raise TypeError(f"InferenceSession got unexpected keyword arguments {sorted(unknown)}")
        _check_providers(providers, provider_options)
        if sess_options is None:
            sess_options = SessionOptions()
        elif not isinstance(sess_options, _tierjit.CoreSessionOptions):
            raise TypeError(
                f"sess_options must be a tierjit.SessionOptions, got {type(sess_options).__name__}")
        self._sess_options = sess_options
        self._providers = [_CPU]
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = None
            self._model_bytes = bytes(path_or_bytes)
            self._session = _tierjit.CoreSession.from_bytes(self._model_bytes, sess_options)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            self._model_bytes = None
            self._session = _tierjit.CoreSession(self._model_path, sess_options)
        else:
            raise TypeError(
                "InferenceSession expects a model path (str or os.PathLike) or the model as bytes, "
                f"got {type(path_or_bytes).__name__}")
        self._inputs = [NodeArg(*t) for t in self._session.inputs()]
        self._outputs = [NodeArg(*t) for t in self._session.outputs()]
        self._output_names = [o.name for o in self._outputs]
        self._input_types = {i.name: i.type for i in self._inputs}

    # --- metadata -------------------------------------------------------------------------------
    def get_inputs(self):
        """The inputs to feed (initializers excluded), as NodeArg."""
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        """tierjit does not let feeds override initializers: always []."""
        return []

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {_CPU: {}}

    def set_providers(self, providers=None, provider_options=None):
        _check_providers(providers, provider_options)

    def disable_fallback(self):
        pass

    def enable_fallback(self):
        pass

    def get_session_options(self):
        return self._sess_options

    def get_modelmeta(self):
        raise NotImplementedError("tierjit does not read model metadata (get_modelmeta) yet")

    # --- tierjit's own ---------------------------------------------------------------------------
    def wait_for_compiles(self, timeout_ms=-1):
        """Blocks until no background compile is queued or running (timeout_ms: milliseconds,
        -1 = no limit). Returns True when idle, False on timeout. For tests and benchmark
        reports; serving never needs to wait."""
        return self._session.wait_for_compiles(int(timeout_ms))

    # --- running --------------------------------------------------------------------------------
    def run(self, output_names, input_feed, run_options=None):
        """Runs the model.

        output_names: list of output names (their order is the order of the result); None or []
          for every output in model order (as ONNX Runtime).
        input_feed: {input name: value}; numpy arrays of any tierjit dtype (float16/32/64,
          int8..64, uint8..64, bool, str/bytes/object for strings) are passed as they are (a
          dtype other than the input's is an error); other values (lists, Python scalars) are
          converted with np.asarray to the input's declared dtype, like ONNX Runtime.
          Non-contiguous arrays are made contiguous. C-contiguous feeds aligned to their element
          size are read in place (never written; do not change them from another thread during
          the call), others copied.
        run_options: accepted and unused.
        Returns a list of writable numpy arrays that own their bytes: handed over without a copy
        when nothing else holds them, else copied (bfloat16 outputs come back as float32).
        Raises tierjit.InvalidArgument (also a ValueError) for a missing, unknown or mistyped
        feed or an unknown output name, other TierjitError subclasses for errors while running,
        TypeError when input_feed is not a dict. The GIL is released while the model runs.
        """
        if not isinstance(input_feed, dict):
            raise TypeError(f"input_feed must be a dict {{name: array}}, got {type(input_feed).__name__}")
        if output_names is not None:
            if isinstance(output_names, str):
                raise TypeError("output_names must be a list of names or None, not a str")
            output_names = list(output_names)
            for name in output_names:
                if not isinstance(name, str):
                    raise TypeError(
                        f"output_names must hold output names (str), got {type(name).__name__} {name!r}")
                if name not in self._output_names:
                    raise InvalidArgument(
                        f"{self._describe()}: model has no output '{name}' "
                        f"(outputs: {', '.join(self._output_names)})")
        feeds = {}
        for name, value in input_feed.items():
            if value is None:  # np.asarray(None) would be a rank-0 object array
                raise InvalidArgument(
                    f"{self._describe()}: input '{name}' is None, expected an array")
            feeds[name] = _as_feed_array(value, self._input_types.get(name))
        results = dict(self._session.run(feeds))
        if not output_names:  # None or [] select every output, as in ONNX Runtime
            return [results[n] for n in self._output_names]
        return [results[n] for n in output_names]

    def _describe(self):
        return self._model_path if self._model_path is not None else "<model bytes>"


# ONNX Runtime's type names -> numpy dtypes (bfloat16 has none: such feeds must be arrays).
_NUMPY_OF_TYPE = {
    "tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16,
    "tensor(int8)": np.int8, "tensor(int16)": np.int16, "tensor(int32)": np.int32,
    "tensor(int64)": np.int64, "tensor(uint8)": np.uint8, "tensor(uint16)": np.uint16,
    "tensor(uint32)": np.uint32, "tensor(uint64)": np.uint64, "tensor(bool)": np.bool_,
    "tensor(string)": object,
}


def _as_feed_array(value, declared_type):
    """A numpy array for one feed, as ONNX Runtime makes it: arrays pass unchanged (in native
    byte order); anything else goes through np.asarray with the input's declared dtype."""
    if isinstance(value, np.ndarray):
        arr = value
    else:
        dtype = _NUMPY_OF_TYPE.get(declared_type)
        try:
            arr = np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"feed of type {type(value).__name__} cannot be converted to "
                            f"{declared_type or 'an array'}: {e}") from None
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr
