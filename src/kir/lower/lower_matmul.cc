// Lowering of matmul regions (placeholder until its lowering lands: every region is unsupported).
#include "kir/lower/lower_internal.h"

namespace tierjit::kir::lowering {

Expected<LoweredRegion> lower_matmul(const passes::Region& region, const LowerOptions&) {
  return unsupported("{}", "region '" + region.name + "': no matmul lowering yet");
}

bool matmul_supported(const passes::Region&) { return false; }

}  // namespace tierjit::kir::lowering
