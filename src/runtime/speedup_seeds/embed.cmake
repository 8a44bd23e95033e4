# Build-time script: embeds the measured speedup seeds (avx512.json, avx2.json in IN_DIR,
# written by scripts/measure_speedup_seeds.py) into OUTPUT as string constants (empty when a
# file is missing). The runtime parses them (tier_policy.cc); the files are the source of truth.
set(content "// Generated at build time by src/runtime/speedup_seeds/embed.cmake: do not edit.\n#pragma once\nnamespace tierjit::runtime {\n")
foreach(isa avx512 avx2)
  set(json "")
  if(EXISTS "${IN_DIR}/${isa}.json")
    file(READ "${IN_DIR}/${isa}.json" json)
  endif()
  string(APPEND content "inline constexpr const char* kSpeedupSeeds_${isa} = R\"tjseeds(${json})tjseeds\";\n")
endforeach()
string(APPEND content "}  // namespace tierjit::runtime\n")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE "${OUTPUT}" "${content}")
endif()
