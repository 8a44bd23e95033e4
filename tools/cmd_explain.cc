// `tierjit explain MODEL`: the regions the partitioner makes of a model after the tier-0 pass
// pipeline, one block per region and a summary per kind (docs/passes.md). It reads the internal
// graph (loader, passes), unlike `run`, which goes through the public Session API only.
#include "cmd_explain.h"

#include <fmt/format.h>

#include "interp/evaluate_node.h"
#include "onnx/loader.h"
#include "passes/partition.h"
#include "passes/pipeline.h"

namespace tierjit::cli {

int cmd_explain(const ExplainOptions& opts) {
  ir::Model model = onnx_import::load_model(opts.model).value_or_throw();
  const size_t loaded_nodes = model.graph->nodes().size();
  passes::PassContext pctx;
  pctx.evaluate_node = [](const ir::Node& node, const std::vector<Tensor>& inputs) {
    return interp::evaluate_node(node, inputs, interp::ExecOptions{});
  };
  passes::run_tier0_pipeline(*model.graph, pctx).with_prefix(opts.model).throw_if_error();
  passes::PartitionOptions popts;
  popts.fuse = !opts.no_fuse;
  passes::Partition part = passes::partition_graph(*model.graph, popts).value_or_throw();

  fmt::print("model {}: {} nodes loaded, {} after the tier-0 passes, {} regions\n", opts.model,
             loaded_nodes, model.graph->nodes().size(), part.regions.size());
  if (opts.print_graph) fmt::print("{}", ir::print_graph(*model.graph));
  fmt::print("{}", passes::format_partition(part));
  return 0;
}

}  // namespace tierjit::cli
