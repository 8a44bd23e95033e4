// A float buffer starting on a cache line, for packed weights and per-thread scratch that 64-byte
// vector loads stream through (std::vector's storage is 16-byte aligned: a 64-byte load then
// spans two lines, and lstm_small's recurrent weights streamed from L2 ~20% slower that way).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tierjit::kernels {

class LineBuffer {
 public:
  float* data() { return data_; }
  const float* data() const { return data_; }
  /// Floats usable from data() (the storage holds up to 16 more for the alignment).
  size_t size() const { return size_; }
  /// Grows to at least `n` floats, all zero; a buffer already that large is left as it is.
  void resize(size_t n) {
    if (n <= size_) return;
    v_.assign(n + 16, 0.f);
    const auto addr = reinterpret_cast<uintptr_t>(v_.data());
    data_ = v_.data() + ((64 - addr % 64) % 64) / sizeof(float);
    size_ = n;
  }

 private:
  std::vector<float> v_;
  float* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace tierjit::kernels
