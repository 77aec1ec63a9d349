#!/usr/bin/env bash
# One command for a machine with an NVIDIA GPU, pip's torch 2.x with CUDA and
# nvcc: builds ptprof, runs CUDA training loops (the MLP example and a small
# conv net) once under torch.profiler(profile_memory=True) and once under
# `ptprof run --profile-memory`, and prints kernel counts and times, the top
# ops' CUDA time, memcpy traffic and CUDA memory per op (Self CUDA Mem, CUDA
# Mem) side by side. Exits non-zero when kernel instance counts differ, total
# kernel time differs by more than 10%, or any op's Self CUDA Mem differs by
# even one byte: the caching allocator's block sizes are deterministic for the
# same requests (scripts/gpu_check/compare.py). Memory is recorded in the same
# runs as the times: it adds only host-side work at each allocation, not GPU
# time, so no extra runs.
#
#   scripts/gpu-check.sh [PYTHON]     (PYTHON: the interpreter with CUDA torch;
#                                      default: .venv/bin/python, else python3)
# Environment: BUILD_DIR (default build-gpu-check), STEPS (default 5), JOBS.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build-gpu-check}
OUT=${OUT:-$BUILD_DIR/gpu-check-out}
STEPS=${STEPS:-5}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
PY=${1:-}
if [ -z "$PY" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python; else PY=$(command -v python3 || true); fi
fi

say() { printf '%s\n' "$*"; }
fail() { say "gpu-check: $*" >&2; exit 3; }

# --- What this machine has --------------------------------------------------
say "== gpu-check: what this machine has"
have_smi=no; have_libcuda=no
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then have_smi=yes; fi
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then have_libcuda=yes; fi
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do
  [ -e "$d/libcuda.so.1" ] && have_libcuda=yes
done
say "nvidia-smi:  $have_smi$( [ $have_smi = yes ] && printf ' (%s)' "$(nvidia-smi -L | head -1)")"
say "libcuda.so.1: $have_libcuda"
if [ "$have_smi" != yes ] || [ "$have_libcuda" != yes ]; then
  fail "no NVIDIA GPU: nvidia-smi/libcuda not found (nvidia-smi: $have_smi, libcuda.so.1: $have_libcuda); this check needs a GPU machine"
fi

missing=()
tool() {  # tool NAME CMD...: prints its version line, records it missing
  local name=$1; shift
  if command -v "$1" >/dev/null 2>&1; then say "$name: $("$@" 2>&1 | head -1)"; else say "$name: MISSING"; missing+=("$name"); fi
}
tool cmake cmake --version
tool "C++ compiler" "${CXX:-c++}" --version
tool pkg-config pkg-config --version
if command -v nvcc >/dev/null 2>&1; then say "nvcc: $(nvcc --version | grep -i release | head -1)"; else say "nvcc: not found (not needed to build ptprof)"; fi
if [ -z "$PY" ] || [ ! -x "$PY" ]; then fail "no Python interpreter (give one: scripts/gpu-check.sh /path/to/python)"; fi
say "python: $PY"
"$PY" - <<'PYEOF' || fail "$PY cannot import torch with CUDA available"
import sys, torch
print("torch: %s (CUDA %s), cuda available: %s, devices: %d" % (torch.__version__, torch.version.cuda,
      torch.cuda.is_available(), torch.cuda.device_count()))
sys.exit(0 if torch.cuda.is_available() else 1)
PYEOF

header() {  # header NAME FILE...: whether any of the headers exists
  local name=$1; shift
  for f in "$@"; do
    for dir in /usr/include /usr/local/include /usr/include/x86_64-linux-gnu; do
      if [ -e "$dir/$f" ]; then say "$name: $dir/$f"; return 0; fi
    done
  done
  say "$name: MISSING"; missing+=("$name")
}
header "spdlog (libspdlog-dev)" spdlog/spdlog.h
header "CLI11 (libcli11-dev)" CLI/CLI.hpp
header "zstd (libzstd-dev)" zstd.h
# CUPTI's headers: the toolkit's, else those of pip's nvidia wheels.
cupti_dir=""
for d in /usr/local/cuda/include /usr/local/cuda/extras/CUPTI/include \
         $("$PY" -c 'import glob, os, site; print(" ".join(os.path.dirname(p) for s in site.getsitepackages() for p in glob.glob(s + "/nvidia/*/include/cupti_activity.h")))' 2>/dev/null); do
  if [ -e "$d/cupti_activity.h" ]; then cupti_dir=$d; break; fi
done
if [ -n "$cupti_dir" ]; then say "CUPTI headers: $cupti_dir"; else say "CUPTI headers: MISSING"; missing+=("CUPTI headers (cupti_activity.h: CUDA toolkit or pip's nvidia-cuda-cupti)"); fi
say "Catch2, libunwind: not needed here (tests are not built; stacks are not recorded)"
need=()
for m in "${missing[@]}"; do need+=("$m"); done
if [ ${#need[@]} -gt 0 ]; then
  fail "cannot build ptprof here; missing: $(IFS=,; echo "${need[*]}") (ptprof's CMake requires cmake, a C++20 compiler, pkg-config, spdlog, CLI11 and zstd; CUDA needs CUPTI's headers)"
fi

# --- Build ------------------------------------------------------------------
say "== gpu-check: building ptprof in $BUILD_DIR"
start=$(date +%s)
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPTPROF_BUILD_TESTS=OFF \
  -DPTPROF_CUPTI_INCLUDE_DIR="$cupti_dir" >"$BUILD_DIR.configure.log" 2>&1 || { tail -30 "$BUILD_DIR.configure.log"; fail "cmake configure failed"; }
grep -q "ptprof: CUPTI headers in" "$BUILD_DIR.configure.log" || fail "CMake found no CUPTI headers (set PTPROF_CUPTI_INCLUDE_DIR)"
cmake --build "$BUILD_DIR" -j"$JOBS" >"$BUILD_DIR.build.log" 2>&1 || { tail -30 "$BUILD_DIR.build.log"; fail "build failed"; }
PTPROF=$BUILD_DIR/bin/ptprof
say "built in $(( $(date +%s) - start ))s"
"$PTPROF" bridge build --python "$PY" || fail "ptprof bridge build --python $PY failed"

# --- Run and compare ----------------------------------------------------------
rm -rf "$OUT"; mkdir -p "$OUT"
status=0
for model in mlp conv; do
  say "== gpu-check: $model under torch.profiler (profile_memory=True)"
  STEPS=$STEPS timeout 180 "$PY" scripts/gpu_check/workload.py --model $model --torch-profiler "$OUT/$model.torch.json" \
    || fail "$model under torch.profiler failed"
  say "== gpu-check: $model under ptprof run --profile-memory"
  STEPS=$STEPS timeout 180 "$PTPROF" run --profile-memory -o "$OUT/$model.ptprof" -- "$PY" scripts/gpu_check/workload.py --model $model \
    || fail "$model under ptprof run failed"
  "$PTPROF" report --format json --window all "$OUT/$model.ptprof" >"$OUT/$model.ptprof.json" \
    || fail "ptprof report on $OUT/$model.ptprof failed"
  "$PY" scripts/gpu_check/compare.py "$model" "$OUT/$model.torch.json" "$OUT/$model.ptprof.json" || status=1
done
say "== gpu-check: $( [ $status = 0 ] && echo OK || echo MISMATCH ) ($(( $(date +%s) - start ))s; outputs in $OUT)"
exit $status
