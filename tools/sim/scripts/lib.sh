# Shared by results.sh and generality.sh, sourced with their arguments [BUILD_DIR] [OUT_DIR]:
# sets sim (the gshare-sim binary), out (the results directory, created) and policies, and
# defines run() and proxy(); proxy() tries the pools in $pools (default: 8 16 ... 280) in order.
build=${1:-build}
out=${2:-sim-results}
sim="$build/bin/gshare-sim"
mkdir -p "$out"
policies=keepalive,fifo,dual-queue,aggressive

run() {  # name, then gshare-sim arguments
  local name=$1
  shift
  echo "== $name: gshare-sim $*"
  "$sim" "$@" --json "$out/$name.json" | tee "$out/$name.txt"
}

# proxy-swap: the smallest pool (of $pools) whose SLO attainment reaches aggressive's.
proxy() {  # name, then workload arguments
  local name=$1
  shift
  local target pool last
  target=$(python3 -c "import json,sys; r=[x for x in json.load(open('$out/$name.json'))['runs'] if x['policy']=='aggressive'][0]; print(r['slo_attainment'])")
  for pool in ${pools:-8 16 24 32 40 48 56 64 80 96 128 160 200 240 280}; do
    last=$pool
    "$sim" "$@" --policy proxy-swap --pool "$pool" --quiet --json "$out/$name-proxy-$pool.json"
    local slo
    slo=$(python3 -c "import json; print(json.load(open('$out/$name-proxy-$pool.json'))['runs'][0]['slo_attainment'])")
    if python3 -c "import sys; sys.exit(0 if $slo >= $target else 1)"; then
      echo "== $name: proxy-swap --pool $pool reaches $slo >= aggressive's $target"
      cp "$out/$name-proxy-$pool.json" "$out/$name-proxy.json"
      return
    fi
  done
  echo "== $name: no proxy-swap pool up to $last GPUs reaches aggressive's $target; using $last"
  cp "$out/$name-proxy-$last.json" "$out/$name-proxy.json"
}
