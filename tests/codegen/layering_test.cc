// Layering: LLVM headers appear only in src/codegen, and not in the headers other folders include
// (codegen.h, cpu_features.h) — STYLE.md "Layout shows the pipeline".
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;

bool includes_llvm(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("#include", 0) == 0 &&
        (line.find("<llvm/") != std::string::npos || line.find("<llvm-c/") != std::string::npos)) {
      return true;
    }
  }
  return false;
}

TEST(CodegenLayering, LlvmHeadersStayInsideCodegen) {
  const fs::path root = TIERJIT_SOURCE_DIR;
  std::vector<std::string> offenders;
  for (const char* dir : {"src", "include", "tools", "python"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / dir)) {
      if (!entry.is_regular_file()) continue;
      std::string ext = entry.path().extension().string();
      if (ext != ".h" && ext != ".cc" && ext != ".cpp") continue;
      fs::path rel = fs::relative(entry.path(), root);
      bool in_codegen = rel.string().rfind("src/codegen/", 0) == 0;
      bool public_header = rel == "src/codegen/codegen.h" || rel == "src/codegen/cpu_features.h";
      if ((!in_codegen || public_header) && includes_llvm(entry.path())) {
        offenders.push_back(rel.string());
      }
    }
  }
  EXPECT_TRUE(offenders.empty()) << "LLVM included outside src/codegen: "
                                 << ::testing::PrintToString(offenders);
}

}  // namespace
