#pragma once
// Chips and links that differ from the rest of the pod: chips whose compute is slower, ICI
// links with less bandwidth or more latency (per direction), host NICs with less bandwidth or
// more latency. A TopologySpec carries them; Topology applies them to its link data and its
// per-chip compute slowdown, and sim/engine builds and replays what Topology says.
//
// Selections are boxes of coordinates, so a symmetry-reduced copy of the pod keeps exactly the
// part of each selection it simulates (restrict_perturbations), and the reduction can test
// whether a selection is invariant under a translation (perturbation_differences).
//
// Where several perturbations select the same chip or link, their effects compose: compute
// slowdowns and bandwidth scales multiply, extra latencies add.
#include <string>
#include <utility>
#include <vector>

namespace podsim {

struct TopologySpec;
class Topology;

// Positions first..last, inclusive.
struct PositionRange {
  int first = 0;
  int last = 0;
  bool contains(int p) const { return p >= first && p <= last; }
  bool operator==(const PositionRange&) const = default;
};

// A box of chips: a range of positions on every mesh axis and a range of slices.
struct ChipBox {
  std::vector<PositionRange> axes;   // one per mesh axis
  PositionRange slices;
  bool operator==(const ChipBox&) const = default;
};

enum class PerturbationKind {
  SlowChips,   // `chips` compute slower
  Links,       // ICI links leaving `chips` along `axis`
  Nics,        // the NICs of the hosts holding any chip of `chips`
};

struct Perturbation {
  std::string name;              // names it in messages and in summary.json
  PerturbationKind kind = PerturbationKind::SlowChips;
  std::vector<ChipBox> chips;    // the union of these boxes
  // SlowChips: every compute op on the chips takes compute_slowdown times as long.
  double compute_slowdown = 1.0;
  // Links: the link from each chip to its neighbour in `direction` along `axis`, traversed in
  // that direction only (+1 or -1); direction 0 means the link to the +1 neighbour, both ways.
  int axis = -1;
  int direction = 0;
  // Links and Nics: each selected direction's bandwidth is multiplied by bandwidth_scale, and
  // every message crossing it takes extra_latency_s longer (docs/modelling.md: how this combines with
  // the hop model).
  double bandwidth_scale = 1.0;
  double extra_latency_s = 0.0;
  bool operator==(const Perturbation&) const = default;
};

const char* to_string(PerturbationKind kind);

// Throws std::invalid_argument naming the perturbation when a selection leaves the mesh, a
// factor is not positive and finite, or a link's axis or direction does not exist.
void check_perturbations(const TopologySpec& spec);

// What perturbation p selects on `topo`: a flag per chip, a flag per host, and the directed
// links (link index, forward) without repeats.
std::vector<char> selected_chips(const Topology& topo, const Perturbation& p);
std::vector<char> selected_hosts(const Topology& topo, const Perturbation& p);
std::vector<std::pair<int, bool>> selected_directed_links(const Topology& topo, const Perturbation& p);

// The perturbations with every box clipped to axes of `sizes` and to `slices` slices (a
// symmetry-reduced pod whose axes are the first sizes[a] positions of the real ones, its slices
// the first `slices`); boxes left empty are dropped. Exact only along axes where every
// selection is translation-invariant, which is what the reduction proves before it shortens
// an axis or the slices.
std::vector<Perturbation> restrict_perturbations(const std::vector<Perturbation>& perturbations,
                                                 const std::vector<int>& sizes, int slices);

// An axis along which one perturbation is not invariant under translation by one position:
// chips (or their links, or their hosts' NICs) differ along it. `axis` is a mesh axis index or
// Topology::kSliceAxis.
struct PerturbationDifference {
  int axis = 0;
  std::string perturbation;   // its name
  PerturbationKind kind = PerturbationKind::SlowChips;
};

// Every (axis, perturbation) pair along which the pod's perturbations break translation
// symmetry; on an axis without wraparound, links along that axis itself are not compared
// (the axis is a line whose end chips have no link there anyway).
std::vector<PerturbationDifference> perturbation_differences(const Topology& topo);

// How many chips, directed links or NICs perturbation `index` of the topology selects.
int perturbation_target_count(const Topology& topo, size_t index);

}  // namespace podsim
