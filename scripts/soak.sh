#!/usr/bin/env bash
# Runs the data-integrity soak (tests/soak) for longer than CI does.
# Usage: scripts/soak.sh [--minutes N] [--functions F] [--seed S]
#   build directory: $GSHARE_BUILD_DIR or ./build (configured if missing; only soak_test and
#   what it runs are built, with -j2)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${GSHARE_BUILD_DIR:-$ROOT/build}
MINUTES=10
FUNCTIONS=5
SEED=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) MINUTES=$2; shift 2 ;;
    --functions) FUNCTIONS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    -h|--help) sed -n 2,5p "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
if [[ ! -f "$BUILD_DIR/build.ninja" && ! -f "$BUILD_DIR/Makefile" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja
fi
cmake --build "$BUILD_DIR" -j2 --target soak_test
GSHARE_SOAK_SECONDS=$((MINUTES * 60)) GSHARE_SOAK_FUNCTIONS=$FUNCTIONS GSHARE_SOAK_SEED=$SEED \
  "$BUILD_DIR/bin/soak_test" --gtest_brief=0
