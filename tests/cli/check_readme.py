#!/usr/bin/env python3
"""check_readme.py --readme README.md --build BUILD --source SOURCE [--preload P]:
every command of the README's "Using it" section runs as written.

The section's first code block is read from the README itself (so the README
cannot rot), and each line is run in order by bash in an empty folder that
holds `build` and `data` as links to the build tree and to the checkout's
data/, as from a checkout: each must exit 0, with nothing left to fill in
(no "...", no "[...]"). On this machine without a GPU, the plain LD_PRELOAD
line must reach the simulated device (its report counts kernel launches).
Then the traced run is repeated: `grape inspect run.*.grape` must summarise
both traces.

Skips (77) without nvcc's examples, and in a sanitizer build (its shim
cannot be preloaded by a plain LD_PRELOAD line without the sanitizer's
runtime first; the normal build runs this test). A line naming a file of the
CUDA toolkit that is not installed is reported and not run.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-3000:]}"
    sys.exit("FAIL: " + msg)


def using_it(readme):
    text = open(readme).read()
    m = re.search(r"^## Using it\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        fail(f"{readme} has no '## Using it' section")
    block, started = [], False
    for line in m.group(1).split("\n"):
        if line.startswith("    "):
            block.append(line[4:])
            started = True
        elif started and line.strip():
            break
    if not block:
        fail("the 'Using it' section has no code block")
    return block


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--readme", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--preload", default="")
    a = ap.parse_args()
    if any(x and not x.endswith("libgrape.so") for x in a.preload.split(":")):
        print("skipped: a sanitizer build (the README's LD_PRELOAD line needs the normal build)")
        return 77
    if not os.path.exists(os.path.join(a.build, "examples", "beam")):
        print("skipped: the README's examples need nvcc")
        return 77
    lines = using_it(a.readme)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAPE_", "SIMCU_")) and k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(a.build, os.path.join(tmp, "build"))
        os.symlink(os.path.join(a.source, "data"), os.path.join(tmp, "data"))

        def run(line):
            p = subprocess.run(["bash", "-c", "set -o pipefail; " + line], capture_output=True,
                               text=True, timeout=600, env=env, cwd=tmp)
            if p.returncode != 0:
                fail(f"README line: {line}", p)
            return p

        ran = 0
        for line in lines:
            if "..." in line or re.search(r"\[[^]]*\]", line):
                fail(f"README line is not a command to run as written: {line}")
            toolkit = [w for w in line.split() if w.startswith("/usr/local/cuda")]
            if toolkit and not all(os.path.exists(w) for w in toolkit):
                print(f"not run (no {toolkit[0]} here): {line}")
                continue
            p = run(line)
            ran += 1
            if "GRAPE_REPORT=stderr" in line:
                start = p.stderr.find("{")
                try:
                    rep, _ = json.JSONDecoder().raw_decode(p.stderr[start:])
                except ValueError:
                    fail(f"no JSON report on stderr from: {line}", p)
                if not rep.get("launches"):
                    fail(f"the plain LD_PRELOAD line ran no kernels: {line}", p)
        for out in ("report.json", "model.txt", "timings.csv", "timed.grape", "paths.json",
                    "timeline.json"):
            if not os.path.exists(os.path.join(tmp, out)):
                fail(f"the README's commands did not write {out}")
        # The timeline as a viewer reads it (tests/replay/check_timeline.py).
        sys.path.insert(0, os.path.join(a.source, "tests", "replay"))
        import check_timeline
        try:
            got = check_timeline.check(json.load(open(os.path.join(tmp, "timeline.json"))))
        except check_timeline.Broken as e:
            fail(f"the README's timeline.json breaks a trace-event rule: {e}")
        if got["flows"] == 0 or got["streams"] == 0:
            fail(f"the README's timeline.json has no stream rows or arrows: {got['streams']}, "
                 f"{got['flows']}")

        # A second traced run: inspect takes both traces.
        traced = [l for l in lines if l.startswith("GRAPE_TRACE=")]
        inspect = [l for l in lines if " inspect " in l]
        if len(traced) != 1 or len(inspect) != 1:
            fail(f"want one traced run and one inspect line, got {traced}, {inspect}")
        run(traced[0])
        traces = glob.glob(os.path.join(tmp, "run.*.grape"))
        p = run(inspect[0])
        if len(traces) != 2 or any(f"== {os.path.basename(t)} ==" not in p.stdout for t in traces):
            fail(f"grape inspect of {len(traces)} traces", p)
        print(f"{ran} of {len(lines)} README commands ran as written; inspect took 2 traces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
