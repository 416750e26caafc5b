#pragma once
// Ctrl-C during a sweep or compare. Python's SIGINT handler only sets a flag, which nothing
// reads while C++ waits for point processes; the wait asks stop_on_interrupt
// (SweepOptions::stop_requested) before each wait and when a signal interrupts one. It runs
// Python's handlers and stops the sweep when one raised (KeyboardInterrupt), killing the points
// under way (recorded as interrupted, re-run next time). The exception stays set;
// raise_if_interrupted throws it once the call has the GIL back.
namespace podsim::python {

bool stop_on_interrupt();      // called without the GIL
void raise_if_interrupted();   // called with it

}  // namespace podsim::python
