#pragma once
// Google Cloud's TPU accelerator-type names as mesh shapes: "v5p-2048" is 2048 TensorCores, 1024
// chips, 8x8x16. v4 and v5p count TensorCores (2 a chip), v5e ("v5litepod") and v6e count chips.
// Only the shapes Google's docs list (cited in cloud_slices.cpp), so a name means one shape.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podsim {

struct CloudSlice {
  std::string chip;          // the chip preset, e.g. "v5p", "v5e"
  std::vector<int> shape;    // mesh axis sizes, e.g. {8, 8, 16}
};

// nullopt when the name is not one of the listed accelerator types.
std::optional<CloudSlice> find_cloud_slice(std::string_view name);

// Every listed name, for messages ("v5p-8, v5p-16, ...").
std::vector<std::string> cloud_slice_names();

}  // namespace podsim
