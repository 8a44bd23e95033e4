// Lowering of Conv-anchored matmul-epilogue regions (placeholder: every region is unsupported and
// stays on tier 0's oneDNN convolution).
#include "kir/lower/lower_internal.h"

namespace tierjit::kir::lowering {

Expected<LoweredRegion> lower_conv(const passes::Region& region, const LowerOptions&) {
  return unsupported("region '{}': no Conv lowering yet", region.name);
}

bool conv_supported(const passes::Region&) { return false; }

}  // namespace tierjit::kir::lowering
