#include "sim/scenario/calibration_files.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fnmatch.h>
#include <set>

#include <yaml-cpp/yaml.h>

#include "sim/scenario/hardware_parameters.hpp"
#include "sim/scenario/input_file.hpp"
#include "sim/scenario/units.hpp"
#include "sim/scenario/yaml_fields.hpp"
#include "workloads/flop_conventions.hpp"

namespace podsim {
namespace {

constexpr uintmax_t kMaxCalibrationFileBytes = 16u << 20;
// Bounds of a measured time: 1 ns is below any collective's latency floor, 1e6 s beyond any step.
constexpr double kMinMeasuredTime_s = 1e-9;
constexpr double kMaxMeasuredTime_s = 1e6;

SourceLocation at(const std::string& path, const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return {path, mark.line >= 0 ? mark.line + 1 : 0, mark.column >= 0 ? mark.column + 1 : 0};
}

std::string text_of(const YAML::Node& node) { return node.IsScalar() ? node.Scalar() : std::string("(not a scalar)"); }

YAML::Node parse_text(const std::string& text, const std::string& path) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError({path, e.mark.line + 1, e.mark.column + 1}, "", "", "malformed YAML: " + e.msg);
  }
}

YAML::Node parse(const std::string& path, const std::string& what) {
  return parse_text(read_input_file(path, what, kMaxCalibrationFileBytes), path);
}

// Keys of a mapping against the allowed ones; returns the node.
void check_keys(const std::string& path, const YAML::Node& map, const std::string& where,
                const std::set<std::string>& allowed) {
  if (!map.IsMap()) throw InputError(at(path, map), where, text_of(map), "expected a mapping");
  for (const auto& kv : map) {
    const std::string key = kv.first.Scalar();
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& k : allowed) list += (list.empty() ? "" : ", ") + k;
      throw InputError(at(path, kv.first), where.empty() ? key : where + "." + key, key,
                       "unknown key; expected one of: " + list);
    }
  }
}

std::string required_string(const std::string& path, const YAML::Node& map, const std::string& key,
                            const std::string& where) {
  const YAML::Node node = map[key];
  if (!node) throw InputError(at(path, map), where + key, "", "missing; expected a value");
  if (!node.IsScalar() || node.Scalar().empty())
    throw InputError(at(path, node), where + key, text_of(node), "expected a non-empty string");
  return node.Scalar();
}

void check_version(const std::string& path, const YAML::Node& root) {
  const YAML::Node version = root["version"];
  if (!version) throw InputError(at(path, root), "version", "", "missing; expected version: 1");
  if (!version.IsScalar() || version.Scalar() != "1")
    throw InputError(at(path, version), "version", text_of(version), "unsupported version; expected 1");
}

}  // namespace

namespace {

// The scenario a row runs, resolved against the measurement file's folder; refused unless a file.
std::string read_scenario_path(const std::string& path, const YAML::Node& entry, const std::string& where) {
  const std::string scenario = required_string(path, entry, "scenario", where);
  const std::string resolved = resolve_input_path(scenario, path);
  if (std::filesystem::is_regular_file(resolved)) return resolved;
  std::error_code error;
  const bool directory = std::filesystem::is_directory(resolved, error);
  const bool exists = std::filesystem::exists(resolved, error);
  throw InputError(at(path, entry["scenario"]), where + "scenario", scenario,
                   std::string(directory ? "a directory, not a scenario file"
                               : exists  ? "not a regular file (a device, FIFO or socket)"
                                         : "no such scenario file") +
                       " (resolved to " + resolved + "); expected a scenario YAML file");
}

std::vector<ScenarioOverride> read_set(const std::string& path, const YAML::Node& entry, const std::string& where) {
  std::vector<ScenarioOverride> overrides;
  const YAML::Node set = entry["set"];
  if (!set) return overrides;
  if (!set.IsMap()) throw InputError(at(path, set), where + "set", text_of(set), "expected a mapping of dotted keys to values");
  for (const auto& kv : set) {
    YAML::Emitter out;
    out << YAML::Flow << kv.second;
    overrides.push_back({kv.first.Scalar(), out.c_str()});
  }
  return overrides;
}

// `measured`: a time with its unit for a *_s field, else a number; positive and within bounds.
double read_measured(const std::string& path, const YAML::Node& entry, const std::string& where, const std::string& field) {
  const std::string measured = required_string(path, entry, "measured", where);
  const bool time = is_time_field(field);
  double value = 0;
  try {
    size_t used = 0;
    value = time ? parse_time_s(measured) : std::stod(measured, &used);
    // stod stops at the first character it cannot read: "251 ms" for a number is refused, not 251.
    if (!time && measured.find_first_not_of(" \t", used) != std::string::npos) throw std::invalid_argument(measured);
  } catch (const std::exception&) {
    const bool negative = measured.find_first_not_of(" \t") != std::string::npos &&
                          measured[measured.find_first_not_of(" \t")] == '-';
    throw InputError(at(path, entry["measured"]), where + "measured", measured,
                     negative ? "expected a positive measurement (errors are relative to it)"
                     : time   ? "expected a time with its unit, e.g. \"680 us\""
                              : "expected a number");
  }
  if (!(value > 0) || !std::isfinite(value))
    throw InputError(at(path, entry["measured"]), where + "measured", measured,
                     "expected a positive measurement (errors are relative to it)");
  // A measured time outside what a collective or a step can take would drive the fit to a bound
  // (1e300 s fits every parameter to 0 error of a prediction of 0): refused at the key.
  if (time && (value < kMinMeasuredTime_s || value > kMaxMeasuredTime_s))
    throw InputError(at(path, entry["measured"]), where + "measured", measured,
                     "expected a measured time between 1 ns and 1e6 s (11.6 days)");
  if (!time && (value < 1e-12 || value > 1e15))
    throw InputError(at(path, entry["measured"]), where + "measured", measured,
                     "expected a measurement between 1e-12 and 1e15");
  return value;
}

// A published rate: a plain positive number. 1e7 TFLOP/s or tokens/s per chip is beyond any chip.
double read_rate(const std::string& path, const YAML::Node& entry, const std::string& where, const std::string& key) {
  const std::string text = required_string(path, entry, key, where);
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(text, &used);
    if (text.find_first_not_of(" \t", used) != std::string::npos) value = -1;
  } catch (const std::exception&) {
    value = -1;
  }
  if (!(value > 0) || !std::isfinite(value) || value > 1e7)
    throw InputError(at(path, entry[key]), where + key, text, "expected a positive number up to 1e7 (per chip, as published)");
  return value;
}

// tokens_per_s_per_chip, or tflops_per_chip with its flop_convention, instead of field + measured.
std::optional<PublishedFigure> read_published(const std::string& path, const YAML::Node& entry, const std::string& where) {
  const bool tokens = static_cast<bool>(entry["tokens_per_s_per_chip"]);
  const bool tflops = static_cast<bool>(entry["tflops_per_chip"]);
  if (entry["flop_convention"] && !tflops)
    throw InputError(at(path, entry["flop_convention"]), where + "flop_convention", text_of(entry["flop_convention"]),
                     "a FLOP convention without tflops_per_chip; expected it beside tflops_per_chip only");
  if (!tokens && !tflops) return std::nullopt;
  const std::string key = tokens ? "tokens_per_s_per_chip" : "tflops_per_chip";
  const char* clash = tokens && tflops ? "tflops_per_chip" : entry["field"] ? "field" : entry["measured"] ? "measured" : nullptr;
  if (clash)
    throw InputError(at(path, entry[clash]), where + clash, text_of(entry[clash]),
                     "a second measured quantity beside " + key +
                         "; expected one of: field with measured, tokens_per_s_per_chip, or tflops_per_chip with flop_convention");
  PublishedFigure figure;
  figure.where = at(path, entry[key]);
  figure.value = read_rate(path, entry, where, key);
  if (tokens) return figure;
  figure.kind = PublishedFigure::Kind::TflopsPerChip;
  if (!entry["flop_convention"])
    throw InputError(at(path, entry), where + "flop_convention", "",
                     "missing beside tflops_per_chip; expected the FLOP count it divides: one of " + flop_convention_names());
  figure.convention = required_string(path, entry, "flop_convention", where);
  if (!find_flop_convention(figure.convention))
    throw InputError(at(path, entry["flop_convention"]), where + "flop_convention", figure.convention,
                     "unknown FLOP convention; expected one of " + flop_convention_names());
  return figure;
}

// `profile`: letters, digits, '_' and '-' (it becomes a file name); default the file's name.
std::string read_profile_name(const std::string& path, const YAML::Node& entry, const std::string& where,
                              const std::string& file_name) {
  if (!entry["profile"]) return file_name;
  const std::string name = required_string(path, entry, "profile", where);
  if (name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != std::string::npos)
    throw InputError(at(path, entry["profile"]), where + "profile", name,
                     "expected a profile name of letters, digits, '_' and '-' (it names the profile's file)");
  return name;
}

Measurement read_measurement(const std::string& path, const YAML::Node& entry, size_t i, const std::string& file_name) {
  const std::string where = "measurements[" + std::to_string(i) + "].";
  check_keys(path, entry, "measurements[" + std::to_string(i) + "]",
             {"name", "scenario", "set", "field", "measured", "source", "profile", "tokens_per_s_per_chip",
              "tflops_per_chip", "flop_convention"});
  Measurement m;
  m.where = at(path, entry);
  m.name = required_string(path, entry, "name", where);
  m.profile = read_profile_name(path, entry, where, file_name);
  m.scenario_path = read_scenario_path(path, entry, where);
  m.overrides = read_set(path, entry, where);
  m.published = read_published(path, entry, where);
  if (m.published) {
    m.field = "step_time_s";
  } else {
    m.field = required_string(path, entry, "field", where);
    m.measured = read_measured(path, entry, where, m.field);
  }
  if (entry["source"]) m.source = required_string(path, entry, "source", where);
  return m;
}

}  // namespace

bool is_time_field(const std::string& field) {
  // A statistic of a time distribution (ttft_s.mean, tpot_s.p99) is a time too.
  const size_t stat = field.rfind("_s.");
  const std::string_view quantity =
      stat == std::string::npos ? std::string_view(field) : std::string_view(field).substr(0, stat + 2);
  return quantity.ends_with("_s") && !quantity.ends_with("_per_s");
}

std::vector<std::string> MeasurementFile::profile_names() const {
  std::vector<std::string> names;
  for (const auto& m : measurements)
    if (std::find(names.begin(), names.end(), m.profile) == names.end()) names.push_back(m.profile);
  return names;
}

MeasurementFile load_measurements(const std::string& path) {
  const YAML::Node root = parse(path, "measurement file");
  if (!root.IsMap()) throw InputError({path, 1, 1}, "", "", "expected a mapping with version, name and measurements");
  check_keys(path, root, "", {"version", "name", "description", "measurements"});
  check_version(path, root);
  MeasurementFile file;
  file.path = path;
  file.name = root["name"] ? required_string(path, root, "name", "") : std::filesystem::path(path).stem().string();
  const YAML::Node list = root["measurements"];
  if (!list) throw InputError(at(path, root), "measurements", "", "missing; expected a list of measurements");
  if (!list.IsSequence() || list.size() == 0)
    throw InputError(at(path, list), "measurements", text_of(list), "expected a non-empty list of measurements");
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    Measurement m = read_measurement(path, list[i], i, file.name);
    if (!names.insert(m.name).second)
      throw InputError(at(path, list[i]["name"]), "measurements[" + std::to_string(i) + "].name", m.name,
                       "a second measurement of this name; expected unique names");
    file.measurements.push_back(std::move(m));
  }
  return file;
}

CalibrationProfile load_profile(const std::string& path) {
  return load_profile_text(read_input_file(path, "calibration profile", kMaxCalibrationFileBytes), path);
}

namespace {

// A profile's true or false (its machine's flags, a row's `moe`).
bool read_flag(const std::string& path, const YAML::Node& node, const std::string& key) {
  const std::string v = text_of(node);
  if (v != "true" && v != "false") throw InputError(at(path, node), key, v, "expected true or false");
  return v == "true";
}

// fit.checks: each row of no fit as the profile (or, `profile:`, another generation's) predicts it.
template <class Number>
void read_checks(const std::string& path, const YAML::Node& checks, CalibrationProfile& p, const Number& number) {
  if (!checks.IsMap()) throw InputError(at(path, checks), "fit.checks", text_of(checks), "expected a mapping of rows");
  for (const auto& kv : checks) {
    const std::string key = "fit.checks." + kv.first.Scalar();
    const char* shape = "expected {measured: N, predicted: N, field: NAME}";
    if (!kv.second.IsMap() || !kv.second["measured"] || !kv.second["predicted"] || !kv.second["field"] ||
        !kv.second["field"].IsScalar())
      throw InputError(at(path, kv.second), key, text_of(kv.second), shape);
    ProfileCheck c;
    c.measured = number(kv.second["measured"], key + ".measured", "expected a positive number (what was measured)");
    c.predicted = number(kv.second["predicted"], key + ".predicted", "expected a positive number (the profile's prediction)");
    for (const auto& [value, part] : {std::pair{c.measured, "measured"}, std::pair{c.predicted, "predicted"}})
      if (!(value > 0))
        throw InputError(at(path, kv.second[part]), key + "." + part, text_of(kv.second[part]),
                         "expected a positive number");
    c.field = kv.second["field"].Scalar();
    if (const YAML::Node moe = kv.second["moe"]) c.moe = read_flag(path, moe, key + ".moe");
    if (const YAML::Node from = kv.second["profile"]) {
      if (!from.IsScalar() || from.Scalar().empty())
        throw InputError(at(path, from), key + ".profile", text_of(from), "expected the name of the profile that predicted it");
      c.profile = from.Scalar();
    }
    if (p.residuals.count(kv.first.Scalar()))
      throw InputError(at(path, kv.second), key, kv.first.Scalar(), "a row of no fit (this one is in fit.residuals)");
    p.checks[kv.first.Scalar()] = c;
  }
}

// What calibrate wrote about its fit: each row's residuals (the prediction interval is made of
// their left-out errors, prediction_error.hpp) and what informs each parameter. The rest of the
// block (errors, at_bound) is for the reader.
void read_fit_block(const std::string& path, const YAML::Node& fit, CalibrationProfile& p) {
  auto number = [&](const YAML::Node& node, const std::string& key, const char* expected) {
    double value = 0;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !std::isfinite(value))
      throw InputError(at(path, node), key, text_of(node), expected);
    return value;
  };
  if (const YAML::Node residuals = fit && fit.IsMap() ? fit["residuals"] : YAML::Node(YAML::NodeType::Undefined)) {
    if (!residuals.IsMap()) throw InputError(at(path, residuals), "fit.residuals", text_of(residuals), "expected a mapping of rows");
    for (const auto& kv : residuals) {
      const std::string key = "fit.residuals." + kv.first.Scalar();
      if (!kv.second.IsMap())
        throw InputError(at(path, kv.second), key, text_of(kv.second), "expected {measured: N, fitted: N, leave_one_out: N}");
      ProfileResidual r;
      for (const char* part : {"measured", "fitted"}) {
        const YAML::Node node = kv.second[part];
        if (!node) throw InputError(at(path, kv.second), key, text_of(kv.second), std::string("expected its ") + part + " value");
        (part[0] == 'm' ? r.measured : r.fitted) = number(node, key + "." + part, "expected a number (the row's value)");
      }
      if (!(r.measured > 0))
        throw InputError(at(path, kv.second["measured"]), key + ".measured", text_of(kv.second["measured"]),
                         "expected a positive number (what was measured)");
      if (const YAML::Node loo = kv.second["leave_one_out"]) {
        r.leave_one_out = number(loo, key + ".leave_one_out", "expected a number (the row's leave-one-out prediction)");
        p.leave_one_out[kv.first.Scalar()] = *r.leave_one_out;
      }
      if (const YAML::Node field = kv.second["field"]) {
        if (!field.IsScalar()) throw InputError(at(path, field), key + ".field", text_of(field), "expected a summary field name");
        r.field = field.Scalar();
      }
      if (const YAML::Node moe = kv.second["moe"]) r.moe = read_flag(path, moe, key + ".moe");
      p.residuals[kv.first.Scalar()] = r;
    }
  }
  if (const YAML::Node checks = fit && fit.IsMap() ? fit["checks"] : YAML::Node(YAML::NodeType::Undefined))
    read_checks(path, checks, p, number);
  if (const YAML::Node evidence = fit && fit.IsMap() ? fit["evidence"] : YAML::Node(YAML::NodeType::Undefined)) {
    if (!evidence.IsMap()) throw InputError(at(path, evidence), "fit.evidence", text_of(evidence), "expected a mapping of parameters");
    for (const auto& kv : evidence) {
      const std::string key = "fit.evidence." + kv.first.Scalar();
      if (!kv.second.IsMap() || !kv.second["rows"] || !kv.second["rows"].IsMap())
        throw InputError(at(path, kv.second), key, text_of(kv.second), "expected {sd: N, rows: {ROW: SHARE, ...}}");
      ParameterEvidence e;
      if (const YAML::Node sd = kv.second["sd"]; sd && !(sd.IsNull() || text_of(sd) == "null"))
        e.sd = number(sd, key + ".sd", "expected a number (the parameter's standard deviation) or null");
      for (const auto& row : kv.second["rows"]) {
        const double share = number(row.second, key + ".rows." + row.first.Scalar(), "expected a share in [0, 1]");
        if (share < 0 || share > 1)
          throw InputError(at(path, row.second), key + ".rows." + row.first.Scalar(), text_of(row.second),
                           "expected a share in [0, 1] (of the parameter's information)");
        e.shares[row.first.Scalar()] = share;
      }
      p.evidence[kv.first.Scalar()] = e;
    }
  }
}

}  // namespace

CalibrationProfile load_profile_text(const std::string& text, const std::string& path) {
  const YAML::Node root = parse_text(text, path);
  if (!root.IsMap()) throw InputError({path, 1, 1}, "", "", "expected a mapping with version, name, chip and parameters");
  check_keys(path, root, "", {"version", "name", "chip", "hop_model", "mxu_padding", "antipodal_split", "reductions_on_tensor_core", "compute_model", "parameters", "fit"});
  check_version(path, root);
  CalibrationProfile p;
  p.path = path;
  p.name = required_string(path, root, "name", "");
  p.chip = required_string(path, root, "chip", "");
  if (const YAML::Node model = root["hop_model"]) {
    const std::string m = text_of(model);
    if (m == "floor") p.hop_model = HopModel::Floor;
    else if (m == "additive") p.hop_model = HopModel::Additive;
    else throw InputError(at(path, model), "hop_model", m, "expected floor or additive");
  }
  // The machine the fit ran: each flag true or false where the profile says it.
  auto flag = [&](const char* key, std::optional<bool>& out) {
    if (const YAML::Node node = root[key]) out = read_flag(path, node, key);
  };
  flag("mxu_padding", p.mxu_padding);
  flag("antipodal_split", p.antipodal_split);
  flag("reductions_on_tensor_core", p.reductions_on_tensor_core);
  if (const YAML::Node model = root["compute_model"]) {
    const std::string v = text_of(model);
    if (v != "book" && v != "kernels") throw InputError(at(path, model), "compute_model", v, "expected book or kernels");
    p.compute_model = v == "book" ? ComputeModel::Book : ComputeModel::Kernels;
  }
  if (const YAML::Node params = root["parameters"]) {
    // The keys, units and ranges of hardware_parameters.cpp: one range for a profile and an override.
    std::set<std::string> keys;
    for (const HardwareParameter& row : hardware_parameters()) keys.insert(row.key);
    check_keys(path, params, "parameters", keys);
    for (const auto& kv : params) {
      const std::string key = kv.first.Scalar();
      const yaml_fields::Field field{kv.second, "parameters." + key, at(path, kv.second)};
      p.parameters[key] = find_hardware_parameter(key)->read(field);
    }
  }
  read_fit_block(path, root["fit"], p);
  return p;
}

void select_measurements(MeasurementFile& file, const std::vector<std::string>& patterns, const std::string& option) {
  auto matches = [](const std::string& pattern, const Measurement& m) {
    return ::fnmatch(pattern.c_str(), m.name.c_str(), 0) == 0;
  };
  for (const auto& pattern : patterns)
    if (std::none_of(file.measurements.begin(), file.measurements.end(), [&](const auto& m) { return matches(pattern, m); }))
      throw InputError({"command line", 0, 0}, option, pattern,
                       "no row of " + file.path + " has a matching name; expected a row's name or a glob (M5-*)");
  std::vector<Measurement> kept;
  for (const auto& m : file.measurements)
    if (std::any_of(patterns.begin(), patterns.end(), [&](const auto& p) { return matches(p, m); })) kept.push_back(m);
  file.measurements = std::move(kept);
}

}  // namespace podsim
