#include "sim/engine/operation_result.hpp"

#include <stdexcept>

namespace podsim {
namespace {

[[noreturn]] void wrong_kind(const OperationResult& op, ProgramOpKind asked) {
  throw std::logic_error("operation '" + op.name + "' is a " + std::string(to_string(op.kind())) + " op, not a " +
                         std::string(to_string(asked)) + " op");
}

}  // namespace

const TrafficResult* OperationResult::traffic() const {
  if (const auto* c = std::get_if<CollectiveResult>(&work)) return c;
  if (const auto* s = std::get_if<SendResult>(&work)) return s;
  if (const auto* h = std::get_if<HostTransferResult>(&work)) return h;
  return nullptr;
}

const FormulaResult* OperationResult::analytic() const {
  const auto* c = std::get_if<CollectiveResult>(&work);
  return c && c->analytic ? &*c->analytic : nullptr;
}

const CollectiveResult& OperationResult::collective() const {
  if (const auto* c = std::get_if<CollectiveResult>(&work)) return *c;
  wrong_kind(*this, ProgramOpKind::Collective);
}

const SendResult& OperationResult::send() const {
  if (const auto* s = std::get_if<SendResult>(&work)) return *s;
  wrong_kind(*this, ProgramOpKind::Send);
}

std::string OperationResult::kind_name() const {
  if (const auto* c = std::get_if<CollectiveResult>(&work)) return std::string(to_string(c->kind));
  return std::string(to_string(kind()));
}

}  // namespace podsim
