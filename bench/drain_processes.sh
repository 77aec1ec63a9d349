#!/usr/bin/env bash
# The launcher's drain over several processes on one thread and on more
# (PTPROF_DRAIN_THREADS; launcher/collect/drain_pool.hpp), side by side:
# each round runs PROCESSES processes of one writer thread each
# (`bench_record flood 1 1 [RATE]`: one second, unpaced or RATE events/s
# each) under one `ptprof run`, once per thread count, the counts taking
# turns. Prints, per run, what was written, recorded and dropped and the
# launcher's CPU per event (the launcher's and targets' CPU from
# /usr/bin/time, less what the targets say they used). On a machine with
# cores to spare, more threads drain more before the rings overflow; where
# the writers already take the cores (2 cores, 2 writers) they only take
# turns.
#   bench/drain_processes.sh [build-dir] [processes] [rate per process, 0: unpaced] [rounds] [threads...]
set -euo pipefail
build=${1:-build}
processes=${2:-2}
rate=${3:-0}
rounds=${4:-5}
shift $(($# < 4 ? $# : 4))
threads=("$@")
((${#threads[@]})) || threads=(1 2)
for n in "$processes" "$rate" "$rounds" "${threads[@]}"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "drain_processes.sh: '$n' is not a whole number" >&2; exit 2; }
done
((processes >= 1)) || { echo "drain_processes.sh: processes must be at least 1" >&2; exit 2; }
ptprof=$(realpath "$build/bin/ptprof")
bench=$(realpath "$build/bin/bench_record")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
pace=""
((rate > 0)) && pace=$rate
script=""
for ((p = 0; p < processes; ++p)); do script+="'$bench' flood 1 1 $pace & "; done
script+="wait"

printf '%-6s %-8s %10s %11s %10s %14s %16s\n' round threads "written M" "recorded M" "dropped M" "launcher CPU s" "M per launcher s"
for ((r = 1; r <= rounds; ++r)); do
  for t in "${threads[@]}"; do
    rm -rf "$out/run"
    PTPROF_DRAIN_THREADS=$t /usr/bin/time -f "%U %S" -o "$out/time" "$ptprof" run -o "$out/run" -- sh -c "$script" \
      >"$out/stdout" 2>"$out/stderr" || { cat "$out/stderr" >&2; exit 1; }
    read -r user sys <"$out/time"
    python3 - "$out/stdout" "$out/stderr" "$user" "$sys" "$r" "$t" <<'PY'
import re, sys
stdout, stderr = open(sys.argv[1]).read(), open(sys.argv[2]).read()
user, sys_s, rnd, t = float(sys.argv[3]), float(sys.argv[4]), sys.argv[5], sys.argv[6]
written = sum(int(x) for x in re.findall(r"flood_events=(\d+)", stdout))
target_cpu = sum(float(x) for x in re.findall(r"cpu_s=([\d.]+)", stdout))
m = re.search(r"(\d+) events, (\d+) dropped", stderr)
recorded, dropped = int(m.group(1)), int(m.group(2))
launcher = user + sys_s - target_cpu
print("%-6s %-8s %10.1f %11.1f %10.1f %14.3f %16.1f" % (rnd, t, written / 1e6, recorded / 1e6, dropped / 1e6,
                                                        launcher, recorded / 1e6 / launcher if launcher > 0 else 0))
PY
  done
done
