#pragma once
// A server's paged KV cache (vLLM's PagedAttention block manager, as its v1 scheduler uses it):
// fixed blocks of `block_size` tokens, a sequence holding ceil(tokens / block_size) of them,
// allocated as it grows and freed whole when it finishes or is preempted. Counts what the
// serving summary reports: peak blocks in use and their time-weighted mean.
#include <cstdint>

namespace podsim {

class PagedKvCache {
 public:
  PagedKvCache(long long blocks, int block_size) : blocks_(blocks), block_size_(block_size) {}

  long long blocks() const { return blocks_; }
  int block_size() const { return block_size_; }
  long long used() const { return used_; }
  long long free() const { return blocks_ - used_; }
  long long blocks_for(long long tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  // Grows a sequence holding `held` blocks to hold `tokens`; false (and nothing taken) when the
  // free blocks do not cover it.
  bool grow(long long& held, long long tokens, double now_s) {
    const long long need = blocks_for(tokens) - held;
    if (need <= 0) return true;
    if (need > free()) return false;
    set_used(used_ + need, now_s);
    held += need;
    return true;
  }
  void release(long long& held, double now_s) {
    set_used(used_ - held, now_s);
    held = 0;
  }

  long long peak() const { return peak_; }
  // The integral of blocks in use over time, up to the last change.
  double block_seconds(double until_s) const { return block_seconds_ + used_ * (until_s - since_s_); }

 private:
  void set_used(long long used, double now_s) {
    block_seconds_ += static_cast<double>(used_) * (now_s - since_s_);
    since_s_ = now_s;
    used_ = used;
    if (used_ > peak_) peak_ = used_;
  }

  long long blocks_;
  int block_size_;
  long long used_ = 0, peak_ = 0;
  double block_seconds_ = 0, since_s_ = 0;
};

}  // namespace podsim
