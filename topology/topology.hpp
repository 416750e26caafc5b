#pragma once
// The structure of a pod: chips on a 1-3 axis ICI mesh with per-axis wraparound, hosts
// owning blocks of chips, each host's NIC to a DCN switch joining several identical slices.
// One Boost.Graph graph holds it all; everything else here is queries on that graph.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "topology/chip_spec.hpp"
#include "topology/perturbation.hpp"

namespace podsim {

struct MeshAxis {
  std::string name;   // "X", "Y", "Z" by default; "C" for a chip's devices
  int size = 1;
  bool wraparound = false;
  // The axis of a chip's devices (ChipSpec::cores_per_chip > 1): its links are the die-to-die
  // link, not ICI. The mesh's last axis, added by the scenario loader (mesh_with_cores).
  bool die_to_die = false;
};

// The axes a chip with several devices adds to a mesh of chips: the axis "C" of its
// cores_per_chip devices, last (JAX's physical TPU mesh is (x, y, z, core_on_chip)). Unchanged
// where the chip shows one device. Throws std::invalid_argument when the mesh names an axis C.
std::vector<MeshAxis> mesh_with_cores(std::vector<MeshAxis> chip_axes, const ChipSpec& chip);

// A device-mesh reshape of one physical axis into two logical ones: `inner` is each block of
// `inner_size` neighbouring chips, `outer` the ring of blocks (chips inner_size apart). The
// physical links stay as they are; collectives over a logical axis use slices of the axis.
struct AxisSplit {
  int axis = 0;
  std::string inner, outer;
  int inner_size = 1;
};

struct TopologySpec {
  ChipSpec chip;
  std::vector<MeshAxis> axes;        // 1 to 3 axes of chips, and axis C of a chip's devices
  std::vector<AxisSplit> splits;     // logical names for parts of axes (parallelism plans use them)
  int slices = 1;                    // identical slices joined by DCN
  double dcn_oversubscription = 1.0; // 1 = non-blocking DCN switch; k = the core carries 1/k of all NIC bandwidth
  std::vector<Perturbation> perturbations;   // chips and links that differ (topology/perturbation.hpp)

  // Chips in one slice: the product of the axis sizes (of a spec Topology accepts).
  int chips_per_slice() const {
    int n = 1;
    for (const auto& a : axes) n *= a.size;
    return n;
  }
};

// The true extent of a pod that a symmetry reduction simulates smaller (collectives/symmetry.hpp):
// rings are scheduled over these lengths while neighbours are found on the simulated mesh.
struct RealExtent {
  std::vector<int> axes;   // per mesh axis
  int slices = 1;
};

// The chip's own wraparound rule (tpus.md:L150, L212) for a mesh of these axis sizes.
std::vector<bool> default_wraparound(const ChipSpec& chip, const std::vector<int>& sizes);

using ChipId = int32_t;   // slice * chips_per_slice + linear index; axis 0 varies fastest

enum class LinkKind { Ici, Pcie, Nic, DcnCore };

// An undirected physical link (full duplex: each direction has bandwidth_Bps on its own).
struct LinkInfo {
  int a = -1, b = -1;       // graph vertices; for ICI a is the chip at position i, b at i+1 (mod size)
  LinkKind kind = LinkKind::Ici;
  double bandwidth_Bps = 0; // per direction
  int axis = -1;            // ICI only
  bool is_wraparound = false;
  // Perturbations applied, per direction: [0] forward (a -> b), [1] backward.
  std::array<double, 2> bandwidth_scale{1.0, 1.0};
  std::array<double, 2> extra_latency_s{0.0, 0.0};

  double directed_bandwidth_Bps(bool forward) const { return bandwidth_Bps * bandwidth_scale[forward ? 0 : 1]; }
  double directed_extra_latency_s(bool forward) const { return extra_latency_s[forward ? 0 : 1]; }
};

// One link traversed in one direction: forward means a -> b.
struct DirectedLink {
  int link = -1;
  bool forward = true;
  bool operator==(const DirectedLink&) const = default;
};

class Topology {
 public:
  explicit Topology(TopologySpec spec);   // throws std::invalid_argument on impossible specs
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  const TopologySpec& spec() const { return spec_; }
  int axis_count() const { return static_cast<int>(spec_.axes.size()); }
  int axis_size(int axis) const { return spec_.axes[axis].size; }
  bool wraps(int axis) const;   // wraparound and size > 1

  int slice_count() const { return spec_.slices; }
  int chips_per_slice() const;
  int chip_count() const;        // all slices
  int host_count() const;        // all slices
  int hosts_per_slice() const;

  ChipId chip_at(int slice, std::span<const int> coords) const;
  std::vector<int> coords(ChipId chip) const;
  int slice_of(ChipId chip) const;
  int host_of(ChipId chip) const;           // host index 0..host_count()-1
  std::vector<ChipId> chips_of_host(int host) const;

  // Neighbour one step along an axis (direction +1 or -1), wrapping only where the axis wraps.
  std::optional<ChipId> neighbor(ChipId chip, int axis, int direction) const;
  // The link used for that step; on a wrapped axis of size 2 the two directions use two distinct links.
  std::optional<DirectedLink> link_toward(ChipId chip, int axis, int direction) const;
  // The links of one hop along an axis (link_toward's), or where that direction of the link
  // has failed (a perturbation's bandwidth_scale 0) the detour ICI routing takes round it:
  // one link off along another axis (the lowest axis first, +1 before -1), the hop beside the
  // failed link, and one link back, each direction of them alive. Empty when there is no
  // neighbour that way; throws std::invalid_argument naming the link when no detour exists.
  std::vector<DirectedLink> hop_route(ChipId chip, int axis, int direction) const;
  bool failed(const DirectedLink& d) const { return links_[d.link].bandwidth_scale[d.forward ? 0 : 1] == 0; }
  bool has_failed_links() const { return has_failed_links_; }
  // The chips sharing all coordinates of `member` but `axis`, by position 0..size-1.
  std::vector<ChipId> ring_order(ChipId member, int axis) const;
  // Dimension-order route within one slice: axes in increasing index, shorter way round on a
  // wrapped axis (ties go +1). Empty when a == b. Throws std::invalid_argument across slices.
  std::vector<DirectedLink> dimension_order_route(ChipId a, ChipId b) const;
  int hop_distance(ChipId a, ChipId b) const;   // ICI hops within a slice
  int diameter() const;                         // max hop distance within a slice
  int bisection_links() const;                  // fewest ICI links cut to halve one slice

  // Positions along a mesh axis or, for kSliceAxis, along the slices (a line: a pipeline of
  // slices has no wraparound). step_along never wraps.
  static constexpr int kSliceAxis = 100;
  int position_along(ChipId chip, int axis) const;
  int extent_along(int axis) const;
  std::optional<ChipId> step_along(ChipId chip, int axis, int direction) const;
  // From a line's last chip in `direction`, the chip at its other end (an interleaved
  // pipeline's last device feeding its first the next virtual stage); nullopt elsewhere.
  std::optional<ChipId> round_the_end(ChipId chip, int axis, int direction) const;

  // DCN path chip -> its host (PCIe) -> NIC -> switch core (if oversubscribed) -> NIC -> host -> chip.
  std::vector<DirectedLink> dcn_route(ChipId a, ChipId b) const;

  const std::vector<LinkInfo>& links() const { return links_; }
  int nic_link(int host) const;                 // the NIC link of a host (host -> switch)
  // Perturbations (spec().perturbations) as applied: a chip's compute time factor, and whether
  // any link carries extra latency.
  double compute_slowdown(ChipId chip) const { return compute_slowdown_.empty() ? 1.0 : compute_slowdown_[chip]; }
  bool has_extra_latency() const { return has_extra_latency_; }
  int vertex_of_chip(ChipId chip) const;
  int vertex_of_host(int host) const;
  int vertex_count() const;
  std::string chip_name(ChipId chip) const;   // e.g. "s0/chip(3,1,0)"

 private:
  struct Graph;
  TopologySpec spec_;
  std::vector<LinkInfo> links_;
  std::unique_ptr<Graph> graph_;
  std::vector<double> compute_slowdown_;   // by chip; empty when no chip is slowed
  bool has_extra_latency_ = false;
  bool has_failed_links_ = false;

  // The constructor's steps, in order: check the spec (naming default axes), lay out chips
  // and hosts, then the links (ICI per axis; PCIe, NICs and the DCN core), then perturbations.
  long long validate_spec();
  void lay_out(long long chips_per_slice);
  void add_ici_links();
  void add_host_links();
  void add_link(const LinkInfo& info);
  void apply_perturbations();
};

}  // namespace podsim
