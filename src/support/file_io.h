// Files in and out, safely. Every file tierjit writes (the CLI's outputs, reports, .pb tensors)
// goes through write_file_no_follow, which never follows a symbolic link at the final path
// component (a link planted there could redirect the write to any file the user may write).
// Input files the CLI reads whole (feeds, traces, lists) go through read_regular_file, which
// refuses anything but a regular file (a FIFO would block, a device never ends) and a size over
// the caller's limit before reading a byte. Part of support/, below every other layer; POSIX
// only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "support/status.h"

namespace tierjit {

/// Creates or truncates `path` and writes `bytes` (a FIFO is written like a file). The final
/// component is opened with O_NOFOLLOW: a symbolic link there (dangling or not) is refused,
/// links in the folders above are followed. Errors (one line, "PATH: ..."): kInvalidArgument
/// for a symbolic link or a directory at `path`; kIoError when the file cannot be opened or
/// written (with the system's reason).
Status write_file_no_follow(const std::string& path, std::string_view bytes);

/// The check write_file_no_follow makes before writing, for callers that refuse a bad output
/// path before long work: kInvalidArgument "PATH: is a symbolic link (tierjit does not write
/// through one)" when the final component is a symbolic link, else OK.
Status check_not_symlink(const std::string& path);

/// The size in bytes of the regular file at `path` (symbolic links followed). Errors (one line,
/// "PATH: ..."): kNotFound when nothing is there; kInvalidArgument when it is not a regular file
/// ("is a directory", "is not a regular file (a FIFO)", a device, a socket); kIoError when it
/// cannot be opened. The file is opened with O_NONBLOCK and checked on the open descriptor, so a
/// FIFO never blocks the call.
Expected<int64_t> regular_file_size(const std::string& path);

/// Reads the whole regular file at `path` into `out`, refusing first (nothing read) what
/// regular_file_size refuses and a file of more than `max_bytes` bytes: kInvalidArgument "PATH:
/// the file has N bytes, over the LIMIT_NAME of MAX bytes". kIoError when a read fails or the
/// file changes size while read.
Status read_regular_file(const std::string& path, int64_t max_bytes, std::string_view limit_name,
                         std::string* out);

}  // namespace tierjit
