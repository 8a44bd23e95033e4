// Compile time per tier over the regions of the six shared models (issue: median under 10 ms at
// tier 1, under 100 ms at tier 2). Each case compiles every region with a lowering once per
// iteration and reports, as its (manual) time, the MEDIAN region's compile time of that iteration;
// counters give the region count and the slowest region. Tier 1 compiles generic versions, tier 2
// exact versions at N=4, S=32, H=W=64. Models come from $TIERJIT_MODELS_DIR, else the shared
// folder the build was configured with; cases skip with a message when it is absent.
// Cases: compile.models_median_region/tier1, /tier2, and compile.<model>_median_region/tierN (a
// model none of whose regions has a lowering reports 0 regions, labelled so).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "compiled.h"
#include "interp/evaluate_node.h"
#include "onnx/loader.h"
#include "passes/pipeline.h"

namespace tierjit::bench {
namespace {

const char* const kModels[] = {"mlp", "convnet_small", "resnet18", "mobilenet_v2", "bert_tiny",
                               "lstm_small"};

std::string models_dir() {
  if (const char* d = std::getenv("TIERJIT_MODELS_DIR")) return d;
#ifdef TIERJIT_SHARED_DIR
  return std::string(TIERJIT_SHARED_DIR) + "/models";
#else
  return "../shared/models";
#endif
}

int64_t dim_value(const ir::Dim& d) {
  if (d.is_constant()) return d.value;
  if (d.symbol == "S") return 32;
  if (d.symbol == "H" || d.symbol == "W") return 64;
  return 4;
}

/// One model's regions with the shapes of one tier-0 run, ready to lower.
struct ModelRegions {
  ir::Model model;
  std::unique_ptr<passes::Partition> partition;
  std::vector<Tensor> values;  ///< by Value::id()
};

Expected<std::unique_ptr<ModelRegions>> load_regions(const std::string& name) {
  auto m = std::make_unique<ModelRegions>();
  TJ_ASSIGN_OR_RETURN(m->model, onnx_import::load_model(models_dir() + "/" + name + ".onnx"));
  passes::PassContext pctx;
  pctx.evaluate_node = [](const ir::Node& n, const std::vector<Tensor>& in) {
    return interp::evaluate_node(n, in, interp::ExecOptions{});
  };
  ir::Graph& g = *m->model.graph;
  TJ_RETURN_IF_ERROR(passes::run_tier0_pipeline(g, pctx));
  std::vector<Tensor> feeds;
  std::mt19937 rng(7);
  for (const ir::Value* v : g.feed_inputs()) {
    Shape shape;
    for (const ir::Dim& d : *v->type().shape) shape.push_back(dim_value(d));
    Tensor t = Tensor::zeros(v->type().dtype, shape);
    if (t.dtype() == DType::kFloat32)
      for (float& x : t.span<float>()) x = std::uniform_real_distribution<float>(-1, 1)(rng);
    if (t.dtype() == DType::kInt64)
      for (int64_t& x : t.span<int64_t>()) x = v->name().find("mask") != std::string::npos ? 1 : rng() % 1000;
    feeds.push_back(t);
  }
  TJ_RETURN_IF_ERROR(run_all_tier0(g, feeds, m->values));
  TJ_ASSIGN_OR_RETURN(auto part, passes::partition_graph(g, {}));
  m->partition = std::make_unique<passes::Partition>(std::move(part));
  return m;
}

/// Compiles every region with a lowering; returns each compile's wall time (µs, lower + compile).
std::vector<double> compile_all(const ModelRegions& m, int tier) {
  std::vector<double> us;
  kir::ShapeLevel level = tier == 1 ? kir::ShapeLevel::kGeneric : kir::ShapeLevel::kExact;
  for (const passes::Region& r : m.partition->regions) {
    if (!kir::has_lowering(r)) continue;
    auto t0 = std::chrono::steady_clock::now();
    auto lo = lower_options(r, m.values, tier, level);
    auto lowered = kir::lower_region(r, lo);
    if (!lowered.ok()) continue;
    codegen::CompileOptions co;
    co.tier = tier >= 2 ? codegen::Tier::kTier2 : codegen::Tier::kTier1;
    auto k = codegen::compile(lowered->fn, co);
    if (!k.ok()) continue;
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return us;
}

void run_case(benchmark::State& state, const std::vector<std::string>& models, int tier) {
  std::vector<std::unique_ptr<ModelRegions>> loaded;
  for (const std::string& name : models) {
    auto m = load_regions(name);
    if (!m.ok()) {
      state.SkipWithError(("model " + name + ": " + m.status().message()).c_str());
      return;
    }
    loaded.push_back(std::move(m).value());
  }
  double regions = 0, slowest = 0;
  for (auto _ : state) {
    std::vector<double> us;
    for (const auto& m : loaded) {
      auto u = compile_all(*m, tier);
      us.insert(us.end(), u.begin(), u.end());
    }
    if (us.empty()) {  // e.g. lstm_small: its LSTM regions run at tier 0 only
      state.SetIterationTime(0);
      state.SetLabel("no region has a lowering: nothing to compile");
      continue;
    }
    std::sort(us.begin(), us.end());
    regions = static_cast<double>(us.size());
    slowest = us.back();
    state.SetIterationTime(us[us.size() / 2] * 1e-6);
  }
  state.counters["regions"] = regions;
  state.counters["slowest_us"] = slowest;
}

const bool registered = [] {
  std::vector<std::string> all(std::begin(kModels), std::end(kModels));
  for (int tier : {1, 2}) {
    std::string sys = "tier" + std::to_string(tier);
    // Manual time (the median region), so not register_case (which times wall-clock).
    benchmark::RegisterBenchmark(("compile.models_median_region/" + sys).c_str(),
                                 [all, tier](benchmark::State& s) { run_case(s, all, tier); })
        ->UseManualTime()
        ->Iterations(1);
    for (const std::string& m : all)
      benchmark::RegisterBenchmark(("compile." + m + "_median_region/" + sys).c_str(),
                                   [m, tier](benchmark::State& s) { run_case(s, {m}, tier); })
          ->UseManualTime()
          ->Iterations(1);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
