// Tier-0 conv chains (see conv_chain.h), planning: chains are grown backwards from their last
// member over producers whose every reader is in the chain; post-ops and residual sums are
// chosen once per chain. Running them: conv_chain_run.cc.
#include "interp/kernels/conv_chain.h"

#include <algorithm>
#include <queue>
#include <unordered_map>

#include "interp/executor.h"
#include "interp/kernels/conv_chain_bounds.h"
#include "interp/kernels/conv_fusion.h"
#include "interp/kernels/nn_common.h"

namespace tierjit::interp {
namespace {

using nn::ActLayout;

// Whether `n` may be a member, and which kind.
std::optional<ConvChain::Kind> member_kind(const ir::Node& n) {
  if (n.num_outputs() != 1 || !n.output(0)) return std::nullopt;
  switch (n.op()) {
    case ir::OpKind::Conv:
      if (n.num_inputs() < 2 || !n.input(0) || !n.input(1)) return std::nullopt;
      return ConvChain::Kind::kConv;
    case ir::OpKind::Add:
      if (n.num_inputs() != 2 || !n.input(0) || !n.input(1)) return std::nullopt;
      return ConvChain::Kind::kAdd;
    case ir::OpKind::MaxPool:
      if (!n.input(0) || !n.has_attr("kernel_shape")) return std::nullopt;
      return ConvChain::Kind::kMaxPool;
    default:
      if (!n.input(0) || !conv_fusion_for(n)) return std::nullopt;
      return ConvChain::Kind::kUnary;
  }
}

// Input positions of `n` that carry data through a chain.

// True if every read of `v` is by a node in `in_chain`, at a data position.
bool read_only_inside(const ir::Value* v, const std::unordered_map<const ir::Node*, int>& index,
                      const std::vector<char>& in_chain) {
  for (const ir::Node* u : v->users()) {
    auto it = index.find(u);
    if (it == index.end() || !in_chain[static_cast<size_t>(it->second)]) return false;
    for (size_t k = conv_chain_data_inputs(*u); k < u->num_inputs(); ++k)
      if (u->input(k) == v) return false;
  }
  return true;
}

// A Conv whose output only an Add reads, where the Add's other operand (the residual) is ready
// before the Conv runs (outside the chain or made by an earlier step) and read by no step
// between the Conv and the Add nor after it: the Conv may add itself to the residual's buffer
// (ConvChain::Step::sum_add), and apply a Relu / LeakyRelu that reads the Add alone after the
// sum (mobilenet_v2's projection + skip, resnet18's conv2 + identity + Relu).
void plan_residual_sums(ConvChain& c) {
  using Kind = ConvChain::Kind;
  auto step_reading = [&](const ir::Node* n, Kind kind) {
    for (size_t k = 0; k < c.steps.size(); ++k)
      if (c.steps[k].node == n && c.steps[k].kind == kind) return static_cast<int>(k);
    return -1;
  };
  for (size_t si = 0; si < c.steps.size(); ++si) {
    ConvChain::Step& st = c.steps[si];
    if (st.kind != Kind::kConv || st.post.kind != nn::ConvPostOp::Kind::kNone) continue;
    const ir::Value* v = c.values[static_cast<size_t>(st.out)];
    if (v->users().size() != 1) continue;
    const int ai = step_reading(v->users()[0], Kind::kAdd);
    if (ai < 0) continue;
    const ConvChain::Step& add = c.steps[static_cast<size_t>(ai)];
    if (add.in[0] == add.in[1]) continue;
    const int res = add.in[0] == st.out ? add.in[1] : add.in[0];
    if (c.last_use[static_cast<size_t>(res)] != ai) continue;
    bool ok = true;
    for (size_t k = 0; k < c.steps.size() && ok; ++k) {
      const ConvChain::Step& o = c.steps[k];
      if (o.out == res && k > si) ok = false;  // made after the Conv
      if (k >= si && static_cast<int>(k) < ai && (o.in[0] == res || o.in[1] == res)) ok = false;
    }
    if (!ok) continue;
    st.sum_add = ai;
    st.sum_post.sum = true;
    const ir::Value* sum = c.values[static_cast<size_t>(add.out)];
    if (sum->users().size() != 1) continue;
    const int ui = step_reading(sum->users()[0], Kind::kUnary);
    if (ui < 0) continue;
    const ir::Node& act = *c.steps[static_cast<size_t>(ui)].node;
    const std::optional<ConvFusion> f = conv_fusion_for(act);
    bool other_use = false;
    for (size_t k = 1; k < act.num_inputs(); ++k) other_use = other_use || act.input(k) == sum;
    if (!f || f->mode != ConvFusion::Mode::kPostOp || other_use) continue;
    st.sum_act = ui;
    st.sum_post.kind = f->post.kind;
    st.sum_post.alpha = f->post.alpha;
    st.sum_post.beta = f->post.beta;
  }
}

std::shared_ptr<ConvChain> make_chain(std::span<const ir::Node* const> nodes,
                                      std::vector<int> members) {
  auto c = std::make_shared<ConvChain>();
  c->node_indices = std::move(members);
  auto slot = [&](const ir::Value* v) {
    auto it = std::find(c->values.begin(), c->values.end(), v);
    if (it != c->values.end()) return static_cast<int>(it - c->values.begin());
    c->values.push_back(v);
    c->last_use.push_back(-1);
    c->external.push_back(true);
    return static_cast<int>(c->values.size() - 1);
  };
  for (int ni : c->node_indices) {
    const ir::Node& n = *nodes[static_cast<size_t>(ni)];
    ConvChain::Step st;
    st.node = &n;
    st.kind = *member_kind(n);
    const int si = static_cast<int>(c->steps.size());
    for (size_t k = 0; k < conv_chain_data_inputs(n); ++k) {
      st.in[k] = slot(n.input(k));
      c->last_use[static_cast<size_t>(st.in[k])] = si;
    }
    st.out = slot(n.output(0));
    c->external[static_cast<size_t>(st.out)] = false;
    c->steps.push_back(st);
  }
  // A Conv whose output only the next activation reads applies it as a post-op where oneDNN's
  // form equals tier 0's (conv_fusion_for: Relu, LeakyRelu with alpha > 0).
  for (ConvChain::Step& st : c->steps) {
    if (st.kind != ConvChain::Kind::kConv) continue;
    const ir::Value* v = c->values[static_cast<size_t>(st.out)];
    if (v->users().size() != 1) continue;
    for (ConvChain::Step& a : c->steps) {
      if (a.node != v->users()[0] || a.kind != ConvChain::Kind::kUnary) continue;
      const std::optional<ConvFusion> f = conv_fusion_for(*a.node);
      bool other_use = false;
      for (size_t k = 1; k < a.node->num_inputs(); ++k) other_use = other_use || a.node->input(k) == v;
      if (f && f->mode == ConvFusion::Mode::kPostOp && !other_use) {
        st.post = f->post;
        a.aliased = true;
      }
    }
  }
  // A Conv (with its aliased activation) whose value only a MaxPool reads.
  for (ConvChain::Step& st : c->steps) {
    if (st.kind != ConvChain::Kind::kConv) continue;
    int value = st.out;
    for (const ConvChain::Step& a : c->steps)
      if (a.aliased && a.in[0] == st.out) value = a.out;
    const ir::Value* v = c->values[static_cast<size_t>(value)];
    if (v->users().size() != 1) continue;
    for (size_t k = 0; k < c->steps.size(); ++k)
      if (c->steps[k].node == v->users()[0] && c->steps[k].kind == ConvChain::Kind::kMaxPool &&
          c->steps[k].in[0] == value)
        st.pool = static_cast<int>(k);
  }
  plan_residual_sums(*c);
  c->clip_proof = plan_clip_proof(*c);  // Clips: post-ops only where a call proves them exact
  return c;
}

}  // namespace

std::vector<std::shared_ptr<const ConvChain>> plan_conv_chains(
    std::span<const ir::Node* const> nodes, const ir::Graph& graph,
    const std::vector<bool>& eligible) {
  std::vector<std::shared_ptr<const ConvChain>> chains;
  std::unordered_map<const ir::Node*, int> index;
  std::vector<char> candidate(nodes.size(), 0);
  int convs = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    index.emplace(nodes[i], static_cast<int>(i));
    candidate[i] = (i >= eligible.size() || eligible[i]) && member_kind(*nodes[i]).has_value();
    convs += candidate[i] && nodes[i]->op() == ir::OpKind::Conv;
  }
  if (convs < 2) return chains;
  auto is_output = [&](const ir::Value* v) {
    return std::find(graph.outputs().begin(), graph.outputs().end(), v) != graph.outputs().end();
  };
  std::vector<char> taken(nodes.size(), 0), in_chain(nodes.size(), 0);
  for (size_t t = nodes.size(); t-- > 0;) {
    if (!candidate[t] || taken[t]) continue;
    // Grow backwards: producers popped in descending list order, so all readers of a
    // producer's output that will ever join are members by the time it is considered.
    std::vector<int> members;
    std::priority_queue<int> queue;
    std::vector<char> queued(nodes.size(), 0);
    auto add = [&](int i) {
      members.push_back(i);
      in_chain[static_cast<size_t>(i)] = 1;
      taken[static_cast<size_t>(i)] = 1;
      const ir::Node& n = *nodes[static_cast<size_t>(i)];
      for (size_t k = 0; k < conv_chain_data_inputs(n); ++k) {
        const ir::Value* v = n.input(k);
        const ir::Node* p = v ? v->producer() : nullptr;
        auto it = p ? index.find(p) : index.end();
        if (it == index.end()) continue;
        const size_t pi = static_cast<size_t>(it->second);
        if (!candidate[pi] || taken[pi] || queued[pi] || is_output(v)) continue;
        queued[pi] = 1;
        queue.push(it->second);
      }
    };
    add(static_cast<int>(t));
    while (!queue.empty()) {
      const int p = queue.top();
      queue.pop();
      if (read_only_inside(nodes[static_cast<size_t>(p)]->output(0), index, in_chain)) add(p);
    }
    std::sort(members.begin(), members.end());
    int chain_convs = 0;
    for (int i : members) chain_convs += nodes[static_cast<size_t>(i)]->op() == ir::OpKind::Conv;
    for (int i : members) in_chain[static_cast<size_t>(i)] = 0;
    if (chain_convs >= 2) chains.push_back(make_chain(nodes, std::move(members)));
  }
  std::reverse(chains.begin(), chains.end());
  return chains;
}

}  // namespace tierjit::interp
