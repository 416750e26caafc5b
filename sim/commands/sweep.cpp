#include "sim/commands/sweep.hpp"
#include "sim/commands/slurm_array.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/engine/child_process.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/report/output_files.hpp"
#include "sim/scenario/input_error.hpp"

namespace podsim {

namespace fs = std::filesystem;

SweepAxis parse_set_option(const std::string& option) {
  const size_t eq = option.find('=');
  const SourceLocation where{"--set", 0, 0};
  if (eq == std::string::npos || eq == 0 || eq + 1 == option.size())
    throw InputError(where, option, "", "expected key=value[,value...], e.g. --set workload.batch=8,16,32");
  SweepAxis axis;
  axis.key = option.substr(0, eq);
  int depth = 0;
  std::string value;
  for (char c : option.substr(eq + 1)) {
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      axis.values.push_back(value);
      value.clear();
      continue;
    }
    value += c;
  }
  axis.values.push_back(value);
  for (const auto& v : axis.values) {
    if (v.find_first_not_of(' ') == std::string::npos)
      throw InputError(where, axis.key, option.substr(eq + 1), "an empty value; expected values separated by commas");
  }
  if (depth != 0) throw InputError(where, axis.key, option.substr(eq + 1), "unbalanced brackets");
  return axis;
}

std::vector<SweepPoint> sweep_grid(const std::vector<SweepAxis>& axes) {
  std::vector<SweepPoint> points(1);
  for (const auto& axis : axes) {
    std::vector<SweepPoint> next;
    for (const auto& p : points) {
      for (const auto& v : axis.values) {
        SweepPoint q = p;
        q.overrides.push_back({axis.key, v});
        next.push_back(std::move(q));
      }
    }
    points = std::move(next);
  }
  for (size_t i = 0; i < points.size(); ++i) points[i].index = static_cast<int>(i);
  return points;
}

std::string point_dir(const std::string& out_dir, int index) {
  char name[32];
  std::snprintf(name, sizeof name, "%05d", index);
  return (fs::path(out_dir) / "points" / name).string();
}

namespace {

// FNV-1a, 64 bits: a change detector for inputs, not a defence against crafted collisions.
uint64_t fnv1a(const char* data, size_t size, uint64_t hash = 0xcbf29ce484222325ULL) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string file_fingerprint(const std::string& path) {
  // Hashed once per file version: every point of a sweep names the same trace. The key has the
  // size and modification time, since a process may sweep again after the file changed (the
  // Python module runs many sweeps in one process).
  static std::map<std::string, std::string> known;
  std::error_code error;
  const auto size_now = fs::file_size(path, error);
  const auto time_now = fs::last_write_time(path, error);
  const std::string version = path + "\n" + std::to_string(error ? 0 : size_now) + "\n" +
                              std::to_string(error ? 0 : time_now.time_since_epoch().count());
  if (auto it = known.find(version); it != known.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  if (!in) return "unreadable";
  uint64_t hash = 0xcbf29ce484222325ULL;
  uint64_t size = 0;
  std::vector<char> buffer(1 << 16);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
    hash = fnv1a(buffer.data(), static_cast<size_t>(in.gcount()), hash);
    size += static_cast<uint64_t>(in.gcount());
  }
  char text[64];
  std::snprintf(text, sizeof text, "%llu bytes, fnv1a64 %016llx", static_cast<unsigned long long>(size),
                static_cast<unsigned long long>(hash));
  return known[version] = text;
}

}  // namespace

std::string point_inputs(const SweepOptions& options, const SweepPoint& point) {
  return "# the inputs this point's outputs came from; a sweep re-runs the point when they change\n" +
         scenario_inputs(options.scenario_path, point.overrides);
}

std::string scenario_inputs(const std::string& path, const std::vector<ScenarioOverride>& overrides) {
  const ResolvedScenario resolved = resolve_scenario(path, overrides);
  std::string out = "podsim: " PODSIM_VERSION "\n";
  for (const auto& file : resolved.input_files) out += "file: " + file + ": " + file_fingerprint(file) + "\n";
  out += "---\n" + resolved.text + "\n";
  return out;
}

bool point_done(const std::string& out_dir, int index, const std::string& inputs) {
  const fs::path dir = point_dir(out_dir, index);
  if (!fs::exists(dir / "summary.json") && !fs::exists(dir / "error.txt")) return false;
  std::ifstream in(dir / "inputs.txt", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return in && text.str() == inputs;
}

namespace {

// --allow-oom: a point whose plan does not fit HBM is still simulated, so its row has the memory
// and the times beside status does_not_fit (a sweep maps where plans stop fitting).
std::vector<std::string> point_args(const SweepOptions& o, const SweepPoint& p) {
  std::vector<std::string> args = {o.podsim_binary, "run", o.scenario_path, "-o", point_dir(o.out_dir, p.index),
                                   "--reproducible", "--allow-oom"};
  for (const auto& s : p.overrides) {
    args.push_back("--set");
    args.push_back(s.key + "=" + s.value);
  }
  return args;
}

// Starts `podsim run` for a point, its stdout and stderr to files in the point's directory,
// after clearing what an earlier run left there and recording the inputs it runs on.
int start_point(const SweepOptions& o, const SweepPoint& p, const std::string& inputs) {
  const std::string dir = point_dir(o.out_dir, p.index);
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    OutputFiles files(dir);
    files.add("inputs.txt", inputs);
    files.commit();
  }
  return spawn_program(point_args(o, p), dir + "/stdout.txt", dir + "/stderr.txt");
}

// A failed point keeps its message; the sweep goes on. A point killed by a signal is not
// finished: interrupted.txt says what happened and the next sweep runs it again.
void record_exit(const SweepOptions& o, int index, int status) {
  const fs::path dir = point_dir(o.out_dir, index);
  if (exited_cleanly(status) && fs::exists(dir / "summary.json")) return;
  if (const int signal = terminating_signal(status); signal != 0) {
    std::string message = describe_exit_status(status);
    if (signal == SIGKILL) message += ": often the out-of-memory killer; the next sweep runs it again";
    else message += "; the next sweep runs it again";
    fs::remove(dir / "summary.json");
    OutputFiles files(dir.string());
    files.add("interrupted.txt", message + "\n");
    files.commit();
    return;
  }
  std::string message = read_message((dir / "stderr.txt").string());
  const size_t last = message.rfind('\n');
  if (last != std::string::npos) message = message.substr(last + 1);   // the error line, after any progress
  if (message.empty()) message = describe_exit_status(status);   // an exit status: a signal returned above
  OutputFiles files(dir.string());
  files.add("error.txt", message + "\n");
  files.commit();
}

// Numbers at the top of summary.json and two levels down ("ttft_s.p50", "per_layer.mlp.t_math_s").
void flatten(const nlohmann::ordered_json& j, const std::string& prefix, int depth,
             std::vector<std::pair<std::string, std::string>>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_number()) out.emplace_back(key, csv_number(it->get<double>()));
    else if (it->is_boolean()) out.emplace_back(key, it->get<bool>() ? "1" : "0");
    else if (it->is_string() && depth == 0) out.emplace_back(key, it->get<std::string>());
    else if (it->is_object() && depth < 2) flatten(*it, key, depth + 1, out);
  }
}

}  // namespace

void run_sweep_point(const SweepOptions& options, int index) {
  const auto points = sweep_grid(options.axes);
  if (index < 0 || index >= static_cast<int>(points.size()))
    throw InputError({"--point", 0, 0}, "point", std::to_string(index),
                     "expected 0.." + std::to_string(points.size() - 1));
  const std::string inputs = point_inputs(options, points[index]);
  if (point_done(options.out_dir, index, inputs)) return;
  const int pid = start_point(options, points[index], inputs);
  record_exit(options, index, wait_for_child(pid));
}

SweepProgress run_sweep(const SweepOptions& options) {
  const auto points = sweep_grid(options.axes);
  // An older grid's sweep.csv must not sit beside this grid's points while they run: were this
  // run killed outright (SIGKILL, a power cut), its row 0 would describe another point 0.
  {
    std::error_code ec;
    const fs::path csv = fs::path(options.out_dir) / "sweep.csv";
    if (fs::symlink_status(csv, ec).type() == fs::file_type::regular) fs::remove(csv, ec);
  }
  SweepProgress progress;
  progress.points = static_cast<int>(points.size());
  std::vector<int> pending;
  std::vector<std::string> inputs;
  for (const auto& p : points) {
    inputs.push_back(point_inputs(options, p));
    if (point_done(options.out_dir, p.index, inputs.back())) ++progress.already_done;
    else pending.push_back(p.index);
  }
  std::map<int, int> running;
  size_t next = 0;
  const auto start = std::chrono::steady_clock::now();
  if (options.on_progress) options.on_progress(progress.already_done, progress.points, -1);
  while (next < pending.size() || !running.empty()) {
    int status = 0;
    // Asked before each wait (and before starting more points), and again whenever a signal
    // interrupts one.
    const bool stop = options.stop_requested && options.stop_requested();
    while (!stop && next < pending.size() && static_cast<int>(running.size()) < std::max(1, options.jobs)) {
      const int index = pending[next++];
      running[start_point(options, points[index], inputs[index])] = index;
    }
    if (stop) {
      for (const auto& [pid, index] : running) signal_child(pid, SIGTERM);   // its simulation dies with it
      for (const auto& [pid, index] : running) {
        status = wait_for_child(pid);
        record_exit(options, index, status);
        ++progress.ran;
        if (terminating_signal(status) != 0) ++progress.interrupted;   // else it finished just before
      }
      break;
    }
    const int done = wait_for_any_child(status);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) break;
    const auto it = running.find(done);
    if (it == running.end()) continue;
    record_exit(options, it->second, status);
    const fs::path dir = point_dir(options.out_dir, it->second);
    if (fs::exists(dir / "error.txt")) ++progress.failed;
    if (fs::exists(dir / "interrupted.txt")) ++progress.interrupted;
    ++progress.ran;
    running.erase(it);
    if (options.on_progress) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const int left = static_cast<int>(pending.size()) - progress.ran;
      options.on_progress(progress.already_done + progress.ran, progress.points, elapsed / progress.ran * left);
    }
  }
  progress.rows = collect_sweep(options, inputs);
  progress.succeeded = progress.rows.ok + progress.rows.does_not_fit;
  return progress;
}

SweepCounts collect_sweep(const SweepOptions& options) {
  std::vector<std::string> inputs;
  for (const auto& p : sweep_grid(options.axes)) inputs.push_back(point_inputs(options, p));
  return collect_sweep(options, inputs);
}

SweepCounts collect_sweep(const SweepOptions& options, const std::vector<std::string>& inputs) {
  const auto points = sweep_grid(options.axes);
  std::vector<std::vector<std::pair<std::string, std::string>>> metrics(points.size());
  std::vector<std::string> status(points.size()), error(points.size());
  std::vector<std::string> columns;
  // The axes have their own columns: the summary's copy of a swept field is left out.
  std::set<std::string> seen;
  for (const auto& axis : options.axes) seen.insert(axis.key);
  SweepCounts counts;
  for (const auto& p : points) {
    const fs::path dir = point_dir(options.out_dir, p.index);
    if (!point_done(options.out_dir, p.index, inputs[p.index])) {
      // Not run, killed, or run on other inputs (an older scenario, trace or grid).
      status[p.index] = fs::exists(dir / "interrupted.txt") ? "interrupted" : "missing";
      if (fs::exists(dir / "interrupted.txt")) error[p.index] = read_message((dir / "interrupted.txt").string());
      ++counts.missing;
    } else if (fs::exists(dir / "summary.json")) {
      const auto summary = nlohmann::ordered_json::parse(read_text_file((dir / "summary.json").string()));
      const bool fits = summary.value("fits_hbm", true);
      status[p.index] = fits ? "ok" : "does_not_fit";
      ++(fits ? counts.ok : counts.does_not_fit);
      flatten(summary, "", 0, metrics[p.index]);
      for (const auto& [key, value] : metrics[p.index]) {
        if (seen.insert(key).second) columns.push_back(key);
      }
    } else {
      status[p.index] = "error";
      error[p.index] = read_message((dir / "error.txt").string());
      if (counts.failed++ == 0) {
        counts.first_failed = p.index;
        counts.first_error = error[p.index];
        for (size_t a = 0; a < p.overrides.size(); ++a)
          counts.first_failed_sets += (a > 0 ? " " : "") + p.overrides[a].key + "=" + p.overrides[a].value;
      }
    }
  }
  std::string csv = "point";
  for (const auto& axis : options.axes) csv += "," + csv_field(axis.key);
  csv += ",status,error";
  for (const auto& c : columns) csv += "," + csv_field(c);
  csv += "\n";
  for (const auto& p : points) {
    csv += std::to_string(p.index);
    for (const auto& o : p.overrides) csv += "," + csv_field(o.value);
    csv += "," + status[p.index] + "," + csv_field(error[p.index]);
    std::map<std::string, std::string> row(metrics[p.index].begin(), metrics[p.index].end());
    for (const auto& c : columns) {
      const auto it = row.find(c);
      csv += "," + (it == row.end() ? std::string() : csv_field(it->second));
    }
    csv += "\n";
  }
  ensure_directory(options.out_dir, "-o");
  OutputFiles files(options.out_dir);
  files.add("sweep.csv", csv);
  files.commit();
  return counts;
}

std::string emit_slurm(const SweepOptions& options) {
  const auto points = sweep_grid(options.axes);
  const std::string binary = fs::absolute(options.podsim_binary).string();
  const std::string scenario = fs::absolute(options.scenario_path).string();
  const std::string out = fs::absolute(options.out_dir).string();
  std::string sets;
  for (const auto& axis : options.axes) {
    std::string values;
    for (const auto& v : axis.values) values += (values.empty() ? "" : ",") + v;
    sets += " --set " + shell_quote(axis.key + "=" + values);
  }
  const std::string base = shell_quote(binary) + " sweep " + shell_quote(scenario) + sets + " -o " + shell_quote(out);
  return write_slurm_array(options.out_dir,
                           {"sweep.sbatch", "podsim-sweep",
                            "podsim sweep of " + std::to_string(points.size()) + " points as a Slurm job array.",
                            "merge the rows into sweep.csv", static_cast<int>(points.size()), base, "--point"});
}

}  // namespace podsim
