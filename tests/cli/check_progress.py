#!/usr/bin/env python3
"""check_progress.py CASE --grape GRAPE --source SOURCE --build BUILD --simdir DIR --lib LIBGRAPE:
a long command shows its status line on a terminal, and never in a pipe.

CASE is train (grape train on the NeuSight subset: the files read, then the
fit), replay (grape replay --time of beam's trace: the path being replayed)
or grid (bench/graph/grid.py, one regime of its quick grid: regimes run). Each
command runs twice, its stdout and stderr once on a pseudo-terminal (python's
pty) and once on pipes: the status (its text, redrawn in place with "\\r" and
erase-line) must be in the first and nothing of it in the second, and both
runs must succeed. Skips (77) without beam (nvcc) for replay and grid.

CASE demo: scripts/demo's build step, run by the demo itself in a copy of
scripts/ whose setup-deps does nothing (it installs packages) and whose
build/ is a small ninja build that makes stand-ins for grape and decode. On a
terminal ninja's status line ("[N/TOTAL] ...") must show; on pipes, a line
per 10% of the steps on stderr up to 100%, none of ninja's step lines, then
the demo's run; a build that fails must show ninja's output and stop it.
"""
import argparse
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile

ERASE = "\r\033[K"


def fail(msg):
    sys.exit("FAIL: " + msg)


def on_tty(cmd, env, cwd):
    """(exit status, everything the command wrote) with stdout and stderr on a pty."""
    master, slave = pty.openpty()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env,
                         cwd=cwd)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:   # EIO: the last writer closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    return p.wait(timeout=120), out.decode(errors="replace")


STEPS = 24
FAKE_BUILD = """rule step
  command = sleep 0.05 && touch $out
  description = STEP $out
rule tool
  command = printf '#!/bin/sh\\necho stand-in $$(basename $$0) $$*\\n' > $out && chmod +x $out
  description = TOOL $out
rule fail
  command = echo the step broke && false
  description = FAIL $out
build tools/grape: tool
build examples/decode: tool
""" + "".join(f"build s{i}: step\n" for i in range(STEPS - 2))


def fake_checkout(root, source, broken=False):
    """ROOT laid out as the demo expects: scripts/ (the demo, its helper, a
    setup-deps that installs nothing) and a configured build/; the demo's path."""
    os.makedirs(os.path.join(root, "scripts"))
    os.makedirs(os.path.join(root, "build"))
    for name in ("demo", "ninja-progress"):
        shutil.copy(os.path.join(source, "scripts", name), os.path.join(root, "scripts", name))
    with open(os.path.join(root, "scripts", "setup-deps"), "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(os.path.join(root, "scripts", "setup-deps"), 0o755)
    with open(os.path.join(root, "build", "build.ninja"), "w") as f:
        f.write(FAKE_BUILD + ("build bad: fail\n" if broken else ""))
    return os.path.join(root, "scripts", "demo")


def check_demo(a, env):
    if not shutil.which("ninja"):
        print("skipped: no ninja on PATH")
        return 77
    ran = "stand-in grape run --predict-gpu H100 -- build/examples/decode"
    with tempfile.TemporaryDirectory() as tmp:
        rc, tty = on_tty([fake_checkout(tmp + "/tty", a.source)], env, tmp)
        if rc != 0 or ran not in tty:
            fail(f"scripts/demo on a terminal: exit {rc}\n{tty[-3000:]}")
        counts = re.findall(r"\[(\d+)/%d\] " % STEPS, tty)
        if str(STEPS) not in counts or len(set(counts)) < STEPS // 2:
            fail(f"on a terminal, no build progress from ninja ({sorted(set(counts))}):\n"
                 f"{tty[-3000:]!r}")
        p = subprocess.run([fake_checkout(tmp + "/pipe", a.source)], env=env, cwd=tmp,
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or ran not in p.stdout:
            fail(f"scripts/demo on pipes: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        pct = [int(x) for x in re.findall(
            r"^building build: (\d+)%% \(\d+ of %d steps, \d+s\)$" % STEPS, p.stderr, re.M)]
        if pct != sorted(set(pct)) or len(pct) < 5 or pct[-1] != 100:
            fail(f"on pipes, the build's progress lines are not 10%...100% in order: {pct}\n"
                 f"{p.stderr[-3000:]}")
        if "STEP " in p.stdout + p.stderr or "\r" in p.stdout + p.stderr:
            fail(f"on pipes, ninja's own step lines were shown:\n{(p.stdout + p.stderr)[-3000:]}")
        p = subprocess.run([fake_checkout(tmp + "/broken", a.source, broken=True)], env=env, cwd=tmp,
                           capture_output=True, text=True, timeout=60)
        if p.returncode == 0 or "the step broke" not in p.stdout + p.stderr or ran in p.stdout:
            fail(f"a failed build: exit {p.returncode}, ninja's output not shown or the demo "
                 f"went on:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    print(f"demo: ninja's status on a terminal ({STEPS} steps), {pct}% lines on pipes, "
          "a failed build shown")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["train", "replay", "grid", "demo"])
    for opt in ("--grape", "--source", "--build", "--simdir", "--lib"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--preload", default="")
    a = ap.parse_args()
    san = ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))
    if san and a.case == "grid":
        print("skipped: a sanitizer build (the grid bench preloads the shim without its runtime)")
        return 77
    if a.case == "demo":
        env = dict(os.environ, TERM="xterm")
        return check_demo(a, env)
    beam = os.path.join(a.build, "examples", "beam")
    if a.case != "train" and not os.path.exists(beam):
        print("skipped: beam (examples/) needs nvcc")
        return 77
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAPE_", "SIMCU_")) and k != "LD_PRELOAD"}
    env["TERM"] = "xterm"
    with tempfile.TemporaryDirectory() as tmp:
        if a.case == "train":
            cmd = [a.grape, "train", "-o", "model.txt",
                   os.path.join(a.source, "data", "neusight-subset")]
            status = ["grape: reading ", "grape: training on "]
        elif a.case == "replay":
            # A sanitizer build's shim needs its runtime first in the program.
            run_env = dict(env, LD_PRELOAD=san, ASAN_OPTIONS="detect_leaks=0") if san else env
            p = subprocess.run([a.grape, "run", "--trace", "beam.grape", "--", beam], cwd=tmp,
                               env=run_env, capture_output=True, text=True, timeout=120)
            if p.returncode != 0:
                fail(f"grape run of beam: {p.stderr[-2000:]}")
            cmd = [a.grape, "replay", "beam.grape", "--all", "--time"]
            status = ["grape: replaying path 1 of 2..."]
        else:
            cmd = [sys.executable, os.path.join(a.source, "bench", "graph", "grid.py"),
                   "--examples", os.path.dirname(beam), "--simdir", a.simdir, "--lib", a.lib,
                   "--quick", "--chunk", "1/8", "--out", "grid.json", "--jobs", "1"]
            status = ["grid: 1 of 1 regimes run"]
        rc, tty = on_tty(cmd, env, tmp)
        if rc != 0:
            fail(f"{' '.join(cmd)} on a terminal: exit {rc}\n{tty[-3000:]}")
        missing = [s for s in status if ERASE + s not in tty]
        if missing:
            fail(f"on a terminal, no status line {missing}:\n{tty[-3000:]!r}")
        last = tty.split(ERASE)[-1]
        if any(last.startswith(s.split("...")[0]) for s in status):
            fail(f"the last status line is not erased:\n{tty[-3000:]!r}")
        p = subprocess.run(cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            fail(f"{' '.join(cmd)} on pipes: exit {p.returncode}\n{p.stderr[-3000:]}")
        piped = p.stdout + p.stderr
        if "\033[K" in piped or "\r" in piped or any(s.split("...")[0] in piped for s in status):
            fail(f"the status line reached a pipe:\n{piped[-3000:]!r}")
    print(f"{a.case}: status {status} on a terminal, none in a pipe")
    return 0


if __name__ == "__main__":
    sys.exit(main())
