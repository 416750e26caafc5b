#pragma once
// Program ops the tests build often.
#include <string>
#include <utility>
#include <vector>

#include "workloads/program.hpp"

namespace podsim_test {

// A collective over `axes` (indices into the mesh) of `bytes`, after nothing.
inline podsim::ProgramOp collective_op(const std::string& name, podsim::CollectiveKind kind, std::vector<int> axes,
                                       double bytes, bool bidirectional = true) {
  podsim::ProgramOp op;
  op.name = name;
  podsim::CollectiveSpec& c = op.collective();
  c.kind = kind;
  c.axes = std::move(axes);
  c.bytes = bytes;
  c.bidirectional = bidirectional;
  return op;
}

}  // namespace podsim_test
