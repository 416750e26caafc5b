// Output paths (sim/report/output_files.hpp): a rename replaces only a regular file or nothing;
// devices and FIFOs are written through, directories and block devices refused at the option;
// a run's directory never mixes its files with an earlier run's; failures give the system's reason.
// Devices are made with mknod in the scratch directory, never /dev's own: a regression here
// must not turn the machine's /dev/null into a file. Where mknod is not allowed, those checks are
// left out with a warning (CI runs as root, where it is).
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "cli_helpers.hpp"
#include "sim/report/output_files.hpp"
#include "sim/scenario/input_error.hpp"

using namespace podsim;
namespace fs = std::filesystem;
using podsim_test::read_file;
using podsim_test::run_podsim;
using podsim_test::source_path;

namespace {

// A character device like /dev/null (1, 3) or /dev/full (1, 7) at `path`; false where not allowed.
bool make_device(const fs::path& path, unsigned minor) {
  return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

bool is_character_device(const fs::path& path) { return fs::symlink_status(path).type() == fs::file_type::character; }

std::string shell_arg(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_CASE("outputs into a character device are written through, the device stays a device", "[output][adversarial]") {
  const auto dir = podsim_test::made_dir("out-devices");
  if (!make_device(dir / "null", 3) || !make_device(dir / "full", 7)) {
    WARN("mknod not permitted here: device checks left out");
    return;
  }
  {
    OutputFiles files(dir.string(), "-o");
    files.add("null", "profile text\n");
    files.commit();
  }
  CHECK(is_character_device(dir / "null"));
  // /dev/full refuses every byte: the write fails with the system's reason, the device stays.
  OutputFiles full(dir.string(), "-o");
  full.add("full", "profile text\n");
  try {
    full.commit();
    FAIL("writing into a full device succeeded");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("No space left on device") != std::string::npos);
  }
  CHECK(is_character_device(dir / "full"));
  // No temporary was left beside the devices.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir)) entries += e.path().filename().string()[0] == '.' ? 100 : 1;
  CHECK(entries == 2);
}

TEST_CASE("the CLI writes through to devices: calibrate -o and validate --csv", "[output][adversarial][cli]") {
  const auto dir = podsim_test::made_dir("out-cli-devices");
  if (!make_device(dir / "null", 3) || !make_device(dir / "full", 7)) {
    WARN("mknod not permitted here: device checks left out");
    return;
  }
  const std::string measurements = source_path("scenarios/profiles/v4_llama_decode.measurements.yaml");
  const auto to_null = run_podsim("calibrate " + measurements + " --fit hbm_efficiency -o " + shell_arg(dir / "null"));
  CHECK(to_null.exit_code == 0);
  CHECK(is_character_device(dir / "null"));
  const auto to_full = run_podsim("calibrate " + measurements + " --fit hbm_efficiency -o " + shell_arg(dir / "full"));
  CHECK(to_full.exit_code == 1);
  CHECK(to_full.err.find("No space left on device") != std::string::npos);
  CHECK(to_full.out.find("wrote") == std::string::npos);
  CHECK(is_character_device(dir / "full"));
  const auto csv = run_podsim("validate --measured " + measurements + " --csv " + shell_arg(dir / "null"));
  CHECK(csv.exit_code == 0);
  CHECK(is_character_device(dir / "null"));
}

TEST_CASE("an output into a FIFO is written through to its reader", "[output][adversarial]") {
  const auto dir = podsim_test::made_dir("out-fifo");
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto reader = std::async(std::launch::async, [&] { return read_file(fifo); });
  OutputFiles files(dir.string());
  files.add("pipe", "row 1\nrow 2\n");
  files.commit();
  CHECK(reader.get() == "row 1\nrow 2\n");
  CHECK(fs::symlink_status(fifo).type() == fs::file_type::fifo);
}

TEST_CASE("a directory as an output file is refused at the option, before anything is written", "[output][adversarial]") {
  const auto dir = podsim_test::made_dir("out-directory");
  fs::create_directories(dir / "profile.yaml");
  OutputFiles files(dir.string(), "-o");
  try {
    files.add("profile.yaml", "x");
    FAIL("a directory was accepted as an output file");
  } catch (const InputError& e) {
    CHECK(e.key() == "-o");
    CHECK(std::string(e.what()).find("is a directory") != std::string::npos);
  }
  CHECK(fs::is_directory(dir / "profile.yaml"));
  // The CLI: calibrate -o DIR and -o DIR/ say so with exit status 2, and no dangling "wrote".
  const std::string measurements = source_path("scenarios/profiles/v4_llama_decode.measurements.yaml");
  for (const std::string& target : {dir.string(), dir.string() + "/"}) {
    const auto cli = run_podsim("calibrate " + measurements + " --fit hbm_efficiency -o " + shell_arg(target));
    CHECK(cli.exit_code == 2);
    CHECK(cli.err.find("'-o'") != std::string::npos);
    CHECK(cli.out.find("wrote") == std::string::npos);
  }
  // A file where the profile's folder would be: refused before the fit, not after it.
  std::ofstream(dir / "plain") << "x";
  const auto under_file = run_podsim("calibrate " + measurements + " --fit hbm_efficiency -o " + shell_arg(dir / "plain" / "p.yaml"));
  CHECK(under_file.exit_code == 2);
  CHECK(under_file.err.find("which is a file, not a directory") != std::string::npos);
  CHECK(under_file.out.empty());   // no table: the fit never ran
  // A regular file as an output directory: refused at -o (exit 2), not a raw filesystem error.
  std::ofstream(dir / "file") << "keep me\n";
  const auto run = run_podsim("run " + source_path("scenarios/v5e_8x4_allgather_y_small.yaml") + " -o " + shell_arg(dir / "file"));
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("'-o'") != std::string::npos);
  CHECK(run.err.find("not a directory") != std::string::npos);
  CHECK(read_file(dir / "file") == "keep me\n");
}

TEST_CASE("a symbolic link to an output file keeps pointing at the rewritten file", "[output][adversarial]") {
  const auto dir = podsim_test::made_dir("out-symlink");
  fs::create_directories(dir / "real");
  std::ofstream(dir / "real" / "p.yaml") << "old\n";
  fs::create_symlink(dir / "real" / "p.yaml", dir / "p.yaml");
  OutputFiles files(dir.string());
  files.add("p.yaml", "new\n");
  files.commit();
  CHECK(fs::is_symlink(dir / "p.yaml"));
  CHECK(read_file(dir / "real" / "p.yaml") == "new\n");
}

TEST_CASE("an I/O failure names the path and the system's reason", "[output][adversarial]") {
  // A temporary cannot be made where the destination's folder is a file: ENOTDIR.
  const auto dir = podsim_test::made_dir("out-errno");
  std::ofstream(dir / "plain") << "x";
  OutputFiles files((dir / "plain").string());
  try {
    files.add("p.yaml", "x");
    FAIL("writing under a regular file succeeded");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("Not a directory") != std::string::npos);
  }
}

TEST_CASE("a run removes the files an earlier run of another kind left in its directory", "[output][adversarial][cli]") {
  const auto dir = podsim_test::made_dir("out-stale");
  const auto out = dir / "o";
  // Files an earlier serving run wrote (as names: their contents do not matter), and one of the user's.
  fs::create_directories(out);
  for (const char* name : {"trace.json", "requests.csv", "steps.csv", "summary.json", "notes.txt"})
    std::ofstream(out / name) << "earlier\n";
  const auto run = run_podsim("run " + source_path("scenarios/v5e_8x4_allgather_y_small.yaml") + " -o " + shell_arg(out) +
                              " --trace-gzip");
  REQUIRE(run.exit_code == 0);
  CHECK(fs::exists(out / "trace.json.gz"));
  CHECK(fs::exists(out / "operations.csv"));
  CHECK(read_file(out / "summary.json") != "earlier\n");
  CHECK_FALSE(fs::exists(out / "trace.json"));
  CHECK_FALSE(fs::exists(out / "requests.csv"));
  CHECK_FALSE(fs::exists(out / "steps.csv"));
  CHECK(read_file(out / "notes.txt") == "earlier\n");   // not podsim's: kept
}
