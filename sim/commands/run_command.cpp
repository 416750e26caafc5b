#include "sim/commands/run_command.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <spdlog/spdlog.h>
#include <stdexcept>

#include "sim/commands/memory_fit.hpp"
#include "sim/commands/preflight_check.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/engine/replay.hpp"
#include "sim/report/gzip.hpp"
#include "sim/report/output_files.hpp"
#include "sim/report/prediction_report.hpp"
#include "sim/report/report.hpp"
#include "sim/report/run_trace.hpp"
#include "sim/report/serving_files.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

// Every file `podsim run` may write into its directory: a run removes those it did not write
// itself, so a collectives run's summary never sits beside an earlier serving run's requests.csv.
const std::vector<std::string> kRunOutputs = {"summary.json", "operations.csv", "trace.json", "trace.json.gz",
                                              "requests.csv", "steps.csv"};

RunCommandOutputs serve_to_directory(const Scenario& scenario, const std::string& out_dir,
                                     const RunCommandOptions& options) {
  // The per-request files are written while the run goes (memory stays bounded by what is in
  // flight); all of them appear only once the summary is written too.
  check_program_size(scenario, options.limits);
  ensure_directory(out_dir, "-o");
  OutputFiles files(out_dir);
  files.owns(kRunOutputs);
  ServingFileSink outputs(scenario, files);
  ServingRun run;
  try {
    run = run_serving(scenario, &outputs, options.serving_progress);
  } catch (const std::invalid_argument& e) {
    throw InputError({scenario.path, 0, 0}, "workload", "", std::string("impossible serving plan: ") + e.what());
  }
  run.trace = outputs.finish();
  if (!run.trace->complete)
    spdlog::warn("trace.json holds the first {} events, up to t = {} of {}; requests.csv and steps.csv hold the whole run",
                 run.trace->events, human_time(run.trace->until_s), human_time(run.totals.end_s));
  files.add("summary.json", serving_summary_json(scenario, run, {options.reproducible}));
  files.commit();
  return {serving_table(scenario, run) + prediction_interval_text(scenario, serving_interval_quantities(run.stats)),
          {files.path("summary.json"), files.path("requests.csv"), files.path("steps.csv"), files.path("trace.json")}};
}

}  // namespace

namespace {

// A collectives, training or inference run: the program, simulated, and its reports.
struct Simulated {
  Program program;
  RunResult run;
  std::optional<TrainingReport> training;
  std::optional<InferenceReport> inference;
};

// An inference scenario's program.
Program inference_run_program(const Scenario& scenario, InferenceLayout& layout) {
  const InferenceWorkload& w = scenario.inference();
  Program program;
  try {
    program = inference_program(w.model, w.plan, scenario.topology, layout);
  } catch (const std::invalid_argument& e) {
    throw InputError({scenario.path, 0, 0}, "workload", "", std::string("impossible inference plan: ") + e.what());
  }
  return program;
}

// A training scenario's program.
Program training_run_program(const Scenario& scenario, TrainingLayout& layout) {
  const TrainingWorkload& w = scenario.training();
  Program program;
  try {
    program = training_program(w.model, w.plan, scenario.topology, layout);
  } catch (const std::invalid_argument& e) {
    throw InputError({scenario.path, 0, 0}, "workload", "", std::string("impossible training plan: ") + e.what());
  }
  return program;
}

// A run's program, built and checked before it is simulated.
struct Prepared {
  Program program;
  TrainingLayout layout;
  InferenceLayout inference_layout;
};

void prepare(Scenario& scenario, const RunCommandOptions& command, Prepared& out) {
  check_program_size(scenario, command.limits);
  switch (scenario.kind()) {
    case WorkloadKind::Collectives: out.program = collectives_program(scenario); break;
    case WorkloadKind::Training: out.program = training_run_program(scenario, out.layout); break;
    case WorkloadKind::Inference: out.program = inference_run_program(scenario, out.inference_layout); break;
    case WorkloadKind::Serving: throw std::logic_error("a serving run has no one program: serve_to_directory runs it");
  }
  preflight_check(scenario, out.program, command.fidelity, command.limits, command.engine);
  // After the preflight, whose refusal (a run too large to simulate, exit 2) says more about a
  // giant plan; a plan that does not fit HBM is refused unless allowed (memory_fit.hpp).
  if (scenario.kind() == WorkloadKind::Training) check_training_fits(scenario, out.layout, command.allow_oom);
  if (scenario.kind() == WorkloadKind::Inference) check_inference_fits(scenario, out.inference_layout, command.allow_oom);
}

RunOptions run_options(const RunCommandOptions& command) {
  RunOptions options;
  options.fidelity = command.fidelity;
  options.engine = command.engine;
  options.record_hops = command.record_hops;
  options.progress = command.progress;
  return options;
}

Simulated reported(const Scenario& scenario, Prepared& prepared, RunResult run) {
  std::optional<TrainingReport> training;
  std::optional<InferenceReport> inference;
  if (scenario.kind() == WorkloadKind::Training) {
    training = training_report(scenario.training(), prepared.layout, prepared.program, run);
  } else if (scenario.kind() == WorkloadKind::Inference) {
    inference = inference_report(scenario.inference().plan, prepared.inference_layout, prepared.program, run);
  }
  return {std::move(prepared.program), std::move(run), std::move(training), std::move(inference)};
}

Simulated simulate(Scenario& scenario, const RunCommandOptions& command) {
  Prepared prepared;
  prepare(scenario, command, prepared);
  RunResult run = run_program(scenario.topology, simulation_settings(scenario), prepared.program, run_options(command));
  return reported(scenario, prepared, std::move(run));
}

void refuse_serving(const Scenario& scenario) {
  if (scenario.kind() == WorkloadKind::Serving)
    throw InputError({scenario.path, 0, 0}, "workload.kind", "serving",
                     "a serving run's summary comes from its whole request stream; expected a collectives, "
                     "training or inference scenario");
}

// A serving run's summary, its records streamed to no file (validate --measured compares a
// serving measurement with it).
std::string serving_summary_of(const Scenario& scenario, const RunCommandOptions& command) {
  return serving_summary_json(scenario, run_serving(scenario), {command.reproducible});
}

std::string summary_of(const Scenario& scenario, const Simulated& s, const RunCommandOptions& command) {
  return summary_json(scenario, s.run, {command.reproducible}, s.training ? &*s.training : nullptr,
                      s.inference ? &*s.inference : nullptr);
}

}  // namespace

RunResult simulate_run(Scenario scenario, const RunCommandOptions& command) {
  refuse_serving(scenario);
  return simulate(scenario, command).run;
}

std::string simulate_summary_json(Scenario scenario, const RunCommandOptions& command) {
  if (scenario.kind() == WorkloadKind::Serving) return serving_summary_of(scenario, command);
  return summary_of(scenario, simulate(scenario, command), command);
}

std::vector<std::string> simulate_summaries_json(std::vector<Scenario> scenarios, const RunCommandOptions& command,
                                                 int jobs) {
  struct Running {
    size_t index = 0;
    Prepared prepared;
    PendingRun pending;
    ~Running() { cancel_replay(pending.child); }   // only if never finished (an exception)
  };
  std::vector<std::string> summaries(scenarios.size());
  std::vector<std::unique_ptr<Running>> running;
  size_t next = 0;
  // Serving runs are event loops over step costs replayed in this process: run in order, here.
  auto skip_serving = [&] {
    for (; next < scenarios.size() && scenarios[next].kind() == WorkloadKind::Serving; ++next)
      summaries[next] = serving_summary_of(scenarios[next], command);
  };
  skip_serving();
  while (next < scenarios.size() || !running.empty()) {
    // Start simulations in order until `jobs` run: each builds its program first, so a plan
    // that cannot be built throws here as simulate_summary_json would.
    while (static_cast<int>(running.size()) < std::max(jobs, 1) && next < scenarios.size()) {
      auto r = std::make_unique<Running>();
      r->index = next++;
      Scenario& scenario = scenarios[r->index];
      prepare(scenario, command, r->prepared);
      r->pending = start_program(scenario.topology, simulation_settings(scenario), r->prepared.program,
                                 run_options(command));
      running.push_back(std::move(r));
      skip_serving();
    }
    std::vector<int> results;
    for (const auto& r : running) results.push_back(r->pending.child.result_fd);
    const std::vector<bool> ready = wait_readable(results);   // none ready: a signal interrupted it
    std::vector<std::unique_ptr<Running>> still;
    for (size_t k = 0; k < running.size(); ++k) {
      if (k >= ready.size() || !ready[k]) {
        still.push_back(std::move(running[k]));
        continue;
      }
      Running& r = *running[k];
      const Scenario& scenario = scenarios[r.index];
      summaries[r.index] = summary_of(scenario, reported(scenario, r.prepared, finish_program(r.pending)), command);
    }
    running = std::move(still);
  }
  return summaries;
}

RunCommandOutputs run_to_directory(Scenario scenario, const std::string& out_dir, const RunCommandOptions& command) {
  if (scenario.kind() == WorkloadKind::Serving) return serve_to_directory(scenario, out_dir, command);
  Simulated simulated = simulate(scenario, command);
  const RunResult& run = simulated.run;
  const auto& training = simulated.training;
  const auto& inference = simulated.inference;
  const RunOptions options{command.fidelity, command.record_hops, {}};
  ensure_directory(out_dir, "-o");
  OutputFiles files(out_dir);
  files.owns(kRunOutputs);
  files.add("summary.json", summary_json(scenario, run, {command.reproducible}, training ? &*training : nullptr,
                                         inference ? &*inference : nullptr));
  files.add("operations.csv", operations_csv(run));
  TraceOptions trace_options;
  if (training) trace_options.hbm_used_bytes = training->memory.total_bytes;
  if (training)
    for (const ChipBreakdown& view : training->views) trace_options.keep_chips.push_back(view.chip);
  if (inference) trace_options.hbm_used_bytes = inference->layout.memory_per_chip_bytes;
  TraceStats trace_stats;
  std::string trace = trace_json(run, options.record_hops ? TraceDetail::Hops : TraceDetail::Collectives,
                                 trace_options, &trace_stats);
  if (trace_stats.chips_left_out > 0)
    spdlog::warn("trace: {} chips drawn, {} left out (Perfetto's web UI opens about {} spans); kept chip 0, the "
                 "slowest, the critical and the perturbed chips, and an even sample",
                 trace_stats.chips_traced, trace_stats.chips_left_out, kMaxTracedSpans);
  if (trace_stats.hop_flows_omitted > 0)
    spdlog::warn("trace: {} hop arrows drawn, {} left out (at most {}, or between chips not traced)",
                 trace_stats.hop_flows, trace_stats.hop_flows_omitted, trace_options.max_hop_flows);
  const std::string trace_name = command.trace_gzip ? "trace.json.gz" : "trace.json";
  files.add(trace_name, command.trace_gzip ? gzip_compress(trace) : trace);
  trace.clear();
  files.commit();
  return {training    ? training_table(scenario, run, *training) +
                            prediction_interval_text(scenario, training_interval_quantities(*training))
          : inference ? inference_table(scenario, run, *inference) +
                            prediction_interval_text(scenario, inference_interval_quantities(*inference))
                      : summary_table(scenario, run) + prediction_interval_text(scenario, collectives_interval_quantities(run)),
          {files.path("summary.json"), files.path(trace_name), files.path("operations.csv")}};
}

}  // namespace podsim
