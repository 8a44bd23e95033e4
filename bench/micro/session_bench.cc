// Per-call overhead of Session::run through the C++ API: an Add of two float32 [16] tensors
// (models/add16.onnx), p50 over 100,000 calls (issue target: at most 2 µs). Each iteration runs
// the 100,000 calls, timing each one, and reports the median call as its (manual) time; the
// counters give p90 and p99. Modes: interpret-only (tier 0), adaptive (the default), tier 2
// pinned. Cases: session.add16_p50/<mode>.
#include <algorithm>
#include <chrono>
#include <vector>

#include "micro.h"
#include "tierjit/session.h"

namespace tierjit::bench {
namespace {

constexpr int kCalls = 100000;

void time_add16(benchmark::State& state, SessionOptions options) {
  std::unique_ptr<Session> session;
  try {
    session = std::make_unique<Session>(std::string(TIERJIT_SOURCE_DIR) + "/models/add16.onnx", options);
  } catch (const Error& e) {
    state.SkipWithError(e.what());
    return;
  }
  NamedTensors feeds = {{"A", random_tensor({16}, 1)}, {"B", random_tensor({16}, 2)}};
  std::vector<double> us(kCalls);
  for (int i = 0; i < 1000; ++i) benchmark::DoNotOptimize(session->run(feeds));  // warm-up
  double p90 = 0, p99 = 0;
  for (auto _ : state) {
    for (int i = 0; i < kCalls; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      NamedTensors out = session->run(feeds);
      us[i] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      benchmark::DoNotOptimize(out.front().second.raw_data());
    }
    std::sort(us.begin(), us.end());
    state.SetIterationTime(us[kCalls / 2] * 1e-6);
    p90 = us[kCalls * 9 / 10];
    p99 = us[kCalls * 99 / 100];
  }
  state.counters["p90_us"] = p90;
  state.counters["p99_us"] = p99;
}

const bool registered = [] {
  SessionOptions interpret;
  interpret.mode = ExecutionMode::kInterpretOnly;
  SessionOptions adaptive;
  SessionOptions tier2;
  tier2.mode = ExecutionMode::kPinnedTier;
  tier2.pinned_tier = 2;
  for (auto& [name, o] : {std::pair{"interpret", interpret}, std::pair{"adaptive", adaptive},
                          std::pair{"tier2", tier2}}) {
    SessionOptions opts = o;
    benchmark::RegisterBenchmark((std::string("session.add16_p50/") + name).c_str(),
                                 [opts](benchmark::State& s) { time_add16(s, opts); })
        ->UseManualTime()
        ->Iterations(1);
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
