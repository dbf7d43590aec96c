#!/usr/bin/env bash
# The open harness on a runtime crashsim did not build (issue #48): LangGraph.js, installed from
# the npm registry at the versions of examples/langgraph-js/package-lock.json, swept on one
# scenario against its baseline. Exit 0 when every failure is a known finding of the baseline
# and every known finding still fails; 1 on a change (a new failure, or a finding that
# disappeared: update the baseline); 2 on a set-up or input error.
#
#   ./ci/langgraph-sweep.sh [OUT_DIR] [crashsim sweep options…]
#
# OUT_DIR defaults to out/langgraph-js. Without options it sweeps bash-touch-marker at its model
# and tool points (7 cases, O5 on the first hit of each point: 12 case runs; the known
# at-least-once finding TE#1 included): the S points of LangGraph.js are all before its first
# model request (docs/open-harness.md, "LangGraph.js, swept") and are left to the full sweep.
# Any option replaces the selection (`--scenario write-config-port`).
# Needs node (>= 20) and npm (ci/install-deps.sh installs them when missing) and the release
# build of crashsim, crashsim-tool-server and the barrier interposer (built here, warm in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/langgraph-js
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  out=$1
  shift
fi
[ $# -gt 0 ] || set -- --scenario bash-touch-marker --failpoint MQ --failpoint MA --failpoint TC \
  --failpoint TE --failpoint TR
./ci/install-deps.sh
if ! { cmake --preset release -DCRASHSIM_WERROR="${CRASHSIM_WERROR:-OFF}" >/dev/null &&
  cmake --build --preset release -j "$(nproc)" \
    --target crashsim crashsim-tool-server crashsim_barrier_interposer; }; then
  echo "ci/langgraph-sweep.sh: the release build failed" >&2
  exit 2
fi
example=examples/langgraph-js
loads() { (cd "$example" && node -e "require('better-sqlite3'); import('@langchain/langgraph')" \
  >/dev/null 2>&1); }
# An installed node_modules is kept outside the clone, as ccache keeps objects, keyed by the
# lockfile, the Node version and the machine (better-sqlite3 is a native module): a fresh clone
# copies it (about 2 s) instead of running npm ci (about 20 s warm). CRASHSIM_NODE_CACHE=off
# disables it.
cache_root=${CRASHSIM_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/crashsim/node_modules}
key=$( (cat "$example/package-lock.json"; node --version; uname -m) | sha256sum | cut -c1-16)
cached=$cache_root/langgraph-js-$key
if [ "$cache_root" != off ] && [ ! -d "$example/node_modules" ] && [ -d "$cached" ]; then
  cp -a "$cached" "$example/node_modules"
  loads || rm -rf "$example/node_modules" "$cached"
fi
# npm ci at the locked versions when node_modules is missing or does not load. better-sqlite3 has
# no prebuilt binary reachable here: it builds from source against the headers that ship with
# Node (/usr/include/node), through ccache when installed.
if ! loads; then
  echo "ci/langgraph-sweep.sh: npm ci in $example"
  cc=${CC:-cc}
  cxx=${CXX:-c++}
  if command -v ccache >/dev/null; then
    cc="ccache $cc"
    cxx="ccache $cxx"
  fi
  if ! (cd "$example" && CC="$cc" CXX="$cxx" npm_config_nodedir=/usr \
    npm_config_build_from_source=true npm ci --no-audit --no-fund --loglevel=error) || ! loads; then
    echo "ci/langgraph-sweep.sh: npm ci failed in $example" >&2
    exit 2
  fi
  if [ "$cache_root" != off ]; then
    mkdir -p "$cache_root"
    rm -rf "$cached.tmp.$$"
    cp -a "$example/node_modules" "$cached.tmp.$$" && mv -T "$cached.tmp.$$" "$cached" 2>/dev/null ||
      rm -rf "$cached.tmp.$$"
  fi
fi
rm -rf "$out"
mkdir -p "$out"
t0=$(date +%s)
rc=0
./build/release/harness/crashsim sweep --runtime "$example/runtime.json" \
  --baseline "$example/baseline.json" --out "$out" "$@" || rc=$?
echo "ci/langgraph-sweep.sh: the sweep took $(($(date +%s) - t0)) s, exit $rc"
exit "$rc"
