"""Independent check of a demo GGUF: read it back with a separate numpy reader, run a pure-numpy
llama forward pass (token by token with a KV cache) and generate greedily.

Core idea: nothing here shares code with the writer or the torch model except the SPM encoder
(tokenizer.Vocab), which is rebuilt from the vocab stored *in the file*, so the check covers
the file layout, the metadata, the tensor orientation, the rope convention (ggml mode 0,
interleaved pairs) and GQA head mapping. With --torch (or from train.py) the numpy logits are
compared with the torch model's full-sequence logits.

Usage: /usr/bin/python3 tools/demo_model/check_gguf.py models/demo.gguf [--torch] [--prompt P]
"""

import argparse
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer as tk  # noqa: E402

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
            11: "<q", 12: "<d"}


class Reader:
    def __init__(self, data):
        self.d = data
        self.o = 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.o)
        self.o += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("<Q")
        s = self.d[self.o:self.o + n].decode("utf-8")
        self.o += n
        return s

    def value(self, t):
        if t == 8:
            return self.string()
        if t == 9:
            et, n = self.take("<I"), self.take("<Q")
            return [self.value(et) for _ in range(n)]
        return self.take(_SCALARS[t])


def read_gguf(path):
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data)
    assert data[:4] == b"GGUF", "bad magic"
    r.o = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    assert version == 3, version
    meta = {}
    for _ in range(n_kv):
        k = r.string()
        meta[k] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        ne = [r.take("<Q") for _ in range(nd)]
        ty, off = r.take("<I"), r.take("<Q")
        infos.append((name, ne, ty, off))
    align = meta.get("general.alignment", 32)
    base = (r.o + align - 1) // align * align
    tensors = {}
    for name, ne, ty, off in infos:
        dt = {0: np.float32, 1: np.float16}[ty]
        assert off % align == 0, name
        n = int(np.prod(ne))
        a = np.frombuffer(data, dtype=dt, count=n, offset=base + off)
        tensors[name] = (a.reshape(list(reversed(ne))).astype(np.float32), ty)
    return meta, tensors


class NumpyLlama:
    def __init__(self, meta, tensors):
        g = lambda k: meta["llama." + k]  # noqa: E731
        self.dim = g("embedding_length")
        self.n_layers = g("block_count")
        self.n_head = g("attention.head_count")
        self.n_kv = g("attention.head_count_kv")
        self.hd = self.dim // self.n_head
        self.n_rot = g("rope.dimension_count")
        self.base = g("rope.freq_base")
        self.eps = g("attention.layer_norm_rms_epsilon")
        self.ctx = g("context_length")
        self.w = {k: v for k, (v, _) in tensors.items()}
        self.reset()

    def reset(self):
        self.k = [[] for _ in range(self.n_layers)]
        self.v = [[] for _ in range(self.n_layers)]
        self.pos = 0

    def rms(self, x, w):
        return x / np.sqrt(np.mean(x.astype(np.float64) ** 2) + self.eps).astype(np.float32) * w

    def rope(self, x, pos):
        # x: (heads, hd). ggml rope mode 0: rotate (x[i0], x[i0+1]) by pos*base^(-i0/n_rot).
        out = x.copy()
        for i0 in range(0, self.n_rot, 2):
            theta = pos * self.base ** (-i0 / self.n_rot)
            c, s = np.cos(theta), np.sin(theta)
            x0, x1 = x[:, i0], x[:, i0 + 1]
            out[:, i0] = x0 * c - x1 * s
            out[:, i0 + 1] = x0 * s + x1 * c
        return out

    def step(self, token):
        """Feed one token at position self.pos; returns float64 logits."""
        w = self.w
        x = w["token_embd.weight"][token].astype(np.float32)
        for L in range(self.n_layers):
            p = f"blk.{L}."
            h = self.rms(x, w[p + "attn_norm.weight"])
            q = (w[p + "attn_q.weight"] @ h).reshape(self.n_head, self.hd)
            k = (w[p + "attn_k.weight"] @ h).reshape(self.n_kv, self.hd)
            v = (w[p + "attn_v.weight"] @ h).reshape(self.n_kv, self.hd)
            q, k = self.rope(q, self.pos), self.rope(k, self.pos)
            self.k[L].append(k)
            self.v[L].append(v)
            K = np.stack(self.k[L])  # (t, n_kv, hd)
            V = np.stack(self.v[L])
            att = np.zeros((self.n_head, self.hd), np.float32)
            for hq in range(self.n_head):
                hk = hq // (self.n_head // self.n_kv)
                s = K[:, hk, :] @ q[hq] / np.sqrt(self.hd)
                s = np.exp(s - s.max())
                att[hq] = (s / s.sum()) @ V[:, hk, :]
            x = x + w[p + "attn_output.weight"] @ att.reshape(-1)
            h = self.rms(x, w[p + "ffn_norm.weight"])
            gate = w[p + "ffn_gate.weight"] @ h
            up = w[p + "ffn_up.weight"] @ h
            x = x + w[p + "ffn_down.weight"] @ (gate / (1 + np.exp(-gate)) * up)
        self.pos += 1
        x = self.rms(x, w["output_norm.weight"])
        return (w["output.weight"] @ x).astype(np.float64)


def vocab_from_meta(meta):
    return tk.Vocab(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.scores"],
                    meta["tokenizer.ggml.token_type"])


def generate(model, vocab, ids, max_new, eos):
    model.reset()
    logits = None
    for t in ids:
        logits = model.step(t)
    out = []
    for _ in range(max_new):
        nxt = int(np.argmax(logits))
        if nxt == eos:
            break
        out.append(nxt)
        if model.pos >= model.ctx:
            break
        logits = model.step(nxt)
    return out


def render_chat(meta, messages):
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(meta["tokenizer.chat_template"]).render(
        messages=messages, add_generation_prompt=True, bos_token="<s>", eos_token="</s>")


def check(path, torch_model=None, prompt="Once upon a time", max_new=120, verbose=True):
    """Returns a dict of results; raises AssertionError on a failed structural check."""
    meta, tensors = read_gguf(path)
    assert meta["general.architecture"] == "llama"
    assert meta["tokenizer.ggml.model"] == "llama"
    n_vocab = len(meta["tokenizer.ggml.tokens"])
    assert tensors["token_embd.weight"][0].shape == (n_vocab, meta["llama.embedding_length"])
    for name, (_, ty) in tensors.items():
        assert ty == (0 if name.endswith("norm.weight") else 1), (name, ty)
    vocab = vocab_from_meta(meta)
    eos = meta["tokenizer.ggml.eos_token_id"]
    model = NumpyLlama(meta, tensors)
    res = {}

    ids = vocab.encode(prompt, add_bos=meta["tokenizer.ggml.add_bos_token"])
    assert vocab.encode(prompt) == vocab.encode(prompt, slow=True)
    gen = generate(model, vocab, ids, max_new, eos)
    res["story"] = prompt + vocab.decode(gen)
    if verbose:
        print(f"[greedy] {res['story']}\n")

    msgs = [{"role": "user", "content": "Tell me a story about a cat."}]
    chat_ids = vocab.encode(render_chat(meta, msgs))
    res["chat_story"] = vocab.decode(generate(model, vocab, chat_ids, max_new, eos)).strip()
    for q in ["Hello!", "What color is the sky?", "What is your name?"]:
        chat_ids = vocab.encode(render_chat(meta, [{"role": "user", "content": q}]))
        res["chat: " + q] = vocab.decode(generate(model, vocab, chat_ids, 40, eos)).strip()
    if verbose:
        for k, v in res.items():
            if k.startswith("chat"):
                print(f"[{k}] {v}")

    if torch_model is not None:
        import torch
        seq = ids + gen[:40]
        model.reset()
        ref = np.stack([model.step(t) for t in seq])
        with torch.no_grad():
            got = torch_model(torch.tensor([seq])).double().numpy()[0]
        err = np.abs(ref - got).max() / ref.std()
        agree = float(np.mean(ref.argmax(-1) == got.argmax(-1)))
        res["max_err_over_std"] = float(err)
        res["top1_agreement"] = agree
        if verbose:
            print(f"[torch vs numpy] max |diff| / std = {err:.4f}, top-1 agreement = {agree:.3f}")
        assert err < 0.05 and agree > 0.95, (err, agree)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?", default="models/demo.gguf")
    ap.add_argument("--prompt", default="Once upon a time")
    ap.add_argument("--torch", action="store_true",
                    help="also compare with the torch model definition (model.py) on the file's weights")
    args = ap.parse_args()
    torch_model = None
    if args.torch:
        import torch
        import model as M
        meta, tensors = read_gguf(args.path)
        g = lambda k: meta["llama." + k]  # noqa: E731
        cfg = M.Config(vocab_size=len(meta["tokenizer.ggml.tokens"]), dim=g("embedding_length"),
                       n_layers=g("block_count"), n_heads=g("attention.head_count"),
                       n_kv_heads=g("attention.head_count_kv"), ffn_dim=g("feed_forward_length"),
                       context_length=g("context_length"), rope_base=g("rope.freq_base"),
                       norm_eps=g("attention.layer_norm_rms_epsilon"))
        torch.set_num_threads(2)
        torch_model = M.Llama(cfg)
        torch_model.load_gguf_tensors({k: v for k, (v, _) in tensors.items()})
        torch_model.eval()
    check(args.path, torch_model, prompt=args.prompt)


if __name__ == "__main__":
    main()
