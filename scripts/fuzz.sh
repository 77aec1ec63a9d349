#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, Clang with ASan and UBSan, in
# build-fuzz/) and fuzzes each for SECONDS (default 600), targets side by side.
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]     targets: fuzz_trace_reader fuzz_region fuzz_bridge_info fuzz_trigger
#
# Starts from the corpus in the repository (tests/fuzz/corpus/TARGET/, never
# written here); what the fuzzer adds goes to build-fuzz/corpus/TARGET/. A
# crash, a leak or a hang stops that target and fails the script; the input is
# kept as build-fuzz/findings/TARGET-crash-*: fix the cause, then add the
# input to tests/fuzz/corpus/TARGET/ so that every later run replays it
# (scripts/test.sh runs these targets for 60 s each; the ordinary build
# replays the corpus as tests fuzz.replay.*).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds=${1:-600}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(fuzz_trace_reader fuzz_region fuzz_bridge_info fuzz_trigger)
[[ "$seconds" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2; }

CLANGXX=${CLANGXX:-clang++-14}
CLANG=${CLANG:-clang-14}
command -v "$CLANGXX" >/dev/null || { echo "fuzz.sh: $CLANGXX not found (scripts/setup.sh with PTPROF_SETUP_TESTS=1 installs it)" >&2; exit 1; }

start=$SECONDS
mkdir -p build-fuzz
# A unity build, as scripts/sanitize.sh's: the libraries' files a few at a time.
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_C_COMPILER="$CLANG" -DCMAKE_CXX_COMPILER="$CLANGXX" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
  -DPTPROF_BUILD_TESTS=OFF -DPTPROF_BUILD_FUZZERS=ON >build-fuzz/configure.log 2>&1 ||
  { cat build-fuzz/configure.log; echo "fuzz.sh: configuring build-fuzz failed" >&2; exit 1; }
cmake --build build-fuzz -j"$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}"
echo "fuzz.sh: built in $((SECONDS - start)) s"

mkdir -p build-fuzz/findings
pids=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: a bounded
  # launcher must not need gigabytes for a bad region.
  build-fuzz/bin/"$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/findings/$t-" \
    "build-fuzz/corpus/$t" "tests/fuzz/corpus/$t" >"build-fuzz/$t.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if wait "${pids[$i]}"; then
    echo "fuzz.sh: $t: no finding in ${seconds} s ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' "build-fuzz/$t.log" | grep -o '[0-9]*$') inputs)"
  else
    status=1
    echo "fuzz.sh: $t: FINDING (log: build-fuzz/$t.log); input kept in build-fuzz/findings/:" >&2
    grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written|.*runtime error)' "build-fuzz/$t.log" | head -20 >&2 || true
  fi
done
echo "fuzz.sh: done in $((SECONDS - start)) s"
exit $status
