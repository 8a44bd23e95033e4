// Logging for tierjit: warnings to stderr by default; TIERJIT_LOG=error|warn|info|debug|trace
// selects more or less. Thin wrapper over spdlog so the rest of the code names one place.
#pragma once

#include <spdlog/spdlog.h>

namespace tierjit::support {
/// The process-wide logger (stderr, level from $TIERJIT_LOG, default warn). Thread-safe.
spdlog::logger& logger();
}  // namespace tierjit::support

#define TJ_LOG_DEBUG(...) ::tierjit::support::logger().debug(__VA_ARGS__)
#define TJ_LOG_INFO(...) ::tierjit::support::logger().info(__VA_ARGS__)
#define TJ_LOG_WARN(...) ::tierjit::support::logger().warn(__VA_ARGS__)
#define TJ_LOG_ERROR(...) ::tierjit::support::logger().error(__VA_ARGS__)
