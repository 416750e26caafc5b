#include "sim/commands/compare.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "sim/commands/sweep.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/report/output_files.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/summary_field_names.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace fs = std::filesystem;

namespace {

// The workload's headline time: a step, or the collectives' span, or the serving latency.
void fill_metrics(const nlohmann::json& j, CompareRow& row) {
  const auto& t = j.at("topology");
  row.chips = t.value("chips", 0.0);
  row.diameter_hops = t.value("diameter_hops", 0.0);
  row.bisection_links = t.value("bisection_links", 0.0);
  row.wraparound.clear();
  for (const auto& a : t.value("axes", nlohmann::json::array())) {
    if (a.value("wraparound", false)) row.wraparound += (row.wraparound.empty() ? "" : " ") + a.value("name", "");
  }
  if (row.wraparound.empty()) row.wraparound = "-";
  for (const char* key : {"step_time_s", "decode_step_time_s", "prefill_time_s"}) {
    if (j.contains(key) && (std::string(key) != "prefill_time_s" || !j.contains("ttft_s"))) {
      row.time_metric = key;
      row.time_s = j.at(key).get<double>();
      break;
    }
  }
  if (row.time_metric.empty() && j.contains("latency_s")) {
    row.time_metric = "latency_s.mean";
    row.time_s = j.at("latency_s").at("mean").get<double>();
  }
  if (row.time_metric.empty()) {
    row.time_metric = "total_time_s";
    row.time_s = j.value("total_time_s", 0.0);
    double bytes = 0;
    for (const auto& op : j.value("operations", nlohmann::json::array())) {
      if (op.value("kind", "") == "compute") continue;
      // nccl-tests' size, as each op's algbw counts it (an AllToAll's per-rank buffer).
      bytes += op.value("size_bytes", op.value("bytes", 0.0)) * op.value("repeat", 1.0);
      if (op.contains("hops")) row.hops = std::max(row.hops, op.at("hops").get<double>()), row.has_hops = true;
    }
    if (bytes > 0 && row.time_s > 0) {
      row.algbw_Bps = bytes / row.time_s;
      row.has_algbw = true;
    }
  }
  // The figures beside the time: the summary field table's compare rows.
  auto figure = [&](CompareColumn column, double& value, bool& has) {
    const std::string field = summary_compare_field(column);
    if (j.contains(field)) value = j.at(field).get<double>(), has = true;
  };
  figure(kCompareExposedComm, row.exposed_comm_s, row.has_exposed);
  figure(kCompareMfu, row.mfu, row.has_mfu);
  figure(kCompareTokens, row.tokens_per_s_per_chip, row.has_tokens);
}

}  // namespace

std::vector<CompareRow> run_compare(const CompareOptions& options, std::string* scenario_name) {
  const Scenario base = load_scenario(options.scenario_path, options.overrides);
  if (scenario_name != nullptr) *scenario_name = base.name;
  std::vector<std::string> topologies = options.topologies, chips = options.chips;
  if (topologies.empty()) topologies = base.compare.topologies;
  if (chips.empty()) chips = base.compare.chips;
  if (topologies.empty())
    throw InputError({options.scenario_path, 0, 0}, "compare.topologies", "",
                     "no shapes to compare; expected --topologies 4x4x4,8x8 or a compare: block in the scenario");
  SweepOptions sweep;
  sweep.scenario_path = options.scenario_path;
  sweep.out_dir = options.out_dir;
  sweep.jobs = options.jobs;
  sweep.podsim_binary = options.podsim_binary;
  sweep.on_progress = options.on_progress;
  sweep.stop_requested = options.stop_requested;
  // Fixed overrides are axes of one value: a point's --set list is then overrides, chip, shape.
  for (const auto& o : options.overrides) sweep.axes.push_back({o.key, {o.value}});
  if (!chips.empty()) sweep.axes.push_back({"hardware.preset", chips});
  sweep.axes.push_back({"topology.mesh", topologies});
  run_sweep(sweep);
  std::vector<CompareRow> rows;
  for (const auto& point : sweep_grid(sweep.axes)) {
    CompareRow row;
    row.chip = chips.empty() ? base.topology.chip.name : point.overrides[options.overrides.size()].value;
    row.topology = point.overrides.back().value;
    const fs::path dir = point_dir(options.out_dir, point.index);
    // As sweep.csv has it: a point's files count only when run on these inputs (a stopped
    // compare leaves an earlier run's there), and a point killed or never started says so.
    const bool done = point_done(options.out_dir, point.index, point_inputs(sweep, point));
    if (done && fs::exists(dir / "summary.json")) {
      // Points run with --allow-oom (sweep.cpp): a plan that does not fit HBM has its figures,
      // under its own status.
      const auto summary = nlohmann::json::parse(read_text_file((dir / "summary.json").string()));
      row.status = summary.value("fits_hbm", true) ? "ok" : "does_not_fit";
      fill_metrics(summary, row);
    } else if (done) {
      row.status = "error";
      row.error = read_message((dir / "error.txt").string());
    } else if (fs::exists(dir / "interrupted.txt")) {
      row.status = "interrupted";
      row.error = read_message((dir / "interrupted.txt").string());
    } else {
      row.status = "missing";
      row.error = "not run: the compare stopped before this shape started; the next compare runs it";
    }
    rows.push_back(row);
  }
  OutputFiles files(options.out_dir);
  // compare.png is drawn after, from this CSV: an older one would show other rows if the plot fails.
  files.owns({"compare.csv", "compare.png"});
  files.add("compare.csv", compare_csv(rows));
  files.commit();
  return rows;
}

std::string compare_csv(const std::vector<CompareRow>& rows) {
  std::string out =
      "topology,chip,status,error,chips,wraparound,diameter_hops,bisection_links,hops,time_metric,time_s,algbw_Bps," +
      summary_compare_field(kCompareExposedComm) + "," + summary_compare_field(kCompareMfu) + "," +
      summary_compare_field(kCompareTokens) + "\n";
  for (const auto& r : rows) {
    auto opt = [](bool has, double v) { return has ? csv_number(v) : std::string(); };
    // A row that did not run has no figures, not zeros; one that does not fit HBM ran.
    const bool ok = r.status == "ok" || r.status == "does_not_fit";
    out += csv_field(r.topology) + "," + r.chip + "," + r.status + "," + csv_field(r.error) + "," + opt(ok, r.chips) +
           "," + r.wraparound + "," + opt(ok, r.diameter_hops) + "," + opt(ok, r.bisection_links) + "," +
           opt(r.has_hops, r.hops) + "," + r.time_metric + "," + opt(ok, r.time_s) + "," + opt(r.has_algbw, r.algbw_Bps) + "," +
           opt(r.has_exposed, r.exposed_comm_s) + "," + opt(r.has_mfu, r.mfu) + "," +
           opt(r.has_tokens, r.tokens_per_s_per_chip) + "\n";
  }
  return out;
}

std::string compare_table(const std::vector<CompareRow>& rows) {
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%-10s %-5s %6s %-9s %8s %9s %5s %-19s %11s %12s %11s %7s %12s\n", "topology",
                "chip", "chips", "wraps", "diameter", "bisection", "hops", "time metric", "time", "algbw", "exposed",
                "MFU", "tokens/s/chip");
  out += buf;
  for (const auto& r : rows) {
    if (r.status != "ok" && r.status != "does_not_fit") {
      std::snprintf(buf, sizeof buf, "%-10s %-5s %s: %s\n", r.topology.c_str(), r.chip.c_str(), r.status.c_str(),
                    r.error.c_str());
      out += buf;
      continue;
    }
    char mfu[16] = "-", tokens[24] = "-";
    if (r.has_mfu) std::snprintf(mfu, sizeof mfu, "%.1f%%", 100 * r.mfu);
    if (r.has_tokens) std::snprintf(tokens, sizeof tokens, "%.4g", r.tokens_per_s_per_chip);
    char hops[16] = "-";
    if (r.has_hops) std::snprintf(hops, sizeof hops, "%.0f", r.hops);
    std::snprintf(buf, sizeof buf, "%-10s %-5s %6.0f %-9s %8.0f %9.0f %5s %-19s %11s %12s %11s %7s %12s\n",
                  r.topology.c_str(), r.chip.c_str(), r.chips, r.wraparound.c_str(), r.diameter_hops,
                  r.bisection_links, hops, r.time_metric.c_str(), human_time(r.time_s).c_str(),
                  r.has_algbw ? human_bandwidth(r.algbw_Bps).c_str() : "-",
                  r.has_exposed ? human_time(r.exposed_comm_s).c_str() : "-",
                  mfu, tokens);
    out += buf;
    if (r.status == "does_not_fit") out.insert(out.size() - 1, "  (does not fit HBM)");
  }
  return out;
}

}  // namespace podsim
