#pragma once
// What a collective is, independent of how it is simulated.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace podsim {

enum class CollectiveKind { AllGather, ReduceScatter, AllReduce, AllToAll };

// Across slices: a hierarchical AllReduce (ReduceScatter over ICI, AllReduce over DCN,
// AllGather over ICI) or one flat ring through every chip of every slice.
enum class DcnAlgorithm { Hierarchical, FlatRing };

// Per-hop time of one message of b bytes over a link of bandwidth W with latency floor T_min.
enum class HopModel {
  Floor,     // the scaling book: T_hop = max(T_min, b / W)   (sharding.md:L338-L348)
  Additive,  // latency plus transfer: T_hop = T_min + b / W
};

// Part of a mesh axis a collective can run over, as a device mesh reshape makes one: the
// chips `stride` apart, `size` of them. {1, n} is the whole axis; on a 16-axis, {1, 4} are the
// 4 neighbours of an inner block (a line: its ends are not neighbours), {4, 4} the 4 chips of
// an outer ring, each hop 4 links long (and its rings share those links).
struct AxisSlice {
  int stride = 1;
  int size = 0;   // 0: the whole axis
};

struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::AllGather;
  std::vector<int> axes;          // mesh axes the collective runs over (may be empty with over_dcn)
  std::vector<AxisSlice> slices;  // empty, or one per entry of `axes`
  bool over_dcn = false;          // also across slices
  DcnAlgorithm dcn_algorithm = DcnAlgorithm::Hierarchical;
  double bytes = 0;               // V: the book's per-group array size (the gathered result for
                                  // AllGather, the unreduced input for ReduceScatter/AllReduce,
                                  // the whole array for AllToAll)
  bool bidirectional = true;
  // AllToAll with uneven blocks (an MoE layer's dispatch and combine under skewed routing):
  // pair_bytes[i * G + j] is what the chip at group position i sends the one at position j,
  // positions counted in mixed radix over `axes` in ascending axis order, the lowest axis
  // fastest, G the group size. Empty: every block is bytes / G^2. Blocks of 0 bytes are not
  // sent. `bytes` is then the sum of pair_bytes (for reports); chips differ along these axes,
  // so the symmetry reduction keeps them whole.
  std::vector<double> pair_bytes;
};

struct TopologySpec;   // topology/topology.hpp

// Chips taking part in one instance of `spec` on a pod of `topology`: the product of its axes'
// sizes (or of their slices'), times the slices when it crosses DCN.
int collective_group_size(const TopologySpec& topology, const CollectiveSpec& spec);

std::string_view to_string(CollectiveKind kind);
std::string_view to_string(DcnAlgorithm algorithm);
std::string_view to_string(HopModel model);

}  // namespace podsim
