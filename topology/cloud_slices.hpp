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

// Whether Google Cloud offers a slice of this mesh shape for `chip` (axes of size 1 dropped, any
// order): a listed shape, or for v4p and v5p a shape of whole 4x4x4 cubes (every axis a multiple
// of 4, at most v5p's largest job). nullopt where no slice of the chip is listed (v3).
std::optional<bool> cloud_offers_shape(std::string_view chip, std::vector<int> shape);

// What a message says the chip offers: "v5litepod-1 (1x1), v5litepod-4 (2x2), ...", and for
// v4p and v5p the cube rule.
std::string cloud_shapes_text(std::string_view chip);

}  // namespace podsim
