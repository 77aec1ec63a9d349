#!/usr/bin/env bash
# Builds ptprof and runs the whole test suite: unit and integration tests
# (CTest, in build/), then the same under sanitizers (scripts/sanitize.sh:
# build-asan, build-tsan) and each fuzz target for a bounded time
# (scripts/fuzz.sh, build-fuzz; PTPROF_TEST_FUZZ_SECONDS, default 60).
#
#   bash scripts/test.sh
#
# Every part runs even when an earlier one failed; the exit status is
# non-zero if any did. Each part prints how long it took.
# Works unattended (CI=true, no terminal, as root or not).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PTPROF_SETUP_TESTS=1 bash scripts/setup.sh

# Which torches the PyTorch tests run on (written by tests/CMakeLists.txt).
echo "test.sh: PyTorch tests run on:"
sed 's/^/  /' build/torch-pythons.txt

# --no-tests=error: finding no tests is a failure, not a pass. CTest's label
# summary at the end counts the tests run on each torch (labels torch<M.m>).
status=0
t0=$SECONDS
ctest --test-dir build --output-on-failure -j2 --no-tests=error </dev/null || status=1
echo "test.sh: test suite: $((SECONDS - t0)) s"

t0=$SECONDS
bash scripts/sanitize.sh || status=1
echo "test.sh: sanitizers: $((SECONDS - t0)) s"

t0=$SECONDS
bash scripts/fuzz.sh "${PTPROF_TEST_FUZZ_SECONDS:-60}" || status=1
echo "test.sh: fuzzing: $((SECONDS - t0)) s"
exit $status
