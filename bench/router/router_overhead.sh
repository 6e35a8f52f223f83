#!/usr/bin/env bash
# Router overhead: `pagoda bench serve` against one `pagoda serve` replica directly and through
# `pagoda router` (one backend, no ladder), same workload and seed; prints the p50/p99 TTFT of
# both and the difference (issue 35's target: <= 1 ms p50 and <= 5 ms p99 at 256 streams). The
# router passes /tokenize through, so both runs use exact-length prompts.
# A tool, not a test: run it on a quiet machine.
#   bench/router/router_overhead.sh [BUILD_DIR] [MODEL] [CONCURRENCY] [NUM_PROMPTS] [INPUT_LEN] [OUTPUT_LEN]
set -euo pipefail
BUILD=${1:-build}
MODEL=${2:-models/demo.gguf}
CONCURRENCY=${3:-256}
NUM_PROMPTS=${4:-1024}
INPUT_LEN=${5:-32}
OUTPUT_LEN=${6:-16}
PAGODA=$BUILD/bin/pagoda
SERVE_PORT=${SERVE_PORT:-18731}
ROUTER_PORT=${ROUTER_PORT:-18732}
TMP=$(mktemp -d)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

wait_health() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0
    sleep 0.1
  done
  echo "no /health on port $1" >&2
  return 1
}

"$PAGODA" serve -m "$MODEL" --host 127.0.0.1 --port "$SERVE_PORT" --max-num-seqs "$CONCURRENCY" \
  2>"$TMP/serve.log" &
PIDS+=($!)
cat >"$TMP/router.yaml" <<YAML
listen: {host: 127.0.0.1, port: $ROUTER_PORT}
backends: [{name: r0, url: "http://127.0.0.1:$SERVE_PORT", models: [demo]}]
YAML
"$PAGODA" router --config "$TMP/router.yaml" >"$TMP/router.log" 2>&1 &
PIDS+=($!)
wait_health "$SERVE_PORT"
wait_health "$ROUTER_PORT"

# Different seeds: the same prompts twice would hit the replica's prefix cache the second time.
run() {
  "$PAGODA" bench serve --url "http://127.0.0.1:$1" --concurrency "$CONCURRENCY" \
    --num-prompts "$NUM_PROMPTS" --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --seed "$2" --json
}
run "$SERVE_PORT" 3 >/dev/null  # warm-up: the replica's first requests pay one-time costs
run "$SERVE_PORT" 1 >"$TMP/direct.json"
run "$ROUTER_PORT" 2 >"$TMP/router.json"
/usr/bin/python3 - "$TMP/direct.json" "$TMP/router.json" <<'PY'
import json, sys
d, r = (json.load(open(p)) for p in sys.argv[1:3])
for name, x in (("direct", d), ("router", r)):
    print(f"{name:7s} completed {x['completed']}/{x['num_prompts']}  ttft p50 {x['ttft']['p50_ms']:.2f} ms"
          f"  p99 {x['ttft']['p99_ms']:.2f} ms  e2e p50 {x['e2e_latency']['p50_ms']:.2f} ms")
print(f"added   ttft p50 {r['ttft']['p50_ms'] - d['ttft']['p50_ms']:+.2f} ms"
      f"  p99 {r['ttft']['p99_ms'] - d['ttft']['p99_ms']:+.2f} ms")
PY
