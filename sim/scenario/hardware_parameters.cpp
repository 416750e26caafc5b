#include "sim/scenario/hardware_parameters.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "sim/scenario/schema_keys.hpp"
#include "sim/scenario/units.hpp"
#include "sim/scenario/yaml_fields.hpp"

namespace podsim {
namespace {

// One range for every fixed cost per event (a hop, a collective's launch, a compute op, a DCN
// transfer): 0 is the ideal machine; 10 ms is 10^4 times the book's ~1 us per hop and far beyond
// any launch, NIC or switch cost, while the sums over a step's events stay well inside what a run
// represents. (It was 1 s for hop_latency as an override and 1 ms in a profile; launch_overhead
// had none: issue 25.)
ParameterRange fixed_cost_range() {
  return {0, 1e-2, false,
          "0 is the ideal machine; 10 ms is 10^4 x the book's ~1 us hop, beyond any launch, NIC or switch cost"};
}

// A fraction of a nominal figure achieved: 0 would never finish, and nothing beats the nominal.
ParameterRange achieved_fraction() {
  return {0, 1, true, "a share of the nominal figure: above 0 (else nothing finishes), at most all of it"};
}

std::vector<HardwareParameter> built_in_rows() {
  using U = ParameterUnit;
  return {
      {"hop_latency", "hardware.overrides.hop_latency", &ChipSpec::hop_latency_s, nullptr, U::Time,
       fixed_cost_range(),
       ParameterRange{0.1e-6, 20e-6, false,
                      "the book's ~1 us per hop (tpus.md), times what routing or DMA set-up could add"},
       std::nullopt, "T_min, the per-hop latency floor of an ICI hop"},
      {"link_efficiency", "simulation.link_efficiency", nullptr, &Scenario::link_efficiency, U::Fraction,
       achieved_fraction(),
       ParameterRange{0.3, 1, false,
                      "a link cannot beat its nominal bandwidth; the 30% floor is the search's choice, far below "
                      "any measured link (F1's plateau fits 0.99: calibration.md)"},
       1.0, "fraction of the ICI/DCN link bandwidth a transfer achieves"},
      {"collective_overhead", "simulation.launch_overhead", nullptr, &Scenario::launch_overhead_s, U::Time,
       fixed_cost_range(), ParameterRange{0, 200e-6, false, "launch and synchronisation, not a transfer"}, 0.0,
       "fixed cost per collective per chip before its first hop"},
      {"hbm_efficiency", "hardware.overrides.hbm_efficiency", &ChipSpec::hbm_efficiency, nullptr, U::Fraction,
       achieved_fraction(),
       ParameterRange{0.3, 1, false,
                      "kernels stream HBM at most at its nominal bandwidth; the 30% floor is the search's "
                      "choice, below the fitted 0.63-0.67 (calibration.md)"},
       1.0, "fraction of the HBM bandwidth compute ops stream at"},
      {"matmul_efficiency", "hardware.overrides.matmul_efficiency", &ChipSpec::matmul_efficiency, nullptr,
       U::Fraction, achieved_fraction(),
       ParameterRange{0.2, 1, false,
                      "at most the peak; the 20% floor is the search's choice, below F6's fitted 0.43 "
                      "(calibration.md)"},
       1.0, "fraction of the peak FLOPs matmuls reach"},
      {"roofline_overlap", "hardware.overrides.roofline_overlap", &ChipSpec::roofline_overlap, nullptr, U::Fraction,
       ParameterRange{0, 1, false, "a share of the shorter of math and HBM time: none to all of it"},
       ParameterRange{0, 1, false, "the whole valid range: every share is plausible"}, 1.0,
       "share of the shorter of math and HBM time hidden under the longer"},
      {"compute_overhead", "hardware.overrides.compute_overhead", &ChipSpec::compute_overhead_s, nullptr, U::Time,
       fixed_cost_range(), ParameterRange{0, 50e-6, false, "a kernel's launch and pipeline fill, not its work"}, 0.0,
       "fixed cost of every compute op (launch, pipeline fill)"},
      {"attention_sequence_overhead", "hardware.overrides.attention_sequence_overhead",
       &ChipSpec::attention_sequence_overhead_s, nullptr, U::Time, fixed_cost_range(),
       ParameterRange{0, 5e-6, false,
                      "a kernel's grid step and a few small DMAs' latency (about 1 us at most), not a sequence's pages"},
       0.0, "fixed cost per sequence and layer of an inference step's attention (the kernel walks the sequences one "
            "after another)"},
      {"dcn_latency", "hardware.overrides.dcn_latency", &ChipSpec::dcn_latency_s, nullptr, U::Time,
       fixed_cost_range(),
       ParameterRange{0, 1e-3, false, "a transfer's NICs, switch and host software, not its bytes"}, 0.0,
       "fixed cost of every DCN transfer (NICs, switch, host software)"},
      {"dcn_efficiency", "hardware.overrides.dcn_efficiency", &ChipSpec::dcn_efficiency, nullptr, U::Fraction,
       achieved_fraction(),
       ParameterRange{0.05, 1, false,
                      "a NIC cannot beat its nominal bandwidth; the floor leaves room for a fabric shared with "
                      "other jobs and for protocol overheads across many slices"},
       1.0, "fraction of a host's NIC bandwidth its DCN transfers achieve"},
      {"dequant_rate", "hardware.overrides.dequant_rate", &ChipSpec::dequant_weights_per_s, nullptr, U::Number,
       ParameterRange{1e9, 1e16, false,
                      "weights per second; the VPU's ~7e12 ops/s per v5p core (hardware.md) sits inside, with "
                      "room for hypothetical chips"},
       std::nullopt,   // not fitted: no shipped measurement has weight-only quantised weights
       0.0, "weights per second converted from int8/int4 to bf16 before bf16 matmuls"},
      {"hbm_headroom", "hardware.overrides.hbm_headroom", &ChipSpec::hbm_headroom, nullptr, U::Fraction,
       ParameterRange{0, 0.9, false,
                      "a share of HBM: none (the book's arithmetic) up to 90%, beyond which no plan keeps room "
                      "for its weights"},
       std::nullopt,   // not fitted: no shipped measurement has a memory figure
       std::nullopt, "share of HBM kept free for XLA's temporary buffers, the runtime and fragmentation"},
  };
}

std::vector<HardwareParameter>& rows() {
  static std::vector<HardwareParameter> table = built_in_rows();
  return table;
}

// "1e9", "0.3", "1": short, for ranges in messages and docs.
std::string compact_number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g", value);
  std::string text = buffer;
  const size_t e = text.find("e+");
  if (e != std::string::npos) {
    size_t digits = e + 2;
    while (digits + 1 < text.size() && text[digits] == '0') ++digits;
    text = text.substr(0, e + 1) + text.substr(digits);
  }
  return text;
}

}  // namespace

std::string_view HardwareParameter::section() const {
  const std::string_view key = scenario_key;
  return key.substr(0, key.rfind('.'));
}

std::string_view HardwareParameter::scenario_leaf() const {
  const std::string_view key = scenario_key;
  return key.substr(key.rfind('.') + 1);
}

double HardwareParameter::get(const Scenario& scenario) const {
  return scenario_member ? scenario.*scenario_member : scenario.topology.chip.*chip_member;
}

void HardwareParameter::set(ChipSpec& chip, double value) const {
  if (!chip_member) throw std::logic_error("hardware parameter " + key + " is not a chip figure");
  chip.*chip_member = value;
}

void HardwareParameter::set(Scenario& scenario, double value) const {
  if (scenario_member) {
    scenario.*scenario_member = value;
    return;
  }
  // Every copy of the chip a run reads: the slice's and a serving run's server topologies.
  set(scenario.topology.chip, value);
  if (auto* serving = std::get_if<ServingWorkload>(&scenario.workload)) {
    for (TopologySpec* topology : {&serving->generate_topology, &serving->prefill_topology, &serving->prefill_server_topology})
      set(topology->chip, value);
  }
}

std::string HardwareParameter::yaml_text(double value) const {
  switch (unit) {
    case ParameterUnit::Time: return "\"" + number_text(value * 1e6) + " us\"";
    case ParameterUnit::Bandwidth: return "\"" + number_text(value) + " B/s\"";
    case ParameterUnit::Fraction:
    case ParameterUnit::Number: break;
  }
  return number_text(value);
}

std::string HardwareParameter::human_text(double value) const {
  switch (unit) {
    case ParameterUnit::Time: return human_time(value);
    case ParameterUnit::Bandwidth: return human_bandwidth(value);
    case ParameterUnit::Fraction:
    case ParameterUnit::Number: break;
  }
  return number_text(value);
}

std::string HardwareParameter::range_text(const ParameterRange& range) const {
  switch (unit) {
    case ParameterUnit::Time: return human_time(range.low) + " to " + human_time(range.high);
    case ParameterUnit::Bandwidth: return human_bandwidth(range.low) + " to " + human_bandwidth(range.high);
    case ParameterUnit::Fraction:
      return (range.low_open ? "(" : "[") + compact_number(range.low) + ", " + compact_number(range.high) + "]";
    case ParameterUnit::Number: break;
  }
  return compact_number(range.low) + " to " + compact_number(range.high);
}

std::string HardwareParameter::expected_text() const {
  const std::string range = range_text(valid);
  switch (unit) {
    case ParameterUnit::Time: return "a time from " + range + ", e.g. \"1.5 us\"";
    case ParameterUnit::Bandwidth: return "a bandwidth from " + range + ", e.g. \"45 GB/s\"";
    case ParameterUnit::Fraction: return "a fraction in " + range;
    case ParameterUnit::Number: break;
  }
  return "a number from " + range + " (" + doc + ")";
}

double HardwareParameter::read(const yaml_fields::Field& field) const {
  double value = 0;
  switch (unit) {
    case ParameterUnit::Time: value = yaml_fields::read_quantity(field, parse_time_s); break;
    case ParameterUnit::Bandwidth: value = yaml_fields::read_quantity(field, parse_bandwidth_Bps); break;
    case ParameterUnit::Fraction:
    case ParameterUnit::Number: value = yaml_fields::read_real(field); break;
  }
  if (!valid.contains(value)) yaml_fields::fail(field, "out of range; expected " + expected_text());
  return value;
}

const std::vector<HardwareParameter>& hardware_parameters() { return rows(); }

const HardwareParameter* find_hardware_parameter(std::string_view key) {
  for (const HardwareParameter& row : rows())
    if (row.key == key) return &row;
  return nullptr;
}

std::vector<const HardwareParameter*> hardware_parameters_in(std::string_view section) {
  std::vector<const HardwareParameter*> out;
  for (const HardwareParameter& row : rows())
    if (row.section() == section) out.push_back(&row);
  return out;
}

HardwareParameterRegistration::HardwareParameterRegistration(HardwareParameter row) : key_(row.key) {
  if (find_hardware_parameter(row.key)) throw std::logic_error("hardware parameter " + row.key + " registered twice");
  if ((row.chip_member == nullptr) == (row.scenario_member == nullptr))
    throw std::logic_error("hardware parameter " + row.key + " needs exactly one of chip_member and scenario_member");
  rows().push_back(std::move(row));
  refresh_key_tables();
}

HardwareParameterRegistration::~HardwareParameterRegistration() {
  auto& table = rows();
  table.erase(std::remove_if(table.begin(), table.end(), [&](const HardwareParameter& row) { return row.key == key_; }),
              table.end());
  refresh_key_tables();
}

}  // namespace podsim
