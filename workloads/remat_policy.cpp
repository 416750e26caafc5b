#include "workloads/remat_policy.hpp"

#include <algorithm>
#include <stdexcept>

namespace podsim {

namespace {

// The weight matmuls' outputs: what jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims
// keeps (a dot_general without batch dimensions is a weight matmul; the attention scores have
// batch dimensions, and a flash-attention kernel is no dot at all, so `context` is not kept).
// On a GQA layer these are the tensors MaxText's later name lists keep (decoders.py
// minimal_policy at e591f30; the names replaced the dots in 6426085e, 2025-08-29, before the
// recipes' 3eb77db3): query_proj, key_proj, value_proj, out_proj, the MLP's. On an MLA layer
// podsim's policies are those name lists: its latents (query_wa_proj, mla_q, kv_wa_proj, mla_kv)
// are in none of them, nor are the up-projections' outputs (named only once concatenated as
// query_proj and key_proj, or sliced as value_proj), so every policy but `none` and `custom`
// reruns them. (MaxText's MLA from 2025-02 to 6426085e ran the dots-based `minimal`, which kept
// the latent and up-projection matmuls' outputs instead: not modelled.)
const std::vector<std::string> kWeightMatmuls = {"query_proj", "key_proj", "value_proj", "out_proj",
                                                 "mlpwi_0",    "mlpwi_1",  "mlpwi",      "mlpwo"};
const std::vector<std::string> kQkv = {"query_proj", "key_proj", "value_proj"};
// MLA's latents (attention_mla.py at e591f30: :930, :932, :1097, :1100), in layer order.
const std::vector<std::string> kMlaLatents = {"query_wa_proj", "mla_q", "kv_wa_proj", "mla_kv"};

RematPolicy keeping(std::string name, const std::vector<std::string>& kept, TensorFate fate = TensorFate::Device) {
  RematPolicy p;
  p.name = std::move(name);
  for (const auto& t : kept) p.fate[t] = fate;
  return p;
}

std::vector<std::string> plus(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct NamedPolicy {
  const char* name;
  RematPolicy (*make)();
};

// MaxText's `remat_policy` choices as its decoder layers map them to jax.checkpoint policies
// (MaxText/layers/models.py at 76bd53b; layers/decoders.py later), then podsim's own three.
const NamedPolicy kPolicies[] = {
    // nothing_saveable: the backward reruns the whole layer from its input.
    {"full", [] { return keeping("full", {}); }},
    {"minimal", [] { return keeping("minimal", kWeightMatmuls); }},
    // offload_dot_with_no_batch_dims(device -> pinned_host): the same tensors, in host memory.
    {"minimal_offloaded", [] { return keeping("minimal_offloaded", kWeightMatmuls, TensorFate::Offload); }},
    // checkpoint_dots_with_no_batch_dims plus save_only_these_names("context").
    {"minimal_with_context", [] { return keeping("minimal_with_context", plus(kWeightMatmuls, {"context"})); }},
    {"minimal_flash", [] { return keeping("minimal_flash", plus(kWeightMatmuls, {"context"})); }},
    {"save_dot_except_mlpwi", [] { return keeping("save_dot_except_mlpwi", plus(kQkv, {"out_proj", "mlpwo"})); }},
    {"save_dot_except_mlp", [] { return keeping("save_dot_except_mlp", plus(kQkv, {"out_proj"})); }},
    {"save_dot_with_context_except_mlp",
     [] { return keeping("save_dot_with_context_except_mlp", plus(kQkv, {"context", "out_proj"})); }},
    {"save_qkv_proj", [] { return keeping("save_qkv_proj", kQkv); }},
    {"qkv_proj_offloaded", [] { return keeping("qkv_proj_offloaded", kQkv, TensorFate::Offload); }},
    {"save_out_proj", [] { return keeping("save_out_proj", {"out_proj"}); }},
    // podsim's: every intermediate (no rematerialisation); each layer's input only (the
    // book's block remat, MaxText's `full`); the book's three after the MLP's big matmuls
    // (training.md:L678-L682: BF, BF, BD), so attention is rerun.
    {"none",
     [] {
       RematPolicy p = keeping("none", plus(kWeightMatmuls, {"context"}));
       p.keep_everything = true;
       return p;
     }},
    {"block", [] { return keeping("block", {}); }},
    {"book", [] { return keeping("book", {"mlpwi_0", "mlpwi_1", "mlpwi", "mlpwo"}); }},
};

}  // namespace

bool RematPolicy::offloads() const {
  for (const auto& [tensor, f] : fate)
    if (f == TensorFate::Offload) return true;
  return false;
}

TensorFate RematPolicy::of(const std::string& tensor) const {
  const auto it = fate.find(tensor);
  if (it != fate.end()) return it->second;
  // The layer's input is the scan's carry: kept unless offloaded (custom's decoder_layer_input).
  if (tensor == kDecoderLayerInput) return TensorFate::Device;
  return keep_everything ? TensorFate::Device : TensorFate::Recompute;
}

const std::vector<std::string>& remat_tensor_names() {
  static const std::vector<std::string> names =
      plus(plus(plus({kDecoderLayerInput}, kMlaLatents), plus(kQkv, {"context", "out_proj"})),
           {"mlpwi_0", "mlpwi_1", "mlpwi", "mlpwo"});
  return names;
}

const std::vector<std::string>& mla_remat_tensor_names() { return kMlaLatents; }

std::vector<std::string> remat_policy_names() {
  std::vector<std::string> names;
  for (const auto& p : kPolicies) names.push_back(p.name);
  names.push_back("custom");
  return names;
}

RematPolicy remat_policy(std::string_view name) {
  for (const auto& p : kPolicies)
    if (name == p.name) return p.make();
  std::string choices;
  for (const auto& n : remat_policy_names()) choices += (choices.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown remat policy '" + std::string(name) + "'; expected one of " + choices);
}

RematPolicy custom_remat_policy(const std::map<std::string, std::string>& fates) {
  RematPolicy p;
  p.name = "custom";
  const auto& known = remat_tensor_names();
  for (const auto& [tensor, fate] : fates) {
    if (std::find(known.begin(), known.end(), tensor) == known.end()) {
      std::string choices;
      for (const auto& n : known) choices += (choices.empty() ? "" : ", ") + n;
      throw std::invalid_argument("unknown tensor '" + tensor + "'; expected one of " + choices);
    }
    // MaxText refuses it (pyconfig.py:436 at 3eb77db3, "Cannot remeterialize this tensor with
    // scan_layers=True"): the layers' inputs are where the backward's reruns start.
    if (tensor == kDecoderLayerInput && fate == "remat")
      throw std::invalid_argument("tensor " + tensor + ": 'remat'; expected device or offload (each layer's input is "
                                  "where its rerun starts: MaxText cannot rematerialise it)");
    if (fate == "device") p.fate[tensor] = TensorFate::Device;
    else if (fate == "offload") p.fate[tensor] = TensorFate::Offload;
    else if (fate == "remat") p.fate[tensor] = TensorFate::Recompute;
    else throw std::invalid_argument("tensor " + tensor + ": '" + fate + "'; expected device, offload or remat");
  }
  return p;
}

}  // namespace podsim
