#!/usr/bin/env bash
# dryrun.sh - the GPU kit's CI checks (tests/gpukit/meson.build).
#   dryrun.sh syntax                    bash -n on the scripts, Python compiles, pyflakes
#   dryrun.sh dryrun BUILD plain|sanitized [kit|fake]   (kit: the first run below; fake: the
#                                       other two; both when not given)
#                                       bench/gpu/run.sh --sim --quick on BUILD, then the
#                                       results must hold a row for every check and no fail or
#                                       error; again with a stand-in for workloads.py (no torch
#                                       here), and with a planted digest mismatch that must fail
#                                       (these two skip costs and concurrency, which the first
#                                       run covers and which are most of its time)
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
  # dry NAME EXPECT [ENV=V...] [-- RUN.SH ARGS...]: a dry run (--quick: the same steps
  # with fewer iterations, so that the test stays short on a busy machine);
  # EXPECT ok = no fail/error rows and rc 0, EXPECT fail = at least one fail row and
  # rc 1 (the kit must report what breaks)
  dry() {
    local name=$1 expect=$2 envs=(); shift 2
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    echo "--- dry run '$name' (expect $expect)"
    env "${envs[@]}" GPUKIT_WORK="$W/$name" OUT="$W/$name/out" \
      bash "$KIT/run.sh" --sim --quick --build "$BUILD" "$@"
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
  part=${4:-both}
  if [ "$part" != fake ]; then dry plain ok || exit 1; fi
  [ "$part" = kit ] && exit 0
  # through kit.py's torch paths with a stand-in for workloads.py
  dry fake ok GPUKIT_FAKE_WORKLOADS="$HERE/fake_workloads.py" -- --skip costs,concurrency || exit 1
  if [ -e "$BUILD/interpose/libgrape.so" ]; then
    dry planted fail GPUKIT_FAKE_WORKLOADS="$HERE/fake_workloads.py" FAKE_DIGEST_BAD=1 \
      -- --skip costs,concurrency || exit 1
  fi
  ;;
*) echo "usage: dryrun.sh syntax | dryrun BUILD plain|sanitized" >&2; exit 2 ;;
esac
