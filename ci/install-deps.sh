#!/usr/bin/env bash
# Installs the Debian 12 packages crashsim builds with (only those missing). Run as root.
set -euo pipefail
# clang-14 and its sanitizer runtime build the asan and fuzz presets; ccache keeps compiled
# objects outside the clone (ci/test.sh), so a second run compiles next to nothing; python3 runs
# the open harness's test-subject runtime (open/subject), whose tests fail without it; nodejs
# (>= 20, with its headers in /usr/include/node) and npm run the LangGraph.js example
# (ci/langgraph-sweep.sh). npm only when no npm is on PATH: NodeSource's nodejs ships its own
# and conflicts with Debian's npm package.
pkgs=(cmake ninja-build g++ clang-14 libclang-rt-14-dev ccache pkg-config git clang-format
      libsqlite3-dev librapidcheck-dev libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libboost1.81-dev libboost-filesystem1.81-dev
      libssl-dev libcli11-dev libfmt-dev libicu-dev python3 nodejs)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "crashsim: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
