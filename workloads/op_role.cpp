#include "workloads/op_role.hpp"

namespace podsim {

std::string_view role_name(OpRole role) {
  switch (role) {
    case OpRole::Unassigned: return "";
    case OpRole::ScenarioCollective: return "";
    case OpRole::Forward: return "forward";
    case OpRole::Backward: return "backward";
    case OpRole::Recompute: return "recompute";
    case OpRole::Optimizer: return "optimizer";
    case OpRole::Attention: return "attention";
    case OpRole::Mlp: return "mlp";
    case OpRole::Unembed: return "unembed";
    case OpRole::Experts: return "experts";
    case OpRole::PipelineReceive: return "pipeline_receive";
    case OpRole::RingReceive: return "cp_ring_receive";
    case OpRole::CollectiveReduction: return "collective_reduction";
    case OpRole::TensorAllGather: return "tp_allgather";
    case OpRole::TensorReduceScatter: return "tp_reducescatter";
    case OpRole::TensorAllReduce: return "tp_allreduce";
    case OpRole::KvAllToAll: return "kv_alltoall";
    case OpRole::FsdpAllGather: return "fsdp_allgather";
    case OpRole::FsdpReduceScatter: return "fsdp_reducescatter";
    case OpRole::DataAllReduce: return "dp_allreduce";
    case OpRole::ZeroAllGather: return "zero_allgather";
    case OpRole::ZeroReduceScatter: return "zero_reducescatter";
    case OpRole::DcnAllReduce: return "dcn_allreduce";
    case OpRole::MoeDispatch: return "moe_dispatch";
    case OpRole::MoeCombine: return "moe_combine";
    case OpRole::PipelineSend: return "pp_send";
    case OpRole::RingSend: return "cp_ring";
    case OpRole::HostOffload: return "host_offload";
    case OpRole::HostPrefetch: return "host_prefetch";
  }
  return "";   // unreachable: -Wswitch names any role left out above
}

std::string category_name(OpRole role, CollectiveKind kind) {
  return role == OpRole::ScenarioCollective ? std::string(to_string(kind)) : std::string(role_name(role));
}

bool is_training_pass(OpRole role) {
  return role == OpRole::Forward || role == OpRole::Backward || role == OpRole::Recompute;
}

bool is_moe_all_to_all(OpRole role) { return role == OpRole::MoeDispatch || role == OpRole::MoeCombine; }

}  // namespace podsim
