// Pieces shared by the oneDNN glue files (dnnl_common.cc, dnnl_util.cc for convolutions,
// dnnl_matmul.cc): the CPU engine, per-thread reused call buffers and the cache of constant
// weights in the layouts primitives ask for. Only included by those .cc files: no oneDNN type
// leaks out of dnnl_util.h.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "interp/kernel.h"

namespace tierjit::interp::nn::dnnl_glue {

/// The process-wide oneDNN CPU engine.
dnnl::engine& cpu_engine();

/// A reorder primitive from `from` to `to` (both plain-sized float32 layouts). Throws
/// dnnl::error when oneDNN would need a scratchpad (shared scratchpads are refused: concurrent
/// runs must share no buffers).
dnnl::reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

/// Per-thread reusable buffers for per-call memories (blocked copies, scratchpads): a fresh
/// allocation per call is a fresh mmap, and touching it page-faults on every request.
enum class CallSlot { kSrc, kDst, kScratch };

/// A memory of `md` on this thread's reused buffer of `slot` (grown to the largest size seen up
/// to 16 MiB, 64-byte aligned), or a oneDNN-allocated one-call memory when larger.
dnnl::memory call_buffer(CallSlot slot, const dnnl::memory::desc& md);

/// The weights `w` (laid out as `user_md`) in layout `want`: `w` itself when the layouts are
/// equal; else reordered with `r` — once per constant tensor when `constant_w` (the graph
/// initializer holding `w`, promised never to change) is given, cached across calls and
/// primitives (bounded at 256 MiB), otherwise into a fresh memory on every call.
dnnl::memory weights_in_layout(const dnnl::memory::desc& user_md, const dnnl::memory::desc& want,
                               const dnnl::reorder& r, const float* w, const Tensor* constant_w,
                               dnnl::stream& s);

}  // namespace tierjit::interp::nn::dnnl_glue
