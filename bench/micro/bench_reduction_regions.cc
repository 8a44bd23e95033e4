// Reduction regions of real transformers with their prologue/epilogue (passes/partition.cc kind
// kReduction), tier 0 against the compiled tiers, at 1 and 2 threads:
//   reduction.attn_softmax_<N>x<H>x<S>_t<T>   Softmax(Div(scores, 8) + mask[N,1,1,S]) over the
//       last axis: bert_tiny's attention (2 heads, head dim 64);
//   reduction.attn_where_<N>x<H>x<S>_t<T>     Softmax(Where(cond[N,1,1,S], finfo.min, scores / 8)):
//       distilbert_tiny's masking (6 heads);
//   reduction.add_layernorm_<R>x<D>_t<T>      LayerNormalization(x + residual), Scale and B of [D]
//       (hidden 128: bert_tiny, 384: distilbert_tiny; R = batch x sequence rows);
//   reduction.reducemean_<R>x<D>_t<T>          ReduceMean over the last axis (keepdims);
//   reduction.reducemean_axis1_<N>x<S>x<D>_t<T>  ReduceMean over the sequence axis (mean pooling).
// The batch, sequence and row dims are symbolic in the graph (as the models declare them), the
// hidden size constant. Systems: tier0 (the region's nodes one at a time on the plain kernels,
// as tier 0 runs them), tier1 (generic level: what the runtime compiles at tier
// 1), tier2 (exact level), tier2_generic (the tier-2 version serving shapes without an exact
// one); bench/micro/compiled.h. T threads: tier 0's intra_op_threads (the load check skipped),
// the compiled code's OpenMP team.
#include <omp.h>

#include <cmath>
#include <limits>

#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

/// A graph's nodes run one at a time on tier 0's plain kernels, the frame kept between runs.
class NodesProgram {
 public:
  NodesProgram(Tier0Program p, int threads) : graph_(p.take_graph()), feeds_(p.feeds()) {
    options_.intra_op_threads = threads;
    options_.load_applied = true;  // the benchmark decides the threads, not the machine's load
    for (const auto& n : graph_->nodes()) nodes_.push_back(n.get());
  }
  Status run() {
    if (frame_.graph == nullptr) interp::init_frame(frame_, *graph_);
    auto fi = graph_->feed_inputs();
    for (size_t i = 0; i < fi.size(); ++i) frame_.values[fi[i]->id()] = feeds_[i];
    return interp::run_nodes(nodes_, frame_, options_);
  }

 private:
  std::unique_ptr<ir::Graph> graph_;
  std::vector<Tensor> feeds_;
  std::vector<const ir::Node*> nodes_;
  interp::ExecOptions options_;
  interp::Frame frame_;
};

template <class Make>
std::function<void(benchmark::State&)> nodes_case(Make make, int threads) {
  auto program = std::make_shared<std::unique_ptr<NodesProgram>>();
  return [program, make, threads](benchmark::State& state) {
    if (!*program) *program = std::make_unique<NodesProgram>(make(), threads);
    Status s = (*program)->run();
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
    for (auto _ : state) (void)(*program)->run();
  };
}

/// compiled_case with the OpenMP team sized to `threads` while it runs (main() pins 1).
template <class Make>
std::function<void(benchmark::State&)> compiled_threads_case(Make make, int tier, kir::ShapeLevel level,
                                                             int threads) {
  CompiledProgramOptions o = exact_at_tier(tier);
  o.level = level;
  o.threads = threads;
  auto body = compiled_case(make, o);
  return [body, threads](benchmark::State& state) {
    omp_set_num_threads(threads);
    body(state);
    omp_set_num_threads(1);
  };
}

/// Times CompiledProgram::make (partition, one tier-0 run, lower and compile the one region).
template <class Make>
std::function<void(benchmark::State&)> compile_case(Make make, int tier, kir::ShapeLevel level) {
  CompiledProgramOptions o = exact_at_tier(tier);
  o.level = level;
  return [make, o](benchmark::State& state) {
    for (auto _ : state) {
      auto p = CompiledProgram::make(make(), o);
      if (!p.ok()) {
        state.SkipWithError(p.status().message().c_str());
        return;
      }
      benchmark::DoNotOptimize(p);
    }
  };
}

/// Tier0Program (the executor with its fusions) at `threads`: single-threaded only (the
/// executor applies the load check), so only registered for T = 1.
template <class Make>
void register_systems(const std::string& c, Make make) {
  for (int t : {1, 2}) {
    const std::string name = c + "_t" + std::to_string(t);
    register_case(name, "tier0", nodes_case(make, t));
    register_case(name, "tier1", compiled_threads_case(make, 1, kir::ShapeLevel::kGeneric, t));
    register_case(name, "tier2", compiled_threads_case(make, 2, kir::ShapeLevel::kExact, t));
    register_case(name, "tier2_generic", compiled_threads_case(make, 2, kir::ShapeLevel::kGeneric, t));
  }
}

Tier0Program make_attention(int64_t n, int64_t h, int64_t s, bool where) {
  GraphBuilder b;
  const Shape shape = {n, h, s, s};
  ir::Value* x = b.feed("scores", shape, DType::kFloat32, {"N", "", "S", "S"});
  std::vector<Tensor> feeds = {random_tensor(shape, 31, -8.f, 8.f)};
  ir::Value* scaled = b.node(ir::OpKind::Div, {x, b.constant("scale", Tensor::scalar<float>(8.f))}, {}, 14);
  ir::Value* masked = nullptr;
  if (where) {
    Tensor cond = Tensor::empty(DType::kBool, {n, 1, 1, s});
    for (int64_t i = 0; i < cond.numel(); ++i) cond.data<bool>()[i] = (i % s) >= s - s / 4;  // padding
    feeds.push_back(cond);
    masked = b.node(ir::OpKind::Where,
                    {b.feed("cond", {n, 1, 1, s}, DType::kBool, {"N", "", "", "S"}),
                     b.constant("min", Tensor::scalar<float>(std::numeric_limits<float>::lowest())), scaled},
                    {}, 16);
  } else {
    Tensor mask = Tensor::empty(DType::kFloat32, {n, 1, 1, s});
    for (int64_t i = 0; i < mask.numel(); ++i) mask.data<float>()[i] = (i % s) >= s - s / 4 ? -10000.f : 0.f;
    feeds.push_back(mask);
    masked = b.node(ir::OpKind::Add, {scaled, b.feed("mask", {n, 1, 1, s}, DType::kFloat32, {"N", "", "", "S"})}, {}, 14);
  }
  b.output(b.node(ir::OpKind::Softmax, {masked}, {{"axis", attr_int(-1)}}, 13));
  return Tier0Program(b.finish(), std::move(feeds));
}

Tier0Program make_add_layernorm(int64_t rows, int64_t d) {
  GraphBuilder b;
  ir::Value* x = b.feed("X", {rows, d}, DType::kFloat32, {"R"});
  ir::Value* r = b.feed("R", {rows, d}, DType::kFloat32, {"R"});
  ir::Value* sum = b.node(ir::OpKind::Add, {x, r}, {}, 14);
  ir::Value* scale = b.constant("Scale", random_tensor({d}, 32, 0.5f, 1.5f));
  ir::Value* bias = b.constant("B", random_tensor({d}, 33));
  b.output(b.node(ir::OpKind::LayerNormalization, {sum, scale, bias},
                  {{"axis", attr_int(-1)}, {"epsilon", attr_float(1e-12f)}}, 17));
  return Tier0Program(b.finish(), {random_tensor({rows, d}, 34), random_tensor({rows, d}, 35)});
}

Tier0Program make_reducemean(const Shape& shape, int64_t axis) {
  GraphBuilder b;
  std::vector<std::string> sym(shape.size() - 1, "");
  for (size_t k = 0; k < sym.size(); ++k) sym[k] = "d" + std::to_string(k);  // the last dim constant
  ir::Value* x = b.feed("X", shape, DType::kFloat32, sym);
  b.output(b.node(ir::OpKind::ReduceMean, {x}, {{"axes", attr_ints({axis})}, {"keepdims", attr_int(1)}}, 17));
  return Tier0Program(b.finish(), {random_tensor(shape, 36)});
}

std::string dims(std::initializer_list<int64_t> ds) {
  std::string s;
  for (int64_t d : ds) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

const bool registered = [] {
  for (auto [n, s] : {std::pair<int64_t, int64_t>{1, 16}, {2, 64}, {4, 128}, {16, 128}, {1, 256}, {8, 256}})
    register_systems("reduction.attn_softmax_" + dims({n, 2, s}),
                     [n, s] { return make_attention(n, 2, s, false); });
  for (auto [n, s] : {std::pair<int64_t, int64_t>{1, 16}, {2, 77}, {4, 128}, {16, 128}})
    register_systems("reduction.attn_where_" + dims({n, 6, s}),
                     [n, s] { return make_attention(n, 6, s, true); });
  for (int64_t d : {128, 384})
    for (int64_t rows : {1, 64, 154, 512, 4096})
      register_systems("reduction.add_layernorm_" + dims({rows, d}),
                       [rows, d] { return make_add_layernorm(rows, d); });
  for (auto [rows, d] : {std::pair<int64_t, int64_t>{64, 128}, {4096, 384}})
    register_systems("reduction.reducemean_" + dims({rows, d}),
                     [rows, d] { return make_reducemean({rows, d}, -1); });
  register_systems("reduction.reducemean_axis1_" + dims({8, 128, 256}),
                   [] { return make_reducemean({8, 128, 256}, 1); });
  // Compile time of the regions as the runtime builds them (tier 1 generic, tier 2 exact).
  auto compile_cases = [](const std::string& c, auto make) {
    register_case("compile." + c, "tier1", compile_case(make, 1, kir::ShapeLevel::kGeneric));
    register_case("compile." + c, "tier2", compile_case(make, 2, kir::ShapeLevel::kExact));
  };
  compile_cases("reduction_attn_softmax_4x2x128", [] { return make_attention(4, 2, 128, false); });
  compile_cases("reduction_attn_where_2x6x77", [] { return make_attention(2, 6, 77, true); });
  compile_cases("reduction_add_layernorm_154x384", [] { return make_add_layernorm(154, 384); });
  compile_cases("reduction_reducemean_axis1_8x128x256", [] { return make_reducemean({8, 128, 256}, 1); });
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
