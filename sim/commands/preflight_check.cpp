#include "sim/commands/preflight_check.hpp"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "sim/commands/scenario_run.hpp"
#include "sim/report/run_trace.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

namespace {

// Bounds of a transformer program's length and footprint (check_program_size), measured on the
// shipped training and inference scenarios' programs (docs/modelling.md, "Preflight"): at most 41
// ops per layer with one microbatch (context parallelism's ring), 2-10 per layer and further
// microbatch in pipelines and gradient accumulation; 436-925 bytes an op, its vectors included.
constexpr double kOpsPerLayerPass = 32;            // one microbatch's forward and backward of one layer
constexpr double kOpsPerLayerPipelinePass = 6;     // the same in a pipeline (3D LLaMA-2 13B: 5.1)
constexpr double kOpsPerLayerStep = 10;            // a layer's gradient reduction, optimizer, ZeRO gathers
constexpr double kBytesPerProgramOp = 1000;
constexpr int kMostLayersPublished = 256;   // LLaMA-3 405B: 126; DeepSeek-V3: 61

std::string count_text(double n) {
  char buf[32];
  std::snprintf(buf, sizeof buf, n < 1e6 ? "%.0f" : "%.3g", n);
  return buf;
}

// The key a user would change to make the run smaller, and its value: what drives the estimate.
struct Driver {
  std::string key;
  std::string value;
};

// The model's layer count, for a transformer workload (0 otherwise).
int model_layers(const Scenario& scenario) {
  switch (scenario.kind()) {
    case WorkloadKind::Training: return scenario.training().model.layers;
    case WorkloadKind::Inference: return scenario.inference().model.layers;
    case WorkloadKind::Serving: return scenario.serving().model.layers;
    case WorkloadKind::Collectives: return 0;
  }
  return 0;
}

// Of a transformer program's length, layers x microbatches: the larger of the two is the key to change.
Driver program_length_driver(const Scenario& scenario) {
  const int layers = model_layers(scenario);
  if (scenario.kind() == WorkloadKind::Training && scenario.training().plan.microbatches > layers)
    return {"workload.microbatches", std::to_string(scenario.training().plan.microbatches)};
  return {"workload.model.layers", std::to_string(layers)};
}

Driver driver(const Scenario& scenario, const Program& program, const SimulationEstimate& e, double max_memory,
              double max_wall) {
  const auto& c = estimate_coefficients();
  // More layers than any published model (LLaMA-3 405B has 126), where the same run at 128 layers
  // would have fit (a transformer's messages and spans grow with its layers): the layers.
  const int layers = model_layers(scenario);
  if (layers > kMostLayersPublished) {
    const double scale = 128.0 / layers;
    if (e.memory_bytes * scale <= max_memory && e.wall_s * scale <= max_wall) return program_length_driver(scenario);
  }
  const bool spans_dominate = c.seconds_per_span * static_cast<double>(e.spans) > e.wall_s / 2 ||
                              c.bytes_per_span * static_cast<double>(e.spans) > e.memory_bytes / 2;
  // Spans are ops x simulated chips: a long program, or many chips the reduction cannot merge.
  if (model_layers(scenario) > 0 && spans_dominate && static_cast<double>(program.size()) > e.simulated_chips)
    return program_length_driver(scenario);
  if (scenario.kind() == WorkloadKind::Collectives && spans_dominate && program.size() > 1)
    return {"workload.operations", std::to_string(program.size()) + " operations"};
  if (e.heaviest_op >= 0) {
    const ProgramOp& op = program[e.heaviest_op];
    if (op.is(ProgramOpKind::Collective) && op.collective().over_dcn && scenario.topology.slices > 1)
      return {"topology.slices", std::to_string(scenario.topology.slices)};
    if (scenario.kind() == WorkloadKind::Collectives) {
      const std::vector<OperationSpec>& operations = scenario.collectives().operations;
      for (size_t i = 0; i < operations.size(); ++i)
        if (operations[i].name == op.name)
          return {"workload.operations[" + std::to_string(i) + "]", op.name};
    }
  }
  return {"topology.mesh", std::to_string(e.real_chips) + " chips"};
}

}  // namespace

void check_program_size(const Scenario& scenario, const PreflightLimits& limits) {
  const double layers = model_layers(scenario);
  if (layers <= 0) return;   // collectives: their operations are the file's own list
  // Per layer and microbatch, a training program holds at most kOpsPerLayerPass ops (forward,
  // backward, their collectives and FSDP gathers; MoE layers the most), plus per layer its
  // gradient reduction and optimizer; inference and a serving step shape one pass. Measured on
  // the shipped scenarios; an upper bound, so a run it lets through may still be refused by
  // the preflight proper, with its exact counts.
  double ops = layers * kOpsPerLayerPass;
  if (scenario.kind() == WorkloadKind::Training) {
    const auto& plan = scenario.training().plan;
    const double per_pass = plan.pipeline_axis >= 0   // a mesh axis, or Topology::kSliceAxis
                                ? kOpsPerLayerPipelinePass
                                : kOpsPerLayerPass;
    ops = layers * (per_pass * plan.microbatches + kOpsPerLayerStep);
  }
  const double memory_bytes = ops * kBytesPerProgramOp;
  const double wall_s = ops * estimate_coefficients().seconds_per_span;   // one span per op, one chip at least
  const double max_memory = limits.max_memory_bytes > 0 ? limits.max_memory_bytes : physical_memory_bytes();
  const double max_wall = limits.max_wall_s > 0 ? limits.max_wall_s : kDefaultMaxWallS;
  const bool too_big = max_memory > 0 && memory_bytes > max_memory;
  if (!too_big && !(wall_s > max_wall)) return;
  const Driver d = program_length_driver(scenario);
  std::string expected = "its program alone would hold about " + count_text(ops) + " ops, " + human_bytes(memory_bytes) +
                         " of memory and " + human_time(wall_s) + " of simulation, beyond ";
  expected += too_big ? "the " + human_bytes(max_memory) + " limit on memory (--max-memory)"
                      : "the " + human_time(max_wall) + " limit on wall time (--max-time)";
  expected += "; expected a smaller value";
  const std::string where = d.key == "workload.model.layers" ? "workload.model" : d.key;
  throw InputError(scenario.location_of(where), d.key, d.value, expected);
}

SimulationEstimate preflight_check(const Scenario& scenario, const Program& program, Fidelity fidelity,
                                   const PreflightLimits& limits, ReplayEngine engine) {
  SimulationEstimate e;
  try {
    e = estimate_simulation(scenario.topology, simulation_settings(scenario), program, fidelity, engine);
  } catch (const std::invalid_argument&) {
    return e;   // the run itself reports what it cannot plan
  }
  // trace.json: a span per op repetition per traced chip (run_trace.hpp), built as one JSON
  // document: about 190 B and 2.5 us each (20,000 ops on a 16x16 traced whole: 967 MB, 13 s).
  long long repetitions = 0;
  for (const auto& op : program) repetitions += op.repeat;
  const int traced = e.real_chips <= kMaxTracedChips ? e.real_chips : e.simulated_chips;
  const double trace_events = static_cast<double>(repetitions) * traced;
  e.memory_bytes += 190 * trace_events;
  e.wall_s += 2.5e-6 * trace_events;
  const double max_memory = limits.max_memory_bytes > 0 ? limits.max_memory_bytes : physical_memory_bytes();
  const double max_wall = limits.max_wall_s > 0 ? limits.max_wall_s : kDefaultMaxWallS;
  const std::string what = count_text(static_cast<double>(e.messages)) + " messages and " +
                           count_text(static_cast<double>(e.spans)) + " op timings on " +
                           count_text(e.simulated_chips) + " simulated chips (of " + count_text(e.real_chips) + ")";
  spdlog::info("preflight: {}; about {} and {} of memory", what, human_time(e.wall_s), human_bytes(e.memory_bytes));
  const bool too_big = max_memory > 0 && e.memory_bytes > max_memory;
  const bool too_long = e.wall_s > max_wall;
  if (!too_big && !too_long) return e;
  const Driver d = driver(scenario, program, e, max_memory, max_wall);
  std::string expected = "the run would need about " + human_bytes(e.memory_bytes) + " of memory and " +
                         human_time(e.wall_s) + " of wall time (" + what + "), beyond ";
  expected += too_big ? "the " + human_bytes(max_memory) + " limit on memory (--max-memory)"
                      : "the " + human_time(max_wall) + " limit on wall time (--max-time)";
  expected += "; expected a smaller value, a symmetric setup the default fidelity can reduce, or a higher limit";
  throw InputError(scenario.location_of(d.key), d.key, d.value, expected);
}

}  // namespace podsim
