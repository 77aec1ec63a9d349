#!/usr/bin/env bash
# Builds ptprof and runs the whole test suite (unit and integration tests).
#
#   bash scripts/test.sh
#
# Works unattended (CI=true, no terminal, as root or not).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

# --no-tests=error: finding no tests is a failure, not a pass.
ctest --test-dir build --output-on-failure -j2 --no-tests=error </dev/null
