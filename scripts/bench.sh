#!/usr/bin/env bash
# Runs every benchmark in bench/ and rewrites the figures in
# docs/performance.md (date, machine, torch versions, the targets table and
# items 1-9). Under 10 minutes on a 2-core machine; --quick about a third.
#
#   scripts/bench.sh [--quick] [--build DIR] [--no-doc] [--only 1,2,4,6,7,8,9]
#                    [--across-processes]
#
# Builds what the benchmarks need first (ptprof, the agent, bench_record,
# rank_trace_gen); torch bridges and the floor library are built on first use
# and cached. The real models (item 8) need transformers in the checkout's
# .venv: installed there on first use (pip; PTPROF_BENCH_NO_INSTALL=1 skips
# the item instead).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --build=*) build=${1#--build=}; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "bench.sh: no configured build in $build (cmake -S . -B build first, or --build DIR)" >&2
  exit 2
fi
cmake --build "$build" -j2 --target ptprof ptprof_agent bench_record rank_trace_gen >/dev/null
venv_py=$root/.venv/bin/python
if [ -x "$venv_py" ] && [ "${PTPROF_BENCH_NO_INSTALL:-0}" != 1 ] && ! "$venv_py" -c 'import transformers' 2>/dev/null; then
  echo "bench.sh: installing transformers into .venv for the real models (item 8)" >&2
  "$venv_py" -m pip install --disable-pip-version-check -q transformers >&2 ||
    echo "bench.sh: could not install transformers; item 8 is skipped" >&2
fi
exec python3 "$root/bench/run_all.py" --build "$build" "${args[@]}"
