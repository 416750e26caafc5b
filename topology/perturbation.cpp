#include "topology/perturbation.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include "topology/topology.hpp"

namespace podsim {
namespace {

[[noreturn]] void fail(const Perturbation& p, const std::string& what) {
  throw std::invalid_argument("Topology: perturbation '" + p.name + "': " + what);
}

void check_range(const Perturbation& p, const PositionRange& r, int size, const std::string& what) {
  if (r.first < 0 || r.last >= size || r.first > r.last) {
    fail(p, what + " range " + std::to_string(r.first) + "-" + std::to_string(r.last) + " is not within 0-" +
                std::to_string(size - 1));
  }
}

void check_factor(const Perturbation& p, double value, const char* name) {
  if (!(value > 0) || !std::isfinite(value)) fail(p, std::string(name) + " must be a positive finite number");
}

bool in_any_box(const Topology& topo, const std::vector<ChipBox>& boxes, ChipId chip) {
  const std::vector<int> coords = topo.coords(chip);
  const int slice = topo.slice_of(chip);
  for (const auto& box : boxes) {
    if (!box.slices.contains(slice)) continue;
    bool inside = true;
    for (size_t a = 0; a < coords.size() && inside; ++a) inside = box.axes[a].contains(coords[a]);
    if (inside) return true;
  }
  return false;
}

// The chip one position on along `axis` (wrapping round, whether or not the axis wraps), or in
// the next slice for kSliceAxis: the translation the symmetry reduction needs invariance under.
ChipId shifted(const Topology& topo, ChipId chip, int axis) {
  std::vector<int> coords = topo.coords(chip);
  int slice = topo.slice_of(chip);
  if (axis == Topology::kSliceAxis) slice = (slice + 1) % topo.slice_count();
  else coords[axis] = (coords[axis] + 1) % topo.axis_size(axis);
  return topo.chip_at(slice, coords);
}

// What perturbation p does at each chip, as a small integer: selected or not (chips, NICs),
// or which of the chip's two outgoing links along p.axis it degrades (links).
std::vector<int> signature(const Topology& topo, const Perturbation& p) {
  std::vector<int> sig(topo.chip_count(), 0);
  switch (p.kind) {
    case PerturbationKind::SlowChips: {
      const auto chips = selected_chips(topo, p);
      for (ChipId c = 0; c < topo.chip_count(); ++c) sig[c] = chips[c];
      break;
    }
    case PerturbationKind::Nics: {
      const auto hosts = selected_hosts(topo, p);
      for (ChipId c = 0; c < topo.chip_count(); ++c) sig[c] = hosts[topo.host_of(c)];
      break;
    }
    case PerturbationKind::Links: {
      const auto links = selected_directed_links(topo, p);
      const std::set<std::pair<int, bool>> chosen(links.begin(), links.end());
      for (ChipId c = 0; c < topo.chip_count(); ++c) {
        for (int bit = 0; bit < 2; ++bit) {
          const auto out = topo.link_toward(c, p.axis, bit == 0 ? +1 : -1);
          if (out && chosen.count({out->link, out->forward})) sig[c] |= 1 << bit;
        }
      }
      break;
    }
  }
  return sig;
}

}  // namespace

const char* to_string(PerturbationKind kind) {
  switch (kind) {
    case PerturbationKind::SlowChips: return "slow_chips";
    case PerturbationKind::Links: return "links";
    case PerturbationKind::Nics: return "nics";
  }
  return "?";
}

void check_perturbations(const TopologySpec& spec) {
  const int axes = static_cast<int>(spec.axes.size());
  for (const auto& p : spec.perturbations) {
    if (p.chips.empty()) fail(p, "selects no chips");
    for (const auto& box : p.chips) {
      if (static_cast<int>(box.axes.size()) != axes) {
        fail(p, "a selection has " + std::to_string(box.axes.size()) + " coordinates for " + std::to_string(axes) +
                    " mesh axes");
      }
      for (int a = 0; a < axes; ++a) check_range(p, box.axes[a], spec.axes[a].size, "axis " + spec.axes[a].name);
      check_range(p, box.slices, spec.slices, "slice");
    }
    check_factor(p, p.compute_slowdown, "compute_slowdown");
    // 0 is a failed link, routed round (Topology::hop_route); a failed NIC has no way round.
    if (!(p.kind == PerturbationKind::Links && p.bandwidth_scale == 0)) check_factor(p, p.bandwidth_scale, "bandwidth_scale");
    if (!(p.extra_latency_s >= 0) || !std::isfinite(p.extra_latency_s)) fail(p, "extra_latency_s must be >= 0 and finite");
    if (p.kind == PerturbationKind::Links) {
      if (p.axis < 0 || p.axis >= axes) fail(p, "axis " + std::to_string(p.axis) + " is not a mesh axis");
      if (p.direction < -1 || p.direction > 1) fail(p, "direction must be -1, 0 (both ways) or +1");
    }
  }
}

std::vector<char> selected_chips(const Topology& topo, const Perturbation& p) {
  std::vector<char> chips(topo.chip_count(), 0);
  for (ChipId c = 0; c < topo.chip_count(); ++c) chips[c] = in_any_box(topo, p.chips, c);
  return chips;
}

std::vector<char> selected_hosts(const Topology& topo, const Perturbation& p) {
  std::vector<char> hosts(topo.host_count(), 0);
  const auto chips = selected_chips(topo, p);
  for (ChipId c = 0; c < topo.chip_count(); ++c) {
    if (chips[c]) hosts[topo.host_of(c)] = 1;
  }
  return hosts;
}

std::vector<std::pair<int, bool>> selected_directed_links(const Topology& topo, const Perturbation& p) {
  std::vector<std::pair<int, bool>> links;
  const auto chips = selected_chips(topo, p);
  for (ChipId c = 0; c < topo.chip_count(); ++c) {
    if (!chips[c]) continue;
    const auto link = topo.link_toward(c, p.axis, p.direction == 0 ? +1 : p.direction);
    if (!link) continue;   // the end of a line has no link that way
    links.push_back({link->link, link->forward});
    if (p.direction == 0) links.push_back({link->link, !link->forward});
  }
  return links;
}

std::vector<Perturbation> restrict_perturbations(const std::vector<Perturbation>& perturbations,
                                                 const std::vector<int>& sizes, int slices) {
  std::vector<Perturbation> out;
  for (const auto& p : perturbations) {
    Perturbation q = p;
    q.chips.clear();
    for (auto box : p.chips) {
      box.slices.last = std::min(box.slices.last, slices - 1);
      bool empty = box.slices.first > box.slices.last;
      for (size_t a = 0; a < box.axes.size() && a < sizes.size(); ++a) {
        box.axes[a].last = std::min(box.axes[a].last, sizes[a] - 1);
        empty = empty || box.axes[a].first > box.axes[a].last;
      }
      if (!empty) q.chips.push_back(box);
    }
    if (!q.chips.empty()) out.push_back(std::move(q));
  }
  return out;
}

std::vector<PerturbationDifference> perturbation_differences(const Topology& topo) {
  std::vector<PerturbationDifference> out;
  std::vector<int> axes;
  for (int a = 0; a < topo.axis_count(); ++a) {
    if (topo.axis_size(a) > 1) axes.push_back(a);
  }
  if (topo.slice_count() > 1) axes.push_back(Topology::kSliceAxis);
  for (const auto& p : topo.spec().perturbations) {
    const std::vector<int> sig = signature(topo, p);
    for (int a : axes) {
      // A line's own links: its end chip has none that way, and nothing but a collective along
      // the line (which keeps a line whole anyway) or a send (likewise) ever uses them.
      if (p.kind == PerturbationKind::Links && p.axis == a && !topo.wraps(a)) continue;
      bool invariant = true;
      for (ChipId c = 0; c < topo.chip_count() && invariant; ++c) invariant = sig[c] == sig[shifted(topo, c, a)];
      if (!invariant) out.push_back({a, p.name, p.kind});
    }
  }
  return out;
}

int perturbation_target_count(const Topology& topo, size_t index) {
  const Perturbation& p = topo.spec().perturbations.at(index);
  switch (p.kind) {
    case PerturbationKind::SlowChips: {
      const auto chips = selected_chips(topo, p);
      return static_cast<int>(std::count(chips.begin(), chips.end(), 1));
    }
    case PerturbationKind::Links: return static_cast<int>(selected_directed_links(topo, p).size());
    case PerturbationKind::Nics: {
      const auto hosts = selected_hosts(topo, p);
      return static_cast<int>(std::count(hosts.begin(), hosts.end(), 1));
    }
  }
  return 0;
}

}  // namespace podsim
