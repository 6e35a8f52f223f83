// EncoderModel: the BERT family's post-LayerNorm encoder, in two GGUF layouts (EncoderKind):
// - `bert` (llama.cpp's BertModel layout): token + absolute position + token-type embeddings →
//   LayerNorm → N × [bidirectional self-attention (q/k/v/output with biases) → residual →
//   LayerNorm → GELU FFN (up/down with biases) → residual → LayerNorm];
// - `nomic-bert` (nomic-embed-text): no position embeddings; the same block with a fused
//   attn_qkv, RoPE (NeoX pairs, the whole head) on q and k, and a SwiGLU FFN
//   down(up(x) * silu(gate(x))); biases optional (the nomic-embed checkpoints have none).
// Attention runs over each sequence's own rows of the batch and
// bypasses the KV cache: an encoder's sequence is computed whole in one step (the engine turns
// chunked prefill and prefix caching off for encoders), so every token sees every other one and
// nothing is reused. No LM head: logit rows come back zero; the output is the hidden rows
// (ForwardBatch::hidden_rows) for pooling.
#pragma once

#include <memory>
#include <vector>

#include "model/model.h"
#include "model/tensor_source.h"
#include "model/weight_binding.h"

namespace pagoda::model {

enum class EncoderKind { kBert, kNomicBert };

struct EncoderLayer {
  kernels::WeightView wq, wk, wv, wo;  // [hidden, hidden] (bert)
  kernels::WeightView wqkv;            // [3 hidden, hidden]: q rows, k rows, v rows (nomic-bert)
  std::vector<float> bq, bk, bv, bo;   // [hidden] (nomic-bert: zeros when the file has none)
  std::vector<float> attn_norm_w, attn_norm_b;
  kernels::WeightView up, down;     // [ffn, hidden], [hidden, ffn]
  kernels::WeightView gate;         // [ffn, hidden] (nomic-bert's SwiGLU)
  std::vector<float> b_up, b_down;  // [ffn], [hidden]
  std::vector<float> out_norm_w, out_norm_b;
};

struct EncoderWeights {
  EncoderKind kind = EncoderKind::kBert;
  kernels::WeightView token_embd;     // [vocab, hidden]
  kernels::WeightView position_embd;  // [context_length, hidden] (bert only)
  kernels::WeightView token_types;    // [num_types, hidden]; type 0 is used
  std::vector<float> embd_norm_w, embd_norm_b;
  std::vector<EncoderLayer> layers;
  // The classifier head (cross-encoders; config.num_labels > 0): an optional pooler cls
  // [hidden, hidden] + tanh, then cls.output [num_labels, hidden], each with its bias.
  bool has_pooler = false;
  kernels::WeightView cls, cls_out;
  std::vector<float> cls_b, cls_out_b;
};

// Binds the GGUF bert names: token_embd, position_embd, token_types, token_embd_norm,
// blk.N.{attn_q,attn_k,attn_v,attn_output,attn_output_norm,ffn_up,ffn_down,layer_output_norm},
// and with config.num_labels > 0 the classifier (llama.cpp's names): cls.{weight,bias} (the
// pooler, optional) and cls.output.{weight,bias}. kNomicBert (llama.cpp's LLM_ARCH_NOMIC_BERT
// names): token_embd, token_types, token_embd_norm, blk.N.{attn_qkv,attn_output,
// attn_output_norm,ffn_up,ffn_gate,ffn_down,layer_output_norm}, no position_embd, each bias
// optional; no classifier.
Result<EncoderWeights> bind_encoder_weights(const ModelConfig& config, const WeightBinder& binder,
                                            EncoderKind kind = EncoderKind::kBert);

// The classifier's output count of a source: the rows of cls.output.weight, 0 without it.
// invalid_argument when it is not a [n, hidden] matrix with n in [1, 65536].
Result<int32_t> classifier_labels(const TensorSource& source, int32_t hidden);

class EncoderModel final : public Model {
 public:
  EncoderModel(ModelConfig config, EncoderWeights weights, std::unique_ptr<TensorSource> source,
               backend::Backend& backend)
      : Model(std::move(config), backend), w_(std::move(weights)), source_(std::move(source)) {}

  Status classify(const float* pooled, int64_t rows, float* scores) const override;

 private:
  // Precondition (the engine's encoder settings): every sequence slice starts at position 0.
  void forward_impl(const ForwardBatch& batch, std::span<const kernels::KvLayerView> kv_layers,
                    float* logits) override;

  EncoderWeights w_;
  std::unique_ptr<TensorSource> source_;  // keeps the weight memory alive
  std::vector<float> x_, q_, k_, v_, qkv_, attn_, tmp_, ffn_, gate_, scores_;
};

}  // namespace pagoda::model
