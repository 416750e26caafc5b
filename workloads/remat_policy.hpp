#pragma once
// What a training step keeps of each layer's intermediate tensors for the backward pass: kept in
// HBM, offloaded to host memory, or recomputed (rematerialised) from what was kept. MaxText names
// its policies (`remat_policy` in base.yml) and the tensors a layer tags with checkpoint_name
// (query_proj, key_proj, value_proj, context, out_proj, mlpwi_0, mlpwi_1 or mlpwi, mlpwo); the
// other intermediates (norms, rotary, residual sums, the activation function) have no name and
// are recomputed by every policy that does not keep everything. An MLA layer's latents have
// names too (query_wa_proj, mla_q, kv_wa_proj, mla_kv), which only `custom` keeps. The layer's
// input is always kept: scanned layers keep their carry (MaxText's `decoder_layer_input`), in
// HBM unless `custom` offloads it. Which tensors the backward needs, and what recomputing one
// costs, is workloads/layer_kernels.hpp's.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace podsim {

enum class TensorFate { Device, Offload, Recompute };

// MaxText's name for each layer's input (decoders.py:122, deepseek.py:363 and :577 at e591f30;
// the kernels' "layer_input").
inline constexpr const char* kDecoderLayerInput = "decoder_layer_input";

struct RematPolicy {
  std::string name;                            // MaxText's name, podsim's, or `custom`
  std::map<std::string, TensorFate> fate;      // by tensor name; absent: recompute
  bool keep_everything = false;                // podsim's `none`: every intermediate, named or not
  // Offloaded tensors: is the host link used at all (a policy without offload needs no host).
  bool offloads() const;
  TensorFate of(const std::string& tensor) const;
};

// The tensors a policy may name (MaxText's checkpoint names), in layer order, the layer's input
// (decoder_layer_input: device or offload) first.
const std::vector<std::string>& remat_tensor_names();
// The names an MLA layer alone has (its latents).
const std::vector<std::string>& mla_remat_tensor_names();

// A named policy: MaxText's (`full`, `minimal`, `minimal_offloaded`, `save_dot_except_mlpwi`,
// `save_dot_except_mlp`, `save_qkv_proj`, `qkv_proj_offloaded`, `save_out_proj`,
// `minimal_with_context`) or podsim's own (`none`, `block`, `book`). Throws
// std::invalid_argument naming the choices for another name.
RematPolicy remat_policy(std::string_view name);
// Every name remat_policy() accepts, for errors and the schema.
std::vector<std::string> remat_policy_names();

// MaxText's `custom` policy: each named tensor `device`, `offload` or `remat` (unnamed ones:
// remat). Throws std::invalid_argument for an unknown tensor or fate.
RematPolicy custom_remat_policy(const std::map<std::string, std::string>& fates);

}  // namespace podsim
