#pragma once
#include <utility>
#include <vector>

namespace podsim {

// What a chip has in flight, by the slot number a Pending or a Message carries; freed slots
// are reused, so memory follows what is in flight, not what was ever sent.
template <typename T, typename Container = std::vector<T>>
class SlotPool {
 public:
  int add(T value) {
    if (free_.empty()) {
      items_.push_back(std::move(value));
      return static_cast<int>(items_.size() - 1);
    }
    const int slot = free_.back();
    free_.pop_back();
    items_[slot] = std::move(value);
    return slot;
  }
  // Moves the value out and frees its slot.
  T take(int slot) {
    T value = std::move(items_[slot]);
    free_.push_back(slot);
    return value;
  }
  void release(int slot) { free_.push_back(slot); }
  T& operator[](int slot) { return items_[slot]; }
  Container& items() { return items_; }

 private:
  Container items_;
  std::vector<int> free_;
};

}  // namespace podsim
