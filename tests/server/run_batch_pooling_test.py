#!/usr/bin/env python3
"""pagoda run-batch with /v1/embeddings, /v1/rerank and /v1/score lines, on the BERT fixture that
tools/bert_fixture/make_bert_fixture.py writes (ctest fixture bert_fixture): the BertModel
directory's embeddings against the float64 PyTorch reference (cosine >= 0.9999), the
cross-encoder directory's rerank / score results against the reference scores (sigmoid, within
1e-5), a bad body answered with the server's 400 response line, and the nomic-bert GGUF's
embeddings (its own mean pooling) against its float64 reference (cosine >= 0.9999).
Usage: run_batch_pooling_test.py PAGODA_BIN FIXTURE_DIR."""
import json
import math
import os
import subprocess
import sys
import tempfile

BIN, FIXTURE = sys.argv[1], sys.argv[2]
REF = json.load(open(os.path.join(FIXTURE, "bert_reference.json")))


def run_batch(model, lines):
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = os.path.join(tmp, "in.jsonl"), os.path.join(tmp, "out.jsonl")
        with open(inp, "w") as f:
            f.write("\n".join(json.dumps(l) for l in lines) + "\n")
        subprocess.run([BIN, "run-batch", "-i", inp, "-o", out, "-m", model, "-t", "2"],
                       check=True, stderr=subprocess.DEVNULL)
        with open(out) as f:
            return {r["custom_id"]: r for r in map(json.loads, f)}


def line(cid, url, body):
    return {"custom_id": cid, "method": "POST", "url": url, "body": body}


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def main():
    cases = REF["cases"]
    got = run_batch(os.path.join(FIXTURE, "bert-hf"),
                    [line(f"e{i}", "/v1/embeddings", {"input": c["text"]})
                     for i, c in enumerate(cases)] +
                    [line("bad", "/v1/embeddings", {"input": "x", "dimensions": 3})])
    worst = 1.0
    for i, c in enumerate(cases):
        r = got[f"e{i}"]["response"]
        assert r["status_code"] == 200, r
        worst = min(worst, cosine(r["body"]["data"][0]["embedding"], c["cls"]))
    assert worst >= 0.9999, worst
    assert got["bad"]["response"]["status_code"] == 400
    assert got["bad"]["response"]["body"]["error"]["param"] == "dimensions"

    pairs = REF["pairs"]
    query = pairs[0]["query"]
    mine = [p for p in pairs if p["query"] == query]
    got = run_batch(os.path.join(FIXTURE, "bert-rerank-hf"), [
        line("rr", "/v1/rerank", {"query": query, "documents": [p["document"] for p in mine]}),
        line("sc", "/v1/score", {"text_1": [p["query"] for p in pairs],
                                 "text_2": [p["document"] for p in pairs]})])
    rr = got["rr"]["response"]["body"]["results"]
    assert len(rr) == len(mine), rr
    for res in rr:
        assert abs(res["relevance_score"] - sigmoid(mine[res["index"]]["score"])) < 1e-5, res
    sc = got["sc"]["response"]["body"]["data"]
    for d in sc:
        assert abs(d["score"] - sigmoid(pairs[d["index"]]["score"])) < 1e-5, d

    nomic = json.load(open(os.path.join(FIXTURE, "nomic_reference.json")))["cases"]
    got = run_batch(os.path.join(FIXTURE, "nomic.gguf"),
                    [line(f"n{i}", "/v1/embeddings", {"input": c["text"]})
                     for i, c in enumerate(nomic)])
    worst_nomic = 1.0
    for i, c in enumerate(nomic):
        r = got[f"n{i}"]["response"]
        assert r["status_code"] == 200, r
        assert r["body"]["usage"]["prompt_tokens"] == len(c["token_ids"]), r["body"]["usage"]
        worst_nomic = min(worst_nomic, cosine(r["body"]["data"][0]["embedding"], c["mean"]))
    assert worst_nomic >= 0.9999, worst_nomic
    print(f"run-batch pooling: worst embedding cosine {worst:.7f} (bert), {worst_nomic:.7f} "
          f"(nomic-bert), {len(rr)} rerank and {len(sc)} score results match")


if __name__ == "__main__":
    main()
