#include "sim/commands/plan_candidates.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>

#include "sim/commands/plan_inputs.hpp"

namespace podsim {
namespace {

std::string axes_label(const TopologySpec& topology, const std::vector<int>& axes) {
  std::string out;
  for (int a : axes) out += (out.empty() ? "" : ",") + topology.axes[a].name;
  return out;
}

// An MoE model's candidates: each plan without expert parallelism and with it over each whole
// data axis the experts divide over (tokens are data-parallel across expert ranks, so the
// expert axes are data axes), pipelines included (dense first layers on the first stages: pipeline.cpp).
std::vector<PlanCandidate> with_expert_axes(const Scenario& scenario, std::vector<PlanCandidate> plans) {
  const auto& topology = scenario.topology;
  const int experts = scenario.training().model.moe->experts;
  std::vector<PlanCandidate> out;
  for (auto& c : plans) {
    c.plan.expert_axes.clear();
    for (size_t i = 0; i < c.plan.data_axes.size(); ++i) {
      const int a = c.plan.data_axes[i];
      const bool whole = c.plan.data_slices.empty() || c.plan.data_slices[i].size == 0;
      if (!whole || topology.axes[a].size < 2 || experts % topology.axes[a].size != 0) continue;
      PlanCandidate ep = c;
      ep.plan.expert_axes = {a};
      ep.label += " + EP(" + topology.axes[a].name + ")";
      out.push_back(std::move(ep));
    }
    out.push_back(std::move(c));
  }
  return out;
}

// Tensor parallelism over the blocks of k neighbours of each of `block_axes` (each axis split
// into its blocks and the ring of blocks, chips k apart), data parallelism (FSDP with `fsdp`)
// over those rings and every other axis. Labelled "DP(X/k,Y,Z) + TP(<block>)".
PlanCandidate block_tensor_plan(const TrainingPlan& base, const TopologySpec& topology, const std::vector<int>& block_axes,
                                int k, bool fsdp, const std::string& block) {
  PlanCandidate c;
  c.plan = base;
  c.plan.fsdp = fsdp;
  c.plan.pipeline_axis = -1;
  c.plan.data_axes.clear();
  c.plan.data_slices.clear();
  c.plan.tensor_axes = block_axes;
  c.plan.tensor_slices.assign(block_axes.size(), AxisSlice{1, k});
  std::string data;
  for (int d = 0; d < static_cast<int>(topology.axes.size()); ++d) {
    const bool split = std::find(block_axes.begin(), block_axes.end(), d) != block_axes.end();
    const int n = topology.axes[d].size;
    c.plan.data_axes.push_back(d);
    c.plan.data_slices.push_back(split ? AxisSlice{k, n / k} : AxisSlice{1, 0});
    data += (data.empty() ? "" : ",") + topology.axes[d].name + (split ? "/" + std::to_string(k) : "");
  }
  c.label = std::string(fsdp ? "FSDP(" : "DP(") + data + ") + TP(" + block + ")";
  return c;
}

// Each axis carries data (bit clear) or tensor (bit set) parallelism: an idle axis would only
// hold replicas repeating the same work. 2^(n+1) - 1 plans on n axes (FSDP needs a data axis).
void add_data_tensor_splits(const TrainingPlan& base, const TopologySpec& topology, std::vector<PlanCandidate>& out) {
  const int axes = static_cast<int>(topology.axes.size());
  for (int code = 0; code < (1 << axes); ++code) {
    std::vector<int> data, tensor;
    for (int a = 0; a < axes; ++a) ((code >> a) & 1 ? tensor : data).push_back(a);
    for (bool fsdp : {false, true}) {
      if (fsdp && data.empty()) continue;
      PlanCandidate c;
      c.plan = base;
      c.plan.data_axes = data;
      c.plan.tensor_axes = tensor;
      c.plan.data_slices.clear();
      c.plan.tensor_slices.clear();
      c.plan.fsdp = fsdp;
      c.plan.pipeline_axis = -1;
      std::string label;
      if (!data.empty()) label += std::string(fsdp ? "FSDP(" : "DP(") + axes_label(topology, data) + ")";
      if (!tensor.empty()) label += (label.empty() ? "" : " + ") + std::string("TP(") + axes_label(topology, tensor) + ")";
      c.label = label;
      out.push_back(std::move(c));
    }
  }
}

void add_block_tensor_splits(const TrainingPlan& base, const TopologySpec& topology, std::vector<PlanCandidate>& out) {
  const int axes = static_cast<int>(topology.axes.size());
  // Tensor parallelism over a block of k neighbours of one wrapped axis (a device mesh
  // reshape), data parallelism over the other axes and that axis's ring of blocks: the book's
  // "1024 FSDP x 4 TP" on a 16x16x16.
  for (int a = 0; a < axes; ++a) {
    const int n = topology.axes[a].size;
    if (!topology.axes[a].wraparound) continue;
    for (int k : {2, 4, 8}) {
      if (n % (2 * k) != 0) continue;
      for (bool fsdp : {false, true}) {
        out.push_back(block_tensor_plan(base, topology, {a}, k, fsdp,
                                        topology.axes[a].name + " block of " + std::to_string(k)));
      }
    }
  }
  // Tensor parallelism over a 2x2 block spanning two wrapped axes (each split into blocks of 2
  // and the ring of blocks), data over the rings and the other axes: the F7 case's layout that
  // leaves FSDP rings shared by two (docs/modelling.md, "Device layouts").
  for (int a = 0; a < axes; ++a) {
    for (int b = a + 1; b < axes; ++b) {
      const auto& x = topology.axes[a];
      const auto& y = topology.axes[b];
      if (!x.wraparound || !y.wraparound || x.size % 4 != 0 || y.size % 4 != 0) continue;
      for (bool fsdp : {false, true}) {
        out.push_back(block_tensor_plan(base, topology, {a, b}, 2, fsdp, x.name + "," + y.name + " 2x2 block"));
      }
    }
  }
}

// Pipelines over each axis (its size the depth), 1F1B and interleaved 1F1B with two chunks a
// device, with every split of the other axes into data (DP or FSDP) and tensor axes inside the
// stages (3D parallelism). Microbatches start at 4 per stage. n (2^n - 2) plans on n axes.
void add_pipeline_splits(const TrainingPlan& base, const TopologySpec& topology, std::vector<PlanCandidate>& out) {
  const int axes = static_cast<int>(topology.axes.size());
  for (int p = 0; p < axes; ++p) {
    std::vector<int> others;
    for (int a = 0; a < axes; ++a) {
      if (a != p) others.push_back(a);
    }
    const int stages = topology.axes[p].size;
    for (int code = 0; code < (1 << others.size()); ++code) {
      std::vector<int> data, tensor;
      for (size_t k = 0; k < others.size(); ++k) ((code >> k) & 1 ? tensor : data).push_back(others[k]);
      for (bool fsdp : {false, true}) {
        if (fsdp && data.empty()) continue;
        for (int v : {1, 2}) {
          PlanCandidate c;
          c.plan = base;
          c.plan.fsdp = fsdp;
          c.plan.data_axes = data;
          c.plan.tensor_axes = tensor;
          c.plan.data_slices.clear();
          c.plan.tensor_slices.clear();
          c.plan.pipeline_axis = p;
          c.plan.schedule = v == 1 ? PipelineSchedule::OneFOneB : PipelineSchedule::Interleaved1F1B;
          c.plan.virtual_stages = v;
          c.plan.microbatches = std::max(base.microbatches, 4 * stages);
          c.plan.microbatches += (stages - c.plan.microbatches % stages) % stages;
          c.label = "PP(" + topology.axes[p].name + (v == 1 ? ", 1F1B)" : ", interleaved x2)");
          if (!data.empty()) c.label += std::string(fsdp ? " + FSDP(" : " + DP(") + axes_label(topology, data) + ")";
          if (!tensor.empty()) c.label += " + TP(" + axes_label(topology, tensor) + ")";
          out.push_back(std::move(c));
        }
      }
    }
  }
}

// Checkpointing policies in the order of what they recompute (none, then attention, then all).
const std::pair<Checkpointing, const char*> kPolicies[] = {
    {Checkpointing::None, "no remat"}, {Checkpointing::Book, "book remat"}, {Checkpointing::Block, "block remat"}};

// A plan's label after its split: " + ZeRO-N" where the search sharded its optimizer, then its
// microbatches and policy.
std::string memory_label(const TrainingPlan& plan, const char* policy) {
  return (plan.zero_stage > 0 ? " + ZeRO-" + std::to_string(plan.zero_stage) : std::string()) + ", " +
         std::to_string(plan.microbatches) + " mb, " + policy;
}

// Whether swapping mesh axes of the same size and wraparound maps the pod onto itself: not
// where perturbations single out chips or links, nor where named axis splits describe the
// axes unevenly (kept conservative: no mirrors then).
bool axis_swaps_are_symmetries(const TopologySpec& topology) {
  return topology.perturbations.empty() && topology.splits.empty();
}

}  // namespace

std::vector<PlanCandidate> axis_splits(const Scenario& scenario) {
  const TrainingWorkload& w = scenario.training();
  const TrainingPlan base = planner_base(w.plan);
  std::vector<PlanCandidate> out;
  add_data_tensor_splits(base, scenario.topology, out);
  add_block_tensor_splits(base, scenario.topology, out);
  add_pipeline_splits(base, scenario.topology, out);
  if (w.model.moe) return with_expert_axes(scenario, std::move(out));
  return out;
}

// Plain data parallelism that does not fit at a microbatch count tries ZeRO-1, then ZeRO-2
// (Megatron's distributed optimizer, and its gradients sharded too) at the same count before
// more microbatches: the same traffic (a ReduceScatter and an AllGather carry an AllReduce's
// bytes) for Adam's moments (8 of 12 bytes a parameter), and under ZeRO-2 the gradients too,
// split over the replicas.
std::vector<PlanCandidate> with_memory_search(const Scenario& scenario, std::vector<PlanCandidate> splits) {
  const auto& w = scenario.training();
  const double sequences = w.plan.global_batch_tokens / w.plan.sequence_length;
  std::vector<PlanCandidate> out;
  for (auto& c : splits) {
    PlanCandidate leanest = c;
    leanest.simulated = false;
    // No layout yet: no memory (plan.csv leaves the cell empty if none is ever built).
    leanest.report.memory.total_bytes = std::numeric_limits<double>::infinity();
    bool fits = false, built = false;
    // The scenario's own zero: is a starting point like its other parallelism keys: searched over.
    const bool zero = !c.plan.fsdp && !c.plan.data_axes.empty() && !w.model.moe;
    const std::vector<int> zero_stages = zero ? std::vector<int>{0, 1, 2} : std::vector<int>{0};
    for (const auto& [policy, name] : kPolicies) {
      bool found = false, divides = true;
      for (int m = std::max(1, c.plan.microbatches); m <= sequences && !found && divides; m *= 2) {
        for (int stage : zero_stages) {
          TrainingPlan plan = c.plan;
          plan.checkpointing = policy;
          plan.microbatches = m;
          plan.zero_stage = stage;
          TrainingLayout layout;
          try {
            layout = training_layout(w.model, plan, scenario.topology);
          } catch (const std::invalid_argument& e) {
            if (stage != zero_stages.front()) continue;   // this split cannot shard its optimizer
            if (!built) leanest.error = e.what();
            divides = false;   // more microbatches do not divide the batch either
            break;
          }
          built = true;
          if (layout.memory.total_bytes < leanest.report.memory.total_bytes) {
            leanest.plan = plan;
            leanest.report.memory = layout.memory;
          }
          if (!layout.fits_hbm) continue;
          PlanCandidate v = c;
          v.plan = plan;
          v.report.memory = layout.memory;   // plan.csv's, where it is not simulated (bounded out)
          v.label += memory_label(plan, name);
          out.push_back(std::move(v));
          found = true;
          break;
        }
      }
      fits = fits || found;
    }
    if (fits) continue;
    leanest.feasible = built;
    if (built) {
      leanest.error.clear();
      leanest.label += memory_label(leanest.plan, "leanest");
    }
    leanest.report.fits_hbm = false;
    out.push_back(std::move(leanest));
  }
  return out;
}

std::string symmetry_key(const TopologySpec& topology, const TrainingPlan& p) {
  auto axis_class = [&](int a) {
    std::string c = std::to_string(topology.axes[a].size) + (topology.axes[a].wraparound ? "w" : "l");
    const auto& host = topology.chip.host_shape;
    if (topology.slices > 1) c += "h" + std::to_string(a < static_cast<int>(host.size()) ? host[a] : 1);
    return c;
  };
  auto group = [&](const std::vector<int>& axes, const std::vector<AxisSlice>& slices) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < axes.size(); ++i) {
      std::string part = axis_class(axes[i]);
      if (!slices.empty()) part += "/" + std::to_string(slices[i].stride) + ":" + std::to_string(slices[i].size);
      parts.push_back(part);
    }
    std::sort(parts.begin(), parts.end());
    std::string out;
    for (const auto& part : parts) out += part + ",";
    return out;
  };
  return "D" + group(p.data_axes, p.data_slices) + "T" + group(p.tensor_axes, p.tensor_slices) + "E" +
         group(p.expert_axes, {}) + "P" + (p.pipeline_axis >= 0 ? axis_class(p.pipeline_axis) : "-") + "F" +
         std::to_string(p.fsdp) + "M" + std::to_string(p.microbatches) + "C" + std::to_string(static_cast<int>(p.checkpointing)) +
         "S" + std::to_string(static_cast<int>(p.schedule)) + "V" + std::to_string(p.virtual_stages) + "Z" +
         std::to_string(p.zero_stage);
}

std::vector<PlanCandidate> without_mirrors(const TopologySpec& topology, std::vector<PlanCandidate> candidates) {
  // The first of each symmetry class is simulated; the others count on it.
  std::vector<PlanCandidate> unique;
  std::map<std::string, size_t> first_of;
  const bool mirrors = axis_swaps_are_symmetries(topology);
  for (auto& c : candidates) {
    if (mirrors && c.feasible && c.report.fits_hbm) {
      const auto [it, fresh] = first_of.try_emplace(symmetry_key(topology, c.plan), unique.size());
      if (!fresh) {
        ++unique[it->second].mirrors;
        continue;
      }
    }
    unique.push_back(std::move(c));
  }
  return unique;
}

}  // namespace podsim
