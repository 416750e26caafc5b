#pragma once
// Meshes the tests build often.
#include <vector>

#include "topology/topology.hpp"

namespace podsim_test {

// v5e axes X, Y, Z of these sizes, wrapped by the chip's own rule (an axis of 16).
inline podsim::TopologySpec v5e_mesh(std::vector<int> sizes) {
  podsim::TopologySpec t;
  t.chip = *podsim::find_chip_preset("v5e");
  const char* names[] = {"X", "Y", "Z"};
  const auto wraps = podsim::default_wraparound(t.chip, sizes);
  for (size_t i = 0; i < sizes.size(); ++i) t.axes.push_back({names[i], sizes[i], static_cast<bool>(wraps[i])});
  return t;
}

// v5p axes X, Y, Z of these sizes, all wrapped (as in a full pod).
inline podsim::TopologySpec v5p_mesh(std::vector<int> sizes) {
  podsim::TopologySpec t;
  t.chip = *podsim::find_chip_preset("v5p");
  const char* names[] = {"X", "Y", "Z"};
  for (size_t i = 0; i < sizes.size(); ++i) t.axes.push_back({names[i], sizes[i], true});
  return t;
}

}  // namespace podsim_test
