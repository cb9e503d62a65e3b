#!/usr/bin/env bash
# Packs what tests/gpu/smoke.sh needs from a build directory into a small self-contained folder
# (bin/, lib/, deps/), for a GPU host that has the NVIDIA driver but none of the build
# dependencies: binaries and libraries stripped of debug info, and the Debian shared libraries
# they load (except glibc, libstdc++ and libgcc_s, which the host's own, newer, must provide).
# Usage: tests/gpu/pack-prebuilt.sh BUILD_DIR OUT_DIR
#   then, on the GPU host: GSHARE_SMOKE_PREBUILT=1 tests/gpu/smoke.sh OUT_DIR
#   (gshare-demo, gshare-trace, sample_overhead_bench and the workload data come along when built,
#   for `OUT_DIR/bin/gshare-demo --real-gpu ...` and `sample_overhead_bench --real-gpu`).
#   tests/gpu/mps-check.sh needs nothing packed (python3 + the driver; its helper mps_probe.py
#   runs from the source tree); its step 7 uses OUT_DIR via `--build OUT_DIR`.
set -euo pipefail
B=${1:?usage: pack-prebuilt.sh BUILD_DIR OUT_DIR}
O=${2:?usage: pack-prebuilt.sh BUILD_DIR OUT_DIR}
BINS=(gshare-arbiter gshare-loadgen sample-cnn sample-bert sample-llm preload_probe
      preload_unit_test preload_memory_unit_test)
OPTIONAL_BINS=(sample_overhead_bench preload_memory_vmm_kernel_bench gshare-ctl gshare-demo gshare-trace)
rm -rf "$O" && mkdir -p "$O/bin" "$O/lib" "$O/deps"
for b in "${BINS[@]}"; do
  [[ -x "$B/bin/$b" ]] || { echo "pack-prebuilt: $B/bin/$b is missing (build it first)" >&2; exit 1; }
  strip --strip-debug -o "$O/bin/$b" "$B/bin/$b"
done
for b in "${OPTIONAL_BINS[@]}"; do
  [[ -x "$B/bin/$b" ]] && strip --strip-debug -o "$O/bin/$b" "$B/bin/$b"
done
strip --strip-debug -o "$O/lib/libgshare.so" "$B/lib/libgshare.so"
# The workload data gshare-loadgen and gshare-demo read (<bin>/../share/gshare/workload).
[[ -d "$B/share/gshare/workload" ]] && mkdir -p "$O/share/gshare" && cp -r "$B/share/gshare/workload" "$O/share/gshare/"
# Shared libraries outside the C/C++ runtime that the binaries load.
for f in "$O"/bin/* "$O/lib/libgshare.so"; do
  ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    *) cp -L "$lib" "$O/deps/" ;;
  esac
done
du -sh "$O" | awk '{print "pack-prebuilt: " $1 " in " $2}'
