#include "sim/python/call_lock.hpp"

namespace podsim::python {

std::mutex& call_lock() {
  static std::mutex lock;
  return lock;
}

}  // namespace podsim::python
