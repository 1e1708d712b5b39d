#!/usr/bin/env python3
"""check_viewer.py --grape G --prog P --preload L --simdir D: a real viewer
reads the Chrome export: Catapult's trace viewer (the one chrome://tracing
is), in headless Chromium.

The program (two_streams) runs twice under grape run with GRAPE_TIMELINE;
`grape export --chrome` writes both timelines into one file (a process
each, as a job's ranks get); Catapult's trace2html puts it and the
viewer into one HTML file, to which viewer_probe.html is appended: on load it
imports the embedded trace with the viewer's own importer, draws it in a
timeline view and writes what it got into <pre id="grape-check">, which
`chromium --headless --dump-dom` prints. The viewer must import it with no
error and no import warning, with every slice, flow arrow and process of the
file. Then a copy broken twice (an arrow's end dropped; a slice made an end
without a begin) must fail those checks: the check can fail.

Catapult (github.com/catapult-project/catapult, its tracing/bin/trace2html)
is looked for in CATAPULT_DIR, else in .deps/catapult/ of the checkout, where
`scripts/setup-deps --viewer` fetches it (and installs Debian's `chromium`).
Skips (77) without Chromium or without Catapult, saying how to get them and
citing why setup-deps failed to, where it noted that
(.deps/viewer-install-failed.txt). in_viewer() also serves test_trace.py's
viewer case (the per-path view).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grape_cli import fail, grape  # noqa: E402

PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "viewer_probe.html")
# What scripts/setup-deps --viewer fetches, and where it notes a failure.
DEPS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    ".deps")
GET = "scripts/setup-deps --viewer"


def install_failure():
    """Why scripts/setup-deps --viewer last failed (its note, one line), or ''."""
    try:
        lines = open(os.path.join(DEPS, "viewer-install-failed.txt")).read().split("\n")
    except OSError:
        return ""
    return "; the viewer install failed: " + "; ".join(x.strip() for x in lines if x.strip())


def viewer_tools():
    """(Catapult's folder, Chromium), or exits 77 saying which is missing and
    how to get it."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print(f"skipped: no Chromium ({GET} installs Debian's chromium){install_failure()}")
        sys.exit(77)
    catapult = os.environ.get("CATAPULT_DIR") or os.path.join(DEPS, "catapult")
    if not os.path.exists(os.path.join(catapult, "tracing", "bin", "trace2html")):
        where = (f"named by CATAPULT_DIR; unset, the tests use what {GET} fetches"
                 if os.environ.get("CATAPULT_DIR") else f"{GET} fetches it there")
        print(f"skipped: no Catapult trace viewer in {catapult} ({where}){install_failure()}")
        sys.exit(77)
    return catapult, chromium


def in_viewer(catapult, chromium, trace_json, tmp):
    """What the viewer made of trace_json: the probe's JSON."""
    html = os.path.join(tmp, "viewer.html")
    p = subprocess.run([sys.executable, os.path.join(catapult, "tracing", "bin", "trace2html"),
                        trace_json, "--output", html], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("trace2html", p)
    with open(html, "a") as out, open(PROBE) as probe:
        out.write(probe.read())
    p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--virtual-time-budget=5000", "--dump-dom", "file://" + html],
                       capture_output=True, text=True, timeout=120)
    found = re.findall(r'<pre id="grape-check">(.*?)</pre>', p.stdout, re.S)
    if not found:
        fail("Chromium printed no result of the viewer's import", p)
    text = found[-1].replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(text.replace("&amp;", "&"))


def problems(got, doc):
    """What is wrong with the viewer's import of doc (empty: nothing)."""
    ev = doc["traceEvents"]
    want = {"slices": sum(1 for e in ev if e["ph"] == "X"),
            "flows": sum(1 for e in ev if e["ph"] == "s"),
            "processes": len({e["pid"] for e in ev if e["ph"] == "X"})}
    out = [f"{k}: the viewer has {got.get(k)}, the file {v}" for k, v in want.items()
           if got.get(k) != v]
    out += got.get("errors", []) + got.get("warnings", [])
    if got.get("nested"):
        out.append(f"{got['nested']} slices nested in others (a row's slices must not overlap)")
    if not got.get("drawn"):
        out.append("the timeline view did not draw the model")
    return out


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--grape", "--prog", "--preload", "--simdir"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args()
    catapult, chromium = viewer_tools()
    with tempfile.TemporaryDirectory() as tmp:
        # Two runs merged into one file, as the ranks of a job are: a process
        # each, both read by the viewer.
        for t in ("t1.grape", "t2.grape"):
            p = grape(a, ["run", "--device", "sim", "--trace", t, "--", a.prog], tmp,
                      GRAPE_TIMELINE="1")
            if p.returncode != 0:
                fail("the program under grape run", p)
        p = grape(a, ["export", "--chrome", "t1.grape", "t2.grape", "-o", "tl.json"], tmp)
        if p.returncode != 0:
            fail("grape export --chrome", p)
        path = os.path.join(tmp, "tl.json")
        with open(path) as f:
            doc = json.load(f)
        if len({e["pid"] for e in doc["traceEvents"] if e["ph"] == "X"}) != 2:
            fail("grape export --chrome of two traces did not give two processes")
        got = in_viewer(catapult, chromium, path, tmp)
        bad = problems(got, doc)
        if bad:
            fail("Catapult's viewer on grape's export: " + "; ".join(bad))
        # The same checks on a broken copy must fail.
        ev = doc["traceEvents"]
        del ev[next(i for i, e in enumerate(ev) if e["ph"] == "f")]
        next(e for e in ev if e["ph"] == "X")["ph"] = "E"
        broken = os.path.join(tmp, "broken.json")
        with open(broken, "w") as f:
            json.dump(doc, f)
        if not problems(in_viewer(catapult, chromium, broken, tmp), doc):
            fail("the viewer's import of a broken timeline passed the checks")
    print(f"Catapult's viewer imported {got['slices']} slices, {got['flows']} arrows, "
          f"{got['threads']} rows of {got['processes']} process(es), no warnings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
