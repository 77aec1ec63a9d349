#!/usr/bin/env bash
# Builds ptprof with sanitizers (GCC) and runs the tests they watch:
#
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer: every unit test
#               (the C test programs under the real `ptprof run`, agent
#               preloaded; in shards side by side), the fuzz corpus replays
#               and the torch-free
#               integration tests (fault injection, the Python module).
#   build-tsan  ThreadSanitizer: the ring and collector tests, the report's
#               file pool (several threads decoding, results in file order),
#               and the launcher tests that run the forking, multi-threaded C
#               test programs under `ptprof run`.
#
#   bash scripts/sanitize.sh [asan] [tsan]     (default: both)
#
# The agent is instrumented too; `ptprof run` of a sanitizer build preloads
# the sanitizer's runtime ahead of it (launcher/process/sanitizer_runtime.cpp), so an
# uninstrumented target (a shell, Python) runs it as well. Python targets
# leak by design, so leak checking is off in the processes of integration
# tests (ASAN_OPTIONS detect_leaks=0 there), and on in the unit tests.
# Any finding fails the run. Prints the time of each step.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

which=("$@")
((${#which[@]})) || which=(asan tsan)
JOBS=$(nproc 2>/dev/null || echo 2)
status=0

# What failed, with the findings' lines, for test.sh to repeat at the end of
# its log (a CI log is read from its tail, where only part of it may be kept).
FAILURES=build/sanitize-failures.txt
mkdir -p build
: >"$FAILURES"

step() {  # step NAME COMMAND...: runs it, prints how long it took, records failure
  local name=$1 t0=$SECONDS out
  shift
  echo "sanitize.sh: $name ..."
  out=$(mktemp)
  if "$@" 2>&1 | tee "$out"; then  # (pipefail: the step's status)
    echo "sanitize.sh: $name: ok ($((SECONDS - t0)) s)"
  else
    echo "sanitize.sh: $name: FAILED ($((SECONDS - t0)) s)" >&2
    {
      echo "=== sanitize.sh: $name: FAILED; its findings and failures:"
      grep -n -E -A3 'ERROR: [A-Za-z]+Sanitizer|runtime error:|SUMMARY: [A-Za-z]+Sanitizer|FAILED|Failed|[0-9]+ failed|REQUIRE|CHECK' "$out" | head -n 120
      echo "=== its last lines:"
      tail -n 30 "$out"
    } >>"$FAILURES"
    status=1
  fi
  rm -f "$out"
}

# A unity build (each library's files compiled a few at a time, CMake's
# batches of 8): instrumented, the libraries' files were half of these
# builds' time, much of it spent reading the same headers again; the test
# files are never merged (tests/CMakeLists.txt).
configure() {  # configure DIR SANITIZERS
  mkdir -p "$1"
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DPTPROF_BUILD_TESTS=ON -DPTPROF_SANITIZE="$2" >"$1/configure.log" 2>&1 ||
    { cat "$1/configure.log"; return 1; }
}

# unit_tests_in_shards BINARY N: the Catch2 binary's cases in N processes side
# by side, each the cases of every Nth test file (Catch2's file tags, -#), so
# the instrumented run uses every core. Each shard's output is kept in
# BINARY.shard<i>.log and printed; fails if any shard fails, or if the shards
# do not hold every case exactly once.
unit_tests_in_shards() {
  local bin=$1 n=$2 i total listed=0 status=0
  local -a tags specs pids
  mapfile -t tags < <("$bin" -# --list-tags | grep -o '\[#[^]]*\]')
  ((${#tags[@]})) || { echo "sanitize.sh: $bin lists no test files" >&2; return 1; }
  for i in "${!tags[@]}"; do specs[i % n]+="${specs[i % n]:+,}${tags[i]}"; done
  total=$("$bin" --list-test-names-only | grep -c .)
  for i in "${!specs[@]}"; do
    listed=$((listed + $("$bin" -# "${specs[i]}" --list-test-names-only | grep -c .)))
  done
  ((listed == total)) || { echo "sanitize.sh: the shards hold $listed cases, the binary $total" >&2; return 1; }
  for i in "${!specs[@]}"; do
    "$bin" -# "${specs[i]}" >"$bin.shard$i.log" 2>&1 </dev/null &
    pids[i]=$!
  done
  for i in "${!specs[@]}"; do
    wait "${pids[i]}" || status=1
    echo "--- shard $i of ${#specs[@]}: ${specs[i]}"
    cat "$bin.shard$i.log"
  done
  return $status
}

# halt_on_error: a finding ends the process with an error status, so the
# test that caused it fails. Symbolized stacks need llvm-symbolizer or addr2line.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for w in "${which[@]}"; do
  case "$w" in
    asan)
      step "asan: configure" configure build-asan "address,undefined"
      step "asan: build" cmake --build build-asan -j"$JOBS" --target ptprof_unit_tests fuzz_trace_reader_replay fuzz_region_replay fuzz_bridge_info_replay fuzz_trigger_replay
      # (A function, so the options go before the step: bash exports them
      # for the call's duration.)
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1 \
        step "asan: unit tests" unit_tests_in_shards build-asan/bin/ptprof_unit_tests $((2 * JOBS))
      # The torch-free integration tests need no bridge: the bridge fixture is not set up.
      step "asan: fuzz corpus and integration tests" env ASAN_OPTIONS=detect_leaks=0 \
        ctest --test-dir build-asan --output-on-failure --no-tests=error -FS 'bridge_.*' \
        -R '^(fuzz\.replay\..*|py\..*\.(test_fault_injection|test_python_module))$' </dev/null
      ;;
    tsan)
      step "tsan: configure" configure build-tsan thread
      step "tsan: build" cmake --build build-tsan -j"$JOBS" --target ptprof_thread_tests
      # The launcher tests whose targets are the C test programs (threads and
      # forks, agent instrumented); not those that run a shell: TSan's runtime,
      # preloaded into an uninstrumented dash or bash, crashes it.
      # die_after_fork=0: the targets fork after their threads have ended.
      step "tsan: ring, collector and fork tests" env TSAN_OPTIONS=halt_on_error=1:die_after_fork=0:second_deadlock_stack=1 \
        build-tsan/bin/ptprof_thread_tests "[ring],[collector],[parallel]~[cli],every range and mark of 4 threads*,recorded + dropped equals*,children forked in bursts*"
      ;;
    *)
      echo "sanitize.sh: unknown build '$w'; accepted: asan, tsan" >&2
      exit 2
      ;;
  esac
done
exit $status
