// The process-wide spdlog logger, configured once from $TIERJIT_LOG.
#include "support/log.h"

#include <cstdlib>
#include <string>

#include <spdlog/sinks/stdout_sinks.h>

namespace tierjit::support {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto l = std::make_shared<spdlog::logger>("tierjit", sink);
    l->set_pattern("tierjit %l: %v");
    l->set_level(spdlog::level::warn);
    if (const char* env = std::getenv("TIERJIT_LOG")) {
      l->set_level(spdlog::level::from_str(env));
    }
    return l;
  }();
  return *instance;
}

}  // namespace tierjit::support
