// Tier 0's strided box copy of plain elements (1, 2, 4 or 8 bytes), the data movement behind
// Transpose, Slice, Expand, Tile, DepthToSpace/SpaceToDepth (tensor_internal.h strided_copy_plain).
// Size-1 dims are dropped and dims adjacent in both layouts merged; an axis contiguous in both
// layouts moves as memcpy runs; an axis contiguous in the destination crossed with one contiguous
// in the source moves as a 2-D transpose of register tiles (AVX2: 8x8 for 1/2/4-byte elements,
// 4x4 for 8-byte); anything else walks elements. Bits are copied, never converted.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/parallel_for.h"
#include "interp/kernels/tensor_internal.h"

namespace tierjit::interp {
namespace {

// Elements from which a copy is split over the OpenMP team: lower than the other kernels'
// 2^17, as a copy reads what the previous (threaded) node left in both cores' caches. bert_tiny
// 4x64 on 2 threads (8 copies of 2^15 floats): p50 -16 us per request (7 of 8 alternated rounds,
// 0.650 -> 0.634 ms median); 1x128 (2^14-float copies) split: no gain (+-5 us), so not below 2^15.
constexpr int64_t kParallelWork = int64_t{1} << 15;
// int64 values kept on the stack (3 arrays of a rank up to 16): no allocation per call.
constexpr size_t kStackDims = 48;

// An int64 array on the stack up to kStackDims entries, else on the heap.
class DimArray {
 public:
  explicit DimArray(size_t n) : heap_(n > kStackDims ? n : 0) {}
  int64_t* data() { return heap_.empty() ? stack_ : heap_.data(); }

 private:
  int64_t stack_[kStackDims];
  std::vector<int64_t> heap_;
};

// A loop nest over m dims in row-major order with each dim's element stride in dst and src.
struct Nest {
  size_t m = 0;
  const int64_t* dims = nullptr;
  const int64_t* ds = nullptr;
  const int64_t* ss = nullptr;
};

// Calls f(dst_offset, src_offset) for the flat indices [begin, end) of `nest`, in order: the
// innermost dim as a plain loop, the others as an odometer.
template <class F>
void walk(const Nest& nest, int64_t begin, int64_t end, const F& f) {
  if (begin >= end) return;
  if (nest.m == 0) {
    f(0, 0);
    return;
  }
  DimArray idx_buf(nest.m);
  int64_t* idx = idx_buf.data();
  int64_t doff = 0, soff = 0, rem = begin;  // offsets of the row start (innermost index 0)
  for (size_t d = nest.m; d-- > 0;) {
    idx[d] = rem % nest.dims[d];
    rem /= nest.dims[d];
    if (d + 1 < nest.m) {
      doff += idx[d] * nest.ds[d];
      soff += idx[d] * nest.ss[d];
    }
  }
  const size_t last = nest.m - 1;
  const int64_t len = nest.dims[last], dstep = nest.ds[last], sstep = nest.ss[last];
  for (int64_t i = begin, j = idx[last];;) {
    const int64_t stop = std::min(len, j + (end - i));
    for (int64_t t = j; t < stop; ++t) f(doff + t * dstep, soff + t * sstep);
    i += stop - j;
    if (i == end) return;
    j = 0;
    for (size_t d = last; d-- > 0;) {  // next row; i < end, so some outer dim advances
      doff += nest.ds[d];
      soff += nest.ss[d];
      if (++idx[d] < nest.dims[d]) break;
      doff -= nest.ds[d] * nest.dims[d];
      soff -= nest.ss[d] * nest.dims[d];
      idx[d] = 0;
    }
  }
}

// Copies a run of `bytes` bytes: up to 1 KiB as 32-byte vector moves (the last one overlapping
// the previous when the length is not a multiple of 32), inline, as a call to memcpy costs about
// as much as moving 256 bytes; longer runs and runs under 32 bytes through memcpy.
inline void move_run(void* dst, const void* src, int64_t bytes) {
  if (bytes < 32 || bytes > 1024) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  int64_t i = 0;
  for (; i + 32 <= bytes; i += 32)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
  if (i < bytes)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + bytes - 32),
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + bytes - 32)));
}

// K x K register tiles: move(s, lds, d, ldd) sets d[c * ldd + r] = s[r * lds + c] for r, c < K
// (element strides). Loads and stores are unaligned; only shuffles in between, so bits survive.
template <class U>
struct Tile;

template <>
struct Tile<uint32_t> {
  static constexpr int64_t kK = 8;
  static void move(const uint32_t* s, int64_t lds, uint32_t* d, int64_t ldd) {
    const float* p = reinterpret_cast<const float*>(s);
    float* q = reinterpret_cast<float*>(d);
    // Rows r and r + 4 of a 4-column half in the low and high lane, then a 4x4 transpose per lane.
    auto pair = [&](int64_t r, int64_t c) {
      return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(p + r * lds + c)),
                                  _mm_loadu_ps(p + (r + 4) * lds + c), 1);
    };
    for (int64_t c = 0; c < 8; c += 4) {
      const __m256 t0 = pair(0, c), t1 = pair(1, c), t2 = pair(2, c), t3 = pair(3, c);
      const __m256 u0 = _mm256_unpacklo_ps(t0, t1), u1 = _mm256_unpackhi_ps(t0, t1);
      const __m256 u2 = _mm256_unpacklo_ps(t2, t3), u3 = _mm256_unpackhi_ps(t2, t3);
      _mm256_storeu_ps(q + (c + 0) * ldd, _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(1, 0, 1, 0)));
      _mm256_storeu_ps(q + (c + 1) * ldd, _mm256_shuffle_ps(u0, u2, _MM_SHUFFLE(3, 2, 3, 2)));
      _mm256_storeu_ps(q + (c + 2) * ldd, _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(1, 0, 1, 0)));
      _mm256_storeu_ps(q + (c + 3) * ldd, _mm256_shuffle_ps(u1, u3, _MM_SHUFFLE(3, 2, 3, 2)));
    }
  }
};

template <>
struct Tile<uint64_t> {
  static constexpr int64_t kK = 4;
  static void move(const uint64_t* s, int64_t lds, uint64_t* d, int64_t ldd) {
    const double* p = reinterpret_cast<const double*>(s);
    double* q = reinterpret_cast<double*>(d);
    // Rows r and r + 2 of a 2-column half in the low and high lane.
    auto pair = [&](int64_t r, int64_t c) {
      return _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(p + r * lds + c)),
                                  _mm_loadu_pd(p + (r + 2) * lds + c), 1);
    };
    for (int64_t c = 0; c < 4; c += 2) {
      const __m256d t0 = pair(0, c), t1 = pair(1, c);
      _mm256_storeu_pd(q + c * ldd, _mm256_unpacklo_pd(t0, t1));
      _mm256_storeu_pd(q + (c + 1) * ldd, _mm256_unpackhi_pd(t0, t1));
    }
  }
};

template <>
struct Tile<uint16_t> {
  static constexpr int64_t kK = 8;
  static void move(const uint16_t* s, int64_t lds, uint16_t* d, int64_t ldd) {
    __m128i a[8];
    for (int r = 0; r < 8; ++r) a[r] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + r * lds));
    __m128i b[8], c[8];
    for (int r = 0; r < 4; ++r) {  // b[2k], b[2k+1]: rows 2k, 2k+1 interleaved, columns 0-3 / 4-7
      b[2 * r] = _mm_unpacklo_epi16(a[2 * r], a[2 * r + 1]);
      b[2 * r + 1] = _mm_unpackhi_epi16(a[2 * r], a[2 * r + 1]);
    }
    for (int h = 0; h < 2; ++h) {  // rows 4h..4h+3: c[4h + j] holds columns 2j, 2j + 1
      c[4 * h + 0] = _mm_unpacklo_epi32(b[4 * h], b[4 * h + 2]);
      c[4 * h + 1] = _mm_unpackhi_epi32(b[4 * h], b[4 * h + 2]);
      c[4 * h + 2] = _mm_unpacklo_epi32(b[4 * h + 1], b[4 * h + 3]);
      c[4 * h + 3] = _mm_unpackhi_epi32(b[4 * h + 1], b[4 * h + 3]);
    }
    for (int j = 0; j < 4; ++j) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * j) * ldd), _mm_unpacklo_epi64(c[j], c[4 + j]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + (2 * j + 1) * ldd), _mm_unpackhi_epi64(c[j], c[4 + j]));
    }
  }
};

template <>
struct Tile<uint8_t> {
  static constexpr int64_t kK = 8;
  static void move(const uint8_t* s, int64_t lds, uint8_t* d, int64_t ldd) {
    __m128i a[8];
    for (int r = 0; r < 8; ++r) a[r] = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + r * lds));
    // b[k]: rows 2k, 2k+1 interleaved; c: 4 rows, columns 0-3 (c[0], c[2]) and 4-7 (c[1], c[3]).
    const __m128i b0 = _mm_unpacklo_epi8(a[0], a[1]), b1 = _mm_unpacklo_epi8(a[2], a[3]);
    const __m128i b2 = _mm_unpacklo_epi8(a[4], a[5]), b3 = _mm_unpacklo_epi8(a[6], a[7]);
    const __m128i c0 = _mm_unpacklo_epi16(b0, b1), c1 = _mm_unpackhi_epi16(b0, b1);
    const __m128i c2 = _mm_unpacklo_epi16(b2, b3), c3 = _mm_unpackhi_epi16(b2, b3);
    const __m128i e[4] = {_mm_unpacklo_epi32(c0, c2), _mm_unpackhi_epi32(c0, c2),
                          _mm_unpacklo_epi32(c1, c3), _mm_unpackhi_epi32(c1, c3)};
    for (int j = 0; j < 4; ++j) {  // e[j]: columns 2j (low 8 bytes) and 2j + 1 (high 8 bytes)
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (2 * j) * ldd), e[j]);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + (2 * j + 1) * ldd), _mm_unpackhi_epi64(e[j], e[j]));
    }
  }
};

// Moves source rows [r0, r1) of a rows x cols block: d[c * ldd + r] = s[r * lds + c]. Full K x K
// tiles column block by column block (the band's rows of one destination line together), then
// the ragged edges element by element.
template <class U>
void transpose_band(const U* s, int64_t lds, U* d, int64_t ldd, int64_t r0, int64_t r1, int64_t cols) {
  constexpr int64_t k = Tile<U>::kK;
  const int64_t rk = r0 + (r1 - r0) / k * k, ck = cols / k * k;
  for (int64_t c = 0; c < ck; c += k)
    for (int64_t r = r0; r < rk; r += k) Tile<U>::move(s + r * lds + c, lds, d + c * ldd + r, ldd);
  if (ck < cols)
    for (int64_t c = ck; c < cols; ++c)
      for (int64_t r = r0; r < rk; ++r) d[c * ldd + r] = s[r * lds + c];
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = rk; r < r1; ++r) d[c * ldd + r] = s[r * lds + c];
}

// The merged box: n dims, extents and element strides in dst (ds) and src (ss).
struct Box {
  size_t n = 0;
  int64_t* dims = nullptr;
  int64_t* ds = nullptr;
  int64_t* ss = nullptr;
};

// The dims of `box` other than axes a and b (a may equal b) as a loop nest, written into `buf`
// (3n entries).
Nest other_dims(const Box& box, size_t a, size_t b, int64_t* buf) {
  Nest nest;
  int64_t* dims = buf;
  int64_t* ds = buf + box.n;
  int64_t* ss = buf + 2 * box.n;
  for (size_t d = 0; d < box.n; ++d) {
    if (d == a || d == b) continue;
    dims[nest.m] = box.dims[d];
    ds[nest.m] = box.ds[d];
    ss[nest.m] = box.ss[d];
    ++nest.m;
  }
  nest.dims = dims;
  nest.ds = ds;
  nest.ss = ss;
  return nest;
}

int64_t nest_size(const Nest& nest) {
  int64_t n = 1;
  for (size_t d = 0; d < nest.m; ++d) n *= nest.dims[d];
  return n;
}

// Splits [0, items) into `parts` contiguous ranges and calls f(begin, end) for each, on the
// OpenMP team when `parallel`.
template <class F>
void split(bool parallel, int threads, int64_t items, const F& f) {
  const int64_t parts = parallel ? std::min<int64_t>(threads, items) : 1;
  kernels::parallel_for_if(parts > 1, threads, parts, [&](int64_t t) {
    f(items * t / parts, items * (t + 1) / parts);
  });
}

template <class U>
void copy_box(U* dst, const U* src, const Box& box, int threads) {
  const size_t n = box.n;
  int64_t total = 1;
  for (size_t d = 0; d < n; ++d) total *= box.dims[d];
  const bool parallel = threads > 1 && total >= kParallelWork;
  DimArray nest_buf(3 * n);
  // Axis p: contiguous in dst (the largest such); axis q: contiguous in src.
  size_t p = n, q = n;
  for (size_t d = 0; d < n; ++d)
    if (box.ds[d] == 1 && (p == n || box.dims[d] > box.dims[p])) p = d;
  if (p < n && box.ss[p] == 1) {  // runs of dims[p] elements
    const Nest nest = other_dims(box, p, p, nest_buf.data());
    const int64_t bytes = box.dims[p] * static_cast<int64_t>(sizeof(U));
    split(parallel, threads, nest_size(nest), [&](int64_t b, int64_t e) {
      walk(nest, b, e, [&](int64_t doff, int64_t soff) { move_run(dst + doff, src + soff, bytes); });
    });
    return;
  }
  for (size_t d = 0; d < n; ++d)
    if (d != p && box.ss[d] == 1 && (q == n || box.dims[d] > box.dims[q])) q = d;
  constexpr int64_t k = Tile<U>::kK;
  if (p < n && q < n && box.dims[p] >= k && box.dims[q] >= k) {
    // 2-D transpose: source rows run along p (stride lds), columns along q (contiguous).
    const Nest nest = other_dims(box, p, q, nest_buf.data());
    const int64_t rows = box.dims[p], cols = box.dims[q], lds = box.ss[p], ldd = box.ds[q];
    // Bands of rows filling 256 bytes (4 lines) of each destination row: 64 rows of floats.
    // Measured on [512,512] / [500,500] floats: bands of 16 rows 161 / 32 us, 64 rows 54 / 23.
    constexpr int64_t kBand = std::max<int64_t>(k, 256 / static_cast<int64_t>(sizeof(U)));
    const int64_t bands = (rows + kBand - 1) / kBand;
    split(parallel, threads, nest_size(nest) * bands, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e;) {  // one outer block: its bands in [i, stop)
        const int64_t o = i / bands, stop = std::min(e, (o + 1) * bands);
        walk(nest, o, o + 1, [&](int64_t doff, int64_t soff) {
          for (int64_t band = i - o * bands; band < stop - o * bands; ++band)
            transpose_band(src + soff, lds, dst + doff, ldd, band * kBand,
                           std::min(rows, (band + 1) * kBand), cols);
        });
        i = stop;
      }
    });
    return;
  }
  // Anything else: element by element along the last axis.
  const Nest nest = other_dims(box, n - 1, n - 1, nest_buf.data());
  const int64_t len = box.dims[n - 1], db = box.ds[n - 1], sb = box.ss[n - 1];
  split(parallel, threads, nest_size(nest), [&](int64_t b, int64_t e) {
    walk(nest, b, e, [&](int64_t doff, int64_t soff) {
      U* dp = dst + doff;
      const U* sp = src + soff;
      if (sb == 0 && db == 1) {
        std::fill_n(dp, len, *sp);
      } else {
        for (int64_t j = 0; j < len; ++j) dp[j * db] = sp[j * sb];
      }
    });
  });
}

}  // namespace

void strided_copy_plain(void* dst, const int64_t* dst_strides, const void* src,
                        const int64_t* src_strides, const int64_t* shape, size_t rank,
                        size_t elem_size, int threads) {
  // Drop size-1 dims and merge dims that are adjacent in both layouts.
  DimArray buf(3 * rank);
  Box box{0, buf.data(), buf.data() + rank, buf.data() + 2 * rank};
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 0) return;
    if (shape[d] == 1) continue;
    if (box.n > 0 && box.ds[box.n - 1] == dst_strides[d] * shape[d] &&
        box.ss[box.n - 1] == src_strides[d] * shape[d]) {
      box.dims[box.n - 1] *= shape[d];
      box.ds[box.n - 1] = dst_strides[d];
      box.ss[box.n - 1] = src_strides[d];
      continue;
    }
    box.dims[box.n] = shape[d];
    box.ds[box.n] = dst_strides[d];
    box.ss[box.n] = src_strides[d];
    ++box.n;
  }
  if (box.n == 0) {
    std::memcpy(dst, src, elem_size);
    return;
  }
  switch (elem_size) {
    case 1: return copy_box(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), box, threads);
    case 2: return copy_box(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), box, threads);
    case 4: return copy_box(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), box, threads);
    case 8: return copy_box(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), box, threads);
    default: break;
  }
}

}  // namespace tierjit::interp
