// Host CPU detection for codegen (cpu_features.h): LLVM's host feature map, sorted into a stable
// feature string; the vector width from AVX-512F / AVX2.
#include "codegen/cpu_features.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <vector>

#include "support/isa.h"

namespace tierjit::codegen {

namespace {

CpuInfo detect() {
  CpuInfo info;
  info.triple = llvm::sys::getProcessTriple();
  info.host_cpu = llvm::sys::getHostCPUName().str();
  llvm::StringMap<bool> map;
  llvm::sys::getHostCPUFeatures(map);
  if (!support::avx512_allowed())  // TIERJIT_ISA=avx2: code for a CPU without AVX-512
    for (auto& kv : map)
      if (kv.first().startswith("avx512") || kv.first().startswith("amx")) kv.second = false;
  std::vector<std::string> feats;
  for (const auto& kv : map) feats.push_back((kv.second ? "+" : "-") + kv.first().str());
  std::sort(feats.begin(), feats.end(),
            [](const std::string& a, const std::string& b) { return a.substr(1) < b.substr(1); });
  for (const std::string& f : feats) {
    if (!info.features.empty()) info.features += ',';
    info.features += f;
  }
  auto has = [&](const char* name) { return map.lookup(name); };
  info.has_avx2 = has("avx2");
  info.has_avx512f = has("avx512f");
  info.has_fma = has("fma");
  info.vector_bits = info.has_avx512f ? 512 : info.has_avx2 ? 256 : 128;
  info.cpu = info.host_cpu;
  if (!support::avx512_allowed() && info.triple.rfind("x86_64", 0) == 0) info.cpu = "generic";
  if ((info.cpu == "generic" || info.cpu.empty()) && info.triple.rfind("x86_64", 0) == 0) {
    bool v4 = info.has_avx512f && has("avx512bw") && has("avx512dq") && has("avx512vl");
    info.cpu = v4 ? "x86-64-v4" : info.has_avx2 && info.has_fma ? "x86-64-v3" : "x86-64-v2";
  }
  return info;
}

}  // namespace

const CpuInfo& host_cpu() {
  static const CpuInfo info = detect();
  return info;
}

}  // namespace tierjit::codegen
