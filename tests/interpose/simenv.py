"""The environment the interpose tests run a program on the sim with."""
import os

# Builds free and on the program's thread: short test runs must replay to
# test replay (the default costs would rightly run them eagerly, and a
# builder thread's graphs come some simulated time after it is asked).
FREE_BUILDS = "build=0,build_node=0"


def sim_env(simdir, preload, d, shim, mode="graph", extra=None, clean=False):
    """os.environ for a run on the sim in folder d: the sim's libraries and
    report (sim.%p.json), a sanitizer runtime in preload kept, and with shim
    the shim preloaded in mode with its report (grape.%p.json) and free
    inline builds; extra last. clean: GRAPE_ and SIMCU_ variables of the
    caller's environment dropped first."""
    e = dict(os.environ)
    if clean:
        for k in [k for k in e if k.startswith(("GRAPE_", "SIMCU_"))]:
            e.pop(k)
    e["LD_LIBRARY_PATH"] = simdir + ":" + e.get("LD_LIBRARY_PATH", "")
    e["SIMCU_REPORT"] = os.path.join(d, "sim.%p.json")
    e.setdefault("ASAN_OPTIONS", "detect_leaks=0")
    san = ":".join(x for x in preload.split(":") if x and "libgrape" not in x)
    e.pop("LD_PRELOAD", None)
    if san:
        e["LD_PRELOAD"] = san
    if shim:
        e["LD_PRELOAD"] = preload
        e["GRAPE_REPORT"] = os.path.join(d, "grape.%p.json")
        e["GRAPE_MODE"] = mode
        e["GRAPE_COSTS"] = FREE_BUILDS
        e["GRAPE_BUILDER"] = "inline"
    e.update(extra or {})
    return e
