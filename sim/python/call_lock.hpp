#pragma once
// One podsim call at a time per process. The library was written for a process running one
// command (sweep's cache of file fingerprints, for one, is a function-local map), so calls made
// from several Python threads, which the released GIL would let overlap, take turns instead.
// Take it after releasing the GIL: a thread waiting here must not hold the GIL the running call
// may need (a sweep asks Python about Ctrl-C).
#include <mutex>

namespace podsim::python {

std::mutex& call_lock();

}  // namespace podsim::python
