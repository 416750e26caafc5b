#pragma once
// A server's paged KV cache (vLLM's PagedAttention block manager, as its v1 scheduler uses it):
// fixed blocks of `block_size` tokens, a sequence holding ceil(tokens / block_size) of them,
// allocated as it grows and freed when it finishes or is preempted. Counts what the serving
// summary reports: peak blocks in use and their time-weighted mean.
//
// Prefix caching (vLLM's automatic prefix caching, as far as requests that declare a shared
// prefix need it): the full blocks of a prefix, once computed, stay cached for the next
// request with that prefix, which starts with them computed. A prefix's blocks are pinned
// while a running sequence uses them; unused, they stay cached but can be evicted, least
// recently used prefix first and from its last block back (a prefix's blocks are a chain:
// a block is a hit only behind hits), when a sequence needs blocks no one holds.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

namespace podsim {

class PagedKvCache {
 public:
  PagedKvCache(long long blocks, int block_size) : blocks_(blocks), block_size_(block_size) {}

  long long blocks() const { return blocks_; }
  int block_size() const { return block_size_; }
  long long used() const { return used_; }              // held by sequences and cached prefixes
  long long free() const { return blocks_ - used_; }
  long long in_use() const { return used_ - evictable_; }   // what running sequences hold or pin
  long long blocks_for(long long tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Grows a sequence holding `held` blocks of its own to hold `tokens`, evicting unused cached
  // prefixes if it must; false (and nothing taken) when even that does not cover it.
  bool grow(long long& held, long long tokens, double now_s) {
    const long long need = blocks_for(tokens) - held;
    if (need <= 0) return true;
    if (need > free() + evictable_) return false;
    if (need > free()) evict(need - free(), now_s);
    set_used(used_ + need, now_s);
    held += need;
    return true;
  }
  void release(long long& held, double now_s) {
    set_used(used_ - held, now_s);
    held = 0;
  }

  // --- prefixes (by id) ---
  // The cached full blocks of `prefix` a new sequence can use, at most `limit`.
  long long cached(int prefix, long long limit) const {
    const auto it = prefixes_.find(prefix);
    return it == prefixes_.end() ? 0 : std::min(it->second.blocks, limit);
  }
  // A running sequence starts (or stops) using `prefix`'s cached blocks: pinned while any does.
  void pin(int prefix, double now_s) {
    Prefix& p = prefixes_[prefix];
    if (p.users++ == 0 && p.blocks > 0) {
      account(now_s);
      lru_.erase({p.unused_since_s, p.order, prefix});
      evictable_ -= p.blocks;
      peak_ = std::max(peak_, in_use());
    }
  }
  void unpin(int prefix, double now_s) {
    Prefix& p = prefixes_.at(prefix);
    if (--p.users > 0) return;
    p.unused_since_s = now_s;
    p.order = order_++;
    if (p.blocks > 0) {
      account(now_s);
      lru_.insert({p.unused_since_s, p.order, prefix});
      evictable_ += p.blocks;
    }
  }
  // A sequence using `prefix` (pinned) has computed its blocks up to `blocks`: those past the
  // cached ones move from its own (`held`) into the cache.
  long long extend(int prefix, long long blocks, long long& held) {
    Prefix& p = prefixes_.at(prefix);
    const long long k = std::min(blocks - p.blocks, held);
    if (k <= 0) return 0;
    p.blocks += k;
    held -= k;
    return k;
  }

  long long peak() const { return peak_; }
  // The integral of blocks in use (held or pinned, not evictable) over time, up to `until_s`.
  double block_seconds(double until_s) const { return block_seconds_ + in_use() * (until_s - since_s_); }

 private:
  struct Prefix {
    long long blocks = 0;   // its leading full blocks, cached
    int users = 0;          // running sequences using them
    double unused_since_s = 0;
    uint64_t order = 0;     // ties in time in the order released
  };

  // Frees `n` blocks of unused cached prefixes, least recently used first, each from its end.
  void evict(long long n, double now_s) {
    while (n > 0 && !lru_.empty()) {
      const auto [since, order, id] = *lru_.begin();
      Prefix& p = prefixes_.at(id);
      const long long k = std::min(n, p.blocks);
      account(now_s);
      p.blocks -= k;
      evictable_ -= k;   // evictable blocks leave the cache: in_use() stays
      used_ -= k;
      n -= k;
      if (p.blocks == 0) lru_.erase(lru_.begin());
    }
  }

  void account(double now_s) {
    block_seconds_ += static_cast<double>(in_use()) * (now_s - since_s_);
    since_s_ = now_s;
  }
  void set_used(long long used, double now_s) {
    account(now_s);
    used_ = used;
    peak_ = std::max(peak_, in_use());
  }

  long long blocks_;
  int block_size_;
  long long used_ = 0, peak_ = 0, evictable_ = 0;
  double block_seconds_ = 0, since_s_ = 0;
  std::map<int, Prefix> prefixes_;
  std::set<std::tuple<double, uint64_t, int>> lru_;   // unused prefixes with blocks
  uint64_t order_ = 0;
};

}  // namespace podsim
