#!/usr/bin/env bash
# Reruns the example commands of README.md and docs/*.md against the build and
# rewrites their outputs: every block between `<!-- example: NAME -->` and
# `<!-- /example -->`, and the `<!-- example-machine -->` line that says on
# which machine and torch they were made (scripts/doc_examples.py). The
# commands run as written, with Debian's /usr/bin/python3; about a minute.
#
#   scripts/doc-examples.sh [--build DIR] [FILE...]     # default: README.md docs/*.md
#
# tests/integration/test_readme.py runs the same commands and fails when their
# output no longer has the documented shape.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
files=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --build=*) build=${1#--build=}; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) files+=("$1"); shift ;;
  esac
done
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "doc-examples.sh: no configured build in $build (cmake -S . -B build first, or --build DIR)" >&2
  exit 2
fi
[ ${#files[@]} -gt 0 ] || files=("$root/README.md" "$root"/docs/*.md)
cmake --build "$build" -j2 --target ptprof ptprof_agent >/dev/null
# Built ahead, as the tests do, so that no output shows the one-time build line.
if ! out=$(PTPROF_BRIDGE_CACHE=$build/bridge-cache "$build/bin/ptprof" bridge build --python /usr/bin/python3 2>&1); then
  echo "$out" >&2
  exit 1
fi
exec python3 "$root/scripts/doc_examples.py" --build "$build" "${files[@]}"
