#!/usr/bin/env bash
# Two builds' hot paths side by side, interleaved in one run: for a change to
# the agent's hot path, its numbers before (build A, e.g. a worktree of the
# commit before) and after (build B), measured in alternating processes so
# that the machine's drift falls on both.
#
#   bench/ab_hot_path.sh BUILD_A BUILD_B [ROUNDS]
#
# Per round, in the order A B (odd rounds) or B A (even rounds):
#   - bench_record latency 1 and 2 under `ptprof run`: ns per recorded event
#     (p50 of single events, and per event the median batch of 1000);
#   - bench_op_cost blocks under `ptprof run --step manual --schedule
#     wait=2,active=1` (when both builds have it: libtorch found): ptprof's
#     own ns per operator over the floor, the median of 30 cycles.
# Prints, per figure, the medians, B / A and how many rounds B won, then each
# round's figures.
set -euo pipefail
a=${1:?usage: bench/ab_hot_path.sh BUILD_A BUILD_B [ROUNDS]}
b=${2:?usage: bench/ab_hot_path.sh BUILD_A BUILD_B [ROUNDS]}
rounds=${3:-6}
for build in "$a" "$b"; do
  [[ -x $build/bin/ptprof && -x $build/bin/bench_record ]] ||
    { echo "ab_hot_path.sh: $build has no bin/ptprof or bin/bench_record (build them first)" >&2; exit 2; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
op_cost=1
[[ -x $a/bin/bench_op_cost && -x $b/bin/bench_op_cost ]] || op_cost=0

measure() {  # measure BUILD LABEL ROUND: appends "LABEL FIGURE VALUE" lines to $out/figures
  local build=$1 label=$2 round=$3 line
  for threads in 1 2; do
    line=$("$build/bin/ptprof" run -o "$out/$label.$round.$threads" -- "$build/bin/bench_record" latency "$threads" 2>/dev/null)
    echo "$label latency$threads.p50_ns $(sed -n 's/.*p50_ns=\([0-9.]*\).*/\1/p' <<<"$line")" >>"$out/figures"
    echo "$label latency$threads.batch_ns $(sed -n 's/.*batch_ns=\([0-9.]*\).*/\1/p' <<<"$line")" >>"$out/figures"
  done
  if ((op_cost)); then
    "$build/bin/ptprof" run -o "$out/$label.$round.op" --step manual --schedule wait=2,active=1 -- \
      "$build/bin/bench_op_cost" blocks 30 5000 2>/dev/null |
      python3 -c 'import re, statistics, sys
own = [float(p) - float(f) for f, p in re.findall(r"floor ([\d.]+) ptprof ([\d.]+) ns/op", sys.stdin.read())]
print("%s op_cost.own_ns %.2f" % (sys.argv[1], statistics.median(own)))' "$label" >>"$out/figures"
  fi
}

for ((r = 1; r <= rounds; ++r)); do
  if ((r % 2)); then measure "$a" A "$r"; measure "$b" B "$r"; else measure "$b" B "$r"; measure "$a" A "$r"; fi
  echo "round $r/$rounds done" >&2
done

python3 - "$out/figures" "$a" "$b" <<'EOF'
import collections
import statistics
import sys

figures = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    label, name, value = line.split()
    figures[name][label].append(float(value))
print("A: %s\nB: %s\n" % (sys.argv[2], sys.argv[3]))
print("%-18s %9s %9s %6s   %s" % ("figure", "A median", "B median", "B/A", "rounds won by B (lower)"))
for name, by in figures.items():
    ma, mb = statistics.median(by["A"]), statistics.median(by["B"])
    won = sum(b < a for a, b in zip(by["A"], by["B"]))
    print("%-18s %9.2f %9.2f %6.2f   %d of %d" % (name, ma, mb, mb / ma, won, len(by["A"])))
print("\neach round, in order:")
for name, by in figures.items():
    for label in ("A", "B"):
        print("%-18s %s %s" % (name, label, " ".join("%.1f" % v for v in by[label])))
EOF
