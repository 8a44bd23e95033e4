// The models test: runs one model on the reference inputs of its ref folder and checks every
// output against the reference within |diff| <= 1e-4 + 1e-3 * |ref| (the tolerance ONNX Runtime
// meets on the shared zoo, see ../shared/models/MODELS.md).
// Usage: tierjit_models_test MODEL.onnx REF_DIR [TIER]   (REF_DIR holds meta.json and .npy files;
// TIER 0 = interpret-only, 1-3 = every region with a lowering pinned at that tier; default adaptive)
// Exit 0 on a match, 1 on a mismatch or any error (printed as one line).
#include <chrono>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace {

using namespace tierjit;

int check_model(const std::string& model, const std::string& ref_dir, int tier) {
  namespace fs = std::filesystem;
  std::string meta_bytes;
  cli::read_file_bytes((fs::path(ref_dir) / "meta.json").string(), meta_bytes,
                       cli::kMaxTextFileBytes, "limit for text files")
      .throw_if_error();
  nlohmann::json meta = nlohmann::json::parse(meta_bytes);

  auto t0 = std::chrono::steady_clock::now();
  SessionOptions so;
  cli::apply_tier(tier, so);
  Session session(model, so);
  auto t1 = std::chrono::steady_clock::now();
  NamedTensors feeds;
  for (const auto& [name, desc] : meta.at("inputs").items()) {
    std::string file = (fs::path(ref_dir) / desc.at("file").get<std::string>()).string();
    auto t = cli::read_npy(file);
    if (!t.ok()) t.status().throw_if_error();
    feeds.emplace_back(name, *t);
    fmt::print("input  {}: {} {}\n", name, dtype_name(t->dtype()), shape_to_string(t->shape()));
  }
  NamedTensors outputs = session.run(feeds);
  auto t2 = std::chrono::steady_clock::now();

  const cli::Tolerance tol{1e-3, 1e-4};
  int bad = 0;
  const auto& refs = meta.at("outputs");
  if (refs.size() != outputs.size()) {
    fmt::print("FAIL {}: model gave {} outputs, reference has {}\n", model, outputs.size(), refs.size());
    return 1;
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    std::string name = refs[i].at("name").get<std::string>();
    auto ref = cli::read_npy((fs::path(ref_dir) / refs[i].at("file").get<std::string>()).string());
    if (!ref.ok()) ref.status().throw_if_error();
    const Tensor* got = nullptr;
    for (const auto& [n, t] : outputs)
      if (n == name) got = &t;
    if (!got) got = &outputs[i].second;  // exporters may rename outputs; fall back to position
    auto diff = cli::compare_tensors(*got, *ref, tol);
    double max_abs = 0;
    if (got->shape() == ref->shape() && got->dtype() == ref->dtype())
      for (int64_t k = 0; k < got->numel(); ++k)
        max_abs = std::max(max_abs, std::fabs(got->value_as_double(k) - ref->value_as_double(k)));
    if (diff) {
      ++bad;
      fmt::print("FAIL output {} '{}': {}\n", i, name, *diff);
    } else {
      fmt::print("ok   output {} '{}': {} {}, max abs diff {:.3g}\n", i, name, dtype_name(got->dtype()),
                 shape_to_string(got->shape()), max_abs);
    }
  }
  fmt::print("{}: load {:.1f} ms, run {:.1f} ms: {}\n", model,
             std::chrono::duration<double, std::milli>(t1 - t0).count(),
             std::chrono::duration<double, std::milli>(t2 - t1).count(), bad ? "FAILED" : "passed");
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    fmt::print(stderr, "usage: {} MODEL.onnx REF_DIR [TIER]\n", argv[0]);
    return 2;
  }
  try {
    return check_model(argv[1], argv[2], argc == 4 ? std::stoi(argv[3]) : -1);
  } catch (const std::exception& e) {
    fmt::print("FAIL {}: {}\n", argv[1], cli::one_line(e.what()));
    return 1;
  }
}
