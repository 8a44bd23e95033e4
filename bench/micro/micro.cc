// Shared helpers of the micro-benchmarks (see micro.h) and main(): pins every library to one
// thread before anything starts OpenMP, records the machine load in the JSON context, and runs
// Google Benchmark.
#include "micro.h"

#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tierjit::bench {

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(DType::kFloat32, shape);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;  // 64-bit LCG (Knuth MMIX)
    const float u = static_cast<float>(s >> 40) * (1.f / 16777216.f);  // top 24 bits in [0, 1)
    p[i] = lo + (hi - lo) * u;
  }
  return t;
}

ir::Attribute attr_int(int64_t v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInt;
  a.i = v;
  return a;
}
ir::Attribute attr_float(float v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kFloat;
  a.f = v;
  return a;
}
ir::Attribute attr_ints(std::vector<int64_t> v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kInts;
  a.ints = std::move(v);
  return a;
}

ir::Value* GraphBuilder::feed(const std::string& name, const Shape& shape, DType dtype,
                              const std::vector<std::string>& symbols) {
  ir::SymShape sym;
  for (size_t k = 0; k < shape.size(); ++k)
    sym.push_back(k < symbols.size() && !symbols[k].empty() ? ir::Dim::named(symbols[k])
                                                            : ir::Dim::constant(shape[k]));
  ir::Value* v = graph_->add_value(name, {dtype, sym});
  graph_->inputs().push_back(v);
  return v;
}

ir::Value* GraphBuilder::constant(const std::string& name, Tensor t) {
  ir::SymShape sym;
  for (int64_t d : t.shape()) sym.push_back(ir::Dim::constant(d));
  ir::Value* v = graph_->add_value(name, {t.dtype(), sym});
  v->set_constant(std::move(t));
  graph_->inputs().push_back(v);
  return v;
}

ir::Value* GraphBuilder::node(ir::OpKind op, std::vector<ir::Value*> inputs,
                              std::vector<std::pair<std::string, ir::Attribute>> attrs, int opset) {
  const std::string id = std::to_string(next_++);
  ir::Value* out = graph_->add_value("t" + id);
  ir::Node* n = graph_->add_node(op, std::move(inputs), {out}, "n" + id);
  n->set_opset(opset);
  for (auto& [k, a] : attrs) n->set_attr(k, std::move(a));
  return out;
}

bool Tier0Program::run(std::string* error) {
  interp::ExecOptions options;
  options.intra_op_threads = 1;
  auto r = interp::run_graph(*graph_, feeds_, options);
  if (!r.ok()) {
    *error = r.status().message();
    return false;
  }
  benchmark::DoNotOptimize(r.value().front().raw_data());
  return true;
}

void Tier0Program::time(benchmark::State& state) {
  std::string error;
  if (!run(&error)) {  // warm-up: weight caches, oneDNN primitive creation, page faults
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) {
    if (!run(&error)) {
      state.SkipWithError(error.c_str());
      break;
    }
  }
}

benchmark::internal::Benchmark* register_case(const std::string& family_case,
                                              const std::string& system,
                                              std::function<void(benchmark::State&)> body,
                                              double flop) {
  return benchmark::RegisterBenchmark((family_case + "/" + system).c_str(),
                               [body, flop](benchmark::State& state) {
                                 body(state);
                                 if (flop > 0) {
                                   state.counters["flop"] = flop;
                                   state.counters["FLOPS"] = benchmark::Counter(
                                       flop, benchmark::Counter::kIsIterationInvariantRate);
                                 }
                               })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

namespace {
std::string read_first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}
}  // namespace

}  // namespace tierjit::bench

int main(int argc, char** argv) {
  // Single thread for oneDNN (OpenMP runtime) and our kernels; set before OpenMP starts.
  setenv("OMP_NUM_THREADS", "1", 1);
  omp_set_num_threads(1);
  benchmark::AddCustomContext("loadavg_start", tierjit::bench::read_first_line("/proc/loadavg"));
  benchmark::AddCustomContext("threads", "1");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  std::fprintf(stderr, "loadavg at end: %s\n",
               tierjit::bench::read_first_line("/proc/loadavg").c_str());
  return 0;
}
