#!/usr/bin/env bash
# Starts a mix of sample servers (sample-cnn, -bert, -llm), waits until all are READY, writes a
# gshare-loadgen targets file, then keeps them running until it gets SIGTERM/SIGINT (or stdin
# closes with --until-stdin-closes), when it stops every server it started (by pid) and waits.
# Servers inherit the environment (LD_LIBRARY_PATH for simcuda, LD_PRELOAD for gshare, ...).
#
#   samples/start-samples.sh --mix cnn=6,bert=4,llm=2 --targets targets.toml [--base-port 9000]
#       [--slo cnn=50,bert=30,llm=2000] [--quota cnn=96MiB,bert=320MiB,llm=1152MiB]
#       [--build DIR] [--simcuda] [--logs DIR] [--device D]
#
# Server i of kind K is named K-i (seed i+1) and listens on base-port + n (n counts all servers
# in order; base port 0: each picks a free port). Prints "READY <n> servers, targets in FILE".
# Each server gets GSHARE_FUNCTION=K-i, GSHARE_SLO_MS=<its kind's SLO> and, with --quota,
# GSHARE_VGPU_MEMORY=<its kind's quota> (read by libgshare.so when LD_PRELOAD is set).
# Exit status: 0 after a clean stop, 1 if a server failed to start (the others are stopped).
set -euo pipefail

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
build="$here/../build"
mix="cnn=1,bert=1,llm=1"
targets=""
base_port=0
slos="cnn=100,bert=100,llm=2000"
quotas=""
logs=""
device=0
use_simcuda=0
until_stdin=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mix) mix="$2"; shift 2 ;;
    --targets) targets="$2"; shift 2 ;;
    --base-port) base_port="$2"; shift 2 ;;
    --slo) slos="$2"; shift 2 ;;
    --quota) quotas="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --logs) logs="$2"; shift 2 ;;
    --device) device="$2"; shift 2 ;;
    --simcuda) use_simcuda=1; shift ;;
    --until-stdin-closes) until_stdin=1; shift ;;
    *) usage ;;
  esac
done
[[ -n "$targets" ]] || usage
if [[ $use_simcuda == 1 ]]; then
  export LD_LIBRARY_PATH="$build/simcuda-lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
if [[ -z "$logs" ]]; then logs=$(mktemp -d "/tmp/gshare-samples-$$-XXXX"); fi
mkdir -p "$logs"

declare -A slo_of
IFS=, read -ra pairs <<< "$slos"
for p in "${pairs[@]}"; do slo_of[${p%%=*}]=${p#*=}; done
declare -A quota_of
if [[ -n "$quotas" ]]; then
  IFS=, read -ra pairs <<< "$quotas"
  for p in "${pairs[@]}"; do quota_of[${p%%=*}]=${p#*=}; done
fi

pids=()
names=()
kinds=()
stop_all() {
  trap - TERM INT EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  local status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  return $status
}
trap 'stop_all; exit 1' EXIT
trap 'stop_all; exit $?' TERM INT

n=0
IFS=, read -ra groups <<< "$mix"
for g in "${groups[@]}"; do
  kind=${g%%=*}
  count=${g#*=}
  bin="$build/bin/sample-$kind"
  [[ -x "$bin" ]] || { echo "start-samples: no $bin (build it first)" >&2; exit 1; }
  for ((i = 0; i < count; i++)); do
    name="$kind-$i"
    port=0
    if [[ "$base_port" != 0 ]]; then port=$((base_port + n)); fi
    quota_env=()
    if [[ -n "${quota_of[$kind]:-}" ]]; then quota_env=("GSHARE_VGPU_MEMORY=${quota_of[$kind]}"); fi
    env GSHARE_FUNCTION="$name" GSHARE_SLO_MS="${slo_of[$kind]:-100}" "${quota_env[@]}" \
      "$bin" --port "$port" --name "$name" --seed $((i + 1)) --device "$device" \
      > "$logs/$name.out" 2> "$logs/$name.err" &
    pids+=($!)
    names+=("$name")
    kinds+=("$kind")
    n=$((n + 1))
  done
done

# Wait for every READY line (or a server's death).
deadline=$((SECONDS + 600))
for idx in "${!names[@]}"; do
  name=${names[$idx]}
  until grep -q '^READY ' "$logs/$name.out" 2>/dev/null; do
    if ! kill -0 "${pids[$idx]}" 2>/dev/null || ((SECONDS > deadline)); then
      echo "start-samples: $name did not become ready; its log:" >&2
      tail -5 "$logs/$name.err" >&2
      exit 1
    fi
    sleep 0.2
  done
done

{
  echo "# Written by samples/start-samples.sh: one target per running sample server."
  for idx in "${!names[@]}"; do
    name=${names[$idx]}
    port=$(sed -n 's/^PORT=//p' "$logs/$name.out")
    echo "[[target]]"
    echo "name = \"$name\""
    echo "url = \"http://127.0.0.1:$port/v2/models/$name\""
    echo "slo_ms = ${slo_of[${kinds[$idx]}]:-100}"
  done
} > "$targets"
echo "READY $n servers, targets in $targets, logs in $logs"

if [[ $until_stdin == 1 ]]; then
  cat > /dev/null || true
  stop_all
  trap - EXIT
  exit 0
fi
# Sleep in the background so the traps run as soon as a signal arrives.
while true; do sleep 1 & wait $! || true; done
