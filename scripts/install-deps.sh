#!/usr/bin/env bash
# Installs podsim's build and test dependencies from Debian packages (bookworm).
# Runs apt-get through sudo when not root; does nothing for packages already installed.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config
          libsimgrid-dev libboost-graph-dev libspdlog-dev libyaml-cpp-dev
          catch2 libcli11-dev nlohmann-json3-dev libjemalloc-dev python3-matplotlib
          python3-dev pybind11-dev python3-pybind11 zlib1g-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "podsim: all dependencies are installed"
  exit 0
fi
echo "podsim: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
