// The Softmax with its elementwise prologue (see softmax_fusion.h): matching in the graph, and
// the row kernel. Each prologue step is one IEEE float32 operation per element, the same the
// Add / Sub / Mul / Div kernels perform (no reciprocal, no FMA), so any vector width gives their
// bits; the row is then normalized by the Softmax kernel's own row function.
#include "interp/kernels/softmax_fusion.h"

#include <immintrin.h>

#include <algorithm>

#include "interp/kernels/fusion_match.h"
#include "kernels/parallel_for.h"
#include "kernels/vec_math.h"

namespace tierjit::interp {
namespace {

bool is_prologue_op(ir::OpKind op) {
  return op == ir::OpKind::Add || op == ir::OpKind::Sub || op == ir::OpKind::Mul ||
         op == ir::OpKind::Div;
}

// Elements per task (whole rows; as the Softmax kernel, softmax.cc), also the longest row the
// prologue writes to a stack scratch row, and one thread's time per element: 198-225 us for
// 131K (tierjit_micro_bench --benchmark_filter=attention_softmax, AVX2, Zen 3).
constexpr int64_t kChunk = 2048;
constexpr double kNsPerElement = 1.5;

template <ir::OpKind Op>
inline __m256 apply8(__m256 a, __m256 b) {
  if constexpr (Op == ir::OpKind::Add) return _mm256_add_ps(a, b);
  else if constexpr (Op == ir::OpKind::Sub) return _mm256_sub_ps(a, b);
  else if constexpr (Op == ir::OpKind::Mul) return _mm256_mul_ps(a, b);
  else return _mm256_div_ps(a, b);
}

template <ir::OpKind Op>
inline float apply1(float a, float b) {
  if constexpr (Op == ir::OpKind::Add) return a + b;
  else if constexpr (Op == ir::OpKind::Sub) return a - b;
  else if constexpr (Op == ir::OpKind::Mul) return a * b;
  else return a / b;
}

// y[i] = op(x[i], b[i * Step]) (ChainLeft) or op(b[i * Step], x[i]) for i < n; Step 0 broadcasts
// one value over the row. y may equal x.
template <ir::OpKind Op, bool ChainLeft, int Step>
void row_step(const float* x, const float* b, float* y, int64_t n) {
  int64_t i = 0;
  const __m256 bs = _mm256_set1_ps(b[0]);
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(x + i);
    const __m256 o = Step == 0 ? bs : _mm256_loadu_ps(b + i);
    _mm256_storeu_ps(y + i, ChainLeft ? apply8<Op>(a, o) : apply8<Op>(o, a));
  }
  for (; i < n; ++i) {
    const float o = b[i * Step];
    y[i] = ChainLeft ? apply1<Op>(x[i], o) : apply1<Op>(o, x[i]);
  }
}

using RowStep = void (*)(const float*, const float*, float*, int64_t);

template <ir::OpKind Op>
RowStep row_step_for(bool chain_left, bool scalar) {
  if (chain_left) return scalar ? row_step<Op, true, 0> : row_step<Op, true, 1>;
  return scalar ? row_step<Op, false, 0> : row_step<Op, false, 1>;
}

RowStep row_step_for(ir::OpKind op, bool chain_left, bool scalar) {
  switch (op) {
    case ir::OpKind::Add: return row_step_for<ir::OpKind::Add>(chain_left, scalar);
    case ir::OpKind::Sub: return row_step_for<ir::OpKind::Sub>(chain_left, scalar);
    case ir::OpKind::Mul: return row_step_for<ir::OpKind::Mul>(chain_left, scalar);
    default: return row_step_for<ir::OpKind::Div>(chain_left, scalar);
  }
}

// One prologue step as run: its kernel, its other operand, and that operand's element offset
// for each outer index of the scores (a stride per outer dim, 0 where it broadcasts).
struct Step {
  RowStep fn = nullptr;
  const float* other = nullptr;
  std::vector<int64_t> outer_stride;
};

// Fills s.outer_stride and s.fn for operand `b` against scores of shape `shape`; false when b
// would widen the shape (higher rank, or a dim neither 1 nor the scores').
bool plan_step(Step& s, ir::OpKind op, bool chain_left, const Tensor& b, const Shape& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size()), brank = b.rank();
  if (brank > rank) return false;
  s.outer_stride.assign(static_cast<size_t>(rank - 1), 0);
  int64_t stride = 1;
  bool scalar_row = true;
  for (int64_t k = 1; k <= brank; ++k) {  // dims from the last
    const int64_t bd = b.shape()[static_cast<size_t>(brank - k)];
    const int64_t sd = shape[static_cast<size_t>(rank - k)];
    if (bd != 1 && bd != sd) return false;
    if (k == 1) scalar_row = bd == 1;
    else if (bd != 1) s.outer_stride[static_cast<size_t>(rank - k)] = stride;
    stride *= bd;
  }
  s.fn = row_step_for(op, chain_left, scalar_row);
  s.other = b.data<float>();
  return true;
}

// True when Softmax node `sm` normalizes the last axis of a rank-`rank` input (opset 13's
// axis, or opsets 1 / 11's coerced 2-D rows when their axis is the last).
bool softmax_over_last_axis(const ir::Node& sm, int64_t rank) {
  if (rank < 1) return false;
  int64_t a = sm.attr_int("axis", sm.opset() < 13 ? 1 : -1);
  if (a < 0) a += rank;
  return a == rank - 1;
}

}  // namespace

std::optional<SoftmaxChain> match_softmax_chain(const ir::Node& first, const ir::Graph& g) {
  if (!is_prologue_op(first.op()) || first.num_inputs() != 2 || first.num_outputs() != 1)
    return std::nullopt;
  SoftmaxChain c;
  const ir::Node* n = &first;
  while (n && is_prologue_op(n->op()) && n->num_inputs() == 2 &&
         static_cast<int>(c.ops.size()) < kMaxSoftmaxPrologue) {
    c.ops.push_back(n);
    n = sole_user(n->output(0), g);
  }
  if (!n || n->op() != ir::OpKind::Softmax || n->num_inputs() != 1 ||
      n->input(0) != c.ops.back()->output(0))
    return std::nullopt;
  c.softmax = n;
  return c;
}

std::vector<const ir::Value*> softmax_chain_operands(const SoftmaxChain& c) {
  std::vector<const ir::Value*> v = {c.ops[0]->input(0), c.ops[0]->input(1)};
  for (size_t k = 1; k < c.ops.size(); ++k) v.push_back(other_input(*c.ops[k], c.ops[k - 1]->output(0)));
  return v;
}

std::optional<Tensor> run_softmax_chain(const SoftmaxChain& c, std::span<const Tensor* const> operands,
                                        int threads) {
  if (operands.size() != c.ops.size() + 1) return std::nullopt;
  for (const Tensor* t : operands)
    if (!t || !t->defined() || t->dtype() != DType::kFloat32) return std::nullopt;
  // The first node's full-shape input carries the chain (input 0 when both are).
  const Tensor& a0 = *operands[0];
  const Tensor& a1 = *operands[1];
  const bool main_left = a0.rank() >= a1.rank() && shape_numel(a0.shape()) >= shape_numel(a1.shape());
  const Tensor& x = main_left ? a0 : a1;
  const Shape& shape = x.shape();
  const int64_t rank = x.rank();
  if (!softmax_over_last_axis(*c.softmax, rank) || x.numel() == 0) return std::nullopt;
  std::vector<Step> steps(c.ops.size());
  if (!plan_step(steps[0], c.ops[0]->op(), main_left, main_left ? a1 : a0, shape)) return std::nullopt;
  for (size_t k = 1; k < c.ops.size(); ++k) {
    const bool chain_left = c.ops[k]->input(0) == c.ops[k - 1]->output(0);
    if (!plan_step(steps[k], c.ops[k]->op(), chain_left, *operands[k + 1], shape)) return std::nullopt;
  }

  const int64_t R = shape.back(), O = x.numel() / R;
  Tensor y = Tensor::empty(DType::kFloat32, shape);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const int64_t rows_per_task = std::max<int64_t>(1, kChunk / R);
  const int64_t tasks = (O + rows_per_task - 1) / rows_per_task;
  const int team = kernels::worth_parallel(threads, O * R, kNsPerElement) ? threads : 1;
  kernels::parallel_for_stealing(team, tasks, [&](int64_t t) {
    const int64_t o0 = t * rows_per_task, rows = std::min(rows_per_task, O - o0);
    alignas(64) float scratch[kChunk];
    for (int64_t o = o0; o < o0 + rows; ++o) {
      const float* src = xp + o * R;
      float* dst = R <= kChunk ? scratch : yp + o * R;
      for (const Step& s : steps) {
        int64_t off = 0;
        for (int64_t d = rank - 2, rest = o; d >= 0; --d) {
          const int64_t dim = shape[static_cast<size_t>(d)];
          off += (rest % dim) * s.outer_stride[static_cast<size_t>(d)];
          rest /= dim;
        }
        s.fn(src, s.other + off, dst, R);
        src = dst;
      }
      kernels::softmax_rows_f32(dst, yp + o * R, 1, R);
    }
  });
  return y;
}

}  // namespace tierjit::interp
