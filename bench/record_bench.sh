#!/usr/bin/env bash
# Hot-path benchmark: ns per recorded event (p50/p90/p99 of single events,
# with the cost of an empty clock bracket subtracted, and per event the median
# batch of 1000) for 1 and 2 writer threads, with and without ptprof, side
# by side in one run; and the events per second the launcher drains.
#   bench/record_bench.sh [build-dir]
set -euo pipefail
build=${1:-build}
ptprof=$build/bin/ptprof
bench=$build/bin/bench_record
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

printf '%-34s %8s %8s %8s %9s\n' "case" "p50 ns" "p90 ns" "p99 ns" "batch ns"
for threads in 1 2; do
  for mode in none ptprof ptprof-arena-full; do
    if [ $mode = none ]; then
      line=$("$bench" latency $threads)
      summary=""
    elif [ $mode = ptprof ]; then
      line=$("$ptprof" run -o "$out/lat$threads" -- "$bench" latency $threads 2>"$out/err")
      summary=$(grep -o '[0-9]* dropped' "$out/err" || true)
    else
      # Every event's name was refused by the full string arena: a counted
      # loss that must cost what a recorded name costs, not a lock.
      # A 16 MiB arena: the bench's 400,000 names fill it (the default holds them all).
      line=$(PTPROF_NAMES_MB=16 "$ptprof" run -o "$out/full$threads" -- "$bench" latency-full $threads 2>"$out/err")
      summary=$(grep -o '[0-9]* events are shown as' "$out/err" || true)
    fi
    p50=$(sed -n 's/.*p50_ns=\([0-9.]*\).*/\1/p' <<<"$line")
    p90=$(sed -n 's/.*p90_ns=\([0-9.]*\).*/\1/p' <<<"$line")
    p99=$(sed -n 's/.*p99_ns=\([0-9.]*\).*/\1/p' <<<"$line")
    batch=$(sed -n 's/.*batch_ns=\([0-9.]*\).*/\1/p' <<<"$line")
    printf '%-34s %8s %8s %8s %9s  %s\n' "$mode, $threads thread(s)" "$p50" "$p90" "$p99" "$batch" "$summary"
  done
done

"$ptprof" run -o "$out/flood" -- "$bench" flood 2 >"$out/flood.out" 2>"$out/flood.err"
written=$(sed -n 's/flood_events=\([0-9]*\).*/\1/p' "$out/flood.out")
recorded=$(sed -n 's/.*thread[s]*, \([0-9]*\) events.*/\1/p' "$out/flood.err")
dropped=$(sed -n 's/.* \([0-9]*\) dropped$/\1/p' "$out/flood.err" | head -1)
echo
echo "drain: one thread wrote $written events in 2 s; the launcher drained $recorded, $dropped dropped"
awk -v r="$recorded" 'BEGIN { printf "drain rate: %.1f M events/s (recorded / 2 s, the writer outpacing the launcher)\n", r / 2 / 1e6 }'
