// Lowering of reduction regions (placeholder until its lowering lands: every region is unsupported).
#include "kir/lower/lower_internal.h"

namespace tierjit::kir::lowering {

Expected<LoweredRegion> lower_reduction(const passes::Region& region, const LowerOptions&) {
  return unsupported("{}", "region '" + region.name + "': no reduction lowering yet");
}

bool reduction_supported(const passes::Region&) { return false; }

}  // namespace tierjit::kir::lowering
