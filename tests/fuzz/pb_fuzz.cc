// libFuzzer target: the .pb tensor reader (a serialized onnx.TensorProto; tools/pb_io.cc,
// cli::read_pb_file, which the CLI's --input FILE.pb uses) on arbitrary bytes. The reader takes a
// path (external data resolves against its folder), so each input is written to a file in a
// folder of its own first. A tensor that reads is written back and re-read: dtype and shape must
// survive the round trip.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz/targets.h"
#include "cli_util.h"

namespace {

const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path p = std::filesystem::temp_directory_path() /
                              ("tierjit_fuzz_pb_" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return dir;
}

}  // namespace

namespace tierjit::fuzz {

int pb_one(const uint8_t* data, size_t size) {
  using namespace tierjit;
  const std::string path = (work_dir() / "input.pb").string();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  Expected<Tensor> t = cli::read_pb_file(path);
  if (!t.ok()) return 0;
  const std::string again = (work_dir() / "again.pb").string();
  if (!cli::write_pb_file(again, t.value(), "t").ok()) return 0;
  Expected<Tensor> back = cli::read_pb_file(again);
  if (!back.ok() || back.value().dtype() != t.value().dtype() || back.value().shape() != t.value().shape())
    std::abort();  // the reader and the writer disagree
  return 0;
}

}  // namespace tierjit::fuzz
