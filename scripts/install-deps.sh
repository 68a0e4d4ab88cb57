#!/usr/bin/env bash
# Installs the Debian 12 packages nfsx needs to build, test and benchmark,
# skipping those already present. Safe to run repeatedly.
set -euo pipefail

PKGS=(
  # build
  g++ cmake ninja-build pkg-config clang-format
  # libraries (see README "Dependencies" for why each is here)
  libfmt-dev libspdlog-dev libssl-dev libcli11-dev libfuse3-dev fuse3
  libgtest-dev libgmock-dev libbenchmark-dev libnfs-dev
  # real peers used by the tests and benchmarks
  libnfs-utils nfs-ganesha nfs-ganesha-vfs nfs-ganesha-mem iproute2
  # ordinary programs the FUSE tests run on the mount
  tar rsync git sqlite3 fio
  # libFuzzer and the sanitizer runtimes: clang 19, the first clang for which libstdc++ 12
  # defines std::expected (see fuzz/run.sh)
  clang-19 libclang-rt-19-dev
  # plots for bench/compare.sh
  gnuplot-nox
)

missing=()
for p in "${PKGS[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 update
"${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${missing[@]}"
