#include "model/blocks/mla_attention_block.h"

#include <algorithm>
#include <cstring>

#include "kernels/team.h"
#include "model/blocks/attention_block.h"

namespace pagoda::model {
namespace {
enum Slot { kQa = 30, kQFull, kKva, kLatent, kKvb, kQ, kK, kV, kAttn, kO };

struct Dims {
  int64_t heads, hd, rope, nope, vd, lora, kvb_row;
};

Dims dims_of(const ModelConfig& c) {
  Dims d;
  d.heads = c.num_heads;
  d.hd = c.head_dim;
  d.rope = c.rope_dims;
  d.nope = c.head_dim - c.rope_dims;
  d.vd = c.value_dim();
  d.lora = c.kv_lora_rank;
  d.kvb_row = d.nope + d.vd;
  return d;
}
}  // namespace

void reserve_mla_scratch(const ModelConfig& c, int64_t T, Scratch& scratch) {
  const Dims d = dims_of(c);
  const auto n = [T](int64_t width) { return static_cast<size_t>(T * width); };
  scratch.reserve(kQa, n(std::max<int64_t>(c.q_lora_rank, 1)));
  scratch.reserve(kQFull, n(d.heads * d.hd));
  scratch.reserve(kKva, n(d.lora + d.rope));
  scratch.reserve(kLatent, n(d.lora));
  scratch.reserve(kKvb, n(d.heads * d.kvb_row));
  for (Slot s : {kQ, kK, kV, kAttn})
    scratch.reserve(s, n(d.heads * d.hd));
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
  float* kvb = scratch.get(kKvb, n(d.heads * d.kvb_row));
  float* q = scratch.get(kQ, n(d.heads * d.hd));
  float* k = scratch.get(kK, n(d.heads * d.hd));
  float* v = scratch.get(kV, n(d.heads * d.hd));
  float* attn = scratch.get(kAttn, n(d.heads * d.hd));
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
  kernels::matmul(w.wkv_b, latent, T, kvb);

  // Per head: q = [q_rope | q_nope], k = [k_rope (shared) | k_nope], v = [v | 0].
  kernels::team_first([&] {
    const size_t f = sizeof(float);
    for (int64_t t = 0; t < T; ++t) {
      const float* k_rope = kva + t * (d.lora + d.rope) + d.lora;
      for (int64_t hh = 0; hh < d.heads; ++hh) {
        const float* qs = q_full + (t * d.heads + hh) * d.hd;
        const float* kvs = kvb + (t * d.heads + hh) * d.kvb_row;
        float* qd = q + (t * d.heads + hh) * d.hd;
        float* kd = k + (t * d.heads + hh) * d.hd;
        float* vd = v + (t * d.heads + hh) * d.hd;
        std::memcpy(qd, qs + d.nope, static_cast<size_t>(d.rope) * f);
        std::memcpy(qd + d.rope, qs, static_cast<size_t>(d.nope) * f);
        std::memcpy(kd, k_rope, static_cast<size_t>(d.rope) * f);
        std::memcpy(kd + d.rope, kvs, static_cast<size_t>(d.nope) * f);
        std::memcpy(vd, kvs + d.nope, static_cast<size_t>(d.vd) * f);
        std::fill(vd + d.vd, vd + d.hd, 0.0f);
      }
    }
  });
  kernels::rope(q, T, d.heads, d.hd, batch.positions.data(), rope);
  kernels::rope(k, T, d.heads, d.hd, batch.positions.data(), rope);
  paged_attend(c, 0, batch, kv, q, k, v, attn);
  // Each head's first v_head_dim outputs (the rest attend to the zero padding).
  kernels::team_first([&] {
    for (int64_t r = 0; r < T * d.heads; ++r)
      std::memcpy(o + r * d.vd, attn + r * d.hd, static_cast<size_t>(d.vd) * sizeof(float));
  });
  kernels::matmul(w.wo, o, T, out);
}

}  // namespace pagoda::model
