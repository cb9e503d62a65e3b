#!/bin/bash
# Device check on a real NVIDIA GPU (not part of CI): GSHARE_BACKTRACE on the real driver, then
# gshare-arbiter (told the GPU has 1 GiB, so two 768 MiB vGPUs must take turns) + gshare-trace
# recording + two preloaded preload_probe programs verifying their data in turns; prints the
# trace's validation and summary (docs/tracing.md, "On a real GPU"). Results go to $OUT.
#
# Usage: copy this script into a kit folder next to stripped copies of libgshare.so,
# gshare-arbiter, gshare-trace, preload_probe and backtrace_probe, with a lib/ folder holding the
# shared libraries the GPU host lacks (libspdlog, libfmt, libtomlplusplus, libcpp-httplib,
# libbrotli*, libunwind.so.8), then run it there: OUT=/some/dir bash KIT/device_check.sh
K=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$K/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi -L; ldconfig -p | grep -E "libcuda.so.1|libunwind|liblzma" | head
echo "== 1. backtrace on the real driver"
LD_PRELOAD=$K/libgshare.so GSHARE_VGPU_MEMORY=256MiB GSHARE_BACKTRACE=1 GSHARE_LOG_FILE=$OUT/bt.log timeout 60 $K/backtrace_probe 1; echo "rc=$?"
cat $OUT/bt.log
echo "== 2. arbiter + gshare-trace + two preloaded programs"
D=/tmp/g; mkdir -p $D
$K/gshare-arbiter --socket $D/arb.sock --event-ring $D/events --gpu-memory 1GiB --gpu-count 1 --slice 5ms --summary $OUT/arb-summary.json --log-level info > $OUT/arb.log 2>&1 &
AP=$!; sleep 1
$K/gshare-trace record --ring $D/events --from-start --duration 150s -o $OUT/trace.json 2> $OUT/rec.err &
RP=$!
for i in 0 1; do
  ( sleep $((3 + i)); for r in 1 2 3; do echo verify; sleep 2; done; echo quit ) | \
  LD_PRELOAD=$K/libgshare.so GSHARE_ARBITER_SOCKET=$D/arb.sock GSHARE_VGPU_MEMORY=768MiB GSHARE_FUNCTION=fn$i GSHARE_SLO_MS=50 GSHARE_LOG_FILE=$OUT/p$i.log \
  timeout 90 $K/preload_probe swap $((11 + i)) 6 96 > $D/p$i.out 2>&1 &
  eval P$i=$!
done
wait $P0 $P1; echo "probes rc done"; grep -v "^ptr=" $D/p0.out | tail -5; grep -v "^ptr=" $D/p1.out | tail -5
kill -INT $RP; wait $RP; kill -TERM $AP; wait $AP
cat $OUT/rec.err; tail -5 $OUT/arb.log; cat $OUT/arb-summary.json
$K/gshare-trace validate $OUT/trace.json
$K/gshare-trace summary $OUT/trace.json | tee $OUT/summary.txt
