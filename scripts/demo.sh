#!/usr/bin/env bash
# The main job: builds gshare (installing dependencies if missing) and runs the demo on
# simulated GPUs (simcuda), so it works on any machine without a GPU.
# Usage: scripts/demo.sh [demo args...]   (build directory: $GSHARE_BUILD_DIR or ./build)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${GSHARE_BUILD_DIR:-$ROOT/build}
bash "$ROOT/scripts/build.sh" "$BUILD_DIR"
export LD_LIBRARY_PATH="$BUILD_DIR/simcuda-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SIMCUDA_DEVICES=${SIMCUDA_DEVICES:-2x16GiB}
export SIMCUDA_KERNELS=${SIMCUDA_KERNELS:-$BUILD_DIR/lib/libsimcuda_kernels.so}
exec "$BUILD_DIR/bin/simcuda-demo" "$@"
