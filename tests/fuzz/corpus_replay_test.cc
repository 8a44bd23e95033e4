// Replays every committed fuzz input through its target's body (targets.h) in the normal build:
// the seeds (corpus/<target>/) and the inputs that once crashed (regressions/<target>/, each with
// a value-checking test of its fix elsewhere in tests/, named in regressions/README.md). An input
// passes when the target returns without a crash, an abort or a sanitizer report.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/targets.h"

namespace tierjit::fuzz {
namespace {

namespace fs = std::filesystem;
using Body = int (*)(const uint8_t*, size_t);

// Files of tests/fuzz/<kind>/<target>/ (kind: corpus or regressions), sorted.
std::vector<fs::path> inputs(const std::string& kind, const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = fs::path(TIERJIT_SOURCE_DIR) / "tests" / "fuzz" / kind / target;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

void replay(const std::string& target, Body body, size_t min_seeds) {
  const std::vector<fs::path> seeds = inputs("corpus", target);
  EXPECT_GE(seeds.size(), min_seeds) << "tests/fuzz/corpus/" << target << " lost its seeds";
  std::vector<fs::path> all = seeds;
  for (const fs::path& p : inputs("regressions", target)) all.push_back(p);
  for (const fs::path& p : all) {
    SCOPED_TRACE(p.string());
    std::ifstream in(p, std::ios::binary);
    ASSERT_TRUE(in) << "cannot read " << p;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(body(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

TEST(FuzzCorpusReplay, Loader) { replay("loader", loader_one, 50); }
TEST(FuzzCorpusReplay, Npy) { replay("npy", npy_one, 10); }
TEST(FuzzCorpusReplay, Pb) { replay("pb", pb_one, 10); }
TEST(FuzzCorpusReplay, Trace) { replay("trace", trace_one, 3); }
TEST(FuzzCorpusReplay, Shapes) { replay("shapes", shapes_one, 3); }

}  // namespace
}  // namespace tierjit::fuzz
