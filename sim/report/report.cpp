#include "sim/report/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/report/csv_text.hpp"
#include "sim/report/price.hpp"
#include "sim/report/summary_writer.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

// "128 chips (v5p)", or on a chip of two devices "128 devices, 64 chips (tpu7x)": podsim's unit
// is the device, the Cloud's the chip.
std::string chips_text(const ChipSpec& chip, int devices) {
  if (chip.cores_per_chip <= 1) return std::to_string(devices) + " chips (" + chip.name + ")";
  return std::to_string(devices) + " devices, " + std::to_string(devices / chip.cores_per_chip) + " chips (" +
         chip.name + ")";
}

// What HBM a figure of memory is held by: a chip's, or on tpu7x a device's (half the chip's).
const char* memory_holder(const ChipSpec& chip) { return chip.cores_per_chip > 1 ? "device" : "chip"; }


using Json = nlohmann::ordered_json;

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

double relative_error(double simulated, double analytic) {
  if (analytic == 0) return simulated == 0 ? 0.0 : 1.0;
  return (simulated - analytic) / analytic;
}

// A slow-chip perturbation's entry names its chips when it selects at most this many.
constexpr int kNamedChips = 16;

Json topology_json(const Scenario& scenario, const RunResult& run) {
  const Topology& topo = run.topology;
  Json t;
  t["chip"] = scenario.topology.chip.name;
  Json axes = Json::array();
  for (const auto& a : scenario.topology.axes) {
    axes.push_back({{"name", a.name}, {"size", a.size}, {"wraparound", topo.wraps(&a - &scenario.topology.axes[0])}});
  }
  t["axes"] = axes;
  t["slices"] = topo.slice_count();
  t["chips"] = topo.chip_count();
  t["hosts"] = topo.host_count();
  t["diameter_hops"] = topo.diameter();
  t["bisection_links"] = topo.bisection_links();
  t["ici_link_bandwidth_Bps"] = scenario.topology.chip.neighbor_bandwidth_Bps();
  t["hop_latency_s"] = scenario.topology.chip.hop_latency_s;
  t["dcn_bandwidth_per_host_Bps"] = scenario.topology.chip.dcn_bandwidth_per_host_Bps;
  t["dcn_oversubscription"] = scenario.topology.dcn_oversubscription;
  // What differs (topology/perturbation.hpp), with how many chips, directed links or NICs
  // each perturbation selected on the real pod.
  if (!topo.spec().perturbations.empty()) {
    Json list = Json::array();
    for (size_t i = 0; i < topo.spec().perturbations.size(); ++i) {
      const Perturbation& p = topo.spec().perturbations[i];
      Json e;
      e["name"] = p.name;
      e["kind"] = to_string(p.kind);
      e["targets"] = perturbation_target_count(topo, i);
      if (p.kind == PerturbationKind::SlowChips) {
        e["compute_slowdown"] = p.compute_slowdown;
        // Which chips, where they are few (a straggler draw's: one a perturbation).
        if (e["targets"].get<int>() <= kNamedChips) {
          Json names = Json::array();
          const std::vector<char> selected = selected_chips(topo, p);
          for (ChipId c = 0; c < topo.chip_count(); ++c)
            if (selected[c]) names.push_back(topo.chip_name(c));
          e["chips"] = names;
        }
      } else {
        if (p.kind == PerturbationKind::Links) {
          e["axis"] = topo.spec().axes[p.axis].name;
          e["direction"] = p.direction == 0 ? "both ways" : p.direction > 0 ? "+" : "-";
        }
        e["bandwidth_scale"] = p.bandwidth_scale;
        e["extra_latency_s"] = p.extra_latency_s;
      }
      list.push_back(e);
    }
    t["perturbations"] = list;
  }
  return t;
}

}  // namespace

std::string summary_json(const Scenario& scenario, const RunResult& run, const ReportOptions& options,
                         const TrainingReport* training, const InferenceReport* inference) {
  return write_summary({scenario, options, &run, training, inference});
}

// The step summaries' parts the field table's getters call (summary_field_table.hpp).
namespace summary_parts {

std::string podsim_version(const SummaryInputs&) { return PODSIM_VERSION; }

// What the symmetry reduction simulated of each axis and the proof it rests on
// (collectives/symmetry.hpp).
Json symmetry(const SummaryInputs& in) {
  const RunResult& run = *in.run;
  Json reduction = Json::array();
  for (const auto& axis : run.reduction.axes) {
    reduction.push_back({{"axis", axis.axis},
                         {"real_size", axis.real_size},
                         {"simulated_size", axis.simulated_size},
                         {"period", axis.period},
                         {"reason", axis.reason}});
  }
  if (run.reduction.slices.real_size > 1) {
    const auto& s = run.reduction.slices;
    reduction.push_back({{"axis", s.axis},
                         {"real_size", s.real_size},
                         {"simulated_size", s.simulated_size},
                         {"period", s.period},
                         {"reason", s.reason}});
  }
  return reduction;
}

Json step_topology(const SummaryInputs& in) { return topology_json(in.scenario, *in.run); }

Json training_workload(const SummaryInputs& in) {
  const auto& plan = in.scenario.training().plan;
  Json t;
  t["model"] = in.scenario.training().model.name;
  t["strategy"] = in.training->strategy;
  t["global_batch_tokens"] = plan.global_batch_tokens;
  t["sequence_length"] = plan.sequence_length;
  t["microbatches"] = plan.microbatches;
  t["matmul_efficiency"] = plan.matmul_efficiency;
  return t;
}

// Keyed by block ("attn", "mlp"), so an expectation can name per_layer.mlp.t_comms_s.
Json per_layer(const SummaryInputs& in) {
  Json layers = Json::object();
  for (const auto& l : in.training->per_layer) {
    layers[l.block] = {{"t_math_s", l.t_math_s},
                       {"t_comms_s", l.t_comms_s},
                       {"t_math_forward_s", l.t_math_forward_s},
                       {"t_comms_forward_s", l.t_comms_forward_s},
                       {"book_t_math_s", l.book_t_math_s},
                       {"book_t_comms_s", l.book_t_comms_s}};
  }
  return layers;
}

Json chip_views(const SummaryInputs& in) {
  Json views = Json::array();
  for (const ChipBreakdown& v : in.training->views) {
    views.push_back({{"view", v.view},
                     {"chip", in.run->topology.chip_name(v.chip)},
                     {"compute_time_s", v.compute_time_s},
                     {"exposed_comm_s", v.exposed_comm_s},
                     {"wait_for_peers_s", v.wait_for_peers_s},
                     {"exposed_comm_by_axis_s", object_of(v.exposed_comm_by_axis_s)},
                     {"exposed_comm_by_category_s", object_of(v.exposed_comm_by_category_s)},
                     {"wait_for_peers_by_axis_s", object_of(v.wait_for_peers_by_axis_s)},
                     {"wait_for_peers_by_category_s", object_of(v.wait_for_peers_by_category_s)}});
  }
  return views;
}

Json inference_workload(const SummaryInputs& in) {
  const auto& plan = in.scenario.inference().plan;
  const InferenceReport& r = *in.inference;
  return {{"model", in.scenario.inference().model.name},
          {"phase", r.decode ? "decode" : "prefill"},
          {"batch", plan.batch},
          {"context_length", r.decode ? plan.context_length : plan.prompt_length},
          {"weight_bytes", plan.weight_bytes},
          {"kv_bytes", plan.kv_bytes},
          {"model_parallelism", r.layout.model_degree},
          {"expert_parallelism", r.layout.expert_degree}};
}

// The chips an op present at some positions only runs on: those positions' share of the pod.
long long present_on_chips(const OperationResult& op, const Topology& topo) {
  const long long present = std::count_if(op.present_at_position.begin(), op.present_at_position.end(),
                                          [](char p) { return p != 0; });
  return present * (topo.chip_count() / topo.extent_along(op.position_axis));
}

Json operations(const SummaryInputs& in) {
  Json ops = Json::array();
  for (const auto& op : in.run->operations) {
    Json o;
    o["name"] = op.name;
    o["kind"] = op.kind_name();
    if (!op.category.empty()) o["category"] = op.category;
    if (op.layer >= 0) o["layer"] = op.layer;
    o["repeat"] = op.repeat;
    if (!op.present_at_position.empty()) o["present_on_chips"] = present_on_chips(op, in.run->topology);
    o["time_s"] = op.time_s;
    o["start_s"] = op.start_s;
    o["end_s"] = op.end_s;
    const Topology& topo = in.run->topology;
    o["chip_time_median_s"] = op.chip_time_median_s;
    o["chip_time_max_s"] = op.chip_time_max_s;
    o["chip_time_max_chip"] = topo.chip_name(op.chip_time_max_chip);
    if (op.is(ProgramOpKind::Collective)) {
      o["wait_for_peers_median_s"] = op.wait_for_peers_median_s;
      o["wait_for_peers_max_s"] = op.wait_for_peers_max_s;
      o["wait_for_peers_max_chip"] = topo.chip_name(op.wait_for_peers_max_chip);
    }
    const TrafficResult* traffic = op.traffic();
    if (!traffic) {
      ops.push_back(o);
      continue;
    }
    o["axes"] = traffic->axes;
    o["dcn"] = traffic->over_dcn;
    o["bytes"] = traffic->bytes;
    o["size_bytes"] = traffic->size_bytes;
    o["group_size"] = traffic->group_size;
    o["hops"] = traffic->hops;
    o["algbw_Bps"] = traffic->algbw_Bps;
    o["busbw_Bps"] = traffic->busbw_Bps;
    if (const FormulaResult* analytic = op.analytic()) {
      o["analytic_s"] = analytic->time_s;
      o["rel_error"] = relative_error(op.time_s, analytic->time_s);
      o["regime"] = analytic->regime;
      o["formula"] = analytic->formula;
      o["formula_source"] = analytic->source;
    } else {
      o["analytic_s"] = nullptr;
    }
    ops.push_back(o);
  }
  return ops;
}

}  // namespace summary_parts

// time_s is the op's time (OperationResult::time_s); then how the chips spent it: the median
// chip, the most and which chip, and a collective's wait for late peers likewise.
std::string operations_csv(const RunResult& run) {
  std::string out =
      "name,kind,axes,dcn,bytes,size_bytes,repeat,group_size,time_s,algbw_Bps,busbw_Bps,analytic_s,rel_error,"
      "chip_time_median_s,chip_time_max_s,chip_time_max_chip,wait_for_peers_median_s,wait_for_peers_max_s,"
      "wait_for_peers_max_chip\n";
  const Topology& topo = run.topology;
  for (const auto& op : run.operations) {
    std::string chips = "," + format("%.17g", op.chip_time_median_s) + "," + format("%.17g", op.chip_time_max_s) + "," +
                        csv_field(topo.chip_name(op.chip_time_max_chip)) + ",";
    chips += op.is(ProgramOpKind::Collective) ? format("%.17g", op.wait_for_peers_median_s) + "," +
                                                    format("%.17g", op.wait_for_peers_max_s) + "," +
                                                    csv_field(topo.chip_name(op.wait_for_peers_max_chip))
                                              : ",,";
    const TrafficResult* t = op.traffic();
    if (!t) {
      out += op.name + ",compute,,false,0,0," + std::to_string(op.repeat) + ",1," + format("%.17g", op.time_s) + ",,,," + chips + "\n";
      continue;
    }
    std::string axes;
    for (const auto& a : t->axes) axes += (axes.empty() ? "" : "+") + a;
    out += op.name + "," + op.kind_name() + "," + axes + "," + (t->over_dcn ? "true" : "false") + "," +
           format("%.17g", t->bytes) + "," + format("%.17g", t->size_bytes) + "," + std::to_string(op.repeat) + "," + std::to_string(t->group_size) + "," +
           format("%.17g", op.time_s) + "," + format("%.17g", t->algbw_Bps) + "," + format("%.17g", t->busbw_Bps) + ",";
    if (const FormulaResult* analytic = op.analytic()) {
      out += format("%.17g", analytic->time_s) + "," + format("%.17g", relative_error(op.time_s, analytic->time_s));
    } else {
      out += ",";
    }
    out += chips + "\n";
  }
  return out;
}

namespace {

// One line naming what differs, when something does; the book's formulas describe the pod
// without it.
std::string perturbations_line(const RunResult& run) {
  const Topology& topo = run.topology;
  const auto& list = topo.spec().perturbations;
  if (list.empty()) return "";
  std::string out = "perturbations (the book columns are for the pod without them):";
  for (size_t i = 0; i < list.size(); ++i) {
    const Perturbation& p = list[i];
    const int n = perturbation_target_count(topo, i);
    out += (i ? "; " : " ") + p.name + ": " + std::to_string(n);
    if (p.kind == PerturbationKind::SlowChips) {
      out += n == 1 ? " chip" : " chips";
      out += format(", compute x%g", p.compute_slowdown);
      continue;
    }
    out += p.kind == PerturbationKind::Nics ? (n == 1 ? " NIC" : " NICs")
                                            : " directed " + topo.spec().axes[p.axis].name + (n == 1 ? " link" : " links");
    if (p.bandwidth_scale != 1.0) out += format(", bandwidth x%g", p.bandwidth_scale);
    if (p.extra_latency_s > 0) out += ", latency +" + human_time(p.extra_latency_s);
  }
  return out + "\n";
}

}  // namespace

std::string summary_table(const Scenario& scenario, const RunResult& run) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s: %s, hop model %s, simulated %d chips (%s)\n",
                scenario.name.c_str(), chips_text(scenario.topology.chip, run.topology.chip_count()).c_str(),
                std::string(to_string(scenario.hop_model)).c_str(), run.simulated.chip_count(), run.fidelity.c_str());
  out += line;
  out += perturbations_line(run);
  // Where chips spent an op differently (a perturbation, a late peer), the most a chip spent
  // and the most a chip waited for peers are shown beside the op's time.
  const bool chips_differ =
      !run.topology.spec().perturbations.empty() ||
      std::any_of(run.operations.begin(), run.operations.end(), [](const OperationResult& op) { return op.wait_for_peers_max_s > 0; });
  std::snprintf(line, sizeof line, "%-16s %-15s %-6s %11s %11s %12s %12s %11s %8s", "operation", "kind", "axes",
                "bytes", "time", "algbw", "busbw", "book", "error");
  out += line;
  out += chips_differ ? "  chip max (which)  peer wait max (which)\n" : "\n";
  for (const auto& op : run.operations) {
    static const TrafficResult kNoTraffic;   // compute: no axes, 0 bytes
    const TrafficResult& t = op.traffic() ? *op.traffic() : kNoTraffic;
    const FormulaResult* analytic = op.analytic();
    std::string axes;
    for (const auto& a : t.axes) axes += a;
    if (t.over_dcn) axes += axes.empty() ? "DCN" : "+DCN";
    const std::string book = analytic ? human_time(analytic->time_s) : "-";
    const double rel = analytic ? relative_error(op.time_s, analytic->time_s) : 0.0;
    const std::string err = analytic ? format("%+.2f%%", std::fabs(rel) < 5e-7 ? 0.0 : 100 * rel) : "-";
    // A compute op (a collective's additions on the core) moves no bytes over links.
    const bool moves = op.traffic() != nullptr;
    std::snprintf(line, sizeof line, "%-16s %-15s %-6s %11s %11s %12s %12s %11s %8s\n", op.name.c_str(),
                  op.kind_name().c_str(), axes.c_str(), moves ? human_bytes(t.bytes).c_str() : "-",
                  human_time(op.time_s).c_str(), moves ? human_bandwidth(t.algbw_Bps).c_str() : "-",
                  moves ? human_bandwidth(t.busbw_Bps).c_str() : "-", book.c_str(), err.c_str());
    out += line;
    if (chips_differ) {
      out.pop_back();
      out += "  " + human_time(op.chip_time_max_s) + " (" + run.topology.chip_name(op.chip_time_max_chip) + ")";
      if (op.is(ProgramOpKind::Collective))
        out += "  " + human_time(op.wait_for_peers_max_s) + " (" + run.topology.chip_name(op.wait_for_peers_max_chip) + ")";
      out += "\n";
    }
  }
  if (chips_differ) out += "time: compute, the median chip's; a collective, from its last chip's entry to its end\n";
  std::snprintf(line, sizeof line, "total simulated time %s, wall time %s\n", human_time(run.total_time_s).c_str(),
                human_time(run.wall_time_s).c_str());
  out += line;
  return out;
}

}  // namespace podsim

namespace podsim {

namespace {

std::string seconds_by_key(const std::map<std::string, double>& values) {
  std::string out;
  for (const auto& [key, seconds] : values) out += " " + key + " " + human_time(seconds);
  return out;
}

// One chip's step in words: compute, exposed communication by axis, the wait for late peers.
std::string breakdown_line(const ChipBreakdown& v) {
  std::string out = "compute " + human_time(v.compute_time_s) + ", exposed communication " + human_time(v.exposed_comm_s);
  const std::string by_axis = seconds_by_key(v.exposed_comm_by_axis_s);
  if (!by_axis.empty()) out += " (by axis:" + by_axis + ")";
  if (v.wait_for_peers_s > 0) {
    out += ", waiting for peers " + human_time(v.wait_for_peers_s) + " (in" + seconds_by_key(v.wait_for_peers_by_axis_s) + ")";
  }
  return out;
}

bool same_breakdown(const ChipBreakdown& a, const ChipBreakdown& b, double step_s) {
  const double eps = 1e-6 * step_s;
  return std::fabs(a.compute_time_s - b.compute_time_s) <= eps && std::fabs(a.exposed_comm_s - b.exposed_comm_s) <= eps &&
         std::fabs(a.wait_for_peers_s - b.wait_for_peers_s) <= eps;
}

// The critical chip's line (the headline), then chip 0's and the slowest chip's where they
// differ from it.
std::string breakdown_lines(const RunResult& run, const TrainingReport& r) {
  const Topology& topo = run.topology;
  const ChipBreakdown& headline = r.views.back();
  std::string out = breakdown_line(headline);
  const bool others = std::any_of(r.views.begin(), r.views.end() - 1, [&](const ChipBreakdown& v) {
    return !same_breakdown(v, headline, r.step_time_s);
  });
  out += others ? " (critical chip " + topo.chip_name(headline.chip) + ")\n" : "\n";
  for (size_t i = 0; i + 1 < r.views.size(); ++i) {
    const ChipBreakdown& v = r.views[i];
    if (same_breakdown(v, headline, r.step_time_s) || (i > 0 && v.chip == r.views[0].chip)) continue;
    out += "  " + v.view + (i > 0 ? " chip " + topo.chip_name(v.chip) : "") + ": " + breakdown_line(v) + "\n";
  }
  return out;
}

}  // namespace

std::string memory_breakdown_text(const MemoryBreakdown& m) {
  std::string out = "params " + human_bytes(m.params_bytes) + ", grads " + human_bytes(m.grads_bytes) + ", optimizer " +
                    human_bytes(m.optimizer_bytes) + ", activations " + human_bytes(m.activations_bytes) +
                    ", logits " + human_bytes(m.logits_bytes);
  if (m.gathered_weights_bytes > 0) out += ", gathered weights " + human_bytes(m.gathered_weights_bytes);
  if (m.unreduced_gradients_bytes > 0) out += ", unreduced expert gradients " + human_bytes(m.unreduced_gradients_bytes);
  if (m.unreduced_gradients_bytes > 0 && m.logits_bytes > 0)
    out += " (the logits and the experts' buffers are live at different times; the larger phase counts)";
  if (m.ring_blocks_bytes > 0) out += ", ring blocks " + human_bytes(m.ring_blocks_bytes);
  return out;
}

std::string training_table(const Scenario& scenario, const RunResult& run, const TrainingReport& r) {
  std::string out;
  char line[512];
  const auto& plan = scenario.training().plan;
  std::snprintf(line, sizeof line, "%s: %s on %s, %s, batch %.0f tokens x %d, simulated %d chips (%s)\n",
                scenario.name.c_str(), scenario.training().model.name.c_str(),
                chips_text(scenario.topology.chip, run.topology.chip_count()).c_str(), r.strategy.c_str(), plan.global_batch_tokens, plan.sequence_length,
                run.simulated.chip_count(), run.fidelity.c_str());
  out += line;
  out += perturbations_line(run);
  std::snprintf(line, sizeof line,
                "step time %s, MFU %.1f%% (HFU %.1f%%), %.1f TFLOP/s/chip, %.0f tokens/s/chip, %.3g B parameters\n",
                human_time(r.step_time_s).c_str(), 100 * r.mfu, 100 * r.hfu, r.tflops_per_s_per_chip,
                r.tokens_per_s_per_chip, r.parameters / 1e9);
  out += line;
  if (r.steps_to_train > 0) {
    const auto& chip = scenario.topology.chip;
    out += "time to train: " + time_to_train_text(r, chip.chip_hour_price_usd, price_origin(chip)) + "\n";
  }
  if (r.pipeline_bubble_fraction > 0) {
    std::snprintf(line, sizeof line, "pipeline bubble %.1f%% of the first stage's span (waiting on other stages)\n", 100 * r.pipeline_bubble_fraction);
    out += line;
  }
  out += breakdown_lines(run, r);
  if (r.moe) {
    const auto& m = r.moe_stats;
    std::snprintf(line, sizeof line,
                  "MoE: %d-way expert parallel (%d experts per chip); AllToAll %s, %s exposed; %.2f%% of tokens "
                  "dropped; busiest expert %.2fx the mean, busiest chip %.2fx (worst layer %.2fx)\n",
                  m.expert_degree, m.experts_per_chip, human_time(r.all_to_all_time_s).c_str(),
                  human_time(r.exposed_all_to_all_s).c_str(), 100 * m.dropped_fraction, m.busiest_expert_over_mean,
                  m.busiest_chip_over_mean, m.max_busiest_chip_over_mean);
    out += line;
  }
  std::snprintf(line, sizeof line, "memory per %s %s of %s (%s): %s\n", memory_holder(scenario.topology.chip),
                human_bytes(r.memory.total_bytes).c_str(),
                human_hbm(scenario.topology.chip.hbm_bytes, scenario.topology.chip.hbm_headroom).c_str(),
                r.fits_hbm ? "fits" : "DOES NOT FIT", memory_breakdown_text(r.memory).c_str());
  out += line;
  std::snprintf(line, sizeof line, "memory peak on the timeline %s at %s (chip 0)\n",
                human_bytes(r.memory_peak_bytes).c_str(), human_time(r.memory_peak_at_s).c_str());
  out += line;
  std::snprintf(line, sizeof line, "layer %d (fwd+bwd, the median chip's time)\n%19s %10s %10s %12s %12s\n", scenario.training().model.layers / 2, "",
                "T_math", "T_comms", "book T_math", "book T_comms");
  out += line;
  for (const auto& l : r.per_layer) {
    if (l.t_math_s == 0 && l.t_comms_s == 0) continue;   // pipelines run stages, not layers
    std::snprintf(line, sizeof line, "  %-16s %10s %10s %12s %12s\n", l.block.c_str(), human_time(l.t_math_s).c_str(),
                  human_time(l.t_comms_s).c_str(), human_time(l.book_t_math_s).c_str(),
                  human_time(l.book_t_comms_s).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "wall time %s\n", human_time(run.wall_time_s).c_str());
  out += line;
  return out;
}

}  // namespace podsim

namespace podsim {

std::string inference_table(const Scenario& scenario, const RunResult& run, const InferenceReport& r) {
  std::string out;
  char line[512];
  const auto& plan = scenario.inference().plan;
  // 2D weight-stationary: D split X ways, F (heads) the rest (inference.md Question 7).
  int d_ways = 1;
  for (int a : plan.d_axes) d_ways *= run.topology.axis_size(a);
  const std::string sharding = plan.d_axes.empty()
                                   ? std::to_string(r.layout.model_degree) + "-way model parallel"
                                   : "2D weight-stationary, D " + std::to_string(d_ways) + "-way x F " +
                                         std::to_string(r.layout.model_degree / d_ways) + "-way";
  std::snprintf(line, sizeof line, "%s: %s %s on %s, batch %d, %d-token %s, %s\n",
                scenario.name.c_str(), scenario.inference().model.name.c_str(), r.decode ? "decode step" : "prefill",
                chips_text(scenario.topology.chip, run.topology.chip_count()).c_str(), plan.batch,
                r.decode ? plan.context_length : plan.prompt_length, r.decode ? "context" : "prompts",
                sharding.c_str());
  out += line;
  out += perturbations_line(run);
  std::snprintf(line, sizeof line, "%s %s (rule of thumb %s): rooflines %s, collectives on the critical path %s",
                r.decode ? "step" : "prefill", human_time(r.step_time_s).c_str(),
                human_time(r.layout.rule_of_thumb_s).c_str(), human_time(r.compute_time_s).c_str(),
                human_time(r.exposed_comm_s).c_str());
  out += line;
  out += r.wait_for_peers_s > 0 ? ", waiting for peers " + human_time(r.wait_for_peers_s) + " (chip 0)\n" : "\n";
  std::snprintf(line, sizeof line, "%.0f tokens/s, %.1f tokens/s/chip; KV cache %s per token; max batch %d\n",
                r.tokens_per_s, r.tokens_per_s_per_chip, human_bytes(r.layout.kv_cache_bytes_per_token).c_str(),
                r.layout.max_batch);
  out += line;
  // No power-of-two slice up to 8192 chips holds the weights: say so rather than "0 chips".
  char smallest[96] = "no slice of up to 8192 chips holds the weights";
  if (r.layout.smallest_slice_chips > 0)
    std::snprintf(smallest, sizeof smallest, "smallest slice %d chips with room for %d caches",
                  r.layout.smallest_slice_chips, r.layout.smallest_slice_kv_caches);
  std::snprintf(line, sizeof line, "memory per %s %s of %s (%s); %s\n", memory_holder(scenario.topology.chip),
                human_bytes(r.layout.memory_per_chip_bytes).c_str(),
                human_hbm(scenario.topology.chip.hbm_bytes, scenario.topology.chip.hbm_headroom).c_str(),
                r.layout.fits_hbm ? "fits" : "DOES NOT FIT", smallest);
  out += line;
  return out;
}

}  // namespace podsim
