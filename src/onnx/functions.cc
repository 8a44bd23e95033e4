// Inlining of model-local functions (ModelProto.functions, IR version 8): a call node is replaced
// by a copy of the function body with internal values renamed uniquely ("f__3__name"), formal
// inputs/outputs bound to the call's names (an omitted optional input becomes ""), attribute
// references (ref_attr_name) bound to the call's attributes (dropped when the call omits them, so
// the op's default applies), and nested calls expanded in turn. Subgraphs inside a body (If,
// Loop, Scan) get the same renaming for the outer names they read.
#include <functional>
#include <set>

#include <fmt/format.h>

#include "onnx/import_internal.h"

namespace tierjit::onnx_import {

namespace {

constexpr int kMaxInlineDepth = 64;

using Renamer = std::function<std::string(const std::string&)>;
using CallAttrs = std::map<std::string, const onnx::AttributeProto*>;

void rewrite_subgraph(onnx::GraphProto* g, const Renamer& rename, std::set<std::string> shadow,
                      const CallAttrs& call_attrs);

// Binds ref_attr_name attributes of `node` to the call's attributes and renames the outer reads of
// its subgraphs; `shadow` holds the names defined by the subgraphs enclosing `node` inside the
// function body (those are not renamed).
void bind_attributes(onnx::NodeProto* node, const Renamer& rename, const std::set<std::string>& shadow,
                     const CallAttrs& call_attrs) {
  auto* attrs = node->mutable_attribute();
  for (int i = 0; i < attrs->size();) {
    onnx::AttributeProto* a = attrs->Mutable(i);
    if (a->has_ref_attr_name()) {
      auto it = call_attrs.find(a->ref_attr_name());
      if (it == call_attrs.end()) {
        attrs->DeleteSubrange(i, 1);  // not given by the call: the op's default applies
        continue;
      }
      std::string name = a->name();
      *a = *it->second;
      a->set_name(name);
      ++i;
      continue;  // the caller's attribute lives in the caller's scope: no renaming inside it
    }
    if (a->has_g()) rewrite_subgraph(a->mutable_g(), rename, shadow, call_attrs);
    for (auto& g : *a->mutable_graphs()) rewrite_subgraph(&g, rename, shadow, call_attrs);
    ++i;
  }
}

void rewrite_subgraph(onnx::GraphProto* g, const Renamer& rename, std::set<std::string> shadow,
                      const CallAttrs& call_attrs) {
  for (const auto& vi : g->input()) shadow.insert(vi.name());
  for (const auto& t : g->initializer()) shadow.insert(t.name());
  for (const auto& n : g->node())
    for (const std::string& o : n.output()) shadow.insert(o);
  auto outer = [&](std::string* name) {
    if (!name->empty() && !shadow.count(*name)) *name = rename(*name);
  };
  for (auto& n : *g->mutable_node()) {
    for (auto& in : *n.mutable_input()) outer(&in);
    bind_attributes(&n, rename, shadow, call_attrs);
  }
  for (auto& vi : *g->mutable_output()) outer(vi.mutable_name());
}

Status expand_impl(ImportContext& ctx, std::shared_ptr<onnx::NodeProto> owned,
                   const onnx::NodeProto& node, const OpsetMap& opsets,
                   std::vector<ExpandedNode>& out, int depth) {
  auto fit = ctx.functions.find({normalize_domain(node.domain()), node.op_type()});
  if (fit == ctx.functions.end()) {
    out.push_back(ExpandedNode{&node, std::move(owned), &opsets});
    return Status();
  }
  if (depth >= kMaxInlineDepth)
    return invalid_model("{}: model-local functions nest deeper than {} calls (recursion?)",
                         describe_node(node), kMaxInlineDepth);
  const onnx::FunctionProto& f = *fit->second.proto;
  const std::string prefix = fmt::format("{}__{}__", f.name(), ++ctx.inline_counter);

  std::map<std::string, std::string> io;  // formal name -> the call's name
  for (int i = 0; i < f.input_size(); ++i)
    io[f.input(i)] = i < node.input_size() ? node.input(i) : std::string();
  for (int i = 0; i < f.output_size(); ++i)
    if (i < node.output_size() && !node.output(i).empty()) io[f.output(i)] = node.output(i);
  Renamer rename = [&](const std::string& name) -> std::string {
    if (name.empty()) return name;
    auto it = io.find(name);
    return it != io.end() ? it->second : prefix + name;
  };
  CallAttrs call_attrs;
  for (const auto& a : node.attribute()) call_attrs[a.name()] = &a;

  for (int k = 0; k < f.node_size(); ++k) {
    const onnx::NodeProto& body_node = f.node(k);
    auto copy = std::make_shared<onnx::NodeProto>(body_node);
    for (auto& in : *copy->mutable_input()) in = rename(in);
    for (auto& o : *copy->mutable_output()) o = rename(o);
    std::string base = body_node.name().empty() ? std::to_string(k)
                                                : body_node.name();
    copy->set_name(node.name().empty() ? prefix + base : node.name() + "/" + prefix + base);
    bind_attributes(copy.get(), rename, {}, call_attrs);
    const onnx::NodeProto& ref = *copy;
    TJ_RETURN_IF_ERROR(expand_impl(ctx, std::move(copy), ref, fit->second.opsets, out, depth + 1));
  }
  return Status();
}

}  // namespace

Status expand_node(ImportContext& ctx, const onnx::NodeProto& node, const OpsetMap& opsets,
                   std::vector<ExpandedNode>& out, int depth) {
  return expand_impl(ctx, nullptr, node, opsets, out, depth);
}

}  // namespace tierjit::onnx_import
