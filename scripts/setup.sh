#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine and builds ptprof into ./build.
#
#   bash scripts/setup.sh
#
# 1. Installs the Debian packages ptprof needs that are missing (only those;
#    `apt-get update` runs only when something is missing). Works as root, and
#    through sudo otherwise. Debian's python3-torch (1.13) is one of them.
# 2. Creates .venv/ in the checkout with pip's current torch 2.x (the CUDA
#    wheel, which also runs on a CPU): the second torch the tests run on. Made
#    once and reused; the first download is large (about 3 GB with its CUDA
#    libraries), later runs take pip's cache; it downloads while step 3
#    builds. PTPROF_NO_VENV=1 skips it (only Debian's torch is then tested).
# 3. Configures and builds, tests included:
#      cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPTPROF_BUILD_TESTS=ON
#      cmake --build build -j$(nproc)
#    Release is what users get (the wheel is built so), and so what the suite
#    tests; PTPROF_BUILD_TYPE=RelWithDebInfo (or Debug) builds another. ccache
#    is used when it is installed.
#
#    PTPROF_SETUP_TARGETS="ptprof ptprof_agent" builds only those targets
#    (scripts/demo.sh: the launcher and the agent, minutes less than the tests).
#
# Idempotent: run again, it only rebuilds what changed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

die() {
  echo "setup.sh: error: $*" >&2
  exit 1
}

PACKAGES=(build-essential cmake pkg-config libspdlog-dev libcli11-dev catch2
          libzstd-dev zlib1g-dev python3-torch libtorch-dev python3-venv
          libunwind8)  # opened at run time for native stacks (--with-stack)
# What only the tests use (scripts/test.sh sets PTPROF_SETUP_TESTS=1): protoc
# decodes the Perfetto export, headless Chromium opens the HTML report, Clang
# and its runtimes (libFuzzer, ASan, UBSan) build the fuzz targets
# (scripts/fuzz.sh), clang-tidy and clang-format check the house rules
# (scripts/lint.sh; ruff, for the Python, goes into .venv below); GCC's
# sanitizer runtimes (scripts/sanitize.sh) come with build-essential. ccache
# lets the wheel's build (scripts/wheel.sh) reuse this build's objects instead
# of compiling them a second time.
if [[ "${PTPROF_SETUP_TESTS:-0}" == 1 ]]; then
  PACKAGES+=(protobuf-compiler chromium clang-14 libclang-rt-14-dev clang-tidy-14 clang-format-14 ninja-build ccache)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$pkg")
  fi
done

if ((${#missing[@]})); then
  command -v apt-get >/dev/null 2>&1 ||
    die "missing packages (${missing[*]}) and no apt-get: this script expects Debian 12; install them by hand"
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 ||
      die "missing packages (${missing[*]}); not root and no sudo: install them as root"
    SUDO=(sudo)
  fi
  echo "setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    die "apt-get update failed"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    die "apt-get install ${missing[*]} failed"
fi

command -v cmake >/dev/null 2>&1 || die "cmake not found after installing packages"

# pip's torch, beside Debian's. Debian's python3 makes the venv (python3-venv),
# so it does not depend on whichever python3 comes first on PATH.
VENV_PY=.venv/bin/python
PIP_PID=""
PIP_LOG=.venv/setup-pip.log
if [[ "${PTPROF_NO_VENV:-0}" != 1 ]]; then
  # Holistic Trace Analysis reads the Chrome export in the tests; pyarrow
  # writes and reads the Parquet dataset (ptprof export --parquet), DuckDB
  # queries it (ptprof query), Dask's distributed scheduler runs the same
  # queries on a local cluster (ptprof query --dask). ruff checks and formats
  # the project's Python in the lint stage (scripts/lint.py), pinned: its
  # findings and its format change from one version to the next.
  VENV_PACKAGES=('torch>=2,<3' numpy)
  VENV_IMPORTS='import torch, numpy'
  RUFF_VERSION=0.17.6
  if [[ "${PTPROF_SETUP_TESTS:-0}" == 1 ]]; then
    VENV_PACKAGES+=(HolisticTraceAnalysis pyarrow duckdb 'dask[distributed]' "ruff==$RUFF_VERSION")
    VENV_IMPORTS+=', hta, pyarrow, duckdb, distributed'
    VENV_IMPORTS+="; import importlib.metadata as m; assert m.version('ruff') == '$RUFF_VERSION'"
  fi
  if ! "$VENV_PY" -c "$VENV_IMPORTS" >/dev/null 2>&1; then
    if [[ ! -x "$VENV_PY" ]]; then
      /usr/bin/python3 -m venv .venv || die "cannot create .venv (python3 -m venv failed)"
    fi
    # In the background: the download takes minutes that the build below
    # would otherwise wait for; the build does not need this torch.
    echo "setup.sh: installing pip's torch into .venv while ptprof builds (first time: a large download;" \
      "later runs reuse it; pip's messages: $PIP_LOG)"
    "$VENV_PY" -m pip install --disable-pip-version-check --progress-bar off -q "${VENV_PACKAGES[@]}" \
      >"$PIP_LOG" 2>&1 </dev/null &
    PIP_PID=$!
    trap '[[ -n $PIP_PID ]] && kill "$PIP_PID" 2>/dev/null; true' EXIT
  fi
fi

JOBS=$(nproc 2>/dev/null || echo 2)
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
configure() {  # configure [CMAKE-ARGS...]
  # Tests on explicitly: an old cache with PTPROF_BUILD_TESTS=OFF would otherwise
  # leave scripts/test.sh with nothing to run.
  cmake -S . -B build -DCMAKE_BUILD_TYPE="${PTPROF_BUILD_TYPE:-Release}" -DPTPROF_BUILD_TESTS=ON \
    "${LAUNCHER[@]}" "$@" || die "cmake configure failed (see the messages above)"
}
if [[ -n $PIP_PID ]]; then
  # Until pip is done the tests are configured for Debian's torch alone;
  # configured again below, with pip's.
  configure -DPTPROF_VENV_PYTHON=
else
  configure -DPTPROF_VENV_PYTHON="$PWD/$VENV_PY"
fi
targets=()
for t in ${PTPROF_SETUP_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j"$JOBS" "${targets[@]}" ||
  die "build failed (see the compiler messages above)"
if [[ -n $PIP_PID ]]; then
  echo "setup.sh: waiting for pip's torch ..."
  if ! wait "$PIP_PID"; then
    PIP_PID=""
    cat "$PIP_LOG" >&2
    die "pip install torch into .venv failed (pip's messages above); PTPROF_NO_VENV=1 skips it"
  fi
  PIP_PID=""
  configure -DPTPROF_VENV_PYTHON="$PWD/$VENV_PY"
fi
if [[ "${PTPROF_NO_VENV:-0}" != 1 ]]; then
  echo "setup.sh: .venv has torch $("$VENV_PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)"
fi
echo "setup.sh: built into $(pwd)/build"
