#include "model/blocks/mla_attention_block.h"

#include <algorithm>
#include <cstring>

#include "kernels/quant.h"
#include "kernels/team.h"
#include "model/blocks/attention_block.h"

namespace pagoda::model {
namespace {
enum Slot { kQa = 30, kQFull, kKva, kLatent, kQ, kRow, kAttn, kO };

struct Dims {
  int64_t heads, hd, rope, nope, vd, lora, row;  // row: the cached row, rope + lora
};

Dims dims_of(const ModelConfig& c) {
  Dims d;
  d.heads = c.num_heads;
  d.hd = c.head_dim;
  d.rope = c.rope_dims;
  d.nope = c.head_dim - c.rope_dims;
  d.vd = c.value_dim();
  d.lora = c.kv_lora_rank;
  d.row = d.rope + d.lora;
  return d;
}
}  // namespace

void absorb_kv_b(const ModelConfig& c, const kernels::WeightView& wkv_b, MlaWeights& w) {
  const Dims d = dims_of(c);
  const auto n = [](int64_t a, int64_t b, int64_t e) { return static_cast<size_t>(a * b * e); };
  w.w_uk.assign(n(d.heads, d.nope, d.lora), 0.0f);
  w.w_uv_t.assign(n(d.heads, d.lora, d.vd), 0.0f);
  std::vector<float> row(static_cast<size_t>(d.lora));
  for (int64_t h = 0; h < d.heads; ++h) {
    for (int64_t i = 0; i < d.nope + d.vd; ++i) {
      kernels::dequantize_row(wkv_b.dtype, wkv_b.row(h * (d.nope + d.vd) + i), row.data(), d.lora);
      if (i < d.nope) {
        std::copy(row.begin(), row.end(), w.w_uk.begin() + (h * d.nope + i) * d.lora);
        continue;
      }
      const int64_t v = i - d.nope;
      for (int64_t j = 0; j < d.lora; ++j)
        w.w_uv_t[static_cast<size_t>((h * d.lora + j) * d.vd + v)] = row[static_cast<size_t>(j)];
    }
  }
}

void reserve_mla_scratch(const ModelConfig& c, int64_t T, Scratch& scratch) {
  const Dims d = dims_of(c);
  const auto n = [T](int64_t width) { return static_cast<size_t>(T * width); };
  scratch.reserve(kQa, n(std::max<int64_t>(c.q_lora_rank, 1)));
  scratch.reserve(kQFull, n(d.heads * d.hd));
  scratch.reserve(kKva, n(d.lora + d.rope));
  scratch.reserve(kLatent, n(d.lora));
  scratch.reserve(kQ, n(d.heads * d.row));
  scratch.reserve(kRow, n(d.row));
  scratch.reserve(kAttn, n(d.heads * d.row));
  scratch.reserve(kO, n(d.heads * d.vd));
}

void mla_attention_block(const ModelConfig& c, const MlaWeights& w, const kernels::RopeParams& rope,
                         const ForwardBatch& batch, const kernels::KvLayerView& kv, const float* h,
                         float* out, Scratch& scratch) {
  const int64_t T = static_cast<int64_t>(batch.tokens.size());
  const Dims d = dims_of(c);
  const auto n = [T](int64_t width) { return static_cast<size_t>(T * width); };
  float* q_full = scratch.get(kQFull, n(d.heads * d.hd));
  float* kva = scratch.get(kKva, n(d.lora + d.rope));
  float* latent = scratch.get(kLatent, n(d.lora));
  float* q = scratch.get(kQ, n(d.heads * d.row));
  float* row = scratch.get(kRow, n(d.row));
  float* attn = scratch.get(kAttn, n(d.heads * d.row));
  float* o = scratch.get(kO, n(d.heads * d.vd));

  // The q and KV compressions share their input.
  if (c.q_lora_rank > 0) {
    float* qa = scratch.get(kQa, n(c.q_lora_rank));
    const kernels::MatmulJob down[] = {{&w.wq_a, qa, nullptr}, {&w.wkv_a, kva, nullptr}};
    kernels::matmul_group(down, h, T);
    kernels::rms_norm(qa, w.q_a_norm.data(), T, c.q_lora_rank, c.rms_norm_eps, qa);
    kernels::matmul(w.wq_b, qa, T, q_full);
  } else {
    const kernels::MatmulJob down[] = {{&w.wq, q_full, nullptr}, {&w.wkv_a, kva, nullptr}};
    kernels::matmul_group(down, h, T);
  }
  kernels::team_first([&] {
    for (int64_t t = 0; t < T; ++t)
      std::memcpy(latent + t * d.lora, kva + t * (d.lora + d.rope),
                  static_cast<size_t>(d.lora) * sizeof(float));
  });
  kernels::rms_norm(latent, w.kv_a_norm.data(), T, d.lora, c.rms_norm_eps, latent);
  // The cached row [k_rope | latent], and each head's q_rope in front of its latent query.
  kernels::team_first([&] {
    const size_t f = sizeof(float);
    for (int64_t t = 0; t < T; ++t) {
      float* r = row + t * d.row;
      std::memcpy(r, kva + t * (d.lora + d.rope) + d.lora, static_cast<size_t>(d.rope) * f);
      std::memcpy(r + d.rope, latent + t * d.lora, static_cast<size_t>(d.lora) * f);
      for (int64_t hh = 0; hh < d.heads; ++hh) {
        std::memcpy(q + (t * d.heads + hh) * d.row, q_full + (t * d.heads + hh) * d.hd + d.nope,
                    static_cast<size_t>(d.rope) * f);
      }
    }
  });
  // q_latent(t, h) = q_nope(t, h) · W_UK_h, beside the rope part.
  kernels::head_matmul(w.w_uk.data(), d.heads, d.nope, d.lora, q_full, {d.heads * d.hd, d.hd}, T,
                       q + d.rope, {d.heads * d.row, d.row});
  kernels::rope(q, T, d.heads, d.row, batch.positions.data(), rope);
  kernels::rope(row, T, 1, d.row, batch.positions.data(), rope);
  paged_attend(c, 0, batch, kv, q, row, row, attn);
  // Each head's latent context (the output's latent part) through its value rows.
  kernels::head_matmul(w.w_uv_t.data(), d.heads, d.lora, d.vd, attn + d.rope,
                       {d.heads * d.row, d.row}, T, o, {d.heads * d.vd, d.vd});
  kernels::matmul(w.wo, o, T, out);
}

}  // namespace pagoda::model
