#!/usr/bin/env bash
# The house rules, checked: the layering of includes (scripts/check_layers.py,
# the map in docs/architecture.md; needs no build), the names a unity build
# would see twice (scripts/check_unity_names.py), clang-format
# (.clang-format) on every C++ file, clang-tidy (.clang-tidy) on every
# translation unit, and ruff (check and format, pyproject.toml's [tool.ruff])
# on all of the project's Python: python/, bench/, scripts/, tests/. Exits
# non-zero on any finding.
#
#   scripts/lint.sh [build-dir] [--all] [-j N]
#
# build-dir (default: build) must hold compile_commands.json and a finished
# build (the compiler's dependency files say what each unit includes).
# A unit clang-tidy found clean is remembered in scripts/lint-clean.txt by a
# key of its text, the text of every project file it includes, its compile
# command and the tidy configuration and version, so only what changed is
# checked again; commit that file with the code. --all checks everything.
# scripts/test.sh runs this as a stage of its own (no time limit: a loaded
# machine makes it slower, never failing). CLANG_TIDY / CLANG_FORMAT override
# the tools (default: Debian's -14).
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/lint.py" "$@"
