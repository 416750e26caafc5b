#pragma once
// Output files appear whole or not at all: each is written to a temporary file beside its
// destination and renamed into place only after every file of the run has been written.
// Temporaries a killed run left behind (".NAME.tmpPID" of a process that no longer exists)
// are removed when the same name is written again.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace podsim {

class OutputFiles {
 public:
  explicit OutputFiles(std::string directory);
  ~OutputFiles();   // removes temporaries of an uncommitted set
  // Writes `contents` to a temporary file for `name`; throws std::runtime_error on I/O errors.
  void add(const std::string& name, const std::string& contents);
  // A stream to a temporary for `name`, for outputs written as they are produced (a serving run's
  // per-request rows); flushed, checked and renamed with the others at commit.
  std::ostream& stream(const std::string& name);
  // Renames every temporary into place.
  void commit();
  std::string path(const std::string& name) const;

 private:
  std::string directory_;
  std::string temporary(const std::string& name) const;
  std::vector<std::pair<std::string, std::string>> pending_;   // temporary, final
  std::vector<std::pair<std::string, std::unique_ptr<std::ofstream>>> streams_;   // temporary, open stream
};

// Creates the directory (and parents); throws std::runtime_error naming it on failure.
void ensure_directory(const std::string& directory);

}  // namespace podsim
