#include "sim/commands/validate.hpp"

#include <cmath>
#include <cstdio>

#include "collectives/ring_fluid.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/report/report.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

struct MeshCase {
  std::string label;
  std::string preset;
  std::vector<int> sizes;
  std::vector<std::vector<int>> axis_sets;
};

std::vector<MeshCase> grid_meshes(bool quick) {
  if (quick) {
    return {{"v5e 16", "v5e", {16}, {{0}}},
            {"v5e 8x4", "v5e", {8, 4}, {{0}, {1}, {0, 1}}},
            {"v4p 4x4x4", "v4p", {4, 4, 4}, {{0}, {0, 1}, {0, 1, 2}}}};
  }
  return {{"v5e 16", "v5e", {16}, {{0}}},
          {"v5e 8x4", "v5e", {8, 4}, {{0}, {1}, {0, 1}}},
          {"v5e 16x16", "v5e", {16, 16}, {{0}, {0, 1}}},
          {"v4p 4x4x4", "v4p", {4, 4, 4}, {{0}, {0, 1}, {0, 1, 2}}},
          {"v4p 16x16x16", "v4p", {16, 16, 16}, {{0}, {0, 1}, {0, 1, 2}}}};
}

std::vector<double> grid_sizes(bool quick) {
  if (quick) return {1024.0, 1024.0 * 1024, 256.0 * 1024 * 1024};
  std::vector<double> sizes;
  for (double b = 1024.0; b <= 1024.0 * 1024 * 1024; b *= 32) sizes.push_back(b);  // 1 KiB .. 1 GiB
  return sizes;
}

// AllToAll blocks replayed at most per grid point (after symmetry reduction).
constexpr double kMaxAllToAllBlocks = 200000;

// A row is within a formula when |simulated - formula| <= 1% of the formula.
constexpr double kTolerance = 0.01;
// An effect is named when it moves the prediction by more than this.
constexpr double kEffectThreshold = 0.001;

std::string percent(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", 100 * (ratio - 1));
  return buf;
}

std::string number(double value, const char* format = "%.4g") {
  char buf[32];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

bool moves(double before, double after) {
  return before > 0 && std::fabs(after / before - 1) > kEffectThreshold;
}

// The ring collectives (AllGather, ReduceScatter, AllReduce): the schedule's bandwidth term,
// then the per-hop floor, then the parts' overlap.
Prediction predict_ring(CollectiveKind kind, const std::vector<AxisInfo>& axes, const std::vector<std::string>& names,
                        double bytes, double w_uni, double t_min, const FormulaResult& book) {
  Prediction out;
  const RingScheduleTime schedule = ring_schedule_time(kind, axes, bytes, w_uni, t_min);
  size_t real_axes = 0;
  bool any_line = false;
  for (const auto& a : axes) {
    real_axes += a.size > 1 ? 1 : 0;
    any_line = any_line || (a.size > 1 && !a.wraparound);
  }
  // 1. The schedule's bandwidth term against the book's, in the book's max form.
  const double with_schedule_bw = std::max(book.latency_time_s, schedule.bandwidth_time_s);
  if (moves(book.time_s, with_schedule_bw)) {
    const double ratio = schedule.bandwidth_time_s / book.bandwidth_time_s;
    if (real_axes > 1) {
      out.effects.push_back("multi-axis schedule " + percent(with_schedule_bw / book.time_s) +
                            " (each part's earlier phases also move its share over the other axes: the "
                            "schedule's sum of steps*m/W_uni is " + number(ratio, "%.4f") +
                            " x the book's bandwidth term)");
    } else {
      out.effects.push_back("ring schedule " + percent(with_schedule_bw / book.time_s) +
                            " (floor(n/2) steps of V/n on an odd ring: " + number(ratio, "%.4f") +
                            " x the book's V/W_bidi)");
    }
  }
  // 2. The floor max(T_min, m/W) per hop, where the book takes the max of the sums.
  if (moves(with_schedule_bw, schedule.time_s)) {
    out.effects.push_back("per-hop floor " + percent(schedule.time_s / with_schedule_bw) + " (" +
                          std::to_string(schedule.floored_phases) + " of " + std::to_string(schedule.phases) +
                          " phases move messages under T_min*W_uni = " + number(t_min * w_uni / 1e3, "%.3g") +
                          " kB, so each of their hops takes T_min; the book takes the max of the sums)");
  }
  out.time_s = schedule.time_s;
  out.method = "closed form";
  // 3. Parts sharing links: the closed form is then a lower bound; the fluid model gives the time.
  if (schedule.parts_overlap) {
    const double fluid_s = ring_fluid_time_s(kind, axes, bytes, w_uni, t_min);
    out.method = "fluid model";
    if (moves(schedule.time_s, fluid_s)) {
      std::string which;
      for (size_t i = 0; i < axes.size(); ++i) {
        if (axes[i].size > 2 && !axes[i].wraparound) which += names.at(i);
      }
      out.effects.push_back(
          (any_line ? "no wraparound: parts overlap " : "parts overlap ") + percent(fluid_s / schedule.time_s) +
          (any_line ? " (chips of the " + which + " line" + (which.size() > 1 ? "s" : "") +
                          " finish a phase at different times, so parts meet on the same links; "
                    : " (the parts' phases on one axis do not line up and share its links; ") +
          "sharing computed by the fluid model of the schedule, the closed form's " +
          human_time(schedule.time_s) + " being its lower bound)");
    }
    out.time_s = fluid_s;
    out.lower_bound_s = schedule.time_s;
  }
  return out;
}

Prediction predict_all_to_all(const std::vector<AxisInfo>& axes, const std::vector<std::string>& names, double bytes,
                              double w_uni, double t_min, const FormulaResult& book) {
  Prediction out;
  const AllToAllRouteTime routes = all_to_all_route_time(axes, bytes, w_uni, t_min);
  out.time_s = routes.time_s;
  out.method = "closed form";
  if (!moves(book.time_s, routes.time_s)) return out;
  const double with_routes_bw = std::max(book.latency_time_s, routes.bandwidth_time_s);
  if (moves(book.time_s, with_routes_bw) && routes.busiest_axis >= 0) {
    const AxisInfo& axis = axes[routes.busiest_axis];
    const std::string name = names.at(routes.busiest_axis);
    std::string where = axis.wraparound ? "every link of the " + name + " ring"
                                        : "the middle link of the " + name + " line";
    out.effects.push_back(std::string(axis.wraparound ? "dimension-order routes " : "no wraparound ") +
                          percent(with_routes_bw / book.time_s) +
                          " (busiest link: " + where + " carries " + number(routes.busiest_link_blocks, "%.6g") +
                          " blocks of V/N^2 one way; the book's V*max(n)/(4 N W_bidi) is " +
                          number(routes.busiest_link_blocks * book.bandwidth_time_s / routes.bandwidth_time_s,
                                 "%.6g") +
                          " blocks)");
  }
  if (moves(with_routes_bw, routes.time_s)) {
    out.effects.push_back("longest route " + percent(routes.time_s / with_routes_bw) +
                          " (" + std::to_string(routes.longest_route_hops) +
                          " hops x T_min: n-1 along a line, floor(n/2) round a ring; the book counts floor(n/2))");
  }
  return out;
}

}  // namespace

Prediction predict_collective(CollectiveKind kind, const std::vector<AxisInfo>& axes,
                              const std::vector<std::string>& names, double bytes, double w_uni, double t_min,
                              const FormulaResult& book) {
  if (kind == CollectiveKind::AllToAll) return predict_all_to_all(axes, names, bytes, w_uni, t_min, book);
  return predict_ring(kind, axes, names, bytes, w_uni, t_min, book);
}

std::string_view to_string(RowStatus status) {
  switch (status) {
    case RowStatus::Book: return "book";
    case RowStatus::Explained: return "explained";
    case RowStatus::Unexplained: return "unexplained";
  }
  return "?";
}

void judge_row(ValidationRow& row, const Prediction& prediction) {
  row.predicted_s = prediction.time_s;
  row.method = prediction.method;
  row.predicted_error = prediction.time_s > 0 ? (row.simulated_s - prediction.time_s) / prediction.time_s : 0;
  const bool near_book = std::fabs(row.rel_error) <= kTolerance;
  // Below a proven lower bound is wrong whatever the model says.
  const bool below_bound = row.simulated_s < prediction.lower_bound_s * (1 - 1e-9);
  const bool near_prediction =
      prediction.time_s > 0 && std::fabs(row.predicted_error) <= kTolerance && !below_bound;
  std::string effects;
  for (const auto& e : prediction.effects) effects += (effects.empty() ? "" : "; ") + e;
  const std::string predicted =
      prediction.time_s > 0 ? "predicted " + human_time(prediction.time_s) + " by " + prediction.method : "";
  if (near_book && (near_prediction || prediction.time_s <= 0)) {
    row.status = RowStatus::Book;
    row.note.clear();
  } else if (near_prediction) {
    row.status = RowStatus::Explained;
    row.note = (effects.empty() ? "" : effects + "; ") + predicted + ", simulated " +
               percent(1 + row.predicted_error);
  } else {
    row.status = RowStatus::Unexplained;
    row.note = below_bound ? "unexplained: simulated " + human_time(row.simulated_s) +
                                 " is below the schedule's lower bound " + human_time(prediction.lower_bound_s)
               : prediction.time_s > 0
                   ? "unexplained: simulated " + percent(1 + row.predicted_error) + " from the " + predicted +
                         (effects.empty() ? "" : " (" + effects + ")")
                   : "unexplained: no model of podsim's schedule covers this case";
  }
}

namespace {

// One collective on an idle pod, as a benchmark runs it.
RunResult run_alone(const ChipSpec& chip, const std::vector<int>& sizes, const std::vector<bool>& wraps,
                    CollectiveKind kind, const std::vector<int>& axes, double bytes) {
  const char* axis_names[] = {"X", "Y", "Z"};
  Scenario scenario;
  scenario.path = "<validate>";
  scenario.name = "validate";
  scenario.topology.chip = chip;
  for (size_t a = 0; a < sizes.size(); ++a) scenario.topology.axes.push_back({axis_names[a], sizes[a], wraps[a]});
  OperationSpec op_spec;
  op_spec.name = "op";
  op_spec.collective.kind = kind;
  op_spec.collective.axes = axes;
  op_spec.collective.bytes = bytes;
  scenario.collectives().operations.push_back(op_spec);
  return run_scenario(scenario, {});
}

}  // namespace

ValidationResult run_validation(const ValidationOptions& options) {
  std::vector<ValidationRow> rows;
  std::vector<std::string> skipped;
  const auto sizes = grid_sizes(options.quick);
  const CollectiveKind kinds[] = {CollectiveKind::AllGather, CollectiveKind::ReduceScatter, CollectiveKind::AllReduce,
                                  CollectiveKind::AllToAll};
  const char* axis_names[] = {"X", "Y", "Z"};
  for (const auto& mesh : grid_meshes(options.quick)) {
    const ChipSpec& chip = *find_chip_preset(mesh.preset);
    const auto wraps = default_wraparound(chip, mesh.sizes);
    for (const auto& axes : mesh.axis_sets) {
      for (CollectiveKind kind : kinds) {
        double group = 1;
        for (int a : axes) group *= mesh.sizes[a];
        // Blocks the replay will simulate: the reduction keeps one sender per translation class
        // of the wrapped axes; an axis without wraparound keeps all its senders.
        double senders = 1;
        for (int a : axes) senders *= wraps[a] ? 1 : mesh.sizes[a];
        if (kind == CollectiveKind::AllToAll && senders * group > kMaxAllToAllBlocks) {
          std::string what = mesh.label + " all_to_all over ";
          for (int a : axes) what += axis_names[a];
          skipped.push_back(what + " (" + std::to_string(static_cast<long long>(senders * group)) +
                            " blocks to replay: beyond reach)");
          continue;
        }
        std::vector<AxisInfo> info;
        std::vector<std::string> names;
        for (int a : axes) {
          info.push_back({mesh.sizes[a], static_cast<bool>(wraps[a])});
          names.push_back(axis_names[a]);
        }
        if (options.progress) {
          std::string label = mesh.label + " " + std::string(to_string(kind)) + " over ";
          for (int a : axes) label += axis_names[a];
          options.progress(label);
        }
        // One run per size: each collective starts on an idle pod, as a benchmark would.
        for (double bytes : sizes) {
          const RunResult run = run_alone(chip, mesh.sizes, wraps, kind, axes, bytes);
          const auto& op = run.operations[0];
          // Every collective validate sweeps has the book's closed form.
          if (!op.analytic()) throw std::logic_error(std::string(to_string(kind)) + " has no closed form to validate");
          const FormulaResult& analytic = *op.analytic();
          ValidationRow row;
          row.collective = std::string(to_string(kind));
          for (int a : axes) row.axes += axis_names[a];
          row.mesh = mesh.label;
          for (int a : axes) {
            if (!row.wraparound.empty()) row.wraparound += " ";
            if (axes.size() > 1) row.wraparound += std::string(axis_names[a]) + ":";
            row.wraparound += run.topology.wraps(a) ? "yes" : "no";
          }
          row.bytes = bytes;
          row.analytic_s = analytic.time_s;
          row.simulated_s = op.time_s;
          row.rel_error = (op.time_s - analytic.time_s) / analytic.time_s;
          row.regime = analytic.regime;
          Prediction prediction = predict_collective(kind, info, names, bytes, chip.neighbor_bandwidth_Bps(),
                                                     chip.hop_latency_s, analytic);
          prediction.time_s *= 1 + options.prediction_skew;
          judge_row(row, prediction);
          rows.push_back(std::move(row));
        }
      }
    }
  }
  return {rows, skipped};
}

std::string validation_csv(const std::vector<ValidationRow>& rows) {
  std::string out =
      "collective,axes,mesh,wraparound,bytes,analytic_s,simulated_s,rel_error,predicted_s,predicted_error,method,"
      "regime,status,note\n";
  char buf[192];
  for (const auto& r : rows) {
    out += r.collective + "," + r.axes + "," + r.mesh + "," + r.wraparound + ",";
    std::snprintf(buf, sizeof buf, "%.0f,%.9g,%.9g,%.6f,%.9g,%.6f,", r.bytes, r.analytic_s, r.simulated_s,
                  r.rel_error, r.predicted_s, r.predicted_error);
    out += buf + r.method + "," + r.regime + "," + std::string(to_string(r.status)) + ",\"" + r.note + "\"\n";
  }
  return out;
}

}  // namespace podsim
