#!/usr/bin/env bash
# Installs dependencies (if missing), configures and builds gshare.
# Usage: scripts/build.sh [BUILD_DIR] [extra cmake -D options...]   (default BUILD_DIR: build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${1:-$ROOT/build}
shift || true
bash "$ROOT/scripts/install-deps.sh"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja "$@"
elif (($# > 0)); then
  cmake "$BUILD_DIR" "$@"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
