#!/usr/bin/env bash
# pack.sh - prepares what the GPU kit carries to the device machine, on a dev machine.
#
# DESIGN
# The device machine may lack the -dev packages grape builds against (libelf,
# xxhash, lz4, zstd headers), so run.sh falls back to binaries built here. This
# script builds them with -Dstatic_deps=true (dependencies linked statically where
# their archives allow, the rest bundled in build-carry/deplibs and found through a
# $ORIGIN/../deplibs RPATH), copies only the built programs and libraries, with
# their paths, into build-carry/ (ignored by git: /build*/), and copies the shared
# probe kit into .probe/ (also ignored). Then: run(..., carry=[".probe", "build-carry"]).
# Usage: bench/gpu/pack.sh [--jobs N]     (from anywhere; writes into the repo root)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
JOBS=2
[ "${1:-}" = "--jobs" ] && JOBS=$2
cd "$ROOT"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
SRC=build-static
opts=(-Dstatic_deps=true -Dtests=disabled -Dbuildtype=release "-Dcudadir=$CUDA_HOME")
[ -x "$CUDA_HOME/bin/nvcc" ] && opts+=(-Dnvcc=enabled) && export PATH="$CUDA_HOME/bin:$PATH"
if [ -f "$SRC/build.ninja" ]; then meson setup --reconfigure "$SRC" "${opts[@]}" > "$SRC.setup.log"
else meson setup "$SRC" "${opts[@]}" > "$SRC.setup.log"; fi
ninja -C "$SRC" -j"$JOBS"

rm -rf build-carry
mkdir -p build-carry/deplibs
# every ELF program or library the build made, at the same relative path
(cd "$SRC" && find . -path ./meson-private -prune -o -name '*.p' -prune -o \( -type f -o -type l \) -print) |
while read -r f; do
  case "$f" in *.so|*.so.*) ;; *) [ -x "$SRC/$f" ] || continue ;; esac
  [ -L "$SRC/$f" ] || head -c 4 "$SRC/$f" | grep -q 'ELF' || continue
  mkdir -p "build-carry/$(dirname "$f")"
  cp -a "$SRC/$f" "build-carry/$f"
done
git -C "$ROOT" describe --always --dirty > build-carry/SOURCE 2>/dev/null || echo unknown > build-carry/SOURCE
# the dependencies that stayed dynamic: copy their runtime libraries
find build-carry -type f \( -name '*.so*' -o -perm -u+x \) ! -path '*/deplibs/*' |
while read -r f; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}' |
    grep -E '/lib(elf|z|zstd|lz4|xxhash)\.so' || true
done | sort -u | while read -r lib; do cp -L "$lib" build-carry/deplibs/; done

# the shared probe kit travels as .probe/ (../shared does not travel)
for d in "$ROOT/shared/device/probe" "$ROOT/../shared/device/probe" "$ROOT/../../shared/device/probe"; do
  if [ -d "$d" ]; then rm -rf .probe; cp -r "$d" .probe; chmod -R u+w .probe; break; fi
done

echo "pack: build-carry/ $(du -sh build-carry | cut -f1), .probe/ $(du -sh .probe 2>/dev/null | cut -f1 || echo missing)"
echo "pack: deplibs: $(ls build-carry/deplibs | tr '\n' ' ')"
for f in build-carry/tools/grape build-carry/interpose/libgrape.so build-carry/sim/libcuda.so.1; do
  [ -e "$f" ] || continue
  echo "pack: $f: RPATH $(readelf -d "$f" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p'); dynamic deps: $(ldd "$f" | awk '$3 ~ /^\// {print $1}' | tr '\n' ' ')"
done
build-carry/tools/grape --version
# Proof that the carried binaries need none of the libraries they bundle: hide the
# system's copies in a private mount namespace (root only) and run grape there.
hide=""
for l in libelf.so.1 libz.so.1 libzstd.so.1 liblz4.so.1 libxxhash.so.0; do
  p=$(ldconfig -p | awk -v n="$l" '$1 == n && !found {print $NF; found = 1}')  # no early exit: SIGPIPE + pipefail
  [ -n "$p" ] && hide="$hide $(readlink -f "$p")"
done
# What is checked: the CLI, and (once the sim, the shim and the examples exist) dynrnn on
# the carried sim under the carried shim, which loads cubin/ (libelf) in both libraries.
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null; then
  C=$ROOT/build-carry
  # shellcheck disable=SC2016
  probe='for f in $0; do mount --bind /dev/null "$f" || exit 3; done
    "$1/tools/grape" --version || exit 4
    [ -x "$1/examples/dynrnn" ] && [ -e "$1/sim/libcuda.so.1" ] && [ -e "$1/interpose/libgrape.so" ] || exit 0
    LD_LIBRARY_PATH="$1/sim" LD_PRELOAD="$1/interpose/libgrape.so" GRAPE_MODE=observe "$1/examples/dynrnn" --iters 1 | grep -q "^checksum" || exit 5
    echo "dynrnn ran"'
  if out=$(unshare -m bash -c "$probe" "$hide" "$C" 2>&1); then
    echo "pack: with the system's$hide hidden: grape runs$(echo "$out" | grep -q 'dynrnn ran' && echo ', and dynrnn runs on the carried sim under the carried shim')"
  else
    echo "pack: warning: the carried build did not run with the system's dependency libraries hidden:" >&2
    echo "$out" | tail -3 >&2
  fi
fi
# the kit's own dry run on the carried build: what the device will fall back to must pass
if [ -e build-carry/sim/libcuda.so.1 ]; then
  if GPUKIT_WORK=/tmp/gpukit-pack OUT=/tmp/gpukit-pack/out bash bench/gpu/run.sh --sim --build build-carry > /tmp/gpukit-pack.log 2>&1; then
    echo "pack: dry run on build-carry: $(grep '^totals:' /tmp/gpukit-pack.log)"
  else
    echo "pack: warning: the dry run on build-carry failed (see /tmp/gpukit-pack.log):" >&2
    grep -E '^[a-z]+ +.* (fail|error) ' /tmp/gpukit-pack.log | head -5 >&2 || true
  fi
fi
echo 'pack: now run(command="bash bench/gpu/run.sh", carry=[".probe", "build-carry"], timeout_s=540)'
