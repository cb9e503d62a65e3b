#!/usr/bin/env bash
# The README's first command: installs the dependencies (if missing), builds only what the demo
# needs, and runs gshare-demo: a dozen unmodified GPU inference servers sharing two simulated
# GPUs (simcuda) through gshare under a replayed trace, then the dedicated-GPU baseline, and
# prints the summary. Works on a machine without a GPU. See docs/demo.md.
# Usage: scripts/demo.sh [gshare-demo options...]   e.g. --quick, --json FILE, --real-gpu
# Build directory: $GSHARE_BUILD_DIR (default ./build, RelWithDebInfo); build jobs: $GSHARE_JOBS.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${GSHARE_BUILD_DIR:-$ROOT/build}
bash "$ROOT/scripts/install-deps.sh"
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  # The same configuration as scripts/build.sh, so scripts/test.sh can reuse the directory;
  # only the demo's targets are built below.
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
# gshare-demo depends on everything it runs (arbiter, shim, simcuda, samples, loadgen).
cmake --build "$BUILD_DIR" -j"${GSHARE_JOBS:-$(nproc)}" --target gshare-demo
exec "$BUILD_DIR/bin/gshare-demo" "$@"
