#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdint>

namespace podsim {

// The simulation process's side of ReplayOptions::progress: the work done so far, written to
// a pipe the calling process reads, at most once per interval of wall time. The pipe does not
// block: a report that does not fit is dropped, the next one carries the count.
class ProgressWriter {
 public:
  ProgressWriter(int fd, double interval_s) : fd_(fd), interval_(interval_s), last_(std::chrono::steady_clock::now()) {}

  void add(uint64_t work) {
    done_ += work;
    if (fd_ < 0) return;
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_).count() < interval_) return;
    last_ = now;
    // Eight bytes are written whole or not at all (a pipe's writes up to PIPE_BUF are atomic).
    [[maybe_unused]] const ssize_t n = ::write(fd_, &done_, sizeof done_);
  }

 private:
  int fd_;
  double interval_;
  std::chrono::steady_clock::time_point last_;
  uint64_t done_ = 0;
};

}  // namespace podsim
