// The command line as a user meets it: commands, help, exit codes, and bad input that gives
// one clear message, exit status 2 and no output files.
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "cli_helpers.hpp"
#include "sim/scenario/units.hpp"

using namespace podsim_test;
namespace fs = std::filesystem;

namespace {

fs::path write_scenario(const std::string& name, const std::string& text) {
  const auto dir = fresh_dir("inputs");
  fs::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

const char* kGood = R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 16}}
workload:
  kind: collectives
  operations:
    - {name: ag, kind: all_gather, axes: [X], bytes: "1 MiB"}
)";

}  // namespace

TEST_CASE("version, help and presets", "[cli]") {
  auto version = run_podsim("--version");
  CHECK(version.exit_code == 0);
  CHECK(version.out.find("podsim 0.") != std::string::npos);
  for (const char* command : {"run --help", "validate --help", "presets --help", "bench --help", "--help"}) {
    INFO(command);
    auto help = run_podsim(command);
    CHECK(help.exit_code == 0);
    CHECK(help.out.find("Usage") != std::string::npos);
  }
  auto presets = run_podsim("presets");
  CHECK(presets.exit_code == 0);
  for (const char* chip : {"v4p", "v5p", "v5e", "v6e"}) CHECK(presets.out.find(chip) != std::string::npos);
  CHECK(presets.out.find("B/s") != std::string::npos);
  // Units one way, as the tables print them: binary bytes, decimal rates, no exponents.
  CHECK(presets.out.find("459 TFLOP/s") != std::string::npos);
  CHECK(presets.out.find("89.41 GiB") != std::string::npos);
  CHECK(presets.out.find("45 GB/s") != std::string::npos);
  CHECK(presets.out.find("e+") == std::string::npos);
}

TEST_CASE("temporaries an interrupted run left are removed by the next run", "[cli]") {
  const auto input = write_scenario("good.yaml", kGood);
  const auto out = fresh_dir("stale-tmp-out");
  fs::create_directories(out);
  // A PID no process has (as after a kill between writing and renaming), and a live one.
  pid_t gone = 999999;
  while (::kill(gone, 0) == 0 || errno != ESRCH) --gone;
  const auto stale = out / (".summary.json.tmp" + std::to_string(gone));
  const auto live = out / (".trace.json.tmp" + std::to_string(::getpid()));
  std::ofstream(stale) << "half";
  std::ofstream(live) << "being written";
  REQUIRE(run_podsim("run " + input.string() + " -o " + out.string()).exit_code == 0);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
}

namespace {

// The children of `pid` (from /proc/*/stat's fourth field), and whether `pid` still runs.
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    long ppid;
    if (rest >> state >> ppid && ppid == pid) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

bool running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] != 'Z';
}

}  // namespace

TEST_CASE("the simulation process dies with a killed podsim run", "[cli]") {
  // A full replay long enough to be caught running: 1,105,920 messages, ~20 s.
  const auto input = write_scenario("long.yaml", "version: 1\nhardware: {preset: v4p}\n"
                                                 "topology: {mesh: {X: 16, Y: 16, Z: 16}}\nworkload:\n"
                                                 "  kind: collectives\n  operations:\n"
                                                 "    - {name: ar, kind: all_reduce, axes: [X, Y, Z], bytes: 1 GiB}\n");
  const auto out = fresh_dir("killed-parent");
  const pid_t parent = ::fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::execl(PODSIM_BINARY, PODSIM_BINARY, "run", input.c_str(), "--fidelity", "full", "-o", out.c_str(), nullptr);
    _exit(127);
  }
  std::vector<pid_t> simulation;
  for (int i = 0; i < 300 && simulation.empty(); ++i) {
    ::usleep(50000);
    simulation = children_of(parent);
  }
  REQUIRE(simulation.size() == 1);
  ::kill(parent, SIGKILL);
  int status = 0;
  ::waitpid(parent, &status, 0);
  bool gone = false;
  for (int i = 0; i < 40 && !gone; ++i) {
    ::usleep(50000);
    gone = !running(simulation[0]);
  }
  if (!gone) ::kill(simulation[0], SIGKILL);
  CHECK(gone);
}

TEST_CASE("a device or FIFO as the scenario or a trace is refused, not read", "[cli]") {
  const auto dir = fresh_dir("not-regular");
  fs::create_directories(dir);
  const auto fifo = dir / "fifo.yaml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  for (const std::string& path : {std::string("/dev/zero"), fifo.string()}) {
    INFO(path);
    const auto r = run_podsim("run " + path + " -o " + (dir / "out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("not a regular file") != std::string::npos);
    CHECK(r.err.find(path) != std::string::npos);
    const auto trace = write_scenario("trace.yaml", "version: 1\nhardware: {preset: v5e}\n"
                                                    "topology: {mesh: {X: 4, Y: 4}}\nworkload:\n  kind: serving\n"
                                                    "  model: llama3-70b\n  weights: int8\n  kv_cache: int8\n"
                                                    "  requests:\n    trace: " + path + "\n");
    const auto t = run_podsim("run " + trace.string() + " -o " + (dir / "out").string());
    CHECK(t.exit_code == 2);
    CHECK(t.err.find("request trace: not a regular file") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir / "out" / "summary.json"));
}

TEST_CASE("a mistyped command or option is named, with the nearest known one", "[cli]") {
  const auto input = write_scenario("good.yaml", kGood);
  struct Case {
    std::string args, expect;
  };
  for (const auto& c : std::vector<Case>{
           {"rn " + input.string(), "unknown command 'rn' (did you mean run?)"},
           {"run --hlep", "podsim run: unknown option '--hlep' (did you mean --help?)"},
           {"run " + input.string() + " --fidelty full", "unknown option '--fidelty' (did you mean --fidelity?)"},
           {"--verbos run " + input.string(), "unknown option '--verbos' (did you mean --verbose?)"},
           {"vaildate", "unknown command 'vaildate' (did you mean validate?)"},
           {"run " + input.string() + " --zzzzzzzz", "unknown option '--zzzzzzzz'\n"}}) {
    INFO(c.args);
    const auto r = run_podsim(c.args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK(r.err.find("is required") == std::string::npos);
  }
  // -q keeps the results and the errors, and drops warnings.
  const auto out = fresh_dir("quiet-out");
  const auto quiet = run_podsim("-q run " + input.string() + " -o " + out.string());
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  CHECK(quiet.out.find("all_gather") != std::string::npos);
}

TEST_CASE("a good scenario writes summary, trace and CSV", "[cli]") {
  const auto input = write_scenario("good.yaml", kGood);
  const auto out = fresh_dir("good-out");
  auto result = run_podsim("run " + input.string() + " -o " + out.string());
  INFO(result.err);
  REQUIRE(result.exit_code == 0);
  CHECK(fs::exists(out / "summary.json"));
  CHECK(fs::exists(out / "trace.json"));
  CHECK(fs::exists(out / "operations.csv"));
  CHECK(result.out.find("all_gather") != std::string::npos);
  // No temporary files are left behind.
  for (const auto& entry : fs::directory_iterator(out)) CHECK(entry.path().filename().string()[0] != '.');
}

TEST_CASE("bad input: one message naming the file, exit 2, no output", "[cli]") {
  struct Case {
    const char* label;
    std::string text;
    const char* must_mention;
  };
  const std::vector<Case> cases = {
      {"malformed YAML", "version: 1\nhardware: {preset: v5e\n", "bad.yaml:3"},
      {"unknown key", std::string(kGood) + "colour: blue\n", "colour"},
      {"wrong type", std::string(kGood).replace(std::string(kGood).find("X: 16"), 5, "X: many"), "many"},
      {"zero-size axis", std::string(kGood).replace(std::string(kGood).find("X: 16"), 5, "X: 0"), "X"},
      {"axis the mesh lacks", std::string(kGood).replace(std::string(kGood).find("axes: [X]"), 9, "axes: [Q]"), "Q"},
      {"absurd mesh", std::string(kGood).replace(std::string(kGood).find("X: 16"), 5, "X: 1000000"), "1000000"},
      {"negative size", std::string(kGood).replace(std::string(kGood).find("\"1 MiB\""), 7, "\"-5 MiB\""), "-5"},
      {"overflowing size", std::string(kGood).replace(std::string(kGood).find("\"1 MiB\""), 7, "\"99999999999 TiB\""),
       "99999999999"},
      {"perturbed chip outside the mesh",
       std::string(kGood) + "perturbations:\n  - {name: slow, chips: [16], compute_slowdown: 2}\n",
       "key 'perturbations[0].chips[0]': value '16': expected a position on axis X from 0 to 15"},
      {"perturbation factor of zero",
       std::string(kGood) + "perturbations:\n  - {links: {axis: X}, bandwidth_scale: 0}\n",
       "key 'perturbations[0].bandwidth_scale': value '0': the link from chip"},
      {"perturbation latency without a unit",
       std::string(kGood) + "perturbations:\n  - {links: {axis: X}, extra_latency: 2}\n",
       "key 'perturbations[0].extra_latency': value '2'"},
  };
  for (const auto& c : cases) {
    DYNAMIC_SECTION(c.label) {
      const auto input = write_scenario("bad.yaml", c.text);
      const auto out = fresh_dir("bad-out");
      auto result = run_podsim("run " + input.string() + " -o " + out.string());
      CHECK(result.exit_code == 2);
      CHECK(result.err.find("bad.yaml") != std::string::npos);
      CHECK(result.err.find(c.must_mention) != std::string::npos);
      CHECK(std::count(result.err.begin(), result.err.end(), '\n') == 1);   // one message
      CHECK_FALSE(fs::exists(out / "summary.json"));
      CHECK_FALSE(fs::exists(out / "trace.json"));
    }
  }
  SECTION("missing file") {
    auto result = run_podsim("run /nonexistent/scenario.yaml -o " + fresh_dir("missing").string());
    CHECK(result.exit_code == 2);
    CHECK(result.err.find("/nonexistent/scenario.yaml") != std::string::npos);
  }
  SECTION("unknown command line option") {
    auto result = run_podsim("run --no-such-flag x.yaml");
    CHECK(result.exit_code == 2);
  }
}

TEST_CASE("validate --quick: every row within 1% of the book or of its predicted effects", "[cli]") {
  const auto csv = fresh_dir("validate") / "validate.csv";
  fs::create_directories(csv.parent_path());
  auto result = run_podsim("validate --quick --csv " + csv.string());
  INFO(result.out << result.err);
  REQUIRE(result.exit_code == 0);
  const auto text = read_file(csv);
  CHECK(text.rfind("collective,axes,mesh,wraparound,bytes,analytic_s,simulated_s,rel_error,predicted_s,"
                   "predicted_error,method,regime,status,note\n", 0) == 0);
  CHECK(text.find("unexplained") == std::string::npos);
  CHECK(result.out.find(" 0 unexplained") != std::string::npos);
  // Every row outside the book's 1% names its effects with their sizes and the prediction.
  std::istringstream lines(text);
  std::string line;
  std::getline(lines, line);
  int explained = 0;
  while (std::getline(lines, line)) {
    if (line.find(",explained,") == std::string::npos) continue;
    ++explained;
    INFO(line);
    CHECK(line.find("%") != std::string::npos);
    CHECK(line.find("predicted ") != std::string::npos);
  }
  CHECK(explained > 0);
}

TEST_CASE("validate fails when its predictions are wrong: the check can fail", "[cli]") {
  // Predictions scaled by 1.02: every row is 2% off its prediction.
  auto wrong = run_podsim("validate --quick --skew-predictions 0.02");
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.out.find("unexplained rows") != std::string::npos);
  CHECK(wrong.out.find("unexplained: simulated -1.96% from the predicted") != std::string::npos);
  // Within the 1% tolerance the same grid passes.
  CHECK(run_podsim("validate --quick --skew-predictions 0.005").exit_code == 0);
}

TEST_CASE("a plan that does not fit HBM is an error (exit 1) with its breakdown, --allow-oom simulates it", "[cli]") {
  const auto input = write_scenario("nofit.yaml", R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 2}, wraparound: {X: true}}
workload:
  kind: training
  model: llama2-13b
  batch_tokens: 8192
  sequence_length: 4096
  parallelism: {data: [X]}
)");
  // 13e9 parameters replicated with Adam: 12 bytes each, far over 96 GB.
  const auto out = fresh_dir("nofit-out");
  auto refused = run_podsim("run " + input.string() + " -o " + out.string());
  INFO(refused.err);
  // Issue 42: it printed DOES NOT FIT and exited 0.
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("the DP plan does not fit HBM: it needs ") != std::string::npos);
  CHECK(refused.err.find("per chip, more than " + podsim::human_hbm(96e9, 0.05)) != std::string::npos);
  for (const char* part : {"params ", "grads ", "optimizer ", "activations ", "To fit: parallelism.fsdp: true",
                           "checkpointing: block", "--allow-oom", "workload.strict_memory: false"})
    CHECK(refused.err.find(part) != std::string::npos);
  CHECK_FALSE(fs::exists(out / "summary.json"));
  auto allowed = run_podsim("run " + input.string() + " -o " + out.string() + " --allow-oom");
  REQUIRE(allowed.exit_code == 0);
  CHECK(allowed.out.find("of " + podsim::human_hbm(96e9, 0.05) + " (DOES NOT FIT)") != std::string::npos);
  CHECK(read_file(out / "summary.json").find("\"fits_hbm\": false") != std::string::npos);
  // The file may opt in; --strict overrules it; --strict beside --allow-oom contradicts it.
  const auto in_file = write_scenario("nofit-file.yaml", read_file(input) + "  strict_memory: false\n");
  CHECK(run_podsim("run " + in_file.string() + " -o " + out.string()).exit_code == 0);
  CHECK(run_podsim("run " + in_file.string() + " -o " + out.string() + " --strict").exit_code == 1);
  CHECK(run_podsim("run " + input.string() + " -o " + out.string() + " --strict --allow-oom").exit_code == 2);
}

TEST_CASE("an inference batch that does not fit HBM is an error naming the batch that fits", "[cli]") {
  // llama3-70b in int8 on 8 v5e chips: 70.6 GB of weights, and 512 caches of 8192 tokens at
  // 163,840 B a token, against 8 x 16 GB less 5%.
  const auto input = write_scenario("nofit-inference.yaml", R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 8}}
workload: {kind: inference, model: llama3-70b, weights: int8, kv_cache: int8, batch: 512, context_length: 8192,
           parallelism: {model: [X]}}
)");
  auto refused = run_podsim("run " + input.string() + " -o " + fresh_dir("nofit-inf").string());
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("a batch of 512 does not fit HBM") != std::string::npos);
  CHECK(refused.err.find(podsim::human_hbm(16e9, 0.05)) != std::string::npos);
  CHECK(refused.err.find("To fit: workload.batch of at most ") != std::string::npos);
}

TEST_CASE("plan: a model that fits nowhere is an error", "[cli]") {
  const auto input = write_scenario("nowhere.yaml", R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 2}}
workload:
  kind: training
  model: {preset: llama3-405b, layers: 4}
  batch_tokens: 8192
  sequence_length: 4096
)");
  auto result = run_podsim("plan " + input.string());
  CHECK(result.exit_code == 2);
  CHECK(result.err.find("nowhere.yaml") != std::string::npos);
  CHECK(result.err.find("fits nowhere") != std::string::npos);
}

// ---- issue 24: bad input is refused with one located message, never accepted silently ----

namespace {

// `s` as one word for the shell run_podsim() runs its command line in.
std::string sh(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// kGood on a 4-chip ring: runs in milliseconds.
const std::string kTiny = std::string(kGood).replace(std::string(kGood).find("X: 16"), 5, "X: 4");

int lines_of(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("compare: every row failing is a failed command", "[cli]") {
  // The operation's axis Y is on no compared shape: each row fails on its own.
  const auto input = write_scenario("compare-fails.yaml", R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 2, Y: 2}}
workload:
  kind: collectives
  operations:
    - {name: ag, kind: all_gather, axes: [Y], bytes: "1 MiB"}
)");
  const auto out = fresh_dir("compare-fails-out");
  const auto r = run_podsim("compare " + input.string() + " --topologies 4,8 -j 1 -o " + out.string());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("no run of the comparison succeeded") != std::string::npos);
  CHECK(r.out.find("error:") != std::string::npos);   // the rows' own errors stay in the table
}

TEST_CASE("numeric options out of their range are refused with exit 2", "[cli]") {
  const auto input = write_scenario("tiny.yaml", kTiny);
  const auto out = fresh_dir("ranges-out");
  struct Case {
    std::string args, mentions;
  };
  for (const auto& c : std::vector<Case>{
           {"sweep " + input.string() + " --point -1 -o " + out.string(), "--point"},
           {"sweep " + input.string() + " --point 5 -o " + out.string(), "--point"},
           {"sweep " + input.string() + " -j -3 -o " + out.string(), "--jobs"},
           {"compare " + input.string() + " --topologies 4 -j -3 -o " + out.string(), "--jobs"},
           {"plan " + input.string() + " -j -3", "--jobs"},
           {"plan " + input.string() + " --budget nan", "--budget"},
           {"plan " + input.string() + " --budget inf", "--budget"},
           {"plan " + input.string() + " --budget 0", "--budget"},
           {"calibrate /nonexistent/measurements.yaml --fit ''", "--fit"},
           {"calibrate /nonexistent/measurements.yaml --fit ,", "--fit"}}) {
    INFO(c.args);
    const auto r = run_podsim(c.args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(c.mentions) != std::string::npos);
    CHECK_FALSE(fs::exists(out / "points"));   // no point ran
  }
  // An empty --fit names what can be fitted.
  const auto fit = run_podsim("calibrate /nonexistent/measurements.yaml --fit ''");
  CHECK(fit.err.find("hop_latency, link_efficiency") != std::string::npos);
}

TEST_CASE("perf: a size range smaller than one element is refused, naming -e and the type", "[cli]") {
  const auto input = write_scenario("tiny.yaml", kTiny);
  const auto out = fresh_dir("perf-tiny-out");
  const auto r = run_podsim("perf " + input.string() + " -b 3 -e 3 -d float -o " + out.string());
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("-e") != std::string::npos);
  CHECK(r.err.find("float") != std::string::npos);
  CHECK(r.out.find("simulated 0 chips") == std::string::npos);
  CHECK_FALSE(fs::exists(out / "perf.csv"));
}

TEST_CASE("batch_tokens past 2^53 is refused, not rounded", "[cli]") {
  const auto input = write_scenario("batch.yaml", R"(version: 1
hardware: {preset: v5p}
topology: {mesh: {X: 2}}
workload:
  kind: training
  model: {preset: llama2-13b, layers: 2}
  batch_tokens: 8192
  sequence_length: 4096
  parallelism: {data: [X]}
)");
  for (const char* value : {"9007199254740993", "99999999999999999999999"}) {
    INFO(value);
    const auto r = run_podsim("run " + input.string() + " --set workload.batch_tokens=" + value + " -o " +
                              fresh_dir("batch-out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("2^53") != std::string::npos);
    CHECK(r.err.find(value) != std::string::npos);
  }
}

TEST_CASE("inference: weights no slice holds are said so, not 'smallest slice 0 chips'", "[cli]") {
  const auto input = write_scenario("huge-dff.yaml", R"(version: 1
hardware: {preset: v5e}
topology: {mesh: {X: 4, Y: 2}}
workload:
  kind: inference
  model: {preset: llama3-70b, d_ff: 1073741824}
  phase: decode
  batch: 8
  context_length: 1024
  weights: int8
  kv_cache: int8
  parallelism: {model: [X, Y]}
)");
  const auto r = run_podsim("run " + input.string() + " -o " + fresh_dir("huge-dff-out").string());
  INFO(r.out << r.err);
  CHECK(r.out.find("smallest slice 0 chips") == std::string::npos);
  // Refused as not fitting HBM (issue 42), saying the weights alone do not; with --allow-oom the
  // table says no slice holds them.
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("the weights alone do not") != std::string::npos);
  const auto allowed = run_podsim("run " + input.string() + " -o " + fresh_dir("huge-dff-out").string() + " --allow-oom");
  CHECK(allowed.out.find("smallest slice 0 chips") == std::string::npos);
  if (allowed.exit_code == 0) CHECK(allowed.out.find("no slice of up to 8192 chips holds the weights") != std::string::npos);
  else CHECK(allowed.exit_code == 2);
}

TEST_CASE("messages name the --set, the form of a size, a directory, an -o that is a file", "[cli]") {
  const auto input = write_scenario("tiny.yaml", kTiny);
  SECTION("a list-index --set is blamed as the --set, not the file's 1:1") {
    const auto r = run_podsim("run " + input.string() + " --set " + sh("workload.operations.0.bytes=[4096]") + " -o " +
                              fresh_dir("set-out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("--set workload.operations.0.bytes=[4096]") != std::string::npos);
    CHECK(r.err.find("tiny.yaml:1:1") == std::string::npos);
  }
  SECTION("0x10 as a size is not a size, not 'not positive'") {
    const auto r = run_podsim("run " + input.string() + " --set workload.operations.0.bytes=0x10 -o " +
                              fresh_dir("hex-out").string());
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("hexadecimal") != std::string::npos);
    CHECK(r.err.find("must be positive") == std::string::npos);
  }
  SECTION("a directory as the scenario, or a measurement's scenario") {
    const auto dir = made_dir("a-directory.yaml");
    const auto run = run_podsim("run " + dir.string() + " -o " + fresh_dir("dir-out").string());
    CHECK(run.exit_code == 2);
    CHECK(run.err.find("directory") != std::string::npos);
    const auto measurements = write_scenario("measurements.yaml", "version: 1\nmeasurements:\n  - {name: a, scenario: " +
                                                                      dir.string() +
                                                                      ", field: total_time_s, measured: \"1 us\"}\n");
    const auto cal = run_podsim("calibrate " + measurements.string() + " -o " + (fresh_dir("cal-out") / "p.yaml").string());
    CHECK(cal.exit_code == 2);
    CHECK(cal.err.find("a directory, not a scenario file") != std::string::npos);
    CHECK(cal.err.find("no such scenario file") == std::string::npos);
    const auto as_file = run_podsim("calibrate " + dir.string());
    CHECK(as_file.exit_code == 2);
    CHECK(as_file.err.find("directory") != std::string::npos);
  }
  SECTION("an existing file as the output directory") {
    const auto file = made_dir("out-is-a-file") / "not-a-dir";
    std::ofstream(file) << "x";
    for (const std::string command : {"sweep", "run", "perf", "compare"}) {
      INFO(command);
      const auto r = run_podsim(command + " " + input.string() + (command == "compare" ? " --topologies 4" : "") +
                                " -o " + file.string() + (command == "sweep" ? " --set workload.operations.0.bytes=1K,2K" : ""));
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("key '-o'") != std::string::npos);
      CHECK(r.err.find("not a directory") != std::string::npos);
      CHECK(r.err.find("filesystem error") == std::string::npos);
      CHECK(lines_of(r.err) == 1);
    }
    const auto empty = run_podsim("run " + input.string() + " -o ''");
    CHECK(empty.exit_code == 2);
    CHECK(empty.err.find("key '-o': an empty path") != std::string::npos);
  }
}

TEST_CASE("sweep --emit slurm prints its collect command shell-quoted", "[cli]") {
  const auto dir = made_dir("it's a dir");
  const auto input = dir / "tiny.yaml";
  std::ofstream(input) << kTiny;
  const auto out = dir / "out put";
  const std::string set = "workload.operations.0.bytes=1K,2K";
  const auto r = run_podsim("sweep " + sh(input.string()) + " --set " + sh(set) + " -o " + sh(out.string()) + " --emit slurm");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const size_t at = r.out.find("  podsim sweep ");
  REQUIRE(at != std::string::npos);
  const std::string command = r.out.substr(at + 2, r.out.find('\n', at) - at - 2);
  auto quoted = [](const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
  };
  CHECK(command == "podsim sweep " + quoted(input.string()) + " --set " + quoted(set) + " -o " + quoted(out.string()) +
                       " --collect");
  CHECK(r.out.find("\n  sbatch " + quoted((out / "sweep.sbatch").string()) + "\n") != std::string::npos);
}

TEST_CASE("control characters in names are escaped in tables and messages", "[cli]") {
  // YAML's "\e" is ESC: a name that would recolour the terminal if printed raw.
  std::string text = kTiny;
  text.insert(text.find("hardware"), "name: \"evil\\e[31m\\rname\"\n");
  const auto input = write_scenario("evil.yaml", text);
  struct Case {
    std::string args;
    int exit_code;
  };
  for (const auto& c : std::vector<Case>{
           {"run " + input.string() + " -o " + fresh_dir("evil-run").string(), 0},
           {"perf " + input.string() + " -b 1M -e 2M -o " + fresh_dir("evil-perf").string(), 0},
           {"run " + input.string() + " --set " + sh("workload.operations.0.axes=[\"\x1b[31mQ\"]") + " -o " +
                fresh_dir("evil-err").string(),
            2},
           {"run " + input.string() + " --fidelity " + sh("\x1b[31mfull"), 2}}) {
    INFO(c.args);
    const auto r = run_podsim(c.args);
    INFO(r.out << r.err);
    CHECK(r.exit_code == c.exit_code);
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK(r.out.find('\r') == std::string::npos);
    CHECK(r.err.find('\x1b') == std::string::npos);
    CHECK((r.out + r.err).find("\\x1b") != std::string::npos);
  }
}

TEST_CASE("a request trace that is not CSV is quoted in a short, escaped excerpt", "[cli]") {
  const auto dir = made_dir("not-csv");
  const std::string secret = "root:$6$abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ\x1b[0m:19000:0:99999:7:::";
  std::ofstream(dir / "shadow") << secret << "\nbin:*:19000:0:99999:7:::\n";
  const auto input = write_scenario("trace.yaml", "version: 1\nhardware: {preset: v5e}\n"
                                                  "topology: {mesh: {X: 4, Y: 4}}\nworkload:\n  kind: serving\n"
                                                  "  model: llama3-70b\n  weights: int8\n  kv_cache: int8\n"
                                                  "  requests:\n    trace: " + (dir / "shadow").string() + "\n");
  const auto r = run_podsim("run " + input.string() + " -o " + (dir / "out").string());
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find((dir / "shadow").string() + ":1:") != std::string::npos);
  CHECK(r.err.find(secret.substr(0, 20)) != std::string::npos);
  CHECK(r.err.find(secret.substr(40, 12)) == std::string::npos);   // not the rest of the line
  CHECK(r.err.find('\x1b') == std::string::npos);
  CHECK(lines_of(r.err) == 1);
}

TEST_CASE("bench --list: each perturbed row is a podsim run of a shipped scenario", "[cli]") {
  const auto listed = run_podsim("bench --list");
  REQUIRE(listed.exit_code == 0);
  std::istringstream lines(listed.out);
  int rows = 0;
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    const auto at = line.find("build/podsim run 'scenarios/");
    REQUIRE(at != std::string::npos);
    const auto file = line.substr(at + 18, line.find('\'', at + 18) - at - 18);
    CHECK(std::filesystem::exists(source_path(file)));
    ++rows;
  }
  CHECK(rows == 7);   // issue 27's table
  // Each row's scenario loads with its overrides: the 64-slice row, the largest, as a run
  // refused by a tiny time limit (what it would take is named, nothing is simulated).
  const auto refused = run_podsim("run " + source_path("scenarios/training_llama2_13b_fsdp1024_tp4.yaml") +
                                  " --set topology.slices=64 --set workload.parallelism.dcn_data=true"
                                  " --set workload.batch_tokens=201326592 --max-time '1 s' -o " +
                                  (std::filesystem::temp_directory_path() / "podsim-bench-list").string());
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("(of 262144)") != std::string::npos);
  CHECK(run_podsim("bench --suite nonsense").exit_code == 2);
}
