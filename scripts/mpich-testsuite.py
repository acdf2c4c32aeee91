#!/usr/bin/env python3
"""Runs MPICH's own test suite (the test/mpi folder of its source, a
third-party suite of small MPI programs that each print "No Errors")
without mheta and under `mheta run --whole-run --tools recorder,summary`,
and compares: every test must give the same result both ways, and every
run under mheta must leave one trace per rank. Prints one line a test run
and a summary. Fetch MPICH's source outside our tree; its tests are not
ours.

    scripts/mpich-testsuite.py MPICH/test/mpi [DIR ...]
    MHETA_MPI=openmpi scripts/mpich-testsuite.py MPICH/test/mpi pt2pt coll

DIR: the suite's folders to run (default: pt2pt coll comm group datatype
rma attr info init topo errhan threads io). MHETA_MPI (mpich, the
default here, or openmpi) picks the MPI the tests are built with
(mpicc.mpich or mpicc.openmpi) and launched by, and the mheta build.

The tests are built one by one with that MPI's mpicc into
target/third-party/mpich-tests-MPI/, with the suite's util/mtest*.c and a
configuration header written there (the suite's configure is not run).
A test whose build fails against this MPI (one that needs a later MPI
standard than the library's, or the suite's dtpools library) is counted as
not built and left out; so are the testlist's entries above MAXNP ranks
(default 4; the machine's cores are few), and those it marks xfail, or
with a special result rule (resultTest), or for a later MPI version.
Each run has the testlist's time limit (60 s by default) plus 30 s.

Exit status: 1 when any test's result differs between the two runs, or
a run under mheta leaves fewer traces than ranks; 2 on bad arguments."""
import os
import re
import shutil
import subprocess
import sys
import time

DIRS = "pt2pt coll comm group datatype rma attr info init topo errhan threads io".split()

# What the suite's configure would find on this system (Linux, glibc,
# x86-64): only what util/mtest*.c and the tests test for.
CONFIG_H = """\
#define HAVE_UNISTD_H 1
#define HAVE_STRING_H 1
#define HAVE_STDARG_H 1
#define HAVE_STDLIB_H 1
#define HAVE_STDINT_H 1
#define HAVE_INTTYPES_H 1
#define HAVE_SYS_TIME_H 1
#define HAVE_SYS_RESOURCE_H 1
#define HAVE_GETRUSAGE 1
#define HAVE_PTHREAD_H 1
#define HAVE_MPI_WIN_CREATE 1
#define HAVE_LONG_DOUBLE 1
#define HAVE_LONG_LONG 1
#define HAVE__BOOL 1
#define HAVE_FLOAT__COMPLEX 1
#define HAVE_DOUBLE__COMPLEX 1
#define HAVE_LONG_DOUBLE__COMPLEX 1
#define THREAD_PACKAGE_NAME THREAD_PACKAGE_POSIX
#define THREAD_PACKAGE_POSIX 1
#define SIZEOF_VOID_P 8
#define SIZEOF_INT 4
#define SIZEOF_LONG 8
#define SIZEOF_LONG_LONG 8
#define SIZEOF_MPI_OFFSET 8
#define POINTERINT_t int64_t
"""


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    suite = os.path.abspath(args[0])
    if not os.path.isfile(os.path.join(suite, "util", "mtest.c")):
        print(f"mpich-testsuite: {suite} is not MPICH's test/mpi folder (no util/mtest.c)", file=sys.stderr)
        return 2
    dirs = args[1:] or DIRS
    for d in dirs:
        if not any(os.path.isfile(os.path.join(suite, d, t)) for t in ("testlist", "testlist.in")):
            print(f"mpich-testsuite: {suite} has no folder {d} with a testlist", file=sys.stderr)
            return 2
    mpi = os.environ.get("MHETA_MPI", "mpich")
    if mpi not in ("mpich", "openmpi"):
        print(f"mpich-testsuite: MHETA_MPI={mpi}: mpich or openmpi", file=sys.stderr)
        return 2
    maxnp = int(os.environ.get("MAXNP", "4"))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    mheta = os.path.join(target, "mpich" if mpi == "mpich" else "", "release", "mheta")
    if not os.access(mheta, os.X_OK):
        print(f"mpich-testsuite: {mheta} is not built (MHETA_MPI={mpi} cargo build --release --workspace)", file=sys.stderr)
        return 2
    cc = "mpicc.mpich" if mpi == "mpich" else "mpicc.openmpi"
    launch = ["mpiexec.mpich"] if mpi == "mpich" else ["mpirun.openmpi", "--oversubscribe"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    work = os.path.join(target, "third-party", f"mpich-tests-{mpi}")
    shutil.rmtree(work, ignore_errors=True)
    inc = os.path.join(work, "include")
    os.makedirs(inc)
    with open(os.path.join(inc, "mpitestconf.h"), "w") as f:
        f.write(CONFIG_H)
    # MPICH's own build generates it from its MPIX bindings; the tests
    # that need them do not build here.
    open(os.path.join(inc, "mtest_mpix.h"), "w").close()
    util = os.path.join(suite, "util")

    def build(d, name):
        src = os.path.join(suite, d, name + ".c")
        exe = os.path.join(work, d, name)
        if os.path.exists(exe):
            return exe
        if not os.path.exists(src):
            return None
        text = open(src, errors="replace").read()
        if "dtpools.h" in text or "mtest_dtp.h" in text:
            return None
        threads = "MTest_Start_thread" in text or "MTest_Join_threads" in text
        extra = [os.path.join(util, "mtest_thread.c" if threads else "mtest_single.c")]
        if "dtypes.h" in text:
            extra.append(os.path.join(util, "dtypes.c"))
        os.makedirs(os.path.dirname(exe), exist_ok=True)
        cmd = [cc, "-O1", "-w", "-I" + inc, "-I" + os.path.join(suite, "include"), "-I" + os.path.join(suite, d), src,
               os.path.join(util, "mtest.c"), os.path.join(util, "mtest_common.c")] + extra + ["-o", exe, "-lm", "-lpthread"]
        return exe if subprocess.run(cmd, capture_output=True).returncode == 0 else None

    def run(pre, exe, np, targs, env, limit, cwd):
        t = time.time()
        try:
            r = subprocess.run(pre + launch + ["-n", str(np), exe] + targs, capture_output=True, text=True,
                               timeout=limit + 30, env=env, cwd=cwd)
            out, rc = r.stdout + r.stderr, r.returncode
        except subprocess.TimeoutExpired:
            out, rc = "timed out", None
            subprocess.run(["pkill", "-9", "-f", exe])
        passed = rc == 0 and re.search(r"^\s*No Errors\s*$", out, re.M) is not None
        return passed, rc, out, time.time() - t

    counts = {"runs": 0, "same": 0, "differ": 0, "no trace": 0, "not built": 0, "both fail": 0}
    failed = []
    print(f"# MPICH's test suite ({suite}) on {mpi}, at most {maxnp} ranks; without mheta, then under "
          f"`mheta run --whole-run --tools recorder,summary`")
    for d in dirs:
        testlist = os.path.join(suite, d, "testlist")
        if not os.path.exists(testlist):
            testlist += ".in"
        for line in open(testlist):
            f = line.split()
            if not f or f[0].startswith("#") or "@" in line or len(f) < 2 or not f[1].isdigit():
                continue
            name, np = f[0], int(f[1])
            kv = [x.split("=", 1) for x in f[2:] if "=" in x]
            keys = {k for k, _ in kv}
            if np > maxnp or keys & {"xfail", "resultTest", "mpiversion", "mem"}:
                continue
            exe = build(d, name)
            if exe is None:
                counts["not built"] += 1
                continue
            targs = [v for k, v in kv if k == "arg"]
            tenv = dict(env)
            tenv.update(v.split("=", 1) for k, v in kv if k == "env" and "=" in v)
            limit = int(dict(kv).get("timeLimit", "60"))
            cwd = os.path.dirname(exe)
            plain = run([], exe, np, targs, tenv, limit, cwd)
            trace = os.path.join(work, "traces", f"{d}-{name}")
            under = run([mheta, "run", "--whole-run", "--tools", "recorder,summary", "--trace-dir", trace, "--"],
                        exe, np, targs, tenv, limit, cwd)
            traces = len([t for t in os.listdir(trace) if t.startswith("rank-")]) if os.path.isdir(trace) else 0
            counts["runs"] += 1
            verdict = "same"
            if plain[0] != under[0]:
                verdict = "DIFFERENT"
                counts["differ"] += 1
            elif under[0] and traces < np:
                verdict = f"NO TRACE ({traces} of {np})"
                counts["no trace"] += 1
            else:
                counts["same"] += 1
                counts["both fail"] += not plain[0]
            show = lambda r: "pass" if r[0] else ("timed out" if r[1] is None else f"fail (rc {r[1]})")
            print(f"{verdict:<9} {d}/{name} np={np} {' '.join(targs)}: without {show(plain)} {plain[3]:.1f} s, "
                  f"under mheta {show(under)} {under[3]:.1f} s", flush=True)
            if verdict != "same":
                failed.append((f"{d}/{name} np={np} {' '.join(targs)}", plain[2][-2000:], under[2][-2000:]))
    for what, a, b in failed:
        print(f"\n==== {what}\n---- without mheta:\n{a}\n---- under mheta:\n{b}")
    print(f"\nmpich-testsuite: {counts['runs']} runs: {counts['same']} the same both ways "
          f"({counts['both fail']} of them failing both ways), {counts['differ']} different, "
          f"{counts['no trace']} without a trace per rank; {counts['not built']} entries not built against {mpi}")
    return 1 if counts["differ"] or counts["no trace"] else 0


if __name__ == "__main__":
    sys.exit(main())
