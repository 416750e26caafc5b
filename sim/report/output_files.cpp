#include "sim/report/output_files.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sim/scenario/input_error.hpp"

namespace podsim {

namespace fs = std::filesystem;

std::string system_reason() { return std::strerror(errno); }

namespace {

const SourceLocation kCommandLine{"command line", 0, 0};

std::string option_name(const std::string& option) { return option.empty() ? "output" : option; }

// What a destination is. Decided when a file is added and again at commit: a FIFO made while a
// long serving run went on is still written through, not replaced.
struct Destination {
  enum Kind { Missing, Regular, WriteThrough, Refused } kind = Missing;
  fs::path path;      // a link's target for Regular; the name itself otherwise
  std::string what;   // for Refused: "a directory", "a block device", ...
};

Destination destination_of(const std::string& name) {
  std::error_code ec;
  const fs::file_status link = fs::symlink_status(name, ec);
  if (ec || link.type() == fs::file_type::not_found) return {Destination::Missing, name, ""};
  fs::path path = name;
  fs::file_status status = link;
  if (fs::is_symlink(link)) {
    status = fs::status(name, ec);
    if (ec || status.type() == fs::file_type::not_found) return {Destination::Missing, name, ""};   // dangling: replaced
    const fs::path target = fs::canonical(name, ec);
    if (!ec) path = target;
  }
  switch (status.type()) {
    case fs::file_type::regular: return {Destination::Regular, path, ""};
    case fs::file_type::character:
    case fs::file_type::fifo: return {Destination::WriteThrough, name, ""};
    case fs::file_type::directory: return {Destination::Refused, name, "a directory"};
    case fs::file_type::block: return {Destination::Refused, name, "a block device"};
    case fs::file_type::socket: return {Destination::Refused, name, "a socket"};
    default: return {Destination::Refused, name, "not a regular file"};
  }
}

[[noreturn]] void refuse(const std::string& option, const Destination& d) {
  throw InputError(kCommandLine, option_name(option), d.path.string(),
                   "is " + d.what + "; expected a regular file's path (a new or existing file), a character device such "
                   "as /dev/null, or a FIFO");
}

// Writes all of `data` to an open descriptor, through EINTR and short writes.
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Copies the temporary's bytes into a device or FIFO, as `cat tmp > name` would: no rename, no
// truncation, no file created.
void write_through(const std::string& temporary, const std::string& name, bool truncate) {
  const int in = ::open(temporary.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) throw std::runtime_error("cannot read '" + temporary + "': " + system_reason());
  const int out = ::open(name.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | (truncate ? O_TRUNC : 0));
  if (out < 0) {
    const std::string reason = system_reason();
    ::close(in);
    throw std::runtime_error("cannot write '" + name + "': " + reason);
  }
  std::vector<char> buffer(1 << 16);
  for (;;) {
    const ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (n > 0 && !write_all(out, buffer.data(), static_cast<size_t>(n)))) {
      const std::string reason = system_reason();
      ::close(in);
      ::close(out);
      throw std::runtime_error("cannot write '" + name + "': " + reason);
    }
    if (n == 0) break;
  }
  ::close(in);
  if (::close(out) != 0) throw std::runtime_error("cannot write '" + name + "': " + system_reason());
}

// Temporaries of `name` that an interrupted run left (".NAME.tmpPID" of a process that is gone):
// a run killed between writing and renaming cannot remove its own. A live writer's are kept.
void remove_stale_temporaries(const fs::path& directory, const std::string& name) {
  const std::string prefix = "." + name + ".tmp";
  std::error_code ec;
  for (fs::directory_iterator it(directory, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (file.size() <= prefix.size() || file.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = file.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

// A temporary outside the destination's folder, for a device or FIFO: /dev is no place for one.
std::string system_temporary() {
  std::string pattern = (fs::temp_directory_path() / "podsim-output-XXXXXX").string();
  const int fd = ::mkstemp(pattern.data());
  if (fd < 0) throw std::runtime_error("cannot create a temporary file in " + fs::temp_directory_path().string() + ": " +
                                       system_reason());
  ::close(fd);
  return pattern;
}

// The nearest of `path` and its ancestors that exists, when it is not a directory: where a path
// meant to lie in directories runs into a file. Empty when the nearest existing one is a directory.
fs::path first_non_directory(const fs::path& path) {
  std::error_code ec;
  for (fs::path up = path; !up.empty(); up = up.parent_path()) {
    const fs::file_status status = fs::status(up, ec);
    if (status.type() == fs::file_type::directory) return {};
    if (!ec && status.type() != fs::file_type::not_found) return up;
    if (up == up.parent_path()) break;
  }
  return {};
}

}  // namespace

void ensure_directory(const std::string& directory, const std::string& option) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (!ec && fs::is_directory(directory)) return;
  std::error_code status_ec;
  const fs::file_status status = fs::status(directory, status_ec);
  if (!status_ec && status.type() != fs::file_type::directory && status.type() != fs::file_type::not_found) {
    throw InputError(kCommandLine, option.empty() ? "output directory" : option, directory,
                     "is a file, not a directory; expected a directory for the outputs (made if missing)");
  }
  throw std::runtime_error("cannot create output directory '" + directory + "': " +
                           (ec ? ec.message() : std::string("not a directory")));
}

void require_file_destination(const std::string& path, const std::string& option) {
  const fs::path file(path);
  if (file.filename().empty() || file.filename() == "." || file.filename() == "..")
    throw InputError(kCommandLine, option_name(option), path, "names a directory; expected a file's path, e.g. out/profile.yaml");
  const Destination d = destination_of(path);
  if (d.kind == Destination::Refused) refuse(option, d);
  // A folder on the way that is a file: the write would fail only after the work.
  const fs::path blocker = first_non_directory(file.parent_path());
  if (!blocker.empty())
    throw InputError(kCommandLine, option_name(option), path,
                     "lies under '" + blocker.string() + "', which is a file, not a directory; expected a file's path "
                     "in a directory (made if missing)");
}

void require_output_directory(const std::string& directory, const std::string& option) {
  if (directory.empty())
    throw InputError(kCommandLine, option_name(option), "", "an empty path; expected a directory for the outputs");
  const fs::path blocker = first_non_directory(directory);
  if (blocker.empty()) return;
  throw InputError(kCommandLine, option_name(option), directory,
                   (blocker == fs::path(directory) ? std::string("an existing file")
                                                   : "under '" + blocker.string() + "', an existing file") +
                       ", not a directory; expected a directory for the outputs");
}

OutputFiles::OutputFiles(std::string directory, std::string option)
    : directory_(std::move(directory)), option_(std::move(option)) {}

OutputFiles::~OutputFiles() {
  streams_.clear();   // closed before their files are removed
  for (const auto& p : pending_) std::remove(p.temporary.c_str());
}

std::string OutputFiles::path(const std::string& name) const { return (fs::path(directory_) / name).string(); }

void OutputFiles::owns(std::vector<std::string> family) { family_ = std::move(family); }

OutputFiles::Pending OutputFiles::prepare(const std::string& name) {
  if (name.empty() || name == "." || name == "..")
    throw InputError(kCommandLine, option_name(option_), path(name),
                     "names a directory; expected a file's path, e.g. out/profile.yaml");
  const Destination d = destination_of(path(name));
  if (d.kind == Destination::Refused) refuse(option_, d);
  Pending p;
  p.final_path = path(name);
  if (d.kind == Destination::WriteThrough) {
    p.temporary = system_temporary();
    p.write_through = true;
  } else {
    // Beside the file that is replaced (a link's target), so that the rename stays on one file system.
    const fs::path dir = d.path.has_parent_path() ? d.path.parent_path() : fs::path(".");
    const std::string base = d.path.filename().string();
    remove_stale_temporaries(dir, base);
    p.temporary = (dir / ("." + base + ".tmp" + std::to_string(::getpid()))).string();
  }
  return p;
}

std::ostream& OutputFiles::stream(const std::string& name) {
  Pending p = prepare(name);
  auto out = std::make_unique<std::ofstream>(p.temporary, std::ios::binary | std::ios::trunc);
  if (!*out) throw std::runtime_error("cannot write '" + p.temporary + "': " + system_reason());
  const std::string tmp = p.temporary;
  pending_.push_back(std::move(p));
  streams_.emplace_back(tmp, std::move(out));
  return *streams_.back().second;
}

void OutputFiles::add(const std::string& name, const std::string& contents) {
  Pending p = prepare(name);
  const int fd = ::open(p.temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot write '" + p.temporary + "': " + system_reason());
  pending_.push_back(p);
  const bool written = write_all(fd, contents.data(), contents.size());
  const std::string reason = written ? std::string() : system_reason();
  if (::close(fd) != 0 && written) throw std::runtime_error("cannot write '" + p.temporary + "': " + system_reason());
  if (!written) throw std::runtime_error("cannot write '" + p.temporary + "': " + reason);
}

void OutputFiles::commit() {
  for (auto& [tmp, out] : streams_) {
    out->flush();
    if (!*out) throw std::runtime_error("cannot write '" + tmp + "': " + system_reason());
    out->close();
  }
  streams_.clear();
  std::vector<std::string> written;
  for (const auto& p : pending_) {
    const Destination now = destination_of(p.final_path);   // it may have changed since the file was added
    if (now.kind == Destination::Refused) refuse(option_, now);
    if (p.write_through || now.kind == Destination::WriteThrough) {
      // (A regular file made in the meantime is truncated, as a replaced one would be.)
      write_through(p.temporary, p.final_path, now.kind == Destination::Regular);
      std::remove(p.temporary.c_str());
    } else {
      std::error_code ec;
      fs::rename(p.temporary, now.path, ec);
      if (ec) throw std::runtime_error("cannot move '" + p.temporary + "' to '" + now.path.string() + "': " + ec.message());
    }
    written.push_back(p.final_path);
  }
  pending_.clear();
  for (const auto& name : family_) {
    const std::string other = path(name);
    if (std::find(written.begin(), written.end(), other) != written.end()) continue;
    std::error_code ec;
    if (fs::symlink_status(other, ec).type() == fs::file_type::regular) fs::remove(other, ec);
  }
}

std::string array_task_dir(int task) {
  char name[16];
  std::snprintf(name, sizeof name, "%05d", task);
  return std::string("tasks/") + name;
}

}  // namespace podsim
