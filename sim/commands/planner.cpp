#include "sim/commands/planner.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <cmath>
#include <cstdio>
#include <map>
#include <spdlog/spdlog.h>

#include "sim/commands/preflight_check.hpp"
#include "sim/commands/scenario_run.hpp"
#include "sim/engine/child_process.hpp"
#include "sim/engine/preflight.hpp"
#include "sim/scenario/units.hpp"

namespace podsim {
namespace {

std::string axes_label(const TopologySpec& topology, const std::vector<int>& axes) {
  std::string out;
  for (int a : axes) out += (out.empty() ? "" : ",") + topology.axes[a].name;
  return out;
}

// An MoE model's candidates: each plan without expert parallelism and with it over each whole
// data axis the experts divide over (tokens are data-parallel across expert ranks, so the
// expert axes are data axes), pipelines included where every layer has experts.
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

std::vector<PlanCandidate> candidates(const Scenario& scenario) {
  const auto& topology = scenario.topology;
  const TrainingPlan& base = scenario.training().plan;
  const int axes = static_cast<int>(topology.axes.size());
  std::vector<PlanCandidate> out;
  // Each axis carries data (bit clear) or tensor (bit set) parallelism: an idle axis would
  // only hold replicas repeating the same work.
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
  // An MoE model's pipeline chunks are alike only when every layer has experts.
  const auto& moe = scenario.training().model.moe;
  if (moe && moe->dense_layers > 0) return with_expert_axes(scenario, std::move(out));
  // Pipelines over each axis (its size the depth), 1F1B and interleaved 1F1B with two chunks
  // a device, with every split of the other axes into data (DP or FSDP) and tensor axes
  // inside the stages (3D parallelism). Microbatches start at 4 per stage.
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
  if (moe) return with_expert_axes(scenario, std::move(out));
  return out;
}

// Checkpointing policies in the order of what they recompute (none, then attention, then all).
const std::pair<Checkpointing, const char*> kPolicies[] = {
    {Checkpointing::None, "no remat"}, {Checkpointing::Book, "book remat"}, {Checkpointing::Block, "block remat"}};

// Each split under each policy with the fewest microbatches that fit, from its layout alone; a
// split that fits under none is kept once, unsimulated, with its leanest memory. Plain data
// parallelism that does not fit at a microbatch count tries ZeRO-1, then ZeRO-2 (Megatron's
// distributed optimizer, and its gradients sharded too) at the same count before more
// microbatches: the same traffic (a ReduceScatter and an AllGather carry an AllReduce's bytes)
// for Adam's moments (8 of 12 bytes a parameter), and under ZeRO-2 the gradients too, split
// over the replicas.
// A plan's label after its split: " + ZeRO-N" where the search sharded its optimizer, then its
// microbatches and policy.
std::string memory_label(const TrainingPlan& plan, const char* policy) {
  return (plan.zero_stage > 0 ? " + ZeRO-" + std::to_string(plan.zero_stage) : std::string()) + ", " +
         std::to_string(plan.microbatches) + " mb, " + policy;
}

std::vector<PlanCandidate> with_memory_search(const Scenario& scenario, std::vector<PlanCandidate> splits) {
  const auto& w = scenario.training();
  const double sequences = w.plan.global_batch_tokens / w.plan.sequence_length;
  std::vector<PlanCandidate> out;
  for (auto& c : splits) {
    PlanCandidate leanest = c;
    leanest.simulated = false;
    leanest.report.memory.total_bytes = 1e300;
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

// Whether swapping mesh axes of the same size and wraparound maps the pod onto itself: not
// where perturbations single out chips or links, nor where named axis splits describe the
// axes unevenly (kept conservative: no mirrors then).
bool axis_swaps_are_symmetries(const TopologySpec& topology) {
  return topology.perturbations.empty() && topology.splits.empty();
}

// A plan's class under the mesh's symmetries: axes of the same size and wraparound swapped
// (and, across slices, of the same extent in a host's block, since hosts share a NIC).
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

void rank(std::vector<PlanCandidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (a.report.fits_hbm != b.report.fits_hbm) return a.report.fits_hbm;
    if (a.simulated != b.simulated) return a.simulated;
    if (!a.simulated) return a.lower_bound_s < b.lower_bound_s;   // bounded plans by their bound
    return a.report.step_time_s < b.report.step_time_s;
  });
}

}  // namespace

// Chip 0's compute in a program: every op runs on every chip; an op whose time varies by
// position counts its shortest.
double compute_lower_bound_s(const Program& program) {
  double sum = 0;
  for (const auto& op : program) {
    if (op.kind != ProgramOpKind::Compute) continue;
    double t = op.compute_s;
    for (double v : op.compute_s_by_position) t = std::min(t, v);
    sum += t * op.repeat;
  }
  return sum;
}

PlannerResult plan_training(const Scenario& scenario,
                            const std::function<void(int finished, int total, double eta_s)>& on_progress,
                            const std::function<void(const PlannerResult&)>& on_candidate, int keep,
                            double budget_s, int jobs) {
  // A model too long to build even one program of is refused before any candidate is made.
  check_program_size(scenario, {});
  PlannerResult result;
  auto all = with_memory_search(scenario, candidates(scenario));
  // Mirror images: the first of each symmetry class is simulated; the others count on it.
  std::vector<PlanCandidate> unique;
  std::map<std::string, size_t> first_of;
  const bool mirrors = axis_swaps_are_symmetries(scenario.topology);
  for (auto& c : all) {
    if (mirrors && c.feasible && c.report.fits_hbm) {
      const auto [it, fresh] = first_of.try_emplace(symmetry_key(scenario.topology, c.plan), unique.size());
      if (!fresh) {
        ++unique[it->second].mirrors;
        continue;
      }
    }
    unique.push_back(std::move(c));
  }
  // Lower bounds first (each program built, not simulated), then the simulations in their
  // order, so the fastest plans are found early and the rest can be bounded out. A slow chip
  // (perturbations) changes a chip's compute: no bound then.
  const bool bounding = keep > 0 && scenario.topology.perturbations.empty();
  std::vector<PlanCandidate*> order;
  for (auto& c : unique) {
    if (!c.feasible || !c.report.fits_hbm) continue;
    try {
      TrainingLayout layout;
      const auto program = training_program(scenario.training().model, c.plan, scenario.topology, layout);
      c.lower_bound_s = compute_lower_bound_s(program);
      if (budget_s > 0) {
        c.estimated_wall_s =
            estimate_simulation(scenario.topology, simulation_settings(scenario), program, Fidelity::Auto).wall_s;
        c.over_budget = c.estimated_wall_s > budget_s;
      }
    } catch (const std::invalid_argument& e) {
      c.feasible = false;
      c.error = e.what();
      continue;
    }
    order.push_back(&c);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const PlanCandidate* a, const PlanCandidate* b) { return a->lower_bound_s < b->lower_bound_s; });
  for (auto& c : unique) {
    if (!c.feasible || !c.report.fits_hbm) result.candidates.push_back(std::move(c));
  }
  int total = static_cast<int>(order.size());
  const auto start = std::chrono::steady_clock::now();
  if (on_progress) on_progress(0, total, -1);
  int finished = 0;
  // Up to `jobs` simulations run side by side, each in its own child process, started and
  // waited on from this one thread (a fork from a threaded process copies locks other threads
  // hold: the -j that forked from worker threads deadlocked a child under ASan). They start
  // ahead of the order but are committed in it: whether a plan is bounded out is decided as
  // one at a time would decide it, from the plans before it, so the output is the same for any
  // `jobs` (a speculative simulation that turns out bounded is discarded). A plan is not
  // started if the plans committed so far bound it already, which the commit then confirms
  // (the fastest steps only improve down the order).
  std::vector<double> fastest;   // committed simulated steps, ascending
  auto surely_bounded = [&](const PlanCandidate& c) {
    return bounding && static_cast<int>(fastest.size()) >= keep && c.lower_bound_s >= fastest[keep - 1];
  };
  struct Outcome {
    bool done = false, ok = false;
    TrainingReport report;
    std::string error;
  };
  struct Running {
    size_t index = 0;
    Program program;
    TrainingLayout layout;
    PendingRun pending;
    ~Running() { cancel_replay(pending.child); }   // only if never finished (an exception)
  };
  std::vector<Outcome> outcomes(order.size());
  std::vector<std::unique_ptr<Running>> running;
  size_t next_start = 0, next_commit = 0;
  const SimulationSettings settings = simulation_settings(scenario);
  while (next_commit < order.size()) {
    while (static_cast<int>(running.size()) < std::max(1, jobs) && next_start < order.size()) {
      const size_t i = next_start++;
      const PlanCandidate& c = *order[i];
      if (c.over_budget || surely_bounded(c)) {
        outcomes[i].done = true;   // the commit lists it
        continue;
      }
      spdlog::debug("simulating plan {}", c.label);
      auto r = std::make_unique<Running>();
      r->index = i;
      try {
        r->program = training_program(scenario.training().model, c.plan, scenario.topology, r->layout);
        r->pending = start_program(scenario.topology, settings, r->program, {});
        running.push_back(std::move(r));
      } catch (const std::invalid_argument& e) {
        outcomes[i].done = true;
        outcomes[i].error = e.what();
      }
    }
    while (next_commit < order.size() && outcomes[next_commit].done) {
      PlanCandidate& c = *order[next_commit];
      Outcome& o = outcomes[next_commit];
      ++next_commit;
      const bool listed = c.over_budget || surely_bounded(c);
      if (c.over_budget) {
        // listed with its estimate
      } else if (surely_bounded(c)) {
        // Every later plan's bound is at least this one's: none can enter the first `keep`.
        c.bounded = true;
      } else if (o.ok) {
        c.report = std::move(o.report);
        c.simulated = true;
        fastest.insert(std::upper_bound(fastest.begin(), fastest.end(), c.report.step_time_s), c.report.step_time_s);
      } else {
        c.feasible = false;
        c.error = std::move(o.error);
      }
      o.report = TrainingReport{};   // committed: its memory is not kept twice
      result.candidates.push_back(std::move(c));
      ++finished;
      if (on_progress) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        on_progress(finished, total, listed ? 0 : elapsed / finished * (total - finished));
      }
      if (on_candidate && !listed) {
        PlannerResult so_far = result;
        rank(so_far.candidates);
        on_candidate(so_far);
      }
    }
    if (running.empty()) continue;
    // Wait for any simulation's result (or its end), then read every one that is ready.
    std::vector<int> results;
    for (const auto& r : running) results.push_back(r->pending.child.result_fd);
    std::vector<bool> ready;
    do {
      ready = wait_readable(results);
    } while (std::find(ready.begin(), ready.end(), true) == ready.end());   // a signal interrupted it
    std::vector<std::unique_ptr<Running>> still;
    for (size_t k = 0; k < running.size(); ++k) {
      if (!ready[k]) {
        still.push_back(std::move(running[k]));
        continue;
      }
      Running& r = *running[k];
      Outcome& o = outcomes[r.index];
      const PlanCandidate& c = *order[r.index];
      try {
        const RunResult run = finish_program(r.pending);
        o.report = training_report({scenario.training().model, c.plan, false, scenario.training().token_budget}, r.layout,
                                   r.program, run);
        o.ok = true;
      } catch (const std::invalid_argument& e) {
        o.error = e.what();
      }
      o.done = true;
    }
    running = std::move(still);
  }
  rank(result.candidates);
  // training.md, FSDP + TP: X_opt = sqrt(B/F * M_X/M_Y * N), with M_X = 2, M_Y = 1 on a 3D
  // mesh (two axes of FSDP, one of TP), as the book takes them (book-cases.md row 46).
  const auto& t = scenario.topology;
  double chips = t.slices;
  for (const auto& a : t.axes) chips *= a.size;
  const double m_x = t.axes.size() >= 3 ? 2 : 1, m_y = 1;
  result.x_opt = std::sqrt(scenario.training().plan.global_batch_tokens / scenario.training().model.d_ff * m_x / m_y * chips);
  result.x_opt_note = "sqrt(B/F * M_X/M_Y * N) with B = " + std::to_string(static_cast<long long>(
                          scenario.training().plan.global_batch_tokens)) +
                      ", F = " + std::to_string(scenario.training().model.d_ff) + ", M_X/M_Y = " +
                      std::to_string(static_cast<int>(m_x / m_y)) + ", N = " + std::to_string(static_cast<long long>(chips));
  return result;
}

std::string planner_table(const Scenario& scenario, const PlannerResult& result, int top) {
  std::string out;
  char line[768];
  int simulated = 0, mirrors = 0, pruned = 0, bounded = 0, over = 0;
  for (const auto& c : result.candidates) {
    simulated += c.simulated;
    mirrors += c.mirrors;
    pruned += c.feasible && !c.simulated && !c.bounded && !c.over_budget;
    bounded += c.bounded;
    over += c.over_budget;
  }
  std::snprintf(line, sizeof line,
                "%s on %s: %d plans simulated (%d more by symmetry, %d pruned as too large for HBM, %d bounded out: "
                "their compute alone is slower than the fastest simulated, %d over the planner's simulation "
                "budget), fastest first\n",
                scenario.training().model.name.c_str(), scenario.name.c_str(), simulated, mirrors, pruned, bounded, over);
  out += line;
  std::snprintf(line, sizeof line, "%-4s %-58s %11s %7s %12s %11s %11s %s\n", "rank", "plan", "step", "MFU",
                "tokens/s/chip", "exposed", "memory", "fits");
  out += line;
  int rank = 0;
  for (const auto& c : result.candidates) {
    if (top > 0 && rank >= top) break;
    ++rank;
    const std::string label = c.label + (c.mirrors > 0 ? " (+" + std::to_string(c.mirrors) + " mirror)" : "");
    if (!c.feasible) {
      std::snprintf(line, sizeof line, "%-4d %-58s impossible: %s\n", rank, label.c_str(), c.error.c_str());
    } else if (c.over_budget) {
      std::snprintf(line, sizeof line, "%-4d %-58s >= %8s (not simulated: about %s to simulate)\n", rank, label.c_str(),
                    human_time(c.lower_bound_s).c_str(), human_time(c.estimated_wall_s).c_str());
    } else if (c.bounded) {
      std::snprintf(line, sizeof line, "%-4d %-58s >= %8s (compute alone; not simulated)\n", rank, label.c_str(),
                    human_time(c.lower_bound_s).c_str());
    } else if (!c.simulated) {
      std::snprintf(line, sizeof line, "%-4d %-58s %11s %7s %12s %11s %11s NO (not simulated)\n", rank, label.c_str(),
                    "-", "-", "-", "-", human_bytes(c.report.memory.total_bytes).c_str());
    } else {
      std::snprintf(line, sizeof line, "%-4d %-58s %11s %6.1f%% %12.0f %11s %11s %s\n", rank, label.c_str(),
                    human_time(c.report.step_time_s).c_str(), 100 * c.report.mfu, c.report.tokens_per_s_per_chip,
                    human_time(c.report.exposed_comm_s).c_str(), human_bytes(c.report.memory.total_bytes).c_str(),
                    c.report.fits_hbm ? "yes" : "NO");
    }
    out += line;
  }
  if (top > 0 && static_cast<int>(result.candidates.size()) > top) {
    std::snprintf(line, sizeof line, "... %zu more (plan.csv with -o lists them all)\n", result.candidates.size() - top);
    out += line;
  }
  std::snprintf(line, sizeof line, "book's optimal FSDP degree X_opt = %.0f (%s)\n", result.x_opt, result.x_opt_note.c_str());
  out += line;
  if (!result.candidates.empty() && result.candidates[0].simulated) {
    const auto& best = result.candidates[0];
    auto degree = [&](const std::vector<int>& axes, const std::vector<AxisSlice>& slices) {
      int d = 1;
      for (size_t i = 0; i < axes.size(); ++i) {
        d *= !slices.empty() && slices[i].size != 0 ? slices[i].size : scenario.topology.axes[axes[i]].size;
      }
      return d;
    };
    const int data = degree(best.plan.data_axes, best.plan.data_slices);
    const int tensor = degree(best.plan.tensor_axes, best.plan.tensor_slices);
    std::snprintf(line, sizeof line, "simulated winner: %s (data degree %d, tensor degree %d)\n", best.label.c_str(), data,
                  tensor);
    out += line;
    if (best.report.steps_to_train > 0) {
      out += "its run: " + time_to_train_text(best.report, scenario.topology.chip.chip_hour_price_usd) + "\n";
    }
  }
  return out;
}

std::string planner_csv(const PlannerResult& result) {
  std::string out =
      "rank,plan,feasible,simulated,mirrors,microbatches,checkpointing,step_time_s,mfu,hfu,tokens_per_s_per_chip,"
      "exposed_comm_s,memory_per_chip_bytes,fits_hbm,lower_bound_s,bounded,estimated_wall_s,over_budget,"
      "time_to_train_days,training_cost_usd,error\n";
  int rank = 0;
  char buf[512];
  for (const auto& c : result.candidates) {
    ++rank;
    const char* policy = c.plan.checkpointing == Checkpointing::None   ? "none"
                         : c.plan.checkpointing == Checkpointing::Book ? "book"
                                                                       : "block";
    std::snprintf(buf, sizeof buf, "%d,\"%s\",%s,%s,%d,%d,%s,%.9g,%.6f,%.6f,%.3f,%.9g,%.0f,%s,", rank, c.label.c_str(),
                  c.feasible ? "true" : "false", c.simulated ? "true" : "false", c.mirrors, c.plan.microbatches, policy,
                  c.report.step_time_s, c.report.mfu, c.report.hfu, c.report.tokens_per_s_per_chip,
                  c.report.exposed_comm_s, c.report.memory.total_bytes, c.report.fits_hbm ? "true" : "false");
    out += buf;
    std::snprintf(buf, sizeof buf, "%.9g,%s,%.3g,%s,", c.lower_bound_s, c.bounded ? "true" : "false",
                  c.estimated_wall_s, c.over_budget ? "true" : "false");
    out += buf;
    // With workload.token_budget: the run's days and, at the chip-hour price, its cost (empty
    // cells for plans not simulated, or without a budget).
    if (c.simulated && c.report.steps_to_train > 0) {
      std::snprintf(buf, sizeof buf, "%.6g,", c.report.time_to_train_s / 86400);
      out += buf;
      if (c.report.training_cost_usd > 0) {
        std::snprintf(buf, sizeof buf, "%.6g", c.report.training_cost_usd);
        out += buf;
      }
      out += ",";
    } else {
      out += ",,";
    }
    out += "\"" + c.error + "\"\n";
  }
  return out;
}

void require_training(const Scenario& scenario) {
  if (scenario.kind() != WorkloadKind::Training) {
    throw InputError({scenario.path, 0, 0}, "workload.kind", workload_kind_name(scenario.kind()),
                     "podsim plan needs a training workload (kind: training)");
  }
}

void require_some_plan_fits(const Scenario& scenario, const PlannerResult& result) {
  double smallest = 1e300;
  bool any_fits = false;
  for (const auto& c : result.candidates) {
    if (!c.feasible) continue;
    any_fits = any_fits || c.report.fits_hbm;
    smallest = std::min(smallest, c.report.memory.total_bytes);
  }
  if (!any_fits) {
    throw InputError({scenario.path, 0, 0}, "workload.model", scenario.training().model.name,
                     "fits nowhere on this pod: the leanest plan needs " + human_bytes(smallest) +
                         " per chip, more than " + human_bytes(scenario.topology.chip.hbm_bytes) + " of HBM");
  }
}

}  // namespace podsim
