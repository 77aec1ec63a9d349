#!/usr/bin/env bash
# Runs every benchmark in bench/ and rewrites the figures in
# docs/performance.md (date, machine, torch versions and the table of the
# Performance issue's items 1-7). About 8 minutes on a busy 2-core machine;
# --quick about half (one round, a shorter long run).
#
#   scripts/bench.sh [--quick] [--build DIR] [--no-doc] [--only 1,2,4,6,7]
#
# Builds what the benchmarks need first (ptprof, the agent, bench_record);
# torch bridges and the floor library are built on first use and cached.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --build=*) build=${1#--build=}; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "bench.sh: no configured build in $build (cmake -S . -B build first, or --build DIR)" >&2
  exit 2
fi
cmake --build "$build" -j2 --target ptprof ptprof_agent bench_record >/dev/null
exec python3 "$root/bench/run_all.py" --build "$build" "${args[@]}"
