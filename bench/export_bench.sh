#!/bin/sh
# Times `ptprof export` on a synthetic trace of N events (default 5 million):
# wall time and peak resident memory from /usr/bin/time -v, and output sizes.
#   bench/export_bench.sh [BUILD_DIR] [N]
set -eu
build=${1:-build}
n=${2:-5000000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$build/bin/export_trace_gen" "$dir/trace.bin" "$n"
ls -l "$dir/trace.bin" | awk '{print "trace.bin:", $5, "bytes"}'
measure() {
  out=$1
  shift
  /usr/bin/time -v "$build/bin/ptprof" export "$dir/trace.bin" "$@" 2>"$dir/time.txt" >/dev/null ||
    { cat "$dir/time.txt"; exit 1; }
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
  size=$(du -cb "$dir"/$out | tail -1 | cut -f1)
  printf '%-40s wall %-8s max RSS %6d MB  output %d bytes\n' "$*" "$wall" $((rss / 1024)) "$size"
  rm -f "$dir"/$out
}
measure 'out.json' --chrome "$dir/out.json"
measure 'out.json.gz' --chrome "$dir/out.json.gz"
measure 'parts*.json' --chrome "$dir/parts.json" --max-file-size 256M
measure 'out.pftrace' --perfetto "$dir/out.pftrace"
