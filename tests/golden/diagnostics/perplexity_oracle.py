#!/usr/bin/env python3
"""Independent numpy oracle for `pagoda perplexity` (usage: perplexity_oracle.py PAGODA FIXTURES).

Runs the binary on a fixture model with --save-logits, then recomputes from the saved
log-softmax rows (the file format documented in src/diagnostics/log_prob_file.h, parsed here
from scratch): the window plan of llama-perplexity (second half of non-overlapping windows, or
--ppl-stride's last S positions), PPL and its +/- estimate, and, against a second model run with
--kl-divergence-base, the KL divergence mean/median/p99, top-1 agreement and both PPLs. Also checks
that the saved rows are log-softmax rows (logsumexp 0) and that corrupt base files are refused.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

TEXT = (
    "The old lighthouse keeper climbed the stairs every evening. He counted the steps, one "
    "hundred and twelve, and at the top he lit the lamp. Ships passed in the night and never "
    "knew his name. One winter a storm broke the glass, and the keeper carried a lantern up "
    "the stairs himself. In the morning a small boat came to the rocks with a girl who had "
    "followed the light. She stayed, learned the stairs and the lamp, and years later she "
    "kept the light when he could no longer climb. "
) * 3


def read_lp(path):
    b = open(path, "rb").read()
    assert b[:8] == b"PGDLOGP1", "magic"
    n_vocab, n_ctx, stride, reserved = np.frombuffer(b, "<u4", 4, 8)
    off = 24
    (num_tokens,) = np.frombuffer(b, "<u8", 1, off)
    off += 8
    tokens = np.frombuffer(b, "<i4", int(num_tokens), off)
    off += 4 * int(num_tokens)
    (num_rows,) = np.frombuffer(b, "<u8", 1, off)
    off += 8
    rows = np.frombuffer(b, "<f2", int(num_rows) * int(n_vocab), off).reshape(int(num_rows), -1)
    return int(n_ctx), int(stride), tokens, rows.astype(np.float64)


def windows(n_tokens, n_ctx, stride):
    """(start, first_scored, num_scored) as llama-perplexity / perplexity_v2 define them."""
    if stride == 0:
        first = n_ctx // 2
        return [(i * n_ctx, first, n_ctx - 1 - first) for i in range(n_tokens // n_ctx)]
    n = -(-(n_tokens - n_ctx) // stride)
    return [(i * stride, n_ctx - stride - 1, stride) for i in range(n)]


def targets(tokens, n_ctx, stride):
    out = []
    for start, first, num in windows(len(tokens), n_ctx, stride):
        out += [tokens[start + j + 1] for j in range(first, first + num)]
    return np.array(out)


def run(pagoda, *args):
    p = subprocess.run([pagoda, "perplexity", "--json", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"pagoda perplexity {args} failed: {p.stderr}")
    return json.loads(p.stdout)


def close(a, b, rel, what):
    if not abs(a - b) <= rel * max(abs(a), abs(b), 1e-12):
        raise AssertionError(f"{what}: pagoda {a} vs numpy {b}")


def main():
    pagoda, fixtures = sys.argv[1], sys.argv[2]
    models = os.path.join(fixtures, "models")
    if not os.path.exists(os.path.join(models, "llama-F16.gguf")):
        print("SKIP: fixtures not found")
        return 0
    tmp = tempfile.mkdtemp()
    text = os.path.join(tmp, "text.txt")
    open(text, "w").write(TEXT)
    checks = 0
    for ctx, stride in [(32, 0), (40, 8)]:
        base = os.path.join(tmp, f"base{ctx}.lp")
        r = run(pagoda, "-m", os.path.join(models, "llama-F16.gguf"), "-f", text, "--ctx",
                str(ctx), "--stride", str(stride), "--batch", "13", "--save-logits", base)
        n_ctx, s, tokens, rows = read_lp(base)
        assert (n_ctx, s) == (ctx, stride)
        assert len(tokens) == r["text_tokens"]
        tg = targets(tokens, ctx, stride)
        assert len(tg) == rows.shape[0] == r["scored_tokens"], (len(tg), rows.shape)
        assert r["windows"] == len(windows(len(tokens), ctx, stride))
        # rows are log-softmax rows: logsumexp 0 (up to f16 rounding of each entry)
        lse = np.log(np.exp(rows).sum(axis=1))
        assert np.abs(lse).max() < 2e-3, np.abs(lse).max()
        nll = -rows[np.arange(len(tg)), tg]
        close(r["ppl"], float(np.exp(nll.mean())), 2e-3, f"ppl ctx {ctx} stride {stride}")
        err = np.exp(nll.mean()) * np.sqrt(nll.var() / (len(nll) - 1))
        close(r["ppl_error"], float(err), 2e-2, "ppl_error")
        checks += 2

        q8 = os.path.join(tmp, f"q8_{ctx}.lp")
        k = run(pagoda, "-m", os.path.join(models, "llama-Q8_0.gguf"), "-f", text, "--ctx",
                str(ctx), "--stride", str(stride), "--kl-divergence-base", base,
                "--save-logits", q8)
        _, _, tokens_q, rows_q = read_lp(q8)
        assert np.array_equal(tokens, tokens_q)
        kld = (np.exp(rows) * (rows - rows_q)).sum(axis=1)
        kd = k["kl_divergence"]
        # The C++ side uses the Q8_0 run's f32 rows, numpy their f16 copy: allow for it.
        tol = 2e-3 * np.exp(rows).sum(axis=1).max() + 1e-4
        for name, value in [("mean", kld.mean()), ("median", np.percentile(kld, 50)),
                            ("p99", np.percentile(kld, 99))]:
            if abs(kd[name] - value) > max(tol, 0.05 * abs(value)):
                raise AssertionError(f"KLD {name}: pagoda {kd[name]} vs numpy {value}")
            checks += 1
        top1 = float((rows.argmax(axis=1) == rows_q.argmax(axis=1)).mean())
        assert abs(kd["top1_agreement"] - top1) <= 2.0 / len(tg), (kd["top1_agreement"], top1)
        close(kd["base_ppl"], r["ppl"], 2e-3, "base ppl")
        close(kd["ppl"], k["ppl"], 2e-3, "ppl of the compared run")
        assert kd["mean"] > 0, "Q8_0 differs from F16, so its KLD cannot be 0"
        checks += 3

    # A base of another text or other settings, or a corrupt file, is refused.
    base = os.path.join(tmp, "base32.lp")
    bad = [pagoda, "perplexity", "-m", os.path.join(models, "llama-Q8_0.gguf"), "-f", text]
    p = subprocess.run(bad + ["--ctx", "16", "--kl-divergence-base", base], capture_output=True,
                       text=True)
    assert p.returncode != 0 and "--ctx" in p.stderr, p.stderr
    data = open(base, "rb").read()
    for cut in (data[:20], data[:-3], b"XXXXXXXX" + data[8:]):
        broken = os.path.join(tmp, "broken.lp")
        open(broken, "wb").write(cut)
        p = subprocess.run(bad + ["--ctx", "32", "--kl-divergence-base", broken],
                           capture_output=True, text=True)
        assert p.returncode != 0 and p.stderr, "a corrupt base file must be refused"
        checks += 1
    print(f"OK: {checks} checks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
