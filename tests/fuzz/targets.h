// The fuzz targets' bodies (docs/testing.md, "Fuzzing"): each takes one input and returns 0, and
// aborts (or a sanitizer stops it) only on a bug. tierjit_fuzz_<name> (libFuzzer, main/fuzz_main.cc)
// and the replay test of the normal suite (corpus_replay_test.cc) call the same functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tierjit::fuzz {

/// Model bytes -> load -> tier-0 passes -> partition -> tier-0 plan for the input shapes -> run.
int loader_one(const uint8_t* data, size_t size);
/// .npy bytes -> parse_npy (-> serialize_npy -> parse_npy round trip).
int npy_one(const uint8_t* data, size_t size);
/// .pb bytes (a file) -> read_pb_file (-> write_pb_file -> read_pb_file round trip).
int pb_one(const uint8_t* data, size_t size);
/// Trace text -> parse_trace_text -> format_request / parse_trace_line / check_request.
int trace_one(const uint8_t* data, size_t size);
/// Lines -> trace_from_specs and the option parsers of the command line.
int shapes_one(const uint8_t* data, size_t size);

}  // namespace tierjit::fuzz
