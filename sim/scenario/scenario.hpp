#pragma once
// A loaded, validated scenario: everything a run needs, in SI units.
// The YAML schema that produces it is documented once, in docs/scenario-schema.md, beside
// the loader (scenario_loader.cpp), with every key's default.
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "collectives/collective.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/prediction_error.hpp"
#include "topology/stragglers.hpp"
#include "topology/topology.hpp"
#include "workloads/inference.hpp"
#include "workloads/serving.hpp"
#include "workloads/training.hpp"

namespace podsim {

// One collective operation of a `collectives` workload.
struct OperationSpec {
  std::string name;                 // unique within the scenario
  CollectiveSpec collective;        // kind, axes (indices into topology.axes), bytes V, ...
  std::string array;                // as typed, e.g. "bf16[2048,8192]" (empty when bytes were given)
  std::string sharding;             // as typed, e.g. "[E_Y, F]" (empty when not given)
  int repeat = 1;                   // run back to back this many times
  // Names of operations that must finish (on a chip) before this one starts there.
  // Default: the previous operation in the list; `after: []` starts at time 0.
  std::vector<std::string> after;
  SourceLocation where;             // of the operation's entry in the file
};

// A value the scenario promises, checked by the test suite against summary.json.
// The simulated value must lie in [value (1 - rel_tolerance), value (1 + rel_tolerance_above)].
struct Expectation {
  std::string field;                // "total_time_s" or "operations.<name>.time_s"
  double value = 0;                 // SI units
  double rel_tolerance = 0.01;      // below the value (and above, unless rel_tolerance_above is given)
  double rel_tolerance_above = 0.01;
  std::string source;               // e.g. "sharding.md:L366-L375"
  std::string tolerance_reason;     // why a tolerance is wider than 1% (required then)

  bool accepts(double simulated) const {
    return simulated >= value * (1 - rel_tolerance) && simulated <= value * (1 + rel_tolerance_above);
  }
};

// Tolerances wider than this need a written reason.
constexpr double kExpectationDefaultTolerance = 0.01;

// The kind of a scenario's workload: the index of its alternative in Workload (same order).
enum class WorkloadKind { Collectives, Training, Inference, Serving };

// The kind as `workload.kind` spells it and reports print it: "collectives", "training", ...
const char* workload_kind_name(WorkloadKind kind);

// A `collectives` workload: the operations, in the file's order.
struct CollectivesWorkload {
  std::vector<OperationSpec> operations;
};

// An `inference` workload: one decode step or one prefill of a model on a slice.
struct InferenceWorkload {
  TransformerSpec model;
  InferencePlan plan;
  bool strict_memory = true;        // a batch that does not fit HBM is an error (false: simulated anyway)
};

// A `serving` workload: requests through batching policies on model servers (slices).
struct ServingWorkload {
  TransformerSpec model;
  InferencePlan generate;            // the decode (or only) server: dtypes, model axes, efficiency
  InferencePlan prefill;             // prefill steps: same, with its own efficiency and axes
  // One (generate) server's chips: the slice, or with parallelism.replica the sub-mesh of one
  // replica (topology/sub_mesh.hpp); `generate`'s axes index it. config.servers counts servers:
  // the slices `servers:` names times replicas_per_slice.
  TopologySpec generate_topology;
  int replicas_per_slice = 1;
  TopologySpec prefill_topology;     // disaggregated: the prefill servers' slice
  TopologySpec prefill_server_topology;   // one prefill server's chips; `prefill`'s axes index it
  int prefill_replicas_per_slice = 1;
  ServingConfig config;              // slots filled in by the loader (HBM limit or max_batch)
  // Speculative decoding's draft model (method draft_model): on the generate server's chips
  // under its plan, its weights and KV cache in HBM beside the model's.
  std::optional<TransformerSpec> draft_model;
  std::vector<Request> requests;
  std::string requests_source;       // "poisson" or the trace's path
  // The rate the requests are sent at (open loop; infinity: all at once) and the key that sets
  // it, which `podsim capacity` varies; 0 and empty for a trace, whose arrivals are its own.
  double request_rate_per_s = 0;
  std::string request_rate_key;
  int max_context = 0;               // longest padded prompt + output: what a slot must hold
  int max_model_len = 0;             // policy mixed: vLLM's max_model_len when given (0: not given)
  int hbm_slots = 0;                 // sequences of max_context that fit beside the weights
  // The percentiles each latency distribution reports (vLLM's --metric-percentiles).
  std::vector<double> metric_percentiles = {50, 90, 99};
  // A latency SLO for goodput (vLLM benchmark_serving --goodput): a request counts when it meets
  // every bound given; a bound <= 0 is not given.
  struct Slo {
    double ttft_s = 0, tpot_s = 0, latency_s = 0;
    bool given() const { return ttft_s > 0 || tpot_s > 0 || latency_s > 0; }
  } slo;
};

// A `training` workload: one training step of a model under a parallelism plan.
struct TrainingWorkload {
  TransformerSpec model;
  TrainingPlan plan;
  // A plan that does not fit HBM is an error (`podsim run` exits 1 with the breakdown); false
  // (or --allow-oom) simulates it anyway and reports fits_hbm: false.
  bool strict_memory = true;
  double token_budget = 0;          // tokens a whole run trains on (0: not given): time to train
};

// A scenario's one workload; the alternatives are in WorkloadKind's order.
using Workload = std::variant<CollectivesWorkload, TrainingWorkload, InferenceWorkload, ServingWorkload>;

// What `podsim compare` runs the workload on when no --topologies are given.
struct CompareSpec {
  std::vector<std::string> topologies;   // mesh shapes, e.g. "4x4x4", "8x8"
  std::vector<std::string> chips;        // presets; empty: the scenario's
};

// Where a scenario's calibration profile came from: its hardware.profile, or the preset's default.
enum class ProfileSource { Named, Default };

struct Scenario {
  std::string path;                 // file it came from
  int version = 1;
  std::string name;
  std::string description;
  TopologySpec topology;
  HopModel hop_model = HopModel::Floor;
  double link_efficiency = 1.0;     // fraction of peak ICI/DCN bandwidth a transfer achieves
  double launch_overhead_s = 0.0;   // fixed cost per collective per chip before its first hop
  // The calibration profile applied: hardware.profile's, or the preset's built-in one when the
  // scenario names none (ideal where podsim ships none for the preset).
  std::string profile = "ideal";
  ProfileSource profile_source = ProfileSource::Default;
  // The error the applied profile states for its predictions (its fit's left-out errors and its
  // checks'): every headline figure of the run is printed with its interval. None for the ideal
  // machine. Pooled over the profile's dense rows; prediction_error_moe over every row, the pool
  // of a run whose model routes tokens to experts (routes_experts).
  std::optional<PredictionError> prediction_error;
  std::optional<PredictionError> prediction_error_moe;
  // The same for each kind of figure (figure_kind) whose own rows state one; a figure of another
  // kind takes its run's pool (prediction_error_for).
  std::map<std::string, PredictionError> prediction_errors_by_kind;
  Workload workload;                // exactly one kind; the loader builds the kind the file names
  // The `perturbations` entries drawn at random (topology/stragglers.hpp), drawn into
  // topology.perturbations after its `fixed_perturbations` entries written by hand (draw 0 at
  // load; with_straggler_draw draws another).
  std::vector<StragglerSpec> stragglers;
  size_t fixed_perturbations = 0;
  std::vector<Expectation> expectations;
  CompareSpec compare;
  // What the loader found worth a word but not an error, each located ("file:line: key ...: ..."):
  // an override far from its preset's figure, a mesh no Cloud TPU slice has. The commands log
  // them as warnings (`podsim run`, the Python module's run); loading stays silent.
  std::vector<std::string> warnings;
  // Where some keys were written ("topology.slices", "workload.microbatches", "topology",
  // "workload", ...: see record_locations), for errors found after loading.
  std::map<std::string, SourceLocation> locations;
  // The location of `key`, or of its section ("workload" for "workload.x"), or the file.
  SourceLocation location_of(const std::string& key) const;

  WorkloadKind kind() const { return static_cast<WorkloadKind>(workload.index()); }
  // The workload as that kind. Asking for another kind than the scenario holds is a bug in the
  // caller, not bad input (callers check kind() or refuse the scenario with an InputError
  // first): std::logic_error naming the kind asked for and the kind held.
  const CollectivesWorkload& collectives() const;
  CollectivesWorkload& collectives();
  const TrainingWorkload& training() const;
  TrainingWorkload& training();
  const InferenceWorkload& inference() const;
  InferenceWorkload& inference();
  const ServingWorkload& serving() const;
  ServingWorkload& serving();
};

static_assert(std::is_same_v<std::variant_alternative_t<static_cast<size_t>(WorkloadKind::Collectives), Workload>,
                             CollectivesWorkload> &&
                  std::is_same_v<std::variant_alternative_t<static_cast<size_t>(WorkloadKind::Training), Workload>,
                                 TrainingWorkload> &&
                  std::is_same_v<std::variant_alternative_t<static_cast<size_t>(WorkloadKind::Inference), Workload>,
                                 InferenceWorkload> &&
                  std::is_same_v<std::variant_alternative_t<static_cast<size_t>(WorkloadKind::Serving), Workload>,
                                 ServingWorkload> &&
                  std::variant_size_v<Workload> == 4,
              "WorkloadKind is the index of Workload's alternative");

// Whether the scenario's model routes tokens to experts (a training, inference or serving
// workload of an MoE model): its steps' intervals take MoE rows' errors (figure_kind).
bool routes_experts(const Scenario& scenario);

// The scenario with draw `draw` of its random stragglers (each entry's seed + draw) in place of
// the one it holds; the hand-written perturbations stay.
Scenario with_straggler_draw(Scenario scenario, uint64_t draw);

// A value set from the command line (`--set workload.batch=16`): a dotted key through the
// scenario's mappings and a YAML value.
struct ScenarioOverride {
  std::string key;
  std::string value;
};

// Parses and validates a scenario file, with overrides applied first. Throws InputError naming
// file, line, key and value (an overridden value: the --set that gave it).
Scenario load_scenario(const std::string& path, const std::vector<ScenarioOverride>& overrides = {});
// Same, from text (used by tests); `path` only labels messages and resolves relative paths.
Scenario load_scenario_text(const std::string& text, const std::string& path,
                            const std::vector<ScenarioOverride>& overrides = {});

// What a run of the scenario reads: the document with the overrides applied (YAML, comments
// and layout dropped) and the other files it names (every key of file_references(): a
// calibration profile, a request trace, an expert-load CSV), resolved as the loader resolves
// them. A sweep keys its points by these (sim/commands/sweep.hpp). Throws InputError only for
// malformed YAML or a malformed --set; the rest is the run's to check.
struct ResolvedScenario {
  std::string text;
  std::vector<std::string> input_files;
};
ResolvedScenario resolve_scenario(const std::string& path, const std::vector<ScenarioOverride>& overrides = {});

}  // namespace podsim
