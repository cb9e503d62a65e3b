#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (+ASan+UBSan) in build-fuzz and runs
# each for SECONDS (default 30), starting from the checked-in corpus (tests/fuzz/corpus/<t>/).
# New inputs go to build-fuzz/fuzz-corpus/<t>/ (the checked-in seeds are never modified);
# crashing inputs to build-fuzz/fuzz-artifacts/<t>/. Prints one line per target with the
# executions libFuzzer reported, and exits non-zero if any target crashed, leaked or timed out.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     (targets without the fuzz_ prefix)
# Environment: GSHARE_FUZZ_BUILD_DIR (default build-fuzz), GSHARE_FUZZ_JOBS (build jobs, nproc).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_PER_TARGET=${1:-30}
shift || true
BUILD=${GSHARE_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
JOBS=${GSHARE_FUZZ_JOBS:-$(nproc)}

if [[ ! -f $BUILD/build.ninja ]]; then
  CC=clang CXX=clang++ cmake -S "$ROOT" -B "$BUILD" -G Ninja -DGSHARE_FUZZ=ON \
    -DGSHARE_WERROR=OFF -DGSHARE_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    || { echo "fuzz: configure failed"; exit 1; }
fi
cmake --build "$BUILD" -j"$JOBS" --target gshare_fuzzers || { echo "fuzz: build failed"; exit 1; }

targets=("$@")
if ((${#targets[@]} == 0)); then
  for seeds in "$ROOT"/tests/fuzz/corpus/*/; do targets+=("$(basename "$seeds")"); done
fi

failed=0
summary=()
for t in "${targets[@]}"; do
  bin=$BUILD/bin/fuzz_$t
  seeds=$ROOT/tests/fuzz/corpus/$t
  work=$BUILD/fuzz-corpus/$t
  artifacts=$BUILD/fuzz-artifacts/$t
  log=$BUILD/fuzz-logs/$t.log
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  if [[ ! -x $bin || ! -d $seeds ]]; then
    summary+=("$(printf '%-16s %14s %10s %8s  %s' "$t" - - - "MISSING (no binary or no corpus)")")
    failed=1
    continue
  fi
  # -timeout: one input running over 10 s is a hang; -rss_limit_mb: 2 GiB is a leak or a bomb.
  "$bin" -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$work" "$seeds" >"$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  corpus=$(find "$work" -type f | wc -l)
  if ((rc == 0)); then
    result=ok
  else
    failed=1
    crash=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //')
    result="FAIL rc=$rc ${crash:-see $log}"
  fi
  summary+=("$(printf '%-16s %14s %10s %8s  %s' "$t" "${execs:-?}" "${rate:-?}" "$corpus" "$result")")
done

echo
echo "fuzz: ${SECONDS_PER_TARGET} s per target (logs in $BUILD/fuzz-logs)"
printf '%-16s %14s %10s %8s  %s\n' target executions exec/s corpus result
for line in "${summary[@]}"; do echo "$line"; done
if ((failed)); then
  echo "fuzz: FAIL (a crashing input: reproduce with $BUILD/bin/fuzz_<target> <file>; add it to tests/fuzz/corpus/<target>/ once fixed)"
  exit 1
fi
echo "fuzz: PASS"
