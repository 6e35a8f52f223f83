#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/bin (fuzz_*) for SECONDS each, JOBS at a time
# (default: the core count), seeded from tests/fuzz/<target>/corpus when present. Fails when any
# target reports a crash, leak or sanitizer error; each failure's log tail is printed.
set -euo pipefail
build_dir=${1:-build-fuzz}
seconds=${2:-30}
jobs=${3:-$(nproc)}
root=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob
targets=("$build_dir"/bin/fuzz_*)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "run-fuzz: no fuzz targets in $build_dir/bin" >&2
  exit 1
fi
if ! [[ $jobs =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fuzz: JOBS must be a positive integer, got '$jobs'" >&2
  exit 2
fi
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

# One target: its log and a pass/fail marker go to $results/<name>.{log,ok,failed}.
run_one() {
  local t=$1 name work
  name=$(basename "$t")
  work=$(mktemp -d)
  local seeds=()
  if [[ -d "$root/tests/fuzz/${name#fuzz_}/corpus" ]]; then
    seeds+=("$root/tests/fuzz/${name#fuzz_}/corpus")
  fi
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
     "$t" -max_total_time="$seconds" -rss_limit_mb=4096 -malloc_limit_mb=2048 \
     -timeout=10 -print_final_stats=1 -artifact_prefix="$work/" \
     "$work" "${seeds[@]+"${seeds[@]}"}" >"$results/$name.log" 2>&1; then
    touch "$results/$name.ok"
  else
    ls "$work" >>"$results/$name.log" 2>&1 || true
    touch "$results/$name.failed"
  fi
  rm -rf "$work"
}

running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  echo "run-fuzz: $(basename "$t") for ${seconds}s"
  run_one "$t" &
  running=$((running + 1))
done
wait || true

status=0
for t in "${targets[@]}"; do
  name=$(basename "$t")
  if [[ -e "$results/$name.ok" ]]; then
    echo "run-fuzz: $name ok: $(grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' \
      "$results/$name.log" | tr '\n' ' ')"
  else
    echo "run-fuzz: $name FAILED; last lines:" >&2
    tail -n 60 "$results/$name.log" >&2 || true
    status=1
  fi
done
exit $status
