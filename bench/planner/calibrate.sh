#!/usr/bin/env bash
# `pagoda plan --hardware cpu` against what the benchmarks measure on this machine, per figure:
# single-sequence prefill and decode tok/s (`pagoda bench`), and the output tok/s of CLIENTS
# closed-loop clients (`pagoda bench engine --concurrency`, and `pagoda bench serve` against a
# real `pagoda serve`). The plan gets a fresh probe of this machine with the model's own weight
# shapes (`pagoda plan --calibrate FILE -m MODEL`). Prints predicted vs measured and the error
# (predicted / measured - 1) of each figure, as a Markdown table and one JSON line. Issue 35's
# target is +-25% on each. A benchmark, not a test: run it on a quiet machine.
#   bench/planner/calibrate.sh [BUILD_DIR] MODEL [INPUT_LEN] [OUTPUT_LEN] [CLIENTS]
# e.g. a TinyLlama-shape Q4_0 model:
#   build/bin/pagoda synth --shape tinyllama-1.1b --vocab VOCAB.gguf --type F16 -o tl-f16.gguf
#   build/bin/pagoda quantize tl-f16.gguf tl-q4_0.gguf Q4_0
#   bench/planner/calibrate.sh build tl-q4_0.gguf 256 32 16
# Environment: THREADS (kernel threads for every run; default all), KEEP=DIR keeps the JSON files.
set -euo pipefail
BUILD=${1:-build}
MODEL=${2:?usage: calibrate.sh BUILD_DIR MODEL [INPUT_LEN] [OUTPUT_LEN] [CLIENTS]}
INPUT_LEN=${3:-256}
OUTPUT_LEN=${4:-32}
CLIENTS=${5:-16}
PAGODA=$BUILD/bin/pagoda
[[ -x $PAGODA ]] || { echo "no $PAGODA (build it: ninja -C $BUILD pagoda)" >&2; exit 1; }
[[ -f $MODEL ]] || { echo "no model file $MODEL" >&2; exit 1; }
TMP=${KEEP:-$(mktemp -d)}
mkdir -p "$TMP"
PID=
cleanup() {
  [[ -n $PID ]] && kill "$PID" 2>/dev/null || true
  [[ -n ${KEEP:-} ]] || rm -rf "$TMP"
}
trap cleanup EXIT
THREAD_ARGS=()
[[ -n ${THREADS:-} ]] && THREAD_ARGS=(--threads "$THREADS")
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

echo "probing this machine and the model's shapes..." >&2
"$PAGODA" plan --calibrate "$TMP/cpu.json" -m "$MODEL" "${THREAD_ARGS[@]}" >&2
"$PAGODA" plan -m "$MODEL" --hardware cpu --calibration "$TMP/cpu.json" --input-len "$INPUT_LEN" \
  --output-len "$OUTPUT_LEN" --clients "$CLIENTS" --json >"$TMP/plan.json"

echo "pagoda bench..." >&2
"$PAGODA" bench -m "$MODEL" -p "$INPUT_LEN" -n "$OUTPUT_LEN" --batch 1 --repeats 3 "${THREAD_ARGS[@]}" \
  --json >"$TMP/bench.json"

echo "pagoda bench engine --concurrency $CLIENTS..." >&2
"$PAGODA" bench engine -m "$MODEL" --num-requests $((4 * CLIENTS)) --concurrency "$CLIENTS" \
  --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --no-prefix-caching --json >"$TMP/engine.json"

echo "pagoda serve + bench serve --concurrency $CLIENTS..." >&2
PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$PAGODA" serve -m "$MODEL" --host 127.0.0.1 --port "$PORT" --max-num-seqs "$CLIENTS" \
  --no-enable-prefix-caching "${THREAD_ARGS[@]}" 2>"$TMP/serve.log" &
PID=$!
for _ in $(seq 1 1200); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break
  kill -0 "$PID" 2>/dev/null || { cat "$TMP/serve.log" >&2; exit 1; }
  sleep 0.1
done
"$PAGODA" bench serve --url "http://127.0.0.1:$PORT" --concurrency "$CLIENTS" \
  --num-prompts $((4 * CLIENTS)) --input-len "$INPUT_LEN" --output-len "$OUTPUT_LEN" --seed 1 \
  --json >"$TMP/serve.json"
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

/usr/bin/python3 - "$TMP" "$MODEL" "$CLIENTS" "$(nproc)" "$load_before" "$load_after" <<'PY'
import json, sys
tmp, model, clients, cpus, load_before, load_after = sys.argv[1:7]
load = lambda name: json.load(open(f"{tmp}/{name}.json"))
plan, bench, engine, serve = load("plan"), load("bench"), load("engine"), load("serve")
row = next((r for r in plan["plans"] if r["quant"] == "file"), None)
if row is None:
    sys.exit("the plan has no row for the file's own types")
figures = [
    ("prefill tok/s (1 prompt)", row["prefill_tokens_per_s"], bench["prefill"]["tokens_per_second"]),
    ("decode tok/s (1 sequence)", row["decode_tokens_per_s"], bench["decode"]["tokens_per_second"]),
    (f"output tok/s, {clients} clients (bench engine)", row["clients_output_tokens_per_s"],
     engine["output_tokens_per_s"]),
    (f"output tok/s, {clients} clients (bench serve)", row["clients_output_tokens_per_s"],
     serve["output_token_throughput"]),
]
print(f"model {model} ({row['format']}), {cpus} CPUs, load average {load_before} -> {load_after}")
print()
print("| figure | predicted | measured | error |")
print("|---|---|---|---|")
out = {"model": model, "cpus": int(cpus), "load_average": [load_before, load_after], "figures": {}}
for name, predicted, measured in figures:
    err = predicted / measured - 1
    print(f"| {name} | {predicted:.1f} | {measured:.1f} | {100 * err:+.0f}% |")
    out["figures"][name] = {"predicted": predicted, "measured": measured, "error": err}
if serve.get("failed"):
    print(f"\nbench serve: {serve['failed']} requests failed (the serve figure is not valid)")
print()
print(json.dumps(out))
PY
