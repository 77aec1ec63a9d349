"""The bridge cache as a trust boundary (docs/security.md): the agent loads a
torch bridge only when the profiling user (or root) owns it and no one else
can write it, at every level; a damaged or foreign bridge is never loaded; the
builder follows no planted link; builds and lock waits are bounded. Another
local user is played by a real second uid (ATTACKER), which needs root: as
anyone else these tests skip.

Each test copies the bridge the CTest fixture built (bridge.<label>, in
PTPROF_BRIDGE_CACHE) into caches of its own, so none of them compiles."""

import fcntl
import os
import shutil
import subprocess
import textwrap

import ptproftest as T
from test_bridge import copying_compiler

COST_S = 160

ATTACKER = 12345
REFUSED = "refusing the torch bridge"
BROKEN = "is broken"
OFF = "operator events are off"


def lines_with(text, needle):
    return [line for line in text.splitlines() if needle in line]


def fixture_bridge():
    """(key, entry directory) of this torch's bridge in the fixture's cache."""
    proc = T.run_ptprof(["bridge", "build", "--python", T.PYTHON], env=T.clean_env())
    if proc.returncode != 0:
        raise AssertionError("the fixture's bridge: " + T.describe(proc))
    entry = os.path.dirname(proc.stdout.strip())
    return os.path.basename(entry), entry


def info_of(entry):
    try:
        with open(os.path.join(entry, "bridge.info")) as f:
            return dict(line.rstrip("\n").split(" = ", 1) for line in f if " = " in line)
    except OSError:
        return {}


def libtorch_of(entry):
    return info_of(entry)["libtorch_cpu"]


def copy_entry(src, cache, key):
    os.makedirs(cache, mode=0o700, exist_ok=True)
    dst = os.path.join(cache, key)
    shutil.copytree(src, dst)
    return dst


def as_attacker(fn):
    """Runs fn() in a forked child with the attacker's uid and gid."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(ATTACKER)
            os.setuid(ATTACKER)
            os.umask(0o022)
            fn()
            os._exit(0)
        except BaseException as e:  # noqa: B902 (the child must never return)
            print("attacker failed: %r" % e, flush=True)
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise AssertionError("the attacker's setup failed (status %d)" % status)


def evil_library(d, marker):
    """A shared library that creates `marker` when loaded: code an attacker
    wants run as the profiling user."""
    src = os.path.join(d, "evil.c")
    with open(src, "w") as f:
        f.write(
            "#include <stdio.h>\n__attribute__((constructor)) static void run(void) {\n"
            '  FILE* f = fopen("%s", "w"); if (f) { fputs("pwned", f); fclose(f); } }\n' % marker
        )
    lib = os.path.join(d, "evil.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, src], check=True)
    os.chmod(lib, 0o755)
    return lib


def run_torch(d, env, code="import torch; torch.ones(2).add_(1)", cwd=None, timeout=T.DEFAULT_TIMEOUT):
    out = os.path.join(d, "out")
    shutil.rmtree(out, ignore_errors=True)
    proc = T.run_ptprof(["run", "-o", out, "--", T.PYTHON, "-c", code], env=env, cwd=cwd, timeout=timeout)
    return proc, out


def add_calls(out):
    try:
        rows = T.report_json(out)["rows"]
    except AssertionError:
        return None
    return {r["name"]: r["calls"] for r in rows}.get("aten::add_")


def world_writable_dir(d):
    """d opened to the attacker, and d/shared: root's, but everyone may write
    there (a shared project directory, a cache under /tmp)."""
    os.chmod(d, 0o755)
    shared = os.path.join(d, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o777)
    return shared


def need_root():
    if os.geteuid() != 0:
        T.skip("needs root to play a second local user (uid %d)" % ATTACKER)
        return False
    return True


def test_cache_writable_by_another_user_is_not_loaded():
    """Defect 1: a cache root another user can write (a shared directory,
    /tmp), or one they own, or an entry they own: their library never runs."""
    if not need_root():
        return
    key, _ = fixture_bridge()
    with T.tempdir() as d:
        shared = world_writable_dir(d)
        marker = os.path.join(d, "pwned")
        evil = evil_library(d, marker)
        theirs = os.path.join(d, "theirs")  # the attacker's own directory

        def plant(root):
            os.makedirs(os.path.join(root, key), exist_ok=True)
            shutil.copy(evil, os.path.join(root, key, "libptprof_torch.so"))

        as_attacker(lambda: plant(shared))
        os.mkdir(theirs)
        os.chown(theirs, ATTACKER, ATTACKER)
        as_attacker(lambda: plant(theirs))
        for root, why in ((shared, "writable by"), (theirs, "owned by uid %d" % ATTACKER)):
            env = T.clean_env(PTPROF_BRIDGE_CACHE=root, PTPROF_BRIDGE_BUILD="0")
            proc, _ = run_torch(d, env)
            T.check(
                not os.path.exists(marker),
                "%s: the other user's library ran in the target\n%s" % (root, T.describe(proc)),
            )
            T.check_eq(proc.returncode, 0, "%s: the target is unharmed\n%s" % (root, T.describe(proc)))
            said = lines_with(proc.stderr, REFUSED)
            T.check_eq(len(said), 1, "%s: one line says why:\n%s" % (root, proc.stderr))
            T.check(said and why in said[0] and root in said[0], "%s: names the path and %r: %r" % (root, why, said))
            if os.path.exists(marker):
                os.unlink(marker)


def test_group_writable_bridge_is_not_loaded():
    """Defect 1, one level down: the user's own cache, but the library (or
    its entry) is writable by others."""
    if not need_root():
        return
    key, src = fixture_bridge()
    with T.tempdir() as d:
        for level in ("file", "entry"):
            cache = os.path.join(d, "cache-" + level)
            entry = copy_entry(src, cache, key)
            target = os.path.join(entry, "libptprof_torch.so") if level == "file" else entry
            os.chmod(target, 0o777 if level == "entry" else 0o666)
            env = T.clean_env(PTPROF_BRIDGE_CACHE=cache, PTPROF_BRIDGE_BUILD="0")
            proc, out = run_torch(d, env)
            T.check_eq(proc.returncode, 0, "%s: the target runs\n%s" % (level, T.describe(proc)))
            said = lines_with(proc.stderr, REFUSED)
            T.check(
                len(said) == 1 and target in said[0] and "writable by" in said[0],
                "%s: one line names %s and why:\n%s" % (level, target, proc.stderr),
            )
            T.check_eq(add_calls(out), None, "%s: no operators from a refused bridge" % level)


def broken_cases(src, foreign_src):
    """(name, how to damage an entry copied from src)."""

    def truncate(entry):
        lib = os.path.join(entry, "libptprof_torch.so")
        with open(lib, "r+b") as f:
            f.truncate(os.path.getsize(lib) // 2)

    def foreign(entry):
        shutil.copy(os.path.join(foreign_src, "libptprof_torch.so"), os.path.join(entry, "libptprof_torch.so"))

    def foreign_with_info(entry):
        for name in ("libptprof_torch.so", "bridge.info"):
            shutil.copy(os.path.join(foreign_src, name), os.path.join(entry, name))

    cases = [("truncated", truncate)]
    if foreign_src:
        cases += [("another torch's library", foreign), ("another torch's entry", foreign_with_info)]
    return cases


def other_torch_entry(key):
    """Another torch's entry built from this ptprof's bridge sources (an
    older build's entry is "other" in `bridge list`, not the case tested)."""
    root = os.environ.get("PTPROF_BRIDGE_CACHE", "")
    mine = key.rsplit("-", 1)[0]
    sources = info_of(os.path.join(root, key)).get("bridge_sources")
    for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        entry = os.path.join(root, name)
        if (
            name.startswith("torch-")
            and name.rsplit("-", 1)[0] != mine
            and info_of(entry).get("bridge_sources") == sources
        ):
            return entry
    return None


def test_damaged_or_foreign_bridge_is_not_loaded():
    """Defect 4: a truncated library (SIGBUS when loaded) or another torch's
    bridge under this torch's name (SIGSEGV): skipped with one line, shown
    as broken by `bridge list`, and rebuilt when building is allowed."""
    key, src = fixture_bridge()
    foreign_src = other_torch_entry(key)
    if not foreign_src:
        print("note: no bridge of another torch in the fixture cache; only the truncated case runs")
    with T.tempdir() as d:
        for name, damage in broken_cases(src, foreign_src):
            cache = os.path.join(d, "cache-" + name.replace(" ", "-").replace("'", ""))
            entry = copy_entry(src, cache, key)
            damage(entry)
            env = T.clean_env(PTPROF_BRIDGE_CACHE=cache, PTPROF_BRIDGE_BUILD="0")
            proc, out = run_torch(d, env)
            T.check_eq(proc.returncode, 0, "%s: the target is unharmed\n%s" % (name, T.describe(proc)))
            said = lines_with(proc.stderr, BROKEN)
            T.check(len(said) == 1 and entry in said[0], "%s: one line names the entry:\n%s" % (name, proc.stderr))
            listing = T.run_ptprof(["bridge", "list"], env=env)
            rows = [line for line in listing.stdout.splitlines() if " cached " in line]
            T.check(
                len(rows) == 1 and " broken " in rows[0], "%s: bridge list says broken:\n%s" % (name, listing.stdout)
            )
            T.check(" ok " not in listing.stdout, "%s: and not ok:\n%s" % (name, listing.stdout))
        # Building allowed: the damaged entry is replaced and used.
        cache = os.path.join(d, "cache-rebuilt")
        entry = copy_entry(src, cache, key)
        broken_cases(src, None)[0][1](entry)
        proc, out = run_torch(d, T.clean_env(PTPROF_BRIDGE_CACHE=cache, CXX=copying_compiler(d)))
        T.check_eq(proc.returncode, 0, "rebuild: the target runs\n" + T.describe(proc))
        T.check_eq(add_calls(out), 1, "rebuild: operators recorded with the rebuilt bridge\n" + proc.stderr)


def test_builder_follows_no_planted_link():
    """Defect 2: in a cache root another user can write, a link planted where
    the builder writes its failure marker never makes it write through it;
    the root is refused with one line."""
    if not need_root():
        return
    key, src = fixture_bridge()
    with T.tempdir() as d:
        shared = world_writable_dir(d)
        victims = {}
        for suffix in ("failed",):
            victim = os.path.join(d, "victim-" + suffix)
            with open(victim, "w") as f:
                f.write("root's file\n")
            victims[suffix] = victim
        as_attacker(lambda: [os.symlink(v, os.path.join(shared, ".%s.%s" % (key, s))) for s, v in victims.items()])
        env = T.clean_env(PTPROF_BRIDGE_CACHE=shared)
        proc = T.run_ptprof(
            ["bridge", "build", "--libtorch", libtorch_of(src), "--for-run", "r1", "--no-build"], env=env
        )
        for s, v in victims.items():
            with open(v) as f:
                T.check_eq(f.read(), "root's file\n", "the file the planted .%s link names is untouched" % s)
        T.check(proc.returncode != 0, "the build refuses the root\n" + T.describe(proc))
        T.check(shared in proc.stderr and "writable by" in proc.stderr, "one line says why:\n" + proc.stderr)


def test_relative_cache_is_made_absolute():
    """Defect 6: a relative PTPROF_BRIDGE_CACHE names the directory where
    ptprof started, not wherever the target has gone when it imports torch."""
    key, src = fixture_bridge()
    with T.tempdir() as d:
        copy_entry(src, os.path.join(d, "cache"), key)
        env = T.clean_env(PTPROF_BRIDGE_CACHE="cache", PTPROF_BRIDGE_BUILD="0")
        proc, out = run_torch(d, env, code="import os; os.chdir('/'); import torch; torch.ones(2).add_(1)", cwd=d)
        T.check_eq(proc.returncode, 0, "run\n" + T.describe(proc))
        T.check_eq(add_calls(os.path.join(d, out)), 1, "the bridge in ./cache was used\n" + proc.stderr)


def test_lock_wait_is_said_and_bounded():
    """Defect 6: a build waiting for a lock another process holds says so,
    and gives up after PTPROF_BRIDGE_BUILD_TIMEOUT with one line."""
    key, src = fixture_bridge()
    with T.tempdir() as d:
        cache = os.path.join(d, "cache")
        os.mkdir(cache, 0o700)
        holder = open(os.path.join(cache, "." + key + ".lock"), "w")
        fcntl.flock(holder, fcntl.LOCK_EX)
        env = T.clean_env(PTPROF_BRIDGE_CACHE=cache, PTPROF_BRIDGE_BUILD_TIMEOUT="2")
        try:
            proc = T.run_ptprof(["bridge", "build", "--libtorch", libtorch_of(src)], env=env, timeout=60)
        except subprocess.TimeoutExpired:
            T.check(False, "bridge build waited on the lock for over 60 s")
            return
        finally:
            holder.close()
        T.check(proc.returncode != 0, "gave up\n" + T.describe(proc))
        T.check_eq(len(lines_with(proc.stderr, "waiting for")), 1, "says it waits:\n" + proc.stderr)
        T.check(
            len(lines_with(proc.stderr, "PTPROF_BRIDGE_BUILD_TIMEOUT")) == 1, "says why it gave up:\n" + proc.stderr
        )


def test_build_time_limit():
    """Defect 6: a compiler that never finishes is stopped after
    PTPROF_BRIDGE_BUILD_TIMEOUT, with one line; the target goes on."""
    with T.tempdir() as d:
        hang = os.path.join(d, "hang-c++")
        with open(hang, "w") as f:
            f.write("#!/bin/sh\nexec sleep 600\n")
        os.chmod(hang, 0o755)
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), CXX=hang, PTPROF_BRIDGE_BUILD_TIMEOUT="2")
        try:
            proc, _ = run_torch(d, env, timeout=120)
        except subprocess.TimeoutExpired:
            T.check(False, "the target hung in the bridge build for over 120 s")
            return
        T.check_eq(proc.returncode, 0, "the target runs\n" + T.describe(proc))
        said = lines_with(proc.stderr, "PTPROF_BRIDGE_BUILD_TIMEOUT")
        T.check(len(said) == 1 and OFF in said[0], "one line says the build was stopped:\n" + proc.stderr)


def test_child_forked_during_build_gets_the_bridge():
    """Defect 6: a process forked (by a native thread) while its parent
    builds the bridge loads it at its next library load, once built."""
    with T.tempdir() as d:
        helper = os.path.join(d, "fork_during_build.so")
        subprocess.run(
            [
                "cc",
                "-shared",
                "-fPIC",
                "-pthread",
                "-o",
                helper,
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork_during_build.c"),
            ],
            check=True,
        )
        code = textwrap.dedent(
            """
            import ctypes, sys
            lib = ctypes.CDLL(%r)
            assert lib.start(%r.encode()) == 0
            import torch
            sys.exit(10 + lib.result())
        """
            % (helper, os.path.join(d, "cache"))
        )
        # The build takes 3 s (a stand-in compiler): the fork comes inside it.
        env = T.clean_env(PTPROF_BRIDGE_CACHE=os.path.join(d, "cache"), CXX=copying_compiler(d, "sleep 3\n"))
        proc, _ = run_torch(d, env, code=code)
        T.check(
            "building the torch bridge" in proc.stderr,
            "the parent built the bridge (the fork came during the build):\n" + proc.stderr,
        )
        T.check_eq(
            proc.returncode, 10, "the child had the bridge loaded (10: yes, 11: no, 9: no child)\n" + T.describe(proc)
        )


def test_bridge_failing_without_a_reason_still_says_what_happened():
    """Defect 9: a bridge whose initialisation fails and writes no reason
    printed an empty warning line; the line must say what happened."""
    with T.tempdir() as d:
        src = os.path.join(d, "silent.c")
        with open(src, "w") as f:
            f.write(
                "#include <stdint.h>\n"
                "int ptprof_torch_bridge_init(void (**set)(int), char* why, uint32_t len) {\n"
                "  (void)set; (void)why; (void)len; return 1; }\n"
            )
        lib = os.path.join(d, "silent.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", lib, src], check=True)
        env = T.clean_env(PTPROF_TORCH_BRIDGE=lib, PTPROF_BRIDGE_BUILD="0")
        proc, out = run_torch(d, env)
        T.check_eq(proc.returncode, 0, "the target runs\n" + T.describe(proc))
        warnings = [line for line in proc.stderr.splitlines() if "warning" in line]
        T.check(
            all(line.split("warning:", 1)[-1].strip() for line in warnings), "no empty warning line:\n" + proc.stderr
        )
        said = lines_with(proc.stderr, "failed to initialise")
        T.check(len(said) == 1 and OFF in said[0], "one line says the bridge failed and what it costs:\n" + proc.stderr)
        T.check_eq(add_calls(out), None, "no operators from a failed bridge")


if __name__ == "__main__":
    T.main()
