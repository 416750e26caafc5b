#include "topology/cloud_slices.hpp"

#include <algorithm>

namespace podsim {

namespace {

struct Entry {
  const char* name;
  const char* chip;
  std::vector<int> shape;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = {
      // v5p: cloud.google.com/tpu/docs/v5p, "Configurations" (single-slice shapes; cores, chips),
      // read 2026-11.
      {"v5p-8", "v5p", {2, 2, 1}},
      {"v5p-16", "v5p", {2, 2, 2}},
      {"v5p-64", "v5p", {2, 4, 4}},
      {"v5p-128", "v5p", {4, 4, 4}},
      {"v5p-256", "v5p", {4, 4, 8}},
      {"v5p-512", "v5p", {4, 8, 8}},
      {"v5p-1024", "v5p", {8, 8, 8}},
      {"v5p-2048", "v5p", {8, 8, 16}},
      {"v5p-4096", "v5p", {8, 16, 16}},
      {"v5p-8192", "v5p", {16, 16, 16}},
      {"v5p-12288", "v5p", {16, 16, 24}},
      // v5e: cloud.google.com/tpu/docs/v5e, "Configurations" (v5litepod-<chips>: 1x1 .. 16x16).
      {"v5litepod-1", "v5e", {1, 1}},
      {"v5litepod-4", "v5e", {2, 2}},
      {"v5litepod-8", "v5e", {2, 4}},
      {"v5litepod-16", "v5e", {4, 4}},
      {"v5litepod-32", "v5e", {4, 8}},
      {"v5litepod-64", "v5e", {8, 8}},
      {"v5litepod-128", "v5e", {8, 16}},
      {"v5litepod-256", "v5e", {16, 16}},
      // v6e: cloud.google.com/tpu/docs/v6e, "Supported configurations" (v6e-<chips>, as v5e).
      {"v6e-1", "v6e", {1, 1}},
      {"v6e-4", "v6e", {2, 2}},
      {"v6e-8", "v6e", {2, 4}},
      {"v6e-16", "v6e", {4, 4}},
      {"v6e-32", "v6e", {4, 8}},
      {"v6e-64", "v6e", {8, 8}},
      {"v6e-128", "v6e", {8, 16}},
      {"v6e-256", "v6e", {16, 16}},
      // TPU7x: tpu7x-<TensorCores>, two a chip, as v5p's names count its cores (GKE's
      // TPU_ACCELERATOR_TYPE "tpu7x-2" for one chip, 1x1x1); the slices tpu-recipes' Ironwood
      // recipes and microbenchmarks run (training/ironwood/README.md, microbenchmarks/ironwood).
      {"tpu7x-2", "tpu7x", {1, 1, 1}},
      {"tpu7x-8", "tpu7x", {2, 2, 1}},
      {"tpu7x-16", "tpu7x", {2, 2, 2}},
      {"tpu7x-32", "tpu7x", {2, 2, 4}},
      {"tpu7x-64", "tpu7x", {2, 4, 4}},
      {"tpu7x-128", "tpu7x", {4, 4, 4}},
      {"tpu7x-256", "tpu7x", {4, 4, 8}},
      {"tpu7x-512", "tpu7x", {4, 8, 8}},
      {"tpu7x-1024", "tpu7x", {8, 8, 8}},
  };
  return table;
}

}  // namespace

std::optional<CloudSlice> find_cloud_slice(std::string_view name) {
  for (const Entry& e : entries())
    if (name == e.name) return CloudSlice{e.chip, e.shape};
  return std::nullopt;
}

std::vector<std::string> cloud_slice_names() {
  std::vector<std::string> out;
  for (const Entry& e : entries()) out.emplace_back(e.name);
  return out;
}

namespace {

// Sorted sizes without the axes of size 1: 2x4 and 4x2x1 are one slice.
std::vector<int> canonical(std::vector<int> shape) {
  shape.erase(std::remove(shape.begin(), shape.end(), 1), shape.end());
  std::sort(shape.begin(), shape.end());
  return shape;
}

// v4 and v5p slices beyond the listed ones are made of whole 4x4x4 cubes
// (cloud.google.com/tpu/docs/types-topologies: "A, B, C ... all integer multiples of 4"; v5p:
// "most (but not all) full cube shapes", the largest job 96 cubes, 6144 chips).
// TPU7x's likewise, up to its 9,216-chip pod (144 cubes; hardware.md s7).
bool whole_cubes(std::string_view chip, const std::vector<int>& shape) {
  if (chip != "v5p" && chip != "v4p" && chip != "tpu7x") return false;
  long long chips = 1;
  for (int size : shape) {
    if (size % 4 != 0) return false;
    chips *= size;
  }
  return shape.size() == 3 && chips <= (chip == "tpu7x" ? 9216 : 6144);
}

}  // namespace

std::optional<bool> cloud_offers_shape(std::string_view chip, std::vector<int> shape) {
  shape = canonical(std::move(shape));
  bool listed = false;
  for (const Entry& e : entries()) {
    if (chip != e.chip) continue;
    listed = true;
    if (canonical(e.shape) == shape) return true;
  }
  if (whole_cubes(chip, shape)) return true;
  return listed || chip == "v4p" ? std::optional<bool>(false) : std::nullopt;
}

std::string cloud_shapes_text(std::string_view chip) {
  std::string out;
  for (const Entry& e : entries()) {
    if (chip != e.chip) continue;
    std::string dims;
    for (int size : e.shape) dims += (dims.empty() ? "" : "x") + std::to_string(size);
    out += (out.empty() ? "" : ", ") + std::string(e.name) + " (" + dims + ")";
  }
  if (chip == "v5p" || chip == "v4p" || chip == "tpu7x")
    out += std::string(out.empty() ? "" : ", and ") + "3D shapes of whole 4x4x4 cubes up to " +
           (chip == "tpu7x" ? "9216" : "6144") + " chips";
  return out;
}

}  // namespace podsim
