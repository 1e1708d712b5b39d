#!/usr/bin/env python3
"""The anchors (anchors.py) under each of the sim's cost profiles
(sim/costs/: default, fair, pessimistic) and under its built-in table, at
SIMCU_HOST_NS 0 and 2000: one table per profile. Exits non-zero when any run
changed a result.

usage: profiles.py ANCHORS_PY --examples DIR --simdir DIR --lib LIBGRAPE [--jobs J]
(ninja -C build bench-graph-profiles)"""
import subprocess
import sys


def main():
    anchors, rest = sys.argv[1], sys.argv[2:]
    rc = 0
    for profile in ["", "default", "fair", "pessimistic"]:
        print(f"\n### {profile or 'built-in table'}\n", flush=True)
        r = subprocess.run([sys.executable, anchors, "--host-ns", "0,2000"] +
                           (["--profile", profile] if profile else []) + rest)
        rc = rc or r.returncode
    return rc


if __name__ == "__main__":
    sys.exit(main())
