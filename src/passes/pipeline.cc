// Pass order, one line per pass with why it sits there.
#include "passes/pipeline.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "passes/canonicalize.h"
#include "passes/common_subexpression_elimination.h"
#include "passes/constant_folding.h"
#include "passes/dead_code_elimination.h"
#include "passes/shape_inference.h"
#include "support/log.h"

namespace tierjit::passes {

namespace {

using PassFn = Status (*)(ir::Graph&, const PassContext&);
struct PassEntry {
  const char* name;
  PassFn fn;
};

// The order, one line per pass with why it sits there.
constexpr PassEntry kTier0Pipeline[] = {
    // First: every later pass, the partitioner and the Plan read value types and symbolic shapes.
    {"infer_shapes", infer_shapes},
    // Before folding: Constant nodes become constants (so folding sees them) and pass-through
    // nodes (Identity, inference Dropout, no-op Cast) disappear; it needs the inferred dtypes.
    {"canonicalize", canonicalize},
    // After canonicalize: folds initializer-only subgraphs through the tier-0 kernels.
    {"fold_constants", fold_constants},
    // After folding: folded constants that came out equal merge too, then repeated shape
    // arithmetic (exporters emit Shape/Gather/Unsqueeze per layer) collapses to one copy.
    {"eliminate_common_subexpressions", eliminate_common_subexpressions},
    // Last: removes what the passes above left unused (folded producers, merged duplicates).
    {"eliminate_dead_code", eliminate_dead_code},
};

}  // namespace

Status run_tier0_pipeline(ir::Graph& graph, const PassContext& ctx) {
  std::string dump_after = ctx.dump_after;
  if (const char* env = std::getenv("TIERJIT_DUMP_AFTER"); env && dump_after.empty()) dump_after = env;
  for (const PassEntry& pass : kTier0Pipeline) {
    auto start = std::chrono::steady_clock::now();
    TJ_RETURN_IF_ERROR(pass.fn(graph, ctx));
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (ctx.time_passes) TJ_LOG_INFO("pass {}: {:.0f} us, {} nodes", pass.name, us, graph.nodes().size());
    else TJ_LOG_DEBUG("pass {}: {:.0f} us, {} nodes", pass.name, us, graph.nodes().size());
    if (dump_after == pass.name || dump_after == "all")
      std::fprintf(stderr, "// after %s\n%s\n", pass.name, ir::print_graph(graph).c_str());
    if (ctx.verify_between_passes) {
      Status st = ir::verify(graph);
      if (!st.ok()) return st.with_prefix(std::string("IR invalid after pass ") + pass.name);
    }
  }
  return Status();
}

}  // namespace tierjit::passes
