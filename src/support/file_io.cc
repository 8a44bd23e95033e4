// write_file_no_follow: open(O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW), then write in a loop.
// read_regular_file: open(O_RDONLY | O_NONBLOCK), fstat, then read in a loop.
#include "support/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tierjit {

Status check_not_symlink(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
    return invalid_argument("{}: is a symbolic link (tierjit does not write through one; remove it "
                            "or name another path)", path);
  return Status();
}

Status write_file_no_follow(const std::string& path, std::string_view bytes) {
  if (path.empty()) return invalid_argument("cannot write a file with an empty path");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    // O_NOFOLLOW fails with ELOOP on a link (EMLINK on some BSDs): name the cause.
    if (err == ELOOP || err == EMLINK) TJ_RETURN_IF_ERROR(check_not_symlink(path));
    if (err == EISDIR) return invalid_argument("{}: is a directory", path);
    return io_error("{}: cannot open for writing ({})", path, std::strerror(err));
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      return io_error("{}: write failed ({})", path, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return io_error("{}: write failed ({})", path, std::strerror(errno));
  return Status();
}

namespace {

// Opens `path` for reading without blocking (a FIFO with no writer) and checks that it is a
// regular file; returns the descriptor and its size.
Expected<std::pair<int, int64_t>> open_regular(const std::string& path) {
  if (path.empty()) return invalid_argument("cannot read a file with an empty path");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return not_found("{}: no such file", path);
    return io_error("{}: cannot open for reading ({})", path, std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error("{}: cannot read the file's status ({})", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* kind = S_ISDIR(st.st_mode)    ? "is a directory, not a file"
                       : S_ISFIFO(st.st_mode) ? "is not a regular file (a FIFO)"
                       : S_ISCHR(st.st_mode)  ? "is not a regular file (a character device)"
                       : S_ISBLK(st.st_mode)  ? "is not a regular file (a block device)"
                       : S_ISSOCK(st.st_mode) ? "is not a regular file (a socket)"
                                              : "is not a regular file";
    return invalid_argument("{}: {}", path, kind);
  }
  return std::pair<int, int64_t>{fd, static_cast<int64_t>(st.st_size)};
}

}  // namespace

Expected<int64_t> regular_file_size(const std::string& path) {
  TJ_ASSIGN_OR_RETURN(auto opened, open_regular(path));
  ::close(opened.first);
  return opened.second;
}

Status read_regular_file(const std::string& path, int64_t max_bytes, std::string_view limit_name,
                         std::string* out) {
  TJ_ASSIGN_OR_RETURN(auto opened, open_regular(path));
  const auto [fd, size] = opened;
  if (size > max_bytes) {
    ::close(fd);
    return invalid_argument("{}: the file has {} bytes, over the {} of {} bytes", path, size,
                            limit_name, max_bytes);
  }
  out->resize(static_cast<size_t>(size));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(fd);
      if (n == 0) return io_error("{}: the file shrank while read ({} of {} bytes)", path, done, size);
      return io_error("{}: read failed ({})", path, std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  char extra;
  const ssize_t more = ::read(fd, &extra, 1);
  ::close(fd);
  if (more > 0) return io_error("{}: the file grew while read (over {} bytes)", path, size);
  return Status();
}

}  // namespace tierjit
