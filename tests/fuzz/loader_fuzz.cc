// libFuzzer target: model bytes -> ONNX loader -> tier-0 pass pipeline (shape inference, constant
// folding, ...) -> kernel check -> partition -> a tier-0 Plan for the graph's input shapes (every
// symbolic or unknown dim = 2, zero feeds) -> one run of that Plan. The same steps a Session takes
// (runtime/session.cc, session_plan.cc), without the JIT: nothing here compiles code.
// Any input may be rejected with a Status; a crash, a sanitizer report, a failed CHECK or a
// timeout is a finding (docs/testing.md, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "fuzz/targets.h"
#include "interp/evaluate_node.h"
#include "interp/executor.h"
#include "onnx/loader.h"
#include "passes/partition.h"
#include "passes/pipeline.h"
#include "runtime/plan.h"

namespace {

using namespace tierjit;

// Largest tensor (bytes) the loader, the passes and the kernels accept here: small, so that one
// execution stays in milliseconds under ASan and a run never approaches libFuzzer's RSS limit.
constexpr int64_t kMemoryLimit = int64_t{16} << 20;
// Feeds above this many elements skip the run (a declared [100000, 100000] input is valid).
constexpr int64_t kMaxFeedElements = int64_t{1} << 16;
constexpr int64_t kSymbolicDim = 2;

// A Loop's trip count and condition come from the model: a valid 200-byte model can loop 2^62
// times (ONNX Runtime would too). Such graphs are loaded, checked and partitioned, not run.
bool has_loop(const ir::Graph& g) {
  for (const auto& n : g.nodes()) {
    if (n->op() == ir::OpKind::Loop) return true;
    for (const auto& [name, a] : n->attributes()) {
      if (a.g && has_loop(*a.g)) return true;
      for (const auto& sg : a.graphs)
        if (sg && has_loop(*sg)) return true;
    }
  }
  return false;
}

// Zero feeds in feed order; false when some feed is too large to run.
bool make_feeds(const ir::Graph& g, std::vector<Tensor>& feeds) {
  for (const ir::Value* v : g.feed_inputs()) {
    Shape shape;
    int64_t n = 1;
    if (v->type().shape)
      for (const ir::Dim& d : *v->type().shape) {
        shape.push_back(d.is_constant() ? d.value : kSymbolicDim);
        if (shape.back() != 0 && n > kMaxFeedElements / shape.back()) return false;
        n *= shape.back();
      }
    if (v->type().dtype == DType::kUndefined) return false;
    feeds.push_back(Tensor::zeros(v->type().dtype, shape));
  }
  return true;
}

// An empty folder the loader resolves external data against: a fuzzed `location` finds nothing.
const std::string& empty_dir() {
  static const std::string dir = [] {
    std::filesystem::path p = std::filesystem::temp_directory_path() /
                              ("tierjit_fuzz_loader_" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p.string();
  }();
  return dir;
}

void fuzz_one(const std::string& bytes) {
  onnx_import::LoadOptions load;
  load.memory_limit_bytes = kMemoryLimit;
  Expected<ir::Model> model = onnx_import::load_model_from_bytes(bytes, "fuzz.onnx", empty_dir(), load);
  if (!model.ok()) return;
  ir::Graph& g = *model.value().graph;
  passes::PassContext pctx;  // verify_between_passes: on (this build has no NDEBUG)
  pctx.memory_limit_bytes = kMemoryLimit;
  pctx.max_folded_bytes = kMemoryLimit;
  pctx.evaluate_node = [](const ir::Node& node, const std::vector<Tensor>& inputs) {
    interp::ExecOptions fold;
    fold.memory_limit_bytes = kMemoryLimit;
    return interp::evaluate_node(node, inputs, fold);
  };
  if (!passes::run_tier0_pipeline(g, pctx).ok()) return;
  if (!interp::check_kernels(g).ok()) return;
  Expected<passes::Partition> part = passes::partition_graph(g, passes::PartitionOptions{});
  if (!part.ok()) return;
  interp::ExecOptions exec;
  exec.intra_op_threads = 1;
  exec.memory_limit_bytes = kMemoryLimit;
  runtime::GraphLayout layout = runtime::make_layout(g, part.value(), exec);
  std::vector<Tensor> feeds;
  if (has_loop(g) || !make_feeds(g, feeds)) return;
  if (!interp::validate_feeds(g, feeds).ok()) return;
  runtime::Recording rec;
  if (!runtime::record_call(layout, feeds, false, rec).ok()) return;
  runtime::Signature sig;
  for (const Tensor& t : feeds) sig.add_input(t.dtype(), t.shape());
  auto plan = runtime::Plan::make(layout, sig, rec,
                                  std::vector<std::shared_ptr<const runtime::CompiledRegion>>(
                                      part.value().regions.size()));
  bool shape_changed = false;
  (void)plan->run(feeds, &shape_changed);
}

}  // namespace

namespace tierjit::fuzz {

int loader_one(const uint8_t* data, size_t size) {
  fuzz_one(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}

}  // namespace tierjit::fuzz
