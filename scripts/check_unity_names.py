#!/usr/bin/env python3
"""Names that would collide in a unity build, found before the build does.

The sanitizer and fuzzing builds (scripts/sanitize.sh) compile each library's
files a few at a time, concatenated (CMAKE_UNITY_BUILD). Two files of one
library that each declare a type of the same name in an anonymous namespace
then declare it twice, but only when CMake's batching puts them together: a
new file elsewhere in the library moves the batches and a build that passed
breaks (commit 047fdc5 did that to memory_snapshot.cpp's and
memory_categories.cpp's `Action`). This check does not wait for the batches:
every name declared at the top of an anonymous namespace (a type: class,
struct, enum, using alias; a function defined there; a constant named kX or
a variable g_x) must be unique within its library's .cpp files. Functions of
one name are flagged even when their parameters differ: merged, they become
overloads, and a call that picked one may then pick the other. Files the
library's CMakeLists.txt keeps out of the batches
(SKIP_UNITY_BUILD_INCLUSION) are not compared.

Fails (exit 1) with one line per name: the library, the name, the files.
"""

import collections
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# One entry per library target whose sources the unity build batches.
LIBRARIES = ["agent/src", "agent/torch", "analysis/src", "launcher", "common/src"]

TYPE = re.compile(
    r"^(?:enum\s+class|enum\s+struct|enum|struct|class)\s+([A-Za-z_]\w*)\b(?!\s*;)"  # not a forward declaration
    r"|^using\s+([A-Za-z_]\w*)\s*="
)
CONSTANT = re.compile(r"^(?:static\s+)?(?:constexpr|const)\s+[\w:<>,*&\s]+?\s(k[A-Z]\w*|g_\w+)\s*[=\{\[]")
FUNCTION = re.compile(r"^(?:static\s+|inline\s+|constexpr\s+)*[\w:<>,*&\s]+?[\s*&]([a-z_]\w*)\s*\(")
NOT_A_DECLARATION = ("//", "return", "if", "for", "while", "}", "case", "else")
SKIPPED = re.compile(r"set_source_files_properties\(([^)]*?)PROPERTIES\s+SKIP_UNITY_BUILD_INCLUSION\s+ON", re.S)


def skipped_files(lib_dir):
    """Sources the CMakeLists.txt at or above `lib_dir` keeps out of unity batches."""
    out = set()
    for d in (lib_dir, lib_dir.parent):
        cm = d / "CMakeLists.txt"
        if cm.is_file():
            for m in SKIPPED.finditer(cm.read_text(encoding="utf-8")):
                out.update((d / f).resolve() for f in m.group(1).split())
    return out


def anonymous_names(text):
    """Names declared directly inside `namespace {` blocks (depth of braces followed)."""
    names = set()
    depth = 0
    anon_depths = []  # brace depths at which an anonymous namespace's body begins
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        if anon_depths and depth == anon_depths[-1]:
            m = TYPE.match(stripped)
            if m:
                names.add(m.group(1) or m.group(2))
            elif not stripped.startswith(NOT_A_DECLARATION):
                if m := CONSTANT.match(stripped):
                    names.add(m.group(1))
                elif (m := FUNCTION.match(stripped)) and stripped.endswith("{"):
                    names.add(m.group(1) + "()")
        opens_anon = re.match(r"^namespace\s*\{", stripped) is not None
        for ch in re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//.*', "", line):
            if ch == "{":
                depth += 1
                if opens_anon:
                    anon_depths.append(depth)
                    opens_anon = False
            elif ch == "}":
                if anon_depths and depth == anon_depths[-1]:
                    anon_depths.pop()
                depth -= 1
    return names


def main():
    findings = []
    for lib in LIBRARIES:
        seen = collections.defaultdict(list)
        skipped = skipped_files(ROOT / lib)
        for path in sorted((ROOT / lib).rglob("*.cpp")):
            if path.resolve() in skipped:
                continue
            for name in anonymous_names(path.read_text(encoding="utf-8")):
                seen[name].append(str(path.relative_to(ROOT)))
        for name, files in sorted(seen.items()):
            if len(files) > 1:
                findings.append(
                    f"{lib}: {name} is declared in an anonymous namespace of {len(files)} files "
                    f"(a unity build merges them): {', '.join(files)}"
                )
    for f in findings:
        print(f"check_unity_names: {f}")
    if findings:
        return 1
    print("check_unity_names: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
