#!/usr/bin/python3
"""Makes LoRA adapters for pagoda's tests, and the models whose weights have them merged in (run
at test time, into the build tree; nothing large is committed).

  /usr/bin/python3 tools/lora_fixtures/make_lora_fixtures.py --base models/demo.gguf --out DIR

The base is a llama-family GGUF with F16 projections (the demo model). Writes under DIR:
  peft-T/          a PEFT adapter (adapter_config.json + adapter_model.safetensors) adapting only
                   projection T (q, k, v, o, gate, up, down) of every layer with random A and B
                   (v with use_rslora, down stored as F16, the others F32);
  gguf-T.gguf      the same adapter in llama.cpp's GGUF LoRA form (blk.N.attn_q.weight.lora_a
                   [r, in], .lora_b [out, r], q/k rows of B permuted like llama.cpp's converter
                   permutes them for llama; adapter.lora.alpha chosen so alpha / r is the PEFT
                   scale);
  merged-T.gguf    the base with W + scale x B A (computed here in float64, B's q/k rows permuted
                   to the GGUF layout) stored back as F16 in place of W;
  multi-0..3/      PEFT adapters over several projections (ranks 16, 8, 4, 2), stronger (each
                   product as large as its W), for batching tests that need different tokens;
  .complete        written last.

With --bench N (any llama-family GGUF base, quantised ones too: only tensor shapes are read):
writes only bench-0..N-1/, PEFT adapters of rank --rank (16) on all seven projections of every
layer, stored F16, for `pagoda bench engine --lora ... --lora-compare`.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hf_fixtures"))
sys.path.insert(0, os.path.join(HERE, "..", "demo_model"))
import gguf_reader  # noqa: E402
import gguf_writer  # noqa: E402
from make_hf_fixtures import stored_values, write_safetensors  # noqa: E402

TARGETS = {  # peft module -> (gguf tensor, HF submodule)
    "q_proj": ("attn_q", "self_attn"), "k_proj": ("attn_k", "self_attn"),
    "v_proj": ("attn_v", "self_attn"), "o_proj": ("attn_output", "self_attn"),
    "gate_proj": ("ffn_gate", "mlp"), "up_proj": ("ffn_up", "mlp"), "down_proj": ("ffn_down", "mlp"),
}


def permute(w, n_head):
    """llama.cpp's convert permute: rows of each head from [2, half] to [half, 2] order."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(
        w.shape)


def make_adapter(rng, base, modules, rank, alpha, rslora, dtype, kv, strength=0.3):
    """{(layer, module): (A, B)} as stored values (float64) plus the PEFT tensors."""
    n_layers = kv["llama.block_count"]
    scale = alpha / np.sqrt(rank) if rslora else alpha / rank
    pairs, tensors = {}, {}
    for layer in range(n_layers):
        for m in modules:
            w = base.tensor_array(f"blk.{layer}.{TARGETS[m][0]}.weight").astype(np.float64)
            out_dim, in_dim = w.shape
            a = rng.standard_normal((rank, in_dim)) / np.sqrt(in_dim)
            b = rng.standard_normal((out_dim, rank))
            delta = scale * b @ a
            b *= strength * w.std() / delta.std()  # a change the logits clearly show
            a, b = stored_values(a, dtype), stored_values(b, dtype)
            pairs[(layer, m)] = (a, b)
            prefix = f"base_model.model.model.layers.{layer}.{TARGETS[m][1]}.{m}"
            tensors[prefix + ".lora_A.weight"] = (dtype, a)
            tensors[prefix + ".lora_B.weight"] = (dtype, b)
    return pairs, tensors, scale


def write_peft(out_dir, tensors, modules, rank, alpha, rslora):
    os.makedirs(out_dir, exist_ok=True)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": "demo",
              "r": rank, "lora_alpha": alpha, "lora_dropout": 0.0, "use_rslora": rslora,
              "fan_in_fan_out": False, "bias": "none", "target_modules": modules,
              "modules_to_save": None, "inference_mode": True}
    with open(os.path.join(out_dir, "adapter_config.json"), "w") as f:
        json.dump(config, f, indent=2)
    write_safetensors(os.path.join(out_dir, "adapter_model.safetensors"), tensors)


def gguf_b(b, module, kv):
    if module == "q_proj":
        return permute(b, kv["llama.attention.head_count"])
    if module == "k_proj":
        return permute(b, kv["llama.attention.head_count_kv"])
    return b


def write_gguf_lora(path, pairs, rank, scale, kv):
    w = gguf_writer.GGUFWriter()
    w.add_string("general.architecture", "llama")
    w.add_string("general.type", "adapter")
    w.add_string("adapter.type", "lora")
    w.add_f32("adapter.lora.alpha", scale * rank)
    for (layer, m), (a, b) in sorted(pairs.items()):
        name = f"blk.{layer}.{TARGETS[m][0]}.weight"
        w.add_tensor(name + ".lora_a", a.astype(np.float32), gguf_writer.GGML_TYPE_F32)
        w.add_tensor(name + ".lora_b", gguf_b(b, m, kv).astype(np.float32),
                     gguf_writer.GGML_TYPE_F32)
    w.write(path)


def write_merged(path, base, pairs, scale, kv):
    buf = bytearray(base.buf)
    for (layer, m), (a, b) in pairs.items():
        name = f"blk.{layer}.{TARGETS[m][0]}.weight"
        ttype, dims, off = base.tensors[name]
        assert ttype == gguf_reader.GGML_F16, name
        merged = base.tensor_array(name).astype(np.float64) + scale * (gguf_b(b, m, kv) @ a)
        data = np.ascontiguousarray(merged, dtype="<f2").tobytes()
        start = base.data_start + off
        buf[start:start + len(data)] = data
    with open(path, "wb") as f:
        f.write(bytes(buf))


def write_bench_adapters(base, out, count, rank, rng):
    """count PEFT adapters adapting every projection at `rank` (shapes from the base's tensor
    dims; random F16 values of a LoRA's usual size, scale alpha / r = 2)."""
    n_layers = base.kv[f"{base.arch()}.block_count"]
    for i in range(count):
        tensors = {}
        for layer in range(n_layers):
            for m, (gguf_name, sub) in TARGETS.items():
                in_dim, out_dim = base.tensors[f"blk.{layer}.{gguf_name}.weight"][1][:2]
                a = rng.standard_normal((rank, in_dim), dtype=np.float32) / np.sqrt(in_dim)
                b = rng.standard_normal((out_dim, rank), dtype=np.float32) * 0.01
                prefix = f"base_model.model.model.layers.{layer}.{sub}.{m}"
                tensors[prefix + ".lora_A.weight"] = ("F16", a)
                tensors[prefix + ".lora_B.weight"] = ("F16", b)
        write_peft(os.path.join(out, f"bench-{i}"), tensors, list(TARGETS), rank, 2 * rank, False)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--base", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--bench", type=int, default=0,
                   help="write only this many all-projection adapters (for bench engine)")
    p.add_argument("--rank", type=int, default=16, help="--bench adapters' rank")
    args = p.parse_args()
    base = gguf_reader.GgufFile(args.base)
    kv = base.kv
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(20261206)
    if args.bench > 0:
        write_bench_adapters(base, args.out, args.bench, args.rank, rng)
        return
    for m in TARGETS:
        short = m.split("_")[0]
        rslora = m == "v_proj"
        dtype = "F16" if m == "down_proj" else "F32"
        rank, alpha = 8, 16
        pairs, tensors, scale = make_adapter(rng, base, [m], rank, alpha, rslora, dtype, kv)
        write_peft(os.path.join(args.out, f"peft-{short}"), tensors, [m], rank, alpha, rslora)
        write_gguf_lora(os.path.join(args.out, f"gguf-{short}.gguf"), pairs, rank, scale, kv)
        write_merged(os.path.join(args.out, f"merged-{short}.gguf"), base, pairs, scale, kv)
    multi = [(16, list(TARGETS)), (8, ["q_proj", "k_proj", "v_proj", "o_proj"]),
             (4, ["gate_proj", "up_proj", "down_proj"]), (2, ["q_proj", "v_proj"])]
    for i, (rank, modules) in enumerate(multi):
        pairs, tensors, scale = make_adapter(rng, base, modules, rank, 2 * rank, False, "F32", kv,
                                             strength=1.0)
        write_peft(os.path.join(args.out, f"multi-{i}"), tensors, modules, rank, 2 * rank, False)
    with open(os.path.join(args.out, ".complete"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
