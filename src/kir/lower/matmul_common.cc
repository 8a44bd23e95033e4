// RegionIo, BroadcastIndex and Epilogue of matmul_common.h.
#include "kir/lower/matmul_common.h"

#include <algorithm>

#include "kir/lower/lower_ops.h"

namespace tierjit::kir::lowering {

bool const_value(const Expr& e, int64_t* v) {
  if (const auto* i = e->as<IntImm>()) {
    *v = i->value;
    return true;
  }
  return false;
}
bool only_reader(const passes::Region& region, const ir::Node* n, size_t index) {
  const ir::Value* v = n->input(index);
  if (!v || !v->is_constant()) return false;
  for (const ir::Node* other : region.nodes)
    for (size_t i = 0; i < other->num_inputs(); ++i)
      if (other->input(i) == v && (other != n || i != index)) return false;
  for (const ir::Value* o : region.outputs)
    if (o == v) return false;
  return true;
}

Expr fold_add(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  bool ca = const_value(a, &x), cb = const_value(b, &y);
  if (ca && cb) return imm(x + y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  return add(a, b);
}
Expr fold_mul(const Expr& a, const Expr& b) {
  int64_t x = 0, y = 0;
  bool ca = const_value(a, &x), cb = const_value(b, &y);
  if (ca && cb) return imm(x * y);
  if ((ca && x == 0) || (cb && y == 0)) return imm(0);
  if (ca && x == 1) return b;
  if (cb && y == 1) return a;
  return mul(a, b);
}

// ---- RegionIo ----

RegionIo::RegionIo(const passes::Region& region, const LowerOptions& options)
    : region_(region), options_(options) {}

int RegionIo::input_index(const ir::Value* v) const {
  auto it = std::find(region_.inputs.begin(), region_.inputs.end(), v);
  return it == region_.inputs.end() ? -1 : static_cast<int>(it - region_.inputs.begin());
}
int RegionIo::output_index(const ir::Value* v) const {
  auto it = std::find(region_.outputs.begin(), region_.outputs.end(), v);
  return it == region_.outputs.end() ? -1 : static_cast<int>(it - region_.outputs.begin());
}
Expr RegionIo::input_dim(int i, int64_t d) const {
  int64_t c = options_.inputs[i].dims[d];
  return c >= 0 ? imm(c) : var("in" + std::to_string(i) + "_d" + std::to_string(d));
}
Expr RegionIo::output_dim(int j, int64_t d) const {
  int64_t c = options_.outputs[j].dims[d];
  return c >= 0 ? imm(c) : var("out" + std::to_string(j) + "_d" + std::to_string(d));
}

Function RegionIo::function(Stmt body, int64_t workspace_floats) const {
  Function f;
  f.name = region_.name;
  for (size_t i = 0; i < options_.inputs.size(); ++i) {
    f.buffers.push_back({"in" + std::to_string(i), options_.inputs[i].dtype});
    for (size_t d = 0; d < options_.inputs[i].dims.size(); ++d)
      f.dims.push_back("in" + std::to_string(i) + "_d" + std::to_string(d));
  }
  for (size_t j = 0; j < options_.outputs.size(); ++j) {
    f.buffers.push_back({"out" + std::to_string(j), options_.outputs[j].dtype});
    for (size_t d = 0; d < options_.outputs[j].dims.size(); ++d)
      f.dims.push_back("out" + std::to_string(j) + "_d" + std::to_string(d));
  }
  if (workspace_floats > 0) f.buffers.push_back({"workspace", DType::kFloat32});
  f.body = std::move(body);
  return f;
}

// ---- BroadcastIndex ----

BroadcastIndex::BroadcastIndex(std::vector<Expr> in_dims, std::vector<Expr> out_dims)
    : out_dims_(std::move(out_dims)) {
  const size_t r = out_dims_.size();
  strides_.assign(r, imm(0));
  Expr stride = imm(1);
  for (size_t k = 0; k < in_dims.size() && k < r; ++k) {
    const Expr& d = in_dims[in_dims.size() - 1 - k];
    size_t od = r - 1 - k;
    int64_t c = 0;
    if (const_value(d, &c)) {
      strides_[od] = c == 1 ? imm(0) : stride;
    } else {  // a run-time size of 1 broadcasts
      strides_[od] = select(compare(CmpOp::kEq, d, imm(1)), imm(0), stride);
    }
    stride = fold_mul(stride, d);
  }
}

Expr BroadcastIndex::load(const std::string& buffer, DType dtype, const Expr& row,
                          const Expr& col, int lanes) const {
  // Split row over the leading output dims (right to left), skipping dims of stride 0.
  Expr index = imm(0);
  Expr rest = row;
  const size_t r = out_dims_.size();
  bool contiguous_rows = true;  // row * N reproduces the index when every leading dim is dense
  {
    Expr dense = out_dims_.back();
    for (size_t od = r - 1; od-- > 0;) {
      if (!structural_equal(strides_[od], dense)) contiguous_rows = false;
      dense = fold_mul(dense, out_dims_[od]);
    }
    int64_t s = 0;
    if (!(const_value(strides_[r - 1], &s) && s == 1)) contiguous_rows = false;
  }
  if (contiguous_rows) {
    index = fold_mul(row, out_dims_.back());
  } else {
    for (size_t od = r - 1; od-- > 0;) {
      int64_t s = 0;
      if (!(const_value(strides_[od], &s) && s == 0))
        index = fold_add(index, fold_mul(od == 0 ? rest : mod(rest, out_dims_[od]), strides_[od]));
      bool outer_zero = true;  // no dim further out is read: stop dividing
      for (size_t e = 0; e < od; ++e) {
        int64_t z = 0;
        if (!(const_value(strides_[e], &z) && z == 0)) outer_zero = false;
      }
      if (outer_zero) break;
      rest = div(rest, out_dims_[od]);
    }
  }
  const Expr& sn = strides_[r - 1];
  int64_t s = 0;
  bool known = const_value(sn, &s);
  const Type t{dtype, 1};
  if (lanes == 1) return kir::load(t, buffer, fold_add(index, fold_mul(col, sn)));
  if (known && s == 0) return broadcast(kir::load(t, buffer, index), lanes);
  return kir::load(t.with_lanes(lanes), buffer, ramp(fold_add(index, fold_mul(col, sn)), sn, lanes));
}

// ---- Epilogue ----

namespace {

bool is_f32(const ir::Value* v) { return v && v->type().dtype == DType::kFloat32; }
bool lowerable(const ir::Value* v) { return v && is_kernel_dtype(v->type().dtype); }

}  // namespace

bool Epilogue::supported(const passes::Region& region) {
  for (const ir::Node* n : region.nodes) {
    if (n == region.anchor || n == region.pool) continue;
    if (!elementwise_op_supported(*n) || n->num_outputs() != 1 || !lowerable(n->output(0)))
      return false;
    for (const ir::Value* v : n->inputs())
      if (v && !lowerable(v)) return false;
  }
  return true;
}

Expected<Epilogue> Epilogue::make(const passes::Region& region, const RegionIo& io,
                                  std::vector<Expr> out_dims, const DimsView& view) {
  Epilogue e;
  e.region_ = &region;
  e.out_dims_ = out_dims;
  const ir::Value* anchor_out = region.anchor->output(0);
  std::map<const ir::Value*, int> produced = {{anchor_out, -1}};
  for (const ir::Node* n : region.nodes) {
    if (n == region.anchor || n == region.pool) continue;
    if (!elementwise_op_supported(*n) || n->num_outputs() != 1 || !lowerable(n->output(0)))
      return unsupported("region '{}': node '{}' ({}) has no epilogue lowering", region.name,
                         n->name(), ir::op_name(n->op()));
    std::vector<Operand> ops;
    for (const ir::Value* v : n->inputs()) {
      Operand o;
      if (!v) {
        o.node = -3;  // omitted optional input
      } else if (auto it = produced.find(v); it != produced.end()) {
        o.node = it->second;
      } else {
        int i = io.input_index(v);
        if (i < 0 || !lowerable(v))
          return unsupported("region '{}': node '{}': input '{}' is not a region input",
                             region.name, n->name(), v ? v->name() : "");
        if (!view && io.rank_of_input(i) > static_cast<int64_t>(out_dims.size()))
          return unsupported("region '{}': node '{}': input '{}' has a higher rank than the output",
                             region.name, n->name(), v->name());
        std::vector<Expr> dims;
        for (int64_t d = 0; d < io.rank_of_input(i); ++d) dims.push_back(io.input_dim(i, d));
        if (view) {
          auto v2 = view(dims);
          if (!v2)
            return unsupported("region '{}': node '{}': input '{}' does not broadcast per channel",
                               region.name, n->name(), v->name());
          dims = *v2;
        }
        int64_t last = 1;
        if (!dims.empty() && (!const_value(dims.back(), &last) || last != 1)) e.reads_columns_ = true;
        o.node = -2;
        o.buffer = "in" + std::to_string(i);
        o.dtype = v->type().dtype;
        o.index = BroadcastIndex(dims, out_dims);
      }
      ops.push_back(std::move(o));
    }
    produced[n->output(0)] = static_cast<int>(e.nodes_.size());
    e.nodes_.push_back(n);
    e.operands_.push_back(std::move(ops));
  }
  if (region.pool) {  // the region's one output is the pool's: the lowering pools the value
    auto it = produced.find(region.pool->input(0));
    if (it == produced.end() || region.outputs.size() != 1 ||
        region.outputs[0] != region.pool->output(0))
      return unsupported("region '{}': pool '{}' does not read the epilogue's value", region.name,
                         region.pool->name());
    e.pool_input_ = it->second;
    return e;
  }
  for (size_t j = 0; j < region.outputs.size(); ++j) {
    auto it = produced.find(region.outputs[j]);
    if (it == produced.end() || !lowerable(region.outputs[j]))
      return unsupported("region '{}': output '{}' is not an epilogue value", region.name,
                         region.outputs[j]->name());
    e.stores_.push_back({it->second, "out" + std::to_string(j)});
  }
  if (e.stores_.empty()) return unsupported("region '{}': no outputs", region.name);
  for (size_t j = 0; j < e.stores_.size() && e.acc_.empty(); ++j)
    if (is_f32(region.outputs[j])) e.acc_ = e.stores_[j].second;
  if (e.acc_.empty())
    return unsupported("region '{}': no float32 output to accumulate in", region.name);
  return e;
}

Expected<std::vector<Expr>> Epilogue::values(const Expr& value, const Expr& row, const Expr& col,
                                             int lanes, LetScope* lets) const {
  std::vector<Expr> vals(nodes_.size());
  auto operand = [&](const Operand& o) -> Expr {
    if (o.node == -1) return value;
    if (o.node == -3) return nullptr;
    if (o.node >= 0) return vals[o.node];
    return o.index->load(o.buffer, o.dtype, row, col, lanes);
  };
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::vector<Expr> x;
    for (const Operand& o : operands_[i]) x.push_back(operand(o));
    TJ_ASSIGN_OR_RETURN(vals[i], lower_elementwise_op(*nodes_[i], x, lets));
  }
  return vals;
}

Expected<Stmt> Epilogue::store(const Expr& value, const Expr& row, const Expr& col,
                               int lanes) const {
  LetScope lets("e_");
  TJ_ASSIGN_OR_RETURN(std::vector<Expr> vals, values(value, row, col, lanes, &lets));
  Expr base = fold_add(fold_mul(row, out_dims_.back()), col);
  Expr idx = lanes > 1 ? ramp(base, imm(1), lanes) : base;
  std::vector<Stmt> st;
  for (const auto& [node, buffer] : stores_)
    st.push_back(kir::store(buffer, idx, node < 0 ? value : vals[node]));
  return lets.wrap(st.size() == 1 ? st[0] : block(st));
}

Expected<Expr> Epilogue::pool_input(const Expr& value, const Expr& row, const Expr& col,
                                    int lanes, LetScope* lets) const {
  TJ_ASSIGN_OR_RETURN(std::vector<Expr> vals, values(value, row, col, lanes, lets));
  return pool_input_ < 0 ? value : vals[pool_input_];
}

}  // namespace tierjit::kir::lowering
