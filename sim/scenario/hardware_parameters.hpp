#pragma once
// The calibration parameters: what a real machine achieves of the ideal one's figures (issue 25;
// docs/calibration.md). One row per parameter, in the manner of SimGrid's config::Flag and ns-3's
// attributes: its key, the member it sets, its unit, the range a scenario or profile may give,
// the narrower range `podsim calibrate` searches, its default and a doc line. The row drives
// every place that names the parameter:
//  - hardware.overrides and simulation keys (scenario_loader.cpp) and the schema's key tables
//    (schema_keys.cpp), whose messages list the keys;
//  - a profile's `parameters` (calibration_files.cpp: reading) and apply_profile;
//  - podsim calibrate (sim/commands/calibrate.cpp: --fit names, bounds, setting a candidate,
//    printing the profile);
//  - tests/test_hardware_parameters.cpp, which checks docs/scenario-schema.md,
//    docs/calibration.md and docs/scenario.schema.json against the rows both ways.
// Adding a parameter is one row in hardware_parameters.cpp (and its docs, which the test asks for).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "topology/chip_spec.hpp"

namespace podsim {

namespace yaml_fields {
struct Field;
}

// How a value is written in YAML and shown to people.
enum class ParameterUnit {
  Time,        // "1.5 us" (parse_time_s), shown as human_time
  Bandwidth,   // "45 GB/s" (parse_bandwidth_Bps), shown as human_bandwidth
  Fraction,    // a plain number, shown as an interval "(0, 1]"
  Number,      // a plain number, e.g. 5e12
};

struct ParameterRange {
  double low = 0, high = 0;
  bool low_open = false;   // (low, high] rather than [low, high]
  std::string reason;      // why these bounds (a source, or what breaks beyond them)
  bool contains(double value) const { return (low_open ? value > low : value >= low) && value <= high; }
};

struct HardwareParameter {
  std::string key;            // in a profile's `parameters` and calibrate's --fit
  // Where a scenario sets it: "hardware.overrides.<key>" or a simulation key
  // ("simulation.launch_overhead"); the scenario's own value wins over a profile's.
  std::string scenario_key;
  // The value it sets: a chip figure (every TopologySpec of a Scenario carries the chip) or,
  // for the simulation settings, a member of the Scenario. Exactly one is set.
  double ChipSpec::*chip_member = nullptr;
  double Scenario::*scenario_member = nullptr;
  ParameterUnit unit = ParameterUnit::Number;
  ParameterRange valid;                 // what an override or a profile accepts
  std::optional<ParameterRange> fit;    // what calibrate searches (its reason says why narrower); none: not fitted
  // The ideal machine's; none: the chip preset's figure. It may lie outside `valid` where it means
  // "off" (dequant_rate's 0: conversion is free), a value a scenario cannot ask for.
  std::optional<double> default_value;
  std::string doc;                      // one line, for people

  // "hardware.overrides" or "simulation": the mapping of the scenario that holds the key.
  std::string_view section() const;
  std::string_view scenario_leaf() const;   // the key inside that mapping
  double get(const Scenario& scenario) const;
  // Sets the value on the scenario's chips (the slice's and, for serving, each server's) or its
  // simulation setting.
  void set(Scenario& scenario, double value) const;
  void set(ChipSpec& chip, double value) const;   // for chip_member rows only
  // The value as a YAML scalar a scenario or a profile reads back ("\"1.83 us\"", "0.67"),
  // with 12 significant digits.
  std::string yaml_text(double value) const;
  std::string human_text(double value) const;   // "1.83 us", "0.67"
  std::string range_text(const ParameterRange& range) const;   // "0 s to 10 ms", "(0, 1]"
  // What an error says was expected: "a time from 0 s to 10 ms, e.g. \"1.5 us\"".
  std::string expected_text() const;
  // Reads `field` in this row's unit and range; an InputError naming it otherwise.
  double read(const yaml_fields::Field& field) const;
};

// The built-in rows, then any registered ones, in the order messages and docs list them.
const std::vector<HardwareParameter>& hardware_parameters();
const HardwareParameter* find_hardware_parameter(std::string_view key);
// The rows whose scenario key lies in `section` ("hardware.overrides", "simulation").
std::vector<const HardwareParameter*> hardware_parameters_in(std::string_view section);

// A row added for as long as the object lives (a test's parameter, or a plug-in's, as a
// config::Flag registers itself). Register before loading anything: the schema's key tables are
// rebuilt, which no concurrent reader may see.
class HardwareParameterRegistration {
 public:
  explicit HardwareParameterRegistration(HardwareParameter row);
  ~HardwareParameterRegistration();
  HardwareParameterRegistration(const HardwareParameterRegistration&) = delete;
  HardwareParameterRegistration& operator=(const HardwareParameterRegistration&) = delete;

 private:
  std::string key_;
};

}  // namespace podsim
