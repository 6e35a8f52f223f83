"""Hugging Face directories of the families beyond llama (called by make_hf_fixtures.py):

  from-gguf/gemma2-f32    arch/gemma2-Q8_0.gguf dequantised to F32 in Gemma 2's layout (norms
                          stored as w - 1: Gemma's RMSNorm multiplies by 1 + w);
  from-gguf/qwen2moe-f32  arch/qwen2moe-Q8_0.gguf in Qwen2-MoE's layout (one tensor per expert,
                          shared_expert, shared_expert_gate as a [1, hidden] Linear);
  from-gguf/deepseek2-f32 arch/deepseek2-Q8_0.gguf in DeepSeek-V2's layout (q_a/q_b,
                          kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, shared_experts);
  random/qwen3-f32, random/qwen3moe-f32, random/qwen3moe-dense-f32, random/gemma3-f32,
  random/deepseek3-f32, random/deepseek3-yarn-f32, random/phi3-longrope-f32
                          random Qwen3 (per-head q/k RMSNorm, no biases), Qwen3-MoE (8 experts
                          top-2, renormalised; the -dense one has dense layers by
                          decoder_sparse_step 2 and mlp_only_layers, and norm_topk_prob false),
                          Gemma 3 text (q/k norms, 5 local layers of a sliding window then a
                          global one, local and global rope bases, linear scaling on global
                          layers only) and DeepSeek-V3 (MLA, a dense first layer, sigmoid router
                          with e_score_correction_bias, 4 groups of 2 experts of which the best
                          2 groups are eligible, routed_scaling_factor, a shared expert, one
                          multi-token-prediction layer's tensors that are not run; the -yarn one
                          with DeepSeek's YaRN: mscale on the scores) checkpoints, and a Phi-3 with
                          LongRoPE and partial rotary dims (Phi-4-mini's form; its short-table
                          reference in reference_short.json).
Each directory has reference.json: logits of a token sequence from the float64 PyTorch forward
below, written from the published architectures (transformers' modeling_gemma2.py,
modeling_gemma3.py, modeling_qwen2_moe.py, modeling_qwen3.py, modeling_qwen3_moe.py,
modeling_phi3.py and DeepSeek's modeling_deepseek.py for DeepSeek-V2 and V3), not from pagoda's
code.
"""
import math
import os

import numpy as np
import torch

import make_hf_fixtures as mhf

F64 = torch.float64


# ---- the float64 reference ------------------------------------------------------------------

def rms_norm(x, w, eps, gemma):
    y = x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)
    return y * (1.0 + w) if gemma else y * w


def rope(x, pos, theta, interleaved=False, linear=1.0, inv=None, magnitude=1.0):
    """RoPE on [T, heads, d]: rotate-half (Llama/Qwen/Gemma) or adjacent pairs (DeepSeek's
    view_as_complex), base theta, positions divided by a linear scaling factor; inv: given
    inverse frequencies instead (YaRN), magnitude: the factor on cos and sin."""
    d = x.shape[-1]
    if inv is None:
        inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=F64) / d)
    ang = (pos.to(F64) / linear)[:, None] * inv[None, :]
    cos, sin = ang.cos()[:, None, :] * magnitude, ang.sin()[:, None, :] * magnitude
    if interleaved:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).reshape(x.shape)
    h = d // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def attend(q, k, v, scale, window, softcap):
    """Causal attention of q [T, H, D] over k [T, H, D], v [T, H, Dv]; a key at distance
    >= window is masked (Gemma 2's sliding mask)."""
    T = q.shape[0]
    s = torch.einsum("thd,shd->hts", q, k) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    t = torch.arange(T)
    allowed = t[None, :] <= t[:, None]
    if window:
        allowed &= (t[:, None] - t[None, :]) < window
    s = s.masked_fill(~allowed, float("-inf"))
    return torch.einsum("hts,shd->thd", s.softmax(-1), v).reshape(T, -1)


def act(x, gelu):
    return torch.nn.functional.gelu(x, approximate="tanh") if gelu else torch.nn.functional.silu(x)


def mlp(h, W, p, gelu=False):
    g = act(h @ W[p + "gate_proj.weight"].T, gelu)
    return (g * (h @ W[p + "up_proj.weight"].T)) @ W[p + "down_proj.weight"].T


def deepseek_v3_route(h, W, p, cfg):
    """DeepSeek-V3's MoEGate (noaux_tc): sigmoid scores; experts chosen by score +
    e_score_correction_bias within the topk_group best of n_group groups (a group's score: the
    sum of its 2 best biased scores; the other groups' experts masked to 0 as the published
    code does); weights the unbiased scores, renormalised (norm_topk_prob, + 1e-20) and scaled by
    routed_scaling_factor."""
    T, E = h.shape[0], cfg["n_routed_experts"]
    scores = (h @ W[p + "mlp.gate.weight"].T).sigmoid()
    choice = scores + W[p + "mlp.gate.e_score_correction_bias"][None, :]
    ng, kg = cfg["n_group"], cfg["topk_group"]
    group_scores = choice.view(T, ng, -1).topk(2, dim=-1)[0].sum(-1)
    group_idx = group_scores.topk(kg, dim=-1, sorted=False)[1]
    group_mask = torch.zeros_like(group_scores).scatter_(1, group_idx, 1)
    score_mask = group_mask.unsqueeze(-1).expand(T, ng, E // ng).reshape(T, -1)
    tmp = choice.masked_fill(~score_mask.bool(), 0.0)
    top_i = tmp.topk(cfg["num_experts_per_tok"], dim=-1, sorted=False)[1]
    top_w = scores.gather(1, top_i)
    if cfg["num_experts_per_tok"] > 1 and cfg["norm_topk_prob"]:
        top_w = top_w / (top_w.sum(-1, keepdim=True) + 1e-20)
    return top_w * cfg["routed_scaling_factor"], top_i


def moe(h, W, p, cfg, deepseek):
    """Routed experts (softmax router, top k; DeepSeek-V3's sigmoid router) plus shared
    experts."""
    k = cfg["num_experts_per_tok"]
    if deepseek and cfg.get("scoring_func") == "sigmoid":
        top_w, top_i = deepseek_v3_route(h, W, p, cfg)
    else:
        probs = (h @ W[p + "mlp.gate.weight"].T).softmax(-1)
        top_w, top_i = probs.topk(k, dim=-1)
        if cfg.get("norm_topk_prob"):
            top_w = top_w / top_w.sum(-1, keepdim=True)
        elif deepseek:  # DeepSeek-V2 scales only weights it does not renormalise
            top_w = top_w * cfg["routed_scaling_factor"]
    out = torch.zeros_like(h)
    for t in range(h.shape[0]):
        for w, e in zip(top_w[t], top_i[t]):
            out[t] += w * mlp(h[t:t + 1], W, p + f"mlp.experts.{int(e)}.")[0]
    if deepseek and cfg.get("n_shared_experts"):
        out = out + mlp(h, W, p + "mlp.shared_experts.")
    if p + "mlp.shared_expert.gate_proj.weight" in W:  # Qwen2-MoE: a sigmoid-gated shared expert
        gate = torch.sigmoid(h @ W[p + "mlp.shared_expert_gate.weight"].T)
        out = out + gate * mlp(h, W, p + "mlp.shared_expert.")
    return out


def yarn_get_mscale(scale, mscale):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def deepseek_yarn(cfg, dim):
    """DeepSeek's YaRN (modeling_deepseek.py: DeepseekV3YarnRotaryEmbedding and the attention's
    softmax_scale): (inverse frequencies, the cos/sin factor, the factor on the score scale)."""
    rs = cfg["rope_scaling"]
    base, factor = cfg["rope_theta"], rs["factor"]
    orig = rs["original_max_position_embeddings"]
    fast, slow = rs.get("beta_fast", 32), rs.get("beta_slow", 1)
    mscale, mscale_all_dim = rs.get("mscale", 1), rs.get("mscale_all_dim", 0)

    def correction_dim(rotations):
        return dim * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(correction_dim(fast)), 0)
    high = min(math.ceil(correction_dim(slow)), dim - 1)
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=F64) - low) / (high - low), 0, 1)
    extra_mask = 1.0 - ramp
    freq_extra = 1.0 / base ** (torch.arange(0, dim, 2, dtype=F64) / dim)
    freq_inter = 1.0 / (factor * base ** (torch.arange(0, dim, 2, dtype=F64) / dim))
    inv = freq_inter * (1 - extra_mask) + freq_extra * extra_mask
    magnitude = yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim)
    score = yarn_get_mscale(factor, mscale_all_dim) ** 2 if mscale_all_dim else 1.0
    return inv, magnitude, score


def mla(h, W, p, cfg, pos):
    """DeepSeek-V2 multi-head latent attention."""
    T, H = h.shape[0], cfg["num_attention_heads"]
    nope, rd, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    eps = cfg["rms_norm_eps"]
    if cfg.get("q_lora_rank"):
        qa = rms_norm(h @ W[p + "self_attn.q_a_proj.weight"].T,
                      W[p + "self_attn.q_a_layernorm.weight"], eps, False)
        q = qa @ W[p + "self_attn.q_b_proj.weight"].T
    else:
        q = h @ W[p + "self_attn.q_proj.weight"].T
    q = q.view(T, H, nope + rd)
    q_nope, q_pe = q[..., :nope], q[..., nope:]
    ckv = h @ W[p + "self_attn.kv_a_proj_with_mqa.weight"].T
    latent, k_pe = ckv[:, :cfg["kv_lora_rank"]], ckv[:, cfg["kv_lora_rank"]:].view(T, 1, rd)
    kv = (rms_norm(latent, W[p + "self_attn.kv_a_layernorm.weight"], eps, False)
          @ W[p + "self_attn.kv_b_proj.weight"].T).view(T, H, nope + vd)
    k_nope, v = kv[..., :nope], kv[..., nope:]
    inv, magnitude, score = None, 1.0, 1.0
    rs = cfg.get("rope_scaling")
    if rs and rs.get("type", rs.get("rope_type")) == "yarn":
        inv, magnitude, score = deepseek_yarn(cfg, rd)
    q_pe = rope(q_pe, pos, cfg["rope_theta"], interleaved=True, inv=inv, magnitude=magnitude)
    k_pe = rope(k_pe, pos, cfg["rope_theta"], interleaved=True, inv=inv,
                magnitude=magnitude).expand(T, H, rd)
    qf = torch.cat([q_nope, q_pe], -1)
    kf = torch.cat([k_nope, k_pe], -1)
    return attend(qf, kf, v, (nope + rd) ** -0.5 * score, 0, 0)


def layer_is_sliding(cfg, i):
    family = cfg["family"]
    if family == "gemma2":
        return i % 2 == 0
    if family == "gemma3":
        return (i + 1) % cfg["sliding_window_pattern"] != 0
    return False


def reference_forward(cfg, W, tokens):
    """float64 logits [T, vocab] of a Gemma 2/3, Qwen2-MoE, Qwen3(-MoE) or DeepSeek-V2 model.
    cfg is the config.json plus "family"."""
    family = cfg["family"]
    gemma = family.startswith("gemma")
    T = len(tokens)
    eps = cfg["rms_norm_eps"]
    pos = torch.arange(T)
    x = W["model.embed_tokens.weight"][torch.tensor(tokens)]
    if gemma:  # the normalizer, sqrt(hidden) in the model's dtype (float32 here)
        x = x * float(np.float32(math.sqrt(cfg["hidden_size"])))
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps, gemma)
        if family in ("deepseek2", "deepseek3"):
            a = mla(h, W, p, cfg, pos)
        else:
            H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
            D = cfg.get("head_dim") or cfg["hidden_size"] // H

            def proj(name):
                y = h @ W[p + f"self_attn.{name}_proj.weight"].T
                bias = W.get(p + f"self_attn.{name}_proj.bias")
                return y if bias is None else y + bias

            q, k = proj("q").view(T, H, D), proj("k").view(T, KV, D)
            v = proj("v").view(T, KV, D)
            if p + "self_attn.q_norm.weight" in W:  # Qwen3 / Gemma 3: per-head RMSNorm
                q = rms_norm(q, W[p + "self_attn.q_norm.weight"], eps, gemma)
                k = rms_norm(k, W[p + "self_attn.k_norm.weight"], eps, gemma)
            sliding = layer_is_sliding(cfg, i)
            theta, linear = cfg["rope_theta"], 1.0
            if family == "gemma3" and sliding:
                theta = cfg["rope_local_base_freq"]
            elif cfg.get("rope_scaling"):
                linear = cfg["rope_scaling"]["factor"]
            q, k = rope(q, pos, theta, linear=linear), rope(k, pos, theta, linear=linear)
            k = k.repeat_interleave(H // KV, dim=1)
            v = v.repeat_interleave(H // KV, dim=1)
            scale = cfg["query_pre_attn_scalar"] ** -0.5 if gemma else D ** -0.5
            a = attend(q, k, v, scale, cfg["sliding_window"] if sliding else 0,
                       cfg.get("attn_logit_softcapping") or 0)
        a = a @ W[p + "self_attn.o_proj.weight"].T
        if gemma:
            a = rms_norm(a, W[p + "post_attention_layernorm.weight"], eps, True)
            x = x + a
            h = rms_norm(x, W[p + "pre_feedforward_layernorm.weight"], eps, True)
            f = rms_norm(mlp(h, W, p + "mlp.", gelu=True),
                         W[p + "post_feedforward_layernorm.weight"], eps, True)
        else:
            x = x + a
            h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps, False)
            dense = (p + "mlp.gate.weight") not in W
            f = (mlp(h, W, p + "mlp.") if dense else
                 moe(h, W, p, cfg, family in ("deepseek2", "deepseek3")))
        x = x + f
    x = rms_norm(x, W["model.norm.weight"], eps, gemma)
    logits = x @ W.get("lm_head.weight", W["model.embed_tokens.weight"]).T
    cap = cfg.get("final_logit_softcapping")
    return cap * torch.tanh(logits / cap) if cap else logits


def write_reference(out_dir, cfg, tensors, tokens, dtype):
    W = {n: torch.from_numpy(mhf.stored_values(a, d)) for n, (d, a) in tensors.items()}
    logits = reference_forward(cfg, W, tokens)
    mhf.write_json(os.path.join(out_dir, "reference.json"),
                   {"tokens": [int(t) for t in tokens], "dtype": dtype,
                    "logits": [[round(float(v), 7) for v in row] for row in logits]})


# ---- from the fixture GGUFs -----------------------------------------------------------------

def gguf_to_hf_tensors(g, family):
    """HF tensors (name -> ("F32", array)) of a gemma2 / qwen2moe / deepseek2 fixture GGUF."""
    kv, arch = g.kv, g.arch()
    gemma = family == "gemma2"
    tensors = {}

    def put(name, arr):
        tensors[name] = ("F32", np.ascontiguousarray(arr, dtype=np.float32))

    def norm(name, gguf):  # Gemma stores w for GGUF's 1 + w
        arr = g.tensor_array(gguf)
        put(name, arr - 1.0 if gemma else arr)

    put("model.embed_tokens.weight", g.tensor_array("token_embd.weight"))
    norm("model.norm.weight", "output_norm.weight")
    if "output.weight" in g.tensors:
        put("lm_head.weight", g.tensor_array("output.weight"))
    for i in range(kv[f"{arch}.block_count"]):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        a = lambda n: g.tensor_array(b + n)  # noqa: E731
        has = lambda n: (b + n) in g.tensors  # noqa: E731
        norm(p + "input_layernorm.weight", b + "attn_norm.weight")
        if gemma:
            norm(p + "post_attention_layernorm.weight", b + "post_attention_norm.weight")
            norm(p + "pre_feedforward_layernorm.weight", b + "ffn_norm.weight")
            norm(p + "post_feedforward_layernorm.weight", b + "post_ffw_norm.weight")
        else:
            put(p + "post_attention_layernorm.weight", a("ffn_norm.weight"))
        if family == "deepseek2":
            put(p + "self_attn.q_a_proj.weight", a("attn_q_a.weight"))
            put(p + "self_attn.q_a_layernorm.weight", a("attn_q_a_norm.weight"))
            put(p + "self_attn.q_b_proj.weight", a("attn_q_b.weight"))
            put(p + "self_attn.kv_a_proj_with_mqa.weight", a("attn_kv_a_mqa.weight"))
            put(p + "self_attn.kv_a_layernorm.weight", a("attn_kv_a_norm.weight"))
            put(p + "self_attn.kv_b_proj.weight", a("attn_kv_b.weight"))
        else:
            for n in ("q", "k", "v"):
                put(p + f"self_attn.{n}_proj.weight", a(f"attn_{n}.weight"))
                if has(f"attn_{n}.bias"):
                    put(p + f"self_attn.{n}_proj.bias", a(f"attn_{n}.bias"))
        put(p + "self_attn.o_proj.weight", a("attn_output.weight"))
        if has("ffn_gate_exps.weight"):
            put(p + "mlp.gate.weight", a("ffn_gate_inp.weight"))
            for part in ("gate", "up", "down"):
                stack = a(f"ffn_{part}_exps.weight")
                for e in range(stack.shape[0]):
                    put(p + f"mlp.experts.{e}.{part}_proj.weight", stack[e])
            shared = "mlp.shared_experts." if family == "deepseek2" else "mlp.shared_expert."
            for part in ("gate", "up", "down"):
                if has(f"ffn_{part}_shexp.weight"):
                    put(p + shared + f"{part}_proj.weight", a(f"ffn_{part}_shexp.weight"))
            if has("ffn_gate_inp_shexp.weight"):  # GGUF's vector is HF's [1, hidden] Linear
                put(p + "mlp.shared_expert_gate.weight", a("ffn_gate_inp_shexp.weight")[None, :])
        else:
            for part in ("gate", "up", "down"):
                put(p + f"mlp.{part}_proj.weight", a(f"ffn_{part}.weight"))
    return tensors


def gguf_hf_config(g, family, hf_arch, model_type, tied):
    kv, arch = g.kv, g.arch()
    n_head = kv[f"{arch}.attention.head_count"]
    cfg = {
        "architectures": [hf_arch], "model_type": model_type,
        "hidden_size": kv[f"{arch}.embedding_length"],
        "intermediate_size": kv[f"{arch}.feed_forward_length"],
        "num_hidden_layers": kv[f"{arch}.block_count"],
        "num_attention_heads": n_head,
        "num_key_value_heads": kv.get(f"{arch}.attention.head_count_kv", n_head),
        "max_position_embeddings": kv[f"{arch}.context_length"],
        "rms_norm_eps": kv[f"{arch}.attention.layer_norm_rms_epsilon"],
        "rope_theta": kv.get(f"{arch}.rope.freq_base", 10000.0),
        "vocab_size": len(kv["tokenizer.ggml.tokens"]),
        "hidden_act": "silu", "tie_word_embeddings": tied, "torch_dtype": "float32",
        "bos_token_id": kv.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": kv.get("tokenizer.ggml.eos_token_id"),
        "rope_scaling": None,
    }
    if family == "gemma2":
        head_dim = kv[f"{arch}.attention.key_length"]
        cfg.update({"head_dim": head_dim, "hidden_act": "gelu_pytorch_tanh",
                    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": head_dim,
                    "sliding_window": kv[f"{arch}.attention.sliding_window"],
                    "attn_logit_softcapping": kv[f"{arch}.attn_logit_softcapping"],
                    "final_logit_softcapping": kv[f"{arch}.final_logit_softcapping"]})
    elif family == "qwen2moe":
        cfg.update({"num_experts": kv[f"{arch}.expert_count"],
                    "num_experts_per_tok": kv[f"{arch}.expert_used_count"],
                    "moe_intermediate_size": kv[f"{arch}.expert_feed_forward_length"],
                    "shared_expert_intermediate_size":
                        kv[f"{arch}.expert_shared_feed_forward_length"],
                    "norm_topk_prob": False, "decoder_sparse_step": 1, "mlp_only_layers": [],
                    "use_sliding_window": False, "sliding_window": 4096})
    elif family == "deepseek2":
        rd = kv[f"{arch}.rope.dimension_count"]
        cfg.update({"q_lora_rank": kv[f"{arch}.attention.q_lora_rank"],
                    "kv_lora_rank": kv[f"{arch}.attention.kv_lora_rank"],
                    "qk_rope_head_dim": rd,
                    "qk_nope_head_dim": kv[f"{arch}.attention.key_length"] - rd,
                    "v_head_dim": kv[f"{arch}.attention.value_length"],
                    "n_routed_experts": kv[f"{arch}.expert_count"],
                    "num_experts_per_tok": kv[f"{arch}.expert_used_count"],
                    "moe_intermediate_size": kv[f"{arch}.expert_feed_forward_length"],
                    "n_shared_experts": kv[f"{arch}.expert_shared_count"],
                    "first_k_dense_replace": kv[f"{arch}.leading_dense_block_count"],
                    "routed_scaling_factor": kv[f"{arch}.expert_weights_scale"],
                    "norm_topk_prob": bool(kv[f"{arch}.expert_weights_norm"]),
                    "topk_method": "greedy", "scoring_func": "softmax", "moe_layer_freq": 1,
                    "n_group": 1, "topk_group": 1})
    return cfg


FROM_GGUF = [  # (fixture, family, HF architecture, model_type, out name, reference tokens)
    ("gemma2-Q8_0", "gemma2", "Gemma2ForCausalLM", "gemma2", "gemma2-f32", 12),
    ("qwen2moe-Q8_0", "qwen2moe", "Qwen2MoeForCausalLM", "qwen2_moe", "qwen2moe-f32", 8),
    ("deepseek2-Q8_0", "deepseek2", "DeepseekV2ForCausalLM", "deepseek_v2", "deepseek2-f32", 8),
]


def make_from_gguf(out_root, models, prompt_tokens):
    import gguf_reader
    for fixture, family, hf_arch, model_type, name, n_ref in FROM_GGUF:
        g = gguf_reader.GgufFile(os.path.join(models, "arch", fixture + ".gguf"))
        out_dir = os.path.join(out_root, name)
        os.makedirs(out_dir, exist_ok=True)
        tensors = gguf_to_hf_tensors(g, family)
        mhf.write_checkpoint(out_dir, tensors, 1)
        cfg = gguf_hf_config(g, family, hf_arch, model_type, "lm_head.weight" not in tensors)
        mhf.write_json(os.path.join(out_dir, "config.json"), cfg)
        mhf.write_json(os.path.join(out_dir, "generation_config.json"),
                       {"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"]})
        mhf.write_tokenizer_from_gguf(g, out_dir)
        tokens = prompt_tokens(fixture, n_ref, "arch/reference")
        write_reference(out_dir, dict(cfg, family=family), tensors, tokens, "F32")


# ---- random checkpoints ---------------------------------------------------------------------

def random_qwen3(out_dir, vocab_tokens, seed):
    """A random Qwen3 (head_dim 32 in a 64-wide model, GQA 4:2, q/k norms, untied output)."""
    rng = np.random.default_rng(seed)
    V, hidden, H, KV, D, ffn, L = len(vocab_tokens), 64, 4, 2, 32, 128, 2
    tensors = {}

    def mat(name, rows, cols):
        tensors[name] = ("F32", (rng.standard_normal((rows, cols)) / math.sqrt(cols))
                         .astype(np.float32))

    def vec(name, n, spread=0.1):
        tensors[name] = ("F32", (1.0 + spread * rng.standard_normal(n)).astype(np.float32))

    tensors["model.embed_tokens.weight"] = ("F32", rng.standard_normal((V, hidden))
                                            .astype(np.float32))
    vec("model.norm.weight", hidden)
    mat("lm_head.weight", V, hidden)
    for i in range(L):
        p = f"model.layers.{i}."
        vec(p + "input_layernorm.weight", hidden)
        vec(p + "post_attention_layernorm.weight", hidden)
        mat(p + "self_attn.q_proj.weight", H * D, hidden)
        mat(p + "self_attn.k_proj.weight", KV * D, hidden)
        mat(p + "self_attn.v_proj.weight", KV * D, hidden)
        mat(p + "self_attn.o_proj.weight", hidden, H * D)
        vec(p + "self_attn.q_norm.weight", D, 0.3)
        vec(p + "self_attn.k_norm.weight", D, 0.3)
        mat(p + "mlp.gate_proj.weight", ffn, hidden)
        mat(p + "mlp.up_proj.weight", ffn, hidden)
        mat(p + "mlp.down_proj.weight", hidden, ffn)
    os.makedirs(out_dir, exist_ok=True)
    mhf.write_checkpoint(out_dir, tensors, 1)
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": hidden,
           "intermediate_size": ffn, "num_hidden_layers": L, "num_attention_heads": H,
           "num_key_value_heads": KV, "head_dim": D, "max_position_embeddings": 256,
           "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "vocab_size": V, "hidden_act": "silu",
           "attention_bias": False, "tie_word_embeddings": False, "torch_dtype": "float32",
           "use_sliding_window": False, "sliding_window": None, "rope_scaling": None}
    mhf.write_json(os.path.join(out_dir, "config.json"), cfg)
    tokens = [int(t) for t in rng.integers(0, V, size=14)]
    write_reference(out_dir, dict(cfg, family="qwen3"), tensors, tokens, "F32")


def random_tensors(rng):
    """A tensor dict with mat / vec helpers for random checkpoints."""
    tensors = {}

    def mat(name, rows, cols):
        tensors[name] = ("F32", (rng.standard_normal((rows, cols)) / math.sqrt(cols))
                         .astype(np.float32))

    def vec(name, n, center=1.0, spread=0.1):
        tensors[name] = ("F32", (center + spread * rng.standard_normal(n)).astype(np.float32))

    return tensors, mat, vec


def random_model_tensors(rng, V, hidden):
    """random_tensors with the embedding, the final norm and an untied head drawn."""
    tensors, mat, vec = random_tensors(rng)
    tensors["model.embed_tokens.weight"] = ("F32", rng.standard_normal((V, hidden))
                                            .astype(np.float32))
    vec("model.norm.weight", hidden)
    mat("lm_head.weight", V, hidden)
    return tensors, mat, vec


def finish_random(out_dir, tensors, cfg, family, rng, n_tokens=14):
    os.makedirs(out_dir, exist_ok=True)
    mhf.write_checkpoint(out_dir, tensors, 1)
    mhf.write_json(os.path.join(out_dir, "config.json"), cfg)
    tokens = [int(t) for t in rng.integers(0, cfg["vocab_size"], size=n_tokens)]
    ref_tensors = {n: t for n, t in tensors.items() if not n.startswith(
        f"model.layers.{cfg['num_hidden_layers']}.")}  # (multi-token-prediction layers)
    write_reference(out_dir, dict(cfg, family=family), ref_tensors, tokens, "F32")


def random_qwen3moe(out_dir, vocab_tokens, seed, dense):
    """A random Qwen3-MoE: 8 experts top-2, q/k norms, head_dim 32 in a 64-wide model. dense:
    6 layers, decoder_sparse_step 2 and mlp_only_layers [5] (MoE on layers 1 and 3 only),
    norm_topk_prob false; else 2 MoE layers, norm_topk_prob true."""
    rng = np.random.default_rng(seed)
    V, hidden, H, KV, D, ffn, E, moe_ffn = len(vocab_tokens), 64, 4, 2, 32, 96, 8, 32
    L, step, mlp_only = (6, 2, [5]) if dense else (2, 1, [])
    tensors, mat, vec = random_model_tensors(rng, V, hidden)
    for i in range(L):
        p = f"model.layers.{i}."
        vec(p + "input_layernorm.weight", hidden)
        vec(p + "post_attention_layernorm.weight", hidden)
        mat(p + "self_attn.q_proj.weight", H * D, hidden)
        mat(p + "self_attn.k_proj.weight", KV * D, hidden)
        mat(p + "self_attn.v_proj.weight", KV * D, hidden)
        mat(p + "self_attn.o_proj.weight", hidden, H * D)
        vec(p + "self_attn.q_norm.weight", D, spread=0.3)
        vec(p + "self_attn.k_norm.weight", D, spread=0.3)
        # Qwen3MoeDecoderLayer: experts unless listed in mlp_only_layers or (i + 1) % step != 0.
        if i not in mlp_only and (i + 1) % step == 0:
            mat(p + "mlp.gate.weight", E, hidden)
            for e in range(E):
                mat(p + f"mlp.experts.{e}.gate_proj.weight", moe_ffn, hidden)
                mat(p + f"mlp.experts.{e}.up_proj.weight", moe_ffn, hidden)
                mat(p + f"mlp.experts.{e}.down_proj.weight", hidden, moe_ffn)
        else:
            mat(p + "mlp.gate_proj.weight", ffn, hidden)
            mat(p + "mlp.up_proj.weight", ffn, hidden)
            mat(p + "mlp.down_proj.weight", hidden, ffn)
    cfg = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
           "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": L,
           "num_attention_heads": H, "num_key_value_heads": KV, "head_dim": D,
           "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
           "vocab_size": V, "hidden_act": "silu", "attention_bias": False,
           "tie_word_embeddings": False, "torch_dtype": "float32", "use_sliding_window": False,
           "sliding_window": None, "rope_scaling": None, "num_experts": E,
           "num_experts_per_tok": 2, "moe_intermediate_size": moe_ffn,
           "norm_topk_prob": not dense, "decoder_sparse_step": step, "mlp_only_layers": mlp_only,
           "output_router_logits": False}
    finish_random(out_dir, tensors, cfg, "qwen3moe", rng)


def random_gemma3(out_dir, vocab_tokens, seed, multimodal=False):
    """A random Gemma 3 text model: 7 layers (0-4 and 6 local with a 4-token window and rope
    base 10000, 5 global with base 1e6 and linear scaling 8), head_dim 32 in a 64-wide model,
    GQA 4:2, q/k norms, tied embeddings, no soft-caps. multimodal: the same weights as a
    Gemma3ForConditionalGeneration checkpoint (text_config without rope_theta / rms_norm_eps /
    query_pre_attn_scalar, which take Gemma3TextConfig's defaults; tensors under
    language_model.model.*; a vision tower and projector that the text model does not use)."""
    rng = np.random.default_rng(seed)
    V, hidden, H, KV, D, ffn, L = len(vocab_tokens), 64, 4, 2, 32, 128, 7
    tensors, mat, vec = random_tensors(rng)
    tensors["model.embed_tokens.weight"] = ("F32", (0.2 * rng.standard_normal((V, hidden)))
                                            .astype(np.float32))
    vec("model.norm.weight", hidden, center=0.0)  # Gemma norms multiply by 1 + w
    for i in range(L):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            vec(p + n + ".weight", hidden, center=0.0)
        mat(p + "self_attn.q_proj.weight", H * D, hidden)
        mat(p + "self_attn.k_proj.weight", KV * D, hidden)
        mat(p + "self_attn.v_proj.weight", KV * D, hidden)
        mat(p + "self_attn.o_proj.weight", hidden, H * D)
        vec(p + "self_attn.q_norm.weight", D, center=0.0, spread=0.3)
        vec(p + "self_attn.k_norm.weight", D, center=0.0, spread=0.3)
        mat(p + "mlp.gate_proj.weight", ffn, hidden)
        mat(p + "mlp.up_proj.weight", ffn, hidden)
        mat(p + "mlp.down_proj.weight", hidden, ffn)
    pattern = 6
    cfg = {"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
           "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": L,
           "num_attention_heads": H, "num_key_value_heads": KV, "head_dim": D,
           "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
           "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
           "vocab_size": V, "hidden_activation": "gelu_pytorch_tanh",
           "query_pre_attn_scalar": D, "sliding_window": 4, "sliding_window_pattern": pattern,
           "layer_types": ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
                           for i in range(L)],
           "attn_logit_softcapping": None, "final_logit_softcapping": None,
           "attention_bias": False, "tie_word_embeddings": True, "torch_dtype": "float32"}
    if not multimodal:
        finish_random(out_dir, tensors, cfg, "gemma3", rng)
        return
    cfg["query_pre_attn_scalar"] = 256  # Gemma3TextConfig's defaults, left out below
    text = {k: v for k, v in cfg.items()
            if k not in ("architectures", "rope_theta", "rms_norm_eps", "query_pre_attn_scalar")}
    top = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
           "text_config": text, "torch_dtype": "float32", "mm_tokens_per_image": 4,
           "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 16,
                             "num_hidden_layers": 1, "patch_size": 4, "image_size": 8}}
    mm = {"language_model." + n: t for n, t in tensors.items()}
    mm["vision_tower.vision_model.embeddings.patch_embedding.weight"] = (
        "F32", rng.standard_normal((16, 3, 4, 4)).astype(np.float32))
    mm["multi_modal_projector.mm_input_projection_weight"] = (
        "F32", rng.standard_normal((16, hidden)).astype(np.float32))
    os.makedirs(out_dir, exist_ok=True)
    mhf.write_checkpoint(out_dir, mm, 1)
    mhf.write_json(os.path.join(out_dir, "config.json"), top)
    tokens = [int(t) for t in rng.integers(0, V, size=14)]
    write_reference(out_dir, dict(cfg, family="gemma3"), tensors, tokens, "F32")


def random_deepseek3(out_dir, vocab_tokens, seed, yarn=False):
    """A random DeepSeek-V3: 3 layers (the first dense), MLA (q_lora_rank 32, kv_lora_rank 32,
    nope 16 + rope 8, v 16), 8 routed experts in 4 groups (2 eligible), top-2, 1 shared expert,
    sigmoid router with a small correction bias, routed_scaling_factor 2.5, and one
    multi-token-prediction layer's tensors (model.layers.3.*: not run). yarn: rope_scaling as
    the real V3 checkpoints state it (type yarn, factor 40, mscale = mscale_all_dim) with an
    original context of 64 so that YaRN's ramp falls across the 4 rope pairs (pair 0
    extrapolated, 1 mixed, 2-3 interpolated), and mscale 0.707 (V2's value) so that a wrong
    mscale_all_dim cannot pass as 1."""
    rng = np.random.default_rng(seed)
    V, hidden, H, L = len(vocab_tokens), 64, 4, 3
    qr, kvr, nope, rd, vd, ffn, E, moe_ffn = 32, 32, 16, 8, 16, 96, 8, 32
    tensors, mat, vec = random_model_tensors(rng, V, hidden)
    for i in range(L + 1):
        p = f"model.layers.{i}."
        vec(p + "input_layernorm.weight", hidden)
        vec(p + "post_attention_layernorm.weight", hidden)
        mat(p + "self_attn.q_a_proj.weight", qr, hidden)
        vec(p + "self_attn.q_a_layernorm.weight", qr)
        mat(p + "self_attn.q_b_proj.weight", H * (nope + rd), qr)
        mat(p + "self_attn.kv_a_proj_with_mqa.weight", kvr + rd, hidden)
        vec(p + "self_attn.kv_a_layernorm.weight", kvr)
        mat(p + "self_attn.kv_b_proj.weight", H * (nope + vd), kvr)
        mat(p + "self_attn.o_proj.weight", hidden, H * vd)
        if i == 0:
            mat(p + "mlp.gate_proj.weight", ffn, hidden)
            mat(p + "mlp.up_proj.weight", ffn, hidden)
            mat(p + "mlp.down_proj.weight", hidden, ffn)
            continue
        mat(p + "mlp.gate.weight", E, hidden)
        vec(p + "mlp.gate.e_score_correction_bias", E, center=0.0, spread=0.05)
        for e in range(E):
            mat(p + f"mlp.experts.{e}.gate_proj.weight", moe_ffn, hidden)
            mat(p + f"mlp.experts.{e}.up_proj.weight", moe_ffn, hidden)
            mat(p + f"mlp.experts.{e}.down_proj.weight", hidden, moe_ffn)
        mat(p + "mlp.shared_experts.gate_proj.weight", moe_ffn, hidden)
        mat(p + "mlp.shared_experts.up_proj.weight", moe_ffn, hidden)
        mat(p + "mlp.shared_experts.down_proj.weight", hidden, moe_ffn)
        if i == L:  # the multi-token-prediction layer's own tensors
            vec(p + "enorm.weight", hidden)
            vec(p + "hnorm.weight", hidden)
            mat(p + "eh_proj.weight", hidden, 2 * hidden)
            vec(p + "shared_head.norm.weight", hidden)
    cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
           "hidden_size": hidden, "intermediate_size": ffn, "num_hidden_layers": L,
           "num_attention_heads": H, "num_key_value_heads": H, "max_position_embeddings": 256,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_scaling": None, "vocab_size": V,
           "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "float32",
           "q_lora_rank": qr, "kv_lora_rank": kvr, "qk_nope_head_dim": nope,
           "qk_rope_head_dim": rd, "v_head_dim": vd, "n_routed_experts": E,
           "num_experts_per_tok": 2, "moe_intermediate_size": moe_ffn, "n_shared_experts": 1,
           "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 4, "topk_group": 2,
           "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": True,
           "routed_scaling_factor": 2.5, "num_nextn_predict_layers": 1}
    if yarn:
        cfg["max_position_embeddings"] = 64 * 40
        cfg["rope_scaling"] = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 64,
                               "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
                               "mscale_all_dim": 0.707}
    finish_random(out_dir, tensors, cfg, "deepseek3", rng)


# ---- Phi-3 LongRoPE -------------------------------------------------------------------------

def phi3_forward(cfg, W, tokens, long_table):
    """float64 logits [T, vocab] of a Phi-3 decoder as transformers' modeling_phi3.py runs it:
    fused qkv_proj (q, k, v rows) and gate_up_proj (gate, then up), rotate-half RoPE over the
    first int(head_dim x partial_rotary_factor) dims of each head with LongRoPE's inverse
    frequencies 1 / (factor_i x base^(2i / rot)) (long_factor when long_table, else
    short_factor) and cos/sin times the attention factor sqrt(1 + ln(s) / ln(original)),
    s = max_position_embeddings / original_max_position_embeddings."""
    T = len(tokens)
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    D = cfg["hidden_size"] // H
    rot = int(D * cfg.get("partial_rotary_factor", 1.0))
    rs = cfg["rope_scaling"]
    ext = torch.tensor(rs["long_factor"] if long_table else rs["short_factor"], dtype=F64)
    inv = 1.0 / (ext * cfg["rope_theta"] ** (torch.arange(0, rot, 2, dtype=F64) / rot))
    orig = cfg["original_max_position_embeddings"]
    scale = cfg["max_position_embeddings"] / orig
    magnitude = math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1 else 1.0
    pos = torch.arange(T)

    def rotate(x):
        return torch.cat([rope(x[..., :rot], pos, 0, inv=inv, magnitude=magnitude),
                          x[..., rot:]], -1)

    eps = cfg["rms_norm_eps"]
    x = W["model.embed_tokens.weight"][torch.tensor(tokens)]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, W[p + "input_layernorm.weight"], eps, False)
        qkv = h @ W[p + "self_attn.qkv_proj.weight"].T
        q, k, v = qkv.split([H * D, KV * D, KV * D], -1)
        q, k = rotate(q.reshape(T, H, D)), rotate(k.reshape(T, KV, D))
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.reshape(T, KV, D).repeat_interleave(H // KV, dim=1)
        x = x + attend(q, k, v, D ** -0.5, 0, 0) @ W[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps, False)
        gate, up = (h @ W[p + "mlp.gate_up_proj.weight"].T).chunk(2, -1)
        x = x + (act(gate, False) * up) @ W[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, W["model.norm.weight"], eps, False)
    return x @ W["lm_head.weight"].T


def random_phi3_longrope(out_dir, vocab_tokens, seed):
    """A random Phi-3 with LongRoPE as Phi-4-mini states it (rope_scaling type longrope,
    partial_rotary_factor 0.75: 24 of 32 head dims rotate, 12 factors per table), extended from
    an original context of 64 to 256 (attention factor 1.1547). reference.json: an 80-token
    sequence, past the original context, which transformers runs with the long factors (as
    pagoda does when it serves the full 256); reference_short.json: a 14-token one with the
    short factors (pagoda serving at most 64 tokens: its "served_context")."""
    rng = np.random.default_rng(seed)
    V, hidden, H, KV, ffn, L = len(vocab_tokens), 128, 4, 2, 160, 2
    D = hidden // H
    rot = int(D * 0.75)
    tensors, mat, vec = random_model_tensors(rng, V, hidden)
    for i in range(L):
        p = f"model.layers.{i}."
        vec(p + "input_layernorm.weight", hidden)
        vec(p + "post_attention_layernorm.weight", hidden)
        mat(p + "self_attn.qkv_proj.weight", (H + 2 * KV) * D, hidden)
        mat(p + "self_attn.o_proj.weight", hidden, H * D)
        mat(p + "mlp.gate_up_proj.weight", 2 * ffn, hidden)
        mat(p + "mlp.down_proj.weight", hidden, ffn)
    # Real tables grow from ~1 (fast pairs) to tens (slow ones); short ones stay near 1.
    long_factor = [round(float(f), 6) for f in np.sort(1.0 + 7.0 * rng.random(rot // 2))]
    short_factor = [round(float(f), 6) for f in 1.0 + 0.25 * rng.random(rot // 2)]
    cfg = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": hidden,
           "intermediate_size": ffn, "num_hidden_layers": L, "num_attention_heads": H,
           "num_key_value_heads": KV, "max_position_embeddings": 256,
           "original_max_position_embeddings": 64, "partial_rotary_factor": 0.75,
           "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "vocab_size": V, "hidden_act": "silu",
           "tie_word_embeddings": False, "torch_dtype": "float32", "sliding_window": None,
           "rope_scaling": {"type": "longrope", "long_factor": long_factor,
                            "short_factor": short_factor}}
    os.makedirs(out_dir, exist_ok=True)
    mhf.write_checkpoint(out_dir, tensors, 1)
    mhf.write_json(os.path.join(out_dir, "config.json"), cfg)
    W = {n: torch.from_numpy(mhf.stored_values(a, d)) for n, (d, a) in tensors.items()}
    for name, n_tokens, long_table, extra in (("reference.json", 80, True, {}),
                                              ("reference_short.json", 14, False,
                                               {"served_context": 64})):
        tokens = [int(t) for t in rng.integers(0, V, size=n_tokens)]
        logits = phi3_forward(cfg, W, tokens, long_table)
        mhf.write_json(os.path.join(out_dir, name),
                       dict({"tokens": tokens, "dtype": "F32",
                             "logits": [[round(float(v), 7) for v in row] for row in logits]},
                            **extra))
