#!/usr/bin/env bash
# Installs everything vprof needs to build and test, from Debian's packages.
# Idempotent: when every package is there it installs nothing and prints one line.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  clang-14 llvm-14-dev libclang-14-dev libclang-cpp14-dev   # the instrumenter (LLVM 14-16 accepted)
  libgtest-dev libgmock-dev libbenchmark-dev                # tests and benchmarks
  libclang-rt-14-dev                                        # clang's sanitizers: instrumented programs run under ASan
  libeigen3-dev libfmt-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
  dpkg-dev                                                  # apt-get source, for real targets
  chromium python3                                          # the HTML report, checked in a browser (tests/report)
)
# 32-bit C headers: an instrumented file must build with -m32 as the original
# does (tests/instrumenter/isolation_test.cc; skipped, saying so, without them).
if [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ]; then packages+=(libc6-dev-i386); fi

missing=()
for p in "${packages[@]}"; do
  [[ $p == \#* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
