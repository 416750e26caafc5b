#include "sim/report/output_files.hpp"

#include <unistd.h>

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
  for (const auto& [tmp, final_path] : pending_) std::remove(tmp.c_str());
}

std::string OutputFiles::path(const std::string& name) const { return (fs::path(directory_) / name).string(); }

void OutputFiles::add(const std::string& name, const std::string& contents) {
  const std::string final_path = path(name);
  const std::string tmp = (fs::path(directory_) / ("." + name + ".tmp" + std::to_string(::getpid()))).string();
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
  for (const auto& [tmp, final_path] : pending_) {
    std::error_code ec;
    fs::rename(tmp, final_path, ec);
    if (ec) throw std::runtime_error("cannot move '" + tmp + "' to '" + final_path + "': " + ec.message());
  }
  pending_.clear();
}

}  // namespace podsim
