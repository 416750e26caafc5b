#!/usr/bin/env bash
# Configures and builds podsim (Release-like, with debug info) into ./build.
#   scripts/build.sh              # everything: the CLI, the Python module, the tests
#   scripts/build.sh podsim ...   # only these CMake targets (quickstart.sh builds the CLI alone)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [ $# -gt 0 ]; then
  cmake --build build -j "$jobs" --target "$@"
else
  cmake --build build -j "$jobs"
fi
