#!/usr/bin/env python3
"""check_setup_frameworks.py --source DIR --cuda-home DIR: what a failed
PyTorch install leaves, as CI meets it when PyPI cannot be reached.

- `scripts/setup-deps --frameworks` with pip offline (PIP_NO_INDEX=1 and an
  empty PIP_FIND_LINKS folder) into an environment ($GRAPE_FRAMEWORKS_VENV)
  fails loudly: exit 1 and an error naming the step, after pip's own error.
  The test makes the environment itself, without pip of its own (`venv
  --without-pip --system-site-packages`: seconds, where ensurepip takes 20 s
  on a loaded machine), so pip's error is "No matching distribution found"
  where the system's Python has pip, and "No module named pip" where not:
  either is a failed `pip install torch`.
- It notes why in the environment's install-failed.txt, and the torch tests
  (check_torch_examples.py, as meson runs it) skip citing that note.
- An environment that does hold a CUDA build of torch (here a stand-in
  package with a libtorch_cuda.so beside it) is left as it is, and its old
  note removed: the next test run finds torch, not the old failure.

Skipped where python3-venv is not installed (setup-deps would apt-get it), or
the system's Python imports torch (the environment sees its packages).
"""
import argparse
import os
import subprocess
import sys
import tempfile

def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-3000:]}"
    sys.exit("FAIL: " + msg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--cuda-home", required=True)
    a = ap.parse_args()
    venv_pkg = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "python3-venv"],
                              capture_output=True, text=True)
    if "install ok installed" not in venv_pkg.stdout:
        print("skipped: python3-venv is not installed (scripts/setup-deps --frameworks installs it)")
        return 77

    with tempfile.TemporaryDirectory() as d:
        venv = os.path.join(d, "venv")
        wheels = os.path.join(d, "no-wheels")
        os.mkdir(wheels)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                        venv], check=True, timeout=60)
        has = subprocess.run([os.path.join(venv, "bin", "python"), "-c", "import torch"],
                             capture_output=True, timeout=120)
        if has.returncode == 0:
            print(f"skipped: {sys.executable} imports a torch of its own")
            return 77
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "GRAPE_"))}
        env.update(GRAPE_FRAMEWORKS_VENV=venv, CUDA_HOME=a.cuda_home, PIP_NO_INDEX="1",
                   PIP_FIND_LINKS=wheels)
        setup = [os.path.join(a.source, "scripts", "setup-deps"), "--frameworks"]
        p = subprocess.run(setup, capture_output=True, text=True, timeout=120, env=env)
        if p.returncode != 1 or "setup-deps: error: pip install torch failed" not in p.stderr:
            fail("setup-deps --frameworks offline must exit 1 naming pip's failure", p)
        note_file = os.path.join(venv, "install-failed.txt")
        if not os.path.exists(note_file):
            fail(f"the failed install left no {note_file}", p)
        note = open(note_file).read().strip().split("\n")
        pip_error = note[-1]
        if "pip install torch exited 1" not in note[0] or len(note) < 2 \
                or pip_error not in p.stderr:
            fail(f"install-failed.txt does not say what failed, with pip's error: {note!r}", p)

        check = [sys.executable, os.path.join(a.source, "tests", "cli", "check_torch_examples.py"),
                 "train_mlp", "off", "--grape", "-", "--source", a.source]
        p = subprocess.run(check, capture_output=True, text=True, timeout=120, env=env)
        if p.returncode != 77 or "the framework install failed: scripts/setup-deps --frameworks" \
                not in p.stdout or pip_error not in p.stdout:
            fail("the torch test must skip citing the failed install", p)
        print(p.stdout.strip())

        # A CUDA build of torch in the environment (a stand-in): nothing to
        # install, and the old note goes.
        site = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, timeout=60).stdout.strip()
        os.makedirs(os.path.join(site, "torch", "lib"))
        open(os.path.join(site, "torch", "__init__.py"), "w").close()
        open(os.path.join(site, "torch", "lib", "libtorch_cuda.so"), "w").close()
        p = subprocess.run(setup, capture_output=True, text=True, timeout=120, env=env)
        if p.returncode != 0 or os.path.exists(note_file):
            fail("with torch in place, setup-deps --frameworks must succeed and drop the note", p)
    print("ok: an offline install fails loudly, and the torch tests skip citing why")
    return 0


if __name__ == "__main__":
    sys.exit(main())
