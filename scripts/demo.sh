#!/usr/bin/env bash
# Builds ptprof, profiles an example training loop with no change to it, and
# prints the operator table.
#
#   bash scripts/demo.sh
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh

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
echo "demo.sh: ptprof run -- $PYTHON examples/train_mlp.py"
build/bin/ptprof run -- "$PYTHON" examples/train_mlp.py
echo
echo "demo.sh: ptprof report ptprof-out/"
build/bin/ptprof report ptprof-out/
