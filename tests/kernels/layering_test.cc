// Layering: the kernel layer knows no graph (DESIGN.md "Where speed comes from", STYLE.md
// "Layout shows the pipeline"): files in src/kernels include only src/kernels, src/support, the
// public tensor types (include/tierjit) and system or third-party headers (<...>).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

TEST(KernelsLayering, IncludesOnlySupportAndPublicTypes) {
  const fs::path root = fs::path(TIERJIT_SOURCE_DIR) / "src" / "kernels";
  std::vector<std::string> offenders;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("#include \"", 0) != 0) continue;
      const std::string path = line.substr(10);
      if (path.rfind("kernels/", 0) == 0 || path.rfind("support/", 0) == 0 ||
          path.rfind("tierjit/", 0) == 0)
        continue;
      offenders.push_back(entry.path().filename().string() + ": " + line);
    }
  }
  EXPECT_TRUE(offenders.empty()) << ::testing::PrintToString(offenders);
}

}  // namespace
