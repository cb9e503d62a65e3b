#!/usr/bin/env bash
# Builds gshare (installing dependencies if missing) and runs the whole test suite with CTest.
# Usage: scripts/test.sh [ctest args...]   (build directory: $GSHARE_BUILD_DIR or ./build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${GSHARE_BUILD_DIR:-$ROOT/build}
bash "$ROOT/scripts/build.sh" "$BUILD_DIR"
cd "$BUILD_DIR"
ctest --output-on-failure -j"$(nproc)" --timeout 600 "$@"
