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
if ! cmake --build "$BUILD_DIR" -j"$(nproc)"; then
  # Say what the machine had when the build stopped (a compiler killed for memory or a full disk
  # prints little), then build once more, one job at a time, so a real error is printed alone
  # and a build that fails for the machine's sake is told apart from one that fails for ours.
  echo "build: failed; the machine now:" >&2
  df -h "$BUILD_DIR" /tmp >&2 || true
  free -m >&2 || true
  (dmesg 2>/dev/null | tail -n 5 | grep -i -E "oom|killed" >&2) || true
  echo "build: building again with -j1 to show the error" >&2
  cmake --build "$BUILD_DIR" -j1
fi
