#!/usr/bin/env bash
# A parallel job that cannot load ends fast, non-zero, with the reason: a Q4_K_M model
# whose attention output (256 input columns, 128 per rank) does not split on the 256-element
# K-quant block, and a --tensor-parallel-size that is missing or does not match the job; then a
# worker SIGKILLed while serving (below).
# Usage: tp_fault.sh MPIEXEC PAGODA FIXTURES
set -u
mpiexec=$1 pagoda=$2 fixtures=$3
model=$fixtures/models/llama-Q4_K_M.gguf
if [[ ! -f $model ]]; then echo "SKIP: $model absent"; exit 0; fi
run() {  # expected-message args...
  local want=$1; shift
  local start=$SECONDS out rc
  out=$(timeout 60 "$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -np 2 \
        "$pagoda" "$@" 2>&1); rc=$?
  if [[ $rc -eq 0 || $rc -eq 124 ]]; then echo "FAIL: exit $rc for $*"; echo "$out"; exit 1; fi
  if ! grep -q -- "$want" <<<"$out"; then echo "FAIL: no '$want' for $*"; echo "$out"; exit 1; fi
  echo "ok: exit $rc in $((SECONDS - start)) s: $(grep -m1 -- "$want" <<<"$out")"
}
run "cannot be split by tensor parallelism" logits -m "$model" -p hi -n 1 --tensor-parallel-size 2
run "pass --tensor-parallel-size 2" logits -m "$model" -p hi -n 1
run "pass --tensor-parallel-size 2" logits -m "$fixtures/models/llama-Q8_0.gguf" -p hi -n 1 \
    --tensor-parallel-size 3

# A worker killed while serving: rank 0's /health turns 503 (mpirun's SIGTERM to the survivors is
# the signal: serve's signal_exit_code), running requests end, the job exits non-zero, in bounded
# time.
q8=$fixtures/models/llama-Q8_0.gguf
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
"$mpiexec" --allow-run-as-root --oversubscribe --bind-to none -np 2 \
  "$pagoda" serve -m "$q8" --port "$port" --tensor-parallel-size 2 -t 1 >"$log" 2>&1 &
job=$!
url=http://127.0.0.1:$port
for _ in $(seq 600); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "$url/health") == 200 ]] && break
  sleep 0.1
done
if [[ $(curl -s -o /dev/null -w '%{http_code}' "$url/health") != 200 ]]; then
  echo "FAIL: serve never became healthy"; cat "$log"; kill "$job"; exit 1
fi
worker=
for pid in $(pgrep -P "$job"); do
  if tr '\0' '\n' </proc/"$pid"/environ | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then worker=$pid; fi
done
if [[ -z $worker ]]; then echo "FAIL: no rank 1 under mpirun $job"; kill "$job"; exit 1; fi
# A long streamed request in flight when the worker dies.
body='{"model":"llama-Q8_0","prompt":"Once upon a time","max_tokens":2000,"n":8,"stream":true,"ignore_eos":true}'
curl -s -N -m 60 "$url/v1/completions" -H 'Content-Type: application/json' -d "$body" \
  >"$log.stream" 2>&1 &
client=$!
sleep 1
start=$SECONDS
kill -KILL "$worker"
seen503=0
while kill -0 "$job" 2>/dev/null && ((SECONDS - start < 30)); do
  [[ $(curl -s -m 1 -o /dev/null -w '%{http_code}' "$url/health") == 503 ]] && seen503=1
  sleep 0.05
done
if kill -0 "$job" 2>/dev/null; then echo "FAIL: job still running 30 s after the kill"; kill -9 "$job"; exit 1; fi
wait "$job"; rc=$?
elapsed=$((SECONDS - start))
wait "$client"; client_rc=$?
if [[ $rc -eq 0 ]]; then echo "FAIL: job exit 0 after a worker died"; cat "$log"; exit 1; fi
if [[ $seen503 -ne 1 ]]; then echo "FAIL: /health never answered 503"; cat "$log"; exit 1; fi
if ! grep -q '^data: {' "$log.stream"; then echo "FAIL: the request was not streaming"; cat "$log.stream"; exit 1; fi
if grep -q '\[DONE\]' "$log.stream"; then echo "FAIL: the running request looked finished"; exit 1; fi
if [[ $client_rc -eq 0 ]]; then echo "FAIL: the client saw a clean end of the stream"; exit 1; fi
echo "ok: worker SIGKILL while serving: /health 503, job exit $rc in ${elapsed} s, stream ended (curl $client_rc)"
rm -f "$log" "$log.stream"
