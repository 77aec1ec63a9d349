#!/usr/bin/env bash
# ptprof against torch.profiler on a machine with an NVIDIA GPU, from the
# wheel, offline, in one command (docs/gpu-check.md):
#
#   bash scripts/gpu-check.sh [--dry-run] [--wheel WHEEL] [--python PY] [--out DIR] [--steps N]
#
# 1. Installs the wheel (scripts/wheel.sh's; default build-wheel/wheelhouse/
#    ptprof-*.whl) with `pip install --no-index` into a fresh virtual
#    environment that sees PY's torch through a .pth file naming the
#    directory torch is installed in (PY may itself be a venv, whose packages
#    --system-site-packages would not show). Nothing is built but the torch
#    bridge, and only when the wheel has none prebuilt for this torch.
# 2. One short run with Python stacks under `ptprof run` (info log): which
#    bridge was loaded (prebuilt, or built on demand) and which way the agent
#    read the Python frames (CPython 3.11's layout, or the public C API with
#    the GIL); the stacks must put the batch's copy to the device
#    (aten::to) at its line of workload.py.
# 3. The MLP of examples/train_mlp.py and a small conv net
#    (scripts/gpu_check/workload.py): each without a profiler, under
#    torch.profiler(profile_memory=True) and under `ptprof run
#    --profile-memory`; then scripts/gpu_check/compare.py prints kernel
#    instance counts, total CUDA time, the top ops' CUDA time, memcpy
#    traffic, CUDA memory per op, CUPTI's overhead and the step time each
#    profiler adds. Exits 1 on a mismatch (compare.py says what must agree).
# 4. CUDA graphs (scripts/gpu_check/graphs_workload.py): an MLP's forward
#    captured with torch.cuda.graph and replayed once a step, under `ptprof
#    run` with the capture inside the window and, separately, before it
#    (--wait), and under torch.profiler; scripts/gpu_check/graphs_check.py
#    requires ptprof to attribute every replayed kernel to the aten op that
#    captured it (or "captured outside the window"), with torch.profiler's
#    kernels per replay. GPU only: the dry run only compiles the scripts.
# 5. Memory snapshot (scripts/gpu_check/snapshot_workload.py, issue #26): an
#    MLP trained a few steps on the GPU under `ptprof run --profile-memory`,
#    then `ptprof memory --snapshot`, against torch's own
#    torch.cuda.memory._dump_snapshot of the same script;
#    scripts/gpu_check/snapshot_check.py requires the same allocations and
#    frees (count, bytes), the same segments and allocated bytes at the end,
#    and torch.cuda._memory_viz to read ptprof's file. GPU only: the dry run
#    only compiles the scripts.
#
# Everything to bring back is in OUT (default build-gpu-check/out, a few
# hundred KB): table.txt (the header names the machine, torch, bridge and
# frame path; then the comparison), each model's compare.py inputs
# (MODEL.torch.json, MODEL.ptprof.json, MODEL.timing.json: table.txt says how
# to re-check) and logs/. The venv, bridge cache and ptprof traces are in
# WORK (default build-gpu-check).
#
# --dry-run: everything but what needs a GPU, for CI: the same install, the
# same bridge and stack run, the same workloads on the CPU (their outputs
# are checked against the canned GPU outputs' formats, not compared), and
# compare.py on canned GPU outputs (tests/data/gpu_check/: must pass) and on
# a copy broken on purpose (must fail). Exit status: 0 when all is well,
# 1 on a mismatch, 3 when a stage could not run, 2 on a usage error.
set -u -o pipefail
CALLER_DIR=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$(pwd)
T0=$SECONDS

say() { printf '%s\n' "$*"; }
fail() {
  say "gpu-check: $*" >&2
  exit 3
}
usage() {
  sed -n '4,6p' "${BASH_SOURCE[0]}" | sed 's/^# *//' >&2
  exit 2
}

DRY=0 WHEEL="" PY="" OUT="" STEPS=""
while (($#)); do
  case $1 in
    --dry-run) DRY=1 ;;
    --wheel) WHEEL=${2:-}; shift ;;
    --python) PY=${2:-}; shift ;;
    --out) OUT=${2:-}; shift ;;
    --steps) STEPS=${2:-}; shift ;;
    -h | --help) usage ;;
    *) say "gpu-check: unknown argument: $1" >&2; usage ;;
  esac
  shift
done
# Paths given are the caller's, relative to where it ran this from.
absolute() { if [[ -z $1 || $1 == /* ]]; then printf '%s' "$1"; else printf '%s' "$CALLER_DIR/$1"; fi; }
WHEEL=$(absolute "$WHEEL") OUT=$(absolute "$OUT")
[[ $PY == */* ]] && PY=$(absolute "$PY")
WORK=$(absolute "${WORK:-$ROOT/build-gpu-check}")
OUT=${OUT:-$WORK/out}
# OUT is emptied first: never a folder of something else.
if [[ -d $OUT && -n $(ls -A "$OUT") && ! -e $OUT/table.txt && ! -d $OUT/logs ]]; then
  say "gpu-check: --out $OUT holds something else than a gpu-check output: give an empty or new folder" >&2
  exit 2
fi
CANNED=$ROOT/tests/data/gpu_check
if ((DRY)); then DEVICE=cpu STEPS=${STEPS:-3}; else DEVICE=cuda STEPS=${STEPS:-50}; fi
[[ $STEPS =~ ^[1-9][0-9]*$ ]] || fail "--steps: a positive number (got '$STEPS')"
# The user's PTPROF_* settings and paths must not change what is checked.
# Nor may pip's: it reads no configuration (no find-links, no index), so the
# wheel alone is installed.
for v in $(compgen -e); do [[ $v == PTPROF_* || $v == PIP_* ]] && unset "$v"; done
unset PYTHONPATH LD_PRELOAD VIRTUAL_ENV
export PIP_CONFIG_FILE=/dev/null

# run_logged NAME SECONDS CMD...: runs CMD (no terminal), its output in
# OUT/logs/NAME.log; on failure shows the end of it and stops.
run_logged() {
  local name=$1 limit=$2
  shift 2
  local log=$OUT/logs/$name.log
  timeout "$limit" "$@" </dev/null >"$log" 2>&1
  local rc=$?
  if ((rc != 0)); then
    tail -n 30 "$log" | sed 's/^/    /' >&2
    fail "$name failed (exit $rc$( ((rc == 124)) && echo ": over ${limit} s"); $log): $*"
  fi
}

# --- What this machine has --------------------------------------------------
say "== gpu-check: what this machine has$( ((DRY)) && echo ' (dry run: no GPU needed, workloads on the CPU)')"
have_smi=no have_libcuda=no
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then have_smi=yes; fi
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then have_libcuda=yes; fi
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do
  [[ -e $d/libcuda.so.1 ]] && have_libcuda=yes
done
GPU_NAME=$([[ $have_smi == yes ]] && nvidia-smi -L | head -1)
say "nvidia-smi:  $have_smi${GPU_NAME:+ ($GPU_NAME)}"
say "libcuda.so.1: $have_libcuda"
if ((!DRY)) && [[ $have_smi != yes || $have_libcuda != yes ]]; then
  fail "no NVIDIA GPU: nvidia-smi/libcuda not found (nvidia-smi: $have_smi, libcuda.so.1: $have_libcuda); this check needs a GPU machine (scripts/gpu-check.sh --dry-run checks the rest)"
fi
say "glibc: $(ldd --version 2>&1 | head -1)"
say "C++ compiler (for an on-demand bridge): $(command -v "${CXX:-c++}" >/dev/null 2>&1 && "${CXX:-c++}" --version 2>&1 | head -1 || echo none)"
if [[ -z $PY ]]; then
  for cand in "$ROOT/.venv/bin/python" python3; do
    if "$cand" -c 'import torch' >/dev/null 2>&1; then PY=$cand; break; fi
  done
  [[ -n $PY ]] || fail "no interpreter that imports torch (.venv/bin/python, python3): give one with --python"
fi
# Absolute, symlinks kept: a venv's python resolved would lose the venv.
PY=$(command -v "$PY") || fail "--python: no such interpreter"
say "python: $PY"
"$PY" - "$DEVICE" <<'EOF' || fail "$PY: cannot import torch$( ((DRY)) || echo ' with CUDA available')"
import sys, torch
print("torch: %s (CUDA %s), Python %s, cuda available: %s, devices: %d" % (torch.__version__, torch.version.cuda,
      sys.version.split()[0], torch.cuda.is_available(), torch.cuda.device_count()))
sys.exit(0 if sys.argv[1] == "cpu" or torch.cuda.is_available() else 1)
EOF

rm -rf "$OUT"
mkdir -p "$OUT/logs" "$WORK" || fail "cannot create $OUT"

# --- Install from the wheel, offline -----------------------------------------
if [[ -z $WHEEL ]]; then
  wheels=("$ROOT"/build-wheel/wheelhouse/ptprof-*.whl)
  [[ -e ${wheels[0]} ]] || fail "no wheel in build-wheel/wheelhouse (bash scripts/wheel.sh builds it; or give --wheel)"
  ((${#wheels[@]} == 1)) || fail "several wheels in build-wheel/wheelhouse: give one with --wheel"
  WHEEL=${wheels[0]}
fi
[[ -f $WHEEL ]] || fail "--wheel $WHEEL: no such file"
WHEEL=$(cd "$(dirname "$WHEEL")" && pwd)/$(basename "$WHEEL")
say "== gpu-check: installing $(basename "$WHEEL") into a fresh venv ($WORK/venv), pip --no-index"
t=$SECONDS
VENV=$WORK/venv
VPY=$VENV/bin/python
rm -rf "$VENV"
if "$PY" -m venv "$VENV" >"$OUT/logs/venv.log" 2>&1; then
  pip_install=("$VPY" -m pip install --no-index --disable-pip-version-check "$WHEEL")
else
  # An interpreter without ensurepip (Debian's python3 without python3-venv):
  # a venv without pip, into which PY's own pip installs.
  say "python -m venv failed (no ensurepip?): a venv without pip, PY's pip installs into it"
  rm -rf "$VENV"
  run_logged venv 120 "$PY" -m venv --without-pip "$VENV"
  pip_install=("$PY" -m pip --python "$VPY" install --no-index --disable-pip-version-check "$WHEEL")
fi
torch_site=$("$PY" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))') ||
  fail "cannot find PY's torch"
own_site=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || fail "the fresh venv does not run"
printf '%s\n' "$torch_site" >"$own_site/gpu_check_torch.pth"
say "torch seen through $own_site/gpu_check_torch.pth -> $torch_site"
say "\$ ${pip_install[*]}"
run_logged pip-install 300 "${pip_install[@]}"
sed 's/^/    /' "$OUT/logs/pip-install.log"
PTPROF=$VENV/bin/ptprof
export PATH=$VENV/bin:$PATH
[[ -x $PTPROF ]] || fail "the wheel installed no ptprof command into $VENV/bin"
say "$("$PTPROF" --version) at $PTPROF; $("$VPY" -c 'import torch; print("torch", torch.__version__)') in the venv ($((SECONDS - t)) s)"

# --- Bridge and Python frames: one short run with stacks ---------------------
say "== gpu-check: bridge and Python frames (ptprof run --with-stack --no-native-stack, info log)"
t=$SECONDS
export PTPROF_BRIDGE_CACHE=$WORK/bridge-cache
rm -rf "$PTPROF_BRIDGE_CACHE" "$WORK/stacks"
run_logged bridge-list 60 "$PTPROF" bridge list
grep prebuilt "$OUT/logs/bridge-list.log" | sed 's/^/    /'
WORKLOAD=$ROOT/scripts/gpu_check/workload.py
run_logged stacks 600 env PTPROF_LOG_LEVEL=info "$PTPROF" run --with-stack --no-native-stack -o "$WORK/stacks" -- \
  "$VPY" "$WORKLOAD" --model mlp --device "$DEVICE" --steps 2
log=$OUT/logs/stacks.log
if line=$(grep -m1 'building the torch bridge' "$log"); then
  [[ $line == *"done in"* ]] || fail "the bridge build failed: $line"
  BRIDGE="built on demand: ${line#*building the torch bridge }"
elif line=$(grep -m1 'the prebuilt torch bridge' "$log"); then
  line=${line#*info: torch }  # "2.15.0+cu132: the prebuilt torch bridge PATH"
  BRIDGE="prebuilt (in the wheel) for torch ${line%%: *}: ${line##* }"
else
  fail "no torch bridge was loaded ($log)"
fi
line=$(grep -m1 'frames read' "$log") || fail "the agent did not say how it reads Python frames ($log)"
FRAMES=${line#*python }
case $FRAMES in
  *"layout, without the GIL"*) FRAMES="fast path: $FRAMES" ;;
  *"public C API"*) FRAMES="public-API path: $FRAMES" ;;
esac
if dropped=$(grep -m1 'layout disagreed' "$log"); then FRAMES="$FRAMES; then dropped: ${dropped#*python: }"; fi
say "bridge: $BRIDGE"
say "python frames: $FRAMES"
run_logged stacks-report 120 "$PTPROF" report "$WORK/stacks" --group-by-stack-n 1 --format csv
# The host-to-device copies must have the line that makes them.
to_line=$(grep -n 'inputs.to(dev), targets.to(dev)' "$WORKLOAD" | cut -d: -f1)
n_frames=$(grep -c 'workload.py' "$OUT/logs/stacks-report.log")
grep -q "^aten::to,.*/workload.py($to_line): train\$" "$OUT/logs/stacks-report.log" ||
  fail "the stacks do not put aten::to at workload.py($to_line): train ($OUT/logs/stacks-report.log)"
say "stacks: $n_frames report rows name a frame of workload.py; aten::to at workload.py($to_line): train ($((SECONDS - t)) s)"

# --- The workloads: no profiler, torch.profiler, ptprof ----------------------
say "== gpu-check: workloads on $DEVICE, $STEPS steps each: none, torch.profiler, ptprof run --profile-memory"
for model in mlp conv; do
  t=$SECONDS
  rm -rf "$WORK/$model.ptprof"
  common=(--model "$model" --device "$DEVICE" --steps "$STEPS" --timing "$OUT/$model.timing.json")
  run_logged "$model.none" 300 "$VPY" "$WORKLOAD" "${common[@]}" --run none
  run_logged "$model.torch" 300 "$VPY" "$WORKLOAD" "${common[@]}" --run torch.profiler \
    --torch-profiler "$OUT/$model.torch.json"
  run_logged "$model.ptprof" 300 "$PTPROF" run --profile-memory -o "$WORK/$model.ptprof" -- \
    "$VPY" "$WORKLOAD" "${common[@]}" --run ptprof
  timeout 120 "$PTPROF" report --format json --window all "$WORK/$model.ptprof" >"$OUT/$model.ptprof.json" \
    2>"$OUT/logs/$model.report.log" </dev/null || fail "ptprof report on $WORK/$model.ptprof failed"
  step_ms=$(sed -n 's/.*, \([0-9.]*\) ms a step after.*/\1/p' "$OUT/logs/$model".{none,torch,ptprof}.log | paste -sd /)
  say "$model: $step_ms ms a step (none/torch.profiler/ptprof; table.txt compares) ($((SECONDS - t)) s)"
done

# --- CUDA graphs: replays attributed to their capturing ops ------------------
GRAPHS=$ROOT/scripts/gpu_check/graphs_workload.py
if ((DRY)); then
  run_logged graphs-compile 60 "$VPY" -m py_compile "$GRAPHS" scripts/gpu_check/graphs_check.py
  say "== gpu-check: CUDA graphs: needs a GPU (dry run: scripts compiled only)"
else
  say "== gpu-check: CUDA graphs: capture in the window, capture before it, torch.profiler"
  t=$SECONDS
  rm -rf "$WORK/graphs.in" "$WORK/graphs.out"
  # 8 steps, captured at step 1: one window of all; then steps 4-5 only.
  run_logged graphs.in 300 "$PTPROF" run -o "$WORK/graphs.in" -- "$VPY" "$GRAPHS" --steps 8 --capture-step 1
  run_logged graphs.out 300 "$PTPROF" run --wait 4 --active 2 --repeat 1 -o "$WORK/graphs.out" -- \
    "$VPY" "$GRAPHS" --steps 8 --capture-step 1
  run_logged graphs.torch 300 "$VPY" "$GRAPHS" --steps 8 --torch-profiler "$OUT/graphs.torch.json"
  for run in in out; do
    timeout 120 "$PTPROF" report --format json --window all "$WORK/graphs.$run" >"$OUT/graphs.$run.ptprof.json" \
      2>"$OUT/logs/graphs.$run.report.log" </dev/null || fail "ptprof report on $WORK/graphs.$run failed"
  done
  cp scripts/gpu_check/graphs_check.py "$OUT/"
  "$VPY" scripts/gpu_check/graphs_check.py "$OUT/graphs.torch.json" "$OUT/graphs.in.ptprof.json" \
    "$OUT/graphs.out.ptprof.json" >"$OUT/graphs.txt"
  case $? in 0) GRAPHS_STATUS=0 ;; 1) GRAPHS_STATUS=1 ;; *) fail "graphs_check.py could not read the CUDA graph outputs" ;; esac
  sed 's/^/    /' "$OUT/graphs.txt"
  say "CUDA graphs: $( ((GRAPHS_STATUS == 0)) && echo OK || echo MISMATCH) ($((SECONDS - t)) s)"
fi

# --- Memory snapshot: ptprof's against torch's own (issue #26) ---------------
SNAP=$ROOT/scripts/gpu_check/snapshot_workload.py
if ((DRY)); then
  run_logged snapshot-compile 60 "$VPY" -m py_compile "$SNAP" scripts/gpu_check/snapshot_check.py
  say "== gpu-check: memory snapshot: needs a GPU (dry run: scripts compiled only)"
else
  say "== gpu-check: memory snapshot: ptprof memory --snapshot against torch.cuda.memory._dump_snapshot"
  t=$SECONDS
  rm -rf "$WORK/snapshot"
  run_logged snapshot.ptprof 300 "$PTPROF" run --profile-memory -o "$WORK/snapshot" -- "$VPY" "$SNAP" --steps 4
  run_logged snapshot.memory 120 "$PTPROF" memory "$WORK/snapshot" --snapshot "$OUT/snapshot.ptprof.pickle"
  run_logged snapshot.torch 300 "$VPY" "$SNAP" --steps 4 --torch-snapshot "$OUT/snapshot.torch.pickle"
  cp scripts/gpu_check/snapshot_check.py "$OUT/"
  "$VPY" scripts/gpu_check/snapshot_check.py "$OUT/snapshot.torch.pickle" "$OUT/snapshot.ptprof.pickle" \
    >"$OUT/snapshot.txt"
  case $? in 0) SNAPSHOT_STATUS=0 ;; 1) SNAPSHOT_STATUS=1 ;; *) fail "snapshot_check.py could not read the snapshots" ;; esac
  sed 's/^/    /' "$OUT/snapshot.txt"
  say "memory snapshot: $( ((SNAPSHOT_STATUS == 0)) && echo OK || echo MISMATCH) ($((SECONDS - t)) s)"
fi

# --- The table ---------------------------------------------------------------
{
  say "gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ)$( ((DRY)) && echo ' DRY RUN on the CPU: the comparison below is of the canned GPU outputs in tests/data/gpu_check, not of this machine')"
  say "GPU: ${GPU_NAME:-none}"
  say "$("$VPY" -c 'import sys, torch; print("torch %s (CUDA %s), Python %s" % (torch.__version__, torch.version.cuda, sys.version.split()[0]))')"
  say "$("$PTPROF" --version), wheel $(basename "$WHEEL")"
  say "bridge: $BRIDGE"
  say "python frames: $FRAMES"
  if ((DRY)); then
    say "re-check: python3 scripts/gpu_check/compare.py mlp tests/data/gpu_check/mlp.{torch,ptprof,timing}.json"
  else
    say "re-check (in this folder): python3 compare.py MODEL MODEL.torch.json MODEL.ptprof.json MODEL.timing.json"
  fi
  say ""
} >"$OUT/table.txt"
status=0
if ((DRY)); then
  say "== gpu-check: the CPU outputs against the canned GPU outputs' formats"
  "$VPY" scripts/gpu_check/dry_run.py formats "$CANNED" "$OUT" || fail "the canned GPU outputs no longer have the formats the workloads and ptprof write (if that change is meant: python3 tests/data/gpu_check/make_canned.py $OUT/mlp.ptprof.json)"
  say "== gpu-check: compare.py on the canned GPU outputs (must pass)"
  "$VPY" scripts/gpu_check/compare.py mlp "$CANNED"/mlp.{torch,ptprof,timing}.json >>"$OUT/table.txt" ||
    { cat "$OUT/table.txt"; fail "compare.py fails on the canned GPU outputs, which agree"; }
  cat "$OUT/table.txt"
  say "== gpu-check: compare.py on a copy broken on purpose (must fail)"
  mkdir -p "$OUT/broken"
  "$VPY" scripts/gpu_check/dry_run.py break "$CANNED/mlp.ptprof.json" "$OUT/broken/mlp.ptprof.json" || fail "cannot break the canned report"
  "$VPY" scripts/gpu_check/compare.py mlp "$CANNED/mlp.torch.json" "$OUT/broken/mlp.ptprof.json" >"$OUT/broken/compare.txt"
  rc=$?
  grep '^MISMATCH' "$OUT/broken/compare.txt" | sed 's/^/    /'
  n=$(grep -c '^MISMATCH' "$OUT/broken/compare.txt")
  ((rc == 1 && n == 2)) || fail "compare.py on the broken copy: exit $rc with $n MISMATCH lines (expected exit 1, 2 lines: one kernel count, one op's Self CUDA Mem)"
  say "compare.py: exit 1, the two broken numbers named"
else
  cp scripts/gpu_check/compare.py "$OUT/"
  for model in mlp conv; do
    "$VPY" scripts/gpu_check/compare.py "$model" "$OUT/$model".{torch,ptprof,timing}.json >>"$OUT/table.txt"
    case $? in 0) ;; 1) status=1 ;; *) fail "compare.py could not read $model's outputs" ;; esac
  done
  {
    say ""
    say "CUDA graphs (re-check: python3 graphs_check.py graphs.torch.json graphs.in.ptprof.json graphs.out.ptprof.json)"
    cat "$OUT/graphs.txt"
    say ""
    say "Memory snapshot (re-check: python3 snapshot_check.py snapshot.torch.pickle snapshot.ptprof.pickle)"
    cat "$OUT/snapshot.txt"
  } >>"$OUT/table.txt"
  ((GRAPHS_STATUS == 0)) || status=1
  ((SNAPSHOT_STATUS == 0)) || status=1
  cat "$OUT/table.txt"
fi
say "== gpu-check: $( ((status == 0)) && echo OK || echo MISMATCH)$( ((DRY)) && echo ' (dry run)') in $((SECONDS - T0)) s; table: $OUT/table.txt ($(du -sh "$OUT" | cut -f1) in $OUT)"
exit $status
