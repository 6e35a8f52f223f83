#!/usr/bin/env python3
"""Writes a small random-weight BERT encoder as GGUF (llama.cpp's `bert` layout) and its
reference embeddings from an independent float64 PyTorch forward, for pagoda's BERT tests.

Everything here is written from the published definitions, not from transformers:
  - WordPiece (google-research/bert tokenization.py): BasicTokenizer (clean text, space out CJK,
    lower-case, strip accents by NFD minus Mn, split punctuation) then greedy longest-match-first
    pieces with "##" continuations, [UNK] for a word with no segmentation or over 100 chars;
    [CLS] text [SEP].
  - BertModel (Devlin et al. 2018; BertEmbeddings / BertLayer): x = LN(tok + pos + type0);
    per layer: a = softmax(q k^T / sqrt(d)) v over all tokens (no mask), x = LN(x + W_o a + b_o),
    x = LN(x + W_2 gelu_erf(W_1 x + b_1) + b_2).
  - pooling: CLS (row 0) and mean over tokens, then L2-normalised.
  - BertForSequenceClassification (the cross-encoder): [CLS] query [SEP] document [SEP] with token
    types 0 up to the first [SEP] and 1 after it; score = classifier(tanh(pooler(x[CLS]))).
The vocabulary is stored in llama.cpp's "phantom space" form (word starts prefixed with U+2581,
continuations without "##"), as its converter writes BERT vocabularies.

The same weights are also written as Hugging Face directories (safetensors written here from the
format's README: 8-byte little-endian header length, JSON header, raw data):
  OUT_DIR/bert-hf         BertModel, tokenizer.json (WordPiece, BertNormalizer), no "bert." prefix
  OUT_DIR/bert-rerank-hf  BertForSequenceClassification (num_labels 1, "bert." prefix, pooler and
                          classifier), vocab.txt + tokenizer_config.json only

A random-weight nomic-bert encoder (see write_nomic) is written too:
  OUT_DIR/nomic.gguf, OUT_DIR/nomic_reference.json (mean and CLS embeddings), and the refused
  variants OUT_DIR/nomic-moe.gguf and OUT_DIR/nomic-half-rope.gguf

Usage: make_bert_fixture.py OUT_DIR  -> OUT_DIR/bert.gguf, OUT_DIR/bert_reference.json, the
two directories above and the nomic-bert files
"""

import json
import os
import sys
import unicodedata

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "demo_model"))
import gguf_writer as gw  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "sat", "on", "mat", "un", "##aff", "##able", "run", "##ning", "hello",
         "world", "dog", "##s", "play", "##ed", "with", "a", "ball", "cafe", "naive", "##ly",
         "want", "##want", "##ed", "low", "##est", "big", "red", "house", "is", "good", "very"]
CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789") + list(",.!?;:'\"()-") + ["\u535a", "\u63a8"]

TEXTS = [
    "The cat sat on the mat.",
    "Hello, world!",
    "unaffable dogs played with a ball",
    "  Caf\u00e9 NA\u00cfVE  naively... \u535a\u63a8 ok?",
    "The big red house is very good; the dog runs.",
    "xyzzy qwerty",
    "a",
]

HIDDEN, HEADS, LAYERS, FFN, MAX_POS, TYPES = 64, 4, 2, 128, 64, 2
EPS = 1e-12


def build_vocab():
    tokens = list(SPECIALS)
    for t in WORDS + CHARS + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"]:
        if t not in tokens:
            tokens.append(t)
    return tokens


def is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
            or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F)


def basic_tokenize(text):
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        if is_whitespace(ch):
            out.append(" ")
        elif is_cjk(cp):
            out.append(" " + ch + " ")
        else:
            out.append(ch)
    words = []
    for w in "".join(out).split():
        w = unicodedata.normalize("NFD", w.lower())
        w = "".join(c for c in w if unicodedata.category(c) != "Mn")
        cur = []
        for ch in w:
            if is_punctuation(ch):
                if cur:
                    words.append("".join(cur))
                    cur = []
                words.append(ch)
            else:
                cur.append(ch)
        if cur:
            words.append("".join(cur))
    return words


def wordpiece(text, index):
    ids = [index["[CLS]"]]
    for word in basic_tokenize(text):
        if len(word) > 100:
            ids.append(index["[UNK]"])
            continue
        pieces, start, bad = [], 0, False
        while start < len(word):
            end, found = len(word), None
            while start < end:
                sub = ("##" if start > 0 else "") + word[start:end]
                if sub in index:
                    found = index[sub]
                    break
                end -= 1
            if found is None:
                bad = True
                break
            pieces.append(found)
            start = end
        ids.extend([index["[UNK]"]] if bad else pieces)
    ids.append(index["[SEP]"])
    return ids


def layer_norm(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * w + b


PAIRS = [
    ("the cat", ["the cat sat on the mat.", "hello, world!", "a big red house"]),
    ("Who plays with a ball?", ["dogs played with a ball", "the house is very good", "xyzzy"]),
]


def forward(p, ids, types=None):
    t = torch.tensor(ids)
    tt = torch.tensor(types if types is not None else [0] * len(ids))
    x = p["tok"][t] + p["pos"][: len(ids)] + p["type"][tt]
    x = layer_norm(x, p["ln_e_w"], p["ln_e_b"])
    d = HIDDEN // HEADS
    for L in p["layers"]:
        q = (x @ L["wq"].T + L["bq"]).view(-1, HEADS, d).transpose(0, 1)
        k = (x @ L["wk"].T + L["bk"]).view(-1, HEADS, d).transpose(0, 1)
        v = (x @ L["wv"].T + L["bv"]).view(-1, HEADS, d).transpose(0, 1)
        a = torch.softmax(q @ k.transpose(1, 2) / d ** 0.5, dim=-1) @ v
        a = a.transpose(0, 1).reshape(-1, HIDDEN)
        x = layer_norm(x + a @ L["wo"].T + L["bo"], L["ln1_w"], L["ln1_b"])
        h = x @ L["w1"].T + L["b1"]
        h = 0.5 * h * (1 + torch.erf(h / 2 ** 0.5))
        x = layer_norm(x + h @ L["w2"].T + L["b2"], L["ln2_w"], L["ln2_b"])
    return x


def phantom(t):
    if t.startswith("[") and t.endswith("]"):
        return t
    return t[2:] if t.startswith("##") else "\u2581" + t


def add_wordpiece_vocab(w, tokens, index):
    """The WordPiece vocabulary as llama.cpp's converter writes it (model "bert")."""
    w.add_string("tokenizer.ggml.model", "bert")
    w.add_u32("tokenizer.ggml.token_type_count", TYPES)
    w.add_array("tokenizer.ggml.tokens", gw.STRING, [phantom(t) for t in tokens])
    w.add_array("tokenizer.ggml.token_type", gw.INT32,
                [3 if t in SPECIALS and t != "[UNK]" else (2 if t == "[UNK]" else 1)
                 for t in tokens])
    w.add_u32("tokenizer.ggml.cls_token_id", index["[CLS]"])
    w.add_u32("tokenizer.ggml.seperator_token_id", index["[SEP]"])
    w.add_u32("tokenizer.ggml.unknown_token_id", index["[UNK]"])
    w.add_u32("tokenizer.ggml.padding_token_id", index["[PAD]"])


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    tokens = build_vocab()
    index = {t: i for i, t in enumerate(tokens)}
    rng = np.random.default_rng(39)

    def mat(*shape, std=0.15):
        return rng.normal(0.0, std, size=shape).astype(np.float32)

    P = {"tok": mat(len(tokens), HIDDEN, std=0.5), "pos": mat(MAX_POS, HIDDEN, std=0.5),
         "type": mat(TYPES, HIDDEN, std=0.5), "ln_e_w": 1 + mat(HIDDEN, std=0.1),
         "ln_e_b": mat(HIDDEN, std=0.1), "layers": []}
    for _ in range(LAYERS):
        P["layers"].append({
            "wq": mat(HIDDEN, HIDDEN), "bq": mat(HIDDEN, std=0.1),
            "wk": mat(HIDDEN, HIDDEN), "bk": mat(HIDDEN, std=0.1),
            "wv": mat(HIDDEN, HIDDEN), "bv": mat(HIDDEN, std=0.1),
            "wo": mat(HIDDEN, HIDDEN), "bo": mat(HIDDEN, std=0.1),
            "ln1_w": 1 + mat(HIDDEN, std=0.1), "ln1_b": mat(HIDDEN, std=0.1),
            "w1": mat(FFN, HIDDEN), "b1": mat(FFN, std=0.1),
            "w2": mat(HIDDEN, FFN), "b2": mat(HIDDEN, std=0.1),
            "ln2_w": 1 + mat(HIDDEN, std=0.1), "ln2_b": mat(HIDDEN, std=0.1)})

    w = gw.GGUFWriter()
    w.add_string("general.architecture", "bert")
    w.add_string("general.name", "pagoda-bert-test")
    w.add_u32("bert.vocab_size", len(tokens))
    w.add_u32("bert.context_length", MAX_POS)
    w.add_u32("bert.embedding_length", HIDDEN)
    w.add_u32("bert.block_count", LAYERS)
    w.add_u32("bert.feed_forward_length", FFN)
    w.add_u32("bert.attention.head_count", HEADS)
    w.add_f32("bert.attention.layer_norm_epsilon", EPS)
    w.add_bool("bert.attention.causal", False)
    w.add_u32("bert.pooling_type", 2)  # cls
    add_wordpiece_vocab(w, tokens, index)
    F32 = gw.GGML_TYPE_F32
    w.add_tensor("token_embd.weight", P["tok"], F32)
    w.add_tensor("position_embd.weight", P["pos"], F32)
    w.add_tensor("token_types.weight", P["type"], F32)
    w.add_tensor("token_embd_norm.weight", P["ln_e_w"], F32)
    w.add_tensor("token_embd_norm.bias", P["ln_e_b"], F32)
    names = {"wq": "attn_q.weight", "bq": "attn_q.bias", "wk": "attn_k.weight",
             "bk": "attn_k.bias", "wv": "attn_v.weight", "bv": "attn_v.bias",
             "wo": "attn_output.weight", "bo": "attn_output.bias",
             "ln1_w": "attn_output_norm.weight", "ln1_b": "attn_output_norm.bias",
             "w1": "ffn_up.weight", "b1": "ffn_up.bias", "w2": "ffn_down.weight",
             "b2": "ffn_down.bias", "ln2_w": "layer_output_norm.weight",
             "ln2_b": "layer_output_norm.bias"}
    for i, L in enumerate(P["layers"]):
        for key, name in names.items():
            w.add_tensor(f"blk.{i}.{name}", L[key], F32)
    w.write(os.path.join(out_dir, "bert.gguf"))

    P64 = {k: torch.tensor(v, dtype=torch.float64) for k, v in P.items() if k != "layers"}
    P64["layers"] = [{k: torch.tensor(v, dtype=torch.float64) for k, v in L.items()}
                     for L in P["layers"]]
    cases = []
    for text in TEXTS:
        ids = wordpiece(text, index)
        x = forward(P64, ids)
        cls = x[0] / x[0].norm()
        mean = x.mean(0)
        mean = mean / mean.norm()
        cases.append({"text": text, "token_ids": ids, "cls": cls.tolist(), "mean": mean.tolist()})
    head = {"pool_w": mat(HIDDEN, HIDDEN), "pool_b": mat(HIDDEN, std=0.1),
            "cls_w": mat(1, HIDDEN, std=0.5), "cls_b": mat(1, std=0.1)}
    H64 = {k: torch.tensor(v, dtype=torch.float64) for k, v in head.items()}
    pairs = []
    for query, docs in PAIRS:
        for doc in docs:
            q_ids = wordpiece(query, index)
            d_ids = wordpiece(doc, index)[1:]
            ids = q_ids + d_ids
            types = [0] * len(q_ids) + [1] * len(d_ids)
            x = forward(P64, ids, types)
            pooled = torch.tanh(H64["pool_w"] @ x[0] + H64["pool_b"])
            score = (H64["cls_w"] @ pooled + H64["cls_b"])[0]
            pairs.append({"query": query, "document": doc, "token_ids": ids,
                          "token_type_ids": types, "score": float(score)})
    with open(os.path.join(out_dir, "bert_reference.json"), "w") as f:
        json.dump({"hidden": HIDDEN, "cases": cases, "pairs": pairs}, f)
    write_hf_dirs(out_dir, tokens, P, head)
    write_nomic(out_dir, tokens, index, rng)


def write_safetensors(path, named):
    header, blobs, offset = {}, [], 0
    for name, arr in named:
        data = np.ascontiguousarray(arr, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for b in blobs:
            f.write(b)


def write_hf_dirs(out_dir, tokens, P, head):
    body = [("embeddings.word_embeddings.weight", P["tok"]),
            ("embeddings.position_embeddings.weight", P["pos"]),
            ("embeddings.token_type_embeddings.weight", P["type"]),
            ("embeddings.LayerNorm.weight", P["ln_e_w"]),
            ("embeddings.LayerNorm.bias", P["ln_e_b"])]
    names = {"wq": "attention.self.query.weight", "bq": "attention.self.query.bias",
             "wk": "attention.self.key.weight", "bk": "attention.self.key.bias",
             "wv": "attention.self.value.weight", "bv": "attention.self.value.bias",
             "wo": "attention.output.dense.weight", "bo": "attention.output.dense.bias",
             "ln1_w": "attention.output.LayerNorm.weight",
             "ln1_b": "attention.output.LayerNorm.bias",
             "w1": "intermediate.dense.weight", "b1": "intermediate.dense.bias",
             "w2": "output.dense.weight", "b2": "output.dense.bias",
             "ln2_w": "output.LayerNorm.weight", "ln2_b": "output.LayerNorm.bias"}
    for i, L in enumerate(P["layers"]):
        for key, name in names.items():
            body.append((f"encoder.layer.{i}.{name}", L[key]))
    pooler = [("pooler.dense.weight", head["pool_w"]), ("pooler.dense.bias", head["pool_b"])]
    config = {"model_type": "bert", "hidden_size": HIDDEN, "num_hidden_layers": LAYERS,
              "num_attention_heads": HEADS, "intermediate_size": FFN, "hidden_act": "gelu",
              "max_position_embeddings": MAX_POS, "type_vocab_size": TYPES,
              "layer_norm_eps": EPS, "vocab_size": len(tokens),
              "position_embedding_type": "absolute"}

    emb = os.path.join(out_dir, "bert-hf")
    os.makedirs(emb, exist_ok=True)
    with open(os.path.join(emb, "config.json"), "w") as f:
        json.dump(dict(config, architectures=["BertModel"]), f)
    # BertModel checkpoints keep their (unused) pooler: the loader must skip it.
    write_safetensors(os.path.join(emb, "model.safetensors"), body + pooler)
    tok = {"version": "1.0", "added_tokens": [
               {"id": tokens.index(t), "content": t, "special": True} for t in SPECIALS],
           "normalizer": {"type": "BertNormalizer", "lowercase": True},
           "pre_tokenizer": {"type": "BertPreTokenizer"},
           "model": {"type": "WordPiece", "unk_token": "[UNK]",
                     "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                     "vocab": {t: i for i, t in enumerate(tokens)}}}
    with open(os.path.join(emb, "tokenizer.json"), "w") as f:
        json.dump(tok, f)

    rr = os.path.join(out_dir, "bert-rerank-hf")
    os.makedirs(rr, exist_ok=True)
    with open(os.path.join(rr, "config.json"), "w") as f:
        json.dump(dict(config, architectures=["BertForSequenceClassification"],
                       id2label={"0": "LABEL_0"}, label2id={"LABEL_0": 0}), f)
    named = [("bert." + n, a) for n, a in body + pooler]
    named += [("classifier.weight", head["cls_w"]), ("classifier.bias", head["cls_b"])]
    write_safetensors(os.path.join(rr, "model.safetensors"), named)
    with open(os.path.join(rr, "vocab.txt"), "w") as f:
        f.write("\n".join(tokens) + "\n")
    with open(os.path.join(rr, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}, f)


# nomic-bert (nomic-embed-text-v1/v1.5), from the published architecture (HF
# nomic-ai/nomic-bert-2048 modeling_hf_nomic_bert.py, the post-norm configuration nomic-embed
# uses: prenorm false, rotary_emb_fraction 1, rotary_emb_interleaved false, swiglu, no biases):
#   x = LN(tok + type0)                      (no absolute positions)
#   q, k, v = split(Wqkv x) per head; q, k rotated by GPT-NeoX rotary (rotate_half: pair i with
#     i + d/2, inv_freq_i = base^(-2i/d)); a = softmax(q k^T / sqrt(d)) v over all tokens
#   x = LN(x + W_o a);  x = LN(x + fc2(fc11(x) * silu(fc12(x))))
#   mean pooling over the tokens, L2-normalised.
# GGUF names as llama.cpp's converter writes them: fc11 -> ffn_up, fc12 -> ffn_gate,
# fc2 -> ffn_down, Wqkv -> attn_qkv, norm1 -> attn_output_norm, norm2 -> layer_output_norm.
N_HIDDEN, N_HEADS, N_LAYERS, N_FFN, N_CTX, N_ROPE_BASE = 64, 4, 2, 96, 128, 1000.0
N_TEXTS = TEXTS + ["the cat sat on the mat the dog sat on the ball the big red house is very "
                   "good hello world a cafe the lowest wanted dogs played with a ball"]


def rotary(x, base):
    """x: [heads, T, d] -> GPT-NeoX rotary at positions 0..T-1 (float64)."""
    d = x.shape[-1]
    inv = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(x.shape[1], dtype=torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)
    sin = torch.cat([ang.sin(), ang.sin()], -1)
    rot = torch.cat([-x[..., d // 2:], x[..., : d // 2]], -1)
    return x * cos + rot * sin


def nomic_forward(p, ids, act=lambda x: x):
    """act: what each matmul does to its input rows first (the Q8_0 oracle quantises them)."""
    x = p["tok"][torch.tensor(ids)] + p["type"][0]
    x = layer_norm(x, p["ln_e_w"], p["ln_e_b"])
    d = N_HIDDEN // N_HEADS
    for L in p["layers"]:
        qkv = (act(x) @ L["wqkv"].T).view(-1, 3, N_HEADS, d)
        q, k, v = (qkv[:, i].transpose(0, 1) for i in range(3))
        q, k = rotary(q, N_ROPE_BASE), rotary(k, N_ROPE_BASE)
        a = torch.softmax(q @ k.transpose(1, 2) / d ** 0.5, dim=-1) @ v
        a = a.transpose(0, 1).reshape(-1, N_HIDDEN)
        x = layer_norm(x + act(a) @ L["wo"].T, L["ln1_w"], L["ln1_b"])
        h = (act(x) @ L["fc11"].T) * torch.nn.functional.silu(act(x) @ L["fc12"].T)
        x = layer_norm(x + act(h) @ L["fc2"].T, L["ln2_w"], L["ln2_b"])
    return x


def write_nomic_gguf(path, tokens, index, P, arch="nomic-bert", rope_dims=None, drop=None):
    w = gw.GGUFWriter()
    a = arch + "."
    w.add_string("general.architecture", arch)
    w.add_string("general.name", "pagoda-nomic-bert-test")
    w.add_u32(a + "context_length", N_CTX)
    w.add_u32(a + "embedding_length", N_HIDDEN)
    w.add_u32(a + "block_count", N_LAYERS)
    w.add_u32(a + "feed_forward_length", N_FFN)
    w.add_u32(a + "attention.head_count", N_HEADS)
    w.add_f32(a + "attention.layer_norm_epsilon", EPS)
    w.add_bool(a + "attention.causal", False)
    w.add_u32(a + "pooling_type", 1)  # mean
    w.add_f32(a + "rope.freq_base", N_ROPE_BASE)
    if rope_dims is not None:
        w.add_u32(a + "rope.dimension_count", rope_dims)
    if arch == "nomic-bert-moe":
        w.add_u32(a + "moe_every_n_layers", 2)
        w.add_u32(a + "expert_count", 8)
        w.add_u32(a + "expert_used_count", 2)
    add_wordpiece_vocab(w, tokens, index)
    F32 = gw.GGML_TYPE_F32
    w.add_tensor("token_embd.weight", P["tok"], F32)
    w.add_tensor("token_types.weight", P["type"], F32)
    w.add_tensor("token_embd_norm.weight", P["ln_e_w"], F32)
    w.add_tensor("token_embd_norm.bias", P["ln_e_b"], F32)
    names = {"wqkv": "attn_qkv.weight", "wo": "attn_output.weight",
             "ln1_w": "attn_output_norm.weight", "ln1_b": "attn_output_norm.bias",
             "fc11": "ffn_up.weight", "fc12": "ffn_gate.weight", "fc2": "ffn_down.weight",
             "ln2_w": "layer_output_norm.weight", "ln2_b": "layer_output_norm.bias"}
    for i, L in enumerate(P["layers"]):
        for key, name in names.items():
            if f"blk.{i}.{name}" != drop:
                w.add_tensor(f"blk.{i}.{name}", L[key], F32)
    w.write(path)


def q8_0_roundtrip(m):
    """ggml's Q8_0 (quantize_row_q8_0_ref): per block of 32, d = max|x| / 127 stored as F16,
    q = round(x / d) in int8; returns the dequantised d * q."""
    blocks = m.astype(np.float32).reshape(-1, 32)
    d = np.abs(blocks).max(axis=1, keepdims=True) / 127.0
    inv = np.where(d != 0, 1.0 / np.where(d != 0, d, 1), 0.0)
    q = np.trunc(blocks * inv + np.copysign(0.5, blocks * inv))  # roundf: ties away from zero
    return (d.astype(np.float16).astype(np.float32) * q).reshape(m.shape)


def q8_act(x):
    return torch.tensor(q8_0_roundtrip(x.numpy()), dtype=torch.float64)


def write_nomic(out_dir, tokens, index, rng):
    """OUT_DIR/nomic.gguf + nomic_reference.json, two variants pagoda must refuse by name:
    nomic-moe.gguf (architecture nomic-bert-moe) and nomic-half-rope.gguf (rotary fraction 0.5),
    and two broken files (nomic-no-gate.gguf, nomic-short-qkv.gguf)."""
    def mat(*shape, std=0.15):
        return rng.normal(0.0, std, size=shape).astype(np.float32)

    P = {"tok": mat(len(tokens), N_HIDDEN, std=0.5), "type": mat(TYPES, N_HIDDEN, std=0.5),
         "ln_e_w": 1 + mat(N_HIDDEN, std=0.1), "ln_e_b": mat(N_HIDDEN, std=0.1), "layers": []}
    for _ in range(N_LAYERS):
        P["layers"].append({
            "wqkv": mat(3 * N_HIDDEN, N_HIDDEN, std=0.3), "wo": mat(N_HIDDEN, N_HIDDEN),
            "ln1_w": 1 + mat(N_HIDDEN, std=0.1), "ln1_b": mat(N_HIDDEN, std=0.1),
            "fc11": mat(N_FFN, N_HIDDEN), "fc12": mat(N_FFN, N_HIDDEN),
            "fc2": mat(N_HIDDEN, N_FFN),
            "ln2_w": 1 + mat(N_HIDDEN, std=0.1), "ln2_b": mat(N_HIDDEN, std=0.1)})
    write_nomic_gguf(os.path.join(out_dir, "nomic.gguf"), tokens, index, P)
    write_nomic_gguf(os.path.join(out_dir, "nomic-moe.gguf"), tokens, index, P,
                     arch="nomic-bert-moe")
    write_nomic_gguf(os.path.join(out_dir, "nomic-half-rope.gguf"), tokens, index, P,
                     rope_dims=N_HIDDEN // N_HEADS // 2)
    # Broken files: a layer without its gate, and an attn_qkv two thirds as tall.
    write_nomic_gguf(os.path.join(out_dir, "nomic-no-gate.gguf"), tokens, index, P,
                     drop="blk.1.ffn_gate.weight")
    short = dict(P, layers=[dict(P["layers"][0], wqkv=P["layers"][0]["wqkv"][: 2 * N_HIDDEN])]
                 + P["layers"][1:])
    write_nomic_gguf(os.path.join(out_dir, "nomic-short-qkv.gguf"), tokens, index, short)
    P64 = {k: torch.tensor(v, dtype=torch.float64) for k, v in P.items() if k != "layers"}
    P64["layers"] = [{k: torch.tensor(v, dtype=torch.float64) for k, v in L.items()}
                     for L in P["layers"]]
    # The oracle of the Q8_0 file: the same forward on the weights `pagoda quantize nomic.gguf
    # ... Q8_0` stores (every matrix but token_types; norms stay F32), dequantised, with each
    # matmul's input rows rounded through Q8_0 too, as ggml's Q8_0 dot products take them.
    Q64 = dict(P64, tok=torch.tensor(q8_0_roundtrip(P["tok"]), dtype=torch.float64))
    Q64["layers"] = [{k: torch.tensor(q8_0_roundtrip(v) if v.ndim == 2 else v, dtype=torch.float64)
                      for k, v in L.items()} for L in P["layers"]]
    cases = []
    for text in N_TEXTS:
        ids = wordpiece(text, index)
        case = {"text": text, "token_ids": ids}
        for prefix, params, act in (("", P64, lambda x: x), ("q8_0_", Q64, q8_act)):
            x = nomic_forward(params, ids, act)
            mean = x.mean(0)
            case[prefix + "mean"] = (mean / mean.norm()).tolist()
            case[prefix + "cls"] = (x[0] / x[0].norm()).tolist()
        cases.append(case)
    with open(os.path.join(out_dir, "nomic_reference.json"), "w") as f:
        json.dump({"hidden": N_HIDDEN, "cases": cases}, f)


if __name__ == "__main__":
    main()
