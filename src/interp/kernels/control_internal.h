// Internal declarations shared by the control-flow kernel files (control.cc registers them):
// If lives in control.cc, Loop in control_loop.cc, Scan in control_scan.cc. Also the slicing and
// stacking helpers Loop and Scan use to cut scan inputs and assemble scan outputs.
#pragma once

#include <vector>

#include "interp/kernel.h"

namespace tierjit::interp {

/// ONNX Loop (opsets 1-16; sequence-typed carried values are not supported). See control_loop.cc.
Status loop_kernel(KernelContext& ctx);
/// ONNX Scan (opset 8 batched form and opset 9+ axes/directions form). See control_scan.cc.
Status scan_kernel(KernelContext& ctx);

/// Copies `n` elements of t.dtype() from src[src_off..] to dst[dst_off..] (element offsets);
/// strings are copied as objects, everything else byte-wise.
void copy_elements(const Tensor& src, int64_t src_off, Tensor& dst, int64_t dst_off, int64_t n);

/// The slice of `t` at `index` along `axis`, with that axis removed (a fresh tensor, or a view
/// when axis == 0). Requires 0 <= axis < rank and 0 <= index < dim(axis).
Tensor slice_along(const Tensor& t, int64_t axis, int64_t index);

/// Stacks `parts` (all of shape S and one dtype) along a new axis `axis` of the result
/// (0 <= axis <= rank(S)); `reverse` puts parts[0] last. The caller checks shapes and size.
Tensor stack_along(const std::vector<Tensor>& parts, int64_t axis, bool reverse);

}  // namespace tierjit::interp
