// Region kind names and the text form of regions and partitions (region.h).
#include "passes/region.h"

#include <fmt/format.h>

#include "support/escape.h"

namespace tierjit::passes {

namespace {

constexpr RegionKind kAllKinds[] = {RegionKind::kMatMulEpilogue, RegionKind::kReduction,
                                    RegionKind::kElementwise, RegionKind::kShapeOnly,
                                    RegionKind::kOpaque};

std::string value_str(const ir::Value* v) {
  std::string name = v->name().empty() ? fmt::format("%{}", v->id()) : "%" + support::escape_name(v->name());
  const ir::ValueType& t = v->type();
  std::string type = t.dtype == DType::kUndefined ? "?" : std::string(dtype_name(t.dtype));
  type += t.shape ? ir::sym_shape_to_string(*t.shape) : "[?rank]";
  return name + ": " + (v->is_constant() ? "const " : "") + type;
}

template <class T, class F>
std::string join(const std::vector<T>& xs, std::string_view sep, F f) {
  std::string s;
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? std::string(sep) : "") + f(xs[i]);
  return s.empty() ? "-" : s;
}

}  // namespace

std::string_view region_kind_name(RegionKind kind) {
  switch (kind) {
    case RegionKind::kElementwise: return "elementwise";
    case RegionKind::kMatMulEpilogue: return "matmul_epilogue";
    case RegionKind::kReduction: return "reduction";
    case RegionKind::kShapeOnly: return "shape_only";
    case RegionKind::kOpaque: return "opaque";
    case RegionKind::kRecurrent: return "recurrent";
  }
  return "?";
}

size_t Partition::count(RegionKind kind) const {
  size_t n = 0;
  for (const Region& r : regions) n += r.kind == kind;
  return n;
}

std::string format_region(const Region& region) {
  std::string s = fmt::format("region {} '{}': {}, {} node{}\n", region.id, region.name,
                              region_kind_name(region.kind), region.nodes.size(),
                              region.nodes.size() == 1 ? "" : "s");
  s += "  ops:     " + join(region.nodes, ", ", [](const ir::Node* n) {
         std::string op(ir::op_name(n->op()));
         return n->name().empty() ? fmt::format("#{} ({})", n->id(), op) : fmt::format("{} ({})", support::escape_name(n->name()), op);
       }) + "\n";
  s += "  inputs:  " + join(region.inputs, "; ", value_str) + "\n";
  s += "  outputs: " + join(region.outputs, "; ", value_str) + "\n";
  return s;
}

std::string format_partition(const Partition& partition) {
  std::string s;
  size_t nodes = 0;
  for (const Region& r : partition.regions) {
    s += format_region(r);
    nodes += r.nodes.size();
  }
  s += fmt::format("summary: {} nodes in {} regions:", nodes, partition.regions.size());
  bool first = true;
  for (RegionKind k : kAllKinds) {
    s += fmt::format("{} {} {}", first ? "" : ",", partition.count(k), region_kind_name(k));
    first = false;
  }
  // Kinds few models have are named only when present (the line of other models unchanged).
  if (const size_t n = partition.count(RegionKind::kRecurrent)) s += fmt::format(", {} recurrent", n);
  return s + "\n";
}

}  // namespace tierjit::passes
