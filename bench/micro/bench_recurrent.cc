// Recurrent cells, tier 0 against the compiled recurrent region (kir/lower/lower_recurrent.cc):
// lstm_small's LSTM (input 64, hidden 128, one direction) and bigru_classifier's GRU layer
// (input 128, hidden 128, bidirectional, linear_before_reset 1, as PyTorch exports it), time-major
// [S, N, I], constant weights and bias, zero initial states, output Y. Sequences 8 and 32,
// batches 1, 8 and 64; one and two threads (tier 0: ExecOptions::intra_op_threads and the
// OpenMP team; compiled: LowerOptions::threads and the team). Both sides may fall back to one
// thread when another process holds the second core (support::spare_cores_for).
// Cases: recurrent.<lstm|gru>_s<S>_n<N>[_2t]/<tier0|tier2>.
// Run: tierjit_micro_bench --benchmark_filter='recurrent\.' --benchmark_repetitions=5
//      --benchmark_enable_random_interleaving=true
#include <omp.h>

#include "compiled.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

struct Cell {
  bool lstm;
  int64_t input, hidden, dirs;
};
constexpr Cell kLstmSmall{true, 64, 128, 1};
constexpr Cell kBiGru{false, 128, 128, 2};

ir::Attribute attr_string(std::string v) {
  ir::Attribute a;
  a.kind = ir::Attribute::Kind::kString;
  a.s = std::move(v);
  return a;
}

Tier0Program make_rnn(Cell c, int64_t s, int64_t n) {
  GraphBuilder b;
  const int64_t G = c.lstm ? 4 : 3, H = c.hidden;
  ir::Value* x = b.feed("X", {s, n, c.input});
  ir::Value* w = b.constant("W", random_tensor({c.dirs, G * H, c.input}, 42, -0.2f, 0.2f));
  ir::Value* r = b.constant("R", random_tensor({c.dirs, G * H, H}, 43, -0.2f, 0.2f));
  ir::Value* bias = b.constant("B", random_tensor({c.dirs, 2 * G * H}, 44, -0.2f, 0.2f));
  std::vector<std::pair<std::string, ir::Attribute>> attrs = {
      {"hidden_size", attr_int(H)},
      {"direction", attr_string(c.dirs == 2 ? "bidirectional" : "forward")}};
  if (!c.lstm) attrs.push_back({"linear_before_reset", attr_int(1)});
  b.output(b.node(c.lstm ? ir::OpKind::LSTM : ir::OpKind::GRU, {x, w, r, bias}, attrs, 14));
  return Tier0Program(b.finish(), {random_tensor({s, n, c.input}, 41)});
}

// Runs `body` with an OpenMP team of `threads` (the benchmark binary's default is 1).
template <class F>
void with_team(int threads, F body) {
  omp_set_num_threads(threads);
  body();
  omp_set_num_threads(1);
}

void time_tier0(benchmark::State& state, Cell c, int64_t s, int64_t n, int threads) {
  Tier0Program p = make_rnn(c, s, n);
  auto g = p.take_graph();
  const std::vector<Tensor> feeds = p.feeds();
  interp::ExecOptions options;
  options.intra_op_threads = threads;
  with_team(threads, [&] {
    auto run = [&] {
      auto r = interp::run_graph(*g, feeds, options);
      if (!r.ok())
        state.SkipWithError(r.status().message().c_str());
      else
        benchmark::DoNotOptimize(r.value().front().raw_data());
      return r.ok();
    };
    if (!run()) return;  // warm-up: packed weights, oneDNN primitive
    for (auto _ : state)
      if (!run()) break;
  });
}

const bool registered = [] {
  for (auto [name, cell] : {std::pair{"lstm", kLstmSmall}, std::pair{"gru", kBiGru}})
    for (int64_t s : {8, 32})
      for (int64_t n : {1, 8, 64})
        for (int threads : {1, 2}) {
          const std::string cs = "recurrent." + std::string(name) + "_s" + std::to_string(s) +
                                 "_n" + std::to_string(n) + (threads == 2 ? "_2t" : "");
          const int64_t G = cell.lstm ? 4 : 3;
          const double flop = 2.0 * static_cast<double>(cell.dirs * s * n * G * cell.hidden *
                                                        (cell.input + cell.hidden));
          const Cell c = cell;
          register_case(
              cs, "tier0",
              [c, s, n, threads](benchmark::State& st) { time_tier0(st, c, s, n, threads); }, flop);
          CompiledProgramOptions o = exact_at_tier(2);
          o.threads = threads;
          auto compiled = compiled_case([c, s, n] { return make_rnn(c, s, n); }, o);
          register_case(
              cs, "tier2",
              [compiled, threads](benchmark::State& st) {
                with_team(threads, [&] { compiled(st); });
              },
              flop);
        }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
