// Reads a scenario YAML file into a validated Scenario.
// The schema (every key, its type, unit, default and meaning) is documented in one place,
// docs/scenario-schema.md; change it together with this file, training_loader.cpp (the
// `workload.kind: training` part) and yaml_fields.cpp (YAML values with locations, and readers).
//
// Every problem becomes an InputError naming the file, the 1-based line of the offending node,
// the dotted key ("workload.operations[1].axes"), the value as written and what was expected.
// yaml-cpp exceptions never escape: whatever the input, the caller sees InputError or a Scenario.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

#include "sim/scenario/builtin_profiles.hpp"
#include "sim/scenario/calibration_files.hpp"
#include "sim/scenario/far_overrides.hpp"
#include "sim/scenario/file_references.hpp"
#include "sim/scenario/hardware_parameters.hpp"
#include "sim/scenario/input_file.hpp"
#include "sim/scenario/perturbation_loader.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/routing_loader.hpp"
#include "sim/scenario/serving_loader.hpp"
#include "sim/scenario/summary_field_names.hpp"
#include "sim/scenario/inference_loader.hpp"
#include "sim/scenario/link_bounds.hpp"
#include "sim/scenario/training_loader.hpp"
#include "sim/scenario/units.hpp"
#include "sim/scenario/yaml_fields.hpp"
#include "topology/cloud_slices.hpp"

namespace podsim {
namespace {

using namespace yaml_fields;   // the field readers every loader uses

constexpr int kSchemaVersion = 1;
constexpr uintmax_t kMaxFileBytes = 16u << 20;

// ---- hardware ----

const ChipSpec& read_preset(const Field& field) {
  const std::string name = read_string(field);
  if (const ChipSpec* chip = find_chip_preset(name)) return *chip;
  std::vector<std::string> names;
  for (const ChipSpec& chip : chip_presets()) names.push_back(chip.name);
  fail(field, "unknown chip preset; expected one of: " + join(names));
}

std::vector<int> read_host_shape(const Field& field) {
  const std::vector<Field> items = read_list(field);
  if (items.empty() || items.size() > 3) fail(field, "expected 1 to 3 positive sizes, e.g. [4, 2]");
  std::vector<int> shape;
  for (const Field& item : items) shape.push_back(read_int(item, 1, kMaxAxisSize));
  return shape;
}

int product(const std::vector<int>& sizes) {
  int64_t total = 1;
  for (int size : sizes) total = std::min<int64_t>(total * size, std::numeric_limits<int>::max());
  return static_cast<int>(total);
}

// chips_per_host and host_shape describe one thing twice; keep them consistent.
void apply_host_overrides(const MapReader& overrides, ChipSpec& chip) {
  const auto shape_field = overrides.optional("host_shape");
  const auto chips_field = overrides.optional("chips_per_host");
  if (shape_field) chip.host_shape = read_host_shape(*shape_field);
  if (chips_field) {
    chip.chips_per_host = read_int(*chips_field, 1, kMaxChips);
    if (!chip.host_shape.empty() && product(chip.host_shape) != chip.chips_per_host)
      fail(*chips_field, "must equal the product of host_shape (" +
                             std::to_string(product(chip.host_shape)) +
                             "); give host_shape too, e.g. host_shape: [4, 2]");
  } else if (shape_field) {
    chip.chips_per_host = product(chip.host_shape);
  }
}

// A number without a unit reads in the base unit (95 is 95 bytes): say so where that put it
// out of range (issue 42: hbm_capacity: 95 meant GB).
std::string bare_number_hint(const Field& field, OverrideQuantity quantity) {
  const std::string text = field.node.IsScalar() ? field.node.Scalar() : "";
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  if (text.empty() || end == text.c_str() || *end != '\0') return "";
  const char* unit = quantity == OverrideQuantity::Bytes       ? " B"
                     : quantity == OverrideQuantity::Bandwidth ? " B/s"
                     : quantity == OverrideQuantity::Ops       ? " OP/s"
                                                               : " FLOP/s";
  const char* suffix = quantity == OverrideQuantity::Bytes       ? " GB"
                       : quantity == OverrideQuantity::Bandwidth ? " GB/s"
                       : quantity == OverrideQuantity::Ops       ? " TOP/s"
                                                                 : " TFLOP/s";
  return "; a number without a unit is in" + std::string(unit) + " (" + text + " is " + text + unit +
         "): give the unit, e.g. \"" + text + suffix + "\"";
}

// sparse_core_offload: the collectives XLA moves to the SparseCores, named as the Ironwood
// recipes' flags xla_tpu_enable_sparse_core_collective_offload_<kind> name them. An all-gather
// adds nothing, so its offload changes no time (it costs the TensorCore nothing already).
void read_sparse_core_offload(const Field& field, ChipSpec& chip) {
  if (chip.sparse_cores_per_chip <= 0)
    fail(field, chip.name + " has no SparseCores podsim knows of (tpu7x has 4); expected no sparse_core_offload");
  // The list replaces the chip's default set (tpu7x: every kind, libtpu's default); [] offloads none.
  chip.reduce_scatter_on_sparse_core = chip.all_reduce_on_sparse_core = false;
  for (const Field& item : read_list(field)) {
    const std::string kind = read_choice<std::string>(
        item, {{"all_gather", "all_gather"}, {"reduce_scatter", "reduce_scatter"}, {"all_reduce", "all_reduce"}});
    if (kind == "reduce_scatter") chip.reduce_scatter_on_sparse_core = true;
    if (kind == "all_reduce") chip.all_reduce_on_sparse_core = true;
  }
}

void apply_overrides(const Field& field, ChipSpec& chip, std::vector<std::string>& warnings) {
  const MapReader overrides(field, SchemaMap::HardwareOverrides);
  overrides.reject_unknown();
  const ChipSpec preset = chip;
  // Each value valid on its own can still break what is derived from it (15000 PiB of HBM
  // overflowed the max batch; 1e-300 B/s stalled SimGrid), so every override stays within a
  // range around real chips, wide enough for any hypothetical one; one far from the preset's
  // figure is kept with a warning (far_overrides.hpp).
  using Q = OverrideQuantity;
  auto set = [&](std::string_view key, double ChipSpec::*member, auto parse, double low, double high, const char* range,
                 OverrideQuantity quantity) {
    if (auto value = overrides.optional(key)) {
      const double read = read_quantity(*value, parse);
      if (!(read >= low && read <= high))
        fail(*value, std::string("out of range; expected ") + range + bare_number_hint(*value, quantity));
      chip.*member = read;
      if (auto warning = far_override_warning(value->key, read, preset.*member, preset.name, quantity))
        warnings.push_back(located(*value, *warning));
    }
  };
  const char* bandwidths = "1 kB/s to 1 PB/s";
  set("ici_bandwidth", &ChipSpec::ici_bandwidth_Bps, parse_bandwidth_Bps, 1e3, 1e15, bandwidths, Q::Bandwidth);
  set("hbm_bandwidth", &ChipSpec::hbm_bandwidth_Bps, parse_bandwidth_Bps, 1e3, 1e15, bandwidths, Q::Bandwidth);
  set("hbm_capacity", &ChipSpec::hbm_bytes, [](std::string_view text) { return double(parse_bytes(text)); }, 1048576.0,
      1125899906842624.0, "1 MiB to 1 PiB", Q::Bytes);
  set("bf16_flops", &ChipSpec::bf16_flops_per_s, parse_flops_per_s, 1e6, 1e18, "1 MFLOP/s to 1 EFLOP/s", Q::Flops);
  set("int8_ops", &ChipSpec::int8_ops_per_s, parse_flops_per_s, 1e6, 1e18, "1 MOP/s to 1 EOP/s", Q::Ops);
  set("fp8_flops", &ChipSpec::fp8_flops_per_s, parse_flops_per_s, 1e6, 1e18, "1 MFLOP/s to 1 EFLOP/s", Q::Flops);
  set("dcn_bandwidth_per_host", &ChipSpec::dcn_bandwidth_per_host_Bps, parse_bandwidth_Bps, 1e3, 1e15, bandwidths,
      Q::Bandwidth);
  set("pcie_bandwidth", &ChipSpec::pcie_bandwidth_Bps, parse_bandwidth_Bps, 1e3, 1e15, bandwidths, Q::Bandwidth);
  // The calibration parameters among the overrides: their units and ranges are their rows'.
  for (const HardwareParameter* row : hardware_parameters_in("hardware.overrides"))
    if (auto value = overrides.optional(row->scenario_leaf())) row->set(chip, row->read(*value));
  if (auto padding = overrides.optional("mxu_padding")) chip.mxu_padding = read_bool(*padding);
  if (auto split = overrides.optional("antipodal_split")) chip.antipodal_split = read_bool(*split);
  if (auto core = overrides.optional("reductions_on_tensor_core")) chip.reductions_on_tensor_core = read_bool(*core);
  if (auto offload = overrides.optional("sparse_core_offload")) read_sparse_core_offload(*offload, chip);
  if (auto model = overrides.optional("compute_model"))
    chip.compute_model = read_choice<ComputeModel>(*model, {{"book", ComputeModel::Book}, {"kernels", ComputeModel::Kernels}});
  if (auto price = overrides.optional("chip_hour_price_usd")) {
    chip.chip_hour_price_source = "hardware.overrides.chip_hour_price_usd";
    chip.chip_hour_price_usd = read_real(*price);
    if (!(chip.chip_hour_price_usd > 0 && chip.chip_hour_price_usd <= 1e4))
      fail(*price, "expected US dollars per chip-hour, above 0 and at most 10000, e.g. 4.2");
  }
  if (auto links = overrides.optional("ici_links_per_neighbor"))
    chip.ici_links_per_neighbor = read_int(*links, 1, 64);
  apply_host_overrides(overrides, chip);
  if (!overrides.entries().empty()) chip.source += " (with overrides from the scenario)";
}

// A profile's parameters, applied where the scenario's hardware.overrides (already applied to
// `chip`) did not set them.
void apply_profile_parameters(const CalibrationProfile& profile, const Field& hardware, ChipSpec& chip,
                              Scenario& scenario) {
  auto overridden = [&](std::string_view key) {
    auto overrides = MapReader(hardware, SchemaMap::Hardware).optional("overrides");
    return overrides && MapReader(*overrides, SchemaMap::HardwareOverrides).optional(key).has_value();
  };
  // A simulation key given in the scenario replaces the profile's value later (parse_simulation).
  for (const auto& [key, value] : profile.parameters) {
    const HardwareParameter& row = *find_hardware_parameter(key);
    if (row.section() == "hardware.overrides" && overridden(row.scenario_leaf())) continue;
    if (row.chip_member) row.set(chip, value);
    else row.set(scenario, value);
  }
  if (profile.mxu_padding && !overridden("mxu_padding")) chip.mxu_padding = *profile.mxu_padding;
  if (profile.antipodal_split && !overridden("antipodal_split")) chip.antipodal_split = *profile.antipodal_split;
  if (profile.reductions_on_tensor_core && !overridden("reductions_on_tensor_core"))
    chip.reductions_on_tensor_core = *profile.reductions_on_tensor_core;
  if (profile.compute_model && !overridden("compute_model")) chip.compute_model = *profile.compute_model;
  if (profile.hop_model) scenario.hop_model = *profile.hop_model;
  scenario.profile = profile.name;
  scenario.prediction_error = profile_prediction_error(profile);
  scenario.prediction_error_moe = profile_prediction_error(profile, "", "", true);
  scenario.prediction_errors_by_kind.clear();
  for (const char* kind : kQuantityKinds)
    if (auto e = profile_prediction_error(profile, kind); e && !e->pooled) scenario.prediction_errors_by_kind[kind] = *e;
  chip.source += " (calibration profile " + profile.name + ")";
}

// hardware.profile: a fitted profile for this chip, by name (built in) or file; `ideal` for the
// book's machine.
void apply_profile(const Field& field, const std::string& scenario_path, const Field& hardware, ChipSpec& chip,
                   Scenario& scenario) {
  scenario.profile_source = ProfileSource::Named;
  const std::string named = read_string(field);
  if (named == kIdealProfile) {   // the preset as the book gives it
    scenario.profile = kIdealProfile;
    scenario.prediction_error.reset();
    scenario.prediction_error_moe.reset();
    scenario.prediction_errors_by_kind.clear();
    return;
  }
  const bool builtin = names_builtin_profile(named);
  const CalibrationProfile* shipped = builtin ? builtin_profile(named) : nullptr;
  if (builtin && !shipped) {
    std::string known = kIdealProfile;
    for (const auto& name : builtin_profile_names()) known += ", " + name;
    fail(field, "no built-in profile of that name; expected one of " + known + ", or a profile file (a path ending in .yaml)");
  }
  const std::string path = builtin ? "built-in profile " + named : resolve_input_path(named, scenario_path);
  CalibrationProfile profile;
  try {
    profile = shipped ? *shipped : load_profile(path);
  } catch (const InputError& e) {
    fail(field, std::string("the profile does not load: ") + e.what());
  }
  const std::string preset = read_string(MapReader(hardware, SchemaMap::Hardware).required("preset"));
  if (profile.chip != preset)
    fail(field, "a profile for " + profile.chip + " (" + path + "); expected one fit for " + preset);
  apply_profile_parameters(profile, hardware, chip, scenario);
}

// No hardware.profile: the preset's built-in profile where podsim ships one (issue 26: a new
// user's first number is the real machine's), the ideal machine otherwise.
void apply_default_profile(const Field& hardware, ChipSpec& chip, Scenario& scenario) {
  scenario.profile_source = ProfileSource::Default;
  scenario.profile = kIdealProfile;
  scenario.prediction_error.reset();
  scenario.prediction_error_moe.reset();
  scenario.prediction_errors_by_kind.clear();
  const std::string preset = read_string(MapReader(hardware, SchemaMap::Hardware).required("preset"));
  if (const auto name = builtin_profile_for_chip(preset))
    apply_profile_parameters(*builtin_profile(*name), hardware, chip, scenario);
}

ChipSpec parse_hardware(const Field& field, std::vector<std::string>& warnings) {
  const MapReader hardware(field, SchemaMap::Hardware);
  hardware.reject_unknown();
  ChipSpec chip = read_preset(hardware.required("preset"));
  if (auto overrides = hardware.optional("overrides")) apply_overrides(*overrides, chip, warnings);
  return chip;
}

// ---- topology ----

std::string read_axis_name(const Field& field) {
  const std::string name = read_string(field);
  const bool ok = std::isalpha(static_cast<unsigned char>(name[0])) &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                  });
  if (!ok) fail(field, "expected an axis name of letters, digits and '_' starting with a letter");
  return name;
}

void add_axis(std::vector<MeshAxis>& axes, const Field& name_field, const Field& size_field) {
  const std::string name = read_axis_name(name_field);
  for (const MeshAxis& axis : axes)
    if (axis.name == name) fail(name_field, "axis name used twice");
  axes.push_back(MeshAxis{name, read_int(size_field, 1, kMaxAxisSize), false});
}

// Either the ordered map form {X: 8, Y: 4} or the list form [{name: X, size: 8}, ...].
// "4x4x4": axes X, Y, Z of those sizes. "v5p-2048": a Google Cloud accelerator type's shape
// (topology/cloud_slices.hpp), on its own chip.
std::vector<MeshAxis> parse_mesh_shorthand(const Field& field, const ChipSpec* chip) {
  const std::string text = field.node.Scalar();
  std::vector<MeshAxis> axes;
  const char* names[] = {"X", "Y", "Z"};
  if (text.find('-') != std::string::npos) {
    const auto slice = find_cloud_slice(text);
    if (!slice) {
      std::string known;
      for (const auto& name : cloud_slice_names()) known += (known.empty() ? "" : ", ") + name;
      fail(field, "not a listed Cloud TPU accelerator type; expected one of " + known);
    }
    if (chip == nullptr)
      fail(field, "a Cloud TPU slice brings its own chip; expected a shape such as \"8x4\" here");
    if (slice->chip != chip->name)
      fail(field, "a " + slice->chip + " slice; expected hardware.preset: " + slice->chip + " (the scenario's is " +
                      chip->name + ")");
    for (int size : slice->shape) axes.push_back(MeshAxis{names[axes.size()], size, false});
    return axes;
  }
  size_t begin = 0;
  while (true) {
    const size_t x = text.find('x', begin);
    const std::string part = text.substr(begin, x - begin);
    int size = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), size);
    if (part.empty() || error != std::errc() || end != part.data() + part.size() || size < 1 || size > kMaxAxisSize ||
        axes.size() == 3)
      fail(field, "expected a mapping such as {X: 8, Y: 4} or a shape such as \"8x4\" (1 to 3 sizes from 1 to " +
                      std::to_string(kMaxAxisSize) + ")");
    axes.push_back(MeshAxis{names[axes.size()], size, false});
    if (x == std::string::npos) break;
    begin = x + 1;
  }
  return axes;
}

std::vector<MeshAxis> parse_mesh(const Field& field, const ChipSpec& chip) {
  std::vector<MeshAxis> axes;
  if (field.node.IsScalar()) {
    axes = parse_mesh_shorthand(field, &chip);
  } else if (field.node.IsSequence()) {
    for (const Field& item : read_list(field)) {
      const MapReader axis(item, SchemaMap::MeshAxis);
      axis.reject_unknown();
      add_axis(axes, axis.required("name"), axis.required("size"));
    }
  } else {
    const MapReader mesh = MapReader::open(field);
    for (const auto& entry : mesh.entries()) add_axis(axes, entry.key, entry.value);
  }
  const int max_axes = std::min(3, chip.max_torus_dims);
  if (axes.empty() || static_cast<int>(axes.size()) > max_axes)
    fail(field, "expected 1 to " + std::to_string(max_axes) + " axes (" + chip.name + " has a " +
                    std::to_string(chip.max_torus_dims) + "D torus), e.g. {X: 8, Y: 4}");
  return axes;
}

// true, false, or "auto" for the chip's own rule.
std::optional<bool> read_wrap(const Field& field) {
  if (field.node.IsScalar() && field.node.Scalar() == "auto") return std::nullopt;
  if (!field.node.IsScalar() || (field.node.Scalar() != "true" && field.node.Scalar() != "false"))
    fail(field, "expected true, false or auto");
  return read_bool(field);
}

void parse_wraparound(const std::optional<Field>& field, const ChipSpec& chip,
                      std::vector<MeshAxis>& axes) {
  std::vector<int> sizes;
  for (const MeshAxis& axis : axes) sizes.push_back(axis.size);
  const std::vector<bool> rule = default_wraparound(chip, sizes);
  std::vector<std::optional<bool>> chosen(axes.size());
  if (field && field->node.IsScalar()) {
    std::fill(chosen.begin(), chosen.end(), read_wrap(*field));
  } else if (field) {
    const MapReader wrap = MapReader::open(*field);
    for (const auto& entry : wrap.entries()) {
      const int index = axis_index(axes, entry.name);
      if (index < 0) MapReader::fail_key(entry, "not a mesh axis; the mesh has " + axis_names(axes));
      chosen[index] = read_wrap(entry.value);
    }
  }
  for (size_t i = 0; i < axes.size(); ++i)
    axes[i].wraparound = chosen[i].value_or(i < rule.size() && rule[i]);
}

void check_chip_count(const Field& field, const TopologySpec& topology) {
  int64_t chips = topology.slices;
  for (const MeshAxis& axis : topology.axes) chips *= axis.size;   // <= 4096^3 x 10^6: fits
  if (chips > kMaxChips)
    fail(field, std::to_string(chips) + " chips in all; expected at most " + std::to_string(kMaxChips));
}

// topology.split: {Z: {inner: Zi, outer: Zo, inner_size: 4}}
void parse_splits(const Field& field, TopologySpec& topology) {
  const MapReader reader = MapReader::open(field);
  for (const auto& entry : reader.entries()) {
    const int axis = axis_index(topology.axes, entry.name);
    if (axis < 0) fail(entry.key, "not a mesh axis; the mesh has " + axis_names(topology.axes));
    const MapReader split(entry.value, SchemaMap::AxisSplit);
    split.reject_unknown();
    AxisSplit s;
    s.axis = axis;
    s.inner = read_name(split.required("inner"), "a logical axis name");
    s.outer = read_name(split.required("outer"), "a logical axis name");
    const Field size = split.required("inner_size");
    const int n = topology.axes[axis].size;
    s.inner_size = read_int(size, 1, n);
    if (s.inner_size < 2 || s.inner_size >= n || n % s.inner_size != 0) {
      fail(size, "expected a divisor of " + entry.name + "'s size " + std::to_string(n) + " between 2 and " +
                     std::to_string(n / 2));
    }
    if (s.inner == s.outer) fail(split.required("outer"), "the same name as inner; expected two different names");
    for (const auto& name : {s.inner, s.outer}) {
      if (axis_index(topology.axes, name) >= 0) {
        fail(split.required(name == s.inner ? "inner" : "outer"), "a mesh axis has that name; expected a new axis name");
      }
      for (const auto& other : topology.splits) {
        if (other.inner == name || other.outer == name) fail(entry.value, "logical axis " + name + " defined twice");
      }
    }
    topology.splits.push_back(s);
  }
}

TopologySpec parse_topology(const Field& field, const ChipSpec& chip) {
  const MapReader reader(field, SchemaMap::Topology);
  reader.reject_unknown();
  TopologySpec topology;
  topology.chip = chip;
  const Field mesh = reader.required("mesh");
  topology.axes = parse_mesh(mesh, chip);
  parse_wraparound(reader.optional("wraparound"), chip, topology.axes);
  try {
    topology.axes = mesh_with_cores(std::move(topology.axes), chip);
  } catch (const std::invalid_argument& e) {
    fail(mesh, e.what());
  }
  if (auto slices = reader.optional("slices")) topology.slices = read_int(*slices, 1, kMaxChips);
  check_chip_count(reader.optional("slices").value_or(mesh), topology);
  if (auto over = reader.optional("dcn_oversubscription")) {
    topology.dcn_oversubscription = read_real(*over);
    if (topology.dcn_oversubscription < 1.0)
      fail(*over, "expected a number >= 1 (1 = non-blocking DCN switch)");
  }
  if (auto split = reader.optional("split")) parse_splits(*split, topology);
  return topology;
}

// A mesh no Cloud TPU slice has (3x5x7 of v5p) is simulated, with a word: it may be a slip, and
// no one can rent it.
void warn_unoffered_mesh(const Field& topology, Scenario& scenario) {
  std::vector<int> shape;
  std::string dims;
  for (const MeshAxis& axis : scenario.topology.axes) {
    if (axis.die_to_die) continue;   // a chip's devices, not a slice's shape
    shape.push_back(axis.size);
    dims += (dims.empty() ? "" : "x") + std::to_string(axis.size);
  }
  const std::string& chip = scenario.topology.chip.name;
  // A mesh of fewer axes than the chip's torus is a line or plane within some slice (a ring's
  // scenario), not a slice of its own: nothing to judge.
  if (static_cast<int>(shape.size()) < scenario.topology.chip.max_torus_dims) return;
  if (cloud_offers_shape(chip, shape).value_or(true)) return;
  scenario.warnings.push_back(located(MapReader(topology, SchemaMap::Topology).required("mesh"),
                                      "topology.mesh " + dims + " is no Cloud TPU " + chip + " slice (" + chip +
                                          " offers " + cloud_shapes_text(chip) + "); simulated as given"));
}

// ---- simulation ----

void parse_simulation(const Field& field, Scenario& scenario) {
  const MapReader reader(field, SchemaMap::Simulation);
  reader.reject_unknown();
  if (auto model = reader.optional("hop_model"))
    scenario.hop_model = read_choice<HopModel>(
        *model, {{"floor", HopModel::Floor}, {"additive", HopModel::Additive}});
  // link_efficiency, launch_overhead: calibration parameters (hardware_parameters.cpp).
  for (const HardwareParameter* row : hardware_parameters_in("simulation"))
    if (auto value = reader.optional(row->scenario_leaf())) row->set(scenario, row->read(*value));
}

// Every link at the simulation's efficiency stays in the range SimGrid handles (link_bounds.hpp):
// an efficiency of 1e-320 is a fraction in (0, 1] and deadlocked it. Blames the key that set
// the efficiency: simulation.link_efficiency, else the profile.
void check_derived_links(const MapReader& top, const Scenario& scenario) {
  const ChipSpec& chip = scenario.topology.chip;
  const double slowest = std::min(chip.ici_bandwidth_Bps, chip.dcn_bandwidth_per_host_Bps) * scenario.link_efficiency;
  const double fastest = std::max(chip.ici_bandwidth_Bps, chip.dcn_bandwidth_per_host_Bps) * scenario.link_efficiency;
  if (slowest >= kMinLinkBandwidth_Bps && fastest <= kMaxLinkBandwidth_Bps) return;
  const std::string what = "makes the " + std::string(slowest < kMinLinkBandwidth_Bps ? "slowest link " : "fastest link ") +
                           link_bandwidth_text(slowest < kMinLinkBandwidth_Bps ? slowest : fastest) +
                           "; expected a link efficiency that keeps every link between 1 kB/s and 1 EB/s";
  if (auto simulation = top.optional("simulation")) {
    if (auto efficiency = MapReader(*simulation, SchemaMap::Simulation).optional("link_efficiency")) fail(*efficiency, what);
  }
  if (auto profile = MapReader(top.required("hardware"), SchemaMap::Hardware).optional("profile"))
    fail(*profile, "its link_efficiency " + what);
  fail(top.required("hardware"), what);
}

// ---- operations ----

// What an operation's entry said before the cross-operation checks (names, `after`).
struct ParsedOperation {
  OperationSpec spec;
  Field entry;
  std::optional<Field> after;
};

std::vector<int> parse_axes(const Field& field, const std::vector<MeshAxis>& mesh) {
  if (field.node.IsScalar() && field.node.Scalar() == "all") {   // every mesh axis, in order
    std::vector<int> all;
    for (size_t a = 0; a < mesh.size(); ++a) all.push_back(static_cast<int>(a));
    return all;
  }
  std::vector<Field> items;
  if (field.node.IsScalar()) items.push_back(field);   // "axes: Y" for a single axis
  else items = read_list(field);
  std::vector<int> indices;
  for (const Field& item : items) {
    const int index = axis_index(mesh, read_string(item));
    if (index < 0) fail(item, "not a mesh axis; the mesh has " + axis_names(mesh));
    if (std::find(indices.begin(), indices.end(), index) != indices.end())
      fail(item, "axis listed twice");
    indices.push_back(index);
  }
  return indices;
}

std::vector<int> sharding_axis_indices(const Field& field, const std::vector<std::string>& names,
                                       const std::vector<MeshAxis>& mesh) {
  std::vector<int> indices;
  for (const std::string& name : names) {
    const int index = axis_index(mesh, name);
    if (index < 0) fail(field, "axis '" + name + "' is not a mesh axis; the mesh has " + axis_names(mesh));
    indices.push_back(index);
  }
  return indices;
}

// Each sharded dimension must split evenly, or shards would differ in size.
void check_even_split(const Field& field, const ArrayShape& array, const Sharding& sharding,
                      const std::vector<MeshAxis>& mesh) {
  for (size_t d = 0; d < array.dims.size(); ++d) {
    uint64_t ways = 1;
    for (int index : sharding_axis_indices(field, sharding.dim_axes[d], mesh)) ways *= mesh[index].size;
    if (array.dims[d] % ways != 0)
      fail(field, "dimension " + sharding.dim_names[d] + " = " + std::to_string(array.dims[d]) +
                      " does not split evenly " + std::to_string(ways) + " ways");
  }
}

// The gathered / scattered axes must (all_gather, all_to_all) or must not (reduce_scatter,
// all_reduce: they hold partial sums) already split the array.
void check_collective_axes(const Field& field, CollectiveKind kind, const std::vector<int>& collective,
                           const std::vector<int>& sharded, const std::vector<MeshAxis>& mesh) {
  const bool needs_sharded = kind == CollectiveKind::AllGather || kind == CollectiveKind::AllToAll;
  for (int axis : collective) {
    const bool is_sharded = std::find(sharded.begin(), sharded.end(), axis) != sharded.end();
    if (needs_sharded && !is_sharded)
      fail(field, std::string(to_string(kind)) + " over " + mesh[axis].name +
                      ", but the array is not sharded over " + mesh[axis].name +
                      "; expected a sharding that uses it, e.g. [E_" + mesh[axis].name + ", F]");
    if (!needs_sharded && is_sharded)
      fail(field, std::string(to_string(kind)) + " over " + mesh[axis].name +
                      ", but the array is already sharded over " + mesh[axis].name +
                      "; expected the axis to be absent or unreduced, e.g. {U_" + mesh[axis].name + "}");
  }
}

// V, the book's per-group array size: the array divided by the shards of axes outside the group.
double volume_from_array(const Field& array_field, const std::optional<Field>& sharding_field,
                         const CollectiveSpec& collective, const std::vector<MeshAxis>& mesh) {
  const ArrayShape array = read_quantity(array_field, parse_array);
  Sharding sharding;
  sharding.dim_names.resize(array.dims.size(), "?");
  sharding.dim_axes.resize(array.dims.size());
  if (sharding_field) {
    sharding = read_quantity(*sharding_field, parse_sharding);
    try {
      check_sharding_rank(sharding, array);
    } catch (const std::invalid_argument& error) {
      fail(*sharding_field, error.what());
    }
    check_even_split(*sharding_field, array, sharding, mesh);
    sharding_axis_indices(*sharding_field, sharding.unreduced, mesh);
  }
  const Field& blame = sharding_field.value_or(array_field);
  const std::vector<int> sharded = sharding_axis_indices(blame, sharding.sharded_axes(), mesh);
  check_collective_axes(blame, collective.kind, collective.axes, sharded, mesh);
  double outside = 1;
  for (int axis : sharded)
    if (std::find(collective.axes.begin(), collective.axes.end(), axis) == collective.axes.end())
      outside *= mesh[axis].size;
  return static_cast<double>(array.bytes) / outside;
}

void parse_volume(const MapReader& reader, OperationSpec& op, const std::vector<MeshAxis>& mesh) {
  const auto bytes = reader.optional("bytes");
  const auto array = reader.optional("array");
  const auto sharding = reader.optional("sharding");
  if (bytes && array) fail(*array, "give either bytes or array, not both");
  if (!bytes && !array)
    fail(reader.self(), "missing size; expected bytes (e.g. \"34 MB\") or array (e.g. \"bf16[2048,8192]\")");
  if (sharding && !array) fail(*sharding, "sharding applies to an array; expected array too");
  if (bytes) {
    op.collective.bytes = static_cast<double>(read_quantity(*bytes, parse_bytes));
    return;
  }
  op.array = read_string(*array);
  if (sharding) op.sharding = read_string(*sharding);
  op.collective.bytes = volume_from_array(*array, sharding, op.collective, mesh);
}

void parse_dcn(const MapReader& reader, OperationSpec& op, const TopologySpec& topology) {
  if (auto dcn = reader.optional("dcn")) {
    op.collective.over_dcn = read_bool(*dcn);
    if (op.collective.over_dcn && topology.slices == 1)
      fail(*dcn, "topology.slices is 1, so there is no DCN to cross; expected slices > 1 or dcn: false");
  }
  if (auto algorithm = reader.optional("dcn_algorithm")) {
    if (!op.collective.over_dcn) fail(*algorithm, "dcn_algorithm applies only with dcn: true");
    op.collective.dcn_algorithm = read_choice<DcnAlgorithm>(
        *algorithm, {{"hierarchical", DcnAlgorithm::Hierarchical}, {"flat_ring", DcnAlgorithm::FlatRing}});
  }
}

ParsedOperation parse_operation(const Field& entry, int index, const TopologySpec& topology) {
  const MapReader reader(entry, SchemaMap::Operation);
  reader.reject_unknown();
  ParsedOperation parsed{OperationSpec{}, entry, reader.optional("after")};
  OperationSpec& op = parsed.spec;
  op.where = entry.where;
  const auto name = reader.optional("name");
  op.name = name ? read_name(*name, "an operation name") : "op" + std::to_string(index);
  op.collective.kind = read_choice<CollectiveKind>(
      reader.required("kind"), {{"all_gather", CollectiveKind::AllGather},
                                {"reduce_scatter", CollectiveKind::ReduceScatter},
                                {"all_reduce", CollectiveKind::AllReduce},
                                {"all_to_all", CollectiveKind::AllToAll}});
  const auto axes = reader.optional("axes");
  if (axes) op.collective.axes = parse_axes(*axes, topology.axes);
  parse_dcn(reader, op, topology);
  if (op.collective.axes.empty() && !op.collective.over_dcn)
    fail(axes.value_or(entry), "expected at least one mesh axis (" + axis_names(topology.axes) +
                                   ") in axes, or dcn: true");
  parse_volume(reader, op, topology.axes);
  if (auto bidirectional = reader.optional("bidirectional"))
    op.collective.bidirectional = read_bool(*bidirectional);
  if (auto repeat = reader.optional("repeat")) op.repeat = read_int(*repeat, 1, kMaxChips);
  return parsed;
}

// Operation index by name. Lists are as long as a 16 MiB file allows (200,000 operations):
// every check below is linear in them, as a name-by-name search took minutes.
using OperationIndex = std::unordered_map<std::string, int>;

OperationIndex index_operations(const std::vector<ParsedOperation>& ops) {
  OperationIndex index;
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto [first, is_new] = index.emplace(ops[i].spec.name, static_cast<int>(i));
    if (!is_new) {
      const MapReader reader = MapReader::open(ops[i].entry);
      fail(reader.optional("name").value_or(ops[i].entry),
           "operation name used twice (first at line " + std::to_string(ops[first->second].entry.where.line) + ")");
    }
  }
  return index;
}

void resolve_after(std::vector<ParsedOperation>& ops, const OperationIndex& index) {
  for (size_t i = 0; i < ops.size(); ++i) {
    OperationSpec& op = ops[i].spec;
    if (!ops[i].after) {
      if (i > 0) op.after = {ops[i - 1].spec.name};
      continue;
    }
    std::unordered_set<std::string> listed;
    for (const Field& item : read_list(*ops[i].after)) {
      const std::string name = read_string(item);
      if (!index.contains(name)) fail(item, "no operation has this name");
      if (!listed.insert(name).second) fail(item, "operation listed twice");
      op.after.push_back(name);
    }
  }
}

// Default `after` edges point backwards, so a cycle always holds an explicit `after`: blame it.
[[noreturn]] void fail_cycle(const std::vector<ParsedOperation>& ops, const std::vector<int>& cycle) {
  std::vector<std::string> names;
  for (int op : cycle) names.push_back(ops[op].spec.name);
  const auto explicit_after =
      std::find_if(cycle.begin(), cycle.end(), [&](int op) { return ops[op].after.has_value(); });
  const ParsedOperation& blamed = ops[explicit_after != cycle.end() ? *explicit_after : cycle.front()];
  fail(blamed.after.value_or(blamed.entry),
       "operations wait on each other in a cycle: " + join(names, " after "));
}

// Depth-first search; a node met again while still on the path closes a cycle. The path is a
// vector, not the call stack: 60,000 operations each `after` the next (4.7 MB of YAML)
// overflowed the stack when this recursed, and podsim died of SIGSEGV.
void check_acyclic(const std::vector<ParsedOperation>& ops, const OperationIndex& index) {
  enum class Mark { New, OnPath, Done };
  std::vector<Mark> marks(ops.size(), Mark::New);
  std::vector<std::pair<int, size_t>> path;   // an operation, and the next of its `after` to follow
  for (size_t root = 0; root < ops.size(); ++root) {
    if (marks[root] != Mark::New) continue;
    marks[root] = Mark::OnPath;
    path.emplace_back(static_cast<int>(root), 0);
    while (!path.empty()) {
      const int node = path.back().first;
      const std::vector<std::string>& after = ops[node].spec.after;
      if (path.back().second == after.size()) {
        marks[node] = Mark::Done;
        path.pop_back();
        continue;
      }
      const int next = index.at(after[path.back().second++]);
      if (marks[next] == Mark::OnPath) {
        std::vector<int> cycle;
        const auto from = std::find_if(path.begin(), path.end(), [&](const auto& step) { return step.first == next; });
        for (auto step = from; step != path.end(); ++step) cycle.push_back(step->first);
        cycle.push_back(next);
        fail_cycle(ops, cycle);
      }
      if (marks[next] == Mark::New) {
        marks[next] = Mark::OnPath;
        path.emplace_back(next, 0);
      }
    }
  }
}

std::vector<OperationSpec> parse_operations(const Field& list, const TopologySpec& topology) {
  std::vector<ParsedOperation> ops;
  for (const Field& entry : read_list(list))
    ops.push_back(parse_operation(entry, static_cast<int>(ops.size()), topology));
  if (ops.empty()) fail(list, "expected at least one operation");
  const OperationIndex index = index_operations(ops);
  resolve_after(ops, index);
  check_acyclic(ops, index);
  std::vector<OperationSpec> specs;
  for (auto& op : ops) specs.push_back(std::move(op.spec));
  return specs;
}

// ---- workload ----

void parse_workload(const Field& field, Scenario& scenario) {
  const Field kind = MapReader::open(field).required("kind");
  const WorkloadKind workload_kind = read_choice<WorkloadKind>(kind, {{"collectives", WorkloadKind::Collectives},
                                                                     {"training", WorkloadKind::Training},
                                                                     {"inference", WorkloadKind::Inference},
                                                                     {"serving", WorkloadKind::Serving}});
  // In WorkloadKind order.
  const std::vector<std::pair<std::string, SchemaMap>> kinds = {{"collectives", SchemaMap::WorkloadCollectives},
                                                                {"training", SchemaMap::WorkloadTraining},
                                                                {"inference", SchemaMap::WorkloadInference},
                                                                {"serving", SchemaMap::WorkloadServing}};
  const SchemaMap own_map = kinds[static_cast<size_t>(workload_kind)].second;
  const std::vector<std::string>& own = key_table(own_map).keys;
  const MapReader reader(field, own_map);
  // A key of another kind gets a clearer message than "unknown key".
  for (const auto& entry : reader.entries()) {
    if (std::find(own.begin(), own.end(), entry.name) != own.end()) continue;
    for (const auto& [name, map] : kinds) {
      const std::vector<std::string>& keys = key_table(map).keys;
      if (std::find(keys.begin(), keys.end(), entry.name) != keys.end()) {
        MapReader::fail_key(entry, "applies only to kind: " + name + "; expected one of: " + join(own));
      }
    }
  }
  reader.reject_unknown();
  switch (workload_kind) {
    case WorkloadKind::Training: scenario.workload = detail::parse_training(reader, scenario.topology); break;
    case WorkloadKind::Inference: scenario.workload = detail::parse_inference(reader, scenario.topology); break;
    case WorkloadKind::Serving:
      scenario.workload = detail::parse_serving(reader, scenario.topology, [&](const Field& topology) {
        return parse_topology(topology, scenario.topology.chip);
      });
      break;
    case WorkloadKind::Collectives:
      scenario.workload = CollectivesWorkload{parse_operations(reader.required("operations"), scenario.topology)};
      break;
  }
}

// ---- expectations ----

// The field's unit in the summary field table says how to read the value; a "by suffix" field
// (an operation's) its name's last part (design.md, habit 2).
double read_expected_value(const Field& field, const std::string& unit, const std::string& name) {
  const std::string metric = unit == "by suffix" ? name.substr(name.rfind('.') + 1) : "";
  double value = 0;
  if (metric.ends_with("_per_s") || metric.ends_with("_per_s_per_chip")) value = read_real(field);   // rates
  else if (unit == "s" || metric.ends_with("_s")) value = read_quantity(field, parse_time_s);
  else if (metric.ends_with("_Bps")) value = read_quantity(field, parse_bandwidth_Bps);
  else if (unit == "bytes" || metric.ends_with("_bytes")) value = static_cast<double>(read_quantity(field, parse_bytes));
  else if (unit == "bool") return read_bool(field) ? 1.0 : 0.0;
  else value = read_real(field);
  if (value == 0.0) fail(field, "expected a non-zero value (a relative tolerance of zero means nothing)");
  return value;
}

std::vector<Expectation> parse_expectations(const Field& field, const Scenario& scenario) {
  std::vector<Expectation> expectations;
  std::unordered_set<std::string> operation_names;   // a set: both lists may be long
  ExpectFieldContext context{scenario.kind(), {}, &operation_names};
  if (const auto* collectives = std::get_if<CollectivesWorkload>(&scenario.workload))
    for (const OperationSpec& op : collectives->operations) operation_names.insert(op.name);
  // Only serving rows have <statistic> placeholders (sim/report/summary_field_table.hpp).
  if (const auto* serving = std::get_if<ServingWorkload>(&scenario.workload))
    context.percentiles = serving->metric_percentiles;
  for (const Field& item : read_list(field)) {
    const MapReader reader(item, SchemaMap::Expectation);
    reader.reject_unknown();
    Expectation expectation;
    const Field name = reader.required("field");
    expectation.field = read_string(name);
    const ExpectFieldMatch match = match_expect_field(expectation.field, context);
    if (!match.error.empty()) fail(name, match.error);
    expectation.value = read_expected_value(reader.required("value"), match.unit, expectation.field);
    auto read_fraction = [](const Field& tolerance) {
      const double f = read_real(tolerance);
      if (f <= 0.0 || f >= 1.0) fail(tolerance, "expected a fraction in (0, 1), e.g. 0.02");
      return f;
    };
    if (auto tolerance = reader.optional("rel_tolerance")) expectation.rel_tolerance = read_fraction(*tolerance);
    expectation.rel_tolerance_above = expectation.rel_tolerance;
    if (auto above = reader.optional("rel_tolerance_above")) expectation.rel_tolerance_above = read_fraction(*above);
    if (auto source = reader.optional("source")) expectation.source = read_string(*source);
    if (auto reason = reader.optional("tolerance_reason")) expectation.tolerance_reason = read_string(*reason);
    // A tolerance wider than 1% must say why: an expectation comes from a formula, and what
    // the simulation adds to it is named and sized, not absorbed by a loose band.
    if (std::max(expectation.rel_tolerance, expectation.rel_tolerance_above) > kExpectationDefaultTolerance &&
        expectation.tolerance_reason.empty()) {
      const char* key = reader.optional("rel_tolerance_above") &&
                                expectation.rel_tolerance_above > kExpectationDefaultTolerance
                            ? "rel_tolerance_above"
                            : "rel_tolerance";
      fail(*reader.optional(key), std::string("a tolerance over 1% needs tolerance_reason: what the simulation adds "
                                              "to the formula, and how large it can be"));
    }
    expectations.push_back(std::move(expectation));
  }
  return expectations;
}

// ---- compare ----

CompareSpec parse_compare(const Field& field) {
  const MapReader reader(field, SchemaMap::Compare);
  reader.reject_unknown();
  CompareSpec spec;
  for (const Field& item : read_list(reader.required("topologies"))) {
    parse_mesh_shorthand(item, nullptr);   // checked here, so a typo fails before any run
    spec.topologies.push_back(item.node.Scalar());
  }
  if (spec.topologies.empty()) fail(reader.required("topologies"), "expected at least one mesh shape");
  if (auto chips = reader.optional("chips")) {
    for (const Field& item : read_list(*chips)) spec.chips.push_back(read_preset(item).name);
  }
  return spec;
}

// ---- the document ----

std::string default_name(const std::string& path) {
  const std::string stem = std::filesystem::path(path).stem().string();
  return stem.empty() ? "scenario" : stem;
}

// Where the keys a run's size grows with were written, for errors found after loading (the
// preflight estimate: sim/commands/preflight_check.cpp). Only keys already validated.
void record_locations(const MapReader& top, Scenario& scenario) {
  auto record = [&](const Field& field) { scenario.locations[field.key] = field.where; };
  for (const char* section : {"topology", "workload"}) {
    const Field field = top.required(section);
    record(field);
    if (!field.node.IsMap()) continue;
    const MapReader reader = MapReader::open(field);
    for (const char* key : {"mesh", "slices", "microbatches", "batch", "batch_tokens", "operations", "requests", "strict_memory",
                            "model"})
      if (auto value = reader.optional(key)) record(*value);
  }
}

// Serving: the perturbations select chips of the scenario's slice (the first, of `servers:`
// slices), and each server holding one prices its steps on its own perturbed mesh
// (sim/commands/scenario_run.cpp). A host NIC (shared by the replicas on its host, and carrying
// disaggregated KV transfers priced once for every server pair) and random stragglers (drawn
// per run, for --draws of a step) are not modelled per server; nor are disaggregated prefill
// slices, whose chips the topology does not describe.
void check_serving_perturbations(const Field& perturbations, const Scenario& scenario) {
  if (scenario.serving().config.policy == BatchingPolicy::Disaggregated)
    fail(perturbations, "perturbations of serving apply to colocated servers (their steps replayed on each perturbed "
                        "server's chips); policy disaggregated prices its prefill slices and KV transfers once for "
                        "every server; expected another policy or no perturbations");
  for (const Field& entry : read_list(perturbations)) {
    const MapReader reader(entry, SchemaMap::Perturbation);
    for (const char* key : {"nics", "stragglers"})
      if (auto field = reader.optional(key))
        fail(*field, std::string("serving servers take slow chips and degraded links (chips:, links:); ") + key +
                         " are not modelled per server; expected chips: or links:");
  }
}

Scenario parse_document(const Field& root) {
  const MapReader top(root, SchemaMap::Document);
  Scenario scenario;
  scenario.path = root.where.file;
  // The version comes first: a newer file's keys should be reported as a version problem.
  const Field version = top.required("version");
  if (!version.node.IsScalar() || version.node.Scalar() != std::to_string(kSchemaVersion))
    fail(version, "unsupported schema version; expected " + std::to_string(kSchemaVersion));
  scenario.version = kSchemaVersion;
  top.reject_unknown();
  const auto name = top.optional("name");
  scenario.name = name ? read_string(*name) : default_name(root.where.file);
  if (auto description = top.optional("description")) scenario.description = read_string(*description);
  ChipSpec chip = parse_hardware(top.required("hardware"), scenario.warnings);
  // A calibration profile (docs/calibration.md) replaces the ideal machine's parameters; the
  // scenario's own hardware.overrides and simulation keys still win over it.
  if (auto profile = MapReader(top.required("hardware"), SchemaMap::Hardware).optional("profile"))
    apply_profile(*profile, root.where.file, top.required("hardware"), chip, scenario);
  else
    apply_default_profile(top.required("hardware"), chip, scenario);
  scenario.topology = parse_topology(top.required("topology"), chip);
  warn_unoffered_mesh(top.required("topology"), scenario);
  if (auto simulation = top.optional("simulation")) parse_simulation(*simulation, scenario);
  check_derived_links(top, scenario);
  parse_workload(top.required("workload"), scenario);
  if (auto perturbations = top.optional("perturbations")) {
    if (scenario.kind() == WorkloadKind::Serving) check_serving_perturbations(*perturbations, scenario);
    auto parsed = detail::parse_perturbations(*perturbations, scenario.topology, scenario.link_efficiency);
    scenario.topology.perturbations = std::move(parsed.fixed);
    scenario.fixed_perturbations = scenario.topology.perturbations.size();
    scenario.stragglers = std::move(parsed.stragglers);
    scenario = with_straggler_draw(std::move(scenario), 0);
  }
  if (auto expect = top.optional("expect")) scenario.expectations = parse_expectations(*expect, scenario);
  if (auto compare = top.optional("compare")) scenario.compare = parse_compare(*compare);
  record_locations(top, scenario);
  return scenario;
}

// Remembers where a document starts; the content itself is built by YAML::Load.
class DocumentProbe : public YAML::EventHandler {
 public:
  YAML::Mark start = YAML::Mark::null_mark();

  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// One document per file. yaml-cpp 0.7's LoadAll never returns on a stray flow token such as a
// leading ',': the parser yields an empty document for it forever without consuming it. So walk
// the documents ourselves and stop at the second, whichever of the two causes it is.
void check_single_document(const std::string& text, const std::string& path) {
  std::istringstream input(text);
  YAML::Parser parser(input);
  for (int documents = 0; documents < 2; ++documents) {
    DocumentProbe probe;
    if (!parser.HandleNextDocument(probe)) return;
    if (documents == 1)
      throw InputError(locate(path, probe.start), "", "",
                       "a second YAML document, or a stray token such as ',' outside any collection; "
                       "expected one scenario per file");
  }
}

// The 1-based line of the first tab in a line's indentation, up to line `last` (0: anywhere);
// 0 when none.
int first_indenting_tab(const std::string& text, int last) {
  int line = 1;
  bool indent = true;
  for (char c : text) {
    if (last > 0 && line > last) break;
    if (c == '\n') {
      ++line;
      indent = true;
    } else if (indent && c == '\t') {
      return line;
    } else if (c != ' ') {
      indent = false;
    }
  }
  return 0;
}

YAML::Node parse_yaml(const std::string& text, const std::string& path) {
  try {
    check_single_document(text, path);
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& error) {   // its own message is an unhelpful "bad file"
    throw InputError(locate(path, error.mark), "", "",
                     "malformed YAML: nested more than " + std::to_string(error.depth()) + " levels deep");
  } catch (const YAML::Exception& error) {   // ParserException and DeepRecursion carry a mark
    // YAML forbids tabs in indentation, and yaml-cpp's message does not say a tab is the cause
    // (issue 42): point at the tab itself.
    const SourceLocation where = locate(path, error.mark);
    if (const int tab = first_indenting_tab(text, where.line))
      throw InputError({path, tab, 0}, "", "",
                       "malformed YAML: this line is indented with a tab; YAML indents with spaces only, so "
                       "replace the tab with spaces (the parser said: " + error.msg + ")");
    throw InputError(where, "", "", "malformed YAML: " + error.msg);
  }
}

std::string read_file(const std::string& path) {
  return read_input_file(path, "scenario file", kMaxFileBytes);
}

}  // namespace

namespace {

// A list index in a dotted key ("operations.0.bytes"): digits only, or -1.
long list_index(const std::string& part) {
  if (part.empty() || part.size() > 9 || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return -1;
  return std::stol(part);
}

// A dotted --set key as error messages spell it: "workload.operations.0.bytes" is
// "workload.operations[0].bytes" (a top-level key is never an index).
std::string bracketed_indices(const std::string& key) {
  std::string out;
  for (size_t begin = 0;;) {
    const size_t dot = key.find('.', begin);
    const std::string part = key.substr(begin, dot - begin);
    if (begin > 0 && list_index(part) >= 0) out += "[" + part + "]";
    else out += (begin > 0 ? "." : "") + part;
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return out;
}

// Sets `key` (dotted, through mappings and, by index, lists; missing mappings are made) to
// `value` parsed as YAML.
void apply_override(YAML::Node& document, const ScenarioOverride& o, const std::string& path) {
  const SourceLocation where{path, 0, 0};
  YAML::Node value;
  try {
    value = YAML::Load(o.value);
  } catch (const YAML::Exception& error) {
    throw InputError(where, o.key, o.value, "--set: malformed YAML value: " + error.msg);
  }
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    const size_t dot = o.key.find('.', begin);
    parts.push_back(o.key.substr(begin, dot - begin));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  if (std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }))
    throw InputError(where, o.key, o.value, "--set: expected a dotted key such as workload.batch");
  // yaml-cpp's operator[] on a temporary yields views into the same document.
  std::vector<YAML::Node> chain = {document};
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (chain.back().IsSequence()) {
      // A list element by its index, which must exist (--set never grows a list).
      const long index = list_index(parts[i]);
      if (index < 0 || index >= static_cast<long>(chain.back().size()))
        throw InputError(where, o.key, o.value,
                         "--set: '" + parts[i] + "' is not an index of a list of " + std::to_string(chain.back().size()) +
                             " (expected 0.." + std::to_string(static_cast<long>(chain.back().size()) - 1) + ")");
      chain.push_back(chain.back()[static_cast<size_t>(index)]);
      continue;
    }
    YAML::Node next = chain.back()[parts[i]];
    if (next.IsDefined() && !next.IsNull() && !next.IsMap() && !next.IsSequence())
      throw InputError(where, o.key, o.value, "--set: '" + parts[i] + "' is not a mapping or a list in the scenario");
    if (!next.IsDefined() || next.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      next = chain.back()[parts[i]];
    }
    chain.push_back(next);
  }
  if (chain.back().IsSequence()) {
    const long index = list_index(parts.back());
    if (index < 0 || index >= static_cast<long>(chain.back().size()))
      throw InputError(where, o.key, o.value, "--set: '" + parts.back() + "' is not an index of a list of " +
                                                  std::to_string(chain.back().size()));
    chain.back()[static_cast<size_t>(index)] = value;
    return;
  }
  // `null` removes the key, so a sweep can drop a setting another point's value rules out.
  if (value.IsNull()) chain.back().remove(parts.back());
  else chain.back()[parts.back()] = value;
}

}  // namespace

namespace {

// The document as a run sees it: parsed, with the --set overrides applied.
YAML::Node overridden_document(const std::string& text, const std::string& path,
                               const std::vector<ScenarioOverride>& overrides) {
  YAML::Node document = parse_yaml(text, path);
  for (const auto& o : overrides) {
    if (document.IsMap()) apply_override(document, o, path);
  }
  return document;
}

}  // namespace

Scenario load_scenario_text(const std::string& text, const std::string& path,
                            const std::vector<ScenarioOverride>& overrides) {
  require_utf8(text, path);
  for (const auto& o : overrides) {
    require_utf8(o.key + "=" + o.value, "--set " + o.key);
  }
  YAML::Node document = overridden_document(text, path, overrides);
  if (document.IsNull())
    throw InputError(SourceLocation{path, 0, 0}, "", "",
                     "empty scenario file; expected a mapping starting with version: 1");
  try {
    Scenario scenario = parse_document(Field{document, "", locate(path, document.Mark())});
    // Keys a --set replaced (or holds): their marks point into the --set text, so a later error
    // at one (the preflight's, a plan's) names the --set, as a load error does below.
    for (const auto& o : overrides) {
      for (auto& [key, where] : scenario.locations)
        if (key == o.key || key.starts_with(o.key + ".")) where = {path + " (--set " + o.key + "=" + o.value + ")", 0, 0};
    }
    return scenario;
  } catch (const InputError& error) {
    // An overridden value's marks point into the --set text, not the file: name the --set.
    // Errors spell a list index as [0], a --set key as .0.
    for (const auto& o : overrides) {
      const std::string key = bracketed_indices(o.key);
      if (error.key() == key || error.key().starts_with(key + ".") || error.key().starts_with(key + "["))
        throw InputError({path + " (--set " + o.key + "=" + o.value + ")", 0, 0}, error.key(), error.value(),
                         error.expected());
    }
    throw;
  } catch (const YAML::Exception& error) {   // not expected; keep the promise never to leak one
    throw InputError(locate(path, error.mark), "", "", std::string("invalid YAML: ") + error.what());
  }
}

Scenario load_scenario(const std::string& path, const std::vector<ScenarioOverride>& overrides) {
  return load_scenario_text(read_file(path), path, overrides);
}

ResolvedScenario resolve_scenario(const std::string& path, const std::vector<ScenarioOverride>& overrides) {
  const YAML::Node document = overridden_document(read_file(path), path, overrides);
  ResolvedScenario out;
  YAML::Emitter emitter;
  emitter << document;
  out.text = emitter.c_str();
  for (auto& file : named_files(document, path)) out.input_files.push_back(std::move(file.path));
  return out;
}

}  // namespace podsim
