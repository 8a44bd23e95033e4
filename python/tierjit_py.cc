// tierjit._tierjit — the pybind11 core of the Python module `tierjit` (python/tierjit/__init__.py
// builds ONNX Runtime's API on top of it). Binds the public C++ API only (tierjit/session.h):
// SessionOptions (every field), Session (inputs/outputs metadata, run on numpy arrays with the GIL
// released) and tierjit::Error -> tierjit.TierjitError and one subclass per status code.
// Feeds are borrowed (numpy's memory read in place) and outputs handed over to numpy without a
// copy where that is safe, as ONNX Runtime does (tensor_from_array, array_from_tensor).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "support/serving_defaults.h"
#include "tierjit/session.h"

namespace py = pybind11;

namespace tierjit::python {
namespace {

// Exception classes, indexed by StatusCode (created once at import, owned by the module).
constexpr int kNumCodes = 8;
std::array<PyObject*, kNumCodes> g_error_classes{};

PyObject* error_class(StatusCode code) {
  int i = static_cast<int>(code);
  if (i <= 0 || i >= kNumCodes || g_error_classes[i] == nullptr) return g_error_classes[0];
  return g_error_classes[i];
}

/// Numpy dtype of a tierjit dtype; bfloat16 comes back as float32 (numpy has no bfloat16).
py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::kFloat32: return py::dtype("float32");
    case DType::kFloat64: return py::dtype("float64");
    case DType::kFloat16: return py::dtype("float16");
    case DType::kBFloat16: return py::dtype("float32");
    case DType::kInt8: return py::dtype("int8");
    case DType::kInt16: return py::dtype("int16");
    case DType::kInt32: return py::dtype("int32");
    case DType::kInt64: return py::dtype("int64");
    case DType::kUInt8: return py::dtype("uint8");
    case DType::kUInt16: return py::dtype("uint16");
    case DType::kUInt32: return py::dtype("uint32");
    case DType::kUInt64: return py::dtype("uint64");
    case DType::kBool: return py::dtype("bool");
    case DType::kString: return py::dtype("object");
    case DType::kUndefined: break;
  }
  throw Error(StatusCode::kInternal, "output with an undefined dtype");
}

// pybind11 2.10 (Debian 12) reads dtype fields from numpy 1's PyArray_Descr layout, which numpy 2
// changed (itemsize moved): ask Python for kind/itemsize and pass strides explicitly instead.
py::ssize_t itemsize_of(const py::dtype& dt) { return dt.attr("itemsize").cast<py::ssize_t>(); }

/// C-order strides in bytes.
std::vector<py::ssize_t> c_strides(const std::vector<py::ssize_t>& shape, py::ssize_t itemsize) {
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = itemsize;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= std::max<py::ssize_t>(shape[i], 1);
  }
  return strides;
}

/// A new C-contiguous numpy array; with `data`, its bytes are copied in.
py::array new_array(const py::dtype& dt, const std::vector<py::ssize_t>& shape,
                    const void* data = nullptr) {
  return py::array(dt, shape, c_strides(shape, itemsize_of(dt)), data);
}

/// tierjit dtype of a numpy array (native byte order, checked by the caller), or kUndefined.
DType tierjit_dtype(const py::array& a) {
  const py::dtype dt = a.dtype();
  const char kind = dt.attr("kind").cast<std::string>().at(0);
  const auto size = itemsize_of(dt);
  switch (kind) {
    case 'f':
      return size == 2 ? DType::kFloat16 : size == 4 ? DType::kFloat32 : size == 8 ? DType::kFloat64
                                                                                   : DType::kUndefined;
    case 'i':
      return size == 1   ? DType::kInt8
             : size == 2 ? DType::kInt16
             : size == 4 ? DType::kInt32
             : size == 8 ? DType::kInt64
                         : DType::kUndefined;
    case 'u':
      return size == 1   ? DType::kUInt8
             : size == 2 ? DType::kUInt16
             : size == 4 ? DType::kUInt32
             : size == 8 ? DType::kUInt64
                         : DType::kUndefined;
    case 'b': return DType::kBool;
    case 'U':
    case 'S':
    case 'O': return DType::kString;
    default: return DType::kUndefined;
  }
}

// References to numpy arrays dropped by threads without the GIL, waiting for a thread with it.
std::mutex g_pending_mu;
std::vector<PyObject*> g_pending;
bool g_drain_scheduled = false;

/// Drops the deferred references (the GIL held). Also a Py_AddPendingCall callback: returns 0.
int drain_pending_releases(void* = nullptr) {
  std::vector<PyObject*> drop;
  {
    std::lock_guard<std::mutex> lock(g_pending_mu);
    drop.swap(g_pending);
    g_drain_scheduled = false;
  }
  for (PyObject* o : drop) Py_DECREF(o);
  return 0;
}

/// Drops the reference a borrowed feed holds on its numpy array. With the GIL: at once. Without
/// it (a tensor outliving its call, released on a compile thread or in a Session's destructor
/// while the main thread holds the GIL waiting for that thread) it never waits for the GIL: the
/// reference is queued for the interpreter's next pending-call check (Py_AddPendingCall) or the
/// next run(). After interpreter shutdown the reference is left (nothing to free it into).
void release_array(const void* object) {
  auto* o = static_cast<PyObject*>(const_cast<void*>(object));
  if (!Py_IsInitialized()) return;
  if (PyGILState_Check()) {
    Py_DECREF(o);
    return;
  }
  std::lock_guard<std::mutex> lock(g_pending_mu);
  g_pending.push_back(o);
  if (!g_drain_scheduled) g_drain_scheduled = Py_AddPendingCall(drain_pending_releases, nullptr) == 0;
}

/// Borrows one feed (a numpy array; the Python layer already applied np.asarray) as a Tensor, or
/// copies it where it cannot be borrowed.
/// Non-contiguous arrays are made C-contiguous first (ResourceExhausted, naming the input and
/// the bytes, when that copy cannot be allocated). TypeError for dtypes tierjit lacks.
Tensor tensor_from_array(const std::string& name, const py::array& in) {
  const DType dtype = tierjit_dtype(in);
  if (dtype == DType::kUndefined) {
    throw py::type_error("input '" + name + "': numpy dtype " +
                         py::str(in.dtype()).cast<std::string>() + " has no tierjit equivalent");
  }
  Shape shape(in.shape(), in.shape() + in.ndim());
  if (dtype == DType::kString) {
    Tensor t = Tensor::empty(DType::kString, shape);
    py::object flat = in.attr("ravel")();  // C order, a copy where needed
    std::string* out = t.data<std::string>();
    int64_t i = 0;
    for (py::handle item : flat) {
      if (py::isinstance<py::bytes>(item)) {
        out[i++] = item.cast<std::string>();
      } else if (py::isinstance<py::str>(item)) {
        out[i++] = item.cast<std::string>();
      } else {
        throw py::type_error("input '" + name + "': string tensor element " + std::to_string(i) +
                             " is " + py::str(item.get_type()).cast<std::string>() +
                             ", not str or bytes");
      }
    }
    return t;
  }
  auto contiguous = py::array::ensure(in, py::array::c_style);
  if (!contiguous) {  // ensure() cleared numpy's error: the copy could not be allocated
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
    // (numpy keeps an array's byte count within intptr_t, so this product cannot overflow)
    const int64_t bytes = shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype));
    throw Error(StatusCode::kResourceExhausted, "input '" + name +
                                                    "': a C-contiguous copy of the non-contiguous " + dims +
                                                    " array (" + std::to_string(bytes) +
                                                    " bytes) could not be allocated");
  }
  // Borrowed, not copied, when its elements are aligned to their size (Tensor::borrow's rule; a
  // copy otherwise): ONNX Runtime reads numpy feeds in place too, and a copy cost both the memcpy
  // and the cache it evicted (MatMul 1024x512 x 512x128 + bias, 2 threads: ~0.1-0.3 ms of ~1.2 ms
  // per call). The reference to the array is dropped with the GIL held (see release_array).
  void* data = const_cast<void*>(contiguous.data());
  const auto es = static_cast<uintptr_t>(dtype_size(dtype));
  if (dtype != DType::kBFloat16 && data != nullptr && reinterpret_cast<uintptr_t>(data) % es == 0) {
    PyObject* owner = contiguous.release().ptr();  // our reference, released by release_array
    return Tensor::borrow(dtype, std::move(shape), data,
                          std::shared_ptr<const void>(owner, release_array));
  }
  return Tensor::from_bytes(dtype, std::move(shape), contiguous.data());
}

/// An output tensor as a numpy array: strings become an object array of str, bfloat16 is
/// widened to float32 (numpy has no bfloat16); other dtypes are handed over without a copy when
/// the tensor is the only holder of its own storage, else copied.
py::array array_from_tensor(Tensor t) {
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end());
  if (t.dtype() == DType::kString) {
    py::array out = new_array(py::dtype("object"), shape);
    auto** cells = static_cast<PyObject**>(out.mutable_data());
    const std::string* in = t.data<std::string>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      PyObject* s = PyUnicode_DecodeUTF8(in[i].data(), static_cast<py::ssize_t>(in[i].size()),
                                         "surrogateescape");
      if (s == nullptr) throw py::error_already_set();
      Py_XDECREF(cells[i]);
      cells[i] = s;
    }
    return out;
  }
  if (t.dtype() == DType::kBFloat16) {
    py::array out = new_array(py::dtype("float32"), shape);
    const auto* in = t.data<uint16_t>();
    auto* dst = static_cast<float*>(out.mutable_data());
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
      std::memcpy(&dst[i], &bits, sizeof(float));
    }
    return out;
  }
  if (t.numel() == 0) return new_array(numpy_dtype(t.dtype()), shape);
  // Zero-copy (as ONNX Runtime hands over its outputs) only when nothing else can see the bytes
  // and they are all the output's: an output may share storage with a model constant (a folded
  // value, an Identity of an initializer), another output or a borrowed feed, and a writable view
  // of those would let the caller change the model or its own input; an output that is a slice
  // of a larger buffer (Slice, Split of an intermediate) would keep all of it alive (a 16 KiB row
  // of a 64 MiB Relu result). Those are copied.
  if (t.storage_holders() == 1 && !t.borrowed() && t.storage_nbytes() == t.nbytes()) {
    const py::dtype dt = numpy_dtype(t.dtype());
    void* data = t.raw_data();
    py::capsule owner(new Tensor(std::move(t)), [](void* p) { delete static_cast<Tensor*>(p); });
    return py::array(dt, shape, c_strides(shape, itemsize_of(dt)), data, owner);
  }
  return new_array(numpy_dtype(t.dtype()), shape, t.raw_data());
}

/// Shape as ONNX Runtime's NodeArg.shape: ints, the dim name for a symbolic dim, None for an
/// unnamed unknown dim; an empty list when the model declares no shape.
py::list shape_list(const TensorInfo& info) {
  py::list out;
  if (!info.has_shape) return out;
  for (size_t i = 0; i < info.shape.size(); ++i) {
    const std::string& name = i < info.dim_names.size() ? info.dim_names[i] : std::string();
    if (info.shape[i] >= 0) {
      out.append(info.shape[i]);
    } else if (!name.empty()) {
      out.append(name);
    } else {
      out.append(py::none());
    }
  }
  return out;
}

/// "tensor(float)" etc., ONNX Runtime's NodeArg.type.
std::string ort_type_name(DType t) {
  switch (t) {
    case DType::kFloat32: return "tensor(float)";
    case DType::kFloat64: return "tensor(double)";
    case DType::kFloat16: return "tensor(float16)";
    case DType::kBFloat16: return "tensor(bfloat16)";
    case DType::kInt8: return "tensor(int8)";
    case DType::kInt16: return "tensor(int16)";
    case DType::kInt32: return "tensor(int32)";
    case DType::kInt64: return "tensor(int64)";
    case DType::kUInt8: return "tensor(uint8)";
    case DType::kUInt16: return "tensor(uint16)";
    case DType::kUInt32: return "tensor(uint32)";
    case DType::kUInt64: return "tensor(uint64)";
    case DType::kBool: return "tensor(bool)";
    case DType::kString: return "tensor(string)";
    case DType::kUndefined: break;
  }
  return "tensor(undefined)";
}

py::list info_list(const std::vector<TensorInfo>& infos) {
  py::list out;
  for (const TensorInfo& info : infos) {
    out.append(py::make_tuple(info.name, ort_type_name(info.dtype), shape_list(info)));
  }
  return out;
}

/// Session::run on a dict {name: numpy array}; returns {name: numpy array} in model order as a
/// list of (name, array). The GIL is released while the model runs.
py::list run(const Session& session, const py::dict& feeds) {
  NamedTensors inputs;
  inputs.reserve(feeds.size());
  for (auto item : feeds) {
    if (!py::isinstance<py::str>(item.first)) {
      throw py::type_error("input_feed keys must be str, got " +
                           py::str(item.first.get_type()).cast<std::string>());
    }
    auto name = item.first.cast<std::string>();
    if (!py::isinstance<py::array>(item.second)) {
      throw py::type_error("input '" + name + "' must be a numpy array");
    }
    inputs.emplace_back(name, tensor_from_array(name, item.second.cast<py::array>()));
  }
  NamedTensors outputs;
  {
    py::gil_scoped_release release;
    outputs = session.run(inputs);
  }
  inputs.clear();  // borrowed feeds drop their arrays with the GIL held
  drain_pending_releases();
  py::list out;
  for (auto& [name, tensor] : outputs) {
    Tensor t = std::move(tensor);  // the list's handle gone: the storage's holders are the output's
    out.append(py::make_tuple(name, array_from_tensor(std::move(t))));
  }
  return out;
}

PyObject* make_error_class(py::module_& m, const char* name, PyObject* bases, const char* code,
                           const char* doc) {
  std::string qualified = std::string("tierjit.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases, nullptr);
  if (cls == nullptr) throw py::error_already_set();
  py::handle h(cls);
  h.attr("code") = code;
  m.add_object(name, h);  // the module keeps a reference
  return cls;
}

}  // namespace

void register_errors(py::module_& m) {
  g_error_classes[0] = make_error_class(
      m, "TierjitError", PyExc_RuntimeError, "",
      "Raised for every tierjit::Error; str(e) is the one-line message, e.code the status name.");
  struct Spec {
    StatusCode code;
    const char* name;
    bool value_error;  // also a ValueError (bad arguments), as ONNX Runtime's feed checks raise
  };
  const Spec specs[] = {
      {StatusCode::kInvalidArgument, "InvalidArgument", true},
      {StatusCode::kInvalidModel, "InvalidModel", false},
      {StatusCode::kNotFound, "NotFound", false},
      {StatusCode::kUnsupported, "Unsupported", false},
      {StatusCode::kResourceExhausted, "ResourceExhausted", false},
      {StatusCode::kInternal, "InternalError", false},
      {StatusCode::kIoError, "IoError", false},
  };
  for (const Spec& s : specs) {
    PyObject* bases = s.value_error ? PyTuple_Pack(2, g_error_classes[0], PyExc_ValueError)
                                    : PyTuple_Pack(1, g_error_classes[0]);
    if (bases == nullptr) throw py::error_already_set();
    g_error_classes[static_cast<int>(s.code)] =
        make_error_class(m, s.name, bases, status_code_name(s.code), "A tierjit::Error status code.");
    Py_DECREF(bases);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      PyErr_SetString(error_class(e.code()), e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "tierjit: out of memory");
    }
  });
}

}  // namespace tierjit::python

PYBIND11_MODULE(_tierjit, m) {
  using namespace tierjit;
  m.doc() = "tierjit core bindings; use the `tierjit` package (ONNX Runtime's API).";
  support::set_malloc_for_serving();  // serving defaults, as the CLI (support/serving_defaults.h)
  python::register_errors(m);
  // pybind11 imports numpy's API and dtype helpers lazily, in function-local statics; the first
  // use from two threads at once deadlocks (one waits on the static's guard holding the GIL, the
  // other needs the GIL to finish the import). Initialize them here, under the import lock.
  python::new_array(py::dtype("float32"), {1});

  // One line per field of tierjit::SessionOptions (include/tierjit/session.h); _fields lists them
  // for the Python layer (repr, keyword arguments).
  py::class_<SessionOptions>(m, "CoreSessionOptions")
      .def(py::init<>())
      .def_readwrite("intra_op_threads", &SessionOptions::intra_op_threads,
                     "Threads one kernel may use (OpenMP / oneDNN); 0 = all cores.")
      .def_readwrite("memory_limit_bytes", &SessionOptions::memory_limit_bytes,
                     "Largest single tensor accepted, from the model, computed at run time or "
                     "fed (bytes).")
      .def_readwrite("arena_limit_bytes", &SessionOptions::arena_limit_bytes,
                     "Largest total of the intermediates alive at once during a run (bytes); "
                     "0 = no limit.")
      .def_readwrite("external_data_folder", &SessionOptions::external_data_folder,
                     "For a model given as bytes: the folder its external data files are relative "
                     "to and must lie in ('' = none: external data refused). Ignored for a path.")
      .def_property(
          "mode",
          [](const SessionOptions& o) -> std::string {
            switch (o.mode) {
              case ExecutionMode::kAdaptive: return "adaptive";
              case ExecutionMode::kInterpretOnly: return "interpret-only";
              case ExecutionMode::kPinnedTier: return "pinned-tier";
            }
            return "adaptive";
          },
          [](SessionOptions& o, const std::string& m) {
            if (m == "adaptive") o.mode = ExecutionMode::kAdaptive;
            else if (m == "interpret-only") o.mode = ExecutionMode::kInterpretOnly;
            else if (m == "pinned-tier") o.mode = ExecutionMode::kPinnedTier;
            else
              throw py::value_error("SessionOptions.mode must be 'adaptive', 'interpret-only' or "
                                    "'pinned-tier', got '" + m + "'");
          },
          "'adaptive' (default: tier 0 first, hot regions compiled), 'interpret-only' (tier 0), "
          "'pinned-tier' (every region with a lowering at pinned_tier).")
      .def_readwrite("pinned_tier", &SessionOptions::pinned_tier,
                     "With mode 'pinned-tier': 1 (generic), 2 (exact, optimized) or 3 (exact, kernel selection).")
      .def_readwrite("synchronous_compilation", &SessionOptions::synchronous_compilation,
                     "Adaptive mode: a call that triggers a compile waits for it.")
      .def_readwrite("verify", &SessionOptions::verify,
                     "Check each new compiled version against tier 0 on its first call.")
      .def_readwrite("compile_threads", &SessionOptions::compile_threads,
                     "Background compile threads; 0 = max(1, floor(0.2 * cores)).")
      .def_readwrite("theta0", &SessionOptions::theta0, "Calls before the first promotion.")
      .def_readwrite("gamma", &SessionOptions::gamma, "theta_i = theta0 * gamma^i.")
      .def_readwrite("version_cap", &SessionOptions::version_cap,
                     "Compiled versions per region, generic included.")
      .def_readwrite("theta_spec", &SessionOptions::theta_spec,
                     "Share (0..1) of a region's recent calls that earns an exact version.")
      .def_readwrite("code_cache_bytes", &SessionOptions::code_cache_bytes,
                     "Byte budget of compiled code and plans in memory.")
      .def_readwrite("max_plans", &SessionOptions::max_plans,
                     "Plans (one per input signature) kept at most.")
      .def_readwrite("benefit_horizon_windows", &SessionOptions::benefit_horizon_windows,
                     "Windows of 64 model calls a compile is expected to serve, at least (1).")
      .def_readwrite("lindy_horizon", &SessionOptions::lindy_horizon,
                     "The expected calls grow with the session's age (declined regions are "
                     "weighed again).")
      .def_readwrite("demotion_epsilon", &SessionOptions::demotion_epsilon,
                     "Guard-failure rate (0..1) over a region's last 64 calls that demotes it.")
      .def_readwrite("demotion_cold_calls", &SessionOptions::demotion_cold_calls,
                     "Calls of a region without using a specialized version before it is "
                     "freed; 0 = never.")
      .def_readwrite("slower_margin", &SessionOptions::slower_margin,
                     "New code slower than the tier below by more than this fraction is "
                     "removed; negative = never.")
      .def_readwrite("whole_plan_calls", &SessionOptions::whole_plan_calls,
                     "Calls of a fully compiled plan before it is compiled into one function; "
                     "0 = never.")
      .def_readwrite("whole_plan_max_us", &SessionOptions::whole_plan_max_us,
                     "Largest per-call time (us) of a plan compiled whole.")
      .def_readwrite("warm_up", &SessionOptions::warm_up,
                     "Run the model once at tier 0 on zeros (symbolic dims 1) when the session "
                     "is created, so the first request finds weights packed and threads "
                     "started (default True).")
      .def_property(
          "speedup_seeds",
          [](const SessionOptions& o) {
            std::vector<std::tuple<std::string, int, double>> out;
            for (const SessionOptions::SpeedupSeed& s : o.speedup_seeds)
              out.emplace_back(s.kind, s.from_tier, s.speedup);
            return out;
          },
          [](SessionOptions& o, const std::vector<std::tuple<std::string, int, double>>& seeds) {
            o.speedup_seeds.clear();
            for (const auto& [kind, from_tier, speedup] : seeds)
              o.speedup_seeds.push_back({kind, from_tier, speedup});
          },
          "[(kind, from_tier, speedup)] replacing the speedup model's default seeds: kind "
          "'elementwise', 'matmul_epilogue', 'reduction', 'recurrent', 'conv', 'conv_pointwise', "
          "'conv_depthwise' or 'conv_pool', from_tier 0..2, speedup "
          "t_i / t_{i+1} > 0 (checked when the session is created).")
      .def_property_readonly_static("_fields", [](py::object) {
        return std::vector<std::string>{"intra_op_threads", "memory_limit_bytes",
                                        "arena_limit_bytes", "external_data_folder",
                                        "mode",
                                        "pinned_tier", "synchronous_compilation", "verify",
                                        "compile_threads", "theta0", "gamma", "version_cap",
                                        "theta_spec", "code_cache_bytes", "max_plans",
                                        "benefit_horizon_windows", "lindy_horizon",
                                        "demotion_epsilon", "demotion_cold_calls",
                                        "slower_margin", "whole_plan_calls",
                                        "whole_plan_max_us", "speedup_seeds", "warm_up"};
      });

  // The C++ range check of every field (tierjit::validate), for SessionOptions.__setattr__:
  // "" when valid, else its one-line message.
  m.def("options_error", [](const SessionOptions& o) -> std::string {
    try {
      validate(o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  });

  py::class_<Session>(m, "CoreSession")
      .def(py::init([](const std::string& path, const SessionOptions& options) {
             py::gil_scoped_release release;
             return Session(path, options);
           }),
           py::arg("path"), py::arg("options"))
      .def_static(
          "from_bytes",
          [](const py::bytes& data, const SessionOptions& options) {
            std::string bytes = data;
            py::gil_scoped_release release;
            return Session::from_bytes(bytes, options);
          },
          py::arg("data"), py::arg("options"),
          "Loads a serialized model; external data only from options.external_data_folder.")
      .def("inputs", [](const Session& s) { return python::info_list(s.inputs()); },
           "[(name, 'tensor(float)', shape)] of the inputs to feed")
      .def("outputs", [](const Session& s) { return python::info_list(s.outputs()); })
      .def_property_readonly("model_path", &Session::model_path)
      .def("decision_log_json", &Session::decision_log_json,
           "Every compile and tier decision with its reason, as a JSON array.")
      .def("metrics_json", &Session::metrics_json, "The runtime's metrics as a JSON object.")
      .def(
          "wait_for_compiles",
          [](const Session& s, int64_t timeout_ms) {
            py::gil_scoped_release release;
            return s.wait_for_compiles(timeout_ms);
          },
          py::arg("timeout_ms") = -1,
          "Blocks until no compile is queued or running (timeout in ms, -1 = none); True when "
          "idle, False on timeout.")
      .def("run", &python::run, py::arg("feeds"),
           "Runs on {name: contiguous-or-not numpy array}; returns [(name, array)] in model order.");

  m.def("version", &version_string, "\"0.1.0 (git abc1234)\"");
}
