// libFuzzer target: the .npy reader (tools/npy.cc, cli::parse_npy) on arbitrary bytes. A file
// that parses is serialized again and re-read: the round trip must give the same dtype, shape
// and bytes (bfloat16 never comes out of parse_npy, so nothing is widened).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz/targets.h"
#include "cli_util.h"

namespace tierjit::fuzz {

int npy_one(const uint8_t* data, size_t size) {
  using namespace tierjit;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Expected<Tensor> t = cli::parse_npy(bytes, "fuzz.npy");
  if (!t.ok()) return 0;
  Expected<std::string> again = cli::serialize_npy(t.value());
  if (!again.ok()) return 0;
  Expected<Tensor> back = cli::parse_npy(again.value(), "fuzz-roundtrip.npy");
  if (!back.ok() || back.value().dtype() != t.value().dtype() ||
      back.value().shape() != t.value().shape() || back.value().nbytes() != t.value().nbytes() ||
      (t.value().nbytes() > 0 &&
       std::memcmp(back.value().raw_data(), t.value().raw_data(), t.value().nbytes()) != 0))
    std::abort();  // the reader and the writer disagree
  return 0;
}

}  // namespace tierjit::fuzz
