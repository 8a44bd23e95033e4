// Lowering of elementwise regions (placeholder until its lowering lands: every region is unsupported).
#include "kir/lower/lower_internal.h"

namespace tierjit::kir::lowering {

Expected<LoweredRegion> lower_elementwise(const passes::Region& region, const LowerOptions&) {
  return unsupported("{}", "region '" + region.name + "': no elementwise lowering yet");
}

bool elementwise_supported(const passes::Region&) { return false; }

}  // namespace tierjit::kir::lowering
