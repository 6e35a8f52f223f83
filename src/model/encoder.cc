#include "model/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "base/check.h"
#include "kernels/ops.h"
#include "kernels/quant.h"

namespace pagoda::model {
namespace {

std::string blk(int32_t i, const char* name) {
  return "blk." + std::to_string(i) + "." + name;
}

// y = LayerNorm(x) * w + b, per row, in place.
void layer_norm(float* x, int64_t rows, int64_t dim, const std::vector<float>& w,
                const std::vector<float>& b, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * dim;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < dim; ++i)
      mean += row[i];
    mean /= static_cast<double>(dim);
    for (int64_t i = 0; i < dim; ++i)
      var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(dim);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < dim; ++i) {
      const auto u = static_cast<size_t>(i);
      row[i] = static_cast<float>((row[i] - mean) * inv) * w[u] + b[u];
    }
  }
}

Status bind_pair(const WeightBinder& b, const std::string& base, int64_t n, std::vector<float>& w,
                 std::vector<float>& bias) {
  PAGODA_ASSIGN_OR_RETURN(w, b.vector(base + ".weight", n));
  PAGODA_ASSIGN_OR_RETURN(bias, b.vector(base + ".bias", n));
  return Status();
}

// The bias `name` of n values, or n zeros when the file has none (nomic-bert's are optional).
Result<std::vector<float>> optional_bias(const WeightBinder& b, const std::string& name,
                                         int64_t n) {
  if (!b.has(name)) return std::vector<float>(static_cast<size_t>(n), 0.0f);
  return b.vector(name, n);
}

// nomic-bert's layer: a fused attn_qkv, SwiGLU (ffn_gate), each bias optional.
Status bind_nomic_layer(const WeightBinder& b, int32_t i, int64_t hidden, int64_t ffn,
                        EncoderLayer& L) {
  PAGODA_ASSIGN_OR_RETURN(L.wqkv, b.matrix(blk(i, "attn_qkv.weight"), 3 * hidden, hidden));
  if (b.has(blk(i, "attn_qkv.bias"))) {
    PAGODA_ASSIGN_OR_RETURN(std::vector<float> bqkv, b.vector(blk(i, "attn_qkv.bias"), 3 * hidden));
    const auto h = static_cast<std::ptrdiff_t>(hidden);
    L.bq.assign(bqkv.begin(), bqkv.begin() + h);
    L.bk.assign(bqkv.begin() + h, bqkv.begin() + 2 * h);
    L.bv.assign(bqkv.begin() + 2 * h, bqkv.end());
  } else {
    L.bq.assign(static_cast<size_t>(hidden), 0.0f);
    L.bk = L.bq;
    L.bv = L.bq;
  }
  PAGODA_ASSIGN_OR_RETURN(L.wo, b.matrix(blk(i, "attn_output.weight"), hidden, hidden));
  PAGODA_ASSIGN_OR_RETURN(L.bo, optional_bias(b, blk(i, "attn_output.bias"), hidden));
  PAGODA_ASSIGN_OR_RETURN(L.up, b.matrix(blk(i, "ffn_up.weight"), ffn, hidden));
  PAGODA_ASSIGN_OR_RETURN(L.gate, b.matrix(blk(i, "ffn_gate.weight"), ffn, hidden));
  PAGODA_ASSIGN_OR_RETURN(L.down, b.matrix(blk(i, "ffn_down.weight"), hidden, ffn));
  PAGODA_ASSIGN_OR_RETURN(L.b_up, optional_bias(b, blk(i, "ffn_up.bias"), ffn));
  PAGODA_ASSIGN_OR_RETURN(L.b_down, optional_bias(b, blk(i, "ffn_down.bias"), hidden));
  return Status();
}

}  // namespace

Result<EncoderWeights> bind_encoder_weights(const ModelConfig& c, const WeightBinder& b,
                                            EncoderKind kind) {
  const int64_t hidden = c.hidden_dim, ffn = c.ffn_dim;
  if (c.num_heads * c.head_dim != hidden || c.num_kv_heads != c.num_heads) {
    return invalid_argument(
        "an encoder needs head_count * head_dim == embedding_length and no "
        "grouped KV heads ({} x {} vs {}, {} KV heads)",
        c.num_heads, c.head_dim, hidden, c.num_kv_heads);
  }
  EncoderWeights w;
  w.kind = kind;
  const bool nomic = kind == EncoderKind::kNomicBert;
  PAGODA_ASSIGN_OR_RETURN(w.token_embd, b.matrix("token_embd.weight", c.vocab_size, hidden));
  if (!nomic) {
    PAGODA_ASSIGN_OR_RETURN(w.position_embd,
                            b.matrix("position_embd.weight", c.context_length, hidden));
  } else if (b.has("position_embd.weight")) {
    return invalid_argument("nomic-bert has rotary positions, not position_embd.weight");
  }
  if (!b.has("token_types.weight")) return invalid_argument("token_types.weight is missing");
  PAGODA_ASSIGN_OR_RETURN(w.token_types, b.matrix("token_types.weight", 2, hidden));
  PAGODA_RETURN_IF_ERROR(bind_pair(b, "token_embd_norm", hidden, w.embd_norm_w, w.embd_norm_b));
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int32_t i = 0; i < c.num_layers; ++i) {
    EncoderLayer& L = w.layers[static_cast<size_t>(i)];
    PAGODA_RETURN_IF_ERROR(
        bind_pair(b, blk(i, "attn_output_norm"), hidden, L.attn_norm_w, L.attn_norm_b));
    PAGODA_RETURN_IF_ERROR(
        bind_pair(b, blk(i, "layer_output_norm"), hidden, L.out_norm_w, L.out_norm_b));
    if (nomic) {
      PAGODA_RETURN_IF_ERROR(bind_nomic_layer(b, i, hidden, ffn, L));
      continue;
    }
    PAGODA_ASSIGN_OR_RETURN(L.wq, b.matrix(blk(i, "attn_q.weight"), hidden, hidden));
    PAGODA_ASSIGN_OR_RETURN(L.wk, b.matrix(blk(i, "attn_k.weight"), hidden, hidden));
    PAGODA_ASSIGN_OR_RETURN(L.wv, b.matrix(blk(i, "attn_v.weight"), hidden, hidden));
    PAGODA_ASSIGN_OR_RETURN(L.wo, b.matrix(blk(i, "attn_output.weight"), hidden, hidden));
    PAGODA_ASSIGN_OR_RETURN(L.bq, b.vector(blk(i, "attn_q.bias"), hidden));
    PAGODA_ASSIGN_OR_RETURN(L.bk, b.vector(blk(i, "attn_k.bias"), hidden));
    PAGODA_ASSIGN_OR_RETURN(L.bv, b.vector(blk(i, "attn_v.bias"), hidden));
    PAGODA_ASSIGN_OR_RETURN(L.bo, b.vector(blk(i, "attn_output.bias"), hidden));
    PAGODA_ASSIGN_OR_RETURN(L.up, b.matrix(blk(i, "ffn_up.weight"), ffn, hidden));
    PAGODA_ASSIGN_OR_RETURN(L.down, b.matrix(blk(i, "ffn_down.weight"), hidden, ffn));
    PAGODA_ASSIGN_OR_RETURN(L.b_up, b.vector(blk(i, "ffn_up.bias"), ffn));
    PAGODA_ASSIGN_OR_RETURN(L.b_down, b.vector(blk(i, "ffn_down.bias"), hidden));
  }
  if (c.num_labels > 0) {
    if (nomic) return invalid_argument("nomic-bert with a classifier head is not supported");
    w.has_pooler = b.has("cls.weight");
    if (w.has_pooler) {
      PAGODA_ASSIGN_OR_RETURN(w.cls, b.matrix("cls.weight", hidden, hidden));
      PAGODA_ASSIGN_OR_RETURN(w.cls_b, b.vector("cls.bias", hidden));
    }
    PAGODA_ASSIGN_OR_RETURN(w.cls_out, b.matrix("cls.output.weight", c.num_labels, hidden));
    if (b.has("cls.output.bias")) {
      PAGODA_ASSIGN_OR_RETURN(w.cls_out_b, b.vector("cls.output.bias", c.num_labels));
    } else {
      w.cls_out_b.assign(static_cast<size_t>(c.num_labels), 0.0f);
    }
  }
  return w;
}

Result<int32_t> classifier_labels(const TensorSource& source, int32_t hidden) {
  const TensorRef* t = source.find("cls.output.weight");
  if (t == nullptr) return 0;
  const int64_t labels = t->dims[1];  // ggml dims {hidden, labels}
  if (t->n_dims != 2 || t->dims[0] != hidden || labels < 1 || labels > 65536) {
    return invalid_argument("cls.output.weight must be [labels, {}] with 1 to 65536 labels",
                            hidden);
  }
  return static_cast<int32_t>(labels);
}

Status EncoderModel::classify(const float* pooled, int64_t rows, float* scores) const {
  if (config_.num_labels <= 0) return Model::classify(pooled, rows, scores);
  const int64_t H = config_.hidden_dim;
  std::vector<float> t(static_cast<size_t>(rows * H));
  const float* in = pooled;
  if (w_.has_pooler) {
    kernels::matmul(w_.cls, pooled, rows, t.data(), w_.cls_b.data());
    for (float& v : t)
      v = std::tanh(v);
    in = t.data();
  }
  kernels::matmul(w_.cls_out, in, rows, scores, w_.cls_out_b.data());
  return Status();
}

void EncoderModel::forward_impl(const ForwardBatch& batch,
                                std::span<const kernels::KvLayerView> /*kv_layers*/,
                                float* logits) {
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const int64_t H = c.hidden_dim, F = c.ffn_dim, heads = c.num_heads, hd = c.head_dim;
  const auto n = static_cast<size_t>(T * H);
  x_.resize(n);
  q_.resize(n);
  k_.resize(n);
  v_.resize(n);
  attn_.resize(n);
  tmp_.resize(n);
  ffn_.resize(static_cast<size_t>(T * F));
  const bool nomic = w_.kind == EncoderKind::kNomicBert;
  if (nomic) {
    qkv_.resize(3 * n);
    gate_.resize(static_cast<size_t>(T * F));
  }
  kernels::RopeParams rope;
  rope.style = c.rope_style;
  rope.rot_dims = c.rope_dims;
  rope.theta_base = c.rope_theta;
  rope.freq_scale = c.rope_freq_scale;
  std::vector<float> row(static_cast<size_t>(H));
  for (int64_t t = 0; t < T; ++t) {
    const int32_t pos = batch.positions[static_cast<size_t>(t)];
    PAGODA_CHECK(pos >= 0 && pos < c.context_length);
    float* xt = x_.data() + t * H;
    kernels::dequantize_row(w_.token_embd.dtype,
                            w_.token_embd.row(batch.tokens[static_cast<size_t>(t)]), xt, H);
    if (!nomic) {  // nomic-bert: rotary positions (q and k, below)
      kernels::dequantize_row(w_.position_embd.dtype, w_.position_embd.row(pos), row.data(), H);
      for (int64_t i = 0; i < H; ++i)
        xt[i] += row[static_cast<size_t>(i)];
    }
    const int32_t type = batch.token_types.empty() ? 0 : batch.token_types[static_cast<size_t>(t)];
    kernels::dequantize_row(w_.token_types.dtype, w_.token_types.row(type), row.data(), H);
    for (int64_t i = 0; i < H; ++i)
      xt[i] += row[static_cast<size_t>(i)];
  }
  layer_norm(x_.data(), T, H, w_.embd_norm_w, w_.embd_norm_b, c.layer_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  for (const EncoderLayer& L : w_.layers) {
    if (nomic) {
      kernels::matmul(L.wqkv, x_.data(), T, qkv_.data());
      for (int64_t t = 0; t < T; ++t) {
        const float* src = qkv_.data() + t * 3 * H;
        for (int64_t i = 0; i < H; ++i) {
          const auto u = static_cast<size_t>(i);
          q_[static_cast<size_t>(t * H + i)] = src[i] + L.bq[u];
          k_[static_cast<size_t>(t * H + i)] = src[H + i] + L.bk[u];
          v_[static_cast<size_t>(t * H + i)] = src[2 * H + i] + L.bv[u];
        }
      }
      kernels::rope(q_.data(), T, heads, hd, batch.positions.data(), rope);
      kernels::rope(k_.data(), T, heads, hd, batch.positions.data(), rope);
    } else {
      kernels::matmul(L.wq, x_.data(), T, q_.data(), L.bq.data());
      kernels::matmul(L.wk, x_.data(), T, k_.data(), L.bk.data());
      kernels::matmul(L.wv, x_.data(), T, v_.data(), L.bv.data());
    }
    // Bidirectional attention within each sequence's rows.
    for (const SequenceSlice& s : batch.sequences) {
      PAGODA_CHECK(batch.positions[static_cast<size_t>(s.token_begin)] == 0);
      const int64_t b0 = s.token_begin, len = s.num_tokens;
      scores_.resize(static_cast<size_t>(len));
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < len; ++i) {
          const float* qi = q_.data() + (b0 + i) * H + h * hd;
          float mx = -INFINITY;
          for (int64_t j = 0; j < len; ++j) {
            const float* kj = k_.data() + (b0 + j) * H + h * hd;
            float dot = 0;
            for (int64_t d = 0; d < hd; ++d)
              dot += qi[d] * kj[d];
            scores_[static_cast<size_t>(j)] = dot * scale;
            mx = std::max(mx, dot * scale);
          }
          double sum = 0;
          for (float& sc : scores_) {
            sc = std::exp(sc - mx);
            sum += sc;
          }
          float* out = attn_.data() + (b0 + i) * H + h * hd;
          std::fill(out, out + hd, 0.0f);
          for (int64_t j = 0; j < len; ++j) {
            const float p = static_cast<float>(scores_[static_cast<size_t>(j)] / sum);
            const float* vj = v_.data() + (b0 + j) * H + h * hd;
            for (int64_t d = 0; d < hd; ++d)
              out[d] += p * vj[d];
          }
        }
      }
    }
    kernels::matmul(L.wo, attn_.data(), T, tmp_.data(), L.bo.data());
    kernels::add_inplace(x_.data(), tmp_.data(), T * H);
    layer_norm(x_.data(), T, H, L.attn_norm_w, L.attn_norm_b, c.layer_norm_eps);
    kernels::matmul(L.up, x_.data(), T, ffn_.data(), L.b_up.data());
    if (nomic) {  // SwiGLU: up(x) * silu(gate(x))
      kernels::matmul(L.gate, x_.data(), T, gate_.data());
      kernels::silu_mul(gate_.data(), ffn_.data(), T * F, gate_.data());
      std::swap(ffn_, gate_);
    } else {
      for (float& u : ffn_)
        u = 0.5f * u * (1.0f + std::erf(u * 0.70710678118654752f));  // GELU (erf form)
    }
    kernels::matmul(L.down, ffn_.data(), T, tmp_.data(), L.b_down.data());
    kernels::add_inplace(x_.data(), tmp_.data(), T * H);
    layer_norm(x_.data(), T, H, L.out_norm_w, L.out_norm_b, c.layer_norm_eps);
  }
  for (size_t r = 0; r < batch.hidden_rows.size(); ++r) {
    std::memcpy(batch.hidden + static_cast<int64_t>(r) * H, x_.data() + batch.hidden_rows[r] * H,
                static_cast<size_t>(H) * sizeof(float));
  }
  // No LM head.
  std::fill(logits, logits + batch.logit_rows.size() * static_cast<size_t>(c.vocab_size), 0.0f);
}

}  // namespace pagoda::model
