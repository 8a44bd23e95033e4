// write_file_no_follow: open(O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW), then write in a loop.
#include "support/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

}  // namespace tierjit
