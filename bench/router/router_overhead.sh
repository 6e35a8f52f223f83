#!/usr/bin/env bash
# Router overhead: `pagoda bench serve` against one `pagoda serve` replica directly and through
# `pagoda router` (one backend, no ladder), same workload; prints the p50/p99 TTFT of both and the
# difference (issue 35's target: <= 1 ms p50 and <= 5 ms p99 at 256 streams) as a Markdown table
# and one JSON line, ready to paste. The router passes /tokenize through, so both runs use
# exact-length prompts. Direct and routed runs alternate for ROUNDS rounds (drift on the machine
# hits both alike) with a fresh seed each (the same prompts twice would hit the replica's prefix
# cache); the summary takes the median over rounds of each run's p50 and p99, and of the
# per-round differences.
# A tool, not a test: run it on a quiet machine.
#   bench/router/router_overhead.sh [BUILD_DIR] [MODEL] [CONCURRENCY] [NUM_PROMPTS] [INPUT_LEN] [OUTPUT_LEN]
# Environment: ROUNDS (3), SERVE_THREADS (the serve default), SERVE_PORT / ROUTER_PORT (free ports),
# ROUTER_CPUS / OTHER_CPUS (taskset CPU lists: the router on its own cores, the replica and the
# client on the others, as in a deployment where the router has its own pod; without them every
# process shares every core and the router's CPU is taken from the replica).
set -euo pipefail
BUILD=${1:-build}
MODEL=${2:-models/demo.gguf}
CONCURRENCY=${3:-256}
NUM_PROMPTS=${4:-1024}
INPUT_LEN=${5:-32}
OUTPUT_LEN=${6:-16}
PAGODA=$BUILD/bin/pagoda
ROUNDS=${ROUNDS:-3}
free_port() { /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
SERVE_PORT=${SERVE_PORT:-$(free_port)}
ROUTER_PORT=${ROUTER_PORT:-$(free_port)}
[[ -x $PAGODA ]] || { echo "no $PAGODA (build it: ninja -C $BUILD pagoda)" >&2; exit 1; }
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

PIN_ROUTER=() PIN_OTHERS=()
[[ -n ${ROUTER_CPUS:-} ]] && PIN_ROUTER=(taskset -c "$ROUTER_CPUS")
[[ -n ${OTHER_CPUS:-} ]] && PIN_OTHERS=(taskset -c "$OTHER_CPUS")
"${PIN_OTHERS[@]}" "$PAGODA" serve -m "$MODEL" --host 127.0.0.1 --port "$SERVE_PORT" --max-num-seqs "$CONCURRENCY" \
  ${SERVE_THREADS:+--threads "$SERVE_THREADS"} 2>"$TMP/serve.log" &
PIDS+=($!)
wait_health "$SERVE_PORT"
# The name the replica serves its model under (the router routes by it).
SERVED=$(curl -sf "http://127.0.0.1:$SERVE_PORT/v1/models" |
  /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
cat >"$TMP/router.yaml" <<YAML
listen: {host: 127.0.0.1, port: $ROUTER_PORT}
backends: [{name: r0, url: "http://127.0.0.1:$SERVE_PORT", models: ["$SERVED"]}]
YAML
"${PIN_ROUTER[@]}" "$PAGODA" router --config "$TMP/router.yaml" >"$TMP/router.log" 2>&1 &
ROUTER_PID=$!
PIDS+=($ROUTER_PID)
wait_health "$ROUTER_PORT"

run() {
  "${PIN_OTHERS[@]}" "$PAGODA" bench serve --url "http://127.0.0.1:$1" --concurrency "$CONCURRENCY" \
    --num-prompts "$NUM_PROMPTS" --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --seed "$2" --json
}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
run "$SERVE_PORT" 1000 >/dev/null  # warm-up: the replica's first requests pay one-time costs
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS" >&2
  run "$SERVE_PORT" "$((2 * r))" >"$TMP/direct_$r.json"
  # The router's CPU time (user + system clock ticks) over its rounds: on a machine whose cores
  # the replica saturates, the router's added latency is mostly this CPU taken from the replica.
  before=$(awk '{print $14 + $15}' "/proc/$ROUTER_PID/stat")
  run "$ROUTER_PORT" "$((2 * r + 1))" >"$TMP/router_$r.json"
  echo $(($(awk '{print $14 + $15}' "/proc/$ROUTER_PID/stat") - before)) >>"$TMP/router_ticks"
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$TMP" "$ROUNDS" "$MODEL" "$(nproc)" "$load_before" "$load_after" "$(getconf CLK_TCK)" <<'PY'
import json, statistics, sys
tmp, rounds, model, cpus, load_before, load_after, clk_tck = sys.argv[1:8]
rounds = int(rounds)
runs = {k: [json.load(open(f"{tmp}/{k}_{r}.json")) for r in range(1, rounds + 1)] for k in ("direct", "router")}
first = runs["direct"][0]
med = statistics.median
def ms(x, q): return x["ttft"][f"{q}_ms"]
import os
pins = os.environ.get("ROUTER_CPUS"), os.environ.get("OTHER_CPUS")
print(f"model {model}, {first['concurrency']} concurrent streams, {first['num_prompts']} prompts of "
      f"{first['input_len']} -> {first['output_len']} tokens, {rounds} rounds, {cpus} CPUs, "
      f"load average {load_before} -> {load_after}" +
      (f", router on CPUs {pins[0]}, replica and client on {pins[1]}" if any(pins) else ""))
print()
print("| round | direct TTFT p50 ms | direct p99 ms | router p50 ms | router p99 ms | added p50 ms | added p99 ms | failed (direct/router) |")
print("|---|---|---|---|---|---|---|---|")
added50, added99 = [], []
for r, (d, x) in enumerate(zip(runs["direct"], runs["router"]), 1):
    a50, a99 = ms(x, "p50") - ms(d, "p50"), ms(x, "p99") - ms(d, "p99")
    added50.append(a50); added99.append(a99)
    print(f"| {r} | {ms(d, 'p50'):.2f} | {ms(d, 'p99'):.2f} | {ms(x, 'p50'):.2f} | {ms(x, 'p99'):.2f} | "
          f"{a50:+.2f} | {a99:+.2f} | {d['failed']}/{x['failed']} |")
summary = {
    "model": model, "concurrency": first["concurrency"], "num_prompts": first["num_prompts"],
    "input_len": first["input_len"], "output_len": first["output_len"], "rounds": rounds,
    "cpus": int(cpus), "load_average": [load_before, load_after],
    "router_cpus": pins[0], "other_cpus": pins[1],
    "direct_ttft_p50_ms": med(ms(d, "p50") for d in runs["direct"]),
    "direct_ttft_p99_ms": med(ms(d, "p99") for d in runs["direct"]),
    "router_ttft_p50_ms": med(ms(x, "p50") for x in runs["router"]),
    "router_ttft_p99_ms": med(ms(x, "p99") for x in runs["router"]),
    "added_ttft_p50_ms": med(added50), "added_ttft_p99_ms": med(added99),
    "failed": sum(x["failed"] for k in runs for x in runs[k]),
}
ticks = [int(t) for t in open(f"{tmp}/router_ticks").read().split()]
summary["router_cpu_ms_per_request"] = med(
    1000.0 * t / int(clk_tck) / x["num_prompts"] for t, x in zip(ticks, runs["router"]))
print(f"| median | {summary['direct_ttft_p50_ms']:.2f} | {summary['direct_ttft_p99_ms']:.2f} | "
      f"{summary['router_ttft_p50_ms']:.2f} | {summary['router_ttft_p99_ms']:.2f} | "
      f"{summary['added_ttft_p50_ms']:+.2f} | {summary['added_ttft_p99_ms']:+.2f} | {summary['failed']} |")
print()
print(f"router CPU per request (user + system, median over rounds): "
      f"{summary['router_cpu_ms_per_request']:.3f} ms")
print()
print(json.dumps(summary))
if summary["failed"]:
    sys.exit("some requests failed: the figures are not valid")
PY
