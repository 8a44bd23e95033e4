// Region: a convex subgraph of the top-level graph that later tiers compile and dispatch as one
// unit (a fusion group), as the partitioning pass (partition.h) produces it. Plain data: the
// nodes, the values crossing its boundary, its kind. Also the text form `tierjit explain` prints.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace tierjit::passes {

/// What a region is, and so how later tiers treat it (DESIGN.md "Region").
enum class RegionKind {
  kElementwise,     ///< chain of elementwise / broadcasting ops
  kMatMulEpilogue,  ///< one MatMul, Gemm or Conv (the anchor) plus its elementwise epilogue
  kReduction,       ///< one Reduce*/Softmax/LogSoftmax/LayerNormalization plus prologue/epilogue
  kShapeOnly,       ///< shape arithmetic (Shape, Gather/Slice on shapes, Concat of dims, ...):
                    ///< evaluated when a Plan is made, never compiled
  kOpaque,          ///< one op without a lowering: stays on tier 0
  kRecurrent,       ///< one LSTM or GRU node (the anchor): the whole recurrence over time,
                    ///< compiled as one kernel (kir/lower/lower_recurrent.cc)
};

/// "elementwise", "matmul_epilogue", "reduction", "shape_only", "opaque", "recurrent".
std::string_view region_kind_name(RegionKind kind);

/// True for the kinds the compiled tiers lower (kir/lower/lower.h): every kind but kShapeOnly and
/// kOpaque.
inline bool is_compiled_kind(RegionKind kind) {
  return kind != RegionKind::kShapeOnly && kind != RegionKind::kOpaque;
}

struct Region {
  int id = -1;        ///< position in Partition::regions (a topological order of regions)
  std::string name;   ///< short and stable: "<anchor op>_<id>" ("gemm_0"), "elementwise_3", ...
  RegionKind kind = RegionKind::kOpaque;
  std::vector<const ir::Node*> nodes;    ///< in the graph's topological order
  const ir::Node* anchor = nullptr;      ///< MatMul/Gemm/Conv, the reduction, or the LSTM/GRU
                                         ///< of a recurrent region; else nullptr
  /// Conv regions: the MaxPool/AveragePool the epilogue's last value feeds, the region's last node
  /// (partition.h rule 4b); else nullptr. The region's output is then the pool's output.
  const ir::Node* pool = nullptr;
  /// Values the region reads but does not produce: feeds, constants, other regions' outputs, and
  /// outer values its nodes' subgraphs capture. In order of first use, no duplicates.
  std::vector<const ir::Value*> inputs;
  /// Values the region produces that are read outside it (by another region, as a graph output,
  /// or through a capture). In production order.
  std::vector<const ir::Value*> outputs;
};

/// A graph split into regions: every node of the top-level graph in exactly one region; each
/// region convex (no path leaves it and re-enters); regions in a topological order.
struct Partition {
  std::vector<Region> regions;
  std::unordered_map<const ir::Node*, int> region_of;  ///< node -> index into regions

  /// Number of regions of `kind`.
  size_t count(RegionKind kind) const;
};

/// Text block of one region, as `tierjit explain` prints it:
///   region 2 'gemm_2': matmul_epilogue, 6 nodes
///     ops:     /fc1/Gemm (Gemm), /act/Div (Div), ...
///     inputs:  %x: float32[N,784]; %fc1.weight: const float32[256,784]
///     outputs: %h1: float32[N,256]
std::string format_region(const Region& region);
/// Every region's block, then "summary: N regions: 3 matmul_epilogue, 1 reduction, ...".
std::string format_partition(const Partition& partition);

}  // namespace tierjit::passes
