#!/usr/bin/env python3
"""check_install.py --meson MESON --build BUILD --source SOURCE --examples DIR
[--preload PRELOAD]: `meson install` gives a grape that works alone.

Installs the build into a DESTDIR and checks what is there: the CLI, the
shim with its versioned SONAME (libgrape.so.0) and the unversioned name, the
simulated device in its own folder (LIBDIR/grape/sim), the public headers
and a pkg-config file that a program compiles and links with, the man page
(every command grape --help lists, rendered by man when there is one) and
the model. Then, with the build and source trees hidden from it (a mount
namespace lays empty folders over them: as if they were removed), the
installed grape runs the demo (decode, copied out first like any user's
program): same output as from the build tree, kernels run on the installed
sim. The installed grape must not hold the build's path either.

Skips (77) without nvcc's examples, or where no mount namespace can be made
(unshare), saying which.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-3000:]}"
    sys.exit("FAIL: " + msg)


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)


def clean_env(a, **extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("GRAPE_", "SIMCU_")) and k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    san = ":".join(x for x in a.preload.split(":") if x and not x.endswith("libgrape.so"))
    if san:
        e["LD_PRELOAD"] = san
        e["ASAN_OPTIONS"] = "detect_leaks=0"
    e.update(extra)
    return e


def one(pattern):
    found = glob.glob(pattern)
    if len(found) != 1:
        fail(f"want one {pattern}, found {found}")
    return found[0]


def builds_no_tests(a, tmp):
    """A build configured with -Dtests=disabled (the build to install from,
    README.md) installs what this one does, and its install builds nothing of
    tests/. Configured with this build's options (cudadir, nvcc), not built: its
    files are the ones installed above, from the same meson.build files."""
    opts = {o["name"]: o["value"] for o in json.loads(
        sh([a.meson, "introspect", a.build, "--buildoptions"]).stdout)}
    lean = os.path.join(tmp, "build-install")
    p = sh([a.meson, "setup", lean, a.source, "-Dtests=disabled",
            f"-Dcudadir={opts['cudadir']}", f"-Dnvcc={opts['nvcc']}"])
    if p.returncode != 0:
        fail("meson setup -Dtests=disabled", p)

    def installed(build):
        return sorted(json.loads(sh([a.meson, "introspect", build, "--installed"]).stdout).values())
    if installed(lean) != installed(a.build):
        fail(f"-Dtests=disabled installs {installed(lean)}, the tests' build {installed(a.build)}")
    p = sh(["ninja", "-C", lean, "-t", "commands", "install"])
    steps = p.stdout.splitlines()
    tests = [c for c in steps if "tests/" in c.replace(a.source, "")]
    if p.returncode != 0 or not steps or tests:
        fail(f"-Dtests=disabled: ninja install builds {len(tests)} steps of tests/, "
             f"first: {tests[:1]}", p)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--meson", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--preload", default="")
    a = ap.parse_args()
    demo = os.path.join(a.examples, "decode")
    if not os.path.exists(demo):
        print("skipped: the demo program (examples/decode) needs nvcc")
        return 77
    probe = sh(["unshare", "-rm", "true"])
    if probe.returncode != 0:
        print(f"skipped: no mount namespace here to hide the build tree (unshare -rm: "
              f"{probe.stderr.strip()})")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "dest")
        p = sh([a.meson, "install", "-C", a.build, "--destdir", dest, "--no-rebuild", "--quiet"])
        if p.returncode != 0:
            fail("meson install", p)
        grape = one(os.path.join(dest, "**", "bin", "grape").replace("**", "*/*"))
        prefix = os.path.dirname(os.path.dirname(grape))
        lib = one(os.path.join(prefix, "lib*", "**", "libgrape.so").replace("**", "*")
                  ) if not os.path.exists(os.path.join(prefix, "lib", "libgrape.so")) \
            else os.path.join(prefix, "lib", "libgrape.so")
        libdir = os.path.dirname(lib)

        # The shim: versioned SONAME, and that name installed.
        p = sh(["readelf", "-d", lib])
        if "Library soname: [libgrape.so.0]" not in p.stdout:
            fail(f"{lib}: SONAME", p)
        if os.path.realpath(os.path.join(libdir, "libgrape.so.0")) != os.path.realpath(lib):
            fail("libgrape.so.0 is not installed beside libgrape.so")
        # The sim in its own folder; nothing of it beside the libraries.
        for f in ("libcuda.so.1", "libcudart.so.13"):
            if not os.path.isfile(os.path.join(libdir, "grape", "sim", f)):
                fail(f"{f} not in {libdir}/grape/sim")
            if os.path.exists(os.path.join(libdir, f)):
                fail(f"{f} installed beside other libraries, where it shadows CUDA's")
        if not os.path.isfile(os.path.join(prefix, "share", "grape", "default_model.txt")):
            fail("the default model is not installed")
        # Nothing of the build tree in what the installed program loads (its
        # debug information names the compile directory, which is no lookup).
        stripped = os.path.join(tmp, "grape.stripped")
        p = sh(["objcopy", "--strip-debug", grape, stripped])
        if p.returncode != 0:
            fail("objcopy --strip-debug", p)
        if a.build.encode() in open(stripped, "rb").read():
            fail(f"{grape} holds the build's path {a.build}")

        # Headers and pkg-config: a program built against the install.
        pc = os.path.join(libdir, "pkgconfig")
        cflags = sh(["pkg-config", "--cflags", "--libs", "grape"],
                     env=dict(os.environ, PKG_CONFIG_PATH=pc, PKG_CONFIG_SYSROOT_DIR=dest))
        if cflags.returncode != 0:
            fail("pkg-config grape", cflags)
        src = os.path.join(tmp, "v.c")
        open(src, "w").write('#include <grape/grape.h>\n#include <grape/trace.h>\n'
                             '#include <grape/predict.h>\n#include <stdio.h>\n'
                             'int main(void) { printf("%u %d\\n", grape_version(), '
                             'grape_version() == GRAPE_VERSION_NUMBER); return 0; }\n')
        exe = os.path.join(tmp, "v")
        p = sh(["cc", src, "-o", exe] + cflags.stdout.split())
        if p.returncode != 0:
            fail("compiling against the installed headers with pkg-config's flags", p)
        p = sh([exe], env=clean_env(a, LD_LIBRARY_PATH=libdir))
        if p.returncode != 0 or not p.stdout.strip().endswith(" 1"):
            fail("a program linked against the installed library", p)

        # The man page lists every command and renders.
        man = one(os.path.join(prefix, "share", "man", "man1", "grape.1"))
        page = open(man).read()
        top = sh([grape, "--help"], env=clean_env(a))
        names = [l.split()[0] for l in top.stdout.splitlines() if l.startswith("  ") and l.strip()]
        missing = [n for n in names if f".SS {n}\n" not in page]
        if not names or missing:
            fail(f"man page lacks {missing} of {names}")
        if shutil.which("man"):
            p = sh(["man", "-l", man], env=dict(os.environ, MANWIDTH="80", MAN_KEEP_STDERR="1"))
            if p.returncode != 0 or "grape run" not in p.stdout:
                fail("man -l grape.1", p)

        # The demo from the installed copy, the build and source trees hidden.
        prog = os.path.join(tmp, "decode")
        shutil.copy(demo, prog)
        want = sh([os.path.join(a.build, "tools", "grape"), "run", "--", prog],
                  env=clean_env(a), cwd=tmp)
        if want.returncode != 0:
            fail("the demo from the build tree", want)
        hide = " && ".join(f"mount -t tmpfs none '{d}'" for d in (a.build, a.source))
        p = sh(["unshare", "-rm", "sh", "-c",
                f"{hide} && test ! -e '{a.build}/tools/grape' && exec \"$@\"", "sh",
                grape, "run", "--predict-gpu", "H100", "--", prog], env=clean_env(a), cwd=tmp)
        if p.returncode != 0 or p.stdout != want.stdout:
            fail("the demo from the installed grape with the build tree gone", p)
        if "grape: mode graph:" not in p.stderr or " 0 kernel launches" in p.stderr:
            fail("the installed grape's summary: no kernels ran", p)
        if "predicted" not in p.stderr.lower():
            fail("the installed grape's summary lacks the predicted times", p)
        builds_no_tests(a, tmp)
        print(f"installed under {prefix}: demo ran with the build tree hidden; "
              "a -Dtests=disabled build installs the same files and builds no tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
