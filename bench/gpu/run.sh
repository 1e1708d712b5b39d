#!/usr/bin/env bash
# run.sh - grape's GPU validation kit: one command, one device call.
#
# DESIGN
# Sessions get a GPU rarely and for minutes, so everything is prepared here and
# the device run only builds, measures and reports. This script records the
# machine, builds grape there (falling back to binaries carried from a dev
# machine, see pack.sh), then hands over to kit.py, which runs the checks in
# order of importance, each with its own time limit taken from one budget:
#   1 routes  2 correctness  3 torch workloads  4 costs  5 concurrency  6 predictor
# so a run cut short still answers the first questions. Every feature of grape
# is probed before use (a CLI subcommand, a report field): what has not landed
# is reported "not available yet", never a failure. Results: $OUT/<date>-<gpu>.json,
# $OUT/<date>-<gpu>.md (commit both to bench/results/), run.log, logs.tar.gz.
#
# Usage: bench/gpu/run.sh [--sim] [--quick] [--build DIR | --carried] [--budget S] [--only LIST] [--skip LIST]
#   --sim      dry run on the simulated device (build/sim); no GPU, torch if it imports
#   --quick    smaller iteration counts and budget (about 3 minutes on a GPU)
#   --build    use this existing build directory, do not build
#   --carried  use the carried build (build-carry/, made by pack.sh) without building
#   --budget   whole-run budget in seconds (GPU default 450, --sim 100)
#   --only / --skip   comma list of checks: probe,routes,correctness,workloads,costs,concurrency,predictor
# Env: OUT (results folder; default $GPUKIT_WORK/out), GPUKIT_WORK (scratch,
#      default /tmp/gpukit), CUDA_HOME, GPUKIT_CARRY (carried build, default build-carry).
# Exit status: 0 when no check failed ("not available yet" and skips are not failures).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
START=$(date +%s)

SIM=0 QUICK=0 BUILD="" BUDGET="" ONLY="" SKIP=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sim) SIM=1 ;;
    --quick) QUICK=1 ;;
    --build) BUILD=$2; shift ;;
    --carried) BUILD=${GPUKIT_CARRY:-$ROOT/build-carry} ;;
    --budget) BUDGET=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --skip) SKIP=$2; shift ;;
    -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$BUDGET" ]; then
  if [ $SIM = 1 ]; then BUDGET=100; elif [ $QUICK = 1 ]; then BUDGET=200; else BUDGET=450; fi
fi
W=${GPUKIT_WORK:-/tmp/gpukit}
OUTDIR=${OUT:-$W/out}
# results of an earlier run must not be mistaken for this one's
rm -rf "$W/logs" "$W/env.txt" "$W/reports" "$W/ops" "$W/simextras" "$W/probe_out" "$W/costs" "$W/table.txt"
mkdir -p "$W/logs" "$OUTDIR" || exit 1
LOG=$W/logs/run.log
: > "$LOG"

elapsed() { echo $(( $(date +%s) - START )); }
say() { printf '== [%3ss] %s\n' "$(elapsed)" "$*" | tee -a "$LOG"; }
# left RESERVE: seconds of budget left after keeping RESERVE back
left() { echo $(( BUDGET - $(elapsed) - ${1:-0} )); }
wanted() {
  case ",$SKIP," in *",$1,"*) return 1 ;; esac
  [ -z "$ONLY" ] && return 0
  case ",$ONLY," in *",$1,"*) return 0 ;; esac
  return 1
}

# ---------------------------------------------------------------- toolchain
NVCC=$(command -v nvcc || true)
[ -z "$NVCC" ] && [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ] && NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
CUDA_HOME=${CUDA_HOME:-$([ -n "$NVCC" ] && dirname "$(dirname "$NVCC")" || echo /usr/local/cuda)}
PY=$(command -v python3 || true)
if [ -z "$PY" ]; then echo "run.sh: python3 is required" | tee -a "$LOG"; exit 1; fi

# ---------------------------------------------------------------- 0. the machine
say "machine"
{
  kv() { printf '%s=%s\n' "$1" "$(printf '%s' "$2" | tr '\n' ' ' | sed 's/ *$//')"; }
  kv mode "$([ $SIM = 1 ] && echo sim || echo gpu)"
  kv date_utc "$(date -u +%FT%TZ)"
  kv host "$(uname -srm)"
  kv os "$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
  kv glibc "$(ldd --version 2>&1 | head -1)"
  kv cpus "$(nproc)"
  kv gpu "$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null | head -1)"
  kv nvcc "${NVCC:-none} $([ -n "$NVCC" ] && "$NVCC" --version 2>/dev/null | tail -1)"
  kv cuda_home "$CUDA_HOME"
  kv cc "$(cc --version 2>/dev/null | head -1)"
  kv python "$("$PY" --version 2>&1) $PY"
  kv torch "$(timeout 60 "$PY" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.is_available())' 2>/dev/null || echo none)"
  kv meson "$(meson --version 2>/dev/null || echo none)"
  kv ninja "$(ninja --version 2>/dev/null || echo none)"
  kv pkg_config "$(pkg-config --version 2>/dev/null || echo none)"
  # what a build of grape needs: headers (-dev packages) and runtime libraries
  for h in libelf.h gelf.h xxhash.h lz4.h zstd.h zlib.h criterion/criterion.h; do
    f=$(echo '' | cc -E -x c - -v 2>&1 >/dev/null | sed -n '/^ \//p' | while read -r d; do [ -e "$d/$h" ] && echo "$d/$h" && break; done)
    kv "header_$h" "${f:-missing}"
  done
  for l in libelf.so.1 libxxhash.so.0 liblz4.so.1 libzstd.so.1 libz.so.1 libcuda.so.1; do
    kv "lib_$l" "$(ldconfig -p 2>/dev/null | awk -v n="$l" '$1 == n {print $NF; exit}')"
  done
  kv cuda_h "$([ -e "$CUDA_HOME/include/cuda.h" ] && echo "$CUDA_HOME/include/cuda.h" || echo missing)"
  # the device gets a copy of the work tree without .git: pack.sh leaves the commit in build-carry/SOURCE
  kv commit "$(git -C "$ROOT" describe --always --dirty 2>/dev/null || cat "${GPUKIT_CARRY:-$ROOT/build-carry}/SOURCE" 2>/dev/null || echo unknown)"
} > "$W/env.txt" 2>/dev/null
sed 's/^/   /' "$W/env.txt" | tee -a "$LOG"
timeout 20 nvidia-smi -q > "$W/logs/nvidia-smi.txt" 2>&1 || rm -f "$W/logs/nvidia-smi.txt"

# ---------------------------------------------------------------- 1. build grape
BUILD_SRC=""
if [ -n "$BUILD" ]; then
  BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || { say "build dir '$BUILD' not found"; exit 2; }
  BUILD_SRC="given"
elif [ $SIM = 1 ]; then
  BUILD=$ROOT/build
  if [ ! -f "$BUILD/build.ninja" ]; then
    say "no build in $BUILD: run 'meson setup build && ninja -C build' first, or pass --build"
    exit 2
  fi
  BUILD_SRC="given"
else
  # Build here, in the repo, so the carried layout ($ORIGIN/../deplibs) holds too.
  BUILD=$ROOT/build-gpu
  # normally under a minute there (16 cores); a build that takes longer falls back to build-carry/
  t=$(left 220); [ "$t" -gt 180 ] && t=180; [ "$t" -lt 60 ] && t=60
  say "build grape in $BUILD (meson + ninja, limit ${t}s)"
  nvopt=$([ -n "$NVCC" ] && echo -Dnvcc=enabled || echo -Dnvcc=auto)
  timeout -k 5 "$t" bash -c '
    set -o pipefail
    cd "$1" || exit 1
    opts=(-Dtests=disabled -Dbuildtype=release "-Dcudadir=$3" "$4")
    if [ -f "$2/build.ninja" ]; then meson setup --reconfigure "$2" "${opts[@]}"
    else meson setup "$2" "${opts[@]}"; fi && ninja -C "$2"' _ "$ROOT" "$BUILD" "$CUDA_HOME" "$nvopt" \
    > "$W/logs/build.log" 2>&1
  brc=$?
  echo "   rc=$brc; last lines:" | tee -a "$LOG"
  tail -n 4 "$W/logs/build.log" | cut -c1-200 | sed 's/^/   | /' | tee -a "$LOG"
  if [ $brc -eq 0 ]; then
    BUILD_SRC="built here"
  else
    CARRY=${GPUKIT_CARRY:-$ROOT/build-carry}
    if [ -d "$CARRY" ]; then
      say "build failed here: using the carried build $CARRY (see bench/gpu/README.md)"
      BUILD=$(cd "$CARRY" && pwd); BUILD_SRC="carried"
    else
      say "build failed and no carried build ($CARRY): checks that need grape will say so"
      BUILD_SRC="none"
    fi
  fi
fi
echo "build_dir=$BUILD" >> "$W/env.txt"
echo "build_source=$BUILD_SRC" >> "$W/env.txt"

# ---------------------------------------------------------------- 2. the shared probe (routes, grape-independent)
# ../shared does not travel to the device: the README's recipe copies it to .probe/.
PROBE=""
for d in "$ROOT/.probe" "$ROOT/shared/device/probe" "$ROOT/../shared/device/probe" "$ROOT/../../shared/device/probe"; do
  [ -x "$d/run.sh" ] && PROBE=$d && break
done
if [ $SIM = 1 ]; then
  echo "probe=skipped (sim)" >> "$W/env.txt"
elif ! wanted probe; then
  echo "probe=skipped (--only/--skip)" >> "$W/env.txt"
elif [ -z "$PROBE" ]; then
  say "probe: not carried (.probe/ missing), skipped"
  echo "probe=not carried" >> "$W/env.txt"
else
  pb=$(left 240); [ "$pb" -gt 100 ] && pb=100
  if [ "$pb" -lt 45 ]; then
    say "probe: skipped, budget used up"; echo "probe=no budget" >> "$W/env.txt"
  else
    say "probe: $PROBE/run.sh (budget ${pb}s, cuda_shared + torch)"
    rm -rf "$W/probe_out"
    OUT=$W/probe_out PROBE_WORK=$W/probe PROBE_BUDGET=$pb PROBE_STEP_TIMEOUT=60 \
      PROBE_SKIP=selftest,cuda_static TORCH_APP_SKIP=compile \
      timeout -k 10 $((pb + 20)) bash "$PROBE/run.sh" > "$W/logs/probe.log" 2>&1
    echo "probe=rc $?" >> "$W/env.txt"
    tail -n 25 "$W/logs/probe.log" | sed 's/^/   | /' | tee -a "$LOG"
  fi
fi

# ---------------------------------------------------------------- 3. the checks
k=$(left 15)
say "checks (kit.py, ${k}s left)"
args=(--work "$W" --out "$OUTDIR" --root "$ROOT" --build "$BUILD" --deadline $(( START + BUDGET - 15 )))
[ $SIM = 1 ] && args+=(--sim)
[ $QUICK = 1 ] && args+=(--quick)
[ -n "$ONLY" ] && args+=(--only "$ONLY")
[ -n "$SKIP" ] && args+=(--skip "$SKIP")
[ -n "${GPUKIT_FAKE_WORKLOADS:-}" ] && args+=(--fake-workloads "$GPUKIT_FAKE_WORKLOADS")  # tests only
[ -n "$NVCC" ] && args+=(--nvcc "$NVCC" --cuda-home "$CUDA_HOME")
PYTHONUNBUFFERED=1 timeout -k 5 $(( k > 20 ? k : 20 )) "$PY" "$HERE/kit.py" "${args[@]}" 2>&1 | tee -a "$LOG"
rc=${PIPESTATUS[0]}
[ "$rc" -eq 124 ] && say "kit.py ran out of budget (partial results kept)"

# ---------------------------------------------------------------- 4. collect ($OUT: at most 8 files)
cp "$W/env.txt" "$OUTDIR/env.txt" 2>/dev/null
(cd "$W" && tar czf "$OUTDIR/logs.tar.gz" --ignore-failed-read logs probe_out reports ops 2>/dev/null)
if [ "$(stat -c %s "$OUTDIR/logs.tar.gz" 2>/dev/null || echo 0)" -gt 15000000 ]; then
  # a file over 16 MiB does not come back: leave out the probe's own archive and big logs
  (cd "$W" && find logs reports -size -2M -type f -print0 | tar czf "$OUTDIR/logs.tar.gz" --null -T - probe_out/summary.txt 2>/dev/null)
  say "logs.tar.gz was over 15 MB: kept logs under 2 MB each and the probe's summary"
fi
say "done in $(elapsed)s; results in $OUTDIR: $(ls "$OUTDIR" | tr '\n' ' ') run.log"
cp "$LOG" "$OUTDIR/run.log"
# the table last, so the device tool's output_tail ends with it
[ -s "$W/table.txt" ] && { echo; cat "$W/table.txt"; }
exit "$rc"
