#!/usr/bin/env python3
"""check_setup_viewer.py --source DIR --cuda-home DIR: what
`scripts/setup-deps --viewer` leaves when Catapult cannot be fetched, as CI
meets it without the network, and when it is there.

In a folder laid out as a checkout (scripts/setup-deps and the viewer
check, tests/replay/check_viewer.py, copied into it):
- With Catapult's repository unreachable (GRAPE_CATAPULT_URL naming a folder
  that does not exist) setup-deps --viewer fails loudly: exit 1 and an error
  naming the git fetch, after git's own error; it leaves no .deps/catapult/
  (nor a half-fetched one) and notes why in .deps/viewer-install-failed.txt,
  and the viewer check skips, saying that setup-deps --viewer fetches it and
  citing that note.
- With Catapult at the pinned commit in .deps/catapult/ (a copy of the
  source's, where setup-deps --viewer fetched it there) it fetches nothing,
  says nothing, removes the old note, and the viewer check finds it.

Skipped without chromium (setup-deps would apt-get it); the second half is
skipped without the source's .deps/catapult/.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

from check_setup_frameworks import fail  # noqa: E402 (its twin, for setup-deps --frameworks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--cuda-home", required=True)
    a = ap.parse_args()
    if shutil.which("chromium") is None:
        print("skipped: chromium is not installed (scripts/setup-deps --viewer installs it)")
        return 77

    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "scripts"))
        shutil.copy2(os.path.join(a.source, "scripts", "setup-deps"), os.path.join(d, "scripts"))
        shutil.copytree(os.path.join(a.source, "tests", "replay"), os.path.join(d, "tests", "replay"),
                        ignore=lambda _, names: [n for n in names if not n.endswith((".py", ".html"))])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPE_", "CATAPULT_"))}
        env.update(CUDA_HOME=a.cuda_home, GRAPE_CATAPULT_URL="file://" + os.path.join(d, "nowhere"))
        setup = [os.path.join(d, "scripts", "setup-deps"), "--viewer"]
        check = [sys.executable, os.path.join(d, "tests", "replay", "check_viewer.py")] + \
            [x for opt in ("--grape", "--prog", "--preload", "--simdir") for x in (opt, "-")]
        deps = os.path.join(d, ".deps")
        note_file = os.path.join(deps, "viewer-install-failed.txt")

        p = subprocess.run(setup, capture_output=True, text=True, timeout=120, env=env)
        if p.returncode != 1 or "setup-deps: error: git fetch of Catapult" not in p.stderr:
            fail("setup-deps --viewer without Catapult's repository must exit 1 naming the fetch", p)
        if not os.path.exists(note_file):
            fail(f"the failed fetch left no {note_file}", p)
        if sorted(os.listdir(deps)) != ["viewer-install-failed.txt"]:
            fail(f"the failed fetch left {sorted(os.listdir(deps))} in .deps/", p)
        note = open(note_file).read().strip().split("\n")
        git_error = note[-1]
        if "git fetch of Catapult" not in note[0] or "exited 128" not in note[0] or len(note) < 2 \
                or git_error not in p.stderr:
            fail(f"viewer-install-failed.txt does not say what failed, with git's error: {note!r}", p)

        p = subprocess.run(check, capture_output=True, text=True, timeout=60, env=env)
        if p.returncode != 77 or "scripts/setup-deps --viewer fetches it there" not in p.stdout \
                or "the viewer install failed: scripts/setup-deps --viewer failed" not in p.stdout \
                or git_error not in p.stdout:
            fail("the viewer check must skip saying how to get Catapult and citing the failure", p)
        print(p.stdout.strip())

        fetched = os.path.join(a.source, ".deps", "catapult")
        if not os.path.exists(os.path.join(fetched, "tracing", "bin", "trace2html")):
            print(f"ok: an offline fetch fails loudly and the viewer check skips citing why "
                  f"(not checked: Catapult in place, for want of {fetched})")
            return 0
        shutil.copytree(fetched, os.path.join(deps, "catapult"), symlinks=True)
        p = subprocess.run(setup, capture_output=True, text=True, timeout=120, env=env)
        if p.returncode != 0 or p.stdout or p.stderr or os.path.exists(note_file):
            fail("with Catapult in place, setup-deps --viewer must do nothing, quietly, "
                 "and drop the note", p)
        sys.path.insert(0, os.path.join(d, "tests", "replay"))
        import check_viewer  # noqa: E402  (the copy, which finds the copy's .deps/)
        os.environ.pop("CATAPULT_DIR", None)
        try:
            catapult, _ = check_viewer.viewer_tools()
        except SystemExit:
            fail("with Catapult in place, the viewer check skips (above)")
        if catapult != os.path.join(deps, "catapult"):
            fail(f"the viewer check looks for Catapult in {catapult}, not in .deps/catapult/")
    print("ok: an offline fetch fails loudly and the viewer check skips citing why; "
          "with Catapult in place nothing is fetched and the check finds it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
