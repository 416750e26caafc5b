#include "sim/commands/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "sim/commands/scenario_run.hpp"
#include "sim/report/csv_text.hpp"
#include "sim/report/output_files.hpp"
#include "sim/report/quantiles.hpp"
#include "sim/report/serving_report.hpp"
#include "sim/scenario/input_error.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

namespace {

const SourceLocation kCommandLine{"command line", 0, 0};

[[noreturn]] void bad_slo(const std::string& text, const std::string& why) {
  throw InputError(kCommandLine, "--slo", text,
                   why + "; expected METRIC_STATISTIC<=TIME: a metric of ttft, tpot, itl or e2e, a statistic of "
                         "mean, median or pN (p50, p99, p99.9), and a time with its unit, e.g. 'ttft_p99<=200ms'");
}

// "p99.9" -> 99.9; "median" -> 50; "mean" -> 0.
double statistic_percent(const std::string& text, const std::string& statistic) {
  if (statistic == "mean") return 0;
  if (statistic == "median") return 50;
  if (statistic.size() < 2 || statistic[0] != 'p') bad_slo(text, "unknown statistic '" + statistic + "'");
  const std::string number = statistic.substr(1);
  size_t used = 0;
  double percent = 0;
  try {
    percent = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != number.size() || number.find_first_not_of("0123456789.") != std::string::npos || !(percent > 0) ||
      !(percent < 100))
    bad_slo(text, "percentile '" + number + "' is not a number in (0, 100)");
  return percent;
}

}  // namespace

LatencySlo parse_latency_slo(const std::string& text) {
  LatencySlo slo;
  slo.text = text;
  const size_t op = text.find("<=");
  if (op == std::string::npos) bad_slo(text, "no '<='");
  std::string left = text.substr(0, op);
  left.erase(0, left.find_first_not_of(' '));
  left.erase(left.find_last_not_of(' ') + 1);
  const size_t underscore = left.find('_');
  if (underscore == std::string::npos) bad_slo(text, "no statistic after the metric");
  slo.metric = left.substr(0, underscore);
  slo.statistic = left.substr(underscore + 1);
  if (slo.metric != "ttft" && slo.metric != "tpot" && slo.metric != "itl" && slo.metric != "e2e")
    bad_slo(text, "unknown metric '" + slo.metric + "'");
  slo.percent = statistic_percent(text, slo.statistic);
  try {
    slo.bound_s = parse_time_s(text.substr(op + 2));
  } catch (const std::invalid_argument& e) {
    bad_slo(text, std::string("the bound: ") + e.what());
  }
  if (!(slo.bound_s > 0) || !std::isfinite(slo.bound_s)) bad_slo(text, "the bound is not a finite time > 0");
  return slo;
}

namespace {

// The statistic an SLO bounds, of the distribution it names. No sample (TPOT of one-token
// outputs only) bounds nothing: 0.
double slo_value(const LatencySlo& slo, const ServingStats& st) {
  const Distribution& d = slo.metric == "ttft" ? st.ttft : slo.metric == "tpot" ? st.tpot
                          : slo.metric == "itl" ? st.itl : st.latency;
  if (d.count == 0) return 0;
  return slo.percent == 0 ? d.mean : d.at(slo.percent);
}

// The percentiles every simulation reports: p50 and p99 for the CSV, and each SLO's.
std::string percentiles_yaml(const std::vector<LatencySlo>& slos) {
  std::vector<double> percents = {50, 99};
  for (const auto& slo : slos)
    if (slo.percent > 0 && std::find(percents.begin(), percents.end(), slo.percent) == percents.end())
      percents.push_back(slo.percent);
  std::string yaml = "[";
  for (size_t i = 0; i < percents.size(); ++i) yaml += (i ? ", " : "") + csv_number(percents[i]);
  return yaml + "]";
}

// A rate as the scenario's key reads it back to the same double.
std::string rate_yaml(double rate_per_s) {
  char text[64];
  std::snprintf(text, sizeof text, "%.17g /s", rate_per_s);
  return text;
}

// The scenario with its rate (and servers) set, simulated; the point's figures.
CapacityPoint simulate_point(const CapacityOptions& options, const std::string& rate_key, int servers,
                             double rate_per_s) {
  std::vector<ScenarioOverride> overrides = options.overrides;
  overrides.push_back({"workload.metric_percentiles", percentiles_yaml(options.slos)});
  overrides.push_back({rate_key, rate_yaml(rate_per_s)});
  if (servers > 0) overrides.push_back({"workload.servers", std::to_string(servers)});
  const Scenario scenario = load_scenario(options.scenario_path, overrides);
  const ServingRun run = run_serving(scenario);
  const ServingStats& st = run.stats;
  CapacityPoint p;
  p.servers = servers;
  p.server_count = scenario.serving().config.servers;
  p.rate_per_s = rate_per_s;
  p.ttft_p50_s = st.ttft.at(50), p.ttft_p99_s = st.ttft.at(99);
  p.tpot_p50_s = st.tpot.at(50), p.tpot_p99_s = st.tpot.at(99);
  p.itl_p50_s = st.itl.at(50), p.itl_p99_s = st.itl.at(99);
  p.e2e_p50_s = st.latency.at(50), p.e2e_p99_s = st.latency.at(99);
  p.requests_per_s = st.requests_per_s;
  p.output_tokens_per_s = st.tokens_per_s;
  p.meets_all = true;
  for (const auto& slo : options.slos) {
    p.slo_values_s.push_back(slo_value(slo, st));
    p.slo_met.push_back(p.slo_values_s.back() <= slo.bound_s);
    p.meets_all = p.meets_all && p.slo_met.back();
  }
  return p;
}

// One search over the grid start x (1 + precision)^k, k in [k_min, k_max]: gallop from k = 0
// (steps of 1, 2, 4, ... grid points) up while rates meet every SLO, or down while they fail,
// until the two sides are bracketed; then bisect the bracket to adjacent grid points. Every
// tested rate at or below the answer met every SLO, and the next grid point up failed.
class GridSearch {
 public:
  GridSearch(const CapacityOptions& options, std::string rate_key, int servers, double start, int order_base)
      : options_(options), rate_key_(std::move(rate_key)), servers_(servers), start_(start), order_(order_base) {
    const double step = std::log1p(options.precision);
    const double low = options.rate_min_per_s > 0 ? options.rate_min_per_s : start / 1000;
    const double high = options.rate_max_per_s > 0 ? options.rate_max_per_s : start * 1000;
    k_min_ = static_cast<int>(std::ceil(std::log(low / start) / step - 1e-9));
    k_max_ = static_cast<int>(std::floor(std::log(high / start) / step + 1e-9));
  }

  CapacityResult run() {
    CapacityResult r;
    r.servers = servers_;
    int lo = 0, hi = 0;
    if (meets(0) ? !gallop_up(lo, hi) : !gallop_down(lo, hi)) {
      r.limit = meets(0) ? "at rate_max" : "below rate_min";
    } else {
      while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        (meets(mid) ? lo : hi) = mid;
      }
      r.limit = "found";
      r.next_rate_per_s = rate(hi);
    }
    const bool any = r.limit != "below rate_min";
    if (any) {
      r.max_rate_per_s = rate(lo);
      points_.at(lo).found = true;
    }
    r.server_count = points_.begin()->second.server_count;
    r.simulations = static_cast<int>(points_.size());
    return r;
  }

  std::vector<CapacityPoint> points() const {
    std::vector<CapacityPoint> out;
    for (const auto& [k, p] : points_) out.push_back(p);
    return out;
  }

 private:
  double rate(int k) const { return start_ * std::pow(1 + options_.precision, k); }

  bool meets(int k) {
    auto it = points_.find(k);
    if (it == points_.end()) {
      CapacityPoint p = simulate_point(options_, rate_key_, servers_, rate(k));
      p.order = ++order_;
      if (options_.on_simulation) options_.on_simulation(describe(p));
      it = points_.emplace(k, std::move(p)).first;
    }
    return it->second.meets_all;
  }

  std::string describe(const CapacityPoint& p) const {
    char rate[48];
    std::snprintf(rate, sizeof rate, "%.4g requests/s", p.rate_per_s);
    std::string line = std::to_string(p.server_count) + " model server(s), " + rate + ":";
    for (size_t i = 0; i < options_.slos.size(); ++i)
      line += " " + options_.slos[i].name() + " " + human_time(p.slo_values_s[i]) + (p.slo_met[i] ? " ok" : " over");
    return line;
  }

  // k = 0 met: up until a rate fails (true, [lo, hi] bracketed) or k_max meets (false).
  bool gallop_up(int& lo, int& hi) {
    lo = 0;
    for (int step = 1; lo < k_max_; step *= 2) {
      const int k = std::min(lo + step, k_max_);
      if (!meets(k)) {
        hi = k;
        return true;
      }
      lo = k;
    }
    return false;
  }

  // k = 0 failed: down until a rate meets (true) or k_min fails (false).
  bool gallop_down(int& lo, int& hi) {
    hi = 0;
    for (int step = 1; hi > k_min_; step *= 2) {
      const int k = std::max(hi - step, k_min_);
      if (meets(k)) {
        lo = k;
        return true;
      }
      hi = k;
    }
    return false;
  }

  const CapacityOptions& options_;
  std::string rate_key_;
  int servers_;
  double start_;
  int order_;
  int k_min_ = 0, k_max_ = 0;
  std::map<int, CapacityPoint> points_;
};

// The scenario's rate key and its rate, refusing a load that is not an open-loop rate.
const ServingWorkload& open_loop_serving(const Scenario& base, const std::string& path) {
  if (base.kind() != WorkloadKind::Serving)
    throw InputError({path, 0, 0}, "workload.kind", workload_kind_name(base.kind()),
                     "podsim capacity searches request rates; expected a serving scenario");
  const ServingWorkload& w = base.serving();
  if (w.request_rate_key.empty())
    throw InputError({path, 0, 0}, "workload.requests.trace", w.requests_source,
                     "a trace's arrivals are its own, not a rate podsim capacity can vary; expected poisson:, "
                     "random: or sharegpt: requests");
  if (w.config.max_concurrency > 0)
    throw InputError({path, 0, 0}, "workload.requests.max_concurrency", std::to_string(w.config.max_concurrency),
                     "a closed loop: the client's limit, not the rate, sets the load; expected no max_concurrency "
                     "(podsim capacity offers an open-loop load)");
  return w;
}

void check_options(const CapacityOptions& o) {
  if (o.slos.empty())
    throw InputError(kCommandLine, "--slo", "", "no SLO to meet; expected at least one, e.g. --slo 'ttft_p99<=200ms'");
  if (!(o.precision > 0 && o.precision <= 1))
    throw InputError(kCommandLine, "--precision", csv_number(o.precision), "expected a fraction in (0, 1], e.g. 0.05");
  if (o.rate_min_per_s > 0 && o.rate_max_per_s > 0 && o.rate_min_per_s >= o.rate_max_per_s)
    throw InputError(kCommandLine, "--rate-min", rate_yaml(o.rate_min_per_s), "expected a rate below --rate-max");
}

nlohmann::ordered_json capacity_json(const CapacityReport& report, const CapacityOptions& options) {
  nlohmann::ordered_json j = {{"scenario", report.scenario_name}, {"precision", options.precision}};
  j["slos"] = nlohmann::ordered_json::array();
  for (const auto& slo : options.slos)
    j["slos"].push_back({{"slo", slo.text}, {"metric", slo.metric}, {"statistic", slo.statistic}, {"bound_s", slo.bound_s}});
  j["results"] = nlohmann::ordered_json::array();
  for (const auto& r : report.results) {
    nlohmann::ordered_json row = {{"servers", r.servers}, {"model_servers", r.server_count}, {"limit", r.limit},
                                  {"max_rate_per_s", r.max_rate_per_s}, {"simulations", r.simulations}};
    if (r.limit == "found") row["next_rate_per_s"] = r.next_rate_per_s;
    j["results"].push_back(row);
  }
  return j;
}

}  // namespace

CapacityReport run_capacity(const CapacityOptions& options, const std::string& out_dir) {
  check_options(options);
  const Scenario base = load_scenario(options.scenario_path, options.overrides);
  const ServingWorkload& w = open_loop_serving(base, options.scenario_path);
  double start = options.rate_start_per_s;
  if (start <= 0 && !std::isfinite(w.request_rate_per_s))
    throw InputError({options.scenario_path, 0, 0}, w.request_rate_key, "inf",
                     "every request at once has no rate to start the search from; expected a request rate in the "
                     "scenario or --rate-start");
  if (start <= 0) start = w.request_rate_per_s;
  if ((options.rate_max_per_s > 0 && start > options.rate_max_per_s) || start < options.rate_min_per_s)
    throw InputError(kCommandLine, "--rate-start", rate_yaml(start),
                     "the search starts at this rate (--rate-start, else the scenario's); expected it within "
                     "[--rate-min, --rate-max]");
  CapacityReport report;
  report.scenario_name = base.name;
  const std::vector<int> servers = options.servers.empty() ? std::vector<int>{0} : options.servers;
  // workload.servers counts slices; scaling the start by them keeps each search near its answer.
  const int base_slices = w.config.servers / std::max(1, w.replicas_per_slice);
  int order = 0;
  for (int n : servers) {
    GridSearch search(options, w.request_rate_key, n, n > 0 ? start * n / base_slices : start, order);
    report.results.push_back(search.run());
    order += report.results.back().simulations;
    for (auto& p : search.points()) report.points.push_back(std::move(p));
  }
  for (auto& p : report.points) p.servers = p.servers > 0 ? p.servers : base_slices;
  for (auto& r : report.results) r.servers = r.servers > 0 ? r.servers : base_slices;
  ensure_directory(out_dir, "-o");
  OutputFiles files(out_dir, "-o");
  files.owns({"capacity.csv", "capacity.json", "capacity.png"});
  files.add("capacity.csv", capacity_csv(report, options.slos));
  files.add("capacity.json", capacity_json(report, options).dump(2) + "\n");
  files.commit();
  return report;
}

std::string capacity_csv(const CapacityReport& report, const std::vector<LatencySlo>& slos) {
  std::string out = "servers,model_servers,rate_per_s,order,ttft_p50_s,ttft_p99_s,tpot_p50_s,tpot_p99_s,itl_p50_s,"
                    "itl_p99_s,e2e_p50_s,e2e_p99_s,requests_per_s,output_tokens_per_s";
  for (const auto& slo : slos) out += ",slo_" + slo.name() + "_s,slo_" + slo.name() + "_bound_s,slo_" + slo.name() + "_met";
  out += ",meets_slos,found\n";
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  for (const auto& p : report.points) {
    out += std::to_string(p.servers) + "," + std::to_string(p.server_count) + "," + csv_number(p.rate_per_s) + "," +
           std::to_string(p.order);
    for (double v : {p.ttft_p50_s, p.ttft_p99_s, p.tpot_p50_s, p.tpot_p99_s, p.itl_p50_s, p.itl_p99_s, p.e2e_p50_s,
                     p.e2e_p99_s, p.requests_per_s, p.output_tokens_per_s})
      out += "," + csv_number(v);
    for (size_t i = 0; i < slos.size(); ++i)
      out += "," + csv_number(p.slo_values_s[i]) + "," + csv_number(slos[i].bound_s) + "," + b(p.slo_met[i]);
    out += "," + b(p.meets_all) + "," + b(p.found) + "\n";
  }
  return out;
}

std::string capacity_table(const CapacityReport& report, const CapacityOptions& options) {
  std::string out;
  char line[512];
  for (const auto& r : report.results) {
    if (r.limit == "below rate_min")
      std::snprintf(line, sizeof line, "%d model server(s): no rate meets every SLO, down to the lowest tested (%d simulations)\n",
                    r.server_count, r.simulations);
    else if (r.limit == "at rate_max")
      std::snprintf(line, sizeof line, "%d model server(s): every SLO met up to %.4g requests/s, the highest tested (--rate-max; %d simulations)\n",
                    r.server_count, r.max_rate_per_s, r.simulations);
    else
      std::snprintf(line, sizeof line, "%d model server(s): %.4g requests/s meets every SLO; %.4g (+%.3g%%) does not (%d simulations)\n",
                    r.server_count, r.max_rate_per_s, r.next_rate_per_s, 100 * options.precision, r.simulations);
    out += line;
  }
  return out;
}

}  // namespace podsim
