#!/usr/bin/env bash
# `pagoda bench --json` split over a job: TP=2 and PP=2 (mpirun -np 2) against one process on
# llama-Q8_0, checking the JSON's sizes and each rank's weight and KV cache bytes; then a job
# whose -np does not match T x P ends fast, non-zero, with the reason.
# Usage: tp_bench.sh MPIEXEC PAGODA FIXTURES
set -u
mpiexec=$1 pagoda=$2 fixtures=$3
model=$fixtures/models/llama-Q8_0.gguf
if [[ ! -f $model ]]; then echo "SKIP: $model absent"; exit 0; fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
args=(bench -m "$model" --json -p 16 -n 4 --batch 1,2 --repeats 1 --threads 1)
mpi=("$mpiexec" --allow-run-as-root --oversubscribe --bind-to none)
timeout 120 "$pagoda" "${args[@]}" >"$dir/one.json" 2>"$dir/one.err" ||
  { echo "FAIL: one process"; cat "$dir/one.err"; exit 1; }
timeout 120 "${mpi[@]}" -np 2 "$pagoda" "${args[@]}" --tensor-parallel-size 2 \
  >"$dir/tp.json" 2>"$dir/tp.err" || { echo "FAIL: TP=2"; cat "$dir/tp.err"; exit 1; }
timeout 120 "${mpi[@]}" -np 2 "$pagoda" "${args[@]}" --pipeline-parallel-size 2 \
  >"$dir/pp.json" 2>"$dir/pp.err" || { echo "FAIL: PP=2"; cat "$dir/pp.err"; exit 1; }
# Weights: under TP each rank holds half of every split matrix (attention heads, FFN rows and
# columns, vocabulary rows of the output head); the norms are replicated, hence 0.5 within 0.02
# (measured: 0.5000 on this fixture). Under PP the stages' weights add up to the whole (nothing is
# replicated) within 1% (measured: exactly). A bench that left the model whole on rank 0 fails
# both (1.0 of the whole on rank 0). KV: TP halves the KV heads (exactly half the bytes); PP's
# stages hold their layers' blocks (adding up exactly).
/usr/bin/python3 - "$dir" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
one, tp, pp = (json.load(open(f"{d}/{n}.json")) for n in ("one", "tp", "pp"))
def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        sys.exit(1)
check(one["tensor_parallel_size"] == 1 and one["pipeline_parallel_size"] == 1 and
      len(one["ranks"]) == 1, "one process: sizes 1 x 1, one rank")
W, KV = one["ranks"][0]["weight_bytes"], one["ranks"][0]["kv_cache_bytes"]
check(W > 0 and KV > 0, f"one process: {W} weight bytes, {KV} KV cache bytes")
check(tp["tensor_parallel_size"] == 2 and tp["pipeline_parallel_size"] == 1 and
      [r["rank"] for r in tp["ranks"]] == [0, 1], "TP=2: sizes 2 x 1, ranks 0 and 1")
for r in tp["ranks"]:
    w = r["weight_bytes"]
    check(abs(w / W - 0.5) <= 0.02, f"TP=2 rank {r['rank']}: {w} weight bytes = {w / W:.4f} of one process's (0.5 +- 0.02)")
    check(r["kv_cache_bytes"] * 2 == KV, f"TP=2 rank {r['rank']}: {r['kv_cache_bytes']} KV bytes = half")
check(pp["tensor_parallel_size"] == 1 and pp["pipeline_parallel_size"] == 2 and
      [r["rank"] for r in pp["ranks"]] == [0, 1], "PP=2: sizes 1 x 2, ranks 0 and 1")
ws = sum(r["weight_bytes"] for r in pp["ranks"])
check(all(0 < r["weight_bytes"] < W for r in pp["ranks"]) and abs(ws / W - 1) <= 0.01,
      f"PP=2: stages hold {[r['weight_bytes'] for r in pp['ranks']]} weight bytes, {ws / W:.4f} of the whole (1 +- 0.01)")
check(all(0 < r["kv_cache_bytes"] < KV for r in pp["ranks"]) and
      sum(r["kv_cache_bytes"] for r in pp["ranks"]) == KV, "PP=2: the stages' KV bytes add up to the whole")
for j, name in ((tp, "TP=2"), (pp, "PP=2")):
    check(j["prefill"]["tokens_per_second"] > 0 and j["decode"]["tokens_per_second"] > 0 and
          len(j["batched_decode"]) == 2, f"{name}: prefill, decode and 2 batched figures")
    check(j["parallel_cost_model"]["transport"]["ranks"] == 2, f"{name}: transport measured over 2 ranks")
PY
# -np that does not match T x P: every rank refuses before measuring or loading anything.
refuse() {  # expected-message args...
  local want=$1; shift
  local start=$SECONDS out rc
  out=$(timeout 60 "${mpi[@]}" -np 2 "$pagoda" "${args[@]}" "$@" 2>&1); rc=$?
  if [[ $rc -eq 0 || $rc -eq 124 ]]; then echo "FAIL: exit $rc for $*"; echo "$out"; exit 1; fi
  if ! grep -q -- "$want" <<<"$out"; then echo "FAIL: no '$want' for $*"; echo "$out"; exit 1; fi
  echo "ok: exit $rc in $((SECONDS - start)) s: $(grep -m1 -- "$want" <<<"$out")"
}
refuse "tensor_parallel_size 3 needs a job of 3 ranks" --tensor-parallel-size 3
refuse "needs a job of 4 ranks (mpirun -np 4), this one has 2" \
  --tensor-parallel-size 2 --pipeline-parallel-size 2
