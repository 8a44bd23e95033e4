// Tier-0 executor (see executor.h).
#include "interp/executor.h"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "interp/kernels/conv_chain.h"
#include "interp/kernels/conv_fusion.h"
#include "interp/kernels/gelu_fusion.h"
#include "interp/kernels/layer_norm_fusion.h"
#include "interp/kernels/matmul_fusion.h"
#include "interp/kernels/softmax_fusion.h"
#include "interp/registry.h"
#include "support/check.h"
#include "support/cpu_load.h"

namespace tierjit::interp {

Expected<const Tensor*> KernelContext::required_input(size_t i) const {
  if (const Tensor* t = input(i)) return t;
  return fail("input {} is required but missing", i);
}

Status KernelContext::check_size(DType dtype, const Shape& shape) const {
  for (int64_t d : shape)
    if (d < 0) return fail("computed a negative dim in output shape {}", shape_to_string(shape));
  int64_t n = shape_numel(shape);
  int64_t es = static_cast<int64_t>(dtype_size(dtype));
  if (es != 0 && n > options_.memory_limit_bytes / es)
    return resource_exhausted("{}: output of shape {} ({}) exceeds the memory limit of {} bytes",
                              node_.describe(), shape_to_string(shape), dtype_name(dtype),
                              options_.memory_limit_bytes);
  return Status();
}

Expected<Tensor*> KernelContext::output(size_t i, DType dtype, Shape shape) {
  TJ_CHECK(i < outputs_.size());
  // Preset by the executor (an activation fused in place after a Conv): reuse it.
  if (outputs_[i].defined() && outputs_[i].dtype() == dtype && outputs_[i].shape() == shape)
    return &outputs_[i];
  TJ_RETURN_IF_ERROR(check_size(dtype, shape));
  outputs_[i] = Tensor::empty(dtype, std::move(shape));
  return &outputs_[i];
}

Expected<std::vector<Tensor>> KernelContext::run_subgraph(const ir::Graph& g,
                                                          std::vector<Tensor> inputs) const {
  if (!run_subgraph_) return internal_error("{}: no subgraph runner", node_.describe());
  return (*run_subgraph_)(g, std::move(inputs));
}

Status check_kernels(const ir::Graph& graph) {
  const KernelRegistry& reg = KernelRegistry::global();
  for (const auto& n : graph.nodes()) {
    if (!reg.find(n->op()))
      return unsupported("{}: no tier-0 kernel for op {} (opset {})", n->describe(),
                         ir::op_name(n->op()), n->opset());
    for (const auto& [name, a] : n->attributes()) {
      if (a.g) TJ_RETURN_IF_ERROR(check_kernels(*a.g));
      for (const auto& sg : a.graphs)
        if (sg) TJ_RETURN_IF_ERROR(check_kernels(*sg));
    }
  }
  return Status();
}

Status validate_feeds(const ir::Graph& graph, const std::vector<Tensor>& feeds) {
  std::vector<ir::Value*> expected = graph.feed_inputs();
  if (feeds.size() != expected.size())
    return invalid_argument("expected {} inputs, got {}", expected.size(), feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) {
    const ir::Value* v = expected[i];
    const Tensor& t = feeds[i];
    if (!t.defined()) return invalid_argument("input '{}': missing", v->name());
    const ir::ValueType& ty = v->type();
    if (ty.dtype != DType::kUndefined && t.dtype() != ty.dtype)
      return invalid_argument("input '{}': expected dtype {}, got {}", v->name(),
                              dtype_name(ty.dtype), dtype_name(t.dtype()));
    if (!ty.shape) continue;
    if (static_cast<size_t>(t.rank()) != ty.shape->size())
      return invalid_argument("input '{}': expected rank {} {}, got rank {} {}", v->name(),
                              ty.shape->size(), ir::sym_shape_to_string(*ty.shape), t.rank(),
                              shape_to_string(t.shape()));
    for (size_t d = 0; d < ty.shape->size(); ++d) {
      const ir::Dim& dim = (*ty.shape)[d];
      if (dim.is_constant() && dim.value != t.dim(static_cast<int64_t>(d)))
        return invalid_argument("input '{}': dim {} must be {}, got {} (shape {})", v->name(), d,
                                dim.value, t.dim(static_cast<int64_t>(d)),
                                shape_to_string(t.shape()));
    }
  }
  return Status();
}

namespace {

// Runs one node on `frame`: its inputs from frame.values, its outputs stored there.
Status run_node(const ir::Node& node, Frame& frame, const ExecOptions& options,
                const SubgraphRunner& runner, std::vector<const Tensor*>& in_ptrs,
                std::vector<Tensor>& outs) {
  KernelFn fn = KernelRegistry::global().find(node.op());
  if (!fn) return unsupported("{}: no tier-0 kernel", node.describe());
  in_ptrs.clear();
  for (ir::Value* v : node.inputs()) in_ptrs.push_back(v ? &frame.values[v->id()] : nullptr);
  outs.assign(node.num_outputs(), Tensor());
  KernelContext ctx(node, in_ptrs, outs, options, &runner);
  TJ_RETURN_IF_ERROR(fn(ctx));
  for (size_t oi = 0; oi < node.num_outputs(); ++oi) {
    ir::Value* v = node.output(oi);
    if (!v) continue;
    if (!outs[oi].defined())
      return internal_error("{}: kernel produced no output {}", node.describe(), oi);
    frame.values[v->id()] = std::move(outs[oi]);
  }
  return Status();
}

// ---- Conv + activation fusion ------------------------------------------------------------------
// A Conv whose only output has exactly one use, by an activation node later in the same node
// list (conv_fusion_for() says which activations and how), is not a graph output and is read by
// no subgraph, runs together with that activation at the Conv's position: the activation's
// other inputs are constants, so it can run there. The Conv's output value then holds the
// activation's output tensor (same shape and dtype; only shapes are read from it afterwards, e.g.
// by a recording), and the activation node is skipped when reached.

bool has_subgraphs(const ir::Graph& g) {
  for (const auto& n : g.nodes())
    for (const auto& [name, a] : n->attributes())
      if (a.g || !a.graphs.empty()) return true;
  return false;
}

// fused[i] = index of the activation fused into Conv nodes[i] (or of the bias Add fused into
// MatMul nodes[i], matmul_fusion.h, or of the LayerNormalization fused with Add nodes[i],
// layer_norm_fusion.h), kSkip for that second node,
// kGeluChain for the Div starting a fused GELU chain (gelu_fusion.h; its other four nodes kSkip),
// kSoftmaxChain for the first node of a Softmax's prologue (softmax_fusion.h; the rest and the
// Softmax kSkip), -1 otherwise; empty when nothing fuses.
constexpr int kSkip = -2;
constexpr int kGeluChain = -3;
constexpr int kSoftmaxChain = -4;  // the first prologue node of a Softmax chain (softmax_fusion.h)
constexpr int kConvChain0 = -5;    // kConvChain0 - k: the last node of conv chain k (runs it)

using ConvChains = std::vector<std::shared_ptr<const ConvChain>>;

// Index of `n` in nodes[from..], or nodes.size().
size_t find_node(std::span<const ir::Node* const> nodes, size_t from, const ir::Node* n) {
  while (from < nodes.size() && nodes[from] != n) ++from;
  return from;
}

// Positions of `members` in nodes[from..], each after the previous one's; nullopt when one is
// not there (a fused chain's other nodes must all be in the list, in order).
std::optional<std::vector<size_t>> find_in_order(std::span<const ir::Node* const> nodes,
                                                 size_t from,
                                                 std::span<const ir::Node* const> members) {
  std::vector<size_t> at;
  at.reserve(members.size());
  for (const ir::Node* m : members) {
    at.push_back(find_node(nodes, from, m));
    if (at.back() == nodes.size()) return std::nullopt;
    from = at.back() + 1;
  }
  return at;
}

void plan_conv_fusion(std::span<const ir::Node* const> nodes, const ir::Graph& g,
                      std::vector<int>& fused, ConvChains& chains) {
  fused.clear();
  chains.clear();
  int subgraphs = -1;  // unknown until a candidate needs it
  // Plans a chain run by nodes[i] (`kind`) whose other members at `at` are skipped; false when
  // nothing may fuse (the graph has subgraphs: captures are not in users()).
  auto claim_chain = [&](size_t i, int kind, const std::vector<size_t>& at) {
    if (subgraphs < 0) subgraphs = has_subgraphs(g) ? 1 : 0;
    if (subgraphs) return false;
    if (fused.empty()) fused.assign(nodes.size(), -1);
    fused[i] = kind;
    for (size_t k : at) fused[k] = kSkip;
    return true;
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (fused.empty() || fused[i] == -1) {
      // A Softmax with its elementwise prologue: every node in this list, in order, and every
      // operand computed before the first node (the chain runs at its position).
      if (const std::optional<SoftmaxChain> c = match_softmax_chain(*nodes[i], g)) {
        std::vector<const ir::Node*> rest(c->ops.begin() + 1, c->ops.end());
        rest.push_back(c->softmax);
        std::optional<std::vector<size_t>> at = find_in_order(nodes, i + 1, rest);
        bool ready = at.has_value();
        for (const ir::Value* v : softmax_chain_operands(*c))
          ready = ready && v && (!v->producer() || find_node(nodes, i, v->producer()) == nodes.size());
        if (ready) {
          if (!claim_chain(i, kSoftmaxChain, *at)) return;
          continue;
        }
      }
    }
    if (nodes[i]->op() == ir::OpKind::Div && (fused.empty() || fused[i] == -1)) {
      // A GELU chain: all five nodes in this list (a region's), in order.
      if (const std::optional<GeluChain> c = match_gelu_chain(*nodes[i], g)) {
        const ir::Node* const rest[4] = {c->erf, c->add, c->mul, c->scale};
        if (std::optional<std::vector<size_t>> at = find_in_order(nodes, i + 1, rest))
          if (!claim_chain(i, kGeluChain, *at)) return;
      }
      continue;
    }
    // Pairs run by their first node (MatMul + bias Add, Add + LayerNormalization): the partner
    // must be in this list, after it.
    const bool unfused = fused.empty() || fused[i] == -1;
    std::optional<const ir::Node*> partner;
    if (unfused && nodes[i]->op() == ir::OpKind::MatMul) partner = matmul_bias_add_for(*nodes[i], g);
    if (unfused && nodes[i]->op() == ir::OpKind::Add) partner = layer_norm_after_add(*nodes[i], g);
    if (partner) {
      const size_t j = find_node(nodes, i + 1, *partner);
      if (j == nodes.size()) continue;
      if (subgraphs < 0) subgraphs = has_subgraphs(g) ? 1 : 0;
      if (subgraphs) return;
      if (fused.empty()) fused.assign(nodes.size(), -1);
      fused[i] = static_cast<int>(j);
      fused[j] = kSkip;
      continue;
    }
    const ir::Node& conv = *nodes[i];
    if (conv.op() != ir::OpKind::Conv || conv.num_outputs() != 1) continue;
    const ir::Value* v = conv.output(0);
    if (!v || v->users().size() != 1) continue;
    const ir::Node* act = v->users()[0];
    if (act->input(0) != v || !conv_fusion_for(*act)) continue;
    bool other_use = false;
    for (size_t k = 1; k < act->num_inputs(); ++k) other_use = other_use || act->input(k) == v;
    if (other_use || std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end())
      continue;
    size_t j = i + 1;
    while (j < nodes.size() && nodes[j] != act) ++j;
    if (j == nodes.size()) continue;
    if (subgraphs < 0) subgraphs = has_subgraphs(g) ? 1 : 0;
    if (subgraphs) return;  // captures are not in users(): keep it simple, fuse nothing
    if (fused.empty()) fused.assign(nodes.size(), -1);
    fused[i] = static_cast<int>(j);
    fused[j] = kSkip;
  }
  // Conv chains over the nodes no other fusion holds (a Conv + activation pair may join).
  if (subgraphs < 0) subgraphs = has_subgraphs(g) ? 1 : 0;
  if (subgraphs) return;
  std::vector<bool> eligible(nodes.size(), true);
  if (!fused.empty()) {
    auto conv_pair = [&](size_t i) { return fused[i] >= 0 && nodes[i]->op() == ir::OpKind::Conv; };
    for (size_t i = 0; i < nodes.size(); ++i) eligible[i] = fused[i] == -1 || conv_pair(i);
    for (size_t i = 0; i < nodes.size(); ++i)
      if (conv_pair(i)) eligible[static_cast<size_t>(fused[i])] = true;
  }
  chains = plan_conv_chains(nodes, g, eligible);
  if (!chains.empty() && fused.empty()) fused.assign(nodes.size(), -1);
  for (size_t k = 0; k < chains.size(); ++k) {
    for (int ni : chains[k]->node_indices) fused[static_cast<size_t>(ni)] = kSkip;
    fused[static_cast<size_t>(chains[k]->node_indices.back())] = kConvChain0 - static_cast<int>(k);
  }
}

// Runs Conv `conv` and activation `act` fused (see above).
Status run_conv_fused(const ir::Node& conv, const ir::Node& act, Frame& frame,
                      const ExecOptions& options, const SubgraphRunner& runner,
                      std::vector<const Tensor*>& in_ptrs, std::vector<Tensor>& outs) {
  const std::optional<ConvFusion> f = conv_fusion_for(act);
  in_ptrs.clear();
  for (ir::Value* v : conv.inputs()) in_ptrs.push_back(v ? &frame.values[v->id()] : nullptr);
  outs.assign(1, Tensor());
  bool applied = false;
  {
    KernelContext ctx(conv, in_ptrs, outs, options, &runner);
    if (f->mode == ConvFusion::Mode::kPostOp) {
      TJ_ASSIGN_OR_RETURN(applied, nn::run_conv_with_post_op(ctx, f->post));
    } else {
      KernelFn fn = KernelRegistry::global().find(conv.op());
      if (!fn) return unsupported("{}: no tier-0 kernel", conv.describe());
      TJ_RETURN_IF_ERROR(fn(ctx));
    }
  }
  if (!outs[0].defined()) return internal_error("{}: kernel produced no output 0", conv.describe());
  Tensor y = std::move(outs[0]);
  if (!applied) {
    // The activation's kernel, writing over the Conv's output (preset output 0).
    KernelFn fn = KernelRegistry::global().find(act.op());
    if (!fn) return unsupported("{}: no tier-0 kernel", act.describe());
    in_ptrs.clear();
    in_ptrs.push_back(&y);
    for (size_t k = 1; k < act.num_inputs(); ++k)
      in_ptrs.push_back(act.input(k) ? &frame.values[act.input(k)->id()] : nullptr);
    outs.assign(1, y);
    KernelContext ctx(act, in_ptrs, outs, options, &runner);
    TJ_RETURN_IF_ERROR(fn(ctx));
    if (!outs[0].defined()) return internal_error("{}: kernel produced no output 0", act.describe());
    y = std::move(outs[0]);
  }
  frame.values[conv.output(0)->id()] = y;
  frame.values[act.output(0)->id()] = std::move(y);
  return Status();
}

// Runs MatMul `matmul` and the bias Add `add` after it as one product with a bias
// (matmul_fusion.h), or the two nodes when the fusion does not apply to these tensors. The
// MatMul's output slot holds the Add's result (same shape; only shapes are read from it later).
Status run_matmul_bias(const ir::Node& matmul, const ir::Node& add, Frame& frame,
                       const ExecOptions& options, const SubgraphRunner& runner,
                       std::vector<const Tensor*>& in_ptrs, std::vector<Tensor>& outs) {
  const ir::Value* bias = add.input(0) == matmul.output(0) ? add.input(1) : add.input(0);
  in_ptrs.clear();
  for (ir::Value* v : matmul.inputs()) in_ptrs.push_back(v ? &frame.values[v->id()] : nullptr);
  outs.assign(1, Tensor());
  bool applied = false;
  {
    KernelContext ctx(matmul, in_ptrs, outs, options, &runner);
    TJ_ASSIGN_OR_RETURN(applied, nn::run_matmul_with_bias(ctx, frame.values[bias->id()]));
  }
  if (!applied) {
    TJ_RETURN_IF_ERROR(run_node(matmul, frame, options, runner, in_ptrs, outs));
    return run_node(add, frame, options, runner, in_ptrs, outs);
  }
  if (!outs[0].defined()) return internal_error("{}: kernel produced no output 0", matmul.describe());
  frame.values[matmul.output(0)->id()] = outs[0];
  frame.values[add.output(0)->id()] = std::move(outs[0]);
  return Status();
}

// Runs Add `add` and the LayerNormalization `ln` reading it as one pass over each row
// (layer_norm_fusion.h), or the two nodes when the fusion does not apply to these tensors. The
// Add's output slot holds the normalized result (same shape; only shapes are read from it later).
Status run_add_layer_norm_pair(const ir::Node& add, const ir::Node& ln, Frame& frame,
                               const ExecOptions& options, const SubgraphRunner& runner,
                               std::vector<const Tensor*>& in_ptrs, std::vector<Tensor>& outs) {
  const Tensor& x0 = frame.values[add.input(0)->id()];
  const Tensor& x1 = frame.values[add.input(1)->id()];
  // The operand of the output's shape goes first: the higher rank, then the more elements.
  const bool swap = x1.defined() && x0.defined() &&
                    (x1.rank() > x0.rank() || (x1.rank() == x0.rank() && x1.numel() > x0.numel()));
  const Tensor& a = swap ? x1 : x0;
  const Tensor& b = swap ? x0 : x1;
  bool applied = false;
  if (a.defined() && b.defined()) {
    in_ptrs.clear();
    in_ptrs.push_back(&a);
    for (size_t k = 1; k < ln.num_inputs(); ++k)
      in_ptrs.push_back(ln.input(k) ? &frame.values[ln.input(k)->id()] : nullptr);
    outs.assign(1, Tensor());
    KernelContext ctx(ln, in_ptrs, outs, options, &runner);
    TJ_ASSIGN_OR_RETURN(applied, run_add_layer_norm(ctx, b));
  }
  if (!applied) {
    TJ_RETURN_IF_ERROR(run_node(add, frame, options, runner, in_ptrs, outs));
    return run_node(ln, frame, options, runner, in_ptrs, outs);
  }
  if (!outs[0].defined()) return internal_error("{}: kernel produced no output 0", ln.describe());
  frame.values[add.output(0)->id()] = outs[0];
  frame.values[ln.output(0)->id()] = std::move(outs[0]);
  return Status();
}

// Runs the GELU chain starting at Div node `div` (planned by plan_conv_fusion) at the Div's
// position: fused when x is float32 (and not a scalar widened by a rank-1 constant), else its
// five nodes one by one. Every intermediate value's slot holds the chain's output (same shape
// and dtype; only shapes are read from them afterwards, e.g. by a recording).
Status run_gelu_fused(const ir::Node& div, Frame& frame, const ExecOptions& options,
                      const SubgraphRunner& runner, std::vector<const Tensor*>& in_ptrs,
                      std::vector<Tensor>& outs) {
  const std::optional<GeluChain> c = match_gelu_chain(div, *frame.graph);
  if (!c) return internal_error("{}: planned GELU chain no longer matches", div.describe());
  const Tensor& x = frame.values[div.input(0)->id()];
  bool widened = false;
  for (const ir::Node* n : {c->div, c->add, c->scale})
    for (const ir::Value* v : n->inputs()) widened = widened || (v->is_constant() && v->constant().rank() > x.rank());
  if (!x.defined() || x.dtype() != DType::kFloat32 || widened) {
    for (const ir::Node* n : {c->div, c->erf, c->add, c->mul, c->scale})
      TJ_RETURN_IF_ERROR(run_node(*n, frame, options, runner, in_ptrs, outs));
    return Status();
  }
  Tensor y = run_gelu_chain(*c, x, options.intra_op_threads);
  for (const ir::Node* n : {c->div, c->erf, c->add, c->mul}) frame.values[n->output(0)->id()] = y;
  frame.values[c->scale->output(0)->id()] = std::move(y);
  return Status();
}

// Runs the Softmax chain starting at prologue node `first` (planned by plan_conv_fusion) at its
// position: fused where run_softmax_chain applies, else its nodes one by one. Every prologue
// output's slot holds the Softmax's output (same shape and dtype; only shapes are read from them
// afterwards).
Status run_softmax_fused(const ir::Node& first, Frame& frame, const ExecOptions& options,
                         const SubgraphRunner& runner, std::vector<const Tensor*>& in_ptrs,
                         std::vector<Tensor>& outs) {
  const std::optional<SoftmaxChain> c = match_softmax_chain(first, *frame.graph);
  if (!c) return internal_error("{}: planned Softmax chain no longer matches", first.describe());
  std::vector<const Tensor*> operands;
  for (const ir::Value* v : softmax_chain_operands(*c)) operands.push_back(&frame.values[v->id()]);
  std::optional<Tensor> y = run_softmax_chain(*c, operands, options.intra_op_threads);
  if (!y) {
    for (const ir::Node* n : c->ops) TJ_RETURN_IF_ERROR(run_node(*n, frame, options, runner, in_ptrs, outs));
    return run_node(*c->softmax, frame, options, runner, in_ptrs, outs);
  }
  for (const ir::Node* n : c->ops) frame.values[n->output(0)->id()] = *y;
  frame.values[c->softmax->output(0)->id()] = std::move(*y);
  return Status();
}

// Runs conv chain `c` (conv_chain.h), or its nodes one by one where it does not apply.
Status run_chain(const ConvChain& c, std::span<const ir::Node* const> nodes, Frame& frame,
                 const ExecOptions& options, const SubgraphRunner& runner,
                 std::vector<const Tensor*>& in_ptrs, std::vector<Tensor>& outs) {
  TJ_ASSIGN_OR_RETURN(bool ran, run_conv_chain(c, frame, options, runner));
  if (ran) return Status();
  for (int ni : c.node_indices)
    TJ_RETURN_IF_ERROR(run_node(*nodes[static_cast<size_t>(ni)], frame, options, runner, in_ptrs, outs));
  return Status();
}

// Runs nodes[ni], or its fused pair, or its conv chain, or nothing for a fused node.
Status run_planned(std::span<const ir::Node* const> nodes, size_t ni, const std::vector<int>& fused,
                   const ConvChains& chains, Frame& frame, const ExecOptions& options,
                   const SubgraphRunner& runner, std::vector<const Tensor*>& in_ptrs,
                   std::vector<Tensor>& outs) {
  const int f = fused.empty() ? -1 : fused[ni];
  if (f == kSkip) return Status();
  if (f <= kConvChain0)
    return run_chain(*chains[static_cast<size_t>(kConvChain0 - f)], nodes, frame, options, runner,
                     in_ptrs, outs);
  if (f == kGeluChain) return run_gelu_fused(*nodes[ni], frame, options, runner, in_ptrs, outs);
  if (f == kSoftmaxChain) return run_softmax_fused(*nodes[ni], frame, options, runner, in_ptrs, outs);
  if (f >= 0 && nodes[ni]->op() == ir::OpKind::Add)
    return run_add_layer_norm_pair(*nodes[ni], *nodes[static_cast<size_t>(f)], frame, options,
                                   runner, in_ptrs, outs);
  if (f >= 0 && nodes[ni]->op() == ir::OpKind::MatMul)
    return run_matmul_bias(*nodes[ni], *nodes[static_cast<size_t>(f)], frame, options, runner,
                           in_ptrs, outs);
  if (f >= 0)
    return run_conv_fused(*nodes[ni], *nodes[static_cast<size_t>(f)], frame, options, runner,
                          in_ptrs, outs);
  return run_node(*nodes[ni], frame, options, runner, in_ptrs, outs);
}

}  // namespace

void init_frame(Frame& frame, const ir::Graph& graph) {
  frame.graph = &graph;
  frame.parent = nullptr;
  frame.values.assign(graph.num_value_ids(), Tensor());
  for (const auto& v : graph.values())
    if (v->is_constant()) frame.values[v->id()] = v->constant();
}

FusionPlan plan_fusion(std::span<const ir::Node* const> nodes, const ir::Graph& graph) {
  FusionPlan plan;
  plan_conv_fusion(nodes, graph, plan.fused, plan.conv_chains);
  return plan;
}

ExecOptions under_current_load(const ExecOptions& options) {
  ExecOptions o = options;
  if (o.load_applied) return o;
  o.intra_op_threads = support::team_for(o.intra_op_threads);
  o.load_applied = true;
  return o;
}

Status run_nodes(std::span<const ir::Node* const> nodes, const FusionPlan& fusion, Frame& frame,
                 const ExecOptions& requested) {
  const ExecOptions options = under_current_load(requested);
  // One pointer captured: fits std::function's small buffer (no allocation per call).
  struct Ctx {
    Frame* frame;
    const ExecOptions* options;
  } c{&frame, &options};
  SubgraphRunner runner = [p = &c](const ir::Graph& g, std::vector<Tensor> in) {
    return run_graph(g, std::move(in), *p->options, p->frame);
  };
  std::vector<const Tensor*>& in_ptrs = frame.in_scratch;
  std::vector<Tensor>& outs = frame.out_scratch;
  struct Clear {  // a pooled frame keeps no tensor (e.g. an unused optional output) alive
    std::vector<Tensor>& outs;
    ~Clear() { outs.clear(); }
  } clear{outs};
  static const std::vector<int> kNothingFused;
  const std::vector<int>& fused = frame.graph ? fusion.fused : kNothingFused;
  for (size_t ni = 0; ni < nodes.size(); ++ni)
    TJ_RETURN_IF_ERROR(run_planned(nodes, ni, fused, fusion.conv_chains, frame, options, runner,
                                   in_ptrs, outs));
  return Status();
}

Status run_nodes(std::span<const ir::Node* const> nodes, Frame& frame, const ExecOptions& options) {
  return run_nodes(nodes, frame.graph ? plan_fusion(nodes, *frame.graph) : FusionPlan(), frame,
                   options);
}

namespace {

// What run_graph works out about a graph before running it: the last node reading each value
// (intermediates are freed after it), the nodes as pointers and their fusions.
struct GraphPrep {
  std::vector<int> last_use;
  std::vector<const ir::Node*> node_ptrs;
  std::vector<int> fused;
  ConvChains chains;
};

void prepare_graph(const ir::Graph& graph, GraphPrep& p) {
  // Last use of each value, so intermediates are freed early.
  const auto& nodes = graph.nodes();
  std::vector<int>& last_use = p.last_use;
  last_use.assign(graph.num_value_ids(), -1);
  for (size_t ni = 0; ni < nodes.size(); ++ni)
    for (ir::Value* v : nodes[ni]->inputs())
      if (v) last_use[v->id()] = static_cast<int>(ni);
  for (ir::Value* v : graph.outputs()) last_use[v->id()] = static_cast<int>(nodes.size());
  // A value a subgraph captures (If/Loop/Scan bodies reading outer values) lives until that node.
  for (size_t ni = 0; ni < nodes.size(); ++ni)
    for (const auto& [name, a] : nodes[ni]->attributes()) {
      std::vector<const ir::Graph*> subs;
      if (a.g) subs.push_back(a.g.get());
      for (const auto& sg : a.graphs) if (sg) subs.push_back(sg.get());
      for (size_t k = 0; k < subs.size(); ++k) {
        for (const ir::Value* src : subs[k]->capture_sources())
          if (src->owner() == &graph) last_use[src->id()] = std::max(last_use[src->id()], static_cast<int>(ni));
        for (const auto& sn : subs[k]->nodes())  // nested subgraphs may capture from us too
          for (const auto& [n2, a2] : sn->attributes()) {
            if (a2.g) subs.push_back(a2.g.get());
            for (const auto& sg : a2.graphs) if (sg) subs.push_back(sg.get());
          }
      }
    }
  p.node_ptrs.resize(nodes.size());
  for (size_t ni = 0; ni < nodes.size(); ++ni) p.node_ptrs[ni] = nodes[ni].get();
  plan_conv_fusion(p.node_ptrs, graph, p.fused, p.chains);
  // A conv chain reads its members' inputs when its last member's turn comes.
  for (const auto& c : p.chains)
    for (int m : c->node_indices)
      for (ir::Value* v : nodes[static_cast<size_t>(m)]->inputs())
        if (v) last_use[v->id()] = std::max(last_use[v->id()], c->node_indices.back());
}

// Runs every node of frame.graph (constants, feeds and captures bound) and returns its outputs.
Expected<std::vector<Tensor>> run_prepared(const GraphPrep& p, Frame& frame, const ExecOptions& options) {
  const ir::Graph& graph = *frame.graph;
  const auto& nodes = graph.nodes();
  SubgraphRunner runner = [&](const ir::Graph& g, std::vector<Tensor> in) {
    return run_graph(g, std::move(in), options, &frame);
  };
  std::vector<const Tensor*>& in_ptrs = frame.in_scratch;
  std::vector<Tensor>& outs = frame.out_scratch;
  struct Clear {  // a pooled frame keeps no tensor alive (GraphRunner)
    std::vector<Tensor>& outs;
    ~Clear() { outs.clear(); }
  } clear{outs};
  auto release = [&](const ir::Node& n, size_t ni) {
    for (ir::Value* v : n.inputs())
      if (v && p.last_use[v->id()] == static_cast<int>(ni) && !v->is_constant())
        frame.values[v->id()] = Tensor();
  };
  for (size_t ni = 0; ni < nodes.size(); ++ni) {
    TJ_RETURN_IF_ERROR(run_planned(p.node_ptrs, ni, p.fused, p.chains, frame, options, runner, in_ptrs, outs));
    const int f = p.fused.empty() ? -1 : p.fused[ni];
    if (f <= kConvChain0)
      for (int m : p.chains[static_cast<size_t>(kConvChain0 - f)]->node_indices) release(*nodes[static_cast<size_t>(m)], ni);
    else
      release(*nodes[ni], ni);
  }

  std::vector<Tensor> results;
  results.reserve(graph.outputs().size());
  for (ir::Value* v : graph.outputs()) {
    if (!frame.values[v->id()].defined())
      return internal_error("graph '{}': output '{}' was not computed", graph.name(), v->name());
    results.push_back(frame.values[v->id()]);
  }
  return results;
}

// Binds graph.inputs() that are not constants to `inputs`, in order.
Status bind_feeds(const ir::Graph& graph, std::vector<Tensor>& inputs, Frame& frame) {
  size_t k = 0;
  for (ir::Value* v : graph.inputs()) {
    if (v->is_constant()) continue;
    if (k >= inputs.size())
      return invalid_argument("graph '{}': input '{}' not given", graph.name(), v->name());
    frame.values[v->id()] = std::move(inputs[k++]);
  }
  return Status();
}

}  // namespace

Expected<std::vector<Tensor>> run_graph(const ir::Graph& graph, std::vector<Tensor> inputs,
                                        const ExecOptions& requested, const Frame* parent) {
  const ExecOptions options = under_current_load(requested);
  Frame frame;
  frame.graph = &graph;
  frame.parent = parent;
  frame.values.resize(graph.num_value_ids());

  // Bind constants, feeds and captures.
  for (const auto& v : graph.values())
    if (v->is_constant()) frame.values[v->id()] = v->constant();
  TJ_RETURN_IF_ERROR(bind_feeds(graph, inputs, frame));
  for (size_t i = 0; i < graph.captures().size(); ++i) {
    const ir::Value* src = graph.capture_sources()[i];
    const Frame* f = parent;
    while (f && f->graph != src->owner()) f = f->parent;
    if (!f) return internal_error("graph '{}': capture '{}' has no enclosing frame", graph.name(), src->name());
    frame.values[graph.captures()[i]->id()] = f->values[src->id()];
  }
  GraphPrep prep;
  prepare_graph(graph, prep);
  return run_prepared(prep, frame, options);
}

// ---- GraphRunner -------------------------------------------------------------------------------

struct GraphRunner::Prepared : GraphPrep {};

GraphRunner::GraphRunner(const ir::Graph& graph, size_t pool_cap)
    : graph_(&graph), prep_(std::make_unique<Prepared>()), pool_cap_(pool_cap) {
  prepare_graph(graph, *prep_);
  for (const auto& v : graph.values())
    if (!v->is_constant()) dynamic_ids_.push_back(static_cast<uint32_t>(v->id()));
}

GraphRunner::~GraphRunner() = default;

Expected<std::vector<Tensor>> GraphRunner::run(std::vector<Tensor> inputs,
                                               const ExecOptions& options) const {
  std::unique_ptr<Frame> frame;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pool_.empty()) {
      frame = std::move(pool_.back());
      pool_.pop_back();
    }
  }
  if (!frame) {
    frame = std::make_unique<Frame>();
    init_frame(*frame, *graph_);
  }
  struct Return {  // every value but the constants reset, the frame back to the pool
    const GraphRunner* r;
    std::unique_ptr<Frame>& f;
    ~Return() {
      for (uint32_t id : r->dynamic_ids_)
        if (f->values[id].defined()) f->values[id] = Tensor();
      std::lock_guard<std::mutex> lock(r->mu_);
      if (r->pool_.size() < r->pool_cap_) r->pool_.push_back(std::move(f));
    }
  } ret{this, frame};
  TJ_RETURN_IF_ERROR(bind_feeds(*graph_, inputs, *frame));
  return run_prepared(*prep_, *frame, under_current_load(options));
}

}  // namespace tierjit::interp
