"""What the timeline tests (test_timeline.py, test_annotated.py) share: a
failure that shows the command's output, and `grape` run as a user runs it
on the sim, a sanitizer runtime of the build kept and its reports failing
the test."""
import os
import subprocess
import sys


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}"
    sys.exit("FAIL: " + msg)


def grape(a, args, cwd, timeout=120, **extra):
    """Runs a.grape with args in cwd (a.simdir: the sim; a.preload: the
    build's preloads); extra: environment variables. The caller's
    NVTX_INJECTION64_PATH is dropped: grape run sets its own."""
    e = dict(os.environ)
    e.pop("NVTX_INJECTION64_PATH", None)
    e.update({"GRAPE_SIM_DIR": a.simdir, "SIMCU_REPORT": "", "ASAN_OPTIONS": "detect_leaks=0:exitcode=99",
              "UBSAN_OPTIONS": "halt_on_error=1:exitcode=99"})
    san = ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))
    if san and args[0] == "run":
        e["LD_PRELOAD"] = san
    e.update(extra)
    p = subprocess.run([a.grape] + args, capture_output=True, text=True, timeout=timeout, env=e, cwd=cwd)
    if "Sanitizer" in p.stderr or "runtime error" in p.stderr:
        fail("sanitizer report from grape " + " ".join(args), p)
    return p
