// Template bodies for common.h.
#pragma once

#include <array>

namespace tierjit::interp {

template <size_t N, class F>
void for_each_broadcast(const Shape& out_shape, const std::array<std::vector<int64_t>, N>& strides,
                        F&& f) {
  const int64_t rank = static_cast<int64_t>(out_shape.size());
  const int64_t total = shape_numel(out_shape);
  if (total == 0) return;
  if (rank == 0) {
    std::array<int64_t, N> off{};
    f(int64_t{0}, off);
    return;
  }
  const int64_t inner = out_shape[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  std::array<int64_t, N> base{};
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][rank - 1];
  for (int64_t out = 0; out < total; out += inner) {
    std::array<int64_t, N> off = base;
    for (int64_t j = 0; j < inner; ++j) {
      f(out + j, off);
      for (size_t k = 0; k < N; ++k) off[k] += inner_stride[k];
    }
    // advance the outer index (rank-2 down to 0)
    for (int64_t d = rank - 2; d >= 0; --d) {
      ++idx[d];
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (idx[d] < out_shape[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * out_shape[d];
      idx[d] = 0;
    }
  }
}

}  // namespace tierjit::interp
