#include "sim/commands/validate.hpp"

#include <cmath>
#include <cstdio>

#include "sim/commands/scenario_run.hpp"

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

std::string explain(const ValidationRow& row, CollectiveKind kind, const Topology& topo, const std::vector<int>& axes,
                    const FormulaResult& book) {
  std::vector<std::string> effects;
  bool all_wrap = true;
  for (int a : axes) all_wrap = all_wrap && topo.wraps(a);
  if (kind == CollectiveKind::AllToAll) {
    effects.push_back("AllToAll contention: dimension-order routes load links unevenly and blocks finish at "
                      "different times; the book's V*max(A,B,C)/(4*N*W) assumes even load");
    if (!all_wrap) effects.push_back("no wraparound: routes run the length of the line");
  } else {
    if (axes.size() > 1) {
      effects.push_back("multi-axis schedule: each part's first phase moves 1/X of its share over another axis "
                        "before the main phase, which the book's V/(N_axes*W) leaves out");
    }
    if (book.latency_time_s > 0.2 * book.bandwidth_time_s && book.bandwidth_time_s > 0.2 * book.latency_time_s) {
      effects.push_back("mixed regime: the floor max(T_min, b/W) applies per hop, the book's max to the whole");
    }
    if (!all_wrap && axes.size() > 1) {
      effects.push_back("no wraparound: the parts' line phases overlap on the same links, which the book's "
                        "per-axis max leaves out");
    }
  }
  std::string note;
  for (const auto& e : effects) note += (note.empty() ? "" : "; ") + e;
  if (note.empty()) note = "unexplained";
  return note;
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
        if (options.progress) {
          std::string label = mesh.label + " " + std::string(to_string(kind)) + " over ";
          for (int a : axes) label += axis_names[a];
          options.progress(label);
        }
        // One run per size: each collective starts on an idle pod, as a benchmark would.
        for (double bytes : sizes) {
          Scenario scenario;
          scenario.path = "<validate>";
          scenario.name = "validate";
          scenario.topology.chip = chip;
          for (size_t a = 0; a < mesh.sizes.size(); ++a) {
            scenario.topology.axes.push_back({axis_names[a], mesh.sizes[a], static_cast<bool>(wraps[a])});
          }
          OperationSpec op_spec;
          op_spec.name = "op";
          op_spec.collective.kind = kind;
          op_spec.collective.axes = axes;
          op_spec.collective.bytes = bytes;
          scenario.operations.push_back(op_spec);
          const RunResult run = run_scenario(scenario, {});
          const auto& op = run.operations[0];
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
          row.analytic_s = op.analytic.time_s;
          row.simulated_s = op.time_s;
          row.rel_error = (op.time_s - op.analytic.time_s) / op.analytic.time_s;
          row.regime = op.analytic.regime;
          if (std::fabs(row.rel_error) > 0.01) row.note = explain(row, kind, run.topology, axes, op.analytic);
          rows.push_back(std::move(row));
        }
      }
    }
  }
  return {rows, skipped};
}

std::string validation_csv(const std::vector<ValidationRow>& rows) {
  std::string out = "collective,axes,mesh,wraparound,bytes,analytic_s,simulated_s,rel_error,regime,note\n";
  char buf[128];
  for (const auto& r : rows) {
    out += r.collective + "," + r.axes + "," + r.mesh + "," + r.wraparound + ",";
    std::snprintf(buf, sizeof buf, "%.0f,%.9g,%.9g,%.6f,", r.bytes, r.analytic_s, r.simulated_s, r.rel_error);
    out += buf + r.regime + ",\"" + r.note + "\"\n";
  }
  return out;
}

}  // namespace podsim
