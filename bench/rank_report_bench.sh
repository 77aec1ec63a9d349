#!/bin/sh
# Times the multi-rank merge of `ptprof report` (docs/scale.md): synthetic
# jobs of 8 to 256 ranks (rank_trace_gen, EVENTS_PER_RANK events per rank's
# file; 200000 by default, so 256 ranks hold 51.2M events), then
# `ptprof report --format json DIR` over each: wall time and peak memory.
#   bench/rank_report_bench.sh [BUILD_DIR] [EVENTS_PER_RANK]
# PTPROF_REPORT_THREADS=1 in the environment times one file after the other.
set -eu
build=${1:-build}
per_rank=${2:-200000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%6s %12s %10s %10s %12s\n' ranks events files_MB report_s peak_RSS_MB
for ranks in 8 32 64 128 256; do
  dir="$tmp/r$ranks"
  mkdir -p "$dir"
  "$build/bin/rank_trace_gen" "$dir" "$ranks" "$per_rank" >/dev/null
  mb=$(du -sm "$dir" | cut -f1)
  /usr/bin/time -f '%e %M' -o "$tmp/time" "$build/bin/ptprof" report --format json "$dir" >"$tmp/report.json"
  read -r secs kb <"$tmp/time"
  printf '%6d %12d %10s %10s %12d\n' "$ranks" $((ranks * per_rank)) "$mb" "$secs" $((kb / 1024))
  rm -rf "$dir"
done
