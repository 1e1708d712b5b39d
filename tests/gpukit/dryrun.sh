#!/usr/bin/env bash
# dryrun.sh - the GPU kit's CI checks (tests/gpukit/meson.build).
#   dryrun.sh syntax                    bash -n on the scripts, Python compiles, pyflakes
#   dryrun.sh dryrun BUILD plain|sanitized   bench/gpu/run.sh --sim on BUILD, then the results
#                                       must hold a row for every check and no fail or error;
#                                       again with a stand-in for workloads.py (no torch here),
#                                       and with a planted digest mismatch that must fail
set -u
KIT=$(cd "$(dirname "$0")/../../bench/gpu" && pwd)
case "${1:-}" in
syntax)
  for f in "$KIT"/*.sh; do bash -n "$f" || { echo "bash -n failed: $f"; exit 1; }; done
  # compile() is py_compile without writing __pycache__ into the source tree
  python3 -c 'import sys
for f in sys.argv[1:]:
    compile(open(f).read(), f, "exec")' "$KIT"/*.py || exit 1
  # names too: most of workloads.py runs only on a GPU, so CI must catch what it can here
  lint=$(command -v pyflakes3 || true)
  if [ -z "$lint" ] && python3 -c 'import pyflakes' 2>/dev/null; then lint="python3 -m pyflakes"; fi
  if [ -n "$lint" ]; then
    $lint "$KIT"/*.py "$(dirname "$0")"/*.py || { echo "pyflakes found problems"; exit 1; }
  else
    echo "note: pyflakes not installed (python3-pyflakes): names in the Python files not checked"
  fi
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
  HERE=$(cd "$(dirname "$0")" && pwd)
  # dry NAME EXPECT [ENV=V...]: a dry run; EXPECT ok = no fail/error rows and rc 0,
  # EXPECT fail = at least one fail row and rc 1 (the kit must report what breaks)
  dry() {
    local name=$1 expect=$2; shift 2
    echo "--- dry run '$name' (expect $expect)"
    env "$@" GPUKIT_WORK="$W/$name" OUT="$W/$name/out" bash "$KIT/run.sh" --sim --build "$BUILD"
    python3 - "$W/$name/out" "$?" "$expect" <<'PY'
import glob, json, sys
out, rc, expect = sys.argv[1], int(sys.argv[2]), sys.argv[3]
js = glob.glob(out + "/*-sim.json")
if len(js) != 1 or not glob.glob(out + "/*-sim.md"):
    sys.exit(f"dry run wrote no results (rc={rc}): {glob.glob(out + '/*')}")
doc = json.load(open(js[0]))
checks = {r["check"] for r in doc["rows"]}
want = {"routes", "correctness", "workloads", "costs", "concurrency", "predictor"}
if checks != want:
    sys.exit(f"checks missing from the results: {sorted(want - checks)}")
bad = [r for r in doc["rows"] if r["status"] in ("fail", "error")]
if expect == "ok":
    for r in bad:
        print("BAD:", json.dumps(r))
    if bad or rc != 0:
        sys.exit(f"dry run: {len(bad)} failed rows, run.sh rc={rc}")
elif not any(r["status"] == "fail" for r in bad) or rc != 1:
    sys.exit(f"dry run: a planted failure was not reported (rc={rc})")
print("dry run ok:", doc["counts"])
PY
  }
  dry plain ok || exit 1
  # through kit.py's torch paths with a stand-in for workloads.py
  dry fake ok GPUKIT_FAKE_WORKLOADS="$HERE/fake_workloads.py" || exit 1
  if [ -e "$BUILD/interpose/libgrape.so" ]; then
    dry planted fail GPUKIT_FAKE_WORKLOADS="$HERE/fake_workloads.py" FAKE_DIGEST_BAD=1 || exit 1
  fi
  ;;
*) echo "usage: dryrun.sh syntax | dryrun BUILD plain|sanitized" >&2; exit 2 ;;
esac
