#!/usr/bin/env bash
# dryrun.sh - the GPU kit's CI checks (tests/gpukit/meson.build).
#   dryrun.sh syntax                    bash -n on the scripts, Python compiles
#   dryrun.sh dryrun BUILD plain|sanitized   bench/gpu/run.sh --sim on BUILD, then the results
#                                       must hold a row for every check and no fail or error
set -u
KIT=$(cd "$(dirname "$0")/../../bench/gpu" && pwd)
case "${1:-}" in
syntax)
  for f in "$KIT"/*.sh; do bash -n "$f" || { echo "bash -n failed: $f"; exit 1; }; done
  # compile() is py_compile without writing __pycache__ into the source tree
  python3 -c 'import sys
for f in sys.argv[1:]:
    compile(open(f).read(), f, "exec")' "$KIT"/*.py || exit 1
  echo "syntax ok: $(ls "$KIT"/*.sh "$KIT"/*.py | wc -l) files"
  ;;
dryrun)
  BUILD=$2
  if [ "${3:-plain}" = sanitized ]; then
    echo "SKIP: the dry run preloads libgrape.so into uninstrumented programs; it runs in the plain build"
    exit 77
  fi
  W=$(mktemp -d "${TMPDIR:-/tmp}/gpukit-dry.XXXXXX")
  trap 'rm -rf "$W"' EXIT
  GPUKIT_WORK=$W OUT=$W/out bash "$KIT/run.sh" --sim --build "$BUILD"
  rc=$?
  python3 - "$W/out" "$rc" <<'PY' || exit 1
import glob, json, sys
out, rc = sys.argv[1], int(sys.argv[2])
js = [p for p in glob.glob(out + "/*-sim.json")]
if len(js) != 1 or not glob.glob(out + "/*-sim.md"):
    sys.exit(f"dry run wrote no results (rc={rc}): {glob.glob(out + '/*')}")
doc = json.load(open(js[0]))
checks = {r["check"] for r in doc["rows"]}
want = {"routes", "correctness", "workloads", "costs", "predictor"}
if checks != want:
    sys.exit(f"checks missing from the results: {sorted(want - checks)}")
bad = [r for r in doc["rows"] if r["status"] in ("fail", "error")]
for r in bad:
    print("BAD:", json.dumps(r))
if bad or rc != 0:
    sys.exit(f"dry run: {len(bad)} failed rows, run.sh rc={rc}")
print("dry run ok:", doc["counts"])
PY
  ;;
*) echo "usage: dryrun.sh syntax | dryrun BUILD plain|sanitized" >&2; exit 2 ;;
esac
