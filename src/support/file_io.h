// Writing output files safely: every file tierjit writes (the CLI's outputs, reports, .pb
// tensors) goes through write_file_no_follow, which never follows a symbolic link at the final
// path component (a link planted there could redirect the write to any file the user may write).
// Part of support/, below every other layer; POSIX only.
#pragma once

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

}  // namespace tierjit
