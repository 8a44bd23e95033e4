// Template body of strided_copy (tensor_internal.h): the one strided box copy behind Transpose,
// Slice, Expand, Tile, DepthToSpace/SpaceToDepth and Pad. Plain carriers go to strided_copy_plain
// (strided_copy.cc); this body moves objects (strings).
#pragma once

#include <algorithm>

#include "kernels/parallel_for.h"

namespace tierjit::interp {

// strided_copy of objects (strings): assignment element by element.
template <class T>
void strided_copy_objects(T* dst, const std::vector<int64_t>& dst_strides, const T* src,
                          const std::vector<int64_t>& src_strides, const Shape& shape, int threads) {
  // Drop size-1 dims and merge dims that are contiguous in both layouts.
  std::vector<int64_t> dims, ds, ss;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    if (!dims.empty() && ds.back() == dst_strides[d] * shape[d] &&
        ss.back() == src_strides[d] * shape[d]) {
      dims.back() *= shape[d];
      ds.back() = dst_strides[d];
      ss.back() = src_strides[d];
      continue;
    }
    dims.push_back(shape[d]);
    ds.push_back(dst_strides[d]);
    ss.push_back(src_strides[d]);
  }
  const size_t n = dims.size();
  if (n == 0) {
    dst[0] = src[0];
    return;
  }
  if (n == 1) {
    if (ds[0] == 1 && ss[0] == 1) {
      copy_run(dst, src, dims[0]);
    } else {
      for (int64_t i = 0; i < dims[0]; ++i) dst[i * ds[0]] = src[i * ss[0]];
    }
    return;
  }
  const int64_t a = dims[n - 2], b = dims[n - 1];
  const int64_t da = ds[n - 2], db = ds[n - 1], sa = ss[n - 2], sb = ss[n - 1];
  int64_t outer = 1;
  for (size_t d = 0; d + 2 < n; ++d) outer *= dims[d];
  const bool runs = db == 1 && sb == 1;
  constexpr int64_t kTile = 32;
  const bool big = outer * a * b > (int64_t{1} << 17) && threads > 1;  // as kParallelWork
  kernels::parallel_for_if(big, threads, outer, [&](int64_t o) {
    int64_t doff = 0, soff = 0, rem = o;
    for (size_t d = n - 2; d-- > 0;) {
      int64_t idx = rem % dims[d];
      rem /= dims[d];
      doff += idx * ds[d];
      soff += idx * ss[d];
    }
    T* dp = dst + doff;
    const T* sp = src + soff;
    if (runs) {
      for (int64_t i = 0; i < a; ++i) copy_run(dp + i * da, sp + i * sa, b);
      return;
    }
    for (int64_t i0 = 0; i0 < a; i0 += kTile) {
      const int64_t i1 = std::min(a, i0 + kTile);
      for (int64_t j0 = 0; j0 < b; j0 += kTile) {
        const int64_t j1 = std::min(b, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          T* drow = dp + i * da;
          const T* srow = sp + i * sa;
          for (int64_t j = j0; j < j1; ++j) drow[j * db] = srow[j * sb];
        }
      }
    }
  });
}

template <class T>
void strided_copy(T* dst, std::vector<int64_t> dst_strides, const T* src,
                  std::vector<int64_t> src_strides, Shape shape, int threads) {
  if constexpr (std::is_trivially_copyable_v<T>) {
    strided_copy_plain(dst, dst_strides.data(), src, src_strides.data(), shape.data(), shape.size(),
                       sizeof(T), threads);
  } else {
    strided_copy_objects(dst, dst_strides, src, src_strides, shape, threads);
  }
}

}  // namespace tierjit::interp
