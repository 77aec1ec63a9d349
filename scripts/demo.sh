#!/usr/bin/env bash
# Builds ptprof, profiles an example training loop with no change to it, and
# prints the operator table.
#
#   bash scripts/demo.sh
#
# Installs the Debian packages that are missing (Debian's torch among them),
# builds only the launcher and the agent (no tests, no pip torch: that is
# scripts/test.sh's, which needs it), then runs examples/train_mlp.py under
# `ptprof run` with Debian's torch (the first run also compiles the torch
# bridge for it, once) and prints `ptprof report`. Each part prints its time.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

t0=$SECONDS
PTPROF_NO_VENV=1 PTPROF_SETUP_TARGETS="ptprof ptprof_agent" bash scripts/setup.sh
echo "demo.sh: set-up and build: $((SECONDS - t0)) s"

# The interpreter that imports torch: Debian's python3 first, since another
# python3 may come earlier on PATH without torch.
PYTHON=""
for candidate in /usr/bin/python3 python3 python; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import torch' >/dev/null 2>&1; then
    PYTHON=$(command -v "$candidate")
    break
  fi
done
if [[ -z "$PYTHON" ]]; then
  echo "demo.sh: error: no Python interpreter here imports torch (tried /usr/bin/python3, python3, python)" >&2
  exit 1
fi

rm -rf ptprof-out
t0=$SECONDS
echo "demo.sh: ptprof run -- $PYTHON examples/train_mlp.py"
build/bin/ptprof run -- "$PYTHON" examples/train_mlp.py
echo "demo.sh: profiling: $((SECONDS - t0)) s"
echo
echo "demo.sh: ptprof report ptprof-out/"
build/bin/ptprof report ptprof-out/
