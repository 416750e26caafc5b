#include "workloads/program.hpp"

#include <stdexcept>

namespace podsim {

std::string_view to_string(ProgramOpKind kind) {
  switch (kind) {
    case ProgramOpKind::Collective: return "collective";
    case ProgramOpKind::Compute: return "compute";
    case ProgramOpKind::Send: return "send";
    case ProgramOpKind::HostTransfer: return "host_transfer";
  }
  return "?";
}

double host_transfer_s(const HostTransferWork& work, const ChipSpec& chip) { return work.bytes / chip.pcie_bandwidth_Bps; }

std::string category_name(const ProgramOp& op) {
  return category_name(op.role, op.is(ProgramOpKind::Collective) ? op.collective().kind : CollectiveKind::AllGather);
}

double ProgramOp::bytes() const {
  if (const auto* c = std::get_if<CollectiveSpec>(&work)) return c->bytes;
  if (const auto* s = std::get_if<SendWork>(&work)) return s->bytes;
  if (const auto* h = std::get_if<HostTransferWork>(&work)) return h->bytes;
  return 0;
}

double ProgramOp::flops() const {
  const auto* c = std::get_if<ComputeWork>(&work);
  return c ? c->flops : 0;
}

void ProgramOp::throw_wrong_kind(ProgramOpKind asked) const {
  throw std::logic_error("op '" + name + "' is a " + std::string(to_string(kind())) + " op, not a " +
                         std::string(to_string(asked)) + " op");
}

}  // namespace podsim
