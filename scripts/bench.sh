#!/usr/bin/env bash
# Pod-scale speed benchmark (not a test): wall time, peak RSS and simulated messages.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/podsim ] || scripts/build.sh
build/podsim bench --compare-naive
