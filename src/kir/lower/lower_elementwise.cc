// Lowering of elementwise regions: each group of same-shaped outputs gets one loop nest over the
// output (broadcast plan of lower_index.h: size-1 axes dropped, axes collapsed), whose body
// evaluates the region's node tree inline (lower_ops.h; every node's value bound once with a let)
// from loads of the region inputs, and stores every output of the group. Tier 1: plain nests, the
// innermost loop a vectorize hint. Tier 2: the innermost loop vectorized to options.vector_lanes
// plus a scalar tail (kir::vectorize: ramp loads, broadcast operands); the outer loop parallel
// when options.threads > 1 and the output has >= 64K elements. When run-time dims may broadcast
// (generic level), a version assuming they do not is taken when the call's dims allow.
#include <unordered_map>
#include <unordered_set>

#include "kir/builder.h"
#include "kir/lower/lower_index.h"
#include "kir/lower/lower_internal.h"
#include "kir/lower/lower_ops.h"
#include "kir/transforms.h"
#include "passes/partition.h"

namespace tierjit::kir::lowering {

namespace {

/// Elements from which tier 2 runs the outer loop in parallel (when threads > 1).
constexpr int64_t kParallelMinElements = int64_t{1} << 16;
/// Vector iterations per parallel chunk of a one-loop nest.
constexpr int64_t kChunkElements = 16384;

bool is_elementwise(const ir::Node& n) {
  const passes::FusionClass c = passes::fusion_class(n.op());
  return c == passes::FusionClass::kElementwiseUnary || c == passes::FusionClass::kElementwiseBinary;
}

Status check_region(const passes::Region& region) {
  for (const ir::Node* n : region.nodes) {
    if (!is_elementwise(*n))
      return unsupported("{}", "region '" + region.name + "': " + n->describe() +
                                   " is not elementwise");
    if (!elementwise_op_supported(*n)) {
      std::vector<Expr> none;
      auto r = lower_elementwise_op(*n, none);  // gives the reason
      return r.status().with_prefix("region '" + region.name + "'");
    }
  }
  for (const ir::Value* v : region.outputs) {
    if (!is_kernel_dtype(v->type().dtype))
      return unsupported("{}", "region '" + region.name + "': output '" + v->name() + "' dtype " +
                                   std::string(dtype_name(v->type().dtype)) + " is not compiled");
  }
  return Status();
}

class Lowering {
 public:
  Lowering(const passes::Region& region, const LowerOptions& options)
      : region_(region), options_(options) {
    for (const ir::Node* n : region.nodes) producer_[n->output(0)] = n;
    for (size_t i = 0; i < region.inputs.size(); ++i) input_index_[region.inputs[i]] = i;
  }

  Expected<LoweredRegion> run();

 private:
  /// One scalar loop body: the loop indices, the lets, the node values so far.
  struct Body {
    const BroadcastPlan* plan = nullptr;
    std::vector<Expr> idx;  ///< per loop axis
    LetScope* lets = nullptr;
    std::unordered_map<const ir::Value*, Expr> memo;
  };

  Expected<Expr> value(const ir::Value* v, Body& b);
  Expected<Stmt> body(const BroadcastPlan& plan, const std::vector<size_t>& outs,
                      std::vector<Expr> idx, const std::string& prefix);
  Expected<Stmt> nest(const BroadcastPlan& plan, const std::vector<size_t>& outs,
                      const std::string& prefix, bool vector, bool parallel);
  void used_inputs(const ir::Value* v, std::unordered_set<size_t>* used) const;

  const passes::Region& region_;
  const LowerOptions& options_;
  std::unordered_map<const ir::Value*, const ir::Node*> producer_;
  std::unordered_map<const ir::Value*, size_t> input_index_;
  std::vector<std::string> notes_;
};

void Lowering::used_inputs(const ir::Value* v, std::unordered_set<size_t>* used) const {
  if (auto it = input_index_.find(v); it != input_index_.end()) {
    used->insert(it->second);
    return;
  }
  auto p = producer_.find(v);
  if (p == producer_.end()) return;
  for (const ir::Value* in : p->second->inputs())
    if (in) used_inputs(in, used);
}

Expected<Expr> Lowering::value(const ir::Value* v, Body& b) {
  if (auto it = b.memo.find(v); it != b.memo.end()) return it->second;
  Expr e;
  if (auto it = input_index_.find(v); it != input_index_.end()) {
    const size_t i = it->second;
    const Type t{options_.inputs[i].dtype, 1};
    Expr c = scalar_constant(v);
    if (!c && i < options_.input_values.size()) c = scalar_immediate(options_.input_values[i]);
    if (c) {
      e = c;
    } else {
      e = load(t, input_buffer_name(i), flat_index(b.idx, b.plan->strides[i]));
    }
  } else {
    auto p = producer_.find(v);
    if (p == producer_.end())
      return invalid_argument("{}", "region '" + region_.name + "': value '" + v->name() +
                                        "' is neither an input nor produced in the region");
    const ir::Node& n = *p->second;
    std::vector<Expr> ops;
    for (const ir::Value* in : n.inputs()) {
      if (!in) {
        ops.push_back(nullptr);
        continue;
      }
      TJ_ASSIGN_OR_RETURN(Expr x, value(in, b));
      ops.push_back(x);
    }
    TJ_ASSIGN_OR_RETURN(e, lower_elementwise_op(n, ops, b.lets));
  }
  e = b.lets->bind(e);
  b.memo[v] = e;
  return e;
}

Expected<Stmt> Lowering::body(const BroadcastPlan& plan, const std::vector<size_t>& outs,
                              std::vector<Expr> idx, const std::string& prefix) {
  LetScope lets(prefix);
  Body b;
  b.plan = &plan;
  b.idx = std::move(idx);
  b.lets = &lets;
  std::vector<Stmt> stores;
  for (size_t j : outs) {
    TJ_ASSIGN_OR_RETURN(Expr v, value(region_.outputs[j], b));
    Expr at = flat_index(b.idx, plan.out_strides);
    stores.push_back(store(output_buffer_name(j), at, v));
  }
  return lets.wrap(stores.size() == 1 ? stores[0] : block(std::move(stores)));
}

/// The loop nest over `plan`: plain loops with the innermost a vectorize hint; with `vector`,
/// the innermost loop vectorized by options.vector_lanes plus a scalar tail (kir::vectorize);
/// with `parallel`, the outermost loop (or chunks of the vector loop of a one-loop nest) parallel.
Expected<Stmt> Lowering::nest(const BroadcastPlan& plan, const std::vector<size_t>& outs,
                              const std::string& prefix, bool vector, bool parallel) {
  const size_t rank = plan.rank();
  std::vector<Expr> idx;
  for (size_t a = 0; a < rank; ++a) idx.push_back(var(prefix + "i" + std::to_string(a)));
  TJ_ASSIGN_OR_RETURN(Stmt s, body(plan, outs, idx, prefix + "s"));
  if (rank == 0) return s;
  const std::string inner = prefix + "i" + std::to_string(rank - 1);
  for (size_t a = rank; a-- > 0;) {
    const ForKind k = a == rank - 1 ? ForKind::kVectorized : ForKind::kSerial;
    s = for_loop(prefix + "i" + std::to_string(a), imm(0), plan.extents[a], s, k);
  }
  if (!vector) return s;
  auto vec = kir::vectorize(s, inner, options_.vector_lanes);
  if (!vec.ok()) {  // keep the scalar loop with the loop vectorizer's hint
    notes_.push_back("not vectorized: " + vec.status().message());
    return s;
  }
  s = *vec;
  if (!parallel) return s;
  std::string par = prefix + "i0";
  if (rank == 1) {  // one loop: parallel over chunks of vector iterations
    const std::string vloop = inner + ".v";
    auto chunked = kir::split(s, vloop, std::max<int64_t>(1, kChunkElements / options_.vector_lanes),
                              TailStrategy::kLoop);
    if (!chunked.ok()) return s;
    s = *chunked;
    par = vloop + ".o";
  }
  auto p = kir::parallelize(s, par);
  if (!p.ok()) {
    notes_.push_back("not parallel: " + p.status().message());
    return s;
  }
  return *p;
}

Expected<LoweredRegion> Lowering::run() {
  TJ_RETURN_IF_ERROR(check_region(region_));
  if (!options_.tuning.empty())
    return invalid_argument("{}", "region '" + region_.name + "': elementwise lowering has no knob '" +
                                      options_.tuning.begin()->first + "'");
  for (size_t i = 0; i < region_.inputs.size(); ++i) {
    if (options_.inputs[i].dtype != region_.inputs[i]->type().dtype)
      return invalid_argument("{}", "region '" + region_.name + "': input " + std::to_string(i) +
                                        " spec dtype differs from the graph's");
  }
  for (size_t j = 0; j < region_.outputs.size(); ++j) {
    if (options_.outputs[j].dtype != region_.outputs[j]->type().dtype)
      return invalid_argument("{}", "region '" + region_.name + "': output " + std::to_string(j) +
                                        " spec dtype differs from the graph's");
  }
  LoweredRegion out;
  out.fn = abi_function(region_.name, options_);

  // Outputs of one shape share a loop nest (and so their common subexpressions).
  std::vector<TensorDims> odims;
  for (size_t j = 0; j < region_.outputs.size(); ++j) odims.push_back(output_dims(region_, options_, j));
  std::vector<std::vector<size_t>> groups;
  for (size_t j = 0; j < odims.size(); ++j) {
    bool placed = false;
    for (auto& g : groups) {
      const TensorDims& o = odims[g[0]];
      bool same = o.size() == odims[j].size();
      for (size_t k = 0; same && k < o.size(); ++k) same = same_dim(o[k], odims[j][k]);
      if (same) {
        g.push_back(j);
        placed = true;
        break;
      }
    }
    if (!placed) groups.push_back({j});
  }

  std::vector<Stmt> nests;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string prefix = "g" + std::to_string(g) + "_";
    std::unordered_set<size_t> used;
    for (size_t j : groups[g]) used_inputs(region_.outputs[j], &used);
    std::vector<TensorDims> ins(region_.inputs.size());
    for (size_t i : used) ins[i] = input_dims(region_, options_, i);
    const TensorDims& od = odims[groups[g][0]];
    BroadcastPlan plan = plan_broadcast(od, ins, prefix);
    const bool vector = options_.tier >= 2 && options_.vector_lanes >= 2;
    const int64_t n = const_numel(od);
    const bool may_parallel = vector && options_.threads > 1 && plan.rank() > 0 &&
                              (n < 0 || n >= kParallelMinElements);
    // The nest for one plan: serial, or chosen at run time (or compile time) to be parallel.
    auto versions = [&](const BroadcastPlan& pl) -> Expected<Stmt> {
      TJ_ASSIGN_OR_RETURN(Stmt s, nest(pl, groups[g], prefix, vector, false));
      if (may_parallel) {
        TJ_ASSIGN_OR_RETURN(Stmt p, nest(pl, groups[g], prefix, vector, true));
        s = n >= 0 ? p
                   : if_then_else(compare(CmpOp::kGe, numel(od), imm(kParallelMinElements)), p, s);
      }
      return wrap_lets(pl.lets, s);
    };
    TJ_ASSIGN_OR_RETURN(Stmt s, versions(plan));
    if (plan.has_unknown) {  // generic: a fast version for calls that broadcast no run-time dim
      BroadcastPlan fast = plan_broadcast(od, ins, prefix, true);
      TJ_ASSIGN_OR_RETURN(Stmt f, versions(fast));
      Expr cond = fast.assumptions[0];
      for (size_t k = 1; k < fast.assumptions.size(); ++k)
        cond = binary(BinaryOp::kAnd, cond, fast.assumptions[k]);
      s = if_then_else(cond, f, s);
      notes_.push_back("out" + std::to_string(groups[g][0]) + ": " +
                       std::to_string(fast.assumptions.size()) +
                       " run-time dim(s) may broadcast: a version for equal dims (" +
                       std::to_string(fast.rank()) + " loop(s)) and a general one");
    }
    nests.push_back(s);
    std::string outs_text;
    for (size_t j : groups[g]) outs_text += (outs_text.empty() ? "out" : ", out") + std::to_string(j);
    notes_.push_back(outs_text + ": " + std::to_string(plan.rank()) + " loop(s) over rank " +
                     std::to_string(od.size()) +
                     (vector ? ", inner loop vectorized by " + std::to_string(options_.vector_lanes) +
                                   " with a scalar tail"
                             : ", inner loop a vectorize hint") +
                     (may_parallel ? (n < 0 ? ", parallel outer loop from 65536 elements"
                                            : ", parallel outer loop")
                                   : ""));
  }
  out.fn.body = nests.size() == 1 ? nests[0] : block(std::move(nests));
  out.notes = std::move(notes_);
  return out;
}

}  // namespace

Expected<LoweredRegion> lower_elementwise(const passes::Region& region, const LowerOptions& options) {
  return Lowering(region, options).run();
}

bool elementwise_supported(const passes::Region& region) { return check_region(region).ok(); }

}  // namespace tierjit::kir::lowering
