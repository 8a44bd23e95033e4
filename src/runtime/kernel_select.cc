// select_kernel(): compile the candidates, measure them round-robin (rep r of every candidate
// before rep r+1 of any, so load changes on this shared machine hit all of them alike), keep the
// lowest best time.
#include "runtime/kernel_select.h"

#include <algorithm>
#include <chrono>
#include <limits>

#include <fmt/format.h>

#include "runtime/region_exec.h"
#include "tierjit/tensor.h"

namespace tierjit::runtime {

namespace {

using WallClock = std::chrono::steady_clock;

double us_since(WallClock::time_point t0) {
  return std::chrono::duration<double, std::micro>(WallClock::now() - t0).count();
}

std::string tuning_name(const std::map<std::string, int64_t>& tuning) {
  if (tuning.empty()) return "generated (defaults)";
  std::string s = "generated";
  for (const auto& [k, v] : tuning) s += fmt::format(" {}={}", k, v);
  return s;
}

struct Runner {
  int cand;                     ///< index into KernelSelection::candidates
  std::function<Status()> run;  ///< one call
  std::vector<double> rep_us;   ///< µs per call, per repetition
  int64_t calls_per_rep = 1;
};

}  // namespace

std::string KernelSelection::summary() const {
  std::string s;
  if (chosen >= 0) s = fmt::format("chose {}: {:.1f} µs (best)", choice().name, choice().best_us);
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (static_cast<int>(i) == chosen) continue;
    const KernelCandidate& c = candidates[i];
    s += "; " + c.name + ": " +
         (c.status.ok() ? fmt::format("{:.1f} µs", c.best_us) : "failed (" + c.status.message() + ")");
  }
  if (duplicates > 0) s += fmt::format("; {} candidate(s) with the same code as another skipped", duplicates);
  if (unsearched > 0)
    s += fmt::format("; {} tuning candidate(s) not tried (the region is under the search threshold)",
                     unsearched);
  return s;
}

Expected<KernelSelection> select_kernel(const passes::Region& region, const kir::LowerOptions& options,
                                        const std::vector<void*>& buffers,
                                        const std::vector<int64_t>& dims,
                                        const std::function<Status()>& run_library,
                                        const SelectOptions& select) {
  const auto t_start = WallClock::now();
  KernelSelection sel;
  auto tunings = kir::tuning_candidates(region, options);
  sel.candidates.reserve(tunings.size() + 1);
  std::vector<kir::LoweredRegion> lowered(tunings.size());
  std::vector<codegen::CompiledKernel> kernels(tunings.size());
  std::vector<Tensor> workspaces(tunings.size());
  std::vector<std::vector<void*>> args(tunings.size());
  std::vector<std::vector<Tensor>> prepared(tunings.size());
  std::vector<std::string> codes;  // the kernel IR of every candidate compiled so far
  // Candidate i's index in sel.candidates (-1: not added).
  std::vector<int> slot(tunings.size(), -1);
  std::vector<Runner> runners;
  runners.reserve(tunings.size() + 1);
  // Lowers and compiles tuning i; a candidate whose kernel IR equals an earlier one's (a K block
  // larger than K, a tile the shape clamps) is counted, not compiled again.
  auto add_generated = [&](size_t i) {
    KernelCandidate c;
    c.name = tuning_name(tunings[i]);
    c.tuning = tunings[i];
    const auto t0 = WallClock::now();
    kir::LowerOptions o = options;
    o.tuning = tunings[i];
    auto l = kir::lower_region(region, o);
    if (l.ok()) {
      std::string code = kir::to_string(l->fn);
      if (std::find(codes.begin(), codes.end(), code) != codes.end()) {
        ++sel.duplicates;
        return;
      }
      codes.push_back(std::move(code));
      codegen::CompileOptions co;
      co.tier = select.codegen_tier;
      auto k = codegen::compile(l->fn, co);
      auto p = k.ok() ? prepare_inputs(region, l->input_layouts) : Expected<std::vector<Tensor>>(k.status());
      if (k.ok() && p.ok()) {
        lowered[i] = std::move(l).value();
        kernels[i] = std::move(k).value();
        prepared[i] = std::move(p).value();
      } else if (k.ok()) {
        c.status = p.status();
      } else {
        c.status = k.status();
      }
    } else {
      c.status = l.status();
    }
    c.compile_us = static_cast<int64_t>(us_since(t0));
    slot[i] = static_cast<int>(sel.candidates.size());
    sel.candidates.push_back(std::move(c));
    if (!sel.candidates.back().status.ok()) return;
    args[i] = buffers;
    for (size_t j = 0; j < prepared[i].size(); ++j)
      if (prepared[i][j].numel() > 0) args[i][j] = prepared[i][j].raw_data();
    if (lowered[i].workspace_bytes > 0) {
      workspaces[i] = Tensor::empty(DType::kUInt8, {lowered[i].workspace_bytes});
      args[i].push_back(workspaces[i].raw_data());
    }
    const codegen::CompiledKernel* k = &kernels[i];
    const std::vector<void*>* a = &args[i];
    runners.push_back({slot[i], [k, a, &dims] {
                         (*k)(a->data(), dims.data());
                         return Status();
                       },
                       {}, 1});
  };
  // Warms a runner up (page faults, caches, oneDNN primitive creation), times one more call and
  // sizes its repetitions; returns that call's µs.
  auto warm_up = [&](Runner& r) -> Expected<double> {
    TJ_RETURN_IF_ERROR(r.run());
    const auto t0 = WallClock::now();
    TJ_RETURN_IF_ERROR(r.run());
    const double one = std::max(us_since(t0), 0.05);
    r.calls_per_rep = std::max<int64_t>(1, static_cast<int64_t>(select.min_rep_us / one));
    return one;
  };

  // The default candidate and the library first: a region faster than min_search_us under either
  // is not searched further (each other candidate costs a compile, ~0.1 s, for a few µs).
  if (!tunings.empty()) add_generated(0);
  if (run_library) {
    KernelCandidate c;
    c.name = "library (tier 0)";
    c.library = true;
    runners.push_back({static_cast<int>(sel.candidates.size()), run_library, {}, 1});
    sel.candidates.push_back(std::move(c));
  }
  double fastest = std::numeric_limits<double>::infinity();
  for (Runner& r : runners) {
    TJ_ASSIGN_OR_RETURN(double one, warm_up(r));
    fastest = std::min(fastest, one);
  }
  sel.searched = runners.empty() || fastest >= select.min_search_us;
  if (sel.searched) {
    const size_t before = runners.size();
    for (size_t i = 1; i < tunings.size(); ++i) add_generated(i);
    for (size_t i = before; i < runners.size(); ++i) TJ_RETURN_IF_ERROR(warm_up(runners[i]).status());
  } else {
    sel.unsearched = static_cast<int>(tunings.size()) - 1;
  }
  if (runners.empty()) {
    std::string why;
    for (const auto& c : sel.candidates) why += (why.empty() ? "" : "; ") + c.name + ": " + c.status.message();
    return unsupported("region '{}': no kernel candidate compiled ({})", region.name, why);
  }
  for (int rep = 0; rep < std::max(1, select.reps); ++rep)
    for (Runner& r : runners) {
      const auto t0 = WallClock::now();
      for (int64_t i = 0; i < r.calls_per_rep; ++i) TJ_RETURN_IF_ERROR(r.run());
      r.rep_us.push_back(us_since(t0) / static_cast<double>(r.calls_per_rep));
    }
  for (Runner& r : runners) {
    std::sort(r.rep_us.begin(), r.rep_us.end());
    KernelCandidate& c = sel.candidates[static_cast<size_t>(r.cand)];
    c.best_us = r.rep_us.front();
    c.median_us = r.rep_us[r.rep_us.size() / 2];
  }
  for (size_t i = 0; i < sel.candidates.size(); ++i) {
    const KernelCandidate& c = sel.candidates[i];
    if (!c.status.ok() || c.best_us <= 0) continue;
    if (sel.chosen < 0 || c.best_us < sel.candidates[sel.chosen].best_us) sel.chosen = static_cast<int>(i);
  }
  if (!sel.choice().library) {
    const size_t i = static_cast<size_t>(std::find(slot.begin(), slot.end(), sel.chosen) - slot.begin());
    sel.lowered = std::move(lowered[i]);
    sel.kernel = std::move(kernels[i]);
    sel.prepared_inputs = std::move(prepared[i]);
  }
  sel.total_us = static_cast<int64_t>(us_since(t_start));
  return sel;
}

}  // namespace tierjit::runtime
