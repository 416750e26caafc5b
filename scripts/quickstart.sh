#!/usr/bin/env bash
# From a fresh Debian machine: install dependencies, build, and run the default scenario
# (the book's v5e 8x4 AllGather), printing a summary and writing out/default/trace.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The CLI and the plot scripts beside it only: the tests and the Python module (scripts/test.sh
# builds them) are most of the build's time.
scripts/build.sh podsim podsim_scripts
build/podsim run scenarios/v5e_8x4_allgather_y.yaml -o out/default
echo "open out/default/trace.json in https://ui.perfetto.dev"
