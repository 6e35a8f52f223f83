#include "model/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <string>

#include "backend/parallel/communicator.h"
#include "backend/parallel/sharded_backend.h"
#include "base/log.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kernels/team.h"
#include "model/micro_batch.h"
#include "model/tensor_shard.h"

namespace pagoda::model {
namespace {
enum Slot { kX = 0, kH, kOut, kFinal, kLogitShard, kLogitGather, kMicroLogits };
// Pipeline stages: the hidden states travel stage to stage, the logits from the last to rank 0.
constexpr int kTagHidden = 1, kTagLogits = 2;

std::string blk(int32_t i, const char* name) {
  return "blk." + std::to_string(i) + "." + name;
}

// Experts stacked in one tensor (blk.N.ffn_gate_exps.weight), or one matrix per expert
// (blk.N.ffn_gate.E.weight) as older llama.cpp files and Hugging Face Mixtral checkpoints
// (loader/hf) have them.
Result<std::vector<kernels::WeightView>> bind_experts(const WeightBinder& b, int32_t layer,
                                                      const std::string& base, int32_t num,
                                                      int64_t rows, int64_t cols) {
  const std::string stacked = blk(layer, (base + "_exps.weight").c_str());
  if (b.has(stacked) || !b.has(blk(layer, (base + ".0.weight").c_str()))) {
    return b.matrices(stacked, num, rows, cols);
  }
  std::vector<kernels::WeightView> out;
  for (int32_t e = 0; e < num; ++e) {
    const std::string name = blk(layer, (base + "." + std::to_string(e) + ".weight").c_str());
    PAGODA_ASSIGN_OR_RETURN(kernels::WeightView w, b.matrix(name, rows, cols));
    out.push_back(w);
  }
  return out;
}

using kernels::row_slice;  // rows [r0, r0 + n) of w: a matrix of its own

Result<MlaWeights> bind_mla(const ModelConfig& c, const WeightBinder& b, int32_t i) {
  const int64_t hidden = c.hidden_dim, heads = c.num_heads, hd = c.head_dim;
  const int64_t lora = c.kv_lora_rank, rope = c.rope_dims, vd = c.value_dim();
  MlaWeights m;
  if (c.q_lora_rank > 0) {
    PAGODA_ASSIGN_OR_RETURN(m.wq_a, b.matrix(blk(i, "attn_q_a.weight"), c.q_lora_rank, hidden));
    PAGODA_ASSIGN_OR_RETURN(m.q_a_norm, b.vector(blk(i, "attn_q_a_norm.weight"), c.q_lora_rank));
    PAGODA_ASSIGN_OR_RETURN(m.wq_b, b.matrix(blk(i, "attn_q_b.weight"), heads * hd, c.q_lora_rank));
  } else {
    PAGODA_ASSIGN_OR_RETURN(m.wq, b.matrix(blk(i, "attn_q.weight"), heads * hd, hidden));
  }
  PAGODA_ASSIGN_OR_RETURN(m.wkv_a, b.matrix(blk(i, "attn_kv_a_mqa.weight"), lora + rope, hidden));
  PAGODA_ASSIGN_OR_RETURN(m.kv_a_norm, b.vector(blk(i, "attn_kv_a_norm.weight"), lora));
  PAGODA_ASSIGN_OR_RETURN(const kernels::WeightView wkv_b,
                          b.matrix(blk(i, "attn_kv_b.weight"), heads * (hd - rope + vd), lora));
  absorb_kv_b(c, wkv_b, m);  // (the forward pass reads its f32 per-head copies only)
  PAGODA_ASSIGN_OR_RETURN(m.wo, b.matrix(blk(i, "attn_output.weight"), hidden, heads * vd));
  return m;
}

Status bind_attention(const ModelConfig& c, const WeightBinder& b, int32_t i, AttentionWeights& a) {
  const int64_t hidden = c.hidden_dim, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  if (c.fused_qkv) {
    PAGODA_ASSIGN_OR_RETURN(kernels::WeightView qkv,
                            b.matrix(blk(i, "attn_qkv.weight"), q_dim + 2 * kv_dim, hidden));
    a.wq = row_slice(qkv, 0, q_dim);
    a.wk = row_slice(qkv, q_dim, kv_dim);
    a.wv = row_slice(qkv, q_dim + kv_dim, kv_dim);
  } else {
    PAGODA_ASSIGN_OR_RETURN(a.wq, b.matrix(blk(i, "attn_q.weight"), q_dim, hidden));
    PAGODA_ASSIGN_OR_RETURN(a.wk, b.matrix(blk(i, "attn_k.weight"), kv_dim, hidden));
    PAGODA_ASSIGN_OR_RETURN(a.wv, b.matrix(blk(i, "attn_v.weight"), kv_dim, hidden));
  }
  PAGODA_ASSIGN_OR_RETURN(a.wo, b.matrix(blk(i, "attn_output.weight"), hidden, q_dim));
  if (c.has_qkv_bias) {
    PAGODA_ASSIGN_OR_RETURN(a.bq, b.vector(blk(i, "attn_q.bias"), q_dim));
    PAGODA_ASSIGN_OR_RETURN(a.bk, b.vector(blk(i, "attn_k.bias"), kv_dim));
    PAGODA_ASSIGN_OR_RETURN(a.bv, b.vector(blk(i, "attn_v.bias"), kv_dim));
  }
  if (c.qk_norm) {
    PAGODA_ASSIGN_OR_RETURN(a.q_norm, b.vector(blk(i, "attn_q_norm.weight"), c.head_dim));
    PAGODA_ASSIGN_OR_RETURN(a.k_norm, b.vector(blk(i, "attn_k_norm.weight"), c.head_dim));
  }
  a.window = c.layer_window(i);
  return Status();
}

// A dense gated FFN named blk.N.{ffn_gate,ffn_up,ffn_down}{suffix}.weight of width ffn (gate
// and up fused in ffn_up when config.fused_gate_up).
Result<FfnWeights> bind_ffn(const ModelConfig& c, const WeightBinder& b, int32_t i, int64_t ffn,
                            const std::string& suffix) {
  const int64_t hidden = c.hidden_dim;
  FfnWeights f;
  f.activation = c.ffn_activation;
  if (c.fused_gate_up) {
    PAGODA_ASSIGN_OR_RETURN(
        kernels::WeightView gate_up,
        b.matrix(blk(i, ("ffn_up" + suffix + ".weight").c_str()), 2 * ffn, hidden));
    f.gate = row_slice(gate_up, 0, ffn);
    f.up = row_slice(gate_up, ffn, ffn);
  } else {
    PAGODA_ASSIGN_OR_RETURN(
        f.gate, b.matrix(blk(i, ("ffn_gate" + suffix + ".weight").c_str()), ffn, hidden));
    PAGODA_ASSIGN_OR_RETURN(f.up,
                            b.matrix(blk(i, ("ffn_up" + suffix + ".weight").c_str()), ffn, hidden));
  }
  PAGODA_ASSIGN_OR_RETURN(f.down,
                          b.matrix(blk(i, ("ffn_down" + suffix + ".weight").c_str()), hidden, ffn));
  return f;
}

Result<MoeWeights> bind_moe(const ModelConfig& c, const WeightBinder& b, int32_t i) {
  const int64_t hidden = c.hidden_dim, ffn = c.expert_ffn();
  MoeWeights moe;
  moe.num_used = c.num_experts_used;
  moe.norm_weights = c.moe_norm_weights;
  moe.weights_scale = c.moe_weights_scale;
  moe.sigmoid = c.expert_gating == 2;
  moe.num_groups = c.expert_groups;
  moe.groups_used = c.expert_groups_used;
  if (b.has(blk(i, "exp_probs_b.bias"))) {  // DeepSeek-V3's selection bias
    PAGODA_ASSIGN_OR_RETURN(moe.selection_bias,
                            b.vector(blk(i, "exp_probs_b.bias"), c.num_experts));
  }
  PAGODA_ASSIGN_OR_RETURN(moe.router,
                          b.matrix(blk(i, "ffn_gate_inp.weight"), c.num_experts, hidden));
  PAGODA_ASSIGN_OR_RETURN(auto gates, bind_experts(b, i, "ffn_gate", c.num_experts, ffn, hidden));
  PAGODA_ASSIGN_OR_RETURN(auto ups, bind_experts(b, i, "ffn_up", c.num_experts, ffn, hidden));
  PAGODA_ASSIGN_OR_RETURN(auto downs, bind_experts(b, i, "ffn_down", c.num_experts, hidden, ffn));
  for (int32_t e = 0; e < c.num_experts; ++e) {
    const auto ue = static_cast<size_t>(e);
    moe.experts.push_back(FfnWeights{gates[ue], ups[ue], downs[ue], c.ffn_activation});
  }
  if (c.shared_expert_ffn_dim > 0) {
    PAGODA_ASSIGN_OR_RETURN(moe.shared, bind_ffn(c, b, i, c.shared_expert_ffn_dim, "_shexp"));
    if (c.shared_expert_gated) {
      PAGODA_ASSIGN_OR_RETURN(moe.shared_gate,
                              b.matrix(blk(i, "ffn_gate_inp_shexp.weight"), 1, hidden));
    }
  }
  return moe;
}
}  // namespace

Result<DecoderWeights> bind_decoder_weights(const ModelConfig& c, const WeightBinder& b) {
  DecoderWeights w;
  const int64_t hidden = c.hidden_dim;
  PAGODA_ASSIGN_OR_RETURN(w.token_embd, b.matrix("token_embd.weight", c.vocab_size, hidden));
  PAGODA_ASSIGN_OR_RETURN(w.output_norm, b.vector("output_norm.weight", hidden));
  if (c.tied_embeddings) {
    w.output = w.token_embd;
  } else {
    PAGODA_ASSIGN_OR_RETURN(w.output, b.matrix("output.weight", c.vocab_size, hidden));
  }
  // Per-pair RoPE divisors: Llama-3's rope_freqs, or LongRoPE's long and short tables.
  const auto factors = [&](const char* name) -> Result<std::vector<float>> {
    PAGODA_ASSIGN_OR_RETURN(std::vector<float> f, b.vector(name, c.rope_dims / 2));
    for (float v : f) {
      if (!(v > 0) || v > 1e6f) return invalid_argument("{} has factor {}", name, v);
    }
    return f;
  };
  const bool has_long = b.has("rope_factors_long.weight");
  const bool has_short = b.has("rope_factors_short.weight");
  if (has_long != has_short) {
    return invalid_argument(
        "LongRoPE needs both rope_factors_long.weight and "
        "rope_factors_short.weight; the model has only {}",
        has_long ? "the long one" : "the short one");
  }
  if (has_long && b.has("rope_freqs.weight")) {
    return invalid_argument(
        "rope_freqs.weight and LongRoPE's rope_factors_long/short.weight are both present");
  }
  if (b.has("rope_freqs.weight")) {
    PAGODA_ASSIGN_OR_RETURN(w.rope_freq_factors, factors("rope_freqs.weight"));
  }
  if (has_long) {
    PAGODA_ASSIGN_OR_RETURN(w.rope_factors_long, factors("rope_factors_long.weight"));
    PAGODA_ASSIGN_OR_RETURN(w.rope_factors_short, factors("rope_factors_short.weight"));
  }
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int32_t i = 0; i < c.num_layers; ++i) {
    DecoderLayer& L = w.layers[static_cast<size_t>(i)];
    PAGODA_ASSIGN_OR_RETURN(L.attn_norm, b.vector(blk(i, "attn_norm.weight"), hidden));
    if (c.mla()) {
      PAGODA_ASSIGN_OR_RETURN(L.mla, bind_mla(c, b, i));
    } else {
      PAGODA_RETURN_IF_ERROR(bind_attention(c, b, i, L.attn));
    }
    PAGODA_ASSIGN_OR_RETURN(L.ffn_norm, b.vector(blk(i, "ffn_norm.weight"), hidden));
    if (c.post_norms) {
      PAGODA_ASSIGN_OR_RETURN(L.post_attn_norm,
                              b.vector(blk(i, "post_attention_norm.weight"), hidden));
      PAGODA_ASSIGN_OR_RETURN(L.post_ffn_norm, b.vector(blk(i, "post_ffw_norm.weight"), hidden));
    }
    if (c.layer_has_experts(i)) {
      PAGODA_ASSIGN_OR_RETURN(L.moe, bind_moe(c, b, i));
    } else {
      PAGODA_ASSIGN_OR_RETURN(L.ffn, bind_ffn(c, b, i, c.ffn_dim, ""));
    }
  }
  return w;
}

DecoderModel::DecoderModel(ModelConfig config, DecoderWeights weights,
                           std::unique_ptr<TensorSource> source, backend::Backend& backend)
    : Model(std::move(config), backend), w_(std::move(weights)), source_(std::move(source)) {
  rope_.style = config_.rope_style;
  rope_.rot_dims = config_.rope_dims;
  rope_.theta_base = config_.rope_theta;
  rope_.freq_scale = config_.rope_freq_scale;
  rope_.freq_factors = w_.rope_freq_factors;
  rope_.ext_factor = config_.rope_ext_factor;
  rope_.attn_factor = config_.rope_attn_factor;
  if (config_.rope_yarn_scale_scores) {
    // DeepSeek's YaRN: unscaled cos/sin (this cancels the kernel's 1 + 0.1 ln(factor)); the
    // magnitude correction is in attn_scale (arch/deepseek2.cc).
    rope_.attn_factor = 1.0f / (1.0f + 0.1f * std::log(1.0f / config_.rope_freq_scale));
  }
  if (config_.rope_ext_factor != 0.0f) {
    rope_.corr_dims =
        kernels::rope_yarn_corr_dims(config_.rope_dims, config_.rope_orig_ctx, config_.rope_theta,
                                     config_.rope_yarn_beta_fast, config_.rope_yarn_beta_slow);
  }
  if (config_.rope_local_theta > 0) {
    // The sliding-window layers' own base, unscaled (Gemma 3's rope_local_base_freq).
    rope_local_.style = config_.rope_style;
    rope_local_.rot_dims = config_.rope_dims;
    rope_local_.theta_base = config_.rope_local_theta;
  }
  choose_rope_table(config_.context_length);
  place_weights();
}

bool DecoderModel::choose_rope_table(int32_t served_context) {
  const bool long_table = use_long_rope_factors(config_, served_context);
  if (!w_.rope_factors_long.empty()) {
    rope_.freq_factors = long_table ? w_.rope_factors_long : w_.rope_factors_short;
  }
  return long_table;
}

void DecoderModel::set_served_context(int32_t tokens) {
  const bool long_table = choose_rope_table(tokens);
  if (!w_.rope_factors_long.empty()) {
    PAGODA_LOG_INFO("LongRoPE: the {} factors (serving {} tokens, original context {})",
                    long_table ? "long" : "short", tokens, config_.rope_orig_ctx);
  }
}

DecoderModel::DecoderModel(ModelConfig config, DecoderWeights weights,
                           std::unique_ptr<TensorSource> source, backend::Backend& backend,
                           TensorShard shard)
    : DecoderModel(std::move(config), std::move(weights), std::move(source), backend) {
  tp_ = backend.tensor_parallel();
  pp_ = backend.pipeline_parallel();  // (tensor x pipeline: a shard of one stage)
  shard_ = std::make_unique<TensorShard>(std::move(shard));
  PAGODA_CHECK(tp_.comm != nullptr && tp_.size == shard_->size && tp_.rank == shard_->rank);
}

DecoderModel::DecoderModel(ModelConfig config, DecoderWeights weights,
                           std::unique_ptr<TensorSource> source, backend::Backend& backend,
                           PipelineStage)
    : DecoderModel(std::move(config), std::move(weights), std::move(source), backend) {
  pp_ = backend.pipeline_parallel();
  PAGODA_CHECK(pp_.comm != nullptr && pp_.size > 1);
}

Result<ModelConfig> stage_layers(const ModelConfig& full, int32_t stage, int32_t num_stages,
                                 DecoderWeights& w) {
  if (num_stages < 1 || stage < 0 || stage >= num_stages) {
    return invalid_argument("pipeline stage {} of {} is out of range", stage, num_stages);
  }
  if (full.num_layers < num_stages) {
    return invalid_argument("{} layers cannot fill --pipeline-parallel-size {} stages",
                            full.num_layers, num_stages);
  }
  const int32_t base = full.num_layers / num_stages, extra = full.num_layers % num_stages;
  const int32_t first = stage * base + std::min(stage, extra);
  const int32_t count = base + (stage < extra ? 1 : 0);
  std::vector<DecoderLayer> mine(std::make_move_iterator(w.layers.begin() + first),
                                 std::make_move_iterator(w.layers.begin() + first + count));
  w.layers = std::move(mine);
  if (stage != num_stages - 1) w.output = kernels::WeightView{};  // (nothing loads it here)
  ModelConfig c = full;
  c.num_layers = count;
  c.first_layer = first;
  c.total_layers = full.num_layers;
  return c;
}

DecoderModel::~DecoderModel() = default;

uint64_t DecoderModel::weight_bytes() const {
  // The placed (packed) copies, and the shard's column slices where they still are the ones read
  // (their spill file's pages go once placed; heap copies stay). The token embedding stays in
  // the file mapping: only the rows looked up are resident (a shard's rows under TP).
  uint64_t n = weights_ ? weights_->size() : 0;
  for (const DecoderLayer& L : w_.layers) {
    if (L.mla) n += (L.mla->w_uk.size() + L.mla->w_uv_t.size()) * sizeof(float);
  }
  if (shard_) {
    for (const auto& b : shard_->owned)
      n += b.size();
    if (!weights_) n += shard_->spill.size();
  }
  return n;
}

void DecoderModel::all_reduce(float* data, int64_t n) {
  if (tp_.size <= 1) return;
  kernels::team_first([&] { tp_.comm->all_reduce_sum(data, static_cast<size_t>(n)); });
}

void DecoderModel::output_logits(const float* final_rows, int64_t R, float* logits) {
  if (tp_.size <= 1) {
    kernels::matmul(w_.output, final_rows, R, logits);
    return;
  }
  // Each shard's rows of the vocabulary, padded to vocab_stride, gathered in rank order.
  const int64_t stride = shard_->vocab_stride, count = shard_->vocab_count;
  const int64_t vocab = config_.vocab_size;
  float* mine = scratch_.get(kLogitShard, static_cast<size_t>(R * stride));
  float* all = scratch_.get(kLogitGather, static_cast<size_t>(R * stride * tp_.size));
  kernels::matmul(w_.output, final_rows, R, mine);
  kernels::team_first([&] {
    if (count < stride) {
      // The shard's matmul wrote [R, count]: spread it to [R, stride] rows (last row first),
      // padding with zeros.
      for (int64_t r = R - 1; r >= 0; --r) {
        std::memmove(mine + r * stride, mine + r * count, static_cast<size_t>(count) * 4);
        std::memset(mine + r * stride + count, 0, static_cast<size_t>(stride - count) * 4);
      }
    }
    tp_.comm->all_gather(mine, static_cast<size_t>(R * stride) * sizeof(float), all);
    for (int32_t k = 0; k < tp_.size; ++k) {
      const int64_t v0 = int64_t{k} * stride;
      const int64_t n = std::min(stride, vocab - v0);
      for (int64_t r = 0; n > 0 && r < R; ++r) {
        std::memcpy(logits + r * vocab + v0, all + (int64_t{k} * R + r) * stride,
                    static_cast<size_t>(n) * sizeof(float));
      }
    }
  });
}

void DecoderModel::place_weights() {
  // Every matmul weight, in the order the forward pass reads them.
  std::vector<kernels::WeightView*> views;
  for (DecoderLayer& L : w_.layers) {
    for (kernels::WeightView* w :
         {&L.attn.wq, &L.attn.wk, &L.attn.wv, &L.attn.wo, &L.ffn.gate, &L.ffn.up, &L.ffn.down})
      views.push_back(w);
    if (L.mla) {
      for (kernels::WeightView* w :
           {&L.mla->wq_a, &L.mla->wq_b, &L.mla->wq, &L.mla->wkv_a, &L.mla->wo})
        views.push_back(w);
    }
    if (L.moe) {
      views.push_back(&L.moe->router);
      for (FfnWeights& e : L.moe->experts) {
        views.push_back(&e.gate);
        views.push_back(&e.up);
        views.push_back(&e.down);
      }
      if (L.moe->shared) {
        for (kernels::WeightView* w :
             {&L.moe->shared->gate, &L.moe->shared->up, &L.moe->shared->down, &L.moe->shared_gate})
          views.push_back(w);
      }
    }
  }
  views.push_back(&w_.output);
  weights_ = backend_.place_weights(views);
}

void DecoderModel::forward_impl(const ForwardBatch& batch,
                                std::span<const kernels::KvLayerView> kv_layers, float* logits) {
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t R = static_cast<int64_t>(batch.logit_rows.size());
  const int64_t hidden = c.hidden_dim;
  scratch_.reserve(kX, static_cast<size_t>(T * hidden));
  scratch_.reserve(kH, static_cast<size_t>(T * hidden));
  scratch_.reserve(kOut, static_cast<size_t>(T * hidden));
  scratch_.reserve(kFinal, static_cast<size_t>(R * hidden));
  if (shard_) {
    const auto stride = static_cast<size_t>(shard_->vocab_stride);
    scratch_.reserve(kLogitShard, static_cast<size_t>(R) * stride);
    scratch_.reserve(kLogitGather, static_cast<size_t>(R) * stride * static_cast<size_t>(tp_.size));
  }
  if (c.mla()) {
    reserve_mla_scratch(c, T, scratch_);
  } else {
    reserve_attention_scratch(c, T, scratch_);
  }
  for (const DecoderLayer& L : w_.layers) {
    if (L.moe) {
      reserve_moe_scratch(*L.moe, T, scratch_);
    } else {
      reserve_ffn_scratch(L.ffn, T, scratch_);
    }
  }
  if (pp_.size > 1 && batch.hidden_rows.empty()) {
    forward_pipeline(batch, kv_layers, logits);
    return;
  }
  lora_.build(batch);  // before its scratch: the sizes come from the batch's adapter rows
  lora_.reserve_scratch(lora_max_dim(), scratch_);
  // The whole pass on the backend (the CPU's: every thread of the kernels' team runs this body
  // and each op splits its work across them, with no fork/join between ops).
  backend_.execute([&] { forward_on_team(batch, kv_layers, logits); });
  if (pp_.size > 1) transfer_logits(R, logits);
}

int64_t DecoderModel::lora_max_dim() const {
  const ModelConfig& c = config_;
  return std::max<int64_t>({c.hidden_dim, c.q_dim(), c.kv_dim(), c.ffn_dim});
}

void DecoderModel::forward_pipeline(const ForwardBatch& batch,
                                    std::span<const kernels::KvLayerView> kv_layers,
                                    float* logits) {
  // One micro-batch per stage: stage s runs micro-batch i while stage s-1 runs i+1 (each send
  // completes when the next stage takes it). Every stage cuts the same batch the same way.
  const std::vector<MicroBatch> parts = split_micro_batches(batch, pp_.size);
  const bool last_stage = pp_.stage == pp_.size - 1;
  const auto vocab = static_cast<size_t>(config_.vocab_size);
  size_t max_rows = 0;
  for (const MicroBatch& mb : parts)
    max_rows = std::max(max_rows, mb.logit_rows.size());
  scratch_.reserve(kMicroLogits, max_rows * vocab);
  float* part_logits = scratch_.get(kMicroLogits, max_rows * vocab);
  for (const MicroBatch& mb : parts) {
    lora_.build(mb.batch);
    lora_.reserve_scratch(lora_max_dim(), scratch_);
    backend_.execute([&] { forward_on_team(mb.batch, kv_layers, part_logits); });
    if (!last_stage) continue;
    for (size_t j = 0; j < mb.logit_rows.size(); ++j) {
      std::memcpy(logits + static_cast<size_t>(mb.logit_outputs[j]) * vocab,
                  part_logits + j * vocab, vocab * sizeof(float));
    }
  }
  // After every micro-batch: the last stage has every logit row (one message, so it never waits
  // on rank 0 while rank 0 still sends it hidden states).
  transfer_logits(static_cast<int64_t>(batch.logit_rows.size()), logits);
}

void DecoderModel::transfer_logits(int64_t R, float* logits) {
  if (R == 0 || backend::parallel::stage_shard(pp_) != 0)
    return;  // (shard 0 of the last stage: the whole rows)
  const auto bytes = static_cast<size_t>(R * config_.vocab_size) * sizeof(float);
  if (pp_.stage == pp_.size - 1) {
    pp_.comm->send(logits, bytes, 0, kTagLogits);
  } else if (pp_.stage == 0) {
    pp_.comm->recv(logits, bytes, backend::parallel::stage_peer(pp_, pp_.size - 1), kTagLogits);
  }
}

void DecoderModel::forward_on_team(const ForwardBatch& batch,
                                   std::span<const kernels::KvLayerView> kv_layers, float* logits) {
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t hidden = c.hidden_dim;
  float* x = scratch_.get(kX, static_cast<size_t>(T * hidden));
  float* h = scratch_.get(kH, static_cast<size_t>(T * hidden));
  float* out = scratch_.get(kOut, static_cast<size_t>(T * hidden));

  // Pipeline stages: the hidden states travel stage to stage (the logits: transfer_logits).
  const bool first_stage = pp_.stage == 0, last_stage = pp_.stage == pp_.size - 1;
  const auto hidden_bytes = static_cast<size_t>(T * hidden) * sizeof(float);
  if (!first_stage) {
    kernels::team_first([&] {
      pp_.comm->recv(x, hidden_bytes, backend::parallel::stage_peer(pp_, pp_.stage - 1),
                     kTagHidden);
    });
  }
  if (first_stage) {
    // Under tensor parallelism each shard reads only its vocabulary rows of the embedding (the
    // output head's rows: the file pages of the others are never touched) and zeros for the
    // other tokens; one all-reduce completes every row (x + 0 is exact).
    const int64_t v0 = shard_ ? shard_->vocab_begin : 0;
    const int64_t v1 = shard_ ? v0 + shard_->vocab_count : c.vocab_size;
    kernels::team_first([&] {
      for (int64_t t = 0; t < T; ++t) {
        const int32_t token = batch.tokens[static_cast<size_t>(t)];
        if (token < v0 || token >= v1) {
          std::memset(x + t * hidden, 0, static_cast<size_t>(hidden) * sizeof(float));
          continue;
        }
        kernels::dequantize_row(w_.token_embd.dtype, w_.token_embd.row(token), x + t * hidden,
                                hidden);
      }
      if (c.embedding_scale != 1.0f) {
        for (int64_t i = 0; i < T * hidden; ++i)
          x[i] *= c.embedding_scale;
      }
    });
    all_reduce(x, T * hidden);
  }
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const DecoderLayer& L = w_.layers[static_cast<size_t>(l)];
    const LoraLayer lora{&lora_, l};
    kernels::rms_norm(x, L.attn_norm.data(), T, hidden, c.rms_norm_eps, h);
    if (L.mla) {
      mla_attention_block(c, *L.mla, rope_, batch, kv_layers[static_cast<size_t>(l)], h, out,
                          scratch_);
    } else {
      const bool local_rope = c.rope_local_theta > 0 && L.attn.window > 0;
      attention_block(c, L.attn, local_rope ? rope_local_ : rope_, batch,
                      kv_layers[static_cast<size_t>(l)], h, out, scratch_, lora);
    }
    all_reduce(out, T * hidden);  // row-parallel wo: the shards' partial sums
    if (!L.post_attn_norm.empty()) {
      kernels::rms_norm(out, L.post_attn_norm.data(), T, hidden, c.rms_norm_eps, out);
    }
    kernels::add_inplace(x, out, T * hidden);
    kernels::rms_norm(x, L.ffn_norm.data(), T, hidden, c.rms_norm_eps, h);
    if (L.moe) {
      moe_block(*L.moe, h, T, out, scratch_);
    } else {
      ffn_block(L.ffn, h, T, out, scratch_, lora);
    }
    all_reduce(out, T * hidden);  // row-parallel ffn_down
    if (!L.post_ffn_norm.empty()) {
      kernels::rms_norm(out, L.post_ffn_norm.data(), T, hidden, c.rms_norm_eps, out);
    }
    kernels::add_inplace(x, out, T * hidden);
  }
  const int64_t H = static_cast<int64_t>(batch.hidden_rows.size());
  if (H > 0) {
    kernels::team_first([&] {
      for (int64_t r = 0; r < H; ++r) {
        std::memcpy(batch.hidden + r * hidden,
                    x + batch.hidden_rows[static_cast<size_t>(r)] * hidden,
                    static_cast<size_t>(hidden) * sizeof(float));
      }
    });
    kernels::rms_norm(batch.hidden, w_.output_norm.data(), H, hidden, c.rms_norm_eps, batch.hidden);
  }
  const int64_t R = static_cast<int64_t>(batch.logit_rows.size());
  if (!last_stage) {
    kernels::team_first([&] {
      pp_.comm->send(x, hidden_bytes, backend::parallel::stage_peer(pp_, pp_.stage + 1),
                     kTagHidden);
    });
    return;
  }
  if (R == 0) return;
  float* final_rows = scratch_.get(kFinal, static_cast<size_t>(R * hidden));
  kernels::team_first([&] {
    for (int64_t r = 0; r < R; ++r) {
      std::memcpy(final_rows + r * hidden, x + batch.logit_rows[static_cast<size_t>(r)] * hidden,
                  static_cast<size_t>(hidden) * sizeof(float));
    }
  });
  kernels::rms_norm(final_rows, w_.output_norm.data(), R, hidden, c.rms_norm_eps, final_rows);
  output_logits(final_rows, R, logits);
  if (c.final_softcap > 0) kernels::softcap(logits, R * c.vocab_size, c.final_softcap);
}

}  // namespace pagoda::model
