#!/usr/bin/env bash
# Builds the shim (gshare_preload: libgshare.so and the libraries it links) with clang's
# thread-safety analysis (-Wthread-safety -Wthread-safety-beta, as errors) in build-tsa, so
# the GUARDED_BY / REQUIRES / ACQUIRED_BEFORE annotations (gshare/common/thread_annotations.h,
# the lock order in preload/src/runtime/runtime.h) are checked by the compiler. The analysis
# is a front-end pass: the build is unoptimised (-O0, no debug info) to be quick.
# Installs Debian's clang when clang++ is missing (root or sudo). Prints the warnings and exits
# non-zero if the build fails or any warning is reported.
# Usage: scripts/thread_safety.sh [TARGET...]      (default: gshare_preload)
# Environment: GSHARE_TSA_BUILD_DIR (default build-tsa), GSHARE_TSA_JOBS (build jobs, nproc).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${GSHARE_TSA_BUILD_DIR:-$ROOT/build-tsa}
JOBS=${GSHARE_TSA_JOBS:-$(nproc)}
targets=("$@")
((${#targets[@]} == 0)) && targets=(gshare_preload)
start=$(date +%s)

if ! command -v clang++ >/dev/null; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "thread-safety: need root or sudo to install clang" >&2; exit 1; }
    SUDO="sudo"
  fi
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
    --no-install-recommends clang || { echo "thread-safety: cannot install clang" >&2; exit 1; }
fi

# -Wthread-safety-beta: also checks ACQUIRED_BEFORE/AFTER (the lock order).
# GSHARE_WERROR stays on: any other clang warning in project code fails the build too.
TSA_FLAGS="-O0 -Wthread-safety -Wthread-safety-beta -Werror=thread-safety"
if [[ ! -f $BUILD/build.ninja ]]; then
  mkdir -p "$BUILD"
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_C_FLAGS="-O0" -DCMAKE_CXX_FLAGS="$TSA_FLAGS" \
    -DGSHARE_BUILD_TESTS=OFF -DGSHARE_BUILD_BENCH=OFF >"$BUILD/configure.log" 2>&1 \
    || { cat "$BUILD/configure.log"; echo "thread-safety: configure failed"; exit 1; }
fi

log=$BUILD/thread-safety.log
cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}" -- -k 0 >"$log" 2>&1
rc=$?
warnings=$(grep -c 'warning:' "$log")
errors=$(grep -c 'error:' "$log")
grep -E -A3 'warning:|error:' "$log" | head -200
elapsed=$(( $(date +%s) - start ))
if ((rc != 0 || warnings != 0)); then
  echo "thread-safety: FAIL (${errors} errors, ${warnings} warnings; build log $log) in ${elapsed} s"
  exit 1
fi
echo "thread-safety: PASS (${targets[*]}: no thread-safety warning) in ${elapsed} s"
