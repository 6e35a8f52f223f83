#!/usr/bin/python3
"""Makes tiny Hugging Face model directories for pagoda's tests (run at test time, into the
build tree; nothing large is committed).

  /usr/bin/python3 tools/hf_fixtures/make_hf_fixtures.py --fixtures ../shared/fixtures --out DIR

Writes under DIR:
  from-gguf/llama-f16   the fixture llama-F16.gguf as a sharded F16 checkpoint (q/k rows
                        un-permuted to HF's rotate-half layout) with a SentencePiece-style BPE
                        tokenizer.json built from the GGUF vocab (merges derived from the scores);
  from-gguf/qwen2-f32   qwen2-Q8_0.gguf dequantised to F32, byte-level BPE tokenizer.json;
  from-gguf/moe-f16     moe-Q8_0.gguf dequantised to F16 in Mixtral's layout (one tensor per
                        expert, block_sparse_moe.*);
  from-gguf/phi3-f32    arch/phi3-Q8_0.gguf dequantised to F32 in Phi-3's layout (qkv_proj and
                        gate_up_proj fused, sliding_window 2047);
  from-gguf/{gemma2,qwen2moe,deepseek2}-f32 and random/{qwen3,qwen3moe,gemma3}-f32: see
                        arch_fixtures.py;
                        each from-gguf dir also has reference.json (float64 PyTorch logits of the
                        first prompt tokens of the fixture's llama.cpp reference, as below);
  tokenizers/NAME       tokenizer.json + tokenizer_config.json for the tokenizer fixture vocabs
                        (llama-spm, gpt-2);
  random/NAME           random-weight Mistral (BF16, head_dim != hidden/heads, linear RoPE
                        scaling), Qwen2 (F16, biases, tied embeddings, Qwen2 Split regex),
                        Mixtral (F32, 4 experts top-2, two shards), Llama-3 (F32, llama3 RoPE
                        scaling, Llama-3 Split regex), Qwen2 (F32, YaRN RoPE scaling) and
                        Mistral with sliding_window 8 under 24 tokens (mistral-swa-f32), each
                        with reference.json: logits of a
                        token sequence computed here by an independent float64 PyTorch forward
                        pass (RMSNorm, rotate-half RoPE, GQA, sliding-window mask, SwiGLU, MoE
                        routing).
A stamp file DIR/.complete is written last.
"""
import argparse
import json
import math
import os
import shutil
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_reader  # noqa: E402

SPACE = "\u2581"
TOKEN_TYPE_NORMAL, TOKEN_TYPE_UNKNOWN, TOKEN_TYPE_CONTROL = 1, 2, 3
TOKEN_TYPE_USER_DEFINED, TOKEN_TYPE_UNUSED, TOKEN_TYPE_BYTE = 4, 5, 6

GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}"
                r"\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
               r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>"
                 "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")


# ---- files ----------------------------------------------------------------------------------

def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)


def to_bf16_bits(a):
    """float32 array -> uint16 bfloat16 bits (round to nearest even, as torch does)."""
    t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16)
    return t.view(torch.int16).numpy().view(np.uint16)


def bf16_bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def encode_tensor(arr, dtype):
    """(safetensors dtype name, bytes) of a float array stored as dtype F32/F16/BF16."""
    if dtype == "F32":
        return "F32", np.ascontiguousarray(arr, dtype="<f4").tobytes()
    if dtype == "F16":
        return "F16", np.ascontiguousarray(arr, dtype="<f2").tobytes()
    if dtype == "BF16":
        return "BF16", to_bf16_bits(arr).astype("<u2").tobytes()
    raise ValueError(dtype)


def stored_values(arr, dtype):
    """The float64 values a tensor holds once stored as dtype."""
    if dtype == "F32":
        return np.asarray(arr, dtype=np.float32).astype(np.float64)
    if dtype == "F16":
        return np.asarray(arr, dtype=np.float16).astype(np.float64)
    return bf16_bits_to_f32(to_bf16_bits(arr)).astype(np.float64)


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: (dtype, array)}; laid out like the reference writer (8-byte aligned
    header, data sorted by dtype alignment then name)."""
    order = sorted(tensors, key=lambda n: (-{"F32": 4, "F16": 2, "BF16": 2}[tensors[n][0]], n))
    header = {}
    blobs = []
    offset = 0
    for name in order:
        dtype, arr = tensors[name]
        st_dtype, data = encode_tensor(arr, dtype)
        header[name] = {"dtype": st_dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def write_checkpoint(out_dir, tensors, num_shards=1):
    """Writes model.safetensors, or num_shards shards + model.safetensors.index.json."""
    if num_shards == 1:
        write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors,
                          {"format": "pt"})
        return
    names = sorted(tensors)
    weight_map = {}
    total = 0
    for s in range(num_shards):
        part = names[s::num_shards]
        fname = f"model-{s + 1:05d}-of-{num_shards:05d}.safetensors"
        write_safetensors(os.path.join(out_dir, fname), {n: tensors[n] for n in part},
                          {"format": "pt"})
        for n in part:
            weight_map[n] = fname
            total += tensors[n][1].size
    write_json(os.path.join(out_dir, "model.safetensors.index.json"),
               {"metadata": {"total_size": total}, "weight_map": weight_map})


# ---- tokenizers -----------------------------------------------------------------------------

def spm_merges(tokens, scores, types):
    """Merges for a SentencePiece vocab as transformers' SentencePieceExtractor derives them:
    every split of a token into two tokens, ordered by the token's score (highest first), splits
    of one token by the ids of their parts."""
    vocab = {t: i for i, t in enumerate(tokens)}
    merges = []
    for i, tok in enumerate(tokens):
        if types[i] != TOKEN_TYPE_NORMAL or len(tok) < 2:
            continue
        local = []
        for k in range(1, len(tok)):
            left, right = tok[:k], tok[k:]
            if left in vocab and right in vocab:
                local.append((vocab[left], vocab[right], left, right))
        local.sort()
        for _, _, left, right in local:
            merges.append((-scores[i], i, left, right))
    merges.sort(key=lambda m: (m[0], m[1]))  # stable by token for equal scores
    return [[m[2], m[3]] for m in merges]


def added_token(i, text, special):
    return {"id": i, "content": text, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": not special, "special": special}


def spm_tokenizer_json(tokens, scores, types, bos_id):
    merges = spm_merges(tokens, scores, types)
    added = [added_token(i, t, True) for i, t in enumerate(tokens)
             if types[i] in (TOKEN_TYPE_CONTROL, TOKEN_TYPE_UNKNOWN)]
    added += [added_token(i, t, False) for i, t in enumerate(tokens)
              if types[i] == TOKEN_TYPE_USER_DEFINED]
    unk = next((t for i, t in enumerate(tokens) if types[i] == TOKEN_TYPE_UNKNOWN), None)
    bos = tokens[bos_id]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": SPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [bos_id], "tokens": [bos]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": unk,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }


def byte_level_tokenizer_json(tokens, types, merges, regex=None, ignore_merges=False,
                              nfc=False, merges_as_pairs=False):
    added = [added_token(i, t, True) for i, t in enumerate(tokens)
             if types[i] == TOKEN_TYPE_CONTROL]
    added += [added_token(i, t, False) for i, t in enumerate(tokens)
              if types[i] == TOKEN_TYPE_USER_DEFINED]
    if regex is None:
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": True}
    else:
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated",
             "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
             "use_regex": False}]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"} if nfc else None,
        "pre_tokenizer": pre,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                           "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "ignore_merges": ignore_merges,
                  "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [m.split(" ", 1) for m in merges] if merges_as_pairs else merges},
    }


def gguf_vocab(g):
    tokens = g.kv["tokenizer.ggml.tokens"]
    n = len(tokens)
    scores = g.kv.get("tokenizer.ggml.scores", [0.0] * n)
    types = g.kv.get("tokenizer.ggml.token_type", [TOKEN_TYPE_NORMAL] * n)
    return tokens, scores, types


def write_tokenizer_from_gguf(g, out_dir, chat_template=None):
    """tokenizer.json + tokenizer_config.json for a GGUF vocab (llama → SPM-style BPE with byte
    fallback, gpt2 → byte-level BPE)."""
    tokens, scores, types = gguf_vocab(g)
    model = g.kv["tokenizer.ggml.model"]
    bos = g.kv.get("tokenizer.ggml.bos_token_id")
    eos = g.kv.get("tokenizer.ggml.eos_token_id")
    cfg = {"tokenizer_class": "PreTrainedTokenizerFast",
           "bos_token": tokens[bos] if bos is not None else None,
           "eos_token": tokens[eos] if eos is not None else None,
           "model_max_length": 1e30}
    if model == "llama":
        tj = spm_tokenizer_json(tokens, scores, types, bos)
        cfg.update({"add_bos_token": bool(g.kv.get("tokenizer.ggml.add_bos_token", True)),
                    "add_eos_token": bool(g.kv.get("tokenizer.ggml.add_eos_token", False)),
                    "unk_token": {"__type": "AddedToken", "content": tokens[0], "lstrip": False,
                                  "normalized": True, "rstrip": False, "single_word": False},
                    "clean_up_tokenization_spaces": False, "legacy": True})
    elif model == "gpt2":
        assert g.kv.get("tokenizer.ggml.pre") == "gpt-2"
        tj = byte_level_tokenizer_json(tokens, types, g.kv["tokenizer.ggml.merges"])
        cfg.update({"add_bos_token": False, "add_prefix_space": False,
                    "clean_up_tokenization_spaces": True})
    else:
        raise ValueError(model)
    if chat_template is not None:
        cfg["chat_template"] = chat_template
    os.makedirs(out_dir, exist_ok=True)
    write_json(os.path.join(out_dir, "tokenizer.json"), tj)
    write_json(os.path.join(out_dir, "tokenizer_config.json"), cfg)


# ---- checkpoints from the fixture GGUFs ----------------------------------------------------

def unpermute(w, n_head):
    """Inverse of llama.cpp's convert permute: GGUF (interleaved RoPE) rows → HF rotate-half."""
    rows = w.shape[0]
    return (w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2)
            .reshape(w.shape))


def hf_from_gguf(g, out_dir, weight_dtype, num_shards, hf_arch, chat_template=None,
                 ref_tokens=None):
    """ref_tokens: also write reference.json, the float64 PyTorch logits of these tokens with the
    weights as stored (as for the random checkpoints)."""
    arch = g.arch()
    kv = g.kv
    n_layers = kv[f"{arch}.block_count"]
    n_head = kv[f"{arch}.attention.head_count"]
    n_kv = kv.get(f"{arch}.attention.head_count_kv", n_head)
    n_experts = kv.get(f"{arch}.expert_count", 0)
    permute = arch == "llama"
    fused = arch == "phi3"  # Phi-3: qkv_proj and gate_up_proj, as GGUF's attn_qkv and ffn_up
    tensors = {}

    def put(name, arr, one_d=False):
        tensors[name] = ("F32" if one_d else weight_dtype, arr)

    put("model.embed_tokens.weight", g.tensor_array("token_embd.weight"))
    put("model.norm.weight", g.tensor_array("output_norm.weight"), True)
    tied = "output.weight" not in g.tensors
    if not tied:
        put("lm_head.weight", g.tensor_array("output.weight"))
    for i in range(n_layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        put(p + "input_layernorm.weight", g.tensor_array(b + "attn_norm.weight"), True)
        put(p + "post_attention_layernorm.weight", g.tensor_array(b + "ffn_norm.weight"), True)
        if fused:
            put(p + "self_attn.qkv_proj.weight", g.tensor_array(b + "attn_qkv.weight"))
        else:
            q = g.tensor_array(b + "attn_q.weight")
            k = g.tensor_array(b + "attn_k.weight")
            if permute:
                q, k = unpermute(q, n_head), unpermute(k, n_kv)
            put(p + "self_attn.q_proj.weight", q)
            put(p + "self_attn.k_proj.weight", k)
            put(p + "self_attn.v_proj.weight", g.tensor_array(b + "attn_v.weight"))
        put(p + "self_attn.o_proj.weight", g.tensor_array(b + "attn_output.weight"))
        for bias in ("q", "k", "v"):
            if b + f"attn_{bias}.bias" in g.tensors:
                put(p + f"self_attn.{bias}_proj.bias", g.tensor_array(b + f"attn_{bias}.bias"),
                    True)
        if n_experts:
            put(p + "block_sparse_moe.gate.weight", g.tensor_array(b + "ffn_gate_inp.weight"))
            stacks = {w: g.tensor_array(b + f"ffn_{name}_exps.weight")
                      for w, name in (("w1", "gate"), ("w3", "up"), ("w2", "down"))}
            for e in range(n_experts):
                for w, arr in stacks.items():
                    put(p + f"block_sparse_moe.experts.{e}.{w}.weight", arr[e])
        elif fused:
            put(p + "mlp.gate_up_proj.weight", g.tensor_array(b + "ffn_up.weight"))
            put(p + "mlp.down_proj.weight", g.tensor_array(b + "ffn_down.weight"))
        else:
            put(p + "mlp.gate_proj.weight", g.tensor_array(b + "ffn_gate.weight"))
            put(p + "mlp.up_proj.weight", g.tensor_array(b + "ffn_up.weight"))
            put(p + "mlp.down_proj.weight", g.tensor_array(b + "ffn_down.weight"))

    os.makedirs(out_dir, exist_ok=True)
    write_checkpoint(out_dir, tensors, num_shards)
    tokens, _, _ = gguf_vocab(g)
    config = {
        "architectures": [hf_arch],
        "model_type": {"LlamaForCausalLM": "llama", "Qwen2ForCausalLM": "qwen2",
                       "MixtralForCausalLM": "mixtral", "Phi3ForCausalLM": "phi3"}[hf_arch],
        "hidden_size": kv[f"{arch}.embedding_length"],
        "intermediate_size": kv[f"{arch}.feed_forward_length"],
        "num_hidden_layers": n_layers,
        "num_attention_heads": n_head,
        "num_key_value_heads": n_kv,
        "max_position_embeddings": kv[f"{arch}.context_length"],
        "rms_norm_eps": kv[f"{arch}.attention.layer_norm_rms_epsilon"],
        "rope_theta": kv.get(f"{arch}.rope.freq_base", 10000.0),
        "vocab_size": len(tokens),
        "hidden_act": "silu",
        "tie_word_embeddings": tied,
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[weight_dtype],
        "bos_token_id": kv.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": kv.get("tokenizer.ggml.eos_token_id"),
        "rope_scaling": None,
    }
    if n_experts:
        config["num_local_experts"] = n_experts
        config["num_experts_per_tok"] = kv[f"{arch}.expert_used_count"]
    if hf_arch == "Qwen2ForCausalLM":
        config["use_sliding_window"] = False
        config["sliding_window"] = 4096
    if hf_arch == "Phi3ForCausalLM":
        config["sliding_window"] = kv.get(f"{arch}.attention.sliding_window")
    write_json(os.path.join(out_dir, "config.json"), config)
    write_json(os.path.join(out_dir, "generation_config.json"),
               {"bos_token_id": config["bos_token_id"], "eos_token_id": config["eos_token_id"],
                "do_sample": True, "temperature": 0.6, "top_p": 0.9, "top_k": 40,
                "repetition_penalty": 1.1, "transformers_version": "4.45.0"})
    write_tokenizer_from_gguf(g, out_dir, chat_template)
    if ref_tokens:
        W = {n: torch.from_numpy(stored_values(a, d)) for n, (d, a) in tensors.items()}
        logits = reference_forward(dict(config, head_dim=config["hidden_size"] // n_head), W,
                                   ref_tokens)
        write_json(os.path.join(out_dir, "reference.json"),
                   {"tokens": ref_tokens, "dtype": weight_dtype,
                    "logits": [[round(float(v), 6) for v in row] for row in logits]})


# ---- random checkpoints + an independent PyTorch reference ---------------------------------

def tiny_spm_vocab(llama_spm):
    """The first 1200 tokens of the Llama-2 vocab (specials, 256 bytes, the highest-scoring
    pieces)."""
    tokens, scores, types = gguf_vocab(llama_spm)
    n = 1200
    return tokens[:n], scores[:n], types[:n]


def tiny_byte_level_vocab(gpt2, specials):
    """GPT-2's 256 byte tokens and its first 700 merges (whose results are ids 256..955), plus
    special tokens appended."""
    tokens, _, _ = gguf_vocab(gpt2)
    merges = gpt2.kv["tokenizer.ggml.merges"][:700]
    keep = tokens[:956]
    index = set(keep)
    merges = [m for m in merges if m.split(" ")[0] in index and m.split(" ")[1] in index
              and m.replace(" ", "") in index]
    toks = list(keep) + list(specials)
    types = [TOKEN_TYPE_NORMAL] * len(keep) + [TOKEN_TYPE_CONTROL] * len(specials)
    return toks, types, merges


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope_inv_freq(cfg):
    d = cfg["head_dim"]
    theta = cfg["rope_theta"]
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    rs = cfg.get("rope_scaling")
    if rs and rs["rope_type"] == "llama3":
        # transformers' _compute_llama3_parameters
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        low_wl, high_wl = old / low, old / high
        wavelen = 2 * math.pi / inv
        inv_llama = torch.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
        medium = (wavelen >= high_wl) & (wavelen <= low_wl)
        inv = torch.where(medium, smoothed, inv_llama)
    if rs and rs["rope_type"] == "yarn":
        # transformers' _compute_yarn_parameters (max_position_embeddings = original * factor
        # here, so its two conventions for `factor` agree)
        factor, old = rs["factor"], rs["original_max_position_embeddings"]
        fast, slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)

        def corr(n_rot):
            return d * math.log(old / (n_rot * 2 * math.pi)) / (2 * math.log(theta))

        low, high = max(math.floor(corr(fast)), 0), min(math.ceil(corr(slow)), d - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(d // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        extrapolation = 1 - ramp
        inv = inv / factor * (1 - extrapolation) + inv * extrapolation
    return inv


def rope_attention_factor(cfg):
    rs = cfg.get("rope_scaling")
    if rs and rs["rope_type"] == "yarn":
        return rs.get("attention_factor", 0.1 * math.log(rs["factor"]) + 1.0)
    return 1.0


def apply_rope(x, positions, cfg):
    """Rotate-half RoPE on [T, heads, d]."""
    inv = rope_inv_freq(cfg)
    pos = positions.to(torch.float64)
    rs = cfg.get("rope_scaling")
    if rs and rs["rope_type"] == "linear":
        pos = pos / rs["factor"]
    ang = pos[:, None] * inv[None, :]  # [T, d/2]
    scale = rope_attention_factor(cfg)
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :] * scale
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :] * scale
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


def reference_forward(cfg, W, tokens):
    """float64 logits [T, vocab] of a Llama/Mistral/Qwen2/Mixtral/Phi-3 decoder."""
    T = len(tokens)
    # Every layer's window (Mistral/Phi-3): position t sees s in (t - w, t], transformers' mask.
    window = cfg.get("sliding_window") or 0
    H, KV, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    x = W["model.embed_tokens.weight"][torch.tensor(tokens)]
    pos = torch.arange(T)
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    if window:
        mask = mask + torch.full((T, T), float("-inf"), dtype=torch.float64).tril(-window)
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps)

        qkv = W.get(p + "self_attn.qkv_proj.weight")  # Phi-3: q, k, v rows fused

        def proj(name):
            if qkv is not None:
                start = {"q": 0, "k": H * D, "v": (H + KV) * D}[name]
                return h @ qkv[start:start + (H if name == "q" else KV) * D].T
            y = h @ W[p + f"self_attn.{name}_proj.weight"].T
            bias = W.get(p + f"self_attn.{name}_proj.bias")
            return y if bias is None else y + bias

        q = apply_rope(proj("q").view(T, H, D), pos, cfg)
        k = apply_rope(proj("k").view(T, KV, D), pos, cfg)
        v = proj("v").view(T, KV, D)
        group = H // KV
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(D) + mask
        attn = torch.einsum("hts,shd->thd", scores.softmax(-1), v).reshape(T, H * D)
        x = x + attn @ W[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        if cfg.get("num_local_experts"):
            router = (h @ W[p + "block_sparse_moe.gate.weight"].T).softmax(-1)
            top_w, top_i = router.topk(cfg["num_experts_per_tok"], dim=-1)
            top_w = top_w / top_w.sum(-1, keepdim=True)
            out = torch.zeros_like(h)
            for t in range(T):
                for w, e in zip(top_w[t], top_i[t]):
                    ep = p + f"block_sparse_moe.experts.{int(e)}."
                    g = torch.nn.functional.silu(h[t] @ W[ep + "w1.weight"].T)
                    u = h[t] @ W[ep + "w3.weight"].T
                    out[t] += w * ((g * u) @ W[ep + "w2.weight"].T)
            x = x + out
        elif p + "mlp.gate_up_proj.weight" in W:  # Phi-3: gate rows, then up rows
            gu = h @ W[p + "mlp.gate_up_proj.weight"].T
            g, u = gu.chunk(2, dim=-1)
            x = x + (torch.nn.functional.silu(g) * u) @ W[p + "mlp.down_proj.weight"].T
        else:
            g = torch.nn.functional.silu(h @ W[p + "mlp.gate_proj.weight"].T)
            u = h @ W[p + "mlp.up_proj.weight"].T
            x = x + (g * u) @ W[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, W["model.norm.weight"], eps)
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    return x @ head.T


def random_checkpoint(out_dir, spec, vocab_tokens, seed):
    rng = np.random.default_rng(seed)
    V = len(vocab_tokens)
    hidden, H, KV = spec["hidden_size"], spec["num_attention_heads"], spec["num_key_value_heads"]
    D = spec.get("head_dim", hidden // H)
    ffn, L, dtype = spec["intermediate_size"], spec["num_hidden_layers"], spec["dtype"]
    experts = spec.get("num_local_experts", 0)
    tensors = {}

    def mat(name, rows, cols):
        tensors[name] = (dtype, (rng.standard_normal((rows, cols)) / math.sqrt(cols))
                         .astype(np.float32))

    def vec(name, n, center, spread, one_d_dtype="F32"):
        tensors[name] = (one_d_dtype, (center + spread * rng.standard_normal(n))
                         .astype(np.float32))

    tensors["model.embed_tokens.weight"] = (dtype, rng.standard_normal((V, hidden))
                                            .astype(np.float32))
    vec("model.norm.weight", hidden, 1.0, 0.1)
    if not spec["tie_word_embeddings"]:
        mat("lm_head.weight", V, hidden)
    for i in range(L):
        p = f"model.layers.{i}."
        # Norm weights in the checkpoint dtype, as transformers saves them.
        vec(p + "input_layernorm.weight", hidden, 1.0, 0.1, dtype)
        vec(p + "post_attention_layernorm.weight", hidden, 1.0, 0.1, dtype)
        mat(p + "self_attn.q_proj.weight", H * D, hidden)
        mat(p + "self_attn.k_proj.weight", KV * D, hidden)
        mat(p + "self_attn.v_proj.weight", KV * D, hidden)
        mat(p + "self_attn.o_proj.weight", hidden, H * D)
        if spec.get("bias"):
            vec(p + "self_attn.q_proj.bias", H * D, 0.0, 0.3, dtype)
            vec(p + "self_attn.k_proj.bias", KV * D, 0.0, 0.3, dtype)
            vec(p + "self_attn.v_proj.bias", KV * D, 0.0, 0.3, dtype)
        if experts:
            mat(p + "block_sparse_moe.gate.weight", experts, hidden)
            for e in range(experts):
                ep = p + f"block_sparse_moe.experts.{e}."
                mat(ep + "w1.weight", ffn, hidden)
                mat(ep + "w3.weight", ffn, hidden)
                mat(ep + "w2.weight", hidden, ffn)
        else:
            mat(p + "mlp.gate_proj.weight", ffn, hidden)
            mat(p + "mlp.up_proj.weight", ffn, hidden)
            mat(p + "mlp.down_proj.weight", hidden, ffn)
    os.makedirs(out_dir, exist_ok=True)
    write_checkpoint(out_dir, tensors, spec.get("shards", 1))

    config = {"architectures": [spec["arch"]], "model_type": spec["model_type"],
              "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": L,
              "num_attention_heads": H, "num_key_value_heads": KV,
              "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
              "rope_theta": spec.get("rope_theta", 10000.0), "vocab_size": V,
              "hidden_act": "silu", "tie_word_embeddings": spec["tie_word_embeddings"],
              "rope_scaling": spec.get("rope_scaling"),
              "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype]}
    if "head_dim" in spec:
        config["head_dim"] = D
    if experts:
        config["num_local_experts"] = experts
        config["num_experts_per_tok"] = spec["num_experts_per_tok"]
    if spec["arch"] == "MistralForCausalLM":
        config["sliding_window"] = spec.get("sliding_window")
    write_json(os.path.join(out_dir, "config.json"), config)

    # Reference: the stored values in float64.
    W = {n: torch.from_numpy(stored_values(a, d)) for n, (d, a) in tensors.items()}
    ref_cfg = dict(config, head_dim=D)
    if ref_cfg.get("rope_scaling") and "type" in ref_cfg["rope_scaling"]:
        ref_cfg["rope_scaling"] = dict(ref_cfg["rope_scaling"],
                                       rope_type=ref_cfg["rope_scaling"]["type"])
    tokens = [int(t) for t in rng.integers(0, V, size=spec.get("num_tokens", 14))]
    logits = reference_forward(ref_cfg, W, tokens)
    write_json(os.path.join(out_dir, "reference.json"),
               {"tokens": tokens, "dtype": dtype,
                "logits": [[round(float(v), 7) for v in row] for row in logits]})


RANDOM_SPECS = {
    "qwen3-f32": {"family": "qwen3", "tokenizer": "qwen2"},  # arch_fixtures.random_qwen3
    # arch_fixtures.random_{qwen3moe,gemma3,deepseek3}
    "qwen3moe-f32": {"family": "qwen3moe", "tokenizer": "qwen2", "seed": 3701},
    "qwen3moe-dense-f32": {"family": "qwen3moe-dense", "tokenizer": "qwen2", "seed": 3702},
    "gemma3-f32": {"family": "gemma3", "tokenizer": "spm", "seed": 3703},
    "gemma3-mm-f32": {"family": "gemma3-mm", "tokenizer": "spm", "seed": 3705},
    "deepseek3-f32": {"family": "deepseek3", "tokenizer": "qwen2", "seed": 3704},
    "deepseek3-yarn-f32": {"family": "deepseek3-yarn", "tokenizer": "qwen2", "seed": 3706},
    "phi3-longrope-f32": {"family": "phi3-longrope", "tokenizer": "spm", "seed": 3708},
    "mistral-bf16": {"arch": "MistralForCausalLM", "model_type": "mistral", "dtype": "BF16",
                     "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                     "head_dim": 32, "intermediate_size": 160, "num_hidden_layers": 2,
                     "tie_word_embeddings": False, "rope_theta": 1000000.0,
                     "rope_scaling": {"type": "linear", "factor": 2.0}, "tokenizer": "spm"},
    # Mistral 7B v0.1's form: sliding_window on every layer, here 8 tokens under a 24-token
    # sequence, so the reference's mask cuts every row from the 9th on.
    "mistral-swa-f32": {"arch": "MistralForCausalLM", "model_type": "mistral", "dtype": "F32",
                        "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                        "intermediate_size": 128, "num_hidden_layers": 2,
                        "tie_word_embeddings": False, "sliding_window": 8, "num_tokens": 24,
                        "tokenizer": "spm", "seed": 3707},
    "qwen2-f16": {"arch": "Qwen2ForCausalLM", "model_type": "qwen2", "dtype": "F16",
                  "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 1,
                  "intermediate_size": 128, "num_hidden_layers": 2, "bias": True,
                  "tie_word_embeddings": True, "tokenizer": "qwen2"},
    "mixtral-f32": {"arch": "MixtralForCausalLM", "model_type": "mixtral", "dtype": "F32",
                    "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                    "intermediate_size": 96, "num_hidden_layers": 2, "num_local_experts": 4,
                    "num_experts_per_tok": 2, "tie_word_embeddings": False, "shards": 2,
                    "tokenizer": "spm"},
    "qwen2-yarn-f32": {"arch": "Qwen2ForCausalLM", "model_type": "qwen2", "dtype": "F32",
                       "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                       "intermediate_size": 128, "num_hidden_layers": 2, "bias": True,
                       "tie_word_embeddings": False,
                       "rope_scaling": {"type": "yarn", "factor": 4.0,
                                        "original_max_position_embeddings": 64},
                       "tokenizer": "qwen2"},
    "llama3-f32": {"arch": "LlamaForCausalLM", "model_type": "llama", "dtype": "F32",
                   "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
                   "intermediate_size": 128, "num_hidden_layers": 2,
                   "tie_word_embeddings": False, "rope_theta": 500000.0,
                   "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                                    "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 64},
                   "tokenizer": "llama3"},
}


def make_random(out_root, fixtures):
    llama_spm = gguf_reader.GgufFile(os.path.join(fixtures, "tokenizer/ggml-vocab-llama-spm.gguf"))
    gpt2 = gguf_reader.GgufFile(os.path.join(fixtures, "tokenizer/ggml-vocab-gpt-2.gguf"))
    spm_tokens, spm_scores, spm_types = tiny_spm_vocab(llama_spm)
    # Seeds by position among the specs without their own "seed" (so adding one keeps the others).
    legacy = sorted(n for n, s in RANDOM_SPECS.items() if "seed" not in s)
    for name, spec in sorted(RANDOM_SPECS.items()):
        seed = spec.get("seed", 1234 + legacy.index(name) if name in legacy else 0)
        out_dir = os.path.join(out_root, name)
        kind = spec["tokenizer"]
        if kind == "spm":
            tokens = spm_tokens
            tj = spm_tokenizer_json(spm_tokens, spm_scores, spm_types, 1)
            tcfg = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                    "add_bos_token": True, "add_eos_token": False,
                    "clean_up_tokenization_spaces": False,
                    "chat_template": [{"name": "default", "template": CHAT_TEMPLATE},
                                      {"name": "tool_use", "template": "{{ tools }}"}]}
        else:
            specials = (["<|endoftext|>", "<|im_start|>", "<|im_end|>"] if kind == "qwen2" else
                        ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"])
            tokens, types, merges = tiny_byte_level_vocab(gpt2, specials)
            regex = QWEN2_REGEX if kind == "qwen2" else LLAMA3_REGEX
            tj = byte_level_tokenizer_json(tokens, types, merges, regex=regex,
                                           ignore_merges=kind == "llama3", nfc=kind == "qwen2",
                                           merges_as_pairs=kind == "llama3")
            if kind == "llama3":
                bos = len(tokens) - 3
                tj["post_processor"] = {"type": "Sequence", "processors": [
                    tj["post_processor"],
                    {"type": "TemplateProcessing",
                     "single": [{"SpecialToken": {"id": specials[0], "type_id": 0}},
                                {"Sequence": {"id": "A", "type_id": 0}}],
                     "pair": [], "special_tokens": {specials[0]: {
                         "id": specials[0], "ids": [bos], "tokens": [specials[0]]}}}]}
                tcfg = {"bos_token": specials[0], "eos_token": specials[2],
                        "clean_up_tokenization_spaces": True, "chat_template": CHAT_TEMPLATE}
            else:
                tcfg = {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": specials[0],
                        "add_prefix_space": False, "clean_up_tokenization_spaces": False,
                        "chat_template": CHAT_TEMPLATE}
        family = spec.get("family")
        if family:
            import arch_fixtures  # noqa: E402
            make = {"qwen3": arch_fixtures.random_qwen3,
                    "qwen3moe": lambda d, t, s: arch_fixtures.random_qwen3moe(d, t, s, False),
                    "qwen3moe-dense": lambda d, t, s: arch_fixtures.random_qwen3moe(d, t, s, True),
                    "gemma3": arch_fixtures.random_gemma3,
                    "gemma3-mm": lambda d, t, s: arch_fixtures.random_gemma3(d, t, s, True),
                    "deepseek3": arch_fixtures.random_deepseek3,
                    "phi3-longrope": arch_fixtures.random_phi3_longrope,
                    "deepseek3-yarn": lambda d, t, s: arch_fixtures.random_deepseek3(
                        d, t, s, yarn=True)}[family]
            make(out_dir, tokens, seed)
        else:
            random_checkpoint(out_dir, spec, tokens, seed)
        write_json(os.path.join(out_dir, "tokenizer.json"), tj)
        write_json(os.path.join(out_dir, "tokenizer_config.json"), tcfg)
        eos = tokens.index(tcfg["eos_token"])
        write_json(os.path.join(out_dir, "generation_config.json"),
                   {"eos_token_id": ([tokens.index("<|end_of_text|>"), eos] if kind == "llama3"
                                     else eos),
                    "temperature": 0.7, "top_k": 20, "top_p": 0.8,
                    "repetition_penalty": 1.05, "do_sample": True})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", required=True, help="the shared fixtures folder")
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    args = ap.parse_args()
    fx = args.fixtures
    out = args.out
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    models = os.path.join(fx, "models")

    def prompt_tokens(name, n=10, folder="reference"):
        """The first n prompt tokens of a llama.cpp reference (tokens real text gives)."""
        with open(os.path.join(models, folder, name + ".p1.json"), encoding="utf-8") as f:
            return json.load(f)["prompt_tokens"][:n]

    llama = gguf_reader.GgufFile(os.path.join(models, "llama-F16.gguf"))
    hf_from_gguf(llama, os.path.join(out, "from-gguf/llama-f16"), "F16", 2, "LlamaForCausalLM",
                 chat_template=CHAT_TEMPLATE, ref_tokens=prompt_tokens("llama-F16"))
    qwen2 = gguf_reader.GgufFile(os.path.join(models, "qwen2-Q8_0.gguf"))
    hf_from_gguf(qwen2, os.path.join(out, "from-gguf/qwen2-f32"), "F32", 1, "Qwen2ForCausalLM",
                 ref_tokens=prompt_tokens("qwen2-Q8_0", 6))
    moe = gguf_reader.GgufFile(os.path.join(models, "moe-Q8_0.gguf"))
    hf_from_gguf(moe, os.path.join(out, "from-gguf/moe-f16"), "F16", 1, "MixtralForCausalLM",
                 ref_tokens=prompt_tokens("moe-Q8_0"))
    phi3 = gguf_reader.GgufFile(os.path.join(models, "arch", "phi3-Q8_0.gguf"))
    hf_from_gguf(phi3, os.path.join(out, "from-gguf/phi3-f32"), "F32", 1, "Phi3ForCausalLM",
                 ref_tokens=prompt_tokens("phi3-Q8_0", folder="arch/reference"))

    import arch_fixtures  # noqa: E402 (it imports this module's helpers)
    arch_fixtures.make_from_gguf(os.path.join(out, "from-gguf"), models, prompt_tokens)

    for name in ("llama-spm", "gpt-2"):
        g = gguf_reader.GgufFile(os.path.join(fx, f"tokenizer/ggml-vocab-{name}.gguf"))
        write_tokenizer_from_gguf(g, os.path.join(out, "tokenizers", name))

    make_random(os.path.join(out, "random"), fx)
    with open(os.path.join(out, ".complete"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
