#!/usr/bin/python3
"""Makes small quantised Hugging Face directories for pagoda's tests (numpy only; run at test
time into the build tree, nothing is committed).

  /usr/bin/python3 tools/quant_fixtures/make_quant_fixtures.py --out DIR

One random-weight Llama (2 layers, hidden 96 = 3 heads of 32, 1 KV head, ffn 160, vocab 257: a
byte-level tokenizer plus one special) is written per case in the packing its method publishes:

  GPTQ   (AutoGPTQ / GPTQModel) qweight I32 [in*bits/32, out], qzeros I32 [groups, out*bits/32],
         scales F16 [groups, out], g_idx I32 [in]; W = scales[g_idx[k]] * (q - z); v1 checkpoints
         ("checkpoint_format": "gptq") store z - 1, gptq_v2 stores z. Act-order (desc_act)
         assigns groups along a random permutation of the inputs (group sizes 32 and 48: pagoda
         stores the first with its inputs sorted by group, the second in F32).
  AWQ    (AutoAWQ GEMM) qweight I32 [in, out/8] with the nibble order [0, 2, 4, 6, 1, 3, 5, 7],
         qzeros I32 [in/group, out/8] the same way, scales F16 [in/group, out]; W = s * (q - z).
  FP8    float8_e4m3fn weights with weight_scale (compressed-tensors "float-quantized", tensor or
         channel strategy, with an input_scale) or weight_scale_inv per [32, 32] block
         ("quant_method": "fp8", weight_block_size); W = f32(w) * scale in float32.
  INT8   compressed-tensors "int-quantized" (W8A8): int8 weights, weight_scale per channel (F16)
         or per tensor (F32); W = f32(q * s).
  NF4    bitsandbytes 4-bit: the NF4 code table, absmax per 64 values, optionally double
         quantised (absmax - offset coded with bitsandbytes' 8-bit dynamic map per 256 blocks);
         W = code[nibble] * absmax in float32, rounded to the quant_state dtype.

For each case NAME the tool writes DIR/NAME (quantised) and DIR/NAME.f32 (the same model with
every weight dequantised by the numpy definitions above, stored as plain F32): the reference of
both the bit-exact dequantisation test and the logits test. DIR/hostile/* are corrupt variants
(bad bits, missing scales, wrong shapes, g_idx out of range, ...) with the error each must give.
DIR/manifest.json lists everything; DIR/.complete is written last.

  /usr/bin/python3 tools/quant_fixtures/make_quant_fixtures.py --tp-shape --out DIR

writes the GPTQ/AWQ cases only (no hostile ones), in a shape tensor parallelism can split in two
(hidden 128 = 4 heads of 32, 2 KV heads, ffn 256): tests/golden/parallel's tp_quant_check.
"""
import argparse
import json
import math
import os
import shutil
import struct

import numpy as np

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS = 96, 3, 1, 32, 160, 2


def linears():
    return [("self_attn.q_proj", HEADS * HEAD_DIM, HIDDEN),
            ("self_attn.k_proj", KV_HEADS * HEAD_DIM, HIDDEN),
            ("self_attn.v_proj", KV_HEADS * HEAD_DIM, HIDDEN),
            ("self_attn.o_proj", HIDDEN, HEADS * HEAD_DIM),
            ("mlp.gate_proj", FFN, HIDDEN),
            ("mlp.up_proj", FFN, HIDDEN),
            ("mlp.down_proj", HIDDEN, FFN)]

# Mixtral-style MoE (the "moe" cases): attention as above, a router and EXPERTS SwiGLU experts.
EXPERTS, EXPERTS_USED = 4, 2


def moe_linears():
    return linears()[:4] + [(f"block_sparse_moe.experts.{e}.{w}", r, c)
                            for e in range(EXPERTS)
                            for w, r, c in (("w1", FFN, HIDDEN), ("w3", FFN, HIDDEN),
                                            ("w2", HIDDEN, FFN))]


# The cases --tp-shape writes (hidden 128, 4 heads, 2 KV heads, ffn 256: splits in two).
TP_SHAPE = (128, 4, 2, 32, 256, 2)
TP_CASES = ["gptq-4b-g32-sym", "gptq-4b-g64-asym-v1", "gptq-4b-g32-actorder-v2",
            "gptq-4b-g32-sym-actorder", "gptq-4b-g48-actorder", "gptq-8b-g32-asym-v2",
            "awq-4b-g32", "gptq-4b-g32-sym-actorder-mixtral", "awq-4b-g32-mixtral"]

NF4_CODE = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                     -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                     0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                     0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                     0.7229568362236023, 1.0], dtype=np.float32)


# ---- files ----------------------------------------------------------------------------------

def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)


ST_CODES = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "I8": "i1", "U8": "u1",
            "F8_E4M3": "u1", "BF16": "<u2"}


def write_safetensors(path, tensors):
    """tensors: {name: (st dtype, array already holding the stored bits/values)}."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        dtype, arr = tensors[name]
        data = np.ascontiguousarray(arr, dtype=ST_CODES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def bytes_to_unicode():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) +
          list(range(ord("\xae"), ord("\xff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def write_tokenizer(out_dir):
    m = bytes_to_unicode()
    tokens = [m[b] for b in range(256)] + ["<|endoftext|>"]
    tj = {"version": "1.0", "truncation": None, "padding": None,
          "added_tokens": [{"id": 256, "content": "<|endoftext|>", "single_word": False,
                            "lstrip": False, "rstrip": False, "normalized": False,
                            "special": True}],
          "normalizer": None,
          "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                            "use_regex": True},
          "post_processor": None,
          "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                      "use_regex": True},
          "model": {"type": "BPE", "dropout": None, "unk_token": None,
                    "continuing_subword_prefix": "", "end_of_word_suffix": "",
                    "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                    "vocab": {t: i for i, t in enumerate(tokens)}, "merges": []}}
    write_json(os.path.join(out_dir, "tokenizer.json"), tj)
    write_json(os.path.join(out_dir, "tokenizer_config.json"),
               {"eos_token": "<|endoftext|>", "bos_token": None,
                "chat_template": "{% for m in messages %}{{ m['content'] }}{% endfor %}"})


def base_config():
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "hidden_size": HIDDEN, "intermediate_size": FFN, "num_hidden_layers": LAYERS,
            "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS,
            "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "vocab_size": 257, "hidden_act": "silu", "tie_word_embeddings": False,
            "eos_token_id": 256, "torch_dtype": "float16"}


# ---- packing and the reference dequantisation of each format ---------------------------------

def pack_rows(codes, bits):
    """codes [R, C] (values < 2^bits) → I32 [R * bits / 32, C]: row r of the result packs
    input rows r * (32 / bits) + j at bits bits * j (GPTQ's qweight)."""
    per = 32 // bits
    r, c = codes.shape
    out = np.zeros((r // per, c), dtype=np.uint32)
    for j in range(per):
        out |= codes[j::per].astype(np.uint32) << np.uint32(bits * j)
    return out.view(np.int32)


def pack_cols(codes, bits, order=None):
    """codes [R, C] → I32 [R, C * bits / 32]: word w packs columns w * per + order[i] at bits
    bits * i (GPTQ qzeros with the identity order, AWQ with its interleaved order)."""
    per = 32 // bits
    order = order or list(range(per))
    r, c = codes.shape
    out = np.zeros((r, c // per), dtype=np.uint32)
    for i in range(per):
        out |= codes[:, order[i]::per].astype(np.uint32) << np.uint32(bits * i)
    return out.view(np.int32)


def rtn_group(w, bits, sym, min_zero=0):
    """Round-to-nearest quantisation of w [in_group, out] the way GPTQ/AWQ set up a group (min/max
    range including 0): F16 scales [out], integer zeros [out], codes [in_group, out]."""
    maxq = (1 << bits) - 1
    xmin = np.minimum(w.min(0), 0)
    xmax = np.maximum(w.max(0), 0)
    if sym:
        xmax = np.maximum(-xmin, xmax)
        xmin = -xmax
    scale = ((xmax - xmin) / maxq + 1e-8).astype(np.float16)
    s = scale.astype(np.float32)
    if sym:
        z = np.full(w.shape[1], (maxq + 1) // 2)
    else:
        z = np.clip(np.round(-xmin / s), min_zero, maxq).astype(np.int64)
    q = np.clip(np.round(w / s) + z, 0, maxq).astype(np.int64)
    return scale, z, q


def gptq_linear(rng, rows, cols, spec):
    bits, gs, sym, v1 = spec["bits"], spec["group_size"], spec["sym"], spec["v1"]
    maxq = (1 << bits) - 1
    size = cols if gs < 0 else gs
    groups = -(-cols // size)
    if spec.get("desc_act"):
        perm = rng.permutation(cols)  # the order GPTQ visited the inputs in
        g_idx = np.empty(cols, dtype=np.int32)
        g_idx[perm] = np.arange(cols) // size
    else:
        g_idx = (np.arange(cols) // size).astype(np.int32)
    w0 = rng.standard_normal((cols, rows)) / math.sqrt(cols)   # [in, out], GPTQ's orientation
    q = np.zeros((cols, rows), dtype=np.int64)
    z = np.zeros((groups, rows), dtype=np.int64)
    scales = np.zeros((groups, rows), dtype=np.float16)
    for g in range(groups):
        cols_g = np.nonzero(g_idx == g)[0]
        # v1 stores z - 1 in `bits` bits: z = 0 cannot be written, so GPTQ v1 never makes it.
        scales[g], z[g], q[cols_g] = rtn_group(w0[cols_g], bits, sym, 1 if v1 else 0)
    stored_z = z - 1 if v1 else z
    tensors = {"qweight": ("I32", pack_rows(q, bits)),
               "qzeros": ("I32", pack_cols(stored_z & maxq, bits)),
               "scales": ("F16", scales),
               "g_idx": ("I32", g_idx)}
    w = scales.astype(np.float32)[g_idx] * (q - z[g_idx]).astype(np.float32)   # [in, out]
    return tensors, w.T.copy()


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def awq_linear(rng, rows, cols, spec):
    gs = spec["group_size"]
    groups = cols // gs
    w0 = rng.standard_normal((cols, rows)) / math.sqrt(cols)
    q = np.zeros((cols, rows), dtype=np.int64)
    z = np.zeros((groups, rows), dtype=np.int64)
    scales = np.zeros((groups, rows), dtype=np.float16)
    for g in range(groups):
        scales[g], z[g], q[g * gs:(g + 1) * gs] = rtn_group(w0[g * gs:(g + 1) * gs], 4, False)
    tensors = {"qweight": ("I32", pack_cols(q, 4, AWQ_ORDER)),
               "qzeros": ("I32", pack_cols(z, 4, AWQ_ORDER)),
               "scales": ("F16", scales)}
    g = np.arange(cols) // gs
    w = scales.astype(np.float32)[g] * (q - z[g]).astype(np.float32)
    return tensors, w.T.copy()


def fp8_e4m3_table():
    t = np.zeros(256, dtype=np.float32)
    for b in range(256):
        e, m = (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            t[b] = np.nan
            continue
        mag = m * 2.0 ** -9 if e == 0 else (8 + m) * 2.0 ** (e - 10)
        t[b] = -mag if b & 0x80 else mag
    return t


FP8 = fp8_e4m3_table()


def random_fp8(rng, shape):
    e = rng.integers(0, 10, size=shape)                     # magnitudes up to 2^2, subnormals too
    m = rng.integers(0, 8, size=shape)
    s = rng.integers(0, 2, size=shape)
    return ((s << 7) | (e << 3) | m).astype(np.uint8)


def fp8_linear(rng, rows, cols, spec):
    w8 = random_fp8(rng, (rows, cols))
    strategy = spec["strategy"]
    base = 0.5 / math.sqrt(cols)
    if strategy == "tensor":
        s = np.array([base], dtype=np.float32)
        full = np.full((rows, cols), s[0], dtype=np.float32)
    elif strategy == "channel":
        s = (base * (0.5 + rng.random((rows, 1)))).astype(np.float32)
        full = np.broadcast_to(s, (rows, cols))
    else:  # block [32, 32]
        b = spec["block"]
        s = (base * (0.5 + rng.random((-(-rows // b), -(-cols // b))))).astype(np.float32)
        full = np.repeat(np.repeat(s, b, 0), b, 1)[:rows, :cols]
    name = "weight_scale_inv" if strategy == "block" else "weight_scale"
    tensors = {"weight": ("F8_E4M3", w8), name: ("F32", s)}
    if strategy == "channel":
        tensors["input_scale"] = ("F32", np.array([0.02], dtype=np.float32))
    w = FP8[w8] * full.astype(np.float32)
    return tensors, w.astype(np.float32)


def int8_linear(rng, rows, cols, spec):
    q = rng.integers(-128, 128, size=(rows, cols)).astype(np.int8)
    base = 0.6 / math.sqrt(cols) / 64
    if spec["strategy"] == "channel":
        s = (base * (0.5 + rng.random((rows, 1)))).astype(np.float16)
        w = q.astype(np.float32) * s.astype(np.float32)
        return {"weight": ("I8", q), "weight_scale": ("F16", s)}, w
    s = np.array(base * 1.2345678, dtype=np.float32).reshape(())
    w = q.astype(np.float32) * s
    return {"weight": ("I8", q), "weight_scale": ("F32", s)}, w


def dynamic_map():
    """bitsandbytes' create_dynamic_map(signed=True): 8-bit dynamic-exponent code table."""
    data = []
    for i in range(7):
        bounds = np.linspace(0.1, 1, 2 ** i + 1)
        means = (bounds[:-1] + bounds[1:]) / 2.0
        data += list(10.0 ** (-6 + i) * means) + list(-(10.0 ** (-6 + i)) * means)
    data += [0.0, 1.0]
    return np.array(sorted(data), dtype=np.float32)


def nearest(table, x):
    return np.abs(x[..., None] - table[None, :]).argmin(-1)


def nf4_linear(rng, rows, cols, spec):
    bs, nbs = 64, 256
    w0 = (rng.standard_normal(rows * cols) / math.sqrt(cols)).astype(np.float32)
    n = w0.size
    blocks = -(-n // bs)
    padded = np.zeros(blocks * bs, dtype=np.float32)
    padded[:n] = w0
    absmax = np.abs(padded.reshape(blocks, bs)).max(1).astype(np.float32)
    codes = nearest(NF4_CODE, (padded.reshape(blocks, bs) / absmax[:, None]).reshape(-1))[:n]
    if n % 2:
        codes = np.append(codes, 0)
    packed = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8).reshape(-1, 1)
    dtype = spec["dtype"]
    state = {"quant_type": "nf4", "blocksize": bs, "dtype": dtype, "shape": [rows, cols]}
    tensors = {"weight": ("U8", packed), "weight.quant_map": ("F32", NF4_CODE)}
    if spec["double_quant"]:
        offset = np.float32(absmax.mean())
        centered = absmax - offset
        nblocks = -(-blocks // nbs)
        cpad = np.zeros(nblocks * nbs, dtype=np.float32)
        cpad[:blocks] = centered
        nested_absmax = np.abs(cpad.reshape(nblocks, nbs)).max(1).astype(np.float32)
        dmap = dynamic_map()
        a8 = nearest(dmap, (cpad.reshape(nblocks, nbs) / nested_absmax[:, None]).reshape(-1))
        a8 = a8[:blocks].astype(np.uint8)
        state.update(nested_blocksize=nbs, nested_offset=float(offset), nested_dtype="float32")
        tensors.update({"weight.absmax": ("U8", a8),
                        "weight.nested_absmax": ("F32", nested_absmax),
                        "weight.nested_quant_map": ("F32", dmap)})
        absmax_used = (dmap[a8] * nested_absmax[np.arange(blocks) // nbs]).astype(np.float32)
        absmax_used = (absmax_used + offset).astype(np.float32)
    else:
        tensors["weight.absmax"] = ("F32", absmax)
        absmax_used = absmax
    state_bytes = np.frombuffer(json.dumps(state).encode("utf-8"), dtype=np.uint8)
    tensors["weight.quant_state.bitsandbytes__nf4"] = ("U8", state_bytes)
    w = (NF4_CODE[codes[:n]] * absmax_used[np.arange(n) // bs]).astype(np.float32)
    if dtype == "float16":
        w = w.astype(np.float16).astype(np.float32)
    elif dtype == "bfloat16":
        u = w.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
        w = u.astype(np.uint32).view(np.float32)
    return tensors, w.reshape(rows, cols)


# ---- cases ----------------------------------------------------------------------------------

CASES = {
    # name: (maker, spec, quantization_config, the repacked type pagoda must choose)
    "gptq-4b-g32-sym": (gptq_linear, {"bits": 4, "group_size": 32, "sym": True, "v1": True},
                        {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False,
                         "sym": True, "checkpoint_format": "gptq"}, "Q4_0"),
    "gptq-4b-g64-asym-v1": (gptq_linear, {"bits": 4, "group_size": 64, "sym": False, "v1": True},
                            {"quant_method": "gptq", "bits": 4, "group_size": 64,
                             "desc_act": False, "sym": False}, "Q4_0"),
    "gptq-4b-g32-actorder-v2": (gptq_linear, {"bits": 4, "group_size": 32, "sym": False,
                                               "v1": False, "desc_act": True},
                                 {"quant_method": "gptq", "bits": 4, "group_size": 32,
                                  "desc_act": True, "sym": False,
                                  "checkpoint_format": "gptq_v2"}, "Q4_0"),
    "gptq-4b-g32-sym-actorder": (gptq_linear, {"bits": 4, "group_size": 32, "sym": True,
                                                "v1": True, "desc_act": True},
                                  {"quant_method": "gptq", "bits": 4, "group_size": 32,
                                   "desc_act": True, "sym": True}, "Q4_0"),
    "gptq-4b-g48-actorder": (gptq_linear, {"bits": 4, "group_size": 48, "sym": True, "v1": True,
                                           "desc_act": True},
                             {"quant_method": "gptq", "bits": 4, "group_size": 48,
                              "desc_act": True, "sym": True}, "F32"),
    "gptq-8b-gall-sym": (gptq_linear, {"bits": 8, "group_size": -1, "sym": True, "v1": True},
                         {"quant_method": "gptq", "bits": 8, "group_size": -1, "desc_act": False,
                          "sym": True, "format": "gptq"}, "Q8_0"),
    "gptq-8b-g32-asym-v2": (gptq_linear, {"bits": 8, "group_size": 32, "sym": False, "v1": False},
                            {"quant_method": "gptq", "bits": 8, "group_size": 32,
                             "desc_act": False, "sym": False, "checkpoint_format": "gptq_v2"},
                            "Q8_0"),
    "awq-4b-g32": (awq_linear, {"group_size": 32},
                   {"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": True,
                    "version": "gemm"}, "Q4_0"),
    "gptq-4b-g32-sym-actorder-mixtral": (gptq_linear, {"bits": 4, "group_size": 32, "sym": True,
                                                        "v1": True, "desc_act": True,
                                                        "moe": True},
                                          {"quant_method": "gptq", "bits": 4, "group_size": 32,
                                           "desc_act": True, "sym": True}, "Q4_0"),
    "awq-4b-g32-mixtral": (awq_linear, {"group_size": 32, "moe": True},
                           {"quant_method": "awq", "bits": 4, "group_size": 32,
                            "zero_point": True, "version": "gemm"}, "Q4_0"),
    "fp8-ct-tensor": (fp8_linear, {"strategy": "tensor"},
                      {"quant_method": "compressed-tensors", "format": "float-quantized",
                       "config_groups": {"group_0": {
                           "targets": ["Linear"],
                           "weights": {"num_bits": 8, "type": "float", "strategy": "tensor",
                                       "symmetric": True, "dynamic": False},
                           "input_activations": {"num_bits": 8, "type": "float",
                                                 "strategy": "token", "dynamic": True}}},
                       "ignore": ["lm_head"], "quantization_status": "compressed"}, None),
    "fp8-ct-channel": (fp8_linear, {"strategy": "channel"},
                       {"quant_method": "compressed-tensors", "format": "float-quantized",
                        "config_groups": {"group_0": {
                            "targets": ["Linear"],
                            "weights": {"num_bits": 8, "type": "float", "strategy": "channel",
                                        "symmetric": True, "dynamic": False},
                            "input_activations": {"num_bits": 8, "type": "float",
                                                  "strategy": "tensor", "dynamic": False}}},
                        "ignore": ["lm_head"]}, None),
    "fp8-block": (fp8_linear, {"strategy": "block", "block": 32},
                  {"quant_method": "fp8", "activation_scheme": "dynamic",
                   "weight_block_size": [32, 32]}, None),
    "int8-ct-channel": (int8_linear, {"strategy": "channel"},
                        {"quant_method": "compressed-tensors", "format": "int-quantized",
                         "config_groups": {"group_0": {
                             "targets": ["Linear"],
                             "weights": {"num_bits": 8, "type": "int", "strategy": "channel",
                                         "symmetric": True, "dynamic": False},
                             "input_activations": {"num_bits": 8, "type": "int",
                                                   "strategy": "token", "dynamic": True,
                                                   "symmetric": True}}},
                         "ignore": ["lm_head"]}, "Q8_0"),
    "int8-ct-tensor": (int8_linear, {"strategy": "tensor"},
                       {"quant_method": "compressed-tensors", "format": "int-quantized",
                        "config_groups": {"group_0": {
                            "targets": ["Linear"],
                            "weights": {"num_bits": 8, "type": "int", "strategy": "tensor",
                                        "symmetric": True, "dynamic": False}}},
                        "ignore": ["lm_head"]}, "F32"),
    "nf4-dq-f16": (nf4_linear, {"dtype": "float16", "double_quant": True},
                   {"quant_method": "bitsandbytes", "load_in_4bit": True,
                    "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
                    "bnb_4bit_compute_dtype": "float16"}, "F16"),
    "nf4-bf16": (nf4_linear, {"dtype": "bfloat16", "double_quant": False},
                 {"quant_method": "bitsandbytes", "load_in_4bit": True,
                  "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": False,
                  "bnb_4bit_compute_dtype": "bfloat16"}, None),
}


def make_case(out_root, name, seed):
    maker, spec, qcfg, expect = CASES[name]
    rng = np.random.default_rng(seed)
    V = 257
    plain = {"model.embed_tokens.weight": rng.standard_normal((V, HIDDEN)).astype(np.float16),
             "model.norm.weight": (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float16),
             "lm_head.weight": (rng.standard_normal((V, HIDDEN)) / math.sqrt(HIDDEN))
             .astype(np.float16)}
    quant, ref = {}, {}
    moe = spec.get("moe", False)
    for layer in range(LAYERS):
        p = f"model.layers.{layer}."
        for norm in ("input_layernorm", "post_attention_layernorm"):
            plain[p + norm + ".weight"] = (1 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float16)
        if moe:
            plain[p + "block_sparse_moe.gate.weight"] = (
                rng.standard_normal((EXPERTS, HIDDEN)) / math.sqrt(HIDDEN)).astype(np.float16)
        for lin, rows, cols in (moe_linears() if moe else linears()):
            tensors, w = maker(rng, rows, cols, spec)
            for suffix, t in tensors.items():
                quant[f"{p}{lin}.{suffix}"] = t
            ref[f"{p}{lin}.weight"] = w.astype(np.float32)
    qdir = os.path.join(out_root, name)
    fdir = os.path.join(out_root, name + ".f32")
    for d in (qdir, fdir):
        os.makedirs(d, exist_ok=True)
        write_tokenizer(d)
    qt = dict(quant)
    qt.update({n: ("F16", a) for n, a in plain.items()})
    write_safetensors(os.path.join(qdir, "model.safetensors"), qt)
    config = base_config()
    if moe:
        config.update(architectures=["MixtralForCausalLM"], model_type="mixtral",
                      num_local_experts=EXPERTS, num_experts_per_tok=EXPERTS_USED)
    write_json(os.path.join(fdir, "config.json"), config)
    write_json(os.path.join(qdir, "config.json"), dict(config, quantization_config=qcfg))
    ft = {n: ("F32", a.astype(np.float32)) for n, a in plain.items()}
    ft.update({n: ("F32", a) for n, a in ref.items()})
    write_safetensors(os.path.join(fdir, "model.safetensors"), ft)
    tokens = [int(t) for t in rng.integers(0, 256, size=12)]
    # Act-order groups stored contiguously (a block type) come with an input order; 4-bit zero
    # points with a zero term (8-bit ones only where q - z leaves Q8_0's range: not checked).
    block = expect is not None and expect.startswith("Q")
    ordered = bool(spec.get("desc_act")) and block
    asym = maker is awq_linear or (maker is gptq_linear and not spec["sym"])
    zero_term = None if maker is gptq_linear and spec["bits"] == 8 else (asym and block)
    return {"name": name, "dir": name, "reference_dir": name + ".f32", "dtype": expect,
            "ordered": ordered, "zero_term": zero_term, "tokens": tokens,
            "quantized": sorted(ref)}


def edit_tensors(path, fn):
    """Rewrites a safetensors file through fn({name: (dtype, array)})."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    tensors = {}
    for name, h in header.items():
        b, e = h["data_offsets"]
        arr = np.frombuffer(raw[8 + n + b:8 + n + e], dtype=ST_CODES[h["dtype"]])
        tensors[name] = (h["dtype"], arr.reshape(h["shape"]).copy())
    fn(tensors)
    write_safetensors(path, tensors)


def make_hostile(out_root):
    """Corrupt variants of valid cases: (name, source case, edit, expected error substring)."""
    q = "model.layers.0.self_attn.q_proj."

    def config_edit(**kw):
        def run(d):
            path = os.path.join(d, "config.json")
            with open(path) as f:
                c = json.load(f)
            c["quantization_config"].update(kw)
            write_json(path, c)
        return run

    def tensor_edit(fn):
        return lambda d: edit_tensors(os.path.join(d, "model.safetensors"), fn)

    def drop(name):
        return tensor_edit(lambda t: t.pop(name))

    def g_idx_oob(t):
        dt, a = t[q + "g_idx"]
        a[5] = 3  # 96 inputs in groups of 32: valid groups are 0..2
        t[q + "g_idx"] = (dt, a)

    def qzeros_short(t):
        dt, a = t[q + "qzeros"]
        t[q + "qzeros"] = (dt, a[:-1])

    def orphan(t):
        t["model.layers.0.mlp.extra.scales"] = t[q + "scales"]

    def state_garbage(t):
        name = q + "weight.quant_state.bitsandbytes__nf4"
        t[name] = ("U8", np.frombuffer(b'{"quant_type": "nf4", "blocksize"', dtype=np.uint8))

    def scale_shape(t):
        t[q + "weight_scale"] = ("F32", np.ones((7, 1), dtype=np.float32))

    def nan_scale(t):
        dt, a = t[q + "scales"]
        a[0, 0] = np.float16(np.inf)
        t[q + "scales"] = (dt, a)

    def nf4_short(t):
        dt, a = t[q + "weight"]
        t[q + "weight"] = (dt, a[:-3])

    cases = [
        ("bad-bits", "gptq-4b-g32-sym", config_edit(bits=3), "bits is 3"),
        ("bad-group", "gptq-4b-g32-sym", config_edit(group_size=0), "group_size is 0"),
        ("missing-scales", "gptq-4b-g32-sym", drop(q + "scales"), "scales\" is missing"),
        ("qzeros-shape", "gptq-4b-g32-sym", tensor_edit(qzeros_short), "qzeros\" has shape"),
        ("g-idx-range", "gptq-4b-g32-sym", tensor_edit(g_idx_oob), "is outside [0, 3)"),
        ("inf-scale", "gptq-4b-g32-sym", tensor_edit(nan_scale), "non-finite scale"),
        ("orphan-companion", "gptq-4b-g32-sym", tensor_edit(orphan),
         "belongs to no quantised weight"),
        ("missing-g-idx-act-order", "gptq-4b-g32-actorder-v2", drop(q + "g_idx"),
         "g_idx\" is missing"),
        ("awq-gemv", "awq-4b-g32", config_edit(version="gemv"), "version \"gemv\""),
        ("fp8-scale-shape", "fp8-ct-channel", tensor_edit(scale_shape), "has shape [7, 1]"),
        ("fp8-missing-scale", "fp8-ct-tensor", drop(q + "weight_scale"),
         "weight_scale\" is missing"),
        ("nf4-state", "nf4-dq-f16", tensor_edit(state_garbage), "quant_state"),
        ("nf4-short", "nf4-bf16", tensor_edit(nf4_short), "NF4 weight needs"),
        ("bnb-8bit", "nf4-bf16", config_edit(load_in_8bit=True, load_in_4bit=False),
         "load_in_8bit"),
        ("unknown-method", "gptq-4b-g32-sym", config_edit(quant_method="hqq"),
         "quant_method \"hqq\""),
    ]
    out = []
    for name, source, edit, expect in cases:
        d = os.path.join(out_root, "hostile", name)
        shutil.copytree(os.path.join(out_root, source), d)
        edit(d)
        out.append({"name": name, "dir": "hostile/" + name, "error": expect})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    ap.add_argument("--tp-shape", action="store_true",
                    help="the GPTQ/AWQ cases only, in a shape tensor parallelism splits in two")
    args = ap.parse_args()
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    names = sorted(CASES)
    if args.tp_shape:
        global HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS
        HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, LAYERS = TP_SHAPE
    cases = [make_case(args.out, name, 100 + i) for i, name in enumerate(names)
             if not args.tp_shape or name in TP_CASES]
    hostile = [] if args.tp_shape else make_hostile(args.out)
    write_json(os.path.join(args.out, "manifest.json"), {"cases": cases, "hostile": hostile})
    with open(os.path.join(args.out, ".complete"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
