#!/usr/bin/env bash
# Installs podsim's build and test dependencies from Debian packages (bookworm).
# Runs apt-get through sudo when not root; does nothing for packages already installed.
#   --sanitizers   also what scripts/test-sanitizers.sh needs: clang and its sanitizer runtimes
#                  (libclang-rt-14-dev is only recommended by clang, and we install no recommends)
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config
          libsimgrid-dev libboost-graph-dev libspdlog-dev libyaml-cpp-dev
          catch2 libcli11-dev nlohmann-json3-dev libjemalloc-dev python3-matplotlib
          python3-dev pybind11-dev python3-pybind11 python3-jsonschema python3-yaml zlib1g-dev
          universal-ctags)
for arg in "$@"; do
  case "$arg" in
    --sanitizers) packages+=(clang libclang-rt-14-dev) ;;
    *) echo "install-deps.sh: unknown option $arg (known: --sanitizers)" >&2; exit 2 ;;
  esac
done
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
