// External data of TensorProtos (data_location EXTERNAL): the location is resolved relative to
// the model's folder and confined, after resolving symbolic links, to that folder or to the
// folder of the model file's real path (ONNX Runtime's rule); the declared size is checked
// against the file before any byte is read. Used by tensor_proto.cc.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "onnx/import_internal.h"

namespace tierjit::onnx_import {

namespace fs = std::filesystem;

namespace {

Expected<int64_t> parse_int(const std::string& s, const std::string& key, const std::string& what) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < 0)
    return invalid_model("{}: external data '{}' is not a valid byte count: '{}'", what, key, s);
  return v;
}

// True when the canonical path `p` is `dir` or lies below it (both canonical).
bool inside(const fs::path& p, const fs::path& dir) {
  auto [d, q] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
  return d == dir.end();
}

}  // namespace

ExternalData& ExternalData::operator=(ExternalData&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    offset_ = o.offset_;
    nbytes_ = o.nbytes_;
  }
  return *this;
}

ExternalData::~ExternalData() {
  if (fd_ >= 0) ::close(fd_);
}

Status ExternalData::read_into(void* dst, const std::string& what) const {
  auto* out = static_cast<char*>(dst);
  int64_t done = 0;
  while (done < nbytes_) {
    const size_t chunk = static_cast<size_t>(std::min<int64_t>(nbytes_ - done, int64_t{1} << 30));
    const ssize_t n = ::pread(fd_, out + done, chunk, static_cast<off_t>(offset_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      return invalid_model("{}: short read from external data file '{}'", what, path_);
    done += n;
  }
  return Status();
}

Expected<ExternalData> open_external_data(const onnx::TensorProto& p, const ExternalDataRoots& roots,
                                          int64_t nbytes, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      TJ_ASSIGN_OR_RETURN(offset, parse_int(kv.value(), "offset", what));
    } else if (kv.key() == "length") {
      TJ_ASSIGN_OR_RETURN(length, parse_int(kv.value(), "length", what));
    }
  }
  if (location.empty()) return invalid_model("{}: external data without a location", what);
  if (location.find('\0') != std::string::npos)
    return invalid_model("{}: external data path contains a NUL byte", what);
  const fs::path rel(location);
  if (rel.is_absolute() || location.find('\\') != std::string::npos)
    return invalid_model("{}: external data path '{}' must be relative to the model's folder", what,
                         location);
  const fs::path norm = rel.lexically_normal();
  if (norm.empty() || *norm.begin() == ".." || norm == ".")
    return invalid_model("{}: external data path '{}' leaves the model's folder", what, location);
  if (roots.base_dir.empty())
    return invalid_model("{}: external data file '{}' needs a folder, and a model given as bytes has "
                         "none (name one: external_data_folder, or ONNX Runtime's config "
                         "session.model_external_initializers_file_folder_path)", what, location);
  if (length >= 0 && length != nbytes)
    return invalid_model("{}: external data length {} does not match the tensor's {} bytes", what,
                         length, nbytes);

  const fs::path full = fs::path(roots.base_dir) / norm;
  std::error_code ec;
  const fs::path real = fs::canonical(full, ec);
  if (ec) return not_found("{}: external data file '{}' not found", what, full.string());
  const fs::path base_real = fs::canonical(roots.base_dir, ec);
  bool allowed = !ec && inside(real, base_real);
  fs::path model_real_dir;
  if (!allowed && !roots.model_file.empty()) {
    model_real_dir = fs::canonical(roots.model_file, ec).parent_path();
    allowed = !ec && inside(real, model_real_dir);
  }
  if (!allowed) {
    std::string folders = fmt::format("'{}'", base_real.empty() ? roots.base_dir : base_real.string());
    if (!model_real_dir.empty() && model_real_dir != base_real)
      folders += fmt::format(" and the model file's real folder '{}'", model_real_dir.string());
    return invalid_model("{}: external data path '{}' resolves to '{}', outside the model's folder {}",
                         what, location, real.string(), folders);
  }

  // The resolved path has no symbolic link left: O_NOFOLLOW refuses one swapped in since.
  const int fd = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return io_error("{}: cannot open external data file '{}' ({})", what, real.string(),
                    std::strerror(errno));
  ExternalData file(fd, real.string(), offset, nbytes);
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    return invalid_model("{}: external data file '{}' is not a regular file", what, real.string());
  const int64_t size = st.st_size;
  if (offset > size || nbytes > size - offset)
    return invalid_model("{}: external data file '{}' is too short: needs {} bytes at offset {}, "
                         "file has {}", what, real.string(), nbytes, offset, size);
  return file;
}

}  // namespace tierjit::onnx_import
