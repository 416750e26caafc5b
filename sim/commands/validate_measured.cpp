#include "sim/commands/validate_measured.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "sim/commands/calibrate.hpp"
#include "sim/commands/calibration_report.hpp"
#include "sim/scenario/published_figures.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {

std::string ProfileChoice::path_for(const std::string& profile) const {
  if (!file.empty()) return file;
  if (directory.empty()) return "";
  return (std::filesystem::path(directory) / (profile + ".yaml")).string();
}

void check_profile_choice(const MeasurementFile& file, const ProfileChoice& profiles) {
  const auto names = file.profile_names();
  if (!profiles.file.empty() && names.size() > 1) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    throw InputError({"command line", 0, 0}, "--profile", profiles.file,
                     "one profile for a file of " + std::to_string(names.size()) + " profiles (" + list +
                         "); expected --profiles DIR with one PROFILE.yaml for each");
  }
  for (const auto& name : names) {
    const std::string path = profiles.path_for(name);
    if (path.empty()) continue;
    if (!profiles.directory.empty() && !std::filesystem::is_regular_file(path)) {
      const auto first = std::find_if(file.measurements.begin(), file.measurements.end(),
                                      [&](const Measurement& m) { return m.profile == name; });
      throw InputError(first->where, "profile", name,
                       "no profile file " + path + "; expected one per profile name in --profiles " + profiles.directory +
                           " (podsim calibrate -o DIR writes them)");
    }
    load_profile(path);   // a bad profile is reported as itself, first
  }
}

std::vector<MeasuredComparison> compare_measurements(const MeasurementFile& file, const ProfileChoice& profiles,
                                                     int jobs) {
  // Every row's scenario first: a profile's rows on two chips are refused before any run.
  std::vector<Measurement> resolved = file.measurements;
  std::vector<Scenario> scenarios;
  for (auto& m : resolved) scenarios.push_back(load_measurement_scenario(m));
  check_one_chip_per_profile(file, scenarios);
  // Then every run at once, `jobs` side by side: each row on the ideal machine, and under its
  // profile where one is given (each profile file loaded once).
  std::vector<const Measurement*> runs;
  for (const Measurement& m : resolved) runs.push_back(&m);
  std::vector<Scenario> runs_scenarios = std::move(scenarios);
  std::map<std::string, CalibrationProfile> loaded;
  std::vector<int> with_profile(resolved.size(), -1);
  for (size_t i = 0; i < resolved.size(); ++i) {
    Measurement& m = resolved[i];
    const std::string path = profiles.path_for(m.profile);
    if (path.empty()) continue;
    if (!loaded.count(path)) loaded.emplace(path, load_profile(path));
    const std::string absolute = std::filesystem::absolute(path).string();
    with_profile[i] = static_cast<int>(runs.size());
    runs.push_back(&m);
    runs_scenarios.push_back(load_measurement_scenario(m, {{"hardware.profile", "\"" + absolute + "\""}}));
  }
  const std::vector<double> predicted = measure_all(runs, std::move(runs_scenarios), jobs);
  std::vector<MeasuredComparison> rows;
  for (size_t i = 0; i < resolved.size(); ++i) {
    const Measurement& m = resolved[i];
    MeasuredComparison row{m.name, m.profile, m.field, m.source, m.published ? published_text(*m.published) : "",
                           m.measured, predicted[i], std::nullopt, std::nullopt};
    if (with_profile[i] >= 0) {
      row.profile_predicted = predicted[with_profile[i]];
      const auto& loo = loaded.at(profiles.path_for(m.profile)).leave_one_out;
      if (const auto it = loo.find(m.name); it != loo.end()) row.leave_one_out_predicted = it->second;
    }
    rows.push_back(row);
  }
  return rows;
}

namespace {

struct Rms {
  double default_sum = 0, profile_sum = 0, worst = 0;
  size_t rows = 0;
  std::string line(bool profiles) const {
    char text[160];
    std::snprintf(text, sizeof text, "rms error: default %.1f%%", 100 * std::sqrt(default_sum / rows));
    std::string out = text;
    if (profiles) {
      std::snprintf(text, sizeof text, ", profile %.1f%% (max %.1f%%)", 100 * std::sqrt(profile_sum / rows), 100 * worst);
      out += text;
    }
    return out;
  }
};

std::string comparison_line(const MeasuredComparison& r, Rms& group, Rms& all) {
  const double ed = CalibratedMeasurement::error(r.default_predicted, r.measured);
  std::string profile = "-", profile_error = "-";
  for (Rms* rms : {&group, &all}) {
    rms->default_sum += ed * ed;
    ++rms->rows;
  }
  if (r.profile_predicted) {
    const double ep = CalibratedMeasurement::error(*r.profile_predicted, r.measured);
    for (Rms* rms : {&group, &all}) {
      rms->profile_sum += ep * ep;
      rms->worst = std::max(rms->worst, std::abs(ep));
    }
    profile = measured_text(r.field, *r.profile_predicted);
    profile_error = percent_text(ep);
  }
  char line[768];
  std::snprintf(line, sizeof line, "  %-20s %-13s %-12s %-8s %-12s %-8s %s\n", r.name.c_str(),
                measured_text(r.field, r.measured).c_str(), measured_text(r.field, r.default_predicted).c_str(),
                percent_text(ed).c_str(), profile.c_str(), profile_error.c_str(), r.published.c_str());
  return line;
}

}  // namespace

std::string measured_table(const MeasurementFile& file, const ProfileChoice& profiles,
                           const std::vector<MeasuredComparison>& rows) {
  const std::string by = !profiles.file.empty()        ? " and by the profile " + profiles.file
                         : !profiles.directory.empty() ? " and by each row's profile in " + profiles.directory
                                                       : std::string();
  std::string out = file.name + ": " + std::to_string(rows.size()) + " measurements, predicted by the ideal machine" + by + "\n";
  Rms all;
  for (const auto& name : file.profile_names()) {
    out += "profile " + name + "\n";
    char header[256];
    std::snprintf(header, sizeof header, "  %-20s %-13s %-12s %-8s %-12s %-8s %s\n", "measurement", "measured", "default",
                  "error", "profile", "error", "as published");
    out += header;
    Rms group;
    for (const auto& r : rows)
      if (r.profile == name) out += comparison_line(r, group, all);
    out += "  " + name + ": " + group.line(profiles.any()) + "\n";
  }
  return out + "overall " + all.line(profiles.any()) + "\n";
}

std::string measured_csv(const std::vector<MeasuredComparison>& rows) {
  std::string out = "name,profile,field,measured,default_predicted,default_error,profile_predicted,profile_error,published\n";
  for (const auto& r : rows) {
    out += r.name + "," + r.profile + "," + r.field + "," + number_text(r.measured) + "," + number_text(r.default_predicted) +
           "," + number_text(CalibratedMeasurement::error(r.default_predicted, r.measured)) + "," +
           (r.profile_predicted ? number_text(*r.profile_predicted) + "," +
                                      number_text(CalibratedMeasurement::error(*r.profile_predicted, r.measured))
                                : std::string(",")) +
           ",\"" + r.published + "\"\n";
  }
  return out;
}

namespace {

struct ErrorStats {
  double sum = 0, worst = 0;
  size_t rows = 0;
  void add(double e) {
    sum += std::abs(e);
    worst = std::max(worst, std::abs(e));
    ++rows;
  }
  std::string text() const {
    if (rows == 0) return "-";
    char out[64];
    std::snprintf(out, sizeof out, "%.1f%% / %.1f%%", 100 * sum / rows, 100 * worst);
    return out;
  }
};

struct GroupStats {
  ErrorStats ideal, profile, loo;
  void add(const MeasuredComparison& r) {
    ideal.add(CalibratedMeasurement::error(r.default_predicted, r.measured));
    if (r.profile_predicted) profile.add(CalibratedMeasurement::error(*r.profile_predicted, r.measured));
    if (r.leave_one_out_predicted) loo.add(CalibratedMeasurement::error(*r.leave_one_out_predicted, r.measured));
  }
  std::string row(const std::string& label) const {
    return "| " + label + " | | | " + ideal.text() + " | | " + profile.text() + " | | " + loo.text() + " | |\n";
  }
};

std::string cell(const std::string& field, const std::optional<double>& predicted, double measured, bool error) {
  if (!predicted) return "-";
  return error ? percent_text(CalibratedMeasurement::error(*predicted, measured)) : measured_text(field, *predicted);
}

}  // namespace

std::string measured_markdown(const MeasurementFile& file, const std::vector<MeasuredComparison>& rows) {
  std::string out =
      "| row | profile | measured | ideal machine | error | profile | error | left out of the fit | error | as published |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  GroupStats all;
  std::string summary;
  for (const auto& name : file.profile_names()) {
    GroupStats group;
    for (const auto& r : rows) {
      if (r.profile != name) continue;
      group.add(r);
      all.add(r);
      out += "| " + r.name + " | " + r.profile + " | " + measured_text(r.field, r.measured) + " | " +
             measured_text(r.field, r.default_predicted) + " | " +
             percent_text(CalibratedMeasurement::error(r.default_predicted, r.measured)) + " | " +
             cell(r.field, r.profile_predicted, r.measured, false) + " | " + cell(r.field, r.profile_predicted, r.measured, true) +
             " | " + cell(r.field, r.leave_one_out_predicted, r.measured, false) + " | " +
             cell(r.field, r.leave_one_out_predicted, r.measured, true) + " | " + r.published + " |\n";
    }
    summary += group.row("**" + name + "**: mean / worst \\|error\\|");
  }
  return out + summary + all.row("**all rows**: mean / worst \\|error\\|");
}

}  // namespace podsim
