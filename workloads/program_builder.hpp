#pragma once
// Appends ops to a Program and returns their indices, so a workload states dependencies by
// index (training.cpp's passes, the MoE blocks). Dependencies of -1 (an op not emitted) drop out.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "workloads/program.hpp"

namespace podsim {

class ProgramBuilder {
 public:
  ProgramBuilder() = default;
  explicit ProgramBuilder(Program program) : program_(std::move(program)) {}
  int send(std::string name, int axis, int direction, double bytes, std::vector<int> after, OpRole role,
           bool round_the_end = false) {
    ProgramOp op;
    op.name = std::move(name);
    op.work = SendWork{bytes, axis, direction, round_the_end};
    op.after = clean(std::move(after));
    op.role = role;
    return add(std::move(op));
  }
  int host_transfer(std::string name, double bytes, bool to_host, std::vector<int> after, int layer, OpRole role) {
    ProgramOp op;
    op.name = std::move(name);
    op.work = HostTransferWork{bytes, to_host};
    op.after = clean(std::move(after));
    op.layer = layer;
    op.role = role;
    return add(std::move(op));
  }
  int add(ProgramOp op) {
    program_.push_back(std::move(op));
    return static_cast<int>(program_.size() - 1);
  }
  int compute(std::string name, double seconds, double flops, std::vector<int> after, int layer,
              OpRole role) {
    ProgramOp op;
    op.name = std::move(name);
    op.work = ComputeWork{seconds, flops, {}, {}};
    op.after = clean(std::move(after));
    op.layer = layer;
    op.role = role;
    return add(std::move(op));
  }
  int collective(std::string name, CollectiveKind kind, const std::vector<int>& axes,
                 const std::vector<AxisSlice>& slices, double bytes, std::vector<int> after, int layer,
                 OpRole role, bool over_dcn = false) {
    ProgramOp op;
    op.name = std::move(name);
    CollectiveSpec& c = op.collective();
    c.kind = kind;
    c.axes = axes;
    c.slices = slices;
    c.over_dcn = over_dcn;
    c.bytes = bytes;
    op.after = clean(std::move(after));
    op.layer = layer;
    op.role = role;
    return add(std::move(op));
  }
  ProgramOp& op(int index) { return program_.at(index); }
  int size() const { return static_cast<int>(program_.size()); }
  Program take() { return std::move(program_); }

 private:
  static std::vector<int> clean(std::vector<int> after) {
    after.erase(std::remove(after.begin(), after.end(), -1), after.end());
    return after;
  }
  Program program_;
};

}  // namespace podsim
