#!/usr/bin/env bash
# The whole test suite: install missing packages, configure + build with the default preset
# (-Wall -Wextra -Werror), run every ctest test (unit, crashunit, property, crash).
set -euo pipefail
cd "$(dirname "$0")/.."
./ci/install-deps.sh
cmake --preset default
cmake --build --preset default -j "$(nproc)"
ctest --preset default
