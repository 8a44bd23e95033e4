// Partitioning pass: the fusion table (which ops have a lowering and how they fuse) and the greedy
// region builder over the node DAG (see partition.h for the rules).
#include "passes/partition.h"

#include <algorithm>
#include <array>
#include <queue>
#include <unordered_set>

#include <fmt/format.h>

#include "passes/pass_util.h"

namespace tierjit::passes {

namespace {

using ir::OpKind;

struct FusionEntry {
  OpKind op;
  FusionClass cls;
  bool shape_arith;  ///< may be plan-time shape arithmetic (rule 1)
};

// THE table of ops with a lowering and how they fuse. Ops not listed have FusionClass::kNone and
// stay on tier 0 as one-node regions, so the rest of a chain around them still compiles. kir/
// lowering accepts these (some only for some dtypes: Mod, Pow of an integer base, float64
// Sinh/Cosh/Asinh/Acosh/Atanh keep their region on tier 0). Not listed because kir has no such
// operation yet: Sin, Cos, Tan, Asin, Acos, Atan (no intrinsic), BitShift (no shift).
constexpr FusionEntry kFusionTable[] = {
    // elementwise, one input
    {OpKind::Abs, FusionClass::kElementwiseUnary, true},
    {OpKind::Acosh, FusionClass::kElementwiseUnary, false},
    {OpKind::Asinh, FusionClass::kElementwiseUnary, false},
    {OpKind::Atanh, FusionClass::kElementwiseUnary, false},
    {OpKind::Cast, FusionClass::kElementwiseUnary, true},
    {OpKind::Ceil, FusionClass::kElementwiseUnary, true},
    {OpKind::Celu, FusionClass::kElementwiseUnary, false},
    {OpKind::Cosh, FusionClass::kElementwiseUnary, false},
    {OpKind::Elu, FusionClass::kElementwiseUnary, false},
    {OpKind::Erf, FusionClass::kElementwiseUnary, false},
    {OpKind::Exp, FusionClass::kElementwiseUnary, false},
    {OpKind::Floor, FusionClass::kElementwiseUnary, true},
    {OpKind::HardSigmoid, FusionClass::kElementwiseUnary, false},
    {OpKind::HardSwish, FusionClass::kElementwiseUnary, false},
    {OpKind::Identity, FusionClass::kElementwiseUnary, true},
    {OpKind::IsInf, FusionClass::kElementwiseUnary, false},
    {OpKind::IsNaN, FusionClass::kElementwiseUnary, false},
    {OpKind::LeakyRelu, FusionClass::kElementwiseUnary, false},
    {OpKind::Log, FusionClass::kElementwiseUnary, false},
    {OpKind::Neg, FusionClass::kElementwiseUnary, true},
    {OpKind::Not, FusionClass::kElementwiseUnary, true},
    {OpKind::Reciprocal, FusionClass::kElementwiseUnary, false},
    {OpKind::Relu, FusionClass::kElementwiseUnary, false},
    {OpKind::Round, FusionClass::kElementwiseUnary, false},
    {OpKind::Selu, FusionClass::kElementwiseUnary, false},
    {OpKind::Shrink, FusionClass::kElementwiseUnary, false},
    {OpKind::Sigmoid, FusionClass::kElementwiseUnary, false},
    {OpKind::Sign, FusionClass::kElementwiseUnary, true},
    {OpKind::Sinh, FusionClass::kElementwiseUnary, false},
    {OpKind::Softplus, FusionClass::kElementwiseUnary, false},
    {OpKind::Softsign, FusionClass::kElementwiseUnary, false},
    {OpKind::Sqrt, FusionClass::kElementwiseUnary, true},
    {OpKind::Tanh, FusionClass::kElementwiseUnary, false},
    {OpKind::ThresholdedRelu, FusionClass::kElementwiseUnary, false},
    // elementwise, several inputs with numpy broadcasting
    {OpKind::Add, FusionClass::kElementwiseBinary, true},
    {OpKind::And, FusionClass::kElementwiseBinary, true},
    {OpKind::Clip, FusionClass::kElementwiseBinary, true},
    {OpKind::Div, FusionClass::kElementwiseBinary, true},
    {OpKind::Equal, FusionClass::kElementwiseBinary, true},
    {OpKind::Greater, FusionClass::kElementwiseBinary, true},
    {OpKind::GreaterOrEqual, FusionClass::kElementwiseBinary, true},
    {OpKind::Less, FusionClass::kElementwiseBinary, true},
    {OpKind::LessOrEqual, FusionClass::kElementwiseBinary, true},
    {OpKind::Max, FusionClass::kElementwiseBinary, true},
    {OpKind::Mean, FusionClass::kElementwiseBinary, false},
    {OpKind::Min, FusionClass::kElementwiseBinary, true},
    {OpKind::Mod, FusionClass::kElementwiseBinary, true},
    {OpKind::Mul, FusionClass::kElementwiseBinary, true},
    {OpKind::Or, FusionClass::kElementwiseBinary, true},
    {OpKind::Pow, FusionClass::kElementwiseBinary, false},
    {OpKind::PRelu, FusionClass::kElementwiseBinary, false},
    {OpKind::Sub, FusionClass::kElementwiseBinary, true},
    {OpKind::Sum, FusionClass::kElementwiseBinary, true},
    {OpKind::Where, FusionClass::kElementwiseBinary, true},
    {OpKind::Xor, FusionClass::kElementwiseBinary, true},
    // anchors
    {OpKind::Conv, FusionClass::kAnchor, false},
    {OpKind::Gemm, FusionClass::kAnchor, false},
    {OpKind::MatMul, FusionClass::kAnchor, false},
    // reductions
    {OpKind::LayerNormalization, FusionClass::kReduction, false},
    {OpKind::LogSoftmax, FusionClass::kReduction, false},
    {OpKind::ReduceMax, FusionClass::kReduction, true},
    {OpKind::ReduceMean, FusionClass::kReduction, false},
    {OpKind::ReduceMin, FusionClass::kReduction, true},
    {OpKind::ReduceSum, FusionClass::kReduction, true},
    {OpKind::Softmax, FusionClass::kReduction, false},
    // recurrent cells: one node per region (kir/lower/lower_recurrent.cc)
    {OpKind::GRU, FusionClass::kRecurrent, false},
    {OpKind::LSTM, FusionClass::kRecurrent, false},
    // shape sources; shape-only layout ops (no lowering of their own)
    {OpKind::Shape, FusionClass::kShapeSource, true},
    {OpKind::Size, FusionClass::kShapeSource, true},
    {OpKind::Concat, FusionClass::kNone, true},
    {OpKind::Flatten, FusionClass::kNone, true},
    {OpKind::Gather, FusionClass::kNone, true},
    {OpKind::ReduceProd, FusionClass::kNone, true},
    {OpKind::Reshape, FusionClass::kNone, true},
    {OpKind::Slice, FusionClass::kNone, true},
    {OpKind::Squeeze, FusionClass::kNone, true},
    {OpKind::Unsqueeze, FusionClass::kNone, true},
};

struct Table {
  std::array<FusionClass, static_cast<size_t>(OpKind::kNumOps)> cls;
  std::array<bool, static_cast<size_t>(OpKind::kNumOps)> shape_arith;
  Table() {
    cls.fill(FusionClass::kNone);
    shape_arith.fill(false);
    for (const FusionEntry& e : kFusionTable) {
      cls[static_cast<size_t>(e.op)] = e.cls;
      shape_arith[static_cast<size_t>(e.op)] = e.shape_arith;
    }
  }
};

const Table& table() {
  static const Table t;
  return t;
}

// The effective role of one node in this graph.
enum class Role { kElementwise, kAnchor, kReduction, kShapeOnly, kOpaque, kRecurrent };

bool is_default_domain(const ir::Node& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

bool touches_strings(const ir::Node& n) {
  for (const ir::Value* v : n.inputs())
    if (v && v->type().dtype == DType::kString) return true;
  for (const ir::Value* v : n.outputs())
    if (v && v->type().dtype == DType::kString) return true;
  return false;
}

// Shape-derived outputs are small: rank <= 1, at most 64 elements when the dim is known.
bool small_shape_value(const ir::Value* v) {
  if (!v) return true;
  const auto& s = v->type().shape;
  if (!s || s->size() > 1) return false;
  return s->empty() || !(*s)[0].is_constant() || (*s)[0].value <= 64;
}

// Shapes equal and fully known (constants or named symbols; an unknown dim never compares equal).
bool same_known_shape(const ir::Value* a, const ir::Value* b) {
  if (!a || !b || !a->type().shape || !b->type().shape) return false;
  const ir::SymShape& x = *a->type().shape;
  const ir::SymShape& y = *b->type().shape;
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(x[i].is_constant() || x[i].is_symbol()) || !(x[i] == y[i])) return false;
  return true;
}

class Partitioner {
 public:
  Partitioner(const ir::Graph& graph, const PartitionOptions& options) : g_(graph), opt_(options) {}

  Expected<Partition> run() {
    build_dag();
    assign_roles();
    if (opt_.fuse) {
      cluster_shape_only();
      anchor_bias();
      reduction_prologues();
      epilogues();
      pool_tails();
      elementwise_clusters();
    }
    return finish();
  }

 private:
  // ---- DAG over node indices (graph order is topological) ----
  void build_dag() {
    for (const auto& n : g_.nodes()) {
      index_[n.get()] = static_cast<int>(nodes_.size());
      nodes_.push_back(n.get());
    }
    const size_t n = nodes_.size();
    preds_.assign(n, {});
    succs_.assign(n, {});
    for (size_t i = 0; i < n; ++i) {
      std::vector<const ir::Value*> reads(nodes_[i]->inputs().begin(), nodes_[i]->inputs().end());
      for (const ir::Value* v : captured_outer_values(*nodes_[i], g_)) reads.push_back(v);
      reads_.push_back(reads);
      for (const ir::Value* v : reads) {
        if (!v || !v->producer()) continue;
        auto it = index_.find(v->producer());
        if (it == index_.end()) continue;
        int p = it->second;
        if (std::find(preds_[i].begin(), preds_[i].end(), p) == preds_[i].end()) {
          preds_[i].push_back(p);
          succs_[p].push_back(static_cast<int>(i));
        }
      }
    }
    region_.resize(n);
    members_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      region_[i] = static_cast<int>(i);
      members_[i] = {static_cast<int>(i)};
    }
  }

  void assign_roles() {
    role_.assign(nodes_.size(), Role::kOpaque);
    std::unordered_set<const ir::Value*> shape_values;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      const ir::Node& n = *nodes_[i];
      if (!is_default_domain(n) || has_subgraph(n) || touches_strings(n)) continue;
      const size_t op = static_cast<size_t>(n.op());
      const FusionClass cls = table().cls[op];
      bool shape_only = cls == FusionClass::kShapeSource;
      if (!shape_only && table().shape_arith[op]) {
        bool any_shape = false, all_ok = true;
        for (const ir::Value* v : n.inputs()) {
          if (!v) continue;
          if (shape_values.count(v)) any_shape = true;
          else if (!v->is_constant()) all_ok = false;
        }
        shape_only = any_shape && all_ok;
      }
      for (const ir::Value* v : n.outputs()) shape_only = shape_only && small_shape_value(v);
      if (shape_only) {
        role_[i] = Role::kShapeOnly;
        for (const ir::Value* v : n.outputs())
          if (v) shape_values.insert(v);
        continue;
      }
      const ir::Value* out = n.output(0);
      // Integer Div/Mod must raise on a zero divisor, which compiled code cannot: tier 0 alone
      // (docs/lowering.md "What is not lowered").
      if ((n.op() == OpKind::Div || n.op() == OpKind::Mod) &&
          (!out || !dtype_is_float(out->type().dtype)))
        continue;
      switch (cls) {
        case FusionClass::kElementwiseUnary:
        case FusionClass::kElementwiseBinary:
          role_[i] = Role::kElementwise;
          break;
        case FusionClass::kAnchor:
        case FusionClass::kReduction:
          if (out && dtype_is_float(out->type().dtype))
            role_[i] = cls == FusionClass::kAnchor ? Role::kAnchor : Role::kReduction;
          break;
        case FusionClass::kRecurrent: {  // outputs may be omitted (no value or no dtype)
          bool f32 = false, other = false;
          for (const ir::Value* v : n.outputs()) {
            if (!v || v->type().dtype == DType::kUndefined) continue;
            (v->type().dtype == DType::kFloat32 ? f32 : other) = true;
          }
          if (f32 && !other) role_[i] = Role::kRecurrent;
          break;
        }
        default:
          break;
      }
    }
  }

  // Index of a node of this graph; -1 for anything else (never expected).
  int index_of(const ir::Node* n) const {
    auto it = index_.find(n);
    return it == index_.end() ? -1 : it->second;
  }

  // ---- region bookkeeping ----
  int region_of(int node) const { return region_[node]; }
  bool placed(int node) const { return members_[region_[node]].size() > 1; }

  // Role summary of a region: its anchor/reduction node, or -1.
  int region_anchor(int r) const {
    for (int m : members_[r])
      if (role_[m] == Role::kAnchor || role_[m] == Role::kReduction) return m;
    return -1;
  }
  Role region_role(int r) const {
    int a = region_anchor(r);
    if (a >= 0) return role_[a];
    Role role = role_[members_[r][0]];
    return role;
  }

  // True if merging regions a and b keeps the region graph acyclic: no path leaves a∪b through
  // another node and comes back. Searches only nodes up to the last member (paths back must end
  // there).
  bool can_merge(int a, int b) const {
    if (a == b) return true;
    if (members_[a].size() + members_[b].size() > opt_.max_region_nodes) return false;
    int last = 0;
    for (int m : members_[a]) last = std::max(last, m);
    for (int m : members_[b]) last = std::max(last, m);
    auto inside = [&](int n) { return region_[n] == a || region_[n] == b; };
    std::vector<char> seen(nodes_.size(), 0);
    std::vector<int> stack;
    for (int r : {a, b})
      for (int m : members_[r])
        for (int s : succs_[m])
          if (!inside(s) && s < last && !seen[s]) {
            seen[s] = 1;
            stack.push_back(s);
          }
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      for (int s : succs_[x]) {
        if (inside(s)) return false;
        if (s < last && !seen[s]) {
          seen[s] = 1;
          stack.push_back(s);
        }
      }
    }
    return true;
  }

  // Merges b into a (caller checked can_merge). Returns a.
  int merge(int a, int b) {
    if (a == b) return a;
    for (int m : members_[b]) {
      region_[m] = a;
      members_[a].push_back(m);
    }
    members_[b].clear();
    return a;
  }

  bool try_merge(int a, int b) {
    if (a == b) return true;
    if (!can_merge(a, b)) return false;
    merge(a, b);
    return true;
  }

  bool is_graph_output_node(int node) const {
    for (const ir::Value* v : nodes_[node]->outputs())
      if (v && is_graph_output(g_, v)) return true;
    return false;
  }

  // ---- rules ----
  void cluster_shape_only() {  // rule 1
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (role_[i] != Role::kShapeOnly) continue;
      for (int p : preds_[i])
        if (role_[p] == Role::kShapeOnly) try_merge(region_of(p), region_of(static_cast<int>(i)));
    }
  }

  void anchor_bias() {  // rule 2
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (role_[i] != Role::kAnchor) continue;
      const ir::Value* out = nodes_[i]->output(0);
      if (!out || out->users().size() != 1 || is_graph_output(g_, out)) continue;
      const ir::Node* u = out->users()[0];
      const int ui = index_of(u);
      if (ui < 0 || u->op() != OpKind::Add || role_[ui] != Role::kElementwise || placed(ui)) continue;
      const ir::Value* other = u->input(0) == out ? u->input(1) : u->input(0);
      if (!other || !other->is_constant() || !same_known_shape(u->output(0), out)) continue;
      try_merge(region_of(static_cast<int>(i)), region_of(ui));
    }
  }

  void reduction_prologues() {  // rule 3
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (role_[i] != Role::kReduction) continue;
      const int self = static_cast<int>(i);
      std::vector<int> work(preds_[i].begin(), preds_[i].end());
      while (!work.empty()) {
        int p = work.back();
        work.pop_back();
        if (role_[p] != Role::kElementwise || placed(p)) continue;
        bool all_users_inside = !is_graph_output_node(p);
        for (int s : succs_[p]) all_users_inside &= region_of(s) == region_of(self);
        if (!all_users_inside || !try_merge(region_of(self), region_of(p))) continue;
        for (int q : preds_[p]) work.push_back(q);
      }
    }
  }

  void epilogues() {  // rule 4
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (role_[i] != Role::kElementwise || placed(static_cast<int>(i))) continue;
      for (int p : preds_[i]) {
        const int r = region_of(p);
        const int a = region_anchor(r);
        if (a < 0) continue;
        if (!same_known_shape(nodes_[i]->output(0), nodes_[a]->output(0))) continue;
        if (try_merge(r, region_of(static_cast<int>(i)))) break;
      }
    }
  }

  // Rule 4b's conditions on the pool node itself (its window and attributes).
  static bool fusable_pool(const ir::Node& p) {
    if (p.op() != OpKind::MaxPool && p.op() != OpKind::AveragePool) return false;
    if (p.num_outputs() > 1 && p.output(1) && p.output(1)->type().dtype != DType::kUndefined)
      return false;  // Indices requested (even unused): tier 0 computes them
    const ir::Attribute* k = p.attr("kernel_shape");
    if (!k || k->ints.size() != 2 || k->ints[0] < 1 || k->ints[1] < 1 ||
        k->ints[0] * k->ints[1] > 64)
      return false;
    auto all_ones = [&](const char* name) {
      const ir::Attribute* a = p.attr(name);
      return !a || std::all_of(a->ints.begin(), a->ints.end(), [](int64_t v) { return v == 1; });
    };
    const ir::Attribute* s = p.attr("strides");
    if (s && (s->ints.size() != 2 || s->ints[0] < 1 || s->ints[1] < 1)) return false;
    const ir::Attribute* pads = p.attr("pads");
    if (pads && (pads->ints.size() != 4 ||
                 std::any_of(pads->ints.begin(), pads->ints.end(), [](int64_t v) { return v < 0; })))
      return false;
    const std::string auto_pad = p.attr_string("auto_pad", "NOTSET");
    return all_ones("dilations") && p.attr_int("ceil_mode", 0) == 0 &&
           (auto_pad == "NOTSET" || auto_pad == "VALID");
  }

  void pool_tails() {  // rule 4b
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (role_[i] != Role::kAnchor || nodes_[i]->op() != OpKind::Conv) continue;
      if (nodes_[i]->attr_int("group", 1) != 1) continue;
      const int r = region_of(static_cast<int>(i));
      // The region's one escaping value: produced inside, read outside.
      const ir::Value* last = nullptr;
      int escaping = 0;
      for (int m : members_[r])
        for (const ir::Value* v : nodes_[m]->outputs()) {
          if (!v) continue;
          bool out = is_graph_output(g_, v);
          for (const ir::Node* u : v->users()) out |= index_of(u) < 0 || region_of(index_of(u)) != r;
          if (out) ++escaping, last = v;
        }
      if (escaping != 1 || is_graph_output(g_, last) || last->users().size() != 1) continue;
      const ir::Node* p = last->users()[0];
      const int pi = index_of(p);
      if (pi < 0 || placed(pi) || !is_default_domain(*p) || p->input(0) != last ||
          !fusable_pool(*p) || !p->output(0) || p->output(0)->type().dtype != DType::kFloat32)
        continue;
      if (try_merge(r, region_of(pi))) pool_of_[r] = pi;
    }
  }

  void elementwise_clusters() {  // rule 5
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (role_[i] != Role::kElementwise || placed(static_cast<int>(i))) continue;
      int home = -1;
      for (int p : preds_[i]) {
        const int r = region_of(p);
        if (region_role(r) != Role::kElementwise || r == region_of(static_cast<int>(i))) continue;
        if (home < 0) {
          if (try_merge(r, region_of(static_cast<int>(i)))) home = r;
        } else {
          try_merge(home, r);
        }
      }
    }
  }

  // ---- result ----
  Expected<Partition> finish() {
    // Region graph, then Kahn's algorithm taking the ready region with the smallest first node.
    std::vector<int> live;
    for (size_t r = 0; r < members_.size(); ++r)
      if (!members_[r].empty()) {
        std::sort(members_[r].begin(), members_[r].end());
        live.push_back(static_cast<int>(r));
      }
    std::vector<std::vector<int>> rsucc(members_.size());
    std::vector<int> indeg(members_.size(), 0);
    for (int r : live) {
      std::unordered_set<int> out;
      for (int m : members_[r])
        for (int s : succs_[m])
          if (region_of(s) != r) out.insert(region_of(s));
      for (int s : out) {
        rsucc[r].push_back(s);
        ++indeg[s];
      }
    }
    std::priority_queue<std::pair<int, int>, std::vector<std::pair<int, int>>, std::greater<>> ready;
    for (int r : live)
      if (indeg[r] == 0) ready.push({members_[r][0], r});
    Partition part;
    while (!ready.empty()) {
      const int r = ready.top().second;
      ready.pop();
      part.regions.push_back(make_region(r, static_cast<int>(part.regions.size())));
      for (int s : rsucc[r])
        if (--indeg[s] == 0) ready.push({members_[s][0], s});
    }
    if (part.regions.size() != live.size())
      return invalid_model("graph '{}': partitioning found a cycle between regions", g_.name());
    for (const Region& reg : part.regions)
      for (const ir::Node* n : reg.nodes) part.region_of[n] = reg.id;
    return part;
  }

  Region make_region(int r, int id) {
    Region reg;
    reg.id = id;
    const int a = region_anchor(r);
    const Role role = region_role(r);
    reg.kind = role == Role::kAnchor      ? RegionKind::kMatMulEpilogue
               : role == Role::kReduction ? RegionKind::kReduction
               : role == Role::kShapeOnly ? RegionKind::kShapeOnly
               : role == Role::kElementwise ? RegionKind::kElementwise
               : role == Role::kRecurrent   ? RegionKind::kRecurrent
                                            : RegionKind::kOpaque;
    if (a >= 0) reg.anchor = nodes_[a];
    if (role == Role::kRecurrent) reg.anchor = nodes_[members_[r][0]];  // one node
    if (auto it = pool_of_.find(r); it != pool_of_.end()) reg.pool = nodes_[it->second];
    std::string base;
    switch (reg.kind) {
      case RegionKind::kElementwise: base = "elementwise"; break;
      case RegionKind::kShapeOnly: base = "shape"; break;
      default: {
        const ir::Node* n = reg.anchor ? reg.anchor : nodes_[members_[r][0]];
        for (char c : ir::op_name(n->op())) base.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      }
    }
    reg.name = fmt::format("{}_{}", base, id);
    std::unordered_set<const ir::Value*> seen_in, produced;
    for (int m : members_[r]) {
      reg.nodes.push_back(nodes_[m]);
      for (const ir::Value* v : nodes_[m]->outputs())
        if (v) produced.insert(v);
    }
    for (int m : members_[r])
      for (const ir::Value* v : reads_[m])
        if (v && !produced.count(v) && seen_in.insert(v).second) reg.inputs.push_back(v);
    for (int m : members_[r])
      for (const ir::Value* v : nodes_[m]->outputs()) {
        if (!v) continue;
        bool escapes = is_graph_output(g_, v);
        for (const ir::Node* u : v->users()) escapes |= index_of(u) < 0 || region_of(index_of(u)) != r;
        for (int s : succs_[m])  // reads through captures
          if (region_of(s) != r)
            for (const ir::Value* x : reads_[s]) escapes |= x == v;
        if (escapes) reg.outputs.push_back(v);
      }
    return reg;
  }

  const ir::Graph& g_;
  const PartitionOptions& opt_;
  std::vector<const ir::Node*> nodes_;
  std::unordered_map<const ir::Node*, int> index_;
  std::vector<std::vector<int>> preds_, succs_;
  std::vector<std::vector<const ir::Value*>> reads_;
  std::vector<Role> role_;
  std::vector<int> region_;
  std::vector<std::vector<int>> members_;
  std::unordered_map<int, int> pool_of_;  // region -> its pool node (rule 4b)
};

}  // namespace

FusionClass fusion_class(ir::OpKind op) { return table().cls[static_cast<size_t>(op)]; }

bool is_shape_arithmetic_op(ir::OpKind op) { return table().shape_arith[static_cast<size_t>(op)]; }

Expected<Partition> partition_graph(const ir::Graph& graph, const PartitionOptions& options) {
  return Partitioner(graph, options).run();
}

}  // namespace tierjit::passes
