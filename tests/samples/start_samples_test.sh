#!/usr/bin/env bash
# Test of samples/start-samples.sh: starts two sample-cnn servers on simcuda, drives them with
# gshare-loadgen through the targets file the script wrote, stops the script with SIGTERM and
# checks that it exits 0 and that the servers' ports are closed. Also checks that each server got
# its gshare settings (GSHARE_FUNCTION, GSHARE_SLO_MS, GSHARE_VGPU_MEMORY from --slo/--quota).
# Usage: start_samples_test.sh SOURCE_DIR BUILD_DIR
set -u
src=$1
build=$2
export SIMCUDA_REGISTRY=/gshare-start-samples-test-$$
tmp=$(mktemp -d "/tmp/gshare-start-samples-test-$$-XXXX")
cleanup() { rm -rf "$tmp"; rm -f "/dev/shm$SIMCUDA_REGISTRY"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; cat "$tmp/out" 2>/dev/null; exit 1; }

"$src/samples/start-samples.sh" --mix cnn=2 --targets "$tmp/targets.toml" --build "$build" \
  --simcuda --logs "$tmp/logs" --slo cnn=75 --quota cnn=96MiB > "$tmp/out" 2>&1 &
sp=$!
for _ in $(seq 600); do
  grep -q '^READY 2 servers' "$tmp/out" && break
  kill -0 $sp 2>/dev/null || fail "start-samples.sh exited early"
  sleep 0.2
done
grep -q '^READY 2 servers' "$tmp/out" || { kill -TERM $sp; wait $sp; fail "servers not ready"; }
[[ $(grep -c '^\[\[target\]\]' "$tmp/targets.toml") == 2 ]] || fail "targets file: $(cat "$tmp/targets.toml")"
for name in cnn-0 cnn-1; do
  pid=$(pgrep -P $sp -f -- "--name $name( |$)")
  [[ -n "$pid" ]] || fail "no process for $name"
  env_of=$(tr '\0' '\n' < "/proc/$pid/environ")
  for want in "GSHARE_FUNCTION=$name" GSHARE_SLO_MS=75 GSHARE_VGPU_MEMORY=96MiB; do
    grep -qx "$want" <<< "$env_of" || fail "$name lacks $want"
  done
done
ports=$(sed -n 's/^url = "http:\/\/127.0.0.1:\([0-9]*\)\/.*/\1/p' "$tmp/targets.toml")

"$build/bin/gshare-loadgen" --targets-file "$tmp/targets.toml" --rate 20 --duration 1 --slo-ms 5000 \
  > "$tmp/loadgen.out" 2>&1
lg=$?
kill -TERM $sp
wait $sp
rc=$?
[[ $lg == 0 ]] || fail "gshare-loadgen exited $lg: $(cat "$tmp/loadgen.out")"
[[ $rc == 0 ]] || fail "start-samples.sh exited $rc after SIGTERM"
for p in $ports; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then fail "port $p still open after stop"; fi
done
echo "PASS"
