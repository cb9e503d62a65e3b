// WriteSpecFile (see spec_file.h).
#include "spec_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "spec.h"

namespace gshare::cdi {
namespace {

using shm::Status;
using shm::StatusCode;

Status OsError(const std::string& what, int err) {
  Status s = Status::FromErrno(what, err);
  if (err == EACCES || err == EPERM || err == EROFS)
    return Status(StatusCode::kPermissionDenied,
                  s.message() + " (the spec directory must be writable: run as root or choose --output)", err);
  return s;
}

// kRefused when `path` exists and gshare-cdi did not write it.
Status CheckOverwrite(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Ok();  // nothing there (or unreadable: the rename will say)
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json existing = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (!existing.is_discarded() && WrittenByGshareCdi(existing)) return Status::Ok();
  return Status(StatusCode::kRefused, path + " exists and was not written by gshare-cdi (" +
                                          (existing.is_discarded() ? "not JSON" : "no " + std::string(kMarkerVariable)) +
                                          "): kept; --force replaces it");
}

}  // namespace

Status WriteSpecFile(const std::string& path, const nlohmann::json& spec, bool force) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return OsError("create " + dir.string(), errno);
  }
  if (!force) {
    if (Status s = CheckOverwrite(path); !s.ok()) return s;
  }
  std::string tmp = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return OsError("write in " + dir.string(), errno);
  const std::string text = spec.dump(2) + "\n";
  size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fchmod(fd, 0644) != 0) err = errno;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    return OsError("write " + path, err);
  }
  return Status::Ok();
}

}  // namespace gshare::cdi
