// Entry points of the per-kind lowerings that lower.cc dispatches to (one file per region kind).
#pragma once

#include "kir/lower/lower.h"

namespace tierjit::kir::lowering {

Expected<LoweredRegion> lower_elementwise(const passes::Region& region, const LowerOptions& options);
Expected<LoweredRegion> lower_reduction(const passes::Region& region, const LowerOptions& options);
Expected<LoweredRegion> lower_matmul(const passes::Region& region, const LowerOptions& options);
Expected<LoweredRegion> lower_recurrent(const passes::Region& region, const LowerOptions& options);

bool elementwise_supported(const passes::Region& region);
bool reduction_supported(const passes::Region& region);
bool matmul_supported(const passes::Region& region);
bool recurrent_supported(const passes::Region& region);

}  // namespace tierjit::kir::lowering
