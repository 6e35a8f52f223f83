#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR/bin (fuzz_*) for SECONDS each, seeded from
# tests/fuzz/<target>/corpus when present. Fails on the first crash, leak or sanitizer report.
set -euo pipefail
build_dir=${1:-build-fuzz}
seconds=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
shopt -s nullglob
targets=("$build_dir"/bin/fuzz_*)
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "run-fuzz: no fuzz targets in $build_dir/bin" >&2
  exit 1
fi
status=0
for t in "${targets[@]}"; do
  name=$(basename "$t")
  work=$(mktemp -d)
  seeds=()
  if [[ -d "$root/tests/fuzz/${name#fuzz_}/corpus" ]]; then
    seeds+=("$root/tests/fuzz/${name#fuzz_}/corpus")
  fi
  echo "run-fuzz: $name for ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
       "$t" -max_total_time="$seconds" -rss_limit_mb=4096 -malloc_limit_mb=2048 \
       -timeout=10 -print_final_stats=1 -artifact_prefix="$work/" \
       "$work" "${seeds[@]+"${seeds[@]}"}" >"$work/log" 2>&1; then
    echo "run-fuzz: $name FAILED; last lines:" >&2
    tail -n 60 "$work/log" >&2
    ls "$work" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$work/log" | tr '\n' ' '
    echo
  fi
  rm -rf "$work"
done
exit $status
