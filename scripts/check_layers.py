#!/usr/bin/env python3
"""The layering of the source tree, checked: every #include of common/,
agent/, launcher/, analysis/ and bench/ must run downward, as the map says.

The rules are not kept here. They are the fenced ```layers block of
docs/architecture.md, so the map a reader sees is the one the check applies:

    <folder>: <what it may include>...      one row per source folder
    <word> only in: <folder>...              a name only those folders may use
    generated <include name>...              headers the build writes

A folder may include itself, what its row lists (folders or single files),
and, transitively, what those may include. "-" is nothing.

An include is resolved as the compiler resolves it: a quoted name in the
includer's own folder first, then in the include roots its library's
CMakeLists.txt gives it (ROOTS below), then, so that a climb which would not
even compile is named too, in every other library's roots. A name found
nowhere is a system or third-party header and not checked, with one
exception: inside agent/src, includes are agent-rooted
("record/thread_state.hpp"), so a bare "foo.hpp" must be a file of the
includer's own folder (or a public header: agent/include, common/include).

Fails (exit 1) with one line per finding:
  - file:line: include "x" climbs from <layer> to <layer>
  - file:line: include "x" is relative (product code uses rooted names)
  - file:line: include "x" is not in <folder> (bare names inside agent/src ...)
  - file:line: <word> named outside <folders>
  - <folder>: a source folder with no row in the layers block / not named
    in the map (a heading, or a list item that begins with the folder)
  - <folder>: a row for a folder that has no sources
Exit 2 on a usage error or a layers block that does not parse. Python 3,
standard library only; needs no build (scripts/lint.py runs it first).

  scripts/check_layers.py [--root DIR] [--edges]

--edges prints the folder-to-folder include graph instead of checking it.
"""

import argparse
import os
import re
import sys

DOC = os.path.join("docs", "architecture.md")
# The libraries whose sources are checked, and their include roots as their
# CMakeLists.txt give them (target_include_directories, PUBLIC ones of what
# they link included). Order is search order.
ROOTS = {
    "common": ["common/include"],
    "agent": ["agent/src", "agent/include", "common/include"],
    "launcher": ["launcher", "analysis/include", "common/include"],
    "analysis": ["analysis/src", "analysis/include", "common/include"],
    "bench": ["agent/include", "analysis/include", "common/include"],
}
# Where a "source folder" is counted from: agent/src/record, analysis/src/text,
# launcher/collect, common/include, and launcher itself for launcher/log.cpp.
# Elsewhere (bench/) the top folder is the one folder, its subfolders in it.
FOLDER_BASES = ["agent/src", "analysis/src", "agent", "analysis", "launcher", "common"]
SOURCE_EXT = (".c", ".cc", ".cpp", ".h", ".hpp")
AGENT_SRC = "agent/src"
GENERATED = "generated"

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


class LayersError(Exception):
    """The layers block is missing or does not parse."""


def read_layers(doc_path):
    """The rows, words and generated names of the doc's ```layers block."""
    try:
        text = open(doc_path, encoding="utf-8").read()
    except OSError as e:
        raise LayersError("%s: %s" % (doc_path, e.strerror)) from e
    m = re.search(r"^```layers[ \t]*\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise LayersError("%s: no ```layers block" % doc_path)
    first = text[: m.start(1)].count("\n") + 1
    rows, words, generated = {}, {}, set()
    for n, raw in enumerate(m.group(1).splitlines(), first):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("generated "):
            generated.update(line.split()[1:])
            continue
        w = re.match(r"^(\w+) only in:\s*(.+)$", line)
        if w:
            words[w.group(1)] = w.group(2).split()
            continue
        r = re.match(r"^([\w./-]+):\s*(.*)$", line)
        if not r:
            raise LayersError("%s:%d: not a row ('<folder>: <may include>...'): %s" % (doc_path, n, raw))
        folder, deps = r.group(1).rstrip("/"), r.group(2).split()
        if folder in rows:
            raise LayersError("%s:%d: %s has two rows" % (doc_path, n, folder))
        rows[folder] = [] if deps == ["-"] else [d.rstrip("/") for d in deps]
    return text, rows, words, generated


def within(path, prefix):
    return path == prefix or path.startswith(prefix + "/")


def layer_of(path, rows):
    """The row (longest folder prefix) a file belongs to, or None."""
    best = None
    for folder in rows:
        if within(path, folder) and (best is None or len(folder) > len(best)):
            best = folder
    return best


def allowed_prefixes(rows):
    """Each row's may-include list, closed transitively."""
    closed = {}
    for start in rows:
        seen, todo = set(), [start]
        while todo:
            folder = todo.pop()
            for dep in rows.get(folder, []):
                if dep in seen:
                    continue
                seen.add(dep)
                owner = dep if dep in rows else layer_of(dep, rows)
                if owner and owner != start:
                    todo.append(owner)
        closed[start] = seen
    return closed


def library_of(path):
    return path.split("/", 1)[0]


def source_folder(path):
    """The folder the map must name for a source file (see FOLDER_BASES)."""
    d = os.path.dirname(path)
    for base in FOLDER_BASES:
        if within(d, base):
            rest = d[len(base) + 1 :]
            return base + "/" + rest.split("/", 1)[0] if rest else base
    return d.split("/", 1)[0]


def sources(root):
    for lib in ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, lib)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
            for f in sorted(filenames):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(dirpath, f), root).replace(os.sep, "/")


def code_lines(text):
    """(line number, line) with comments and string and character literals
    blanked (raw strings included), so a name in a comment is no finding."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c == '"' and text[i - 1 : i] == "R" and not (text[i - 2 : i - 1].isalnum() or text[i - 2 : i - 1] == "_"):
            m = re.match(r'"([^()\\\s]{0,16})\(', text[i:])
            close = ")" + (m.group(1) if m else "") + '"'
            j = text.find(close, i + 1)
            j = n if j < 0 else j + len(close)
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1 if j < n and text[j] == c else j
        else:
            out.append(c)
            i += 1
    return list(enumerate("".join(out).split("\n"), 1))


def includes(text):
    """(line number, delimiter, name) of each #include outside comments."""
    lines = text.splitlines()
    for n, code in code_lines(text):
        if "#" in code and "include" in code:
            m = INCLUDE.match(lines[n - 1])
            if m:
                yield n, m.group(1), m.group(2)


def resolve(root, includer, delim, name):
    """The project file an include names, or None (a system header)."""
    own = ROOTS.get(library_of(includer), [])
    search = ([os.path.dirname(includer)] if delim == '"' else []) + own
    search += [r for lib in ROOTS.values() for r in lib if r not in search]
    for d in search:
        p = os.path.normpath(os.path.join(d, name)).replace(os.sep, "/")
        if not p.startswith("../") and os.path.isfile(os.path.join(root, p)):
            return p
    return None


class Layers:
    """The map's rules, and the findings against them."""

    def __init__(self, root, doc_path):
        self.root = root
        self.doc = os.path.relpath(doc_path, root)
        self.text, self.rows, self.words, self.generated = read_layers(doc_path)
        self.allowed = allowed_prefixes(self.rows)
        self.sources = list(sources(root))
        self.agent_files = [f for f in self.sources if within(f, AGENT_SRC)]
        self.findings, self.edges = [], set()

    def check_includes(self, path, body):
        layer = layer_of(path, self.rows)
        for n, delim, name in includes(body):
            where = "%s:%d: include %s%s%s" % (path, n, delim, name, '"' if delim == '"' else ">")
            if "../" in name or name.startswith("./"):
                self.findings.append("%s is relative (product code uses rooted names)" % where)
            target = GENERATED if name in self.generated else resolve(self.root, path, delim, name)
            self.check_bare(path, delim, name, target, where)
            if target is None or layer is None:
                continue
            to = GENERATED if target == GENERATED else layer_of(target, self.rows)
            if to == layer:
                continue
            shown = to or os.path.dirname(target)
            self.edges.add((layer, shown))
            if to is None or not any(a == to or within(target, a) for a in self.allowed[layer]):
                self.findings.append("%s climbs from %s to %s" % (where, layer, shown))

    def check_bare(self, path, delim, name, target, where):
        """Inside agent/src a bare name is a file of the includer's folder."""
        if not within(path, AGENT_SRC) or delim != '"' or "/" in name or target == GENERATED:
            return
        if target is None:
            homes = [f[len(AGENT_SRC) + 1 :] for f in self.agent_files if os.path.basename(f) == name]
            rooted = " or ".join('"%s"' % h for h in homes) or '"<folder>/%s"' % name
        elif within(target, AGENT_SRC) and os.path.dirname(target) != os.path.dirname(path):
            rooted = '"%s"' % target[len(AGENT_SRC) + 1 :]
        else:
            return  # its own folder's, a public header's, or another library's (a climb)
        self.findings.append(
            "%s is not in %s (bare names inside agent/src name the includer's own folder; "
            "write it agent-rooted: %s)" % (where, os.path.dirname(path), rooted)
        )

    def check_words(self, path, body):
        for word, places in self.words.items():
            if any(within(path, p) for p in places):
                continue
            pattern = re.compile(r"\b%s\b" % re.escape(word))
            for n, code in code_lines(body):
                if pattern.search(code):
                    self.findings.append("%s:%d: %s named outside %s" % (path, n, word, ", ".join(places)))

    def check_folders(self):
        """Every source folder has a row and is named in the map; every row has sources."""
        folders = {source_folder(f) for f in self.sources}
        # Named: in a heading, or as what a list item begins with ("- **`agent/src/base`**: ...").
        prose = re.sub(r"^```.*?^```", "", self.text, flags=re.S | re.M).splitlines()
        headings = [line for line in prose if re.match(r"^#{1,6}\s", line)]
        items = [re.sub(r"^\s*[-*]\s+[*`]*", "", line) for line in prose if re.match(r"^\s*[-*]\s", line)]
        for folder in sorted(folders):
            if folder not in self.rows:
                self.findings.append("%s: a source folder with no row in the layers block of %s" % (folder, self.doc))
            named = re.compile(r"(?<![\w/.-])%s(?!/?[\w.-])" % re.escape(folder))
            if not any(named.search(h) for h in headings) and not any(named.match(i) for i in items):
                self.findings.append(
                    "%s: a source folder the map (%s) does not name (a heading, or a list item "
                    "that begins with it)" % (folder, self.doc)
                )
        for folder in sorted(self.rows):
            if not any(within(f, folder) for f in folders):
                self.findings.append(
                    "%s: a row in the layers block of %s for a folder with no sources" % (folder, self.doc)
                )

    def run(self):
        for path in self.sources:
            body = open(os.path.join(self.root, path), encoding="utf-8", errors="replace").read()
            self.check_includes(path, body)
            self.check_words(path, body)
        self.check_folders()


def main():
    ap = argparse.ArgumentParser(
        prog="scripts/check_layers.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--root",
        default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        help="the source tree (default: this checkout)",
    )
    ap.add_argument("--edges", action="store_true", help="print the folder-to-folder include graph")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    try:
        layers = Layers(root, os.path.join(root, DOC))
    except LayersError as e:
        print("check_layers: %s" % e, file=sys.stderr)
        return 2
    layers.run()
    if args.edges:
        for a, b in sorted(layers.edges):
            print("%s -> %s" % (a, b))
        return 0
    for f in layers.findings:
        print(f)
    return 1 if layers.findings else 0


if __name__ == "__main__":
    sys.exit(main())
