// Building blocks of the `tierjit` command-line program: .npy files, tensor files by extension,
// --input feed specs and random feeds, output comparison (ONNX backend tolerances), and the
// subcommands. Everything reaches the model through the public API (tierjit::Session) only;
// .pb files go through the ONNX loader's read_tensor_pb / write_tensor_pb.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string_view>
#include <string>
#include <vector>

#include "support/escape.h"
#include "support/status.h"
#include "tierjit/session.h"
#include "tierjit/tensor.h"

namespace tierjit::cli {

// ---- Exit codes (docs/cli.md) ------------------------------------------------------------------
inline constexpr int kExitOk = 0;
inline constexpr int kExitTestFailures = 1;  ///< onnx-test: an unexpected failure or an XPASS
inline constexpr int kExitError = 2;         ///< bad input, bad usage, unloadable model, I/O error

// ---- .npy (npy.cc) ---------------------------------------------------------------------------
/// Largest feed tensor when none is given (bytes): SessionOptions' default memory_limit_bytes.
inline constexpr int64_t kDefaultMemoryLimit = int64_t{16} << 30;

/// Parses a .npy file held in memory (format 1.0, 2.0, 3.0; little-endian <f2 <f4 <f8 <i1..<i8
/// <u1..<u8 |b1, C order). `source` names the file in messages. Errors (kInvalidArgument, one
/// line): bad magic, unknown version, malformed header, unsupported or big-endian dtype,
/// fortran_order True, truncated data, trailing bytes; kResourceExhausted when the header declares
/// more than `memory_limit_bytes` of data (0: no limit).
Expected<Tensor> parse_npy(const std::string& bytes, const std::string& source,
                           int64_t memory_limit_bytes = 0);
/// Reads `path` (kNotFound when it does not exist, kIoError when it cannot be read). The header
/// is read first: a tensor declaring more than `memory_limit_bytes` (bytes) is refused
/// (kResourceExhausted) before any of its data is read.
Expected<Tensor> read_npy(const std::string& path, int64_t memory_limit_bytes = kDefaultMemoryLimit);
/// Serializes `t` as .npy format 1.0 (2.0 if the header needs it). bfloat16 is widened to <f4
/// (.npy has no bfloat16); strings are not supported (kUnsupported).
Expected<std::string> serialize_npy(const Tensor& t);
Status write_npy(const std::string& path, const Tensor& t);

// ---- Files by extension (feeds.cc) ---------------------------------------------------------------
/// Reads a tensor from `path`: .npy, or .pb (serialized onnx.TensorProto). Other extensions ->
/// kInvalidArgument. A tensor whose header declares more than `memory_limit_bytes` (bytes) is
/// refused (kResourceExhausted, naming the file) before its data is read.
Expected<Tensor> read_tensor_file(const std::string& path,
                                  int64_t memory_limit_bytes = kDefaultMemoryLimit);
/// Reads / writes a serialized onnx.TensorProto (.pb) through the ONNX loader (read_tensor_pb:
/// the declared dims and dtype are checked against `memory_limit_bytes` before the data is read).
Expected<Tensor> read_pb_file(const std::string& path, int64_t memory_limit_bytes = kDefaultMemoryLimit);
Status write_pb_file(const std::string& path, const Tensor& t, const std::string& name);
/// Reads a whole regular file into `out` (support::read_regular_file): kNotFound; kInvalidArgument
/// for a directory, FIFO, device or socket and for a file over `max_bytes` (the message names
/// `limit_name`), before reading; kIoError.
Status read_file_bytes(const std::string& path, std::string& out, int64_t max_bytes,
                       std::string_view limit_name);
/// The largest text file (trace, expected-failures list) the CLI reads: 1 GiB.
inline constexpr int64_t kMaxTextFileBytes = int64_t{1} << 30;

// ---- Feeds (feeds.cc) ------------------------------------------------------------------------
/// One `--input NAME=SPEC`: SPEC is a file (FILE.npy, FILE.pb) or `random:2x256` (explicit shape;
/// `random:` with no dims, or `random:scalar`, is rank 0).
struct FeedSpec {
  std::string name;
  std::string path;                  ///< set for a file
  std::optional<Shape> random_shape; ///< set for random:DxD...
};
/// Parses "NAME=SPEC". Errors name the bad spec: missing '=', empty name, bad dims.
Expected<FeedSpec> parse_feed_spec(const std::string& text);
/// Parses "2x3x4" (also "" -> rank 0). Dims are integers in [0, 2^40].
Expected<Shape> parse_dims(const std::string& text);

/// `--int-range NAME=LO:HI`: integers for NAME drawn uniformly from [LO, HI).
struct IntRange {
  int64_t lo = 0;
  int64_t hi = 1000;
};
Expected<std::pair<std::string, IntRange>> parse_int_range(const std::string& text);
/// `--dim NAME=VALUE`: value of a symbolic dim.
Expected<std::pair<std::string, int64_t>> parse_dim_binding(const std::string& text);

/// Default value of a symbolic dim when the user gives none: 1 for batch-like names ("N", "B",
/// names containing "batch"), else 8 (sequence lengths, spatial dims, unnamed dims).
int64_t default_dim_value(const std::string& dim_name);

/// Shape for a random feed of `info`: its constant dims, and for each symbolic dim the value
/// from `bindings` or default_dim_value. kInvalidArgument when the model declares no shape.
Expected<Shape> resolve_shape(const TensorInfo& info, const std::map<std::string, int64_t>& bindings);

/// Random tensor of `dtype` and `shape`: floats uniform in [-1, 1), integers uniform in
/// `range` (default [0, 1000), clamped to the dtype), integers whose `name` contains "mask" all
/// ones (unless `range` was given explicitly), bools 0/1, strings "s<number>".
Tensor random_tensor(DType dtype, const Shape& shape, const std::string& name,
                     const std::optional<IntRange>& range, std::mt19937_64& rng);

/// Checks a fed tensor against the declared input: dtype, rank and constant dims. The message
/// names the input and the file.
Status check_feed(const TensorInfo& info, const Tensor& t, const std::string& source);
Status check_feed(const TensorInfo& info, DType dtype, const Shape& shape, const std::string& source);

// ---- Comparison (compare.cc) -----------------------------------------------------------------
struct Tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};
/// Compares as the ONNX backend tests do (numpy.testing.assert_allclose): floats pass when
/// |got - expected| <= atol + rtol * |expected| elementwise, NaN matches NaN, infinities must
/// match exactly; integers, bools and strings must be equal; dtypes and shapes must be equal.
/// Returns std::nullopt on a match, else a one-line reason such as
/// "max abs diff 0.3 at [1, 2] (got 1.5, expected 1.2); 1 of 6 elements differ".
std::optional<std::string> compare_tensors(const Tensor& got, const Tensor& expected,
                                           const Tolerance& tol);

/// Parses a tolerance given on the command line (`--atol`, `--rtol`): a finite decimal number
/// >= 0 such as "1e-5" or "0.001", nothing else around it. Returns std::nullopt for a negative
/// value, NaN, an infinity, an empty string or text that is not a number.
std::optional<double> parse_tolerance(const std::string& text);

/// "[1, 2]" for flat index `flat` in `shape`.
std::string index_to_string(const Shape& shape, int64_t flat);

// ---- Subcommands ---------------------------------------------------------------------------
struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;      ///< NAME=SPEC
  std::vector<std::string> int_ranges;  ///< NAME=LO:HI
  std::vector<std::string> dims;        ///< NAME=VALUE
  std::string output_dir;
  std::string output_format = "npy";
  int threads = 1;
  int64_t memory_limit = int64_t{16} << 30;
  int64_t arena_limit = 0;  ///< --arena-limit: SessionOptions::arena_limit_bytes (0: none)
  uint64_t seed = 0;
  bool quiet = false;
  int tier = -1;        ///< --tier N: 0 interpret-only, 1-3 pinned; -1 adaptive
  bool verify = false;  ///< --verify: check each compiled version against tier 0
};
/// `tierjit run`: returns an exit code; errors are one line on stderr.
int cmd_run(const RunOptions& opts);

struct OnnxTestOptions {
  std::vector<std::string> paths;
  std::string expected_failures;
  std::string write_expected_failures;
  std::string filter;
  bool verbose = false;
  int threads = 1;
  int timeout_seconds = 300;  ///< per test; 0 = none. A test over it ends the run (exit 1).
  int tier = -1;        ///< --tier N: 0 interpret-only, 1-3 pinned; -1 adaptive
  bool verify = false;  ///< --verify: check each compiled version against tier 0
  Tolerance tolerance;  ///< --atol / --rtol (defaults: the ONNX backend runner's 1e-7 / 1e-3)
};
/// `tierjit onnx-test`: 0 when every test passed, was skipped or failed as expected; 1 on an
/// unexpected failure or an XPASS; 2 on bad usage (missing path, unreadable list).
int cmd_onnx_test(const OnnxTestOptions& opts);

/// Sets so.mode / pinned_tier for `--tier N`: -1 leaves adaptive, 0 interpret-only, 1-3 pinned.
/// Throws tierjit::Error(kInvalidArgument) for another N.
void apply_tier(int tier, SessionOptions& so);

/// Names printed by every subcommand (inputs, outputs, files, tests, shapes) go through this one
/// escaper (support/escape.h): control characters, newlines and bytes that are not UTF-8 become
/// JSON-style escapes, so a name cannot break a line or drive the terminal.
using support::escape_name;

/// Replaces newlines and tabs by spaces and escapes other control characters and bytes that are
/// not UTF-8 (support::escape_controls): one-line messages.
std::string one_line(std::string s);

/// Runs a subcommand's work `body` (which throws on failure) and returns its exit code: kExitOk,
/// or kExitError after printing one line on stderr: "tierjit: error: <message>" for a
/// tierjit::Error, "tierjit: error: <model>: out of memory" for std::bad_alloc and
/// "tierjit: error: <model>: <what>" for any other std::exception. Used by `run` and `bench`.
int run_reporting_errors(const std::string& model, const std::function<void()>& body);

}  // namespace tierjit::cli
