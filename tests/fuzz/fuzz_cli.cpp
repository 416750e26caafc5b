// Seeded fuzzing of podsim's command line (issue 24): random subcommands, known, mistyped and
// unknown options, and values that are negative, nan, huge, empty, hexadecimal or full of
// control characters, or missing. The promise under test: every invocation ends by itself with
// exit status 0, 1 or 2 and says something; never a signal, a sanitizer report, a hang, or a
// raw ESC, CR or NUL on the terminal (names are escaped in every table and message).
//
//   podsim_fuzz_cli --podsim BINARY --out DIR [--seconds S] [--seed N] [--case I]
//
// Environment: PODSIM_FUZZ_SECONDS (default 3), PODSIM_FUZZ_SEED, PODSIM_FUZZ_CASE (replay one
// case), PODSIM_FUZZ_CASE_LIMIT (seconds one invocation may take, default 60: a hang).
//
// The real binary runs, as a user runs it: spawned with an argument vector (no shell), in its
// own process group (so a timeout ends its children too), its working directory a scratch
// directory under --out that holds every file it may write. Only parsing and refusals are the
// point, so the inputs are a 4-chip collectives scenario (a run takes milliseconds), broken or
// missing files, and no valid measurement file (calibrate would fit for minutes); bench only
// ever gets --help, and validate always gets a broken --measured file instead of its grid.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "seeded_rng.hpp"
#include "sim/scenario/input_error.hpp"   // terminal_safe, for this program's own report

namespace fs = std::filesystem;
using podsim_test::Rng;

namespace {

struct Options {
  std::string podsim, out = ".";
  double seconds = 3;
  uint64_t seed = 0x24c11;
  int only_case = -1;
  int case_limit_s = 60;
};

struct Flag {
  const char* name;
  bool takes_value;
};

struct Command {
  const char* name;
  bool has_scenario;   // a positional file
  std::vector<Flag> flags;
};

// The options each command has (main.cpp), so that most generated ones are known and reach
// the checks behind the parser.
const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
      {"run",
       true,
       {{"-o", true}, {"--fidelity", true}, {"--trace-detail", true}, {"--reproducible", false}, {"--trace-gzip", false},
        {"--strict", false}, {"--set", true}, {"--max-memory", true}, {"--max-time", true}}},
      {"compare", true, {{"--topologies", true}, {"--chips", true}, {"-o", true}, {"-j", true}, {"--jobs", true}}},
      {"sweep",
       true,
       {{"--set", true}, {"-o", true}, {"-j", true}, {"--emit", true}, {"--collect", false}, {"--point", true}}},
      {"perf",
       true,
       {{"-b", true}, {"-e", true}, {"-f", true}, {"-i", true}, {"-d", true}, {"-o", true}, {"--fidelity", true},
        {"--set", true}, {"--minbytes", true}, {"--maxbytes", true}}},
      {"plan",
       true,
       {{"-o", true}, {"--set", true}, {"--top", true}, {"-j", true}, {"--budget", true}, {"--exhaustive", false}}},
      {"calibrate",
       true,
       {{"-o", true}, {"--fit", true}, {"--hop-model", true}, {"--name", true}, {"--no-leave-one-out", false}}},
      // --measured is always added, last: without it validate runs its whole grid.
      {"validate", false, {{"--csv", true}, {"--quick", false}, {"--profile", true}, {"--skew-predictions", true}}},
      {"presets", false, {}},
  };
  return all;
}

const std::vector<std::string>& values() {
  static const std::vector<std::string> all = {
      "-3", "-1", "0", "1", "2", "3", "4", "nan", "inf", "-inf", "1e308", "9007199254740993", "99999999999999999999",
      "", ",", ",,", "0x10", "1K", "1M", "16M", "8 MiB", "-5 MiB", "2x2", "4,8", "2x2,4", "v5e,v5p", "v9",
      "\x1b[31m", "\x1b]0;title\x07", "a\rb", "x\ty", "'", "\"", "--", "-", "=", "a=b", "float", "bfloat16", "int4",
      "slurm", "full", "hops", "auto", "floor", "both", "hop_latency", "hop_latency,,dcn_latency", "1 h", "64 GiB",
      "1 ns", "workload.operations.0.bytes=1K,2K", "workload.operations.0.bytes=[4096]",
      "workload.operations.0.bytes=0x10", "workload.operations.0.name=\x1b[2J", "workload.batch_tokens=9007199254740993",
      "topology.mesh.X=2", "topology.mesh.X=-1", "topology.mesh.X=1000000", "hardware.preset=v5p", "name=\x1b[31mred",
      "workload.operations.9.bytes=1K", "workload..x=1", "=1", "no-equals"};
  return all;
}

// Files the scenario positional and file-valued options pick from (relative to the scratch
// directory, the child's working directory).
const std::vector<std::string>& files() {
  static const std::vector<std::string> all = {"tiny.yaml", "tiny.yaml", "evil.yaml", "malformed.yaml", "empty.yaml",
                                               "measurements.yaml", "missing.yaml", "dir", "file", "/dev/null",
                                               "dir/../tiny.yaml", "\x1b[31m.yaml", ""};
  return all;
}

std::string random_bytes(Rng& rng) {
  std::string s(static_cast<size_t>(rng.below(13)), ' ');
  for (char& c : s) c = static_cast<char>(1 + rng.below(255));   // argv cannot hold NUL
  return s;
}

std::string pick(Rng& rng, const std::vector<std::string>& from) { return from[static_cast<size_t>(rng.below(static_cast<int>(from.size())))]; }

std::string random_value(Rng& rng) {
  const int kind = rng.below(10);
  if (kind < 6) return pick(rng, values());
  if (kind < 8) return pick(rng, files());
  return random_bytes(rng);
}

// One invocation's arguments, argv[0] excluded.
std::vector<std::string> generate(Rng& rng) {
  std::vector<std::string> args;
  if (rng.chance(0.15)) args.push_back(pick(rng, {"-v", "-vv", "-q", "--verbose", "--quiet", "--verbos"}));
  if (rng.chance(0.02)) args.push_back(pick(rng, {"--help", "--version"}));
  const int which = rng.below(100);
  if (which < 4) {   // a mistyped, unknown or missing command
    if (rng.chance(0.7)) args.push_back(pick(rng, {"rn", "swep", "vaildate", "benchh", "", "-", "--", "\x1b[31mrun"}));
    return args;
  }
  if (which < 6) {
    args.push_back("bench");
    args.push_back(pick(rng, {"--help", "--repeat=0", "--repeat=-1", "--repeat=nan", "--repeat=101", "--nope"}));
    return args;
  }
  const Command& command = commands()[static_cast<size_t>(rng.below(static_cast<int>(commands().size())))];
  args.push_back(command.name);
  if (command.has_scenario && rng.chance(0.9)) args.push_back(pick(rng, files()));
  const int options = rng.below(6);
  for (int i = 0; i < options; ++i) {
    const int shape = rng.below(20);
    if (shape == 0) {
      args.push_back("--" + random_bytes(rng));   // an unknown option
      continue;
    }
    if (shape == 1) {
      args.push_back(random_value(rng));   // a stray positional
      continue;
    }
    if (command.flags.empty()) break;
    const Flag& flag = command.flags[static_cast<size_t>(rng.below(static_cast<int>(command.flags.size())))];
    std::string name = flag.name;
    if (shape == 2 && name.size() > 3) name.erase(static_cast<size_t>(2 + rng.below(static_cast<int>(name.size()) - 2)), 1);
    if (!flag.takes_value) {
      args.push_back(name);
      continue;
    }
    if (rng.chance(0.05)) {   // the value missing: the next word, or nothing, follows
      args.push_back(name);
      continue;
    }
    const std::string value = name == "-o" && rng.chance(0.6) ? pick(rng, {"out", "file", "dir", "file/sub", "o u't"})
                              : name == "--set" && rng.chance(0.6)
                                  ? pick(rng, {"workload.operations.0.bytes=1K,2K", "workload.operations.0.bytes=[4096]",
                                               "topology.mesh.X=2,4", "workload.operations.0.name=\x1b[2J",
                                               "workload.operations.0.bytes=-1", "name=\x1b[31mred"})
                                  : random_value(rng);
    // An output path stays inside the scratch directory: random bytes could spell "/" or "..",
    // and a run writes summary.json wherever -o points (as root, in CI).
    const bool output = name == "-o" || name == "--output" || name == "--csv";
    if (output && value != "/dev/null" && (value.find('/') == 0 || value.find("..") != std::string::npos)) continue;
    if (rng.chance(0.2) && name.rfind("--", 0) == 0) {
      args.push_back(name + "=" + value);
    } else {
      args.push_back(name);
      args.push_back(value);
    }
  }
  if (std::string(command.name) == "validate") {
    args.push_back("--measured");
    args.push_back(pick(rng, {"malformed.yaml", "missing.yaml", "dir", "tiny.yaml", "empty.yaml", "evil.yaml"}));
  }
  return args;
}

std::string shell_line(const std::vector<std::string>& args) {
  std::string line = "podsim";
  for (const auto& a : args) {
    line += " '";
    for (char c : a) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += "'";
  }
  return line;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The scratch directory: inputs the generated arguments name, and room for every output.
void make_scratch(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir / "dir");
  const std::string tiny = "version: 1\nhardware: {preset: v5e}\ntopology: {mesh: {X: 4}}\nworkload:\n  kind: collectives\n"
                           "  operations:\n    - {name: ag, kind: all_gather, axes: [X], bytes: \"1 MiB\"}\n";
  write_text(dir / "tiny.yaml", tiny);
  write_text(dir / "evil.yaml", "name: \"evil\\e[31m\\r\\0\"\n" + tiny);
  write_text(dir / "malformed.yaml", "version: 1\nhardware: {preset: v5e\n");
  write_text(dir / "empty.yaml", "");
  write_text(dir / "file", "not a directory\n");
  // A measurement file that is refused (its value negative) before any fit starts.
  write_text(dir / "measurements.yaml", "version: 1\nmeasurements:\n  - {name: a, scenario: tiny.yaml, field: "
                                        "total_time_s, measured: \"-1 us\"}\n");
}

struct Outcome {
  bool timed_out = false;
  int status = 0;
  std::string out, err;
};

Outcome run_once(const Options& o, const fs::path& scratch, const std::vector<std::string>& args) {
  const fs::path out_file = scratch / ".." / "stdout", err_file = scratch / ".." / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addchdir_np(&actions, scratch.c_str());
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  std::vector<std::string> words = {o.podsim};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int error = posix_spawn(&pid, o.podsim.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    std::fprintf(stderr, "podsim_fuzz_cli: cannot run %s: %s\n", o.podsim.c_str(), std::strerror(error));
    std::exit(1);
  }
  Outcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.case_limit_s);
  for (;;) {
    const pid_t done = ::waitpid(pid, &outcome.status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      outcome.timed_out = true;
      ::kill(-pid, SIGKILL);   // its process group: podsim and the runs it started
      ::waitpid(pid, &outcome.status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(-pid, SIGKILL);   // a child podsim left behind would outlive the case
  outcome.out = read_text(out_file);
  outcome.err = read_text(err_file);
  return outcome;
}

// What is wrong with an outcome; empty when nothing is.
std::string check(const Outcome& r) {
  if (r.timed_out) return "did not end within the case limit (a hang)";
  if (WIFSIGNALED(r.status)) return "killed by signal " + std::to_string(WTERMSIG(r.status));
  const int code = WEXITSTATUS(r.status);
  for (const char* report : {"Sanitizer", "runtime error:", "terminate called", "Assertion"}) {
    if (r.err.find(report) != std::string::npos) return std::string("stderr holds a report: ") + report;
  }
  if (code != 0 && code != 1 && code != 2) return "exit status " + std::to_string(code) + ", expected 0, 1 or 2";
  if (code != 0 && r.err.empty() && r.out.empty()) return "exit status " + std::to_string(code) + " without a message";
  for (const char c : {'\x1b', '\r', '\0'}) {
    if (r.out.find(c) != std::string::npos) return "a raw control character on stdout";
    if (r.err.find(c) != std::string::npos) return "a raw control character on stderr";
  }
  return {};
}

Options parse_options(int argc, char** argv) {
  Options o;
  if (const char* s = std::getenv("PODSIM_FUZZ_SECONDS"); s && *s) o.seconds = std::atof(s);
  if (const char* s = std::getenv("PODSIM_FUZZ_SEED"); s && *s) o.seed = std::strtoull(s, nullptr, 0);
  o.only_case = podsim_test::env_int("PODSIM_FUZZ_CASE", -1);
  o.case_limit_s = podsim_test::env_int("PODSIM_FUZZ_CASE_LIMIT", 60);
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--podsim") o.podsim = value;
    else if (flag == "--out") o.out = value;
    else if (flag == "--seconds") o.seconds = std::atof(value.c_str());
    else if (flag == "--seed") o.seed = std::strtoull(value.c_str(), nullptr, 0);
    else if (flag == "--case") o.only_case = std::atoi(value.c_str());
    else {
      std::fprintf(stderr, "podsim_fuzz_cli: unknown option %s\n", flag.c_str());
      std::exit(2);
    }
  }
  if (o.podsim.empty()) {
    std::fprintf(stderr, "usage: podsim_fuzz_cli --podsim BINARY --out DIR [--seconds S] [--seed N] [--case I]\n");
    std::exit(2);
  }
  o.podsim = fs::absolute(o.podsim).string();
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  const fs::path root = fs::absolute(fs::path(o.out) / "cli");
  const fs::path scratch = root / "scratch";
  const auto start = std::chrono::steady_clock::now();
  int cases = 0;
  int by_status[3] = {0, 0, 0};   // how many ended 0, 1, 2: a run that only ever refuses tests little
  for (int i = o.only_case >= 0 ? o.only_case : 0;; ++i) {
    if (o.only_case >= 0 ? i > o.only_case
                         : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > o.seconds)
      break;
    Rng rng = podsim_test::case_rng(o.seed, i);
    const std::vector<std::string> args = generate(rng);
    make_scratch(scratch);   // every case from the same files: a case replays alone
    const Outcome r = run_once(o, scratch, args);
    ++cases;
    if (const std::string problem = check(r); !problem.empty()) {
      const std::string line = shell_line(args);
      write_text(root / "fuzz-failure-cli.txt", line + "\n");
      std::fprintf(stderr,
                   "podsim_fuzz_cli: case %d (replay: PODSIM_FUZZ_SEED=%llu PODSIM_FUZZ_CASE=%d): %s\n  %s\n"
                   "(written to %s; run it in a copy of %s)\n--- stdout\n%s--- stderr\n%s",
                   i, static_cast<unsigned long long>(o.seed), i, problem.c_str(), podsim::terminal_safe(line, true).c_str(),
                   (root / "fuzz-failure-cli.txt").c_str(), scratch.c_str(), podsim::terminal_safe(r.out, true).c_str(),
                   podsim::terminal_safe(r.err, true).c_str());
      return 1;
    }
    ++by_status[WEXITSTATUS(r.status)];
  }
  std::printf("podsim_fuzz_cli: %d invocations (%d exit status 0, %d 1, %d 2), each with no signal, hang, report or raw "
              "control character\n",
              cases, by_status[0], by_status[1], by_status[2]);
  return 0;
}
