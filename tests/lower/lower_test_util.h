// Differential testing of lowerings against tier 0: builds a graph (tests/passes GraphBuilder),
// runs it node by node through the tier-0 kernels on given feeds (every value kept), partitions
// it, and for each region with a lowering lowers it at a specialization level and tier, compiles
// it with codegen and runs it on the tier-0 values of its inputs; its outputs must match tier 0's
// within the stated tolerance (NaN must match NaN; integers and bools exactly).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "interp/evaluate_node.h"
#include "kir/lower/lower.h"
#include "passes/partition.h"
#include "passes/pass_test_util.h"
#include "runtime/signature.h"

namespace tierjit::lower_testing {

using passes::testing::GraphBuilder;

struct Tolerance {
  double rtol = 1e-5;
  double atol = 1e-6;
};

/// Random float32 tensor, uniform in [lo, hi), seeded.
inline Tensor random_f32(Shape shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  Tensor t = Tensor::empty(DType::kFloat32, std::move(shape));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  for (float& v : t.span<float>()) v = u(rng);
  return t;
}

/// Every value of `g` computed by tier 0 (node by node in topological order).
inline std::map<const ir::Value*, Tensor> run_tier0(const ir::Graph& g, const std::vector<Tensor>& feeds) {
  std::map<const ir::Value*, Tensor> vals;
  auto fi = g.feed_inputs();
  EXPECT_EQ(fi.size(), feeds.size());
  for (size_t i = 0; i < fi.size() && i < feeds.size(); ++i) vals[fi[i]] = feeds[i];
  for (const auto& node : g.nodes()) {
    const ir::Node* n = node.get();
    std::vector<Tensor> ins;
    for (const ir::Value* v : n->inputs()) {
      if (!v) { ins.emplace_back(); continue; }
      if (v->is_constant()) {
        vals[v] = v->constant();
        ins.push_back(v->constant());
        continue;
      }
      ins.push_back(vals.at(v));
    }
    auto out = interp::evaluate_node(*n, ins, interp::ExecOptions{});
    EXPECT_TRUE(out.ok()) << out.status().message();
    if (!out.ok()) return vals;
    for (size_t i = 0; i < n->outputs().size(); ++i)
      if (n->output(i)) vals[n->output(i)] = (*out)[i];
  }
  return vals;
}

/// The spec of `t` (a value of type `v`) at `level`: dims the graph fixes are constants at every
/// level; symbolic dims are constants (exact), -1 with their bucket (shape class; 0 and 1 stay
/// constants), or -1 (generic).
inline kir::TensorSpec spec_of(const ir::Value& v, const Tensor& t, kir::ShapeLevel level) {
  kir::TensorSpec s;
  s.dtype = t.dtype();
  for (size_t d = 0; d < t.shape().size(); ++d) {
    int64_t size = t.shape()[d];
    bool fixed = v.is_constant() ||
                 (v.type().shape && d < v.type().shape->size() && (*v.type().shape)[d].is_constant());
    if (fixed || level == kir::ShapeLevel::kExact) {
      s.dims.push_back(size);
      s.bounds.push_back(-1);
    } else if (level == kir::ShapeLevel::kShapeClass) {
      int64_t b = runtime::bucket(size);
      s.dims.push_back(b <= 1 ? size : -1);
      s.bounds.push_back(b <= 1 ? -1 : b);
    } else {
      s.dims.push_back(-1);
      s.bounds.push_back(-1);
    }
  }
  return s;
}

inline ::testing::AssertionResult close(const Tensor& got, const Tensor& want, Tolerance tol,
                                        const std::string& what) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype())
    return ::testing::AssertionFailure() << what << ": shape/dtype differ";
  if (want.dtype() == DType::kFloat32) {
    auto g = got.span<const float>();
    auto w = want.span<const float>();
    for (size_t i = 0; i < w.size(); ++i) {
      if (std::isnan(w[i]) || std::isnan(g[i])) {
        if (std::isnan(w[i]) != std::isnan(g[i]))
          return ::testing::AssertionFailure() << what << " [" << i << "]: got " << g[i] << ", want " << w[i];
        continue;
      }
      if (std::isinf(w[i]) && g[i] == w[i]) continue;
      double err = std::fabs(double(g[i]) - double(w[i]));
      if (!(err <= tol.atol + tol.rtol * std::fabs(double(w[i]))))
        return ::testing::AssertionFailure() << what << " [" << i << "] of " << w.size() << ": got "
                                             << g[i] << ", want " << w[i] << " (err " << err << ")";
    }
    return ::testing::AssertionSuccess();
  }
  if (std::memcmp(got.raw_data(), want.raw_data(), want.nbytes()) != 0)
    return ::testing::AssertionFailure() << what << ": values differ (exact dtype "
                                         << dtype_name(want.dtype()) << ")";
  return ::testing::AssertionSuccess();
}

struct DiffOptions {
  kir::ShapeLevel level = kir::ShapeLevel::kExact;
  int tier = 2;
  int threads = 1;
  Tolerance tol;
  std::map<std::string, int64_t> tuning;
  /// Regions of these kinds must have a lowering (fail otherwise); other kinds are skipped.
  std::vector<passes::RegionKind> kinds = {passes::RegionKind::kElementwise,
                                           passes::RegionKind::kReduction,
                                           passes::RegionKind::kMatMulEpilogue};
  bool fuse = true;
  /// Lets the lowering ask for prepared layouts of constant inputs (as the runtime does); the
  /// harness then passes kir::prepare_input's data for them.
  bool prepare_constants = true;
  /// Filled with the input layouts of the last region checked (to assert a path was taken).
  std::vector<kir::InputLayout>* layouts_seen = nullptr;
};

/// Runs every region of `g` of a kind in opts.kinds through lower -> compile -> call and compares
/// with tier 0. Returns the number of regions checked (a test should assert it is > 0).
inline int expect_regions_match_tier0(const ir::Graph& g, const std::vector<Tensor>& feeds,
                                      const DiffOptions& opts = {}) {
  auto vals = run_tier0(g, feeds);
  passes::PartitionOptions po;
  po.fuse = opts.fuse;
  auto part = passes::partition_graph(g, po);
  EXPECT_TRUE(part.ok()) << part.status().message();
  if (!part.ok()) return 0;
  int checked = 0;
  for (const passes::Region& r : part->regions) {
    bool wanted = false;
    for (auto k : opts.kinds) wanted |= (k == r.kind);
    if (!wanted) continue;
    std::string where = "region '" + r.name + "' (" + kir::shape_level_name(opts.level) +
                        ", tier " + std::to_string(opts.tier) + ")";
    EXPECT_TRUE(kir::has_lowering(r)) << where << " has no lowering:\n" << passes::format_region(r);
    kir::LowerOptions lo;
    lo.level = opts.level;
    lo.tier = opts.tier;
    lo.threads = opts.threads;
    lo.tuning = opts.tuning;
    lo.vector_lanes = codegen::host_cpu().f32_lanes();
    lo.prepare_constant_inputs = opts.prepare_constants;
    std::vector<Tensor> ins, outs, want;
    for (const ir::Value* v : r.inputs) {
      ins.push_back(vals.at(v));
      lo.inputs.push_back(spec_of(*v, ins.back(), opts.level));
    }
    for (const ir::Value* v : r.outputs) {
      want.push_back(vals.at(v));
      outs.push_back(Tensor::empty(want.back().dtype(), want.back().shape()));
      // Poison the outputs so an element the kernel never writes shows up.
      if (outs.back().dtype() == DType::kFloat32)
        for (float& x : outs.back().span<float>()) x = 12345.f;
      lo.outputs.push_back(spec_of(*v, want.back(), opts.level));
    }
    auto lowered = kir::lower_region(r, lo);
    EXPECT_TRUE(lowered.ok()) << where << ": " << lowered.status().message();
    if (!lowered.ok()) continue;
    EXPECT_EQ(lowered->input_layouts.size(), r.inputs.size()) << where;
    if (opts.layouts_seen) *opts.layouts_seen = lowered->input_layouts;
    for (size_t i = 0; i < lowered->input_layouts.size() && i < ins.size(); ++i) {
      if (lowered->input_layouts[i] == kir::InputLayout::kAsIs) continue;
      EXPECT_TRUE(opts.prepare_constants && r.inputs[i]->is_constant()) << where << " input " << i;
      auto prepared = kir::prepare_input(lowered->input_layouts[i], ins[i]);
      EXPECT_TRUE(prepared.ok()) << where << ": " << prepared.status().message();
      if (prepared.ok()) ins[i] = std::move(prepared).value();  // dims below stay the input's own
    }
    codegen::CompileOptions co;
    co.tier = opts.tier >= 2 ? codegen::Tier::kTier2 : codegen::Tier::kTier1;
    auto kernel = codegen::compile(lowered->fn, co);
    EXPECT_TRUE(kernel.ok()) << where << ": " << kernel.status().message() << "\n"
                             << kir::to_string(lowered->fn);
    if (!kernel.ok()) continue;
    std::vector<void*> buffers;
    std::vector<int64_t> dims;
    for (size_t i = 0; i < ins.size(); ++i) {
      buffers.push_back(ins[i].raw_data());
      for (int64_t d : vals.at(r.inputs[i]).shape()) dims.push_back(d);
    }
    for (Tensor& t : outs) {
      buffers.push_back(t.raw_data());
      for (int64_t d : t.shape()) dims.push_back(d);
    }
    Tensor workspace;
    if (lowered->workspace_bytes > 0) {
      workspace = Tensor::empty(DType::kUInt8, {lowered->workspace_bytes});
      buffers.push_back(workspace.raw_data());
    }
    // TIERJIT_TEST_DUMP_KIR=1 prints each lowered kernel before it runs (a crash names its code).
    if (getenv("TIERJIT_TEST_DUMP_KIR")) fprintf(stderr, "%s\n", kir::to_string(lowered->fn).c_str());
    (*kernel)(buffers.data(), dims.data());
    for (size_t i = 0; i < outs.size(); ++i)
      EXPECT_TRUE(close(outs[i], want[i], opts.tol, where + " output " + std::to_string(i)))
          << kir::to_string(lowered->fn);
    ++checked;
  }
  return checked;
}

/// Runs expect_regions_match_tier0 at every level (exact, shape class, generic) and tiers 1 and 2.
inline void expect_all_levels_match(const ir::Graph& g, const std::vector<Tensor>& feeds,
                                    DiffOptions opts = {}) {
  for (auto level : {kir::ShapeLevel::kExact, kir::ShapeLevel::kShapeClass, kir::ShapeLevel::kGeneric})
    for (int tier : {1, 2}) {
      opts.level = level;
      opts.tier = tier;
      EXPECT_GT(expect_regions_match_tier0(g, feeds, opts), 0)
          << "no region checked at " << kir::shape_level_name(level) << " tier " << tier;
    }
}

}  // namespace tierjit::lower_testing
