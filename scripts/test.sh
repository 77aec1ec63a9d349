#!/usr/bin/env bash
# Builds ptprof and runs the whole test suite: the house rules (scripts/lint.sh:
# clang-format, clang-tidy (only what changed since a remembered clean
# result) and ruff over the Python), unit and integration tests (CTest, in
# build/, the Release build users get), the wheel (scripts/wheel.sh, tests/install/test_wheel.py:
# installed into fresh virtual environments), the GPU check's dry run from
# that wheel (scripts/gpu-check.sh --dry-run), then the same under sanitizers (scripts/sanitize.sh:
# build-asan, build-tsan) and each fuzz target for a bounded time
# (scripts/fuzz.sh, build-fuzz; PTPROF_TEST_FUZZ_SECONDS, default 60).
#
#   bash scripts/test.sh
#
# Every part runs even when an earlier one failed; the exit status is
# non-zero if any did, and the last lines name them (and CTest's failed
# tests). Each part prints how long it took.
# Works unattended (CI=true, no terminal, as root or not).
#
# A test that cannot run here (no Chromium, no HTA, no mount namespace, ...)
# is reported by CTest as skipped ("Not Run"), never as passed, and counted
# at the end. With CI set (CI=true) a skip is a failure: setup.sh installs
# what the tests need (PTPROF_SETUP_TESTS=1: protoc, Chromium, Clang, HTA in
# .venv, a C compiler); what it cannot install is the CUDA 13 toolkit in
# /usr/local/cuda and mount namespaces (root, or unprivileged user
# namespaces), which the machine must provide.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

t0=$SECONDS
PTPROF_SETUP_TESTS=1 bash scripts/setup.sh
echo "test.sh: setup: $((SECONDS - t0)) s"

# Which torches the PyTorch tests run on (written by tests/CMakeLists.txt).
echo "test.sh: PyTorch tests run on:"
sed 's/^/  /' build/torch-pythons.txt

# What the machine must provide itself; missing, some tests skip (under CI, fail).
[[ -f /usr/local/cuda/include/cupti.h && -e /usr/local/cuda/lib64/libcudart.so ]] ||
  echo "test.sh: warning: no CUDA 13 toolkit with CUPTI in /usr/local/cuda: its tests are skipped or not built"
if [[ $(id -u) -eq 0 ]]; then ns=(unshare -m true); else ns=(unshare -r -m true); fi
"${ns[@]}" 2>/dev/null || echo "test.sh: warning: no private mount namespace (${ns[*]} failed): its tests are skipped"

# The parts that failed, repeated at the very end: a CI log is often read
# from its tail, and the suite's own failures scroll far above it.
failed=()
# Lint is a stage of its own, not a CTest test with a time limit: on a loaded
# machine it takes longer, it does not fail.
t0=$SECONDS
bash scripts/lint.sh build || failed+=(lint)
echo "test.sh: lint: $((SECONDS - t0)) s"

# --no-tests=error: finding no tests is a failure, not a pass. CTest's label
# summary at the end counts the tests run on each torch (labels torch<M.m>);
# its list of tests that did not run names the skipped ones ("(Skipped)").
t0=$SECONDS
log=build/Testing/test-sh-ctest.log
mkdir -p build/Testing
ctest --test-dir build --output-on-failure -j2 --no-tests=error </dev/null 2>&1 | tee "$log" || failed+=("test suite")
echo "test.sh: test suite: $((SECONDS - t0)) s"
skipped=$(grep -c -E '^[[:space:]]*[0-9]+ - .*\(Skipped\)$' "$log" || true)
echo "test.sh: $skipped tests skipped (listed above under \"did not run\")"

# The wheel as users install it: built with a bridge prebuilt for pip's torch
# only (so Debian's exercises the on-demand build), installed into fresh
# virtual environments with nothing of the checkout on any path.
t0=$SECONDS
wheel=""
# (Its output goes to a file with tee, not to /dev/stderr: reopening a
# redirected stderr truncates the file it names.)
mkdir -p build
if bash scripts/wheel.sh "$PWD/.venv/bin/python" | tee build/wheel-sh.log; then
  wheel=$(tail -n 1 build/wheel-sh.log)
  /usr/bin/python3 tests/install/test_wheel.py "$wheel" </dev/null || failed+=("wheel install test")
else
  failed+=("wheel build")
fi
echo "test.sh: wheel: $((SECONDS - t0)) s"

# scripts/gpu-check.sh from that wheel, all but what needs a GPU: the install
# offline into a fresh venv, the bridge, the workloads on the CPU, compare.py
# on canned GPU outputs (docs/gpu-check.md). Without a wheel it cannot run:
# a failure, not a skip.
t0=$SECONDS
if [[ -n $wheel ]]; then
  bash scripts/gpu-check.sh --dry-run --wheel "$wheel" --python "$PWD/.venv/bin/python" </dev/null || failed+=("gpu-check dry run")
else
  echo "test.sh: gpu-check dry run: no wheel (its build failed above): failed"
  failed+=("gpu-check dry run")
fi
echo "test.sh: gpu-check dry run: $((SECONDS - t0)) s"

t0=$SECONDS
bash scripts/sanitize.sh || failed+=(sanitizers)
echo "test.sh: sanitizers: $((SECONDS - t0)) s"

t0=$SECONDS
bash scripts/fuzz.sh "${PTPROF_TEST_FUZZ_SECONDS:-60}" || failed+=(fuzzing)
echo "test.sh: fuzzing: $((SECONDS - t0)) s"
echo "test.sh: total: $SECONDS s"
if ((${#failed[@]})); then
  echo "test.sh: FAILED: $(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
  # CTest's own list of the failed tests, so the tail of the log names them.
  sed -n '/^The following tests FAILED:/,/^Errors while running CTest/p' "$log"
  # And what the sanitizers found (scripts/sanitize.sh writes it).
  if [[ -s build/sanitize-failures.txt ]]; then cat build/sanitize-failures.txt; fi
  exit 1
fi
echo "test.sh: every part passed"
