// The `perturbations:` list: chips that compute slower, ICI links and host NICs with less
// bandwidth or more latency. Each entry names what it applies to (chips, links or nics) and
// its effect; the schema is in docs/scenario-schema.md, the semantics in
// topology/perturbation.hpp.
#include "sim/scenario/perturbation_loader.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <string>
#include <unordered_set>

#include "sim/scenario/link_bounds.hpp"
#include "topology/topology.hpp"
#include "sim/scenario/units.hpp"

namespace podsim::detail {
namespace {

using namespace yaml_fields;   // the field readers every loader uses

// A position on something of `size` positions (an axis, the slices, the hosts of a slice):
// 2, "0-3" or [0, 3], both ends included.
PositionRange read_range(const Field& field, int size, const std::string& what) {
  const std::string last = std::to_string(size - 1);
  const std::string expected = "expected a position from 0 to " + last + " on " + what + ", or a range of them such as \"0-" +
                               last + "\" or [0, " + last + "] (both ends included)";
  std::optional<int> first, second;
  if (field.node.IsSequence()) {
    const auto items = read_list(field);
    if (items.size() != 2 || !items[0].node.IsScalar() || !items[1].node.IsScalar()) fail(field, expected);
    first = parse_whole_number<int>(items[0].node.Scalar());
    second = parse_whole_number<int>(items[1].node.Scalar());
  } else if (field.node.IsScalar()) {
    const std::string& text = field.node.Scalar();
    const size_t dash = text.find('-', 1);   // not a leading minus sign
    if (dash == std::string::npos) {
      first = second = parse_whole_number<int>(text);
    } else {
      first = parse_whole_number<int>(std::string_view(text).substr(0, dash));
      second = parse_whole_number<int>(std::string_view(text).substr(dash + 1));
    }
  }
  if (!first || !second || *first < 0 || *second >= size || *first > *second) fail(field, expected);
  return {*first, *second};
}

PositionRange everything(int size) { return {0, size - 1}; }

ChipBox whole_mesh(const TopologySpec& topology, PositionRange slices) {
  ChipBox box;
  for (const auto& axis : topology.axes) box.axes.push_back(everything(axis.size));
  box.slices = slices;
  return box;
}

// [x, y, z]: one chip, a position per mesh axis.
ChipBox read_chip(const Field& field, const TopologySpec& topology, PositionRange slices) {
  std::string example = "[";
  for (size_t a = 0; a < topology.axes.size(); ++a) example += (a ? ", " : "") + std::to_string(topology.axes[a].size - 1);
  example += "]";
  if (!field.node.IsSequence() || field.node.size() != topology.axes.size()) {
    fail(field, "expected a chip's coordinates, one per mesh axis (" + axis_names(topology.axes) + "), e.g. " + example);
  }
  ChipBox box;
  box.slices = slices;
  const auto items = read_list(field);
  for (size_t a = 0; a < items.size(); ++a) {
    const auto& axis = topology.axes[a];
    const std::optional<int> p = items[a].node.IsScalar() ? parse_whole_number<int>(items[a].node.Scalar()) : std::nullopt;
    if (!p || *p < 0 || *p >= axis.size) {
      fail(items[a], "expected a position on axis " + axis.name + " from 0 to " + std::to_string(axis.size - 1));
    }
    box.axes.push_back({*p, *p});
  }
  return box;
}

// [[x, y, z], ...]: a list of chips.
std::vector<ChipBox> read_chip_list(const Field& field, const TopologySpec& topology, PositionRange slices) {
  const auto items = read_list(field);
  if (items.empty()) fail(field, "expected at least one chip, e.g. [[0, 0, 0], [1, 0, 0]]");
  std::vector<ChipBox> boxes;
  for (const Field& item : items) boxes.push_back(read_chip(item, topology, slices));
  return boxes;
}

// Hosts per axis of the mesh: blocks of host_shape chips, clamped to the axis (as Topology does).
struct HostGrid {
  std::vector<int> extent, blocks;
  int per_slice = 1;
};

HostGrid host_grid(const TopologySpec& topology) {
  HostGrid grid;
  for (size_t a = 0; a < topology.axes.size(); ++a) {
    const int size = topology.axes[a].size;
    const int want = a < topology.chip.host_shape.size() ? topology.chip.host_shape[a] : 1;
    grid.extent.push_back(std::max(1, std::min(want, size)));
    grid.blocks.push_back((size + grid.extent.back() - 1) / grid.extent.back());
    grid.per_slice *= grid.blocks.back();
  }
  return grid;
}

// The chips of hosts `hosts` (indices within a slice, first axis fastest) in `slices`: a box each.
std::vector<ChipBox> host_boxes(const TopologySpec& topology, PositionRange hosts, PositionRange slices) {
  const HostGrid grid = host_grid(topology);
  std::vector<ChipBox> boxes;
  for (int h = hosts.first; h <= hosts.last; ++h) {
    ChipBox box;
    box.slices = slices;
    int rest = h;
    for (size_t a = 0; a < topology.axes.size(); ++a) {
      const int block = rest % grid.blocks[a];
      rest /= grid.blocks[a];
      box.axes.push_back({block * grid.extent[a], std::min(topology.axes[a].size, (block + 1) * grid.extent[a]) - 1});
    }
    boxes.push_back(box);
  }
  return boxes;
}

// `host:` an index or range among a slice's hosts.
PositionRange read_hosts(const Field& field, const TopologySpec& topology) {
  const int per_slice = host_grid(topology).per_slice;
  return read_range(field, per_slice, "the " + std::to_string(per_slice) + " hosts of a slice (first axis fastest)");
}

// A chip selection given as a mapping: `chip` or `chips` (coordinates), or a range per mesh
// axis (a missing axis: all of it); `slice` narrows either to some slices (default: all).
std::vector<ChipBox> read_selection(const MapReader& reader, const TopologySpec& topology) {
  PositionRange slices = everything(topology.slices);
  if (auto slice = reader.optional("slice")) slices = read_range(*slice, topology.slices, "the slices");
  const auto chip = reader.optional("chip");
  const auto chips = reader.optional("chips");
  const auto host = reader.optional("host");
  if (chip && chips) fail(*chips, "give either chip (one chip) or chips (a list), not both");
  std::optional<Field> ranges;
  for (const auto& entry : reader.entries()) {
    if (axis_index(topology.axes, entry.name) >= 0 && !ranges) ranges = entry.value;
  }
  if ((chip || chips) && ranges) {
    fail(*ranges, "give either coordinates (chip or chips) or ranges per axis, not both");
  }
  if (host && (chip || chips || ranges))
    fail(*host, "give either host (every chip of some hosts) or coordinates or ranges, not both");
  if (host) return host_boxes(topology, read_hosts(*host, topology), slices);
  if (chip) return {read_chip(*chip, topology, slices)};
  if (chips) return read_chip_list(*chips, topology, slices);
  ChipBox box = whole_mesh(topology, slices);
  for (size_t a = 0; a < topology.axes.size(); ++a) {
    const auto& axis = topology.axes[a];
    if (auto range = reader.optional(axis.name)) box.axes[a] = read_range(*range, axis.size, "axis " + axis.name);
  }
  return {box};
}

// Selections take a range per mesh axis beside their fixed keys (SchemaMap::ChipSelection).
std::vector<std::string> axis_name_list(const TopologySpec& topology) {
  std::vector<std::string> names;
  for (const auto& axis : topology.axes) names.push_back(axis.name);
  return names;
}

// `chips:` [x, y, z], [[x, y, z], ...] or {X: "0-3", Y: 2, slice: 0}.
std::vector<ChipBox> read_chips(const Field& field, const TopologySpec& topology) {
  if (field.node.IsSequence()) {
    const bool list = field.node.size() > 0 && field.node[0].IsSequence();
    if (list) return read_chip_list(field, topology, everything(topology.slices));
    return {read_chip(field, topology, everything(topology.slices))};
  }
  if (!field.node.IsMap()) {
    fail(field, "expected a chip [x, y, z], a list of chips [[x, y, z], ...] or ranges per axis such as {" +
                    topology.axes[0].name + ": \"0-1\"}");
  }
  const MapReader reader(field, SchemaMap::ChipSelection, axis_name_list(topology));
  reader.reject_unknown();
  return read_selection(reader, topology);
}

// +1 / -1 / "+" / "-" / "+X" / "-X" / "both"; sets `axis` when the direction names one.
int read_direction(const Field& field, const TopologySpec& topology, std::optional<int>& axis) {
  const std::string expected = "expected +1, -1, \"+\", \"-\", a sign and an axis such as \"+" + topology.axes[0].name +
                               "\", or both";
  if (!field.node.IsScalar()) fail(field, expected);
  const std::string text = field.node.Scalar();
  if (text == "both") return 0;
  if (text == "1" || text == "+1" || text == "+") return +1;
  if (text == "-1" || text == "-") return -1;
  if (text.size() < 2 || (text[0] != '+' && text[0] != '-')) fail(field, expected);
  const int named = axis_index(topology.axes, text.substr(1));
  if (named < 0) fail(field, "'" + text.substr(1) + "' is not a mesh axis; the mesh has " + axis_names(topology.axes));
  axis = named;
  return text[0] == '+' ? +1 : -1;
}

// `links:` a chip selection (default: every chip) and the axis and direction of the links
// leaving those chips.
void read_links(const Field& field, const TopologySpec& topology, Perturbation& p) {
  const MapReader reader(field, SchemaMap::LinkSelection, axis_name_list(topology));
  reader.reject_unknown();
  std::optional<int> axis;
  if (auto a = reader.optional("axis")) {
    const int index = axis_index(topology.axes, read_string(*a));
    if (index < 0) fail(*a, "not a mesh axis; the mesh has " + axis_names(topology.axes));
    axis = index;
  }
  if (auto d = reader.optional("direction")) {
    std::optional<int> named;
    p.direction = read_direction(*d, topology, named);
    if (named && axis && *named != *axis) {
      fail(*d, "names axis " + topology.axes[*named].name + " but axis is " + topology.axes[*axis].name +
                   "; expected one axis");
    }
    if (named) axis = named;
  }
  if (!axis) {
    throw InputError(field.where, yaml_fields::child_key(field.key, "axis"), "",
                     "missing the links' axis; expected axis: (one of " + axis_names(topology.axes) +
                         ") or a direction naming one, such as direction: \"+" + topology.axes[0].name + "\"");
  }
  p.axis = *axis;
  const MeshAxis& mesh_axis = topology.axes[p.axis];
  if (mesh_axis.size < 2) {
    fail(reader.optional("axis").value_or(*reader.optional("direction")),
         "axis " + mesh_axis.name + " has a single chip, so it has no links; expected an axis of 2 or more chips");
  }
  p.chips = read_selection(reader, topology);
  // On a line, the chips at its end have no link beyond it: a selection of only those has none.
  if (!mesh_axis.wraparound) {
    const int end = p.direction < 0 ? 0 : mesh_axis.size - 1;
    const bool none = std::all_of(p.chips.begin(), p.chips.end(), [&](const ChipBox& box) {
      return box.axes[p.axis].first == end && box.axes[p.axis].last == end;
    });
    if (none) {
      fail(field, "selects no link: the chips at position " + std::to_string(end) + " of " + mesh_axis.name +
                      " have no link toward " + (p.direction < 0 ? "-" : "+") + mesh_axis.name + " (" + mesh_axis.name +
                      " has no wraparound); expected chips with a neighbour that way");
    }
  }
}

// `nics:` the NICs of some hosts: by index within a slice (`host`), or the host holding a chip
// (`chip`); `slice` narrows them to some slices. Default: every host.
void read_nics(const Field& field, const TopologySpec& topology, Perturbation& p) {
  const MapReader reader(field, SchemaMap::NicSelection);
  reader.reject_unknown();
  if (topology.slices < 2) {
    fail(field, "topology.slices is 1, and a host's NIC carries only traffic between slices; expected slices > 1");
  }
  PositionRange slices = everything(topology.slices);
  if (auto slice = reader.optional("slice")) slices = read_range(*slice, topology.slices, "the slices");
  const auto host = reader.optional("host");
  const auto chip = reader.optional("chip");
  if (host && chip) fail(*chip, "give either host (an index within the slice) or chip (the host holding it), not both");
  if (chip) {
    p.chips = {read_chip(*chip, topology, slices)};
    return;
  }
  p.chips = host_boxes(topology, host ? read_hosts(*host, topology) : everything(host_grid(topology).per_slice), slices);
}

double read_factor(const Field& field, const std::string& what) {
  const double value = read_real(field);
  if (!(value > 0)) fail(field, "expected a factor > 0 (" + what + ")");
  return value;
}

// A compute_slowdown factor, written or a straggler draw's: from 0.001 to 1e6. "30%" is a
// percentage slower, which people write (issue 42): the message gives the factor it means.
double read_slowdown(const Field& field) {
  const std::string text = field.node.IsScalar() ? field.node.Scalar() : "";
  if (!text.empty() && text.back() == '%') {
    double percent = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size() - 1, percent);
    if (ec == std::errc() && end == text.data() + text.size() - 1 && percent > -100) {
      char factor[32];
      std::snprintf(factor, sizeof factor, "%g", 1 + percent / 100);
      fail(field, "a percentage, not a factor: compute time is multiplied by compute_slowdown, so " + text +
                      " slower is compute_slowdown: " + factor + "; expected a factor, e.g. " + factor);
    }
  }
  const double value = read_factor(field, "compute time is multiplied by it, e.g. 1.5");
  if (value < 1e-3 || value > 1e6) fail(field, "out of range; expected a factor from 0.001 to 1e6 (compute time is multiplied by it)");
  return value;
}

// `stragglers:` chips drawn at random: each slow with `probability` by a `compute_slowdown`
// (one factor, or a range [low, high] drawn uniformly), or every chip drawing its factor from
// a `histogram` of [factor, weight] pairs; `seed` picks the draw.
StragglerSpec read_stragglers(const Field& field, const std::string& name) {
  const MapReader reader(field, SchemaMap::Stragglers);
  reader.reject_unknown();
  StragglerSpec spec;
  spec.name = name;
  const auto probability = reader.optional("probability");
  const auto slowdown = reader.optional("compute_slowdown");
  const auto histogram = reader.optional("histogram");
  if (histogram && (probability || slowdown))
    fail(*histogram, "a histogram gives every chip its factor; expected either histogram or probability and "
                     "compute_slowdown, not both");
  if (histogram) {
    const auto bins = read_list(*histogram);
    if (bins.empty()) fail(*histogram, "expected [factor, weight] pairs, e.g. [[1.0, 990], [1.3, 10]]");
    double total = 0;
    for (const Field& bin : bins) {
      const auto pair = bin.node.IsSequence() ? read_list(bin) : std::vector<Field>{};
      if (pair.size() != 2) fail(bin, "expected a [factor, weight] pair, e.g. [1.3, 10]");
      const double factor = read_slowdown(pair[0]);
      const double weight = read_real(pair[1]);
      if (!(weight >= 0 && weight <= 1e15)) fail(pair[1], "expected a weight from 0 to 1e15 (a count of chips, or a share)");
      spec.histogram.push_back({factor, weight});
      total += weight;
    }
    if (!(total > 0)) fail(*histogram, "every weight is 0; expected at least one positive weight");
  } else {
    if (!probability || !slowdown)
      fail(field, "expected probability (each chip's chance of being slow, e.g. 0.001) and compute_slowdown (a "
                  "factor, or a range such as [1.1, 1.5]), or a histogram of [factor, weight] pairs");
    spec.probability = read_real(*probability);
    if (!(spec.probability >= 0 && spec.probability <= 1)) fail(*probability, "expected a probability from 0 to 1");
    if (slowdown->node.IsSequence()) {
      const auto ends = read_list(*slowdown);
      if (ends.size() != 2) fail(*slowdown, "expected one factor or a range [low, high], e.g. [1.1, 1.5]");
      spec.factor_low = read_slowdown(ends[0]);
      spec.factor_high = read_slowdown(ends[1]);
      if (spec.factor_high < spec.factor_low) fail(*slowdown, "the range's high end is below its low end; expected [low, high]");
    } else {
      spec.factor_low = spec.factor_high = read_slowdown(*slowdown);
    }
  }
  if (auto seed = reader.optional("seed")) spec.seed = static_cast<uint64_t>(read_integer(*seed, 0, INT64_MAX));
  return spec;
}

// One entry: a perturbation, or (returned in *stragglers) a straggler draw's spec.
Perturbation read_perturbation(const Field& entry, int index, const TopologySpec& topology, double link_efficiency,
                               std::optional<StragglerSpec>* stragglers) {
  const MapReader reader(entry, SchemaMap::Perturbation);
  reader.reject_unknown();
  Perturbation p;
  const auto name = reader.optional("name");
  p.name = name ? read_name(*name, "a perturbation name") : "perturbation" + std::to_string(index);
  std::optional<MapReader::Entry> target;
  for (const auto& e : reader.entries()) {
    if (e.name != "chips" && e.name != "links" && e.name != "nics" && e.name != "stragglers") continue;
    if (target)
      MapReader::fail_key(e, "a perturbation applies to one of chips, links, nics or stragglers; " + target->name +
                                 " is given already");
    target = e;
  }
  if (!target) fail(entry, "expected one of chips, links, nics or stragglers: what the perturbation applies to");
  if (target->name == "stragglers") {
    for (const auto& e : reader.entries())
      if (e.name == "compute_slowdown" || e.name == "bandwidth_scale" || e.name == "extra_latency")
        MapReader::fail_key(e, "stragglers draw their own compute_slowdown; expected it inside the stragglers mapping");
    *stragglers = read_stragglers(target->value, p.name);
    return p;
  }
  if (target->name == "chips") {
    p.kind = PerturbationKind::SlowChips;
    p.chips = read_chips(target->value, topology);
  } else if (target->name == "links") {
    p.kind = PerturbationKind::Links;
    read_links(target->value, topology, p);
  } else {
    p.kind = PerturbationKind::Nics;
    read_nics(target->value, topology, p);
  }
  // Effects, each for what it applies to.
  bool effect = false;
  for (const auto& e : reader.entries()) {
    const bool for_chips = e.name == "compute_slowdown";
    const bool for_links = e.name == "bandwidth_scale" || e.name == "extra_latency";
    if (!for_chips && !for_links) continue;
    if (for_chips != (p.kind == PerturbationKind::SlowChips)) {
      MapReader::fail_key(e, e.name + " does not apply to " + target->name + "; expected " +
                                 (p.kind == PerturbationKind::SlowChips ? "compute_slowdown" : "bandwidth_scale or extra_latency"));
    }
    effect = true;
    if (e.name == "compute_slowdown") p.compute_slowdown = read_slowdown(e.value);
    if (e.name == "bandwidth_scale") {
      // A failed NIC (0) would cut its host off: its DCN transfers have no other way out. A
      // failed ICI link is routed round (Topology::hop_route; checked once the entries are read).
      if (read_real(e.value) == 0) {
        if (p.kind == PerturbationKind::Nics)
          fail(e.value, "a failed NIC (bandwidth 0) is not simulated: its host's DCN transfers have no other way "
                        "out; expected a scale > 0, e.g. 0.01 for a NIC nearly gone");
        p.bandwidth_scale = 0;
        continue;
      }
      p.bandwidth_scale = read_factor(e.value, "bandwidth is multiplied by it, e.g. 0.5");
      // The link SimGrid gets: the chip's ICI link (or host NIC) at the simulation's efficiency, scaled.
      const double base = p.kind == PerturbationKind::Nics ? topology.chip.dcn_bandwidth_per_host_Bps
                                                           : topology.chip.ici_bandwidth_Bps;
      const double scaled = base * link_efficiency * p.bandwidth_scale;
      if (!(scaled >= kMinLinkBandwidth_Bps && scaled <= kMaxLinkBandwidth_Bps))
        fail(e.value, "makes the link's bandwidth " + link_bandwidth_text(scaled) + " (" + human_bandwidth(base) +
                          " x link efficiency " + link_bandwidth_text(link_efficiency, "") +
                          " x this); expected a scale that keeps it between 1 kB/s and 1 EB/s");
    }
    if (e.name == "extra_latency") {
      p.extra_latency_s = read_quantity(e.value, parse_time_s);
      if (!(p.extra_latency_s >= 0 && p.extra_latency_s <= kMaxLinkLatency_s))
        fail(e.value, "out of range; expected an extra latency from 0 s to 1 s, e.g. \"2 us\"");
    }
  }
  if (!effect) {
    fail(entry, p.kind == PerturbationKind::SlowChips
                    ? "expected an effect: compute_slowdown (e.g. 1.5)"
                    : "expected an effect: bandwidth_scale (e.g. 0.5) and/or extra_latency (e.g. \"2 us\")");
  }
  return p;
}

}  // namespace

namespace {

// Every failed ICI link direction of `spec` has a detour (Topology::hop_route); throws its
// reason otherwise.
void check_detours(const TopologySpec& spec) {
  const Topology topo(spec);
  for (size_t l = 0; l < topo.links().size(); ++l) {
    const LinkInfo& link = topo.links()[l];
    if (link.kind != LinkKind::Ici) continue;
    if (topo.failed({static_cast<int>(l), true})) (void)topo.hop_route(link.a, link.axis, +1);
    if (topo.failed({static_cast<int>(l), false})) (void)topo.hop_route(link.b, link.axis, -1);
  }
}

}  // namespace

ParsedPerturbations parse_perturbations(const Field& field, const TopologySpec& topology, double link_efficiency) {
  ParsedPerturbations out;
  std::unordered_set<std::string> names;   // a set: 30,000 entries took 6 s to compare pairwise
  int index = 0;
  for (const Field& entry : read_list(field)) {
    std::optional<StragglerSpec> stragglers;
    Perturbation p = read_perturbation(entry, index++, topology, link_efficiency, &stragglers);
    if (!names.insert(p.name).second)
      fail(MapReader::open(entry).optional("name").value_or(entry), "perturbation name used twice");
    const bool fails = p.kind == PerturbationKind::Links && p.bandwidth_scale == 0;
    if (stragglers) out.stragglers.push_back(std::move(*stragglers));
    else out.fixed.push_back(std::move(p));
    if (!fails) continue;
    TopologySpec with = topology;
    with.perturbations = out.fixed;
    try {
      check_detours(with);
    } catch (const std::invalid_argument& e) {
      fail(*MapReader::open(entry).optional("bandwidth_scale"), std::string(e.what()) +
                                                                    "; expected a scale > 0 for this link, or live links "
                                                                    "beside it on another axis");
    }
  }
  return out;
}

}  // namespace podsim::detail
