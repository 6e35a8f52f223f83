#!/usr/bin/python3
"""Makes TinyLlama-1.1B-shape GPTQ / AWQ 4-bit Hugging Face directories for speed runs (numpy
only, random codes: a few seconds per directory; the values are random, the layout is each
format's published packing, as in make_quant_fixtures.py).

  /usr/bin/python3 tools/quant_fixtures/make_speed_dirs.py --out DIR [--cases a,b,...]

Cases (group size 128, 4 bits; embed_tokens and lm_head F16 as published checkpoints ship them,
or with --quant-lm-head the head quantised too, into NAME-qhead):
  gptq-sym        AutoGPTQ v1, sym (zeros stored as 7): repacked to Q4_0
  gptq-sym-act    the same with desc_act (g_idx from a random visiting order per Linear)
  gptq-asym-act   gptq_v2 asymmetric zeros with desc_act
  awq             AutoAWQ GEMM, zero points (asymmetric)

With --moe, Mixtral-style directories NAME-moe instead: the MLP of every layer replaced by a
router and 8 SwiGLU experts (TinyLlama's FFN shape each, top 2), every expert quantised like the
other Linears (--layers keeps them small: 2 layers are ~0.5 GB).

    build/bin/pagoda bench -m DIR/gptq-sym -p 128 -n 32 --batch 1
"""
import argparse
import math
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_quant_fixtures as mqf  # noqa: E402  (the safetensors writer, config, tokenizer)

HIDDEN, HEADS, KV_HEADS, FFN, LAYERS, VOCAB, GROUP = 2048, 32, 4, 5632, 22, 32000, 128
HEAD_DIM = HIDDEN // HEADS
EXPERTS, EXPERTS_USED = 8, 2
LINEARS = [("self_attn.q_proj", HEADS * HEAD_DIM, HIDDEN),
           ("self_attn.k_proj", KV_HEADS * HEAD_DIM, HIDDEN),
           ("self_attn.v_proj", KV_HEADS * HEAD_DIM, HIDDEN),
           ("self_attn.o_proj", HIDDEN, HEADS * HEAD_DIM),
           ("mlp.gate_proj", FFN, HIDDEN),
           ("mlp.up_proj", FFN, HIDDEN),
           ("mlp.down_proj", HIDDEN, FFN)]

CASES = {
    "gptq-sym": {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "desc_act": False,
                 "sym": True, "checkpoint_format": "gptq"},
    "gptq-sym-act": {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "desc_act": True,
                     "sym": True, "checkpoint_format": "gptq"},
    "gptq-asym-act": {"quant_method": "gptq", "bits": 4, "group_size": GROUP, "desc_act": True,
                      "sym": False, "checkpoint_format": "gptq_v2"},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": GROUP, "zero_point": True,
            "version": "gemm"},
}


def random_words(rng, shape):
    return rng.integers(0, 1 << 32, size=shape, dtype=np.uint64).astype(np.uint32).view(np.int32)


def scales(rng, groups, rows, cols):
    # Codes are uniform in [0, 16): |q - z| ~ 4.6, so W has about unit norm per row.
    return (rng.uniform(0.5, 1.5, size=(groups, rows)) / (4.6 * math.sqrt(cols))).astype(
        np.float16)


def linear(rng, qcfg, rows, cols):
    groups = cols // GROUP
    if qcfg["quant_method"] == "awq":
        return {"qweight": ("I32", random_words(rng, (cols, rows // 8))),
                "qzeros": ("I32", random_words(rng, (groups, rows // 8))),
                "scales": ("F16", scales(rng, groups, rows, cols))}
    if qcfg["sym"]:
        zeros = np.full((groups, rows // 8), 0x77777777, dtype=np.uint32).view(np.int32)
    else:
        zeros = random_words(rng, (groups, rows // 8))
    if qcfg["desc_act"]:
        g_idx = np.empty(cols, dtype=np.int32)
        g_idx[rng.permutation(cols)] = np.arange(cols) // GROUP
    else:
        g_idx = (np.arange(cols) // GROUP).astype(np.int32)
    return {"qweight": ("I32", random_words(rng, (cols // 8, rows))),
            "qzeros": ("I32", zeros),
            "scales": ("F16", scales(rng, groups, rows, cols)),
            "g_idx": ("I32", g_idx)}


def write_tokenizer(out_dir):
    """A byte-level BPE vocabulary of VOCAB tokens (256 bytes, an end token, fillers)."""
    mqf.write_tokenizer(out_dir)
    path = os.path.join(out_dir, "tokenizer.json")
    import json
    with open(path, encoding="utf-8") as f:
        tj = json.load(f)
    vocab = tj["model"]["vocab"]
    for i in range(len(vocab), VOCAB):
        vocab[f"<f{i}>"] = i
    mqf.write_json(path, tj)


def make(out_root, name, seed, quant_head, moe=False, layers=LAYERS):
    rng = np.random.default_rng(seed)
    qcfg = CASES[name]
    tensors = {
        "model.embed_tokens.weight": ("F16", rng.standard_normal((VOCAB, HIDDEN)).astype(
            np.float16)),
        "model.norm.weight": ("F16", np.ones(HIDDEN, dtype=np.float16)),
    }
    if quant_head:  # GPTQModel's lm_head=True: the head quantised like the layers
        for suffix, t in linear(rng, qcfg, VOCAB, HIDDEN).items():
            tensors["lm_head." + suffix] = t
    else:
        tensors["lm_head.weight"] = ("F16", (rng.standard_normal((VOCAB, HIDDEN)) /
                                             math.sqrt(HIDDEN)).astype(np.float16))
    linears = LINEARS[:4] + [(f"block_sparse_moe.experts.{e}.{w}", r, c)
                             for e in range(EXPERTS)
                             for w, r, c in (("w1", FFN, HIDDEN), ("w3", FFN, HIDDEN),
                                             ("w2", HIDDEN, FFN))] if moe else LINEARS
    for layer in range(layers):
        p = f"model.layers.{layer}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors[p + norm + ".weight"] = ("F16", np.ones(HIDDEN, dtype=np.float16))
        if moe:
            tensors[p + "block_sparse_moe.gate.weight"] = ("F16", (
                rng.standard_normal((EXPERTS, HIDDEN)) / math.sqrt(HIDDEN)).astype(np.float16))
        for lin, rows, cols in linears:
            for suffix, t in linear(rng, qcfg, rows, cols).items():
                tensors[f"{p}{lin}.{suffix}"] = t
    d = os.path.join(out_root, name + ("-moe" if moe else "") + ("-qhead" if quant_head else ""))
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(d)
    write_tokenizer(d)
    config = dict(mqf.base_config(), hidden_size=HIDDEN, intermediate_size=FFN,
                  num_hidden_layers=layers, num_attention_heads=HEADS,
                  num_key_value_heads=KV_HEADS, max_position_embeddings=2048, vocab_size=VOCAB,
                  quantization_config=qcfg)
    if moe:
        config.update(architectures=["MixtralForCausalLM"], model_type="mixtral",
                      num_local_experts=EXPERTS, num_experts_per_tok=EXPERTS_USED)
    mqf.write_json(os.path.join(d, "config.json"), config)
    mqf.write_safetensors(os.path.join(d, "model.safetensors"), tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (the cases' folders are replaced)")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated: " + ", ".join(CASES))
    ap.add_argument("--quant-lm-head", action="store_true",
                    help="quantise lm_head like the layers (folders NAME-qhead)")
    ap.add_argument("--moe", action="store_true",
                    help="Mixtral-style experts instead of the dense MLP (folders NAME-moe)")
    ap.add_argument("--layers", type=int, default=LAYERS, help=f"layers (default {LAYERS})")
    args = ap.parse_args()
    if args.layers < 1:
        sys.exit("--layers must be at least 1")
    os.makedirs(args.out, exist_ok=True)
    for i, name in enumerate(args.cases.split(",")):
        if name not in CASES:
            sys.exit(f"unknown case {name!r} (known: {', '.join(CASES)})")
        make(args.out, name, 1000 + i, args.quant_lm_head, args.moe, args.layers)


if __name__ == "__main__":
    main()
