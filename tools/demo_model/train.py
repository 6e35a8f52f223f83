"""Train pagoda's bundled demo model and export it as GGUF v3 (models/demo.gguf).

Core idea: procedural English (corpus.py) -> own BPE vocab in llama.cpp's SPM format
(tokenizer.py) -> tiny llama (model.py, interleaved rope so no q/k permutation) trained on CPU
with a fixed number of steps (deterministic for a given seed and thread count) -> GGUF written
by our own writer (gguf_writer.py) -> read back and checked by a numpy forward pass
(check_gguf.py).

Usage: /usr/bin/python3 tools/demo_model/train.py --out models/demo.gguf
       (--smoke for a one-minute end-to-end run of the whole pipeline on a toy size)
"""

import argparse
import math
import os
import sys
import time

# Before torch loads libgomp/OpenBLAS: don't busy-wait (the machine is shared, and spinning
# OpenMP threads collapse under oversubscription), and keep OpenBLAS to the same 2 threads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "2")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_gguf  # noqa: E402
import corpus  # noqa: E402
import gguf_writer as gw  # noqa: E402
import model as M  # noqa: E402
import tokenizer as tk  # noqa: E402

CONTROL_TOKENS = [corpus.ROLE_TOKENS["system"], corpus.ROLE_TOKENS["user"],
                  corpus.ROLE_TOKENS["assistant"]]


def encode_docs(vocab, docs):
    """One flat int32 stream of BOS ... EOS documents, and the start offset of each."""
    stream, starts = [], []
    for d in docs:
        ids = vocab.encode(d)
        if ids[-1] != tk.EOS:
            ids.append(tk.EOS)
        starts.append(len(stream))
        stream.extend(ids)
    return np.asarray(stream, dtype=np.int64), np.asarray(starts, dtype=np.int64)


def export(path, model, cfg, vocab, name, train_info):
    w = gw.GGUFWriter(alignment=32)
    w.add_string("general.architecture", "llama")
    w.add_string("general.name", name)
    w.add_string("general.description",
                 "pagoda demo model: a tiny llama trained on procedurally generated children's "
                 "stories and short chats (tools/demo_model). " + train_info)
    w.add_u32("general.file_type", gw.LLAMA_FTYPE_MOSTLY_F16)
    w.add_u32("llama.vocab_size", len(vocab))
    w.add_u32("llama.context_length", cfg.context_length)
    w.add_u32("llama.embedding_length", cfg.dim)
    w.add_u32("llama.block_count", cfg.n_layers)
    w.add_u32("llama.feed_forward_length", cfg.ffn_dim)
    w.add_u32("llama.attention.head_count", cfg.n_heads)
    w.add_u32("llama.attention.head_count_kv", cfg.n_kv_heads)
    w.add_u32("llama.rope.dimension_count", cfg.head_dim)
    w.add_f32("llama.rope.freq_base", cfg.rope_base)
    w.add_f32("llama.attention.layer_norm_rms_epsilon", cfg.norm_eps)
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", gw.STRING, vocab.tokens)
    w.add_array("tokenizer.ggml.scores", gw.FLOAT32, vocab.scores)
    w.add_array("tokenizer.ggml.token_type", gw.INT32, vocab.types)
    w.add_u32("tokenizer.ggml.bos_token_id", tk.BOS)
    w.add_u32("tokenizer.ggml.eos_token_id", tk.EOS)
    w.add_u32("tokenizer.ggml.unknown_token_id", tk.UNK)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", True)
    w.add_string("tokenizer.chat_template", corpus.CHAT_TEMPLATE)
    for tname, arr in model.gguf_tensors():
        ty = gw.GGML_TYPE_F32 if tname.endswith("norm.weight") else gw.GGML_TYPE_F16
        w.add_tensor(tname, arr, ty)
    w.write(path)


def loaded_blas():
    """Path of the BLAS library torch is using (Debian's libblas.so.3 alternative)."""
    torch.ones(4, 4) @ torch.ones(4, 4)
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "/" in line}
    blas = sorted(p for p in paths if "blas" in os.path.basename(p) or "blis" in p)
    return blas[0] if blas else "?"


def lr_at(step, steps, peak, warmup):
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default="models/demo.gguf")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--docs", type=int, default=20000, help="training documents to generate")
    ap.add_argument("--vocab-size", type=int, default=4096, help="upper bound; BPE stops early "
                    "when no pair occurs twice")
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--ctx", type=int, default=512, help="llama.context_length")
    ap.add_argument("--seq", type=int, default=256, help="training sequence length")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=380)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ops", choices=["auto", "blas", "conv"], default="auto",
                    help="matmul backend: plain torch ops (needs a fast BLAS) or oneDNN 1x1 "
                    "convolutions; auto picks conv when torch uses the reference BLAS")
    ap.add_argument("--smoke", action="store_true", help="tiny end-to-end run")
    ap.add_argument("--preset", choices=["demo", "draft"], default="demo",
                    help="draft: a much smaller model with the same tokenizer (same seed, corpus "
                    "and vocabulary), the speculative draft for the demo model "
                    "(models/demo-draft.gguf)")
    args = ap.parse_args()
    if args.preset == "draft":
        # The vocabulary depends only on --seed, --docs and --vocab-size: keep them. The shape
        # is ~1/8 of the demo model's compute (dim 128, 2 layers; head dim 64 as the demo's).
        args.dim, args.layers, args.heads, args.kv_heads, args.ffn = 128, 2, 2, 1, 352
        if args.out == "models/demo.gguf":
            args.out = "models/demo-draft.gguf"
    if args.smoke:
        args.docs, args.dim, args.layers, args.ffn, args.steps, args.batch, args.seq = (
            2000, 64, 2, 176, 30, 8, 128)

    t_start = time.time()
    torch.set_num_threads(args.threads)
    blas = loaded_blas()
    fast_blas = any(k in blas for k in ("openblas", "blis", "mkl"))
    M.FAST_OPS = args.ops == "conv" or (args.ops == "auto" and not fast_blas)
    print(f"BLAS: {blas}; matmuls via {'oneDNN convolutions' if M.FAST_OPS else 'torch/BLAS'}",
          flush=True)
    if not fast_blas:
        print("hint: Debian's reference BLAS is slow; with libopenblas0-pthread installed (or its "
              "openblas-pthread folder on LD_LIBRARY_PATH) training is several times faster",
              flush=True)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    docs = corpus.generate(args.seed, args.docs)
    val_docs = corpus.generate(args.seed + 1, max(200, args.docs // 100))
    frags = [s for d in docs for s in d if isinstance(s, str)]
    vocab = tk.train_vocab(frags, args.vocab_size, CONTROL_TOKENS)
    stream, starts = encode_docs(vocab, docs)
    val_stream, val_starts = encode_docs(vocab, val_docs)
    print(f"corpus: {len(docs)} docs, {len(stream)} tokens, vocab {len(vocab)} "
          f"({time.time() - t_start:.1f}s)", flush=True)

    cfg = M.Config(vocab_size=len(vocab), dim=args.dim, n_layers=args.layers, n_heads=args.heads,
                   n_kv_heads=args.kv_heads, ffn_dim=args.ffn, context_length=args.ctx)
    model = M.Llama(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: dim {cfg.dim}, layers {cfg.n_layers}, heads {cfg.n_heads}/{cfg.n_kv_heads}, "
          f"ffn {cfg.ffn_dim}, params {n_params / 1e6:.2f}M", flush=True)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    T = args.seq
    ok_starts = starts[starts + T + 1 <= len(stream)]

    def batch_at(src, st, idx):
        return torch.from_numpy(np.stack([src[s:s + T + 1] for s in st[idx]]))

    def evaluate():
        model.eval()
        vs = val_starts[val_starts + T + 1 <= len(val_stream)][:64]
        losses = []
        with torch.no_grad():
            for i in range(0, len(vs), 16):
                x = torch.from_numpy(np.stack([val_stream[s:s + T + 1] for s in vs[i:i + 16]]))
                logits = model(x[:, :-1])
                losses.append(F.cross_entropy(logits.reshape(-1, cfg.vocab_size),
                                              x[:, 1:].reshape(-1)).item())
        model.train()
        return float(np.mean(losses))

    t_train = time.time()
    ema = None
    for step in range(args.steps):
        # Windows start at document starts, so position 0 is always BOS, as at inference.
        x = batch_at(stream, ok_starts, rng.integers(0, len(ok_starts), args.batch))
        for g in opt.param_groups:
            g["lr"] = lr_at(step, args.steps, args.lr, args.warmup)
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, cfg.vocab_size), x[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        if step % 25 == 0 or step == args.steps - 1:
            el = time.time() - t_train
            print(f"step {step:5d} loss {loss.item():.4f} (ema {ema:.4f}) lr "
                  f"{opt.param_groups[0]['lr']:.2e} {el:6.0f}s "
                  f"{(step + 1) * args.batch * T / max(el, 1e-9):.0f} tok/s", flush=True)
    train_s = time.time() - t_train
    val = evaluate()
    print(f"trained {args.steps} steps ({args.steps * args.batch * T} tokens) in {train_s:.0f}s; "
          f"final train loss (ema) {ema:.4f}, validation loss {val:.4f}", flush=True)

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    info = (f"{n_params / 1e6:.2f}M params, {args.steps} steps of {args.batch}x{T} tokens, "
            f"validation loss {val:.3f}, seed {args.seed}.")
    export(args.out, model, cfg, vocab, "pagoda-demo-draft" if args.preset == "draft" else "pagoda-demo",
           info)
    print(f"wrote {args.out}: {os.path.getsize(args.out) / 1e6:.2f} MB", flush=True)
    model.eval()
    check_gguf.check(args.out, model, max_new=60 if args.smoke else 120)
    print(f"total {time.time() - t_start:.0f}s", flush=True)


if __name__ == "__main__":
    main()
