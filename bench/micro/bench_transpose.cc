// Tier 0's strided copy (interp/kernels/strided_copy.cc, behind Transpose, Slice, Expand, Tile)
// on float32, called directly on preallocated buffers: "tier0" is strided_copy_plain, "tier0_old"
// the previous element-by-element template (kept here verbatim for the comparison). Cases:
// layout.transpose_<shape>_p<perm>_t<threads>: bert_tiny's attention transposes [4,64,2,64]
// perm 0,2,1,3 (runs of 64 floats) and 0,2,3,1 (keys: the last axis moves) at 1 and 2 threads
// (the old code stays on one below 2^17 elements), the batch-1 [1,128,2,64] and [1,16,2,64]
// ones, and a 2-D [512,512] at 1 and 2 threads.
// Run: tierjit_micro_bench --benchmark_filter=layout. --benchmark_repetitions=5
//      --benchmark_enable_random_interleaving=true
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "interp/kernels/tensor_internal.h"
#include "micro.h"

namespace tierjit::bench {
namespace {

// The strided_copy body before strided_copy.cc (git c2531d8), for the old/new comparison.
template <class T>
void old_strided_copy(T* dst, std::vector<int64_t> dst_strides, const T* src,
                      std::vector<int64_t> src_strides, Shape shape, int threads) {
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
      interp::copy_run(dst, src, dims[0]);
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
  const bool big = outer * a * b > (int64_t{1} << 17) && threads > 1;
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
      for (int64_t i = 0; i < a; ++i) interp::copy_run(dp + i * da, sp + i * sa, b);
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

struct Case {
  const char* name;
  Shape in;
  std::vector<int64_t> perm;
  int threads;
};

const Case kCases[] = {
    {"bert_4x64x2x64_p0213_t1", {4, 64, 2, 64}, {0, 2, 1, 3}, 1},
    {"bert_4x64x2x64_p0231_t1", {4, 64, 2, 64}, {0, 2, 3, 1}, 1},
    {"bert_4x64x2x64_p0213_t2", {4, 64, 2, 64}, {0, 2, 1, 3}, 2},
    {"bert_4x64x2x64_p0231_t2", {4, 64, 2, 64}, {0, 2, 3, 1}, 2},
    {"bert_1x128x2x64_p0213_t1", {1, 128, 2, 64}, {0, 2, 1, 3}, 1},
    {"bert_1x128x2x64_p0231_t1", {1, 128, 2, 64}, {0, 2, 3, 1}, 1},
    {"bert_1x16x2x64_p0213_t1", {1, 16, 2, 64}, {0, 2, 1, 3}, 1},
    {"bert_1x16x2x64_p0231_t1", {1, 16, 2, 64}, {0, 2, 3, 1}, 1},
    {"512x512_p10_t1", {512, 512}, {1, 0}, 1},
    {"512x512_p10_t2", {512, 512}, {1, 0}, 2},
};

// One timed case: buffers and strides built once; each iteration copies the whole box.
void run(benchmark::State& state, const Case& c, bool old) {
  int64_t n = 1;
  for (int64_t d : c.in) n *= d;
  std::vector<uint32_t> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
  std::iota(src.begin(), src.end(), 0u);
  const size_t rank = c.in.size();
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * c.in[d];
  Shape out(rank);
  std::vector<int64_t> ss(rank), ds(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    out[i] = c.in[static_cast<size_t>(c.perm[i])];
    ss[i] = in_strides[static_cast<size_t>(c.perm[i])];
  }
  for (size_t d = rank; d-- > 1;) ds[d - 1] = ds[d] * out[d];
  for (auto _ : state) {
    if (old) {
      old_strided_copy<uint32_t>(dst.data(), ds, src.data(), ss, out, c.threads);
    } else {
      interp::strided_copy_plain(dst.data(), ds.data(), src.data(), ss.data(), out.data(), rank,
                                 sizeof(uint32_t), c.threads);
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 8);  // read + write
}

const bool registered = [] {
  for (const Case& c : kCases) {
    const std::string name = std::string("layout.transpose_") + c.name;
    register_case(name, "tier0", [&c](benchmark::State& s) { run(s, c, false); });
    register_case(name, "tier0_old", [&c](benchmark::State& s) { run(s, c, true); });
  }
  return true;
}();

}  // namespace
}  // namespace tierjit::bench
