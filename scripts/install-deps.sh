#!/usr/bin/env bash
# Installs the Debian packages pagoda needs, only those missing. Usage:
#   scripts/install-deps.sh build   # compile and run
#   scripts/install-deps.sh test    # + sanitizers, fuzzing, test oracles, server test tools
set -euo pipefail

BUILD_PKGS=(
  cmake ninja-build g++ pkg-config make
  libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libpcre2-dev libxxhash-dev
  libicu-dev
  libhwy-dev libdnnl-dev ocl-icd-opencl-dev
  libboost1.81-dev prometheus-cpp-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenmpi-dev openmpi-bin
)
TEST_PKGS=(
  clang-14 libclang-rt-14-dev clang-format-14 g++-aarch64-linux-gnu qemu-user-static
  python3 python3-numpy python3-jinja2 python3-torch python3-jsonschema python3-rfc3987
  nodejs npm prometheus curl chromium
)

pkgs=("${BUILD_PKGS[@]}")
if [[ "${1:-build}" == "test" ]]; then
  pkgs+=("${TEST_PKGS[@]}")
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js may come from outside Debian (a preinstalled node with its own npm): accept it.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do
    [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p")
  done
  missing=("${filtered[@]+"${filtered[@]}"}")
fi

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
