// Differential tests of the strided tensor kernels (Slice, Expand, Tile, Gather) against naive
// per-element references on random shapes (fixed seed): sizes 0 and 1, odd sizes, negative and
// extreme starts/ends/steps, broadcasting on random axes.
#include <limits>
#include <random>

#include "tensor_test_util.h"

namespace tierjit::testing {
namespace {

using ir::OpKind;

// Calls f(out_flat, idx) for every multi-index of `shape` in row-major order.
template <class F>
void for_each_index(const Shape& shape, F&& f) {
  const int64_t n = shape_numel(shape);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    f(e, idx);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

int64_t flat(const Shape& shape, const std::vector<int64_t>& idx) {
  int64_t off = 0;
  for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
  return off;
}

Shape random_shape(std::mt19937& rng, int max_rank, int max_dim) {
  Shape s(std::uniform_int_distribution<int>(0, max_rank)(rng));
  for (auto& d : s) d = std::uniform_int_distribution<int>(0, max_dim)(rng);
  return s;
}

// The indices a slice selects, per the ONNX Slice spec text: negative start/end count from the
// back, then start clamps to [0, n] (step > 0) or [0, n-1] (step < 0) and end to [0, n] or
// [-1, n-1]. (Unlike Python/numpy, a start still negative after adding n clamps to 0 for step
// < 0, so x[-4::-2] of 3 elements selects element 0; ONNX Runtime does the same.)
std::vector<int64_t> py_slice(int64_t start, int64_t stop, int64_t step, int64_t n) {
  auto adjust = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -n ? lo : v + n;
    return std::clamp(v, lo, hi);
  };
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = adjust(start, 0, n); i < adjust(stop, 0, n); i += step) out.push_back(i);
  } else {
    if (n == 0) return out;
    for (int64_t i = adjust(start, 0, n - 1); i > adjust(stop, -1, n - 1); i += step) out.push_back(i);
  }
  return out;
}

TEST(TensorRandomTest, SliceMatchesNaive) {
  std::mt19937 rng(1234);
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 300; ++iter) {
    Shape s = random_shape(rng, 4, 6);
    if (s.empty()) s = {3};
    const int64_t r = static_cast<int64_t>(s.size());
    Tensor x = iota_f(s);
    std::vector<int64_t> starts, ends, axes, steps;
    for (int64_t d = 0; d < r; ++d) {
      if (pick(0, 2) == 0) continue;
      axes.push_back(pick(0, 1) ? d : d - r);
      int64_t st = pick(-8, 8), en = pick(-8, 8), sp = pick(-3, 3);
      if (sp == 0) sp = 1;
      if (pick(0, 9) == 0) en = sp > 0 ? kMax : kMin;
      starts.push_back(st);
      ends.push_back(en);
      steps.push_back(sp);
    }
    const int64_t k = static_cast<int64_t>(axes.size());
    auto res = run_node(node(OpKind::Slice, {x, ti({k}, starts), ti({k}, ends), ti({k}, axes), ti({k}, steps)}));
    ASSERT_TRUE(res.ok()) << res.status().message();
    std::vector<std::vector<int64_t>> lists(static_cast<size_t>(r));
    for (int64_t d = 0; d < r; ++d)
      for (int64_t i = 0; i < s[d]; ++i) lists[d].push_back(i);
    for (int64_t i = 0; i < k; ++i) {
      int64_t d = axes[i] < 0 ? axes[i] + r : axes[i];
      lists[d] = py_slice(starts[i], ends[i], steps[i], s[d]);
    }
    Shape os;
    for (const auto& l : lists) os.push_back(static_cast<int64_t>(l.size()));
    Tensor want = Tensor::empty(DType::kFloat32, os);
    for_each_index(os, [&](int64_t e, const std::vector<int64_t>& idx) {
      std::vector<int64_t> src(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) src[d] = lists[d][idx[d]];
      want.data<float>()[e] = static_cast<float>(flat(s, src));
    });
    expect_tensor_near((*res)[0], want);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "iteration " << iter << " shape " << shape_to_string(s) << " starts "
                    << shape_to_string(starts) << " ends " << shape_to_string(ends) << " axes "
                    << shape_to_string(axes) << " steps " << shape_to_string(steps);
      return;
    }
  }
}

TEST(TensorRandomTest, ExpandAndTileMatchNaive) {
  std::mt19937 rng(99);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 200; ++iter) {
    // Expand: target of rank >= input; each input dim is 1 (broadcast) or equal.
    Shape in = random_shape(rng, 3, 4);
    Shape target(in.size() + static_cast<size_t>(pick(0, 2)));
    const size_t off = target.size() - in.size();
    for (size_t d = 0; d < target.size(); ++d) {
      if (d < off) target[d] = pick(0, 3);
      else target[d] = in[d - off] == 1 ? pick(0, 4) : (pick(0, 1) ? in[d - off] : 1);
    }
    Shape out = target;
    for (size_t d = off; d < target.size(); ++d) out[d] = in[d - off] == 1 ? target[d] : in[d - off];
    Tensor x = iota_f(in);
    auto e = run_node(node(OpKind::Expand, {x, ti({static_cast<int64_t>(target.size())}, target)}));
    ASSERT_TRUE(e.ok()) << e.status().message();
    Tensor want = Tensor::empty(DType::kFloat32, out);
    for_each_index(out, [&](int64_t f, const std::vector<int64_t>& idx) {
      std::vector<int64_t> src(in.size());
      for (size_t d = 0; d < in.size(); ++d) src[d] = in[d] == 1 ? 0 : idx[d + off];
      want.data<float>()[f] = static_cast<float>(flat(in, src));
    });
    expect_tensor_near((*e)[0], want);
    // Tile with random repeats in [0, 3].
    std::vector<int64_t> reps(in.size());
    Shape tout(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      reps[d] = pick(0, 3);
      tout[d] = reps[d] * in[d];
    }
    auto t = run_node(node(OpKind::Tile, {x, ti({static_cast<int64_t>(reps.size())}, reps)}));
    ASSERT_TRUE(t.ok()) << t.status().message();
    Tensor twant = Tensor::empty(DType::kFloat32, tout);
    for_each_index(tout, [&](int64_t f, const std::vector<int64_t>& idx) {
      std::vector<int64_t> src(in.size());
      for (size_t d = 0; d < in.size(); ++d) src[d] = idx[d] % in[d];
      twant.data<float>()[f] = static_cast<float>(flat(in, src));
    });
    expect_tensor_near((*t)[0], twant);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "iteration " << iter << " input " << shape_to_string(in);
      return;
    }
  }
}

TEST(TensorRandomTest, GatherMatchesNaive) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int iter = 0; iter < 200; ++iter) {
    Shape s = random_shape(rng, 3, 5);
    if (s.empty()) s = {2};
    const int64_t r = static_cast<int64_t>(s.size());
    const int64_t axis = pick(0, static_cast<int>(r) - 1);
    if (s[axis] == 0) s[axis] = 1;
    Shape ishape = random_shape(rng, 2, 3);
    std::vector<int64_t> ind(static_cast<size_t>(shape_numel(ishape)));
    for (auto& v : ind) v = pick(-static_cast<int>(s[axis]), static_cast<int>(s[axis]) - 1);
    Tensor x = iota_f(s);
    auto g = run_node(node(OpKind::Gather, {x, ti(ishape, ind)}, 1, {{"axis", attr_int(axis - (pick(0, 1) ? r : 0))}}));
    ASSERT_TRUE(g.ok()) << g.status().message();
    Shape os(s.begin(), s.begin() + axis);
    os.insert(os.end(), ishape.begin(), ishape.end());
    os.insert(os.end(), s.begin() + axis + 1, s.end());
    Tensor want = Tensor::empty(DType::kFloat32, os);
    const int64_t q = static_cast<int64_t>(ishape.size());
    for_each_index(os, [&](int64_t f, const std::vector<int64_t>& idx) {
      std::vector<int64_t> src;
      for (int64_t d = 0; d < axis; ++d) src.push_back(idx[d]);
      std::vector<int64_t> ii(idx.begin() + axis, idx.begin() + axis + q);
      int64_t v = ind[static_cast<size_t>(flat(ishape, ii))];
      src.push_back(v < 0 ? v + s[axis] : v);
      for (int64_t d = axis + 1; d < r; ++d) src.push_back(idx[d - 1 + q]);
      want.data<float>()[f] = static_cast<float>(flat(s, src));
    });
    expect_tensor_near((*g)[0], want);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "iteration " << iter << " shape " << shape_to_string(s) << " axis " << axis;
      return;
    }
  }
}

}  // namespace
}  // namespace tierjit::testing
