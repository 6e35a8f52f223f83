// ModelConfig: the hyper-parameters of a decoder-only transformer, independent of the file
// format it was read from (GGUF metadata or a Hugging Face config.json; see loader/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/kv_storage.h"
#include "base/status.h"
#include "kernels/ops.h"

namespace pagoda::model {

// The bounds of the hyper-parameters: anything outside is treated as corrupt (no real model comes
// near them; they also keep later size arithmetic far from overflow). This is their one owner:
// validate_config checks a whole config against them, the file readers (loader/: GGUF metadata,
// config.json) check each value against the same limits as they read it, naming their own key,
// and the GGUF format layer checks only types and lengths.
struct ConfigLimits {
  // Counts, each in [1, max].
  static constexpr int64_t kMaxLayers = 1024;     // block_count / num_hidden_layers
  static constexpr int64_t kMaxHidden = 1 << 17;  // embedding_length / hidden_size
  static constexpr int64_t kMaxHeads = 1024;      // query and KV heads
  static constexpr int64_t kMaxHeadDim = 1024;    // key_length / value_length / head_dim
  static constexpr int64_t kMaxFfn = 1 << 20;     // feed_forward_length / intermediate_size
  static constexpr int64_t kMaxVocab = 1 << 22;
  static constexpr int64_t kMaxContext = 1 << 24;  // also YaRN's / Llama-3's original context
  static constexpr int64_t kMaxExperts = 1024;     // experts, and experts used per token
  // RoPE base frequency: (0, kMaxRopeTheta]. Every scaling number (the linear / YaRN / Llama-3
  // factor, YaRN's attention factor and betas): (0, kMaxRopeScaling].
  static constexpr double kMaxRopeTheta = 1e12;
  static constexpr double kMaxRopeScaling = 1e6;
  // RMS norm epsilon: [0, kMaxRmsNormEps].
  static constexpr double kMaxRmsNormEps = 1.0;
  // Soft-capping values and the embedding scale: (0, kMaxScale] (0 for a cap: none).
  static constexpr double kMaxScale = 1e6;
};

// The FFN's gated activation: SwiGLU (silu) or GeGLU (tanh-form gelu, Gemma).
enum class FfnActivation { kSilu, kGeluTanh };

// Which layers attend through the sliding window (ModelConfig::sliding_window).
enum class SlidingLayers {
  kNone,  // none: the window, if the file names one, is not used (llama, qwen2)
  kAll,   // every layer (phi3, as llama.cpp runs it)
  kEven,  // layers 0, 2, 4, ... (Gemma 2: local and global layers alternate)
  // Every layer but each sliding_pattern-th: layer l is local when (l + 1) % sliding_pattern
  // != 0 (Gemma 3: 5 local layers, then a global one).
  kPattern,
};

struct ModelConfig {
  std::string arch;  // "llama", "qwen2"
  std::string name;  // general.name, for display
  int32_t num_layers = 0;
  // A pipeline stage (stage_layers) holds the model's layers [first_layer, first_layer +
  // num_layers) of total_layers; the whole model: 0 and 0 (then model_layers() == num_layers).
  // layer_window() and the sliding-window queries below take the model's layer index.
  int32_t first_layer = 0;
  int32_t total_layers = 0;
  int32_t hidden_dim = 0;  // embedding_length
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;  // key_length (usually hidden_dim / num_heads)
  int32_t ffn_dim = 0;   // feed_forward_length (per expert for MoE)
  int32_t vocab_size = 0;
  int32_t context_length = 0;
  float rms_norm_eps = 1e-5f;

  // RoPE
  kernels::RopeStyle rope_style = kernels::RopeStyle::kInterleaved;
  int32_t rope_dims = 0;  // rotated dims per head
  float rope_theta = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / linear or YaRN scaling factor
  // YaRN (rope.scaling.type yarn; see kernels::RopeParams): ext_factor 1 turns it on.
  float rope_ext_factor = 0.0f;
  // rope.scaling.attn_factor: cos/sin are scaled by it under every scaling type, as llama.cpp
  // does (LongRoPE's attention factor; YaRN's multiplies its 1 + 0.1 ln(factor)).
  float rope_attn_factor = 1.0f;
  // rope.scaling.original_context_length (0: context_length): the context the model was trained
  // on before it was extended. YaRN's ramp is over it; a LongRoPE model (rope_factors_long /
  // short tensors) uses its long table when the served context exceeds it
  // (use_long_rope_factors).
  int32_t rope_orig_ctx = 0;
  float rope_yarn_beta_fast = 32.0f;  // rope.scaling.yarn_beta_fast
  float rope_yarn_beta_slow = 1.0f;   // rope.scaling.yarn_beta_slow
  // DeepSeek's YaRN (deepseek2 only): rope.scaling.yarn_log_multiplier, as llama.cpp's converter
  // writes it (0.1 x HF's mscale_all_dim). With rope_yarn_scale_scores (set by the arch) the
  // magnitude correction leaves cos/sin (unscaled) for the attention scores: attn_scale is
  // mscale^2 / sqrt(head_dim), mscale = attn_factor (1 + log_mul ln(factor)).
  float rope_yarn_log_mul = 0.0f;
  bool rope_yarn_scale_scores = false;
  // The RoPE base of the sliding-window layers when it differs from rope_theta (Gemma 3's
  // rope_local_base_freq; 0: rope_theta). Those layers take no rope scaling.
  float rope_local_theta = 0.0f;

  // Mixture of experts (0 = dense)
  int32_t num_experts = 0;
  int32_t num_experts_used = 0;

  // DeepSeek: the first leading_dense_layers layers have a dense FFN (ffn_dim), the others
  // experts; expert_shared_count shared experts stored fused as one FFN (its width becomes
  // shared_expert_ffn_dim); expert_gating 1: softmax router, 2: sigmoid (0: unset, softmax).
  int32_t leading_dense_layers = 0;
  // Further layers with a dense FFN among MoE ones, sorted (Qwen-MoE's mlp_only_layers and
  // decoder_sparse_step; GGUF cannot state them).
  std::vector<int32_t> dense_layers;
  int32_t expert_shared_count = 0;
  int32_t expert_gating = 0;
  // Experts' FFN width when it differs from ffn_dim (expert_feed_forward_length; 0: ffn_dim).
  int32_t expert_ffn_dim = 0;
  // A shared expert run on every token (expert_shared_feed_forward_length; 0: none). Gated: its
  // output is multiplied by sigmoid(ffn_gate_inp_shexp . x) (qwen2moe).
  int32_t shared_expert_ffn_dim = 0;
  bool shared_expert_gated = false;
  // Routing weights: renormalised over the chosen experts (Mixtral) or the raw softmax
  // probabilities (qwen2moe), then multiplied by moe_weights_scale.
  bool moe_norm_weights = true;
  std::optional<bool> expert_weights_norm;  // the file's expert_weights_norm, when it has one
  float moe_weights_scale = 1.0f;
  // Sigmoid routing (expert_gating 2, DeepSeek-V3): experts are chosen by probability plus the
  // layer's exp_probs_b bias (the weights stay the probabilities), within the expert_groups_used
  // best of expert_groups groups (a group's score: the sum of its two best biased scores).
  int32_t expert_groups = 1;
  int32_t expert_groups_used = 1;

  // Multi-head latent attention (deepseek2; kv_lora_rank > 0): q from a rank-q_lora_rank
  // compression (0: one attn_q matrix), K/V from a kv_lora_rank latent plus one rope key of
  // rope_dims shared by the heads; per head the key is head_dim = (head_dim - rope_dims) no-rope
  // dims + rope_dims, the value v_head_dim (0: head_dim) wide.
  int32_t q_lora_rank = 0;
  int32_t kv_lora_rank = 0;
  int32_t v_head_dim = 0;

  bool has_qkv_bias = false;
  bool tied_embeddings = false;  // output projection reuses token_embd
  bool fused_qkv = false;        // one attn_qkv matrix: q rows, then k, then v (phi3)
  bool fused_gate_up = false;    // ffn_up holds the gate rows, then the up rows (phi3)
  bool qk_norm = false;          // attn_q_norm / attn_k_norm [head_dim]: per-head RMSNorm (qwen3)
  FfnActivation ffn_activation = FfnActivation::kSilu;
  float embedding_scale = 1.0f;  // the input embedding is multiplied by it (Gemma: sqrt(hidden))
  bool post_norms = false;  // RMSNorm after attention and after the FFN, before each residual add
  float attn_scale = 0;     // attention score scale (0: 1 / sqrt(head_dim))
  float attn_softcap = 0;   // attention scores s -> c tanh(s / c) (attn_logit_softcapping; 0: none)
  float final_softcap = 0;  // logits l -> c tanh(l / c) (final_logit_softcapping; 0: none)
  int32_t sliding_window = 0;  // attention.sliding_window (0: none), on sliding_layers
  SlidingLayers sliding_layers = SlidingLayers::kNone;
  int32_t sliding_pattern = 0;  // SlidingLayers::kPattern's period
  // Encoders (BERT, nomic-bert; model/encoder.h): bidirectional attention within each sequence
  // (computed whole in one step), absolute position (bert) or rotary (nomic-bert: rope_style,
  // rope_theta) positions and token-type embeddings, post-LayerNorm blocks with layer_norm_eps
  // (attention.layer_norm_epsilon), GELU (bert) or SwiGLU (nomic-bert); no LM head. pooling_type is
  // the file's {arch}.pooling_type (0 none, 1 mean, 2 cls).
  bool encoder = false;
  float layer_norm_eps = 1e-12f;
  int32_t pooling_type = 0;
  // Encoders with a classifier head (cls.output.weight [num_labels, hidden]): its outputs, set
  // when the weights are bound; 0: none. pooling_type 4 (rank) runs it on the [CLS] row.
  int32_t num_labels = 0;

  // The attention window of layer `layer` (0: the whole causal context).
  int32_t layer_window(int32_t layer) const {
    switch (sliding_layers) {
      case SlidingLayers::kAll:
        return sliding_window;
      case SlidingLayers::kEven:
        return layer % 2 == 0 ? sliding_window : 0;
      case SlidingLayers::kPattern:
        return sliding_pattern > 0 && (layer + 1) % sliding_pattern != 0 ? sliding_window : 0;
      default:
        return 0;
    }
  }
  int32_t model_layers() const { return total_layers > 0 ? total_layers : num_layers; }
  // The window every layer of the model attends through (the paged cache may release blocks
  // behind it), or 0 when some layer sees the whole causal context.
  int32_t uniform_sliding_window() const {
    int32_t w = 0;
    for (int32_t l = 0; l < model_layers(); ++l) {
      const int32_t lw = layer_window(l);
      if (lw == 0) return 0;
      w = std::max(w, lw);
    }
    return w;
  }
  // Hybrid models (Gemma 2/3): the window of the local layers when some of the model's layers
  // attend through it and others the whole causal context, else 0. The paged cache then keeps
  // two layer groups (KV group 0: full attention, 1: the window; kv_group()).
  int32_t hybrid_sliding_window() const {
    bool full = false;
    int32_t w = 0;
    for (int32_t l = 0; l < model_layers(); ++l) {
      const int32_t lw = layer_window(l);
      full = full || lw == 0;
      w = std::max(w, lw);
    }
    return full ? w : 0;
  }
  // The KV group of this config's layer `layer` (0-based within num_layers): 1 for a local layer
  // of a hybrid model, else 0.
  int32_t kv_group(int32_t layer) const {
    return hybrid_sliding_window() > 0 && layer_window(first_layer + layer) > 0 ? 1 : 0;
  }
  int32_t expert_ffn() const { return expert_ffn_dim > 0 ? expert_ffn_dim : ffn_dim; }
  int32_t value_dim() const { return v_head_dim > 0 ? v_head_dim : head_dim; }
  bool mla() const { return kv_lora_rank > 0; }
  bool layer_has_experts(int32_t layer) const {
    if (num_experts == 0 || layer < leading_dense_layers) return false;
    for (int32_t d : dense_layers) {
      if (d == layer) return false;
    }
    return true;
  }

  int32_t q_dim() const { return num_heads * head_dim; }
  int32_t kv_dim() const { return num_kv_heads * head_dim; }
  int32_t gqa_group() const { return num_heads / num_kv_heads; }
};

// YaRN: the scaled context (original context x factor) is usable, as vLLM derives max_model_len
// (llama.cpp accepts a larger -c): context_length grows to it when that is larger (and in bounds).
void extend_yarn_context(ModelConfig& config, double factor);

// LongRoPE: whether a model serving sequences of up to `served_context` tokens rotates by its long
// factor table, as llama.cpp chooses (its context per sequence beyond rope_orig_ctx; with
// rope_orig_ctx 0, never). transformers chooses per forward pass by the longest position, vLLM
// per batch; one choice per served context keeps every sequence's cached keys consistent.
bool use_long_rope_factors(const ModelConfig& config, int32_t served_context);

// Checks every field against ConfigLimits and the cross-field consistency (divisibility, rope
// dims within the head, experts used within the experts). Errors name the field.
Status validate_config(const ModelConfig& config);

// What the KV cache holds per block for a model of this config (backend::KvStorage): K and V
// rows of num_kv_heads x head_dim, or for MLA one row per token of rope_dims + kv_lora_rank (the
// rope key and the latent, read as keys and values: model/blocks/mla_attention_block.h).
//
// `kv_groups` (hybrid models whose steps carry a table per KV group: SequenceSlice::
// sliding_block_table): the layers of the two groups share arrays (layer l uses array "index of
// l among its group's layers"), so a block costs max(group sizes) layers' bytes, and a block id,
// which belongs to one group at a time, names the same bytes in every layer of that group (vLLM's
// hybrid allocator layout). Ignored for other models.
backend::KvLayout kv_layout(const ModelConfig& c, bool kv_groups = false);

// KV bytes per token of the equivalent multi-head attention model, whose cache holds every
// head's key (head_dim) and value (value_dim) in every layer, in `dtype` (f32 4, f16/bf16 2,
// q8_0 34/32 bytes per value): what MLA's latent cache is compared with. 0 for other dtypes.
double mha_kv_bytes_per_token(const ModelConfig& c, tensor::DType dtype);

}  // namespace pagoda::model
