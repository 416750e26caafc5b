#pragma once
// What every trace.json must satisfy beyond spans nesting (test_scenarios.cpp): flow arrows
// pair up and bind to slices, counters stay in range.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace podsim_test {

struct TraceCounts {
  size_t send_flows = 0;
  size_t hop_flows = 0;
  size_t counter_events = 0;
  size_t hbm_counters = 0;
};

inline TraceCounts check_flows_and_counters(const nlohmann::json& trace) {
  TraceCounts counts;
  // Spans per track, in whole nanoseconds, to check that each flow end lies inside one (where
  // Perfetto binds it: the "s" always, the "f" because of bp "e").
  std::map<std::pair<long long, long long>, std::vector<std::pair<long long, long long>>> spans;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    const long long ts = std::llround(e.at("ts").get<double>() * 1000);
    const long long dur = std::llround(e.at("dur").get<double>() * 1000);
    spans[{e.at("pid").get<long long>(), e.at("tid").get<long long>()}].push_back({ts, ts + dur});
  }
  auto inside_a_span = [&](const nlohmann::json& e) {
    const auto it = spans.find({e.at("pid").get<long long>(), e.at("tid").get<long long>()});
    if (it == spans.end()) return false;
    const long long ts = std::llround(e.at("ts").get<double>() * 1000);
    for (const auto& [start, end] : it->second) {
      if (start <= ts && ts <= end) return true;
    }
    return false;
  };
  // Perfetto keys a v1 flow by (id, cat, name).
  using Key = std::tuple<long long, std::string, std::string>;
  std::map<Key, double> starts, finishes;
  size_t bad_binding = 0, duplicate = 0;
  for (const auto& e : trace.at("traceEvents")) {
    const std::string ph = e.at("ph");
    if (ph == "s" || ph == "f") {
      const Key key{e.at("id").get<long long>(), e.at("cat"), e.at("name")};
      auto& side = ph == "s" ? starts : finishes;
      duplicate += side.count(key);
      side[key] = e.at("ts").get<double>();
      if (!inside_a_span(e)) ++bad_binding;
      if (ph == "f") CHECK(e.at("bp") == "e");
      if (ph == "s") (e.at("cat") == "send_flow" ? counts.send_flows : counts.hop_flows) += 1;
    }
    if (ph == "C") {
      counts.counter_events += 1;
      const std::string name = e.at("name");
      if (name == "HBM used (bytes)") counts.hbm_counters += 1;
      for (const auto& [series, value] : e.at("args").items()) {
        INFO(name << " " << series);
        CHECK(value.get<double>() >= 0);
        if (name.find("fraction") != std::string::npos) CHECK(value.get<double>() <= 1 + 1e-9);
      }
    }
  }
  CHECK(bad_binding == 0);
  CHECK(duplicate == 0);
  CHECK(starts.size() == finishes.size());
  size_t unmatched = 0, backwards = 0;
  for (const auto& [key, ts] : starts) {
    const auto it = finishes.find(key);
    if (it == finishes.end()) ++unmatched;
    else if (it->second < ts) ++backwards;
  }
  CHECK(unmatched == 0);
  CHECK(backwards == 0);
  return counts;
}

}  // namespace podsim_test
