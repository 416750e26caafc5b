#pragma once
// A table over batch sizes 1..n filled from replays of a few of them (serving_costs.cpp: the
// decode table of a server, one row per batch size it can run).
//
// Replayed quantities are flat in the batch where the hop latency floors every message and
// affine where every message is bandwidth-bound with the same pattern (and a roofline is
// affine between its kinks). So a grid of 17 batch sizes is replayed; an interval whose ends
// replay the same is filled with that; else its midpoint is replayed, and if the three lie on
// a line the interval is filled by interpolation; else both halves are resolved the same way.
// About log2(n) rounds of replays instead of one per batch size. It is a shortcut, not an
// identity: test_serving_costs.cpp checks filled tables against replaying every batch size on
// generated cases.
#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

namespace podsim {

// Two replayed times agree to a picosecond (float rounding of the same schedule).
inline bool same_time(double a, double b) { return std::fabs(a - b) <= 1e-12 + 1e-9 * std::fabs(a); }

// `replay(batches)` replays those batch sizes and stores them where `get(b)` finds them;
// `set(b, value)` stores a filled one. `same(a, b)`: two rows replay the same;
// `interpolate(a, b, lo, hi, x)`: the row of x on the line through rows lo and hi (nullopt if
// the rows cannot be mixed).
template <class Row, class Replay, class Get, class Set, class Same, class Interpolate>
void fill_batch_table(int n, Replay replay, Get get, Set set, Same same, Interpolate interpolate) {
  if (n <= 17) {
    std::vector<int> all;
    for (int b = 1; b <= n; ++b) all.push_back(b);
    replay(all);
    return;
  }
  std::vector<int> grid;
  for (int k = 0; k <= 16; ++k) grid.push_back(1 + static_cast<int>(std::lround((n - 1) * k / 16.0)));
  grid.erase(std::unique(grid.begin(), grid.end()), grid.end());
  replay(grid);
  std::vector<std::pair<int, int>> open;
  for (size_t i = 0; i + 1 < grid.size(); ++i) open.emplace_back(grid[i], grid[i + 1]);
  while (!open.empty()) {
    std::vector<std::pair<int, int>> need_mid;
    for (auto [lo, hi] : open) {
      if (hi - lo < 2) continue;
      if (same(get(lo), get(hi))) {
        const Row a = get(lo);
        for (int m = lo + 1; m < hi; ++m) set(m, a);
      } else {
        need_mid.emplace_back(lo, hi);
      }
    }
    std::vector<int> mids;
    for (auto [lo, hi] : need_mid) mids.push_back((lo + hi) / 2);
    if (!mids.empty()) replay(mids);
    open.clear();
    for (auto [lo, hi] : need_mid) {
      const int mid = (lo + hi) / 2;
      const Row a = get(lo), b = get(hi), m = get(mid);
      if (std::optional<Row> line = interpolate(a, b, lo, hi, mid); line && same(*line, m)) {
        for (int x = lo + 1; x < hi; ++x)
          if (x != mid) set(x, *interpolate(a, b, lo, hi, x));
      } else {
        open.emplace_back(lo, mid);
        open.emplace_back(mid, hi);
      }
    }
  }
}

}  // namespace podsim
