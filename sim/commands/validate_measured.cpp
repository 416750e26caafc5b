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

namespace {

// A row of `profile`'s fit: the name in its fit.residuals with the measured value it recorded.
bool fit_on(const CalibrationProfile& profile, const Measurement& m) {
  const auto it = profile.residuals.find(m.name);
  return it != profile.residuals.end() && std::abs(it->second.measured - m.measured) <= 1e-6 * std::abs(m.measured);
}

}  // namespace

std::vector<MeasuredComparison> compare_measurements(const MeasurementFile& file, const ProfileChoice& profiles,
                                                     int jobs, bool held_out) {
  // Every row's scenario first: a profile's rows on two chips are refused before any run.
  std::vector<Measurement> resolved = file.measurements;
  std::vector<Scenario> scenarios;
  for (auto& m : resolved) scenarios.push_back(load_measurement_scenario(m));
  check_one_chip_per_profile(file, scenarios);
  // Each profile file loaded once; with --held-out, a row a profile was fit on is refused here,
  // before any run.
  std::map<std::string, CalibrationProfile> loaded;
  for (const Measurement& m : resolved) {
    const std::string path = profiles.path_for(m.profile);
    if (path.empty()) continue;
    if (!loaded.count(path)) loaded.emplace(path, load_profile(path));
    if (held_out && fit_on(loaded.at(path), m))
      throw InputError(m.where, "name", m.name,
                       "a row profile " + loaded.at(path).name + " was fit on (its fit.residuals has it, measured " +
                           number_text(m.measured) + "); expected with --held-out only rows no profile was fit on");
  }
  // Then every run at once, `jobs` side by side: each row on the ideal machine, and under its
  // profile where one is given.
  std::vector<const Measurement*> runs;
  for (const Measurement& m : resolved) runs.push_back(&m);
  std::vector<bool> moe;
  for (const Scenario& sc : scenarios) moe.push_back(routes_experts(sc));
  std::vector<Scenario> runs_scenarios = std::move(scenarios);
  std::vector<int> with_profile(resolved.size(), -1);
  for (size_t i = 0; i < resolved.size(); ++i) {
    Measurement& m = resolved[i];
    const std::string path = profiles.path_for(m.profile);
    if (path.empty()) continue;
    const std::string absolute = std::filesystem::absolute(path).string();
    with_profile[i] = static_cast<int>(runs.size());
    runs.push_back(&m);
    runs_scenarios.push_back(load_measurement_scenario(m, {{"hardware.profile", "\"" + absolute + "\""}}));
  }
  const std::vector<double> predicted = measure_all(runs, std::move(runs_scenarios), jobs);
  std::vector<MeasuredComparison> rows;
  for (size_t i = 0; i < resolved.size(); ++i) {
    const Measurement& m = resolved[i];
    MeasuredComparison row;
    row.name = m.name;
    row.profile = m.profile;
    row.moe = moe[i];
    row.field = m.field;
    row.source = m.source;
    row.published = m.published ? published_text(*m.published) : "";
    row.measured = m.measured;
    row.default_predicted = predicted[i];
    if (with_profile[i] >= 0) {
      const CalibrationProfile& profile = loaded.at(profiles.path_for(m.profile));
      row.profile_predicted = predicted[with_profile[i]];
      if (const auto it = profile.leave_one_out.find(m.name); it != profile.leave_one_out.end())
        row.leave_one_out_predicted = it->second;
      row.fit_row = fit_on(profile, m);
      if (row.fit_row)
        for (const auto& s : sole_evidence_rows(profile.residuals, profile.evidence))
          if (s.row == m.name) row.sole_evidence = s;
      if (!row.fit_row) row.leave_one_out_predicted.reset();   // a namesake's, not this row's
      // The figure's kind's errors; a check row's interval without its own error (it states
      // what the profile knew before the row).
      if (const auto error = profile_prediction_error(profile, figure_kind(quantity_kind(m.field), row.moe),
                                                      row.fit_row ? "" : m.name, row.moe)) {
        row.interval_80 = prediction_interval(*row.profile_predicted, *error, kIntervalCoverages[0]);
        row.interval_95 = prediction_interval(*row.profile_predicted, *error, kIntervalCoverages[1]);
      }
    }
    rows.push_back(row);
  }
  return rows;
}

namespace {

bool inside(const std::optional<PredictionInterval>& i, double measured) {
  return i && measured >= i->low && measured <= i->high;
}

std::string share_text(size_t k, size_t n) {
  char text[64];
  std::snprintf(text, sizeof text, "%zu of %zu (%.0f%%)", k, n, n ? 100.0 * k / n : 0.0);
  return text;
}

}  // namespace

std::string IntervalCoverage::text() const {
  if (rows == 0) return "no interval";
  return share_text(inside_80, rows) + " inside the 80% interval, " + share_text(inside_95, rows) + " inside the 95%";
}

IntervalCoverage interval_coverage(const std::vector<MeasuredComparison>& rows, bool fit_rows) {
  IntervalCoverage c;
  for (const auto& r : rows) {
    if (r.fit_row != fit_rows || !r.interval_80) continue;
    ++c.rows;
    c.inside_80 += inside(r.interval_80, r.measured);
    c.inside_95 += inside(r.interval_95, r.measured);
  }
  return c;
}

namespace {

struct Rms {
  double default_sum = 0, profile_sum = 0, worst = 0;
  size_t rows = 0;
  std::string line(bool profiles) const {
    if (rows == 0) return "no rows";
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

std::string interval_text(const MeasuredComparison& r) {
  if (!r.interval_80) return "-";
  return measured_text(r.field, r.interval_80->low) + " to " + measured_text(r.field, r.interval_80->high);
}

std::string inside_text(const MeasuredComparison& r) {
  if (!r.interval_80) return "-";
  return inside(r.interval_80, r.measured) ? "yes" : inside(r.interval_95, r.measured) ? "95% only" : "no";
}

std::string comparison_line(const MeasuredComparison& r, std::vector<Rms*> sums) {
  const double ed = CalibratedMeasurement::error(r.default_predicted, r.measured);
  std::string profile = "-", profile_error = "-";
  for (Rms* rms : sums) {
    rms->default_sum += ed * ed;
    ++rms->rows;
  }
  if (r.profile_predicted) {
    const double ep = CalibratedMeasurement::error(*r.profile_predicted, r.measured);
    for (Rms* rms : sums) {
      rms->profile_sum += ep * ep;
      rms->worst = std::max(rms->worst, std::abs(ep));
    }
    profile = measured_text(r.field, *r.profile_predicted);
    profile_error = percent_text(ep);
  }
  char line[1024];
  std::snprintf(line, sizeof line, "  %-20s %-13s %-12s %-8s %-12s %-8s %-26s %-8s %s\n", r.name.c_str(),
                measured_text(r.field, r.measured).c_str(), measured_text(r.field, r.default_predicted).c_str(),
                percent_text(ed).c_str(), profile.c_str(), profile_error.c_str(), interval_text(r).c_str(),
                inside_text(r).c_str(), r.published.c_str());
  return line;
}

// The fit rows' left-out errors, sole-evidence rows apart (their left-out prediction is no test).
std::string left_out_line(const std::vector<MeasuredComparison>& rows) {
  double sum = 0, worst = 0;
  size_t n = 0;
  std::string sole;
  for (const auto& r : rows) {
    if (r.sole_evidence) sole += (sole.empty() ? "" : ", ") + r.name;
    if (!r.leave_one_out_predicted || r.sole_evidence) continue;
    const double e = std::abs(CalibratedMeasurement::error(*r.leave_one_out_predicted, r.measured));
    sum += e;
    worst = std::max(worst, e);
    ++n;
  }
  if (n == 0) return "";
  char line[256];
  std::snprintf(line, sizeof line, "left out of their fits: mean |error| %.1f%%, worst %.1f%% over %zu rows", 100 * sum / n,
                100 * worst, n);
  return line + (sole.empty() ? std::string() : " (sole evidence for a parameter, not counted: " + sole + ")") + "\n";
}

}  // namespace

std::string measured_table(const MeasurementFile& file, const ProfileChoice& profiles,
                           const std::vector<MeasuredComparison>& rows) {
  const std::string by = !profiles.file.empty()        ? " and by the profile " + profiles.file
                         : !profiles.directory.empty() ? " and by each row's profile in " + profiles.directory
                                                       : std::string();
  std::string out = file.name + ": " + std::to_string(rows.size()) + " measurements, predicted by the ideal machine" + by + "\n";
  Rms all, all_fit, all_held_out;
  for (const auto& name : file.profile_names()) {
    out += "profile " + name + "\n";
    char header[256];
    std::snprintf(header, sizeof header, "  %-20s %-13s %-12s %-8s %-12s %-8s %-26s %-8s %s\n", "measurement", "measured",
                  "default", "error", "profile", "error", "80% interval", "inside", "as published");
    out += header;
    if (!profiles.any()) {   // no profile: no rows fit or held out, only the ideal machine
      Rms group;
      for (const auto& r : rows)
        if (r.profile == name) out += comparison_line(r, {&group, &all});
      out += "  " + name + ": " + group.line(false) + "\n";
      continue;
    }
    // The rows the profile was fit on, then those it never saw, each set with its own errors.
    for (const bool fit : {true, false}) {
      Rms group;
      std::string lines;
      for (const auto& r : rows)
        if (r.profile == name && r.fit_row == fit) lines += comparison_line(r, {&group, &all, fit ? &all_fit : &all_held_out});
      if (group.rows == 0) continue;
      out += std::string(fit ? "  fit on (in its fit.residuals):\n" : "  held out (never fit):\n") + lines;
      out += "  " + name + (fit ? " fit rows: " : " held-out rows: ") + group.line(profiles.any()) + "\n";
    }
  }
  out += "overall " + all.line(profiles.any()) + "\n";
  if (profiles.any() && all_fit.rows > 0)
    out += "fit rows: " + all_fit.line(true) + "; intervals: " + interval_coverage(rows, true).text() + "\n";
  if (profiles.any() && all_fit.rows > 0) out += left_out_line(rows);
  if (profiles.any() && all_held_out.rows > 0)
    out += "held-out rows: " + all_held_out.line(true) + "; intervals: " + interval_coverage(rows, false).text() + "\n";
  return out;
}

std::string measured_csv(const std::vector<MeasuredComparison>& rows) {
  std::string out = "name,profile,field,measured,default_predicted,default_error,profile_predicted,profile_error,published,"
                    "group,sole_evidence,low_80,high_80,low_95,high_95,moe\n";
  auto bound = [](const std::optional<PredictionInterval>& i, bool low) {
    return i ? number_text(low ? i->low : i->high) : std::string();
  };
  for (const auto& r : rows) {
    out += r.name + "," + r.profile + "," + r.field + "," + number_text(r.measured) + "," + number_text(r.default_predicted) +
           "," + number_text(CalibratedMeasurement::error(r.default_predicted, r.measured)) + "," +
           (r.profile_predicted ? number_text(*r.profile_predicted) + "," +
                                      number_text(CalibratedMeasurement::error(*r.profile_predicted, r.measured))
                                : std::string(",")) +
           ",\"" + r.published + "\"," + (!r.profile_predicted ? "" : r.fit_row ? "fit" : "held_out") + "," +
           (r.sole_evidence ? (r.sole_evidence->parameter.empty() ? "yes" : r.sole_evidence->parameter) : "") + "," +
           bound(r.interval_80, true) + "," + bound(r.interval_80, false) + "," + bound(r.interval_95, true) + "," +
           bound(r.interval_95, false) + "," + (r.moe ? "true" : "false") + "\n";
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

// A set of rows' mean and worst |error| on the ideal machine, with the profile and left out of
// its fit (sole-evidence rows apart: their left-out prediction is no test), and its coverage.
struct GroupStats {
  ErrorStats ideal, profile, loo;
  std::vector<MeasuredComparison> rows;
  void add(const MeasuredComparison& r) {
    rows.push_back(r);
    ideal.add(CalibratedMeasurement::error(r.default_predicted, r.measured));
    if (r.profile_predicted) profile.add(CalibratedMeasurement::error(*r.profile_predicted, r.measured));
    if (r.leave_one_out_predicted && !r.sole_evidence)
      loo.add(CalibratedMeasurement::error(*r.leave_one_out_predicted, r.measured));
  }
  std::string coverage() const {
    IntervalCoverage c = interval_coverage(rows, true);
    const IntervalCoverage h = interval_coverage(rows, false);
    c.rows += h.rows;
    c.inside_80 += h.inside_80;
    c.inside_95 += h.inside_95;
    if (c.rows == 0) return "-";
    return std::to_string(c.inside_80) + " of " + std::to_string(c.rows) + " (95%: " + std::to_string(c.inside_95) + ")";
  }
  std::string row(const std::string& label) const {
    return "| " + label + " | | | " + ideal.text() + " | | " + profile.text() + " | | " + loo.text() + " | | " + coverage() + " | |\n";
  }
};

std::string cell(const std::string& field, const std::optional<double>& predicted, double measured, bool error) {
  if (!predicted) return "-";
  return error ? percent_text(CalibratedMeasurement::error(*predicted, measured)) : measured_text(field, *predicted);
}

std::string left_out_error_cell(const MeasuredComparison& r) {
  if (r.profile_predicted && !r.fit_row) return "held out";
  std::string text = cell(r.field, r.leave_one_out_predicted, r.measured, true);
  if (r.sole_evidence)
    text += " (sole evidence" + (r.sole_evidence->parameter.empty() ? std::string() : " for " + r.sole_evidence->parameter) + ")";
  return text;
}

}  // namespace

std::string measured_markdown(const MeasurementFile& file, const std::vector<MeasuredComparison>& rows) {
  std::string out =
      "| row | profile | measured | ideal machine | error | profile | error | left out of the fit | error | 80% interval "
      "(inside?) | as published |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  GroupStats all, fit, held_out;
  std::string summary, sole;
  for (const auto& name : file.profile_names()) {
    GroupStats group;
    for (const auto& r : rows) {
      if (r.profile != name) continue;
      group.add(r);
      all.add(r);
      if (r.profile_predicted) (r.fit_row ? fit : held_out).add(r);
      if (r.sole_evidence)
        sole += (sole.empty() ? "" : ", ") + r.name +
                (r.sole_evidence->parameter.empty() ? std::string() : " (" + r.sole_evidence->parameter + ")");
      out += "| " + r.name + " | " + r.profile + " | " + measured_text(r.field, r.measured) + " | " +
             measured_text(r.field, r.default_predicted) + " | " +
             percent_text(CalibratedMeasurement::error(r.default_predicted, r.measured)) + " | " +
             cell(r.field, r.profile_predicted, r.measured, false) + " | " + cell(r.field, r.profile_predicted, r.measured, true) +
             " | " + cell(r.field, r.leave_one_out_predicted, r.measured, false) + " | " + left_out_error_cell(r) + " | " +
             (r.interval_80 ? interval_text(r) + " (" + inside_text(r) + ")" : "-") + " | " + r.published + " |\n";
    }
    summary += group.row("**" + name + "**: mean / worst \\|error\\|; inside the 80% interval");
  }
  out += summary + all.row("**all rows**: mean / worst \\|error\\|; inside the 80% interval");
  if (!fit.rows.empty()) out += fit.row("**fit rows** (in their profile's fit)");
  if (!held_out.rows.empty()) out += held_out.row("**held-out rows** (in no fit)");
  if (!sole.empty())
    out += "| sole evidence (left-out error not counted): " + sole + " | | | | | | | | | | |\n";
  return out;
}

}  // namespace podsim
