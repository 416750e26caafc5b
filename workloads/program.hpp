#pragma once
// A per-chip program: the ops every chip runs, with their dependencies. Every chip runs the
// same ops; collectives name mesh axes, not chips. Where chips differ by position (pipeline
// stages, uneven MoE work) the op says along which axes, and the symmetry reduction keeps them.
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "collectives/collective.hpp"
#include "topology/chip_spec.hpp"
#include "workloads/op_role.hpp"

namespace podsim {

// What an op does on a chip, one alternative per kind (the variant's index order).
enum class ProgramOpKind { Collective, Compute, Send, HostTransfer };

// Work on the chip's own compute units.
struct ComputeWork {
  double compute_s = 0;   // time on the chip's compute units (a roofline)
  double flops = 0;       // the useful FLOPs it performs (MFU accounting)
  // Compute that differs from chip to chip by position along `vary_axes` (an MoE layer's
  // experts compute the tokens routed to them): compute_s_by_position[i] on the chip whose
  // coordinates on vary_axes read i in mixed radix, the first axis fastest; `compute_s` and
  // `flops` are then the mean over positions. Chips differ along these axes, so the symmetry
  // reduction keeps them whole.
  std::vector<int> vary_axes;
  std::vector<double> compute_s_by_position;
};

// Point to point: each chip sends `bytes` to its neighbour one step along `axis` (or
// Topology::kSliceAxis) in `direction`, within the line (never round a wraparound); with
// `round_the_end` the line's last chip also sends to its first.
struct SendWork {
  double bytes = 0;
  int axis = -1;
  int direction = +1;
  bool round_the_end = false;
};

// Between the chip's HBM and its host's memory over PCIe, by DMA (XLA's host offload: a remat
// policy's `offload` tensors go to pinned host memory in the forward and come back before the
// backward): `bytes` on the chip's host link in one direction, bytes / ChipSpec::host_link_Bps,
// beside its compute (a DMA engine's, not the TensorCore's work; a slow chip's compute does not
// slow it). One op at a time each way: the workload chains them as XLA's one stream a direction.
struct HostTransferWork {
  double bytes = 0;
  bool to_host = true;   // device to host (offload); false: host to device (prefetch)
};

// Its time: the bytes over the chip's PCIe link one way (ChipSpec::pcie_bandwidth_Bps, the
// book's 1.6e10 B/s, 3.2e10 on v6e: hardware.md section 4); a DMA's setup is left out.
double host_transfer_s(const HostTransferWork& work, const ChipSpec& chip);

using OpWork = std::variant<CollectiveSpec, ComputeWork, SendWork, HostTransferWork>;
template <class Work>
inline constexpr ProgramOpKind kKindOf = ProgramOpKind::Collective;
template <>
inline constexpr ProgramOpKind kKindOf<ComputeWork> = ProgramOpKind::Compute;
template <>
inline constexpr ProgramOpKind kKindOf<SendWork> = ProgramOpKind::Send;
template <>
inline constexpr ProgramOpKind kKindOf<HostTransferWork> = ProgramOpKind::HostTransfer;
static_assert(std::is_same_v<std::variant_alternative_t<static_cast<size_t>(ProgramOpKind::Compute), OpWork>, ComputeWork> &&
              std::is_same_v<std::variant_alternative_t<static_cast<size_t>(ProgramOpKind::Send), OpWork>, SendWork> &&
              std::is_same_v<std::variant_alternative_t<static_cast<size_t>(ProgramOpKind::HostTransfer), OpWork>,
                             HostTransferWork>);

// A dependency on an op of another chip: the neighbour one step against `direction` along
// `axis` (the chip a Send arrives from). No dependency where that neighbour does not exist.
// With round_the_end, only the line's first chip in `direction` has it, on the last one (what
// a send round the end delivers); every other chip has none. A send is received by one op on
// a chip: two ops depending on the same send would leave one waiting forever.
struct NeighbourDependency {
  int op = -1;
  int axis = 0;
  int direction = +1;
  bool round_the_end = false;
};

struct ProgramOp {
  std::string name;
  OpWork work;                 // a collective unless set otherwise
  int repeat = 1;
  // Ops (indices into the program, all earlier) that must finish on a chip before this
  // starts there. Ops with no dependency start at time 0.
  std::vector<int> after;
  // Earliest start on every chip, in simulated seconds (0: as soon as `after` allows). Lets
  // independent measurements share one simulation without overlapping.
  double release_s = 0;
  // Where chips run their ops in an order that depends on their position along one axis
  // (pipeline stages under 1F1B): after_at_position[p] replaces `after` on chips at position p.
  int position_axis = -1;
  std::vector<std::vector<int>> after_at_position;
  // Where an op runs on chips at some positions along `position_axis` only (a pipeline slot
  // holding a layer on some stages): present_at_position[p] != 0 on chips at position p; empty:
  // everywhere. Where absent the op ends as soon as its dependencies allow, taking no time and
  // sending nothing, so the ops after it keep their order (workloads/op_presence.hpp).
  std::vector<char> present_at_position;
  std::vector<NeighbourDependency> after_neighbour;
  OpRole role = OpRole::Unassigned;   // what the op is for: reports group and branch on it
  // Memory the op makes live on its chip when it starts (saved activations, gathered weights,
  // logits, ring-attention blocks), until the last of the ops `released_by` ends there (none:
  // the step's end): what the report's timeline peak adds up. The engine ignores it.
  double holds_bytes = 0;
  std::vector<int> released_by;
  int layer = -1;              // the model layer it belongs to, -1 for none

  ProgramOpKind kind() const { return static_cast<ProgramOpKind>(work.index()); }
  bool is(ProgramOpKind k) const { return kind() == k; }
  // The work of the kind the op is; asking for another kind throws std::logic_error naming both.
  const CollectiveSpec& collective() const { return get<CollectiveSpec>(); }
  CollectiveSpec& collective() { return get<CollectiveSpec>(); }
  const ComputeWork& compute() const { return get<ComputeWork>(); }
  ComputeWork& compute() { return get<ComputeWork>(); }
  const SendWork& send() const { return get<SendWork>(); }
  SendWork& send() { return get<SendWork>(); }
  const HostTransferWork& host_transfer() const { return get<HostTransferWork>(); }
  // The bytes a collective, a send or a host transfer moves; 0 for compute.
  double bytes() const;
  // The useful FLOPs of a compute op; 0 for traffic.
  double flops() const;

 private:
  template <class Work>
  const Work& get() const {
    if (const Work* w = std::get_if<Work>(&work)) return *w;
    throw_wrong_kind(kKindOf<Work>);
  }
  template <class Work>
  Work& get() {
    return const_cast<Work&>(static_cast<const ProgramOp*>(this)->get<Work>());
  }
  [[noreturn]] void throw_wrong_kind(ProgramOpKind asked) const;
};

std::string_view to_string(ProgramOpKind kind);
// The op's category as outputs name it: its role's name, or a scenario collective's kind.
std::string category_name(const ProgramOp& op);

using Program = std::vector<ProgramOp>;

}  // namespace podsim
