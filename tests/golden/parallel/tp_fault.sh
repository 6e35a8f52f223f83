#!/usr/bin/env bash
# A tensor-parallel job that cannot load ends fast, non-zero, with the reason: a Q4_K_M model
# whose attention output (256 input columns, 128 per rank) does not split on the 256-element
# K-quant block, and a --tensor-parallel-size that is missing or does not match the job. Usage: tp_fault.sh
# MPIEXEC PAGODA FIXTURES
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
