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
The vocabulary is stored in llama.cpp's "phantom space" form (word starts prefixed with U+2581,
continuations without "##"), as its converter writes BERT vocabularies.

Usage: make_bert_fixture.py OUT_DIR  -> OUT_DIR/bert.gguf, OUT_DIR/bert_reference.json
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


def forward(p, ids):
    t = torch.tensor(ids)
    x = p["tok"][t] + p["pos"][: len(ids)] + p["type"][0]
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
    w.add_string("tokenizer.ggml.model", "bert")

    def phantom(t):
        if t.startswith("[") and t.endswith("]"):
            return t
        return t[2:] if t.startswith("##") else "\u2581" + t

    w.add_array("tokenizer.ggml.tokens", gw.STRING, [phantom(t) for t in tokens])
    w.add_array("tokenizer.ggml.token_type", gw.INT32,
                [3 if t in SPECIALS and t != "[UNK]" else (2 if t == "[UNK]" else 1)
                 for t in tokens])
    w.add_u32("tokenizer.ggml.cls_token_id", index["[CLS]"])
    w.add_u32("tokenizer.ggml.seperator_token_id", index["[SEP]"])
    w.add_u32("tokenizer.ggml.unknown_token_id", index["[UNK]"])
    w.add_u32("tokenizer.ggml.padding_token_id", index["[PAD]"])
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
    with open(os.path.join(out_dir, "bert_reference.json"), "w") as f:
        json.dump({"hidden": HIDDEN, "cases": cases}, f)


if __name__ == "__main__":
    main()
