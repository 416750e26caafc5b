// podsim command line: run, compare, sweep, perf, validate, plan, calibrate, capacity, presets, bench.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <thread>
#include <optional>
#include <sstream>
#include <cstdio>
#include <iostream>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "sim/commands/bench.hpp"
#include "sim/commands/capacity.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/commands/cli_suggest.hpp"
#include "sim/commands/compare.hpp"
#include "sim/commands/calibrate.hpp"
#include "sim/commands/calibration_report.hpp"
#include "sim/commands/validate_measured.hpp"
#include "sim/commands/perf.hpp"
#include "sim/commands/plan_inputs.hpp"
#include "sim/commands/planner.hpp"
#include "sim/commands/plan_slurm.hpp"
#include "sim/commands/run_command.hpp"
#include "sim/commands/straggler_draws.hpp"
#include "sim/commands/sweep.hpp"
#include "sim/commands/validate.hpp"
#include "sim/commands/preflight_check.hpp"
#include "sim/engine/run.hpp"
#include "sim/report/output_files.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/units.hpp"

using namespace podsim;

namespace {

constexpr int kExitBadInput = 2;

bool quiet_mode = false;   // -q: errors only, no warnings, no progress

// Tables and paths as the terminal gets them: names from input files with their control
// characters escaped, line breaks kept.
std::string shown(const std::string& text) { return terminal_safe(text, true); }

void set_verbosity(int verbose, bool quiet) {
  // Logs and progress go to stderr; stdout carries results only.
  quiet_mode = quiet;
  spdlog::set_default_logger(spdlog::stderr_color_mt("podsim"));
  spdlog::set_pattern("podsim: %l: %v");
  spdlog::set_level(quiet           ? spdlog::level::err
                    : verbose >= 2 ? spdlog::level::debug
                    : verbose == 1 ? spdlog::level::info
                                   : spdlog::level::warn);
}

// Progress redraws a line on a terminal; otherwise (or with -q) it goes to the info log.
bool stderr_is_terminal() { return !quiet_mode && ::isatty(STDERR_FILENO) != 0; }

// "k of N points, ETA": redrawn on a terminal, a log line otherwise (-v shows it).
std::function<void(int, int, double)> points_progress(const char* what, const char* noun = "points") {
  return [what, noun](int finished, int total, double eta_s) {
    std::string line = std::string(what) + ": " + std::to_string(finished) + " of " + std::to_string(total) + " " + noun;
    if (eta_s >= 0 && finished < total) line += ", about " + human_time(eta_s) + " left";
    if (stderr_is_terminal()) {
      std::fprintf(stderr, "\33[2K\r%s%s", line.c_str(), finished == total ? "\n" : "");
    } else {
      spdlog::info("{}", line);
    }
  };
}

// Ctrl-C (SIGINT) or SIGTERM during a sweep or a compare: the points under way are killed and
// recorded as interrupted (the next sweep runs them again), sweep.csv is written for this grid,
// and podsim exits 128 + the signal, as a shell reports a command the signal ended. A second
// signal ends podsim at once (SA_RESETHAND).
volatile std::sig_atomic_t stop_signal = 0;

extern "C" void on_stop_signal(int signal) { stop_signal = signal; }

void handle_stop_signals() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;   // no SA_RESTART: the sweep's waitpid returns EINTR and asks again
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() { return stop_signal != 0; }

// After a sweep or compare a signal stopped: its exit status, and where its rows are.
int interrupted_exit(const std::string& csv) {
  std::cerr << "podsim: interrupted by " << (stop_signal == SIGINT ? "SIGINT" : "SIGTERM")
            << ": the points under way were stopped and are marked 'interrupted' in " << shown(csv)
            << "; running the same command again runs them\n";
  return 128 + static_cast<int>(stop_signal);
}

// A -j value: 0 (the default) for every core.
int all_cores_unless(int jobs) {
  return jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::vector<ScenarioOverride> parse_overrides(const std::vector<std::string>& sets) {
  std::vector<ScenarioOverride> overrides;
  for (const auto& s : sets) {
    const SweepAxis axis = parse_set_option(s);
    if (axis.values.size() != 1)
      throw InputError({"--set", 0, 0}, axis.key, s.substr(s.find('=') + 1),
                       "one value for podsim run; expected podsim sweep for several");
    overrides.push_back({axis.key, axis.values[0]});
  }
  return overrides;
}

// A sweep with a failed point failed: a script must not read its CSV as complete. The first
// failure is printed (the others are in sweep.csv), as make names the first target that failed.
int failed_points_exit(const SweepCounts& rows, size_t points) {
  std::string message = rows.first_error;   // the point's own stderr line, "podsim: error: ..."
  if (message.rfind("podsim: error: ", 0) == 0) message.erase(0, std::string("podsim: error: ").size());
  std::cerr << "podsim: error: " << rows.failed << " of " << points << " points failed (each one's error is in "
            << "sweep.csv); the first, point " << rows.first_failed << " (" << terminal_safe(rows.first_failed_sets)
            << "): " << terminal_safe(message) << "\n";
  return 1;
}

int sweep_command(const std::string& scenario_path, const std::vector<std::string>& sets, const std::string& out_dir,
                  int jobs, const std::string& emit, bool collect, std::optional<int> point) {
  SweepOptions options;
  options.scenario_path = scenario_path;
  options.out_dir = out_dir;
  for (const auto& s : sets) options.axes.push_back(parse_set_option(s));
  options.jobs = all_cores_unless(jobs);
  options.podsim_binary = self_binary();
  options.on_progress = points_progress("sweep");
  load_scenario(scenario_path);   // the base scenario must load; points may still fail
  require_output_directory(out_dir, "-o");
  const size_t points = sweep_grid(options.axes).size();
  if (!emit.empty()) {
    const auto script = emit_slurm(options);
    // Quoted as the .sbatch quotes it, so that the line pastes into a shell as one command.
    std::string command = "podsim sweep " + shell_quote(scenario_path);
    for (const auto& s : sets) command += " --set " + shell_quote(s);
    command += " -o " + shell_quote(out_dir) + " --collect";
    std::cout << "wrote " << shown(script) << " (" << points << " array tasks); submit it with\n  sbatch "
              << shown(shell_quote(script)) << "\nthen, when the array is done, run:\n  " << shown(command) << "\n";
    return 0;
  }
  if (point) {
    run_sweep_point(options, *point);
    return 0;
  }
  if (collect) {
    const SweepCounts counts = collect_sweep(options);
    std::cout << "wrote " << shown(out_dir) << "/sweep.csv: " << points - counts.missing << " of " << points << " points";
    if (counts.missing > 0) std::cout << " (" << counts.missing << " not run yet, interrupted, or run on other inputs)";
    std::cout << "\n";
    if (counts.failed > 0) return failed_points_exit(counts, points);
    return counts.missing > 0 ? 1 : 0;
  }
  handle_stop_signals();
  options.stop_requested = stop_requested;
  const auto progress = run_sweep(options);
  if (stop_requested()) return interrupted_exit(out_dir + "/sweep.csv");
  std::cout << progress.points << (progress.points == 1 ? " point: " : " points: ") << progress.already_done << " already done, " << progress.ran
            << " run (" << progress.failed << " failed";
  if (progress.interrupted > 0) std::cout << ", " << progress.interrupted << " killed by a signal";
  if (progress.rows.does_not_fit > 0) std::cout << "; " << progress.rows.does_not_fit << " do not fit HBM";
  std::cout << ", recorded in sweep.csv)\nwrote " << shown(out_dir) << "/sweep.csv\n";
  if (progress.succeeded == 0) {
    std::cerr << "podsim: error: no point of the sweep succeeded (each point's error is in sweep.csv)\n";
    return 1;
  }
  if (progress.rows.failed > 0) return failed_points_exit(progress.rows, progress.points);
  return 0;
}

// Draws `png` with scripts/`script_name` beside this binary, run without a shell (a scenario's
// name is one argument, whatever it holds), and says what it wrote, or why it could not.
void draw_plot(const std::string& script_name, const std::vector<std::string>& arguments, const std::string& png) {
  const std::string script = find_script(script_name);
  if (script.empty()) {
    std::cout << "no " << shown(png) << ": " << script_name << " is not beside " << shown(self_binary())
              << " (nor in ../share/podsim/scripts)\n";
    return;
  }
  std::vector<std::string> argv{"python3", script};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const ChildResult plot = run_child(argv);
  if (plot.succeeded()) {
    std::cout << "wrote " << shown(png) << "\n";
  } else if (plot.error.find("No module named 'matplotlib'") != std::string::npos) {
    std::cout << "no " << shown(png) << ": python3-matplotlib is not installed (scripts/install-deps.sh installs it)\n";
  } else {
    std::cout << "no " << shown(png) << ": python3 " << shown(script) << " failed: " << shown(plot.describe()) << "\n";
  }
}

int compare_command(const std::string& scenario_path, const std::string& topologies, const std::string& chips,
                    const std::string& out_dir, int jobs) {
  CompareOptions options;
  options.scenario_path = scenario_path;
  options.out_dir = out_dir;
  auto split = [](const std::string& text) {
    std::vector<std::string> items;
    std::stringstream in(text);
    for (std::string item; std::getline(in, item, ',');)
      if (!item.empty()) items.push_back(item);
    return items;
  };
  options.topologies = split(topologies);
  options.chips = split(chips);
  options.jobs = all_cores_unless(jobs);
  options.podsim_binary = self_binary();
  options.on_progress = points_progress("compare");
  handle_stop_signals();
  options.stop_requested = stop_requested;
  require_output_directory(out_dir, "-o");
  std::string name;
  const auto rows = run_compare(options, &name);
  std::cout << shown(compare_table(rows));
  const std::string csv = out_dir + "/compare.csv", png = out_dir + "/compare.png";
  std::cout << "wrote " << shown(csv) << "\n";
  if (stop_requested()) return interrupted_exit(csv);
  if (std::none_of(rows.begin(), rows.end(),
                   [](const CompareRow& r) { return r.status == "ok" || r.status == "does_not_fit"; })) {
    std::cerr << "podsim: error: no run of the comparison succeeded (each one's error is in the table and compare.csv)\n";
    return 1;
  }
  draw_plot("plot_compare.py", {csv, "-o", png, "--title", name}, png);
  return 0;
}

// A rate option ("20 /s", as scenarios write rates); 0 when not given.
double rate_option(const char* name, const std::string& text) {
  if (text.empty()) return 0;
  double rate = 0;
  try {
    rate = parse_rate_per_s(text);
  } catch (const std::invalid_argument& e) {
    throw InputError({"command line", 0, 0}, name, text, std::string(e.what()) + "; expected a rate, e.g. \"20 /s\"");
  }
  if (!std::isfinite(rate)) throw InputError({"command line", 0, 0}, name, text, "expected a finite rate, e.g. \"20 /s\"");
  return rate;
}

// `podsim capacity`: the options read, the search (capacity.cpp), the table, and capacity.png
// drawn from capacity.csv as compare's plot is.
int capacity_command(CapacityOptions options, const std::vector<std::string>& slos, const std::vector<std::string>& sets,
                     const std::vector<std::string>& rates, const std::string& out_dir) {
  for (const auto& text : slos) options.slos.push_back(parse_latency_slo(text));
  options.overrides = parse_overrides(sets);
  options.rate_start_per_s = rate_option("--rate-start", rates[0]);
  options.rate_min_per_s = rate_option("--rate-min", rates[1]);
  options.rate_max_per_s = rate_option("--rate-max", rates[2]);
  require_output_directory(out_dir, "-o");
  options.on_simulation = [](const std::string& line) { spdlog::info("capacity: {}", line); };
  const CapacityReport report = run_capacity(options, out_dir);
  std::cout << shown(capacity_table(report, options));
  const std::string csv = out_dir + "/capacity.csv", png = out_dir + "/capacity.png";
  std::cout << "wrote " << shown(csv) << " and " << shown(out_dir) << "/capacity.json\n";
  draw_plot("plot_capacity.py", {csv, "-o", png, "--title", report.scenario_name}, png);
  return 0;
}

// --max-memory and --max-time: sizes and times as scenario files write them.
PreflightLimits preflight_limits(const std::string& max_memory, const std::string& max_time) {
  PreflightLimits limits;
  try {
    if (!max_memory.empty()) limits.max_memory_bytes = static_cast<double>(parse_bytes(max_memory));
  } catch (const std::invalid_argument& e) {
    throw InputError({"command line", 0, 0}, "--max-memory", max_memory, std::string(e.what()) + "; expected a size, e.g. \"64 GiB\"");
  }
  try {
    if (!max_time.empty()) limits.max_wall_s = parse_time_s(max_time);
  } catch (const std::invalid_argument& e) {
    throw InputError({"command line", 0, 0}, "--max-time", max_time, std::string(e.what()) + "; expected a time, e.g. \"48 h\"");
  }
  if (!max_time.empty() && !(limits.max_wall_s > 0))
    throw InputError({"command line", 0, 0}, "--max-time", max_time, "expected a positive time, e.g. \"48 h\"");
  return limits;
}

// `run --draws N`: the step-time distribution over draws of the scenario's stragglers, here or
// as a Slurm job array (--emit slurm, then --task per array task, then --collect).
struct DrawsRequest {
  int draws = 0, jobs = 0;
  std::string emit;
  std::optional<int> task;
  bool collect = false;
};

int draws_command(const Scenario& scenario, const DrawsRequest& request, const std::string& scenario_path,
                  const std::vector<std::string>& sets, const std::string& out_dir, const RunCommandOptions& options) {
  DrawsOutputs outputs;
  if (!request.emit.empty()) {
    std::string command = shell_quote(self_binary()) + " run " + shell_quote(std::filesystem::absolute(scenario_path).string());
    for (const auto& set : sets) command += " --set " + shell_quote(set);
    outputs = emit_draws_slurm(scenario, request.draws, out_dir, command);
  } else if (request.task) {
    outputs = run_draws_task(scenario, request.draws, *request.task, out_dir, options);
  } else if (request.collect) {
    outputs = collect_draws(scenario, request.draws, out_dir);
  } else {
    outputs = run_straggler_draws(scenario, request.draws, out_dir, options, all_cores_unless(request.jobs));
  }
  std::cout << shown(outputs.table) << "wrote ";
  for (size_t i = 0; i < outputs.files.size(); ++i) std::cout << (i > 0 ? ", " : "") << shown(outputs.files[i]);
  std::cout << "\n";
  return 0;
}

int run_command(const std::string& scenario_path, const std::vector<std::string>& sets, const std::string& out_dir,
                const std::string& fidelity, const std::string& engine, const std::string& detail, bool reproducible,
                bool allow_oom, bool strict, bool trace_gzip, const PreflightLimits& limits, const DrawsRequest& draws) {
  Scenario scenario = load_scenario(scenario_path, parse_overrides(sets));
  for (const std::string& warning : scenario.warnings) spdlog::warn("{}", terminal_safe(warning));
  // --strict refuses a plan that does not fit even where the file says strict_memory: false.
  if (strict && scenario.kind() == WorkloadKind::Training) scenario.training().strict_memory = true;
  if (strict && scenario.kind() == WorkloadKind::Inference) scenario.inference().strict_memory = true;
  require_output_directory(out_dir, "-o");
  RunCommandOptions options;
  options.fidelity = fidelity == "full" ? Fidelity::Full : Fidelity::Auto;
  options.engine = engine == "native" ? ReplayEngine::Native
                   : engine == "simgrid" ? ReplayEngine::SimGrid
                                         : ReplayEngine::Auto;
  options.allow_oom = allow_oom;
  options.limits = limits;
  if (draws.draws > 0) return draws_command(scenario, draws, scenario_path, sets, out_dir, options);
  if (!draws.emit.empty() || draws.task || draws.collect)
    throw InputError({"command line", 0, 0}, draws.collect ? "--collect" : draws.task ? "--task" : "--emit", "",
                     "applies to --draws N; expected --draws beside it");
  options.record_hops = detail == "hops";
  options.reproducible = reproducible;
  options.trace_gzip = trace_gzip;
  if (stderr_is_terminal()) {
    const std::string name = terminal_safe(scenario.name);
    // Rounded down, so that 100% means done. `name` by value: it ends with this block.
    options.progress = [name](const SimulationProgress& p) {
      std::fprintf(stderr, "\33[2K\rsimulating %s: %d%% of the work, %.1f s", name.c_str(),
                   static_cast<int>(std::floor(100 * p.fraction())), p.wall_s);
    };
    options.serving_progress = [name](const SimulationProgress& p) {
      std::fprintf(stderr, "\33[2K\rserving %s: %llu of %llu requests, %.1f s", name.c_str(),
                   static_cast<unsigned long long>(p.done), static_cast<unsigned long long>(p.total), p.wall_s);
    };
  }
  options.limits = limits;
  RunCommandOutputs outputs;
  try {
    outputs = run_to_directory(scenario, out_dir, options);
  } catch (...) {
    if (stderr_is_terminal()) std::fprintf(stderr, "\33[2K\r");   // an error starts on a clean line
    throw;
  }
  if (stderr_is_terminal()) std::fprintf(stderr, "\33[2K\r");
  std::cout << shown(outputs.table) << "wrote ";
  for (size_t i = 0; i < outputs.files.size(); ++i) std::cout << (i > 0 ? ", " : "") << shown(outputs.files[i]);
  std::cout << "\n";
  return 0;
}

// Writes one file at `path` (its folder made if missing), whole or not at all; returns its path.
// `option` ("-o", "--csv") names the path's origin in messages.
std::string write_file_at(const std::string& path, const std::string& content, const std::string& option) {
  const std::filesystem::path file(path);
  const std::string dir = file.has_parent_path() ? file.parent_path().string() : ".";
  if (file.has_parent_path()) ensure_directory(dir, option);
  OutputFiles files(dir, option);
  files.add(file.filename().string(), content);
  files.commit();
  return files.path(file.filename().string());
}

// validate --measured: each measurement against the ideal machine and its profile.
int validate_measured_command(const std::string& measured, const ProfileChoice& profiles, const std::string& csv_path,
                              const std::string& markdown_path, const std::string& plot_path, int jobs, bool held_out) {
  const MeasurementFile file = load_measurements(measured);
  check_profile_choice(file, profiles);
  if (!csv_path.empty()) require_file_destination(csv_path, "--csv");
  if (!markdown_path.empty()) require_file_destination(markdown_path, "--markdown");
  if (!plot_path.empty()) require_file_destination(plot_path, "--plot");
  if (held_out && !profiles.any())
    throw InputError({"command line", 0, 0}, "--held-out", "",
                     "held out of which fit? expected it with --profile FILE or --profiles DIR");
  const auto rows = compare_measurements(file, profiles, all_cores_unless(jobs), held_out);
  std::cout << shown(measured_table(file, profiles, rows));
  if (!markdown_path.empty()) {
    const std::string written = write_file_at(markdown_path, measured_markdown(file, rows), "--markdown");
    std::cout << "wrote " << shown(written) << "\n";
  }
  if (!csv_path.empty()) {
    // Written first: `cout << "wrote " << write_file_at(...)` printed "wrote " before a failed write.
    const std::string written = write_file_at(csv_path, measured_csv(rows), "--csv");
    std::cout << "wrote " << shown(written) << "\n";
  }
  if (!plot_path.empty()) {
    // The plot script reads the CSV: --csv's, or one beside the plot, removed after.
    const std::string csv = csv_path.empty() ? plot_path + ".csv" : csv_path;
    if (csv_path.empty()) write_file_at(csv, measured_csv(rows), "--plot");
    draw_plot("plot_measured.py", {csv, "-o", plot_path}, plot_path);
    if (csv_path.empty()) std::filesystem::remove(csv);
  }
  return 0;
}

int validate_command(const std::string& csv_path, bool quick, double prediction_skew) {
  if (!csv_path.empty()) require_file_destination(csv_path, "--csv");
  ValidationOptions options;
  options.quick = quick;
  options.prediction_skew = prediction_skew;
  if (stderr_is_terminal()) {
    options.progress = [](const std::string& what) { std::fprintf(stderr, "\33[2K\rvalidating %s", what.c_str()); };
  } else {
    options.progress = [](const std::string& what) { spdlog::info("validating {}", what); };
  }
  const auto result = run_validation(options);
  const auto& rows = result.rows;
  if (stderr_is_terminal()) std::fprintf(stderr, "\33[2K\r");
  int book = 0, explained = 0;
  double worst_closed = 0, worst_fluid = 0;
  std::vector<const ValidationRow*> unexplained;
  for (const auto& r : rows) {
    if (r.status == RowStatus::Book) ++book;
    else if (r.status == RowStatus::Explained) ++explained;
    else unexplained.push_back(&r);
    if (r.method == "closed form") worst_closed = std::max(worst_closed, std::fabs(r.predicted_error));
    if (r.method == "fluid model") worst_fluid = std::max(worst_fluid, std::fabs(r.predicted_error));
  }
  std::printf("%-15s %-4s %-13s %-17s %10s %10s %10s %10s %9s %9s  %s\n", "collective", "axes", "mesh", "wraparound",
              "bytes", "book", "simulated", "predicted", "vs book", "vs pred", "note");
  auto print_row = [](const ValidationRow& r) {
    auto pct = [](double e) { return std::fabs(e) < 5e-7 ? 0.0 : 100 * e; };
    std::printf("%-15s %-4s %-13s %-17s %10s %10s %10s %10s %+8.2f%% %+8.2f%%  %s\n", r.collective.c_str(),
                r.axes.c_str(), r.mesh.c_str(), r.wraparound.c_str(), human_bytes(r.bytes).c_str(),
                human_time(r.analytic_s).c_str(), human_time(r.simulated_s).c_str(),
                r.predicted_s > 0 ? human_time(r.predicted_s).c_str() : "-", pct(r.rel_error), pct(r.predicted_error),
                r.note.c_str());
  };
  for (const auto& r : rows) print_row(r);
  std::printf("%zu rows: %d within 1%% of the book (and of the prediction), %d outside with their effects predicted "
              "within 1%%, %zu unexplained; max |simulated - predicted|: %.4f%% by closed form, %.4f%% by the fluid "
              "model\n",
              rows.size(), book, explained, unexplained.size(), 100 * worst_closed, 100 * worst_fluid);
  for (const auto& s : result.skipped) std::printf("not replayed: %s\n", s.c_str());
  if (!csv_path.empty()) {
    std::printf("wrote %s\n", shown(write_file_at(csv_path, validation_csv(rows), "--csv")).c_str());
  }
  if (unexplained.empty()) return 0;
  std::printf("unexplained rows (simulated more than 1%% from the prediction):\n");
  for (const auto* r : unexplained) print_row(*r);
  return 1;
}

// plan.csv, written whole; plan.png, drawn from it after (draw_plan_plot), goes with it: an
// older one would show other plans if the plot fails.
void write_plan_csv(const PlannerResult& result, const std::string& out_dir) {
  OutputFiles files(out_dir, "-o");
  files.owns({"plan.csv", "plan.png"});
  files.add("plan.csv", planner_csv(result));
  files.commit();
}

// plan.png beside plan.csv (scripts/plot_plan.py), with the chip's HBM as its memory line.
void draw_plan_plot(const Scenario& scenario, const std::string& out_dir) {
  const std::string png = out_dir + "/plan.png";
  char hbm[32];
  std::snprintf(hbm, sizeof hbm, "%.17g", scenario.topology.chip.hbm_bytes);
  draw_plot("plot_plan.py", {out_dir + "/plan.csv", "-o", png, "--hbm-bytes", hbm, "--title", scenario.name}, png);
}

// `plan --emit slurm`, `--task N`, `--collect`: the plan's simulations as a Slurm job array
// (plan_slurm.hpp).
struct PlanArrayRequest {
  std::string emit;
  std::optional<int> task;
  bool collect = false;
};

int plan_array_command(const Scenario& scenario, const std::string& scenario_path, const std::vector<std::string>& sets,
                       const std::string& out_dir, int top, const PlanArrayRequest& request) {
  const char* option = request.collect ? "--collect" : request.task ? "--task" : "--emit";
  if (out_dir.empty())
    throw InputError({"command line", 0, 0}, option, "", "expected -o DIR: the directory the job array's tasks write to");
  require_output_directory(out_dir, "-o");
  const std::string inputs = scenario_inputs(scenario_path, parse_overrides(sets));
  PlanArrayOutputs outputs;
  if (!request.emit.empty()) {
    std::string command = shell_quote(self_binary()) + " plan " + shell_quote(std::filesystem::absolute(scenario_path).string());
    for (const auto& set : sets) command += " --set " + shell_quote(set);
    outputs = emit_plan_slurm(scenario, out_dir, command);
  } else if (request.task) {
    outputs = run_plan_task(scenario, inputs, *request.task, out_dir);
  } else {
    const PlannerResult result = collect_plan(scenario, inputs, out_dir);
    std::cout << shown(planner_table(scenario, result, top));
    require_some_plan_fits(scenario, result);
    write_plan_csv(result, out_dir);
    outputs.files = {out_dir + "/plan.csv"};
  }
  std::cout << shown(outputs.text) << "wrote ";
  for (size_t i = 0; i < outputs.files.size(); ++i) std::cout << (i > 0 ? ", " : "") << shown(outputs.files[i]);
  std::cout << "\n";
  if (request.collect) draw_plan_plot(scenario, out_dir);
  return 0;
}

int plan_command(const std::string& scenario_path, const std::vector<std::string>& sets, const std::string& out_dir,
                 int top, bool exhaustive, double budget_s, int jobs, const PlanArrayRequest& array) {
  const Scenario scenario = load_planner_scenario(scenario_path, parse_overrides(sets));
  require_training(scenario);
  if (!array.emit.empty() || array.task || array.collect)
    return plan_array_command(scenario, scenario_path, sets, out_dir, top, array);
  if (!out_dir.empty()) require_output_directory(out_dir, "-o");
  if (!out_dir.empty()) ensure_directory(out_dir, "-o");
  // plan.csv holds the ranking so far after every simulated plan (written whole, then renamed),
  // so an interrupted plan keeps what it found.
  auto write_csv = [&](const PlannerResult& so_far) { write_plan_csv(so_far, out_dir); };
  std::function<void(const PlannerResult&)> partial;
  if (!out_dir.empty()) partial = write_csv;
  // Simulate until the first `top` (10 by default) are certain; --exhaustive simulates all.
  const int keep = exhaustive ? 0 : (top > 0 ? top : 10);
  const PlannerResult result =
      plan_training(scenario, points_progress("plan", "plans"), partial, keep, exhaustive ? 0.0 : budget_s,
                    all_cores_unless(jobs));
  std::cout << shown(planner_table(scenario, result, top));
  require_some_plan_fits(scenario, result);
  if (!out_dir.empty()) {
    write_csv(result);
    std::cout << "wrote " << shown(out_dir) << "/plan.csv\n";
    draw_plan_plot(scenario, out_dir);
  }
  return 0;
}

int perf_command(const std::string& scenario_path, const std::vector<std::string>& sets, const std::string& out_dir,
                 const PerfOptions& given) {
  const Scenario scenario = load_scenario(scenario_path, parse_overrides(sets));
  require_output_directory(out_dir, "-o");
  PerfOptions options = given;
  options.on_progress = points_progress("perf", "sizes");
  const PerfResult result = run_perf(scenario, options);
  ensure_directory(out_dir, "-o");
  OutputFiles files(out_dir);
  files.add("perf.csv", perf_csv(result));
  files.commit();
  std::cout << shown(perf_table(result));
  // A comment line, so that the output still parses as nccl-tests' does.
  std::cout << "# wrote " << shown(files.path("perf.csv")) << "\n";
  return 0;
}

std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  for (size_t begin = 0; begin <= text.size();) {
    const size_t comma = text.find(',', begin);
    const std::string item = text.substr(begin, comma - begin);
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return items;
}

// One profile: OUT is its file. Several: OUT is a directory of PROFILE.yaml, one per profile,
// written together or not at all.
std::string write_profiles(const MeasurementFile& file, const CalibrationResult& result, const std::string& out_path,
                           const std::string& name) {
  if (result.profiles.size() == 1)
    return write_file_at(out_path, calibration_profile_yaml(file, result, result.profiles.front(), name), "-o");
  ensure_directory(out_path, "-o");
  OutputFiles files(out_path, "-o");
  for (const auto& profile : result.profiles)
    files.add(profile.name + ".yaml", calibration_profile_yaml(file, result, profile, profile.name));
  files.commit();
  return out_path + "/{" + [&] {
    std::string names;
    for (const auto& profile : result.profiles) names += (names.empty() ? "" : ",") + profile.name;
    return names;
  }() + "}.yaml";
}

int calibrate_command(const std::string& measurements_path, std::string out_path, const std::string& fit,
                      const std::string& shared, const std::string& fixed, const std::string& start,
                      const std::string& rows,
                      const std::string& hop_model, std::string name, bool leave_one_out, int jobs) {
  CalibrationOptions options;
  options.fit = comma_list(fit);
  options.shared = comma_list(shared);
  parse_fixed_parameters(fixed, options);
  parse_start_values(start, options);
  if (options.fit.empty() && options.shared.empty()) {
    std::string known;
    for (const auto& p : calibration_parameters()) known += (known.empty() ? "" : ", ") + p.name;
    throw InputError({"command line", 0, 0}, "--fit", fit.empty() ? "\"\"" : fit,
                     "no parameter to fit; expected one or more of " + known + ", comma-separated (or --shared ones)");
  }
  MeasurementFile file = load_measurements(measurements_path);
  if (!rows.empty()) select_measurements(file, comma_list(rows), "--rows");
  const bool several = file.profile_names().size() > 1;
  if (several && !name.empty())
    throw InputError({"command line", 0, 0}, "--name", name,
                     "one name for a file of " + std::to_string(file.profile_names().size()) +
                         " profiles; expected none (each profile is named by its rows' profile:)");
  if (out_path.empty()) out_path = several ? "profiles" : "profile.yaml";
  // Before the fit, not after it.
  if (several) require_output_directory(out_path, "-o");
  else require_file_destination(out_path, "-o");
  if (hop_model == "floor") options.hop_model = HopModel::Floor;
  if (hop_model == "additive") options.hop_model = HopModel::Additive;
  options.leave_one_out = leave_one_out;
  options.jobs = all_cores_unless(jobs);
  const bool terminal = stderr_is_terminal();
  options.progress = [&](const std::string& line) {
    if (terminal) std::fprintf(stderr, "\33[2K\rcalibrate: %s", terminal_safe(line).c_str());
  };
  const CalibrationResult result = calibrate(file, options);
  if (terminal) std::fputs("\33[2K\r", stderr);
  std::cout << shown(calibration_table(file, result));
  const std::string written = write_profiles(file, result, out_path, name.empty() ? file.profile_names().front() : name);
  std::cout << "wrote " << shown(written) << "\n";
  return 0;
}

int presets_command() {
  std::printf("%-5s %14s %14s %9s %14s %14s %6s %9s %6s %14s %14s %s\n", "chip", "bf16", "int8", "HBM", "HBM bw",
              "ICI/link/dir", "links", "hop lat", "host", "DCN/host", "PCIe", "wraparound rule");
  for (const auto& c : chip_presets()) {
    std::string host_shape;
    for (int e : c.host_shape) host_shape += (host_shape.empty() ? "" : "x") + std::to_string(e);
    std::printf("%-5s %14s %14s %9s %14s %14s %6d %9s %6s %14s %14s %s\n", c.name.c_str(),
                human_flops(c.bf16_flops_per_s).c_str(), human_flops(c.int8_ops_per_s, "OP/s").c_str(),
                human_bytes(c.hbm_bytes).c_str(), human_bandwidth(c.hbm_bandwidth_Bps).c_str(),
                human_bandwidth(c.ici_bandwidth_Bps).c_str(), c.ici_links_per_neighbor, human_time(c.hop_latency_s).c_str(),
                host_shape.c_str(), human_bandwidth(c.dcn_bandwidth_per_host_Bps).c_str(),
                human_bandwidth(c.pcie_bandwidth_Bps).c_str(),
                c.wrap_rule == WrapRule::FullCubes ? "all axes on full 4x4x4 cubes" : "axes of size 16");
  }
  for (const ChipSpec& c : chip_presets())
    if (c.cores_per_chip > 1)
      std::printf("%s: each figure is one device's (JAX shows a chip as %d; ICI is a link's, each device gets 1/%d), "
                  "die-to-die %s%s\n",
                  c.name.c_str(), c.cores_per_chip, c.cores_per_chip, human_bandwidth(c.die_to_die_bandwidth_Bps).c_str(),
                  c.name == "tpu7x" ? "; alias ironwood" : "");
  std::printf("override any field in a scenario's hardware.overrides (docs/scenario-schema.md)\n");
  return 0;
}

int bench_command(BenchOptions options, bool list) {
  if (list) {
    for (const auto& line : perturbed_bench_commands()) std::printf("%s\n", line.c_str());
    return 0;
  }
  const bool compare_naive = options.compare_naive;
  const int repeat = options.repeat;
  std::printf("%-30s %-7s %6s %9s %9s %11s %9s %9s %10s %9s%s\n", "case", "mode", "chips", "simulated", "messages",
              "simulated", "wall", "sim wall", "msgs/s", "peak RSS", compare_naive ? "  plain replay  ratio" : "");
  options.on_row = [&](const BenchRow& r) {
    // A row of many simulations (the draws) has no one count of messages or simulated time.
    const bool one = r.messages > 0;
    std::printf("%-30s %-7s %6d %9d %9s %11s %7.2f s", r.name.c_str(), r.mode.c_str(), r.chips, r.simulated_chips,
                one ? std::to_string(r.messages).c_str() : "-", one ? human_time(r.simulated_time_s).c_str() : "-",
                r.wall_time_s);
    if (r.simulation_wall_s > 0) {
      std::printf(" %7.2f s %10.0f", r.simulation_wall_s, r.messages_per_s());
    } else {   // serving, draws: many simulations, none timed on its own
      std::printf(" %9s %10s", "-", "-");
    }
    if (r.peak_rss_bytes > 0) {
      std::printf(" %6.0f MB", r.peak_rss_bytes / 1e6);
    } else {
      std::printf(" %9s", "-");
    }
    if (r.naive_messages_per_s) {
      std::printf("  %10.0f  %5.2fx", *r.naive_messages_per_s, r.messages_per_s() / *r.naive_messages_per_s);
    } else if (compare_naive && r.mode == "full") {
      std::printf("  (the plain replay could not be run)");
    }
    std::printf("\n");
    std::fflush(stdout);
  };
  if (options.suite == "perturbed") {
    run_perturbed_bench(options);
    std::printf("every row as a podsim run command: podsim bench --list; plain replay: 16x16x16, measured once before the rows\n");
    return 0;
  }
  run_bench(options);
  std::printf("msgs/s: simulated messages per second of the replay's run loop (native where it covers the program, else SimGrid's; the plain replay times its own)\n");
  if (repeat > 1) {
    std::printf("full rows: the median of %d runs%s\n", repeat, compare_naive ? ", each after a plain replay; its rate the median too" : "");
  }
  return 0;
}

}  // namespace

// CLI11's NonNegativeNumber would do, but its message spells out DBL_MAX in 309 digits.
const CLI::Validator non_negative_whole(
    [](std::string& text) {
      long long value = 0;
      if (!CLI::detail::lexical_cast(text, value) || value < 0) return "value '" + text + "': expected a whole number >= 0";
      return std::string();
    },
    "NONNEGATIVE");

// CLI11's PositiveNumber lets nan and inf through: no comparison with nan fails.
const CLI::Validator finite_positive(
    [](std::string& text) {
      double value = 0;
      if (!CLI::detail::lexical_cast(text, value)) return "value '" + text + "': expected a number";
      return std::isfinite(value) && value > 0 ? std::string() : "value '" + text + "': expected a finite number > 0";
    },
    "POSITIVE");

int main(int argc, char** argv) {
  forward_termination_to_simulations();
  CLI::App app{"podsim: a discrete-event simulator of TPU-style accelerator pods"};
  app.set_version_flag("--version", std::string("podsim ") + PODSIM_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // -v works after the subcommand too
  int verbose = 0;
  app.add_flag("-v,--verbose", verbose, "more log output (-vv for debug)");
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "errors only: no warnings, no progress")->excludes("--verbose");

  auto* run = app.add_subcommand("run", "simulate a scenario; write summary.json, trace.json, operations.csv");
  std::string scenario_path, out_dir = "out", fidelity = "auto", detail = "collectives", engine = "auto";
  bool reproducible = false;
  run->add_option("scenario", scenario_path, "scenario YAML file")->required();
  run->add_option("-o,--output", out_dir, "output directory")->capture_default_str();
  run->add_option("--fidelity", fidelity, "auto: symmetry-reduced where exact; full: every chip")
      ->check(CLI::IsMember({"auto", "full"}))
      ->capture_default_str();
  run->add_option("--engine", engine,
                  "native: podsim's own event loop over the network model (ring collectives, AllToAlls and compute; equal to "
                  "simgrid on generated programs); simgrid: SimGrid's actors replay the hops; auto: native where it "
                  "covers the program")
      ->check(CLI::IsMember({"auto", "simgrid", "native"}))
      ->capture_default_str();
  run->add_option("--trace-detail", detail, "collectives: a span per collective per chip; hops: every hop too")
      ->check(CLI::IsMember({"collectives", "hops"}))
      ->capture_default_str();
  run->add_flag("--reproducible", reproducible, "write wall_time_s as 0 so outputs are byte-identical");
  bool trace_gzip = false;
  run->add_flag("--trace-gzip", trace_gzip, "write the trace gzipped, as trace.json.gz (Perfetto opens it directly)");
  bool allow_oom = false, strict = false;
  auto* allow_oom_flag =
      run->add_flag("--allow-oom", allow_oom,
                    "simulate a training or inference plan that does not fit in HBM (less the chip's headroom) "
                    "anyway, reported as fits_hbm: false; without it such a plan is an error (exit 1)");
  // Issue 42 made refusing the default; --strict stays, for old scripts and to overrule a file's
  // strict_memory: false. Beside --allow-oom it contradicts it.
  run->add_flag("--strict", strict, "refuse a plan that does not fit HBM even where the file says "
                                    "workload.strict_memory: false (refusing is the default since issue 42)")
      ->excludes(allow_oom_flag);
  std::vector<std::string> run_sets;
  run->add_option("--set", run_sets, "override a scenario value: key=value (dotted key, YAML value)");
  std::string max_memory, max_time;
  run->add_option("--max-memory", max_memory,
                  "refuse a run estimated to need more memory than this (default: the machine's), e.g. \"64 GiB\"");
  run->add_option("--max-time", max_time, "refuse a run estimated to take longer than this (default: 24 h), e.g. \"48 h\"");
  DrawsRequest run_draws;
  run->add_option("--draws", run_draws.draws,
                  "run N draws of the scenario's random stragglers; write draws.csv and draws.json (the step-time "
                  "distribution) instead of one run's files")
      ->check(non_negative_whole);
  run->add_option("-j,--jobs", run_draws.jobs, "with --draws: simulations at once (default: all cores)")
      ->check(non_negative_whole);
  run->add_option("--emit", run_draws.emit, "with --draws: write a Slurm job array (draws.sbatch) instead of running")
      ->check(CLI::IsMember({"slurm"}));
  int run_task = 0;
  auto* task_option = run->add_option("--task", run_task, "with --draws: run one task of the job array (a Slurm array task)")
                          ->check(non_negative_whole);
  auto* collect_flag =
      run->add_flag("--collect", run_draws.collect, "with --draws: merge the job array's tasks into draws.csv and draws.json");
  task_option->excludes(collect_flag);
  run->get_option("--emit")->excludes(task_option)->excludes(collect_flag);

  auto* compare = app.add_subcommand("compare", "run a scenario's workload on several meshes; table, CSV, PNG");
  std::string compare_scenario, topologies, compare_chips, compare_out = "out/compare";
  int compare_jobs = 0;
  compare->add_option("scenario", compare_scenario, "scenario YAML file")->required();
  compare->add_option("--topologies", topologies, "mesh shapes, e.g. 4x4x4,8x8,16x4 (default: its compare: block)");
  compare->add_option("--chips", compare_chips, "chip presets to cross with the shapes, e.g. v5e,v5p");
  compare->add_option("-o,--output", compare_out, "output directory")->capture_default_str();
  compare->add_option("-j,--jobs", compare_jobs, "runs at once (default: all cores)")->check(non_negative_whole);

  auto* sweep = app.add_subcommand("sweep", "run a scenario over the grid of --set values; write sweep.csv");
  std::string sweep_scenario, sweep_out = "out/sweep", emit;
  std::vector<std::string> sweep_sets;
  int jobs = 0, point = 0;
  bool collect = false;
  sweep->add_option("scenario", sweep_scenario, "scenario YAML file")->required();
  sweep->add_option("--set", sweep_sets, "key=v1,v2,...: one axis of the grid (repeatable)");
  sweep->add_option("-o,--output", sweep_out, "output directory")->capture_default_str();
  sweep->add_option("-j,--jobs", jobs, "points run at once (default: all cores)")->check(non_negative_whole);
  sweep->add_option("--emit", emit, "write a job script instead of running: slurm")->check(CLI::IsMember({"slurm"}));
  sweep->add_flag("--collect", collect, "merge the points' outputs into sweep.csv (after a Slurm array)");
  // Out of range is refused once the grid is known; a negative index never names a point.
  auto* point_option = sweep->add_option("--point", point, "run one point (a Slurm array task)")->check(non_negative_whole);

  auto* validate = app.add_subcommand("validate", "simulated collectives vs the book's formulas over a grid");
  std::string csv_path;
  bool quick = false;
  validate->add_option("--csv", csv_path, "also write the rows as CSV");
  validate->add_flag("--quick", quick, "a smaller grid");
  std::string measured_path;
  ProfileChoice measured_profiles;
  validate->add_option("--measured", measured_path,
                       "instead of the grid: a measurement file's measurements against the simulation (docs/calibration.md)");
  auto* one_profile = validate->add_option("--profile", measured_profiles.file,
                                           "with --measured: also predict every row with this calibration profile");
  validate->add_option("--profiles", measured_profiles.directory,
                       "with --measured: also predict each row with DIR/PROFILE.yaml of its profile name")
      ->excludes(one_profile);
  std::string markdown_path;
  validate->add_option("--markdown", markdown_path,
                       "with --measured: also write the rows as a Markdown table (docs/validation.md's real-hardware table)");
  double prediction_skew = 0;
  std::string plot_path;
  validate->add_option("--plot", plot_path,
                       "with --measured: also draw predicted against measured (PNG: one colour per profile, y = x, "
                       "+-10% bands; scripts/plot_measured.py)");
  bool held_out = false;
  validate->add_flag("--held-out", held_out,
                     "with --measured: every row is one no profile was fit on (a row in a profile's fit.residuals "
                     "is refused); rows are split into fit and held out either way, each with its intervals' coverage");
  int validate_jobs = 0;
  validate->add_option("-j,--jobs", validate_jobs, "with --measured: simulations at once (default: all cores)")
      ->check(non_negative_whole);
  validate->add_option("--skew-predictions", prediction_skew,
                       "self-test: scale every prediction by (1 + this) before the check; beyond 0.01 rows must "
                       "come out unexplained and the command fail");

  auto* plan = app.add_subcommand("plan", "rank parallelism plans for a training scenario by simulated step time");
  std::string plan_scenario, plan_out;
  plan->add_option("scenario", plan_scenario, "training scenario YAML (the keys the planner searches are ignored: below)")
      ->required();
  plan->footer(planner_keys_help());
  plan->add_option("-o,--output", plan_out, "also write plan.csv here (rewritten as each plan ends)");
  std::vector<std::string> plan_sets;
  plan->add_option("--set", plan_sets, "override a scenario value: key=value (dotted key, YAML value)");
  int plan_top = 0;
  plan->add_option("--top", plan_top, "print the first K plans only (plan.csv has all)")->check(non_negative_whole);
  bool plan_exhaustive = false;
  double plan_budget_s = 30;
  int plan_jobs = 0;
  plan->add_option("-j,--jobs", plan_jobs, "plans simulated at once (default: all cores); the ranking is the same for any")
      ->check(non_negative_whole);
  plan->add_option("--budget", plan_budget_s,
                   "seconds of simulation a plan may take, as the preflight estimates it; longer ones are listed "
                   "with their estimate, not simulated (default 30; --exhaustive lifts it)")
      ->check(finite_positive);
  plan->add_flag("--exhaustive", plan_exhaustive,
                 "simulate every plan (default: stop once no plan left can enter the first --top, 10 by default, "
                 "by its compute alone)");
  PlanArrayRequest plan_array;
  plan->add_option("--emit", plan_array.emit,
                   "write a Slurm job array (plan.sbatch in -o) that simulates every plan --exhaustive would, a task "
                   "a plan, instead of simulating here")
      ->check(CLI::IsMember({"slurm"}));
  int plan_task = 0;
  auto* plan_task_option =
      plan->add_option("--task", plan_task, "run one task of the job array (a Slurm array task): simulate that plan")
          ->check(non_negative_whole);
  auto* plan_collect_flag =
      plan->add_flag("--collect", plan_array.collect, "rank the job array's plans into plan.csv (after the array)");
  plan_task_option->excludes(plan_collect_flag);
  plan->get_option("--emit")->excludes(plan_task_option)->excludes(plan_collect_flag);

  // nccl-tests' names and flags (all_gather_perf -b 8 -e 128M -f 2): "perf" as its binaries
  // end; "sweep" and "bench" already name other things.
  auto* perf = app.add_subcommand("perf", "nccl-tests' size sweep of a collectives scenario's operations; perf.csv");
  std::string perf_scenario, perf_out = "out/perf", perf_fidelity = "auto";
  std::vector<std::string> perf_sets;
  PerfOptions perf_options;
  perf->add_option("scenario", perf_scenario, "collectives scenario YAML (its operations' sizes are swept)")->required();
  perf->add_option("-b,--minbytes", perf_options.sizes.begin, "smallest size: 8, 1K, 128M, 1G (binary) or \"8 MiB\"")
      ->capture_default_str();
  perf->add_option("-e,--maxbytes", perf_options.sizes.end, "largest size")->capture_default_str();
  perf->add_option("-f,--stepfactor", perf_options.sizes.factor, "multiply the size by this (2 or more)");
  perf->add_option("-i,--stepbytes", perf_options.sizes.increment, "or add this to it (default 1M)");
  perf->add_option("-d,--datatype", perf_options.datatype,
                   "element type, e.g. float, bfloat16, int8 (default: each operation's array type, else float)");
  perf->add_option("-o,--output", perf_out, "output directory for perf.csv")->capture_default_str();
  perf->add_option("--fidelity", perf_fidelity, "auto: symmetry-reduced where exact; full: every chip")
      ->check(CLI::IsMember({"auto", "full"}))
      ->capture_default_str();
  perf->add_option("--set", perf_sets, "override a scenario value: key=value (dotted key, YAML value)");

  auto* calibrate_cmd = app.add_subcommand("calibrate", "fit a calibration profile to measurements; print residuals");
  std::string measurements_path, profile_out, fit_list = "hop_latency,link_efficiency,collective_overhead",
                                 shared_list, fixed_list, start_list, rows_list, fit_hop_model = "both", profile_name;
  bool no_leave_one_out = false;
  calibrate_cmd->add_option("measurements", measurements_path, "measurement file (YAML; docs/calibration.md)")->required();
  calibrate_cmd->add_option("-o,--output", profile_out,
                            "the profile to write (YAML; default profile.yaml); for a file of several profiles, a "
                            "directory of PROFILE.yaml (default profiles)");
  auto* fit_option = calibrate_cmd->add_option(
      "--fit", fit_list, "parameters to fit for each profile, comma-separated (default only without --shared)")
      ->capture_default_str();
  calibrate_cmd->add_option("--shared", shared_list, "parameters to fit as one value shared by every profile, comma-separated");
  calibrate_cmd->add_option("--fix", fixed_list,
                            "parameters measured elsewhere, not fitted: NAME=VALUE (every profile) or "
                            "PROFILE:NAME=VALUE, comma-separated");
  calibrate_cmd->add_option("--start", start_list,
                            "where the fit starts fitted parameters: NAME=VALUE or PROFILE:NAME=VALUE, comma-separated "
                            "(default: the ideal machine's values)");
  calibrate_cmd->add_option("--rows", rows_list,
                            "fit these rows only: names or globs (M5-*), comma-separated (default: every row)");
  calibrate_cmd->add_option("--hop-model", fit_hop_model, "floor, additive, or both (keep the better fit)")
      ->check(CLI::IsMember({"floor", "additive", "both"}))
      ->capture_default_str();
  calibrate_cmd->add_option("--name", profile_name, "the profile's name (default: the measurement file's)");
  calibrate_cmd->add_flag("--no-leave-one-out", no_leave_one_out, "skip the leave-one-out refits");
  int calibrate_jobs = 0;
  calibrate_cmd->add_option("-j,--jobs", calibrate_jobs, "simulations at once (default: all cores); the fit is the same for any")
      ->check(non_negative_whole);

  auto* capacity = app.add_subcommand(
      "capacity", "the highest request rate a serving scenario meets its latency SLOs at; capacity.csv, .json, .png");
  std::string capacity_scenario, capacity_out = "out/capacity", rate_start, rate_min, rate_max;
  std::vector<std::string> capacity_slos, capacity_sets;
  CapacityOptions capacity_options;
  capacity->add_option("scenario", capacity_scenario, "serving scenario YAML (its requests sent at a rate)")->required();
  capacity->add_option("--slo", capacity_slos, "a bound to meet, METRIC_STATISTIC<=TIME: ttft, tpot, itl or e2e; mean, "
                                              "median or pN; e.g. 'ttft_p99<=200ms' (repeatable; all must hold)")
      ->required();
  capacity->add_option("--precision", capacity_options.precision,
                       "rates tested are the start times (1 + this)^k: the answer is within this of the limit")
      ->capture_default_str();
  capacity->add_option("--rate-start", rate_start, "the first rate simulated, e.g. \"10 /s\" (default: the scenario's)");
  capacity->add_option("--rate-min", rate_min, "the lowest rate tried (default: the start / 1000)");
  capacity->add_option("--rate-max", rate_max, "the highest rate tried (default: the start x 1000)");
  capacity->add_option("--servers", capacity_options.servers,
                       "values of workload.servers to search each, e.g. 1,2,4 (the start scaled by each)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  capacity->add_option("--set", capacity_sets, "override a scenario value: key=value (dotted key, YAML value)");
  capacity->add_option("-o,--output", capacity_out, "output directory")->capture_default_str();

  auto* presets = app.add_subcommand("presets", "list chip presets with units");
  auto* bench = app.add_subcommand("bench", "pod-scale speed benchmark");
  bool compare_naive = false;
  bench->add_flag("--compare-naive", compare_naive,
                  "run the plain SimGrid replay (one actor per chip) beside each full replay and print the ratio");
  int bench_repeat = 3;
  bench->add_option("--repeat", bench_repeat, "runs of each full replay (and plain replay); rows show the median")
      ->check(CLI::Range(1, 100));
  BenchOptions bench_options;
  bench->add_option("--suite", bench_options.suite,
                    "engine (the default: collectives, training, MoE and serving cases) or perturbed (pods whose "
                    "chips differ, every chip simulated: about an hour)")
      ->check(CLI::IsMember({"engine", "perturbed"}));
  bench->add_option("--only", bench_options.only, "perturbed suite: run only the rows whose name contains this text");
  bench->add_option("--draws", bench_options.draws, "straggler draws in the perturbed suite's draws row (default 100)")
      ->check(CLI::Range(1, 100000));
  bool bench_list = false;
  bench->add_flag("--list", bench_list, "print the perturbed suite's rows as podsim run commands, and run nothing");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() != 0) {
      if (auto unknown = unknown_word_message(app, argc, argv)) {
        std::fprintf(stderr, "podsim: error: %s\nRun with --help for more information.\n", terminal_safe(*unknown).c_str());
        return kExitBadInput;
      }
      // CLI11's own message quotes the argument as typed: escaped, as every message is.
      std::fprintf(stderr, "podsim: error: %s\nRun with --help for more information.\n", terminal_safe(e.what()).c_str());
      return kExitBadInput;
    }
    return app.exit(e);   // --help, --version
  }
  set_verbosity(verbose, quiet);
  try {
    if (run->parsed()) {
      if (task_option->count() > 0) run_draws.task = run_task;
      return run_command(scenario_path, run_sets, out_dir, fidelity, engine, detail, reproducible, allow_oom, strict,
                         trace_gzip,
                         preflight_limits(max_memory, max_time), run_draws);
    }
    if (capacity->parsed()) {
      capacity_options.scenario_path = capacity_scenario;
      return capacity_command(capacity_options, capacity_slos, capacity_sets, {rate_start, rate_min, rate_max},
                              capacity_out);
    }
    if (compare->parsed()) return compare_command(compare_scenario, topologies, compare_chips, compare_out, compare_jobs);
    if (sweep->parsed()) return sweep_command(sweep_scenario, sweep_sets, sweep_out, jobs, emit, collect,
                                              point_option->count() > 0 ? std::optional<int>(point) : std::nullopt);
    if (validate->parsed() && measured_path.empty() && !markdown_path.empty())
      throw InputError({"command line", 0, 0}, "--markdown", markdown_path,
                       "a table of measurements; expected it with --measured FILE");
    if (validate->parsed() && measured_path.empty() && held_out)
      throw InputError({"command line", 0, 0}, "--held-out", "", "a check of measurements; expected it with --measured FILE");
    if (validate->parsed() && measured_path.empty() && !plot_path.empty())
      throw InputError({"command line", 0, 0}, "--plot", plot_path,
                       "a plot of measurements; expected it with --measured FILE");
    if (validate->parsed() && !measured_path.empty()) return validate_measured_command(measured_path, measured_profiles, csv_path, markdown_path, plot_path, validate_jobs, held_out);
    if (validate->parsed()) return validate_command(csv_path, quick, prediction_skew);
    if (presets->parsed()) return presets_command();
    if (perf->parsed()) {
      perf_options.fidelity = perf_fidelity == "full" ? Fidelity::Full : Fidelity::Auto;
      return perf_command(perf_scenario, perf_sets, perf_out, perf_options);
    }
    if (plan->parsed()) {
      if (plan_task_option->count() > 0) plan_array.task = plan_task;
      return plan_command(plan_scenario, plan_sets, plan_out, plan_top, plan_exhaustive, plan_budget_s, plan_jobs,
                          plan_array);
    }
    if (bench->parsed()) {
      bench_options.compare_naive = compare_naive;
      bench_options.repeat = bench_repeat;
      return bench_command(bench_options, bench_list);
    }
    // A fit that names its shared parameters says what it fits: the default --fit is for a
    // fit that names nothing.
    if (calibrate_cmd->parsed() && fit_option->count() == 0 && !shared_list.empty()) fit_list.clear();
    if (calibrate_cmd->parsed())
      return calibrate_command(measurements_path, profile_out, fit_list, shared_list, fixed_list, start_list, rows_list,
                               fit_hop_model,
                               profile_name, !no_leave_one_out, calibrate_jobs);
  } catch (const InputError& e) {
    if (stderr_is_terminal()) std::fputs("\33[2K\r", stderr);   // over a progress line
    std::fprintf(stderr, "podsim: error: %s\n", terminal_safe(e.what()).c_str());
    return kExitBadInput;
  } catch (const std::exception& e) {
    if (stderr_is_terminal()) std::fputs("\33[2K\r", stderr);
    std::fprintf(stderr, "podsim: error: %s\n", terminal_safe(e.what()).c_str());
    return 1;
  }
  return 0;
}
