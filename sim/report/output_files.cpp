#include "sim/report/output_files.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace podsim {

namespace fs = std::filesystem;

void ensure_directory(const std::string& directory) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec || !fs::is_directory(directory)) {
    throw std::runtime_error("cannot create output directory '" + directory + "': " +
                             (ec ? ec.message() : std::string("not a directory")));
  }
}

OutputFiles::OutputFiles(std::string directory) : directory_(std::move(directory)) {}

OutputFiles::~OutputFiles() {
  streams_.clear();   // closed before their files are removed
  for (const auto& [tmp, final_path] : pending_) std::remove(tmp.c_str());
}

std::string OutputFiles::path(const std::string& name) const { return (fs::path(directory_) / name).string(); }

namespace {

// Temporaries of `name` that an interrupted run left (".NAME.tmpPID" of a process that is gone):
// a run killed between writing and renaming cannot remove its own. A live writer's are kept.
void remove_stale_temporaries(const std::string& directory, const std::string& name) {
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

}  // namespace

std::string OutputFiles::temporary(const std::string& name) const {
  return (fs::path(directory_) / ("." + name + ".tmp" + std::to_string(::getpid()))).string();
}

std::ostream& OutputFiles::stream(const std::string& name) {
  remove_stale_temporaries(directory_, name);
  const std::string tmp = temporary(name);
  auto out = std::make_unique<std::ofstream>(tmp, std::ios::binary | std::ios::trunc);
  if (!*out) throw std::runtime_error("cannot write '" + tmp + "'");
  pending_.emplace_back(tmp, path(name));
  streams_.emplace_back(tmp, std::move(out));
  return *streams_.back().second;
}

void OutputFiles::add(const std::string& name, const std::string& contents) {
  remove_stale_temporaries(directory_, name);
  const std::string final_path = path(name);
  const std::string tmp = temporary(name);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + tmp + "'");
    pending_.emplace_back(tmp, final_path);
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.flush();
    if (!out) throw std::runtime_error("cannot write '" + tmp + "' (disk full?)");
  }
}

void OutputFiles::commit() {
  for (auto& [tmp, out] : streams_) {
    out->flush();
    if (!*out) throw std::runtime_error("cannot write '" + tmp + "' (disk full?)");
    out->close();
  }
  streams_.clear();
  for (const auto& [tmp, final_path] : pending_) {
    std::error_code ec;
    fs::rename(tmp, final_path, ec);
    if (ec) throw std::runtime_error("cannot move '" + tmp + "' to '" + final_path + "': " + ec.message());
  }
  pending_.clear();
}

}  // namespace podsim
