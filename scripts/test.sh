#!/usr/bin/env bash
# Builds ptprof and runs the whole test suite (unit and integration tests).
#
#   bash scripts/test.sh
#
# Works unattended (CI=true, no terminal, as root or not).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PTPROF_SETUP_TESTS=1 bash scripts/setup.sh

# Which torches the PyTorch tests run on (written by tests/CMakeLists.txt).
echo "test.sh: PyTorch tests run on:"
sed 's/^/  /' build/torch-pythons.txt

# --no-tests=error: finding no tests is a failure, not a pass. CTest's label
# summary at the end counts the tests run on each torch (labels torch<M.m>).
ctest --test-dir build --output-on-failure -j2 --no-tests=error </dev/null
