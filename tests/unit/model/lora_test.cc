// LoRA in a batched step (model/lora.h): set_lora_projection stores F16 unless a value is beyond
// F16's range, B transposed; LoraBatch::add gives, for every row, y + B (A x) of its own adapter
// (float64 of the stored F16 values, with x rounded to F16 as the F16 matmul rounds its
// activations; A x stays f32 in the expand),
// nothing for rows without an adapter or for targets an adapter does not adapt, and the same bits
// whether an adapter's rows are consecutive (read in place) or interleaved with others (gathered).
#include "model/lora.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/float16.h"

namespace pagoda::model {
namespace {

std::vector<float> random_values(std::mt19937& rng, size_t n, float spread) {
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  for (float& x : v)
    x = d(rng);
  return v;
}

double f16(double v) {
  return tensor::fp16_to_fp32(tensor::fp32_to_fp16(static_cast<float>(v)));
}

// The stored value i of a matrix of p.
double stored(const std::vector<uint8_t>& m, tensor::DType dtype, size_t i) {
  if (dtype == tensor::DType::kF32) {
    float v;
    std::memcpy(&v, m.data() + 4 * i, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, m.data() + 2 * i, 2);
  return tensor::fp16_to_fp32(h);
}

TEST(LoraProjection, StoresF16UnlessAValueIsBeyondItsRange) {
  std::mt19937 rng(1);
  const std::vector<float> a = random_values(rng, 4 * 8, 0.5f);
  std::vector<float> b = random_values(rng, 6 * 4, 0.5f);
  LoraProjection p;
  set_lora_projection(p, 4, a, b);
  EXPECT_EQ(p.rank, 4);
  ASSERT_EQ(p.dtype, tensor::DType::kF16);
  ASSERT_EQ(p.a.size(), a.size() * 2);
  ASSERT_EQ(p.b.size(), b.size() * 2);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(stored(p.a, p.dtype, i), f16(a[i]));
  for (size_t o = 0; o < 6; ++o) {  // bt [4, 6] holds b [6, 4] transposed
    for (size_t k = 0; k < 4; ++k)
      EXPECT_EQ(stored(p.b, p.dtype, k * 6 + o), f16(b[o * 4 + k])) << o << " " << k;
  }

  b[5] = 70000.0f;  // F16's largest finite value is 65504
  set_lora_projection(p, 4, a, b);
  ASSERT_EQ(p.dtype, tensor::DType::kF32);
  ASSERT_EQ(p.b.size(), b.size() * 4);
  EXPECT_EQ(stored(p.b, p.dtype, 1 * 6 + 1), 70000.0);  // b[1, 1]
  EXPECT_EQ(stored(p.a, p.dtype, 3), static_cast<double>(a[3]));
}

// A model shape small enough to compute by hand: hidden 16, q 16, kv 8, ffn 24.
ModelConfig small_config() {
  ModelConfig c;
  c.num_layers = 2;
  c.hidden_dim = 16;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 8;
  c.ffn_dim = 24;
  return c;
}

struct Case {
  LoraAdapter adapter;
  // [layer][target] as given (f32, before storing).
  std::vector<std::array<std::vector<float>, kNumLoraTargets>> a, b;
};

// An adapter adapting `targets` at `rank` on every layer.
void make_adapter(std::mt19937& rng, const ModelConfig& c, std::vector<LoraTarget> targets,
                  int64_t rank, Case& out) {
  out.adapter.layers.resize(static_cast<size_t>(c.num_layers));
  out.adapter.rank = static_cast<int32_t>(rank);
  for (int32_t l = 0; l < c.num_layers; ++l) {
    for (LoraTarget t : targets) {
      const auto [o, in] = lora_target_shape(c, t);
      const std::vector<float> a = random_values(rng, static_cast<size_t>(rank * in), 0.3f);
      const std::vector<float> b = random_values(rng, static_cast<size_t>(o * rank), 0.3f);
      set_lora_projection(out.adapter.layers[static_cast<size_t>(l)][static_cast<size_t>(t)], rank,
                          a, b);
    }
  }
  ASSERT_TRUE(validate_lora_adapter(c, out.adapter, 64).ok());
}

// y + B (A x) for row x of one projection p (float64 of the stored values; x rounded to F16 as
// the F16 matmul rounds its activations, A x not: the expand takes it in f32).
std::vector<double> expected_row(const LoraProjection& p, const float* x, int64_t in,
                                 const float* y, int64_t out) {
  std::vector<double> mid(static_cast<size_t>(p.rank), 0.0), r(static_cast<size_t>(out));
  for (int64_t k = 0; k < p.rank; ++k) {
    for (int64_t i = 0; i < in; ++i)
      mid[static_cast<size_t>(k)] +=
          stored(p.a, p.dtype, static_cast<size_t>(k * in + i)) * f16(x[i]);
  }
  for (int64_t d = 0; d < out; ++d) {
    double s = 0;
    for (int64_t k = 0; k < p.rank; ++k)
      s += stored(p.b, p.dtype, static_cast<size_t>(k * out + d)) * mid[static_cast<size_t>(k)];
    r[static_cast<size_t>(d)] = y[d] + s;
  }
  return r;
}

TEST(LoraBatch, AddsEachRowsOwnAdapterProduct) {
  const ModelConfig c = small_config();
  std::mt19937 rng(7);
  Case first, second;
  make_adapter(rng, c, {LoraTarget::kQ, LoraTarget::kV}, 4, first);  // k not adapted
  make_adapter(rng, c, {LoraTarget::kQ, LoraTarget::kK, LoraTarget::kV}, 8, second);
  const int64_t in = c.hidden_dim, q_dim = c.q_dim(), kv_dim = c.kv_dim();

  // Sequences: first (2 tokens), none (1), second (3), first (1): first's rows are not
  // consecutive, second's are.
  const std::vector<int32_t> block_table = {0};
  const std::vector<SequenceSlice> seqs = {{0, 2, block_table, &first.adapter},
                                           {2, 1, block_table, nullptr},
                                           {3, 3, block_table, &second.adapter},
                                           {6, 1, block_table, &first.adapter}};
  const int64_t T = 7;
  const std::vector<const LoraAdapter*> row_adapter = {
      &first.adapter,  &first.adapter,  nullptr,       &second.adapter,
      &second.adapter, &second.adapter, &first.adapter};
  ForwardBatch batch;
  batch.sequences = seqs;
  LoraBatch lora;
  lora.build(batch);
  Scratch scratch;
  lora.reserve_scratch(std::max<int64_t>({in, q_dim, kv_dim}), scratch);

  const std::vector<float> x = random_values(rng, static_cast<size_t>(T * in), 1.0f);
  const std::vector<float> q0 = random_values(rng, static_cast<size_t>(T * q_dim), 1.0f);
  const std::vector<float> k0 = random_values(rng, static_cast<size_t>(T * kv_dim), 1.0f);
  const std::vector<float> v0 = random_values(rng, static_cast<size_t>(T * kv_dim), 1.0f);
  std::vector<float> q = q0, k = k0, v = v0;
  const int32_t layer = 1;
  const LoraBatch::Output outputs[] = {{LoraTarget::kQ, q.data(), q_dim},
                                       {LoraTarget::kK, k.data(), kv_dim},
                                       {LoraTarget::kV, v.data(), kv_dim}};
  lora.add(layer, outputs, x.data(), in, scratch);

  const std::vector<float>* before[] = {&q0, &k0, &v0};
  const std::vector<float>* after[] = {&q, &k, &v};
  const int64_t dims[] = {q_dim, kv_dim, kv_dim};
  const LoraTarget targets[] = {LoraTarget::kQ, LoraTarget::kK, LoraTarget::kV};
  for (int64_t t = 0; t < T; ++t) {
    for (int o = 0; o < 3; ++o) {
      const int64_t out = dims[o];
      const float* y0 = before[o]->data() + t * out;
      const float* y = after[o]->data() + t * out;
      const LoraAdapter* adapter = row_adapter[static_cast<size_t>(t)];
      const LoraProjection* p =
          adapter == nullptr
              ? nullptr
              : &adapter->layers[static_cast<size_t>(layer)][static_cast<size_t>(targets[o])];
      if (p == nullptr || p->rank == 0) {  // untouched, bit for bit
        EXPECT_EQ(std::memcmp(y, y0, static_cast<size_t>(out) * sizeof(float)), 0)
            << "row " << t << " output " << o;
        continue;
      }
      const std::vector<double> want = expected_row(*p, x.data() + t * in, in, y0, out);
      double max_change = 0;
      for (int64_t d = 0; d < out; ++d) {
        max_change = std::max(max_change, std::fabs(want[static_cast<size_t>(d)] - y0[d]));
        EXPECT_NEAR(y[d], want[static_cast<size_t>(d)], 1e-4) << "row " << t << " dim " << d;
      }
      EXPECT_GT(max_change, 0.05) << "the product must move the row for the check to mean much";
    }
  }

  // Each sequence alone (consecutive rows, read in place): the same bits as in the mixed batch.
  for (size_t s = 0; s < seqs.size(); ++s) {
    if (seqs[s].lora == nullptr) continue;
    const SequenceSlice alone_seq{0, seqs[s].num_tokens, block_table, seqs[s].lora};
    ForwardBatch alone;
    alone.sequences = std::span<const SequenceSlice>(&alone_seq, 1);
    LoraBatch one;
    one.build(alone);
    Scratch sc;
    one.reserve_scratch(std::max<int64_t>({in, q_dim, kv_dim}), sc);
    const int64_t b = seqs[s].token_begin, n = seqs[s].num_tokens;
    std::vector<float> qa(q0.begin() + b * q_dim, q0.begin() + (b + n) * q_dim);
    std::vector<float> ka(k0.begin() + b * kv_dim, k0.begin() + (b + n) * kv_dim);
    std::vector<float> va(v0.begin() + b * kv_dim, v0.begin() + (b + n) * kv_dim);
    const LoraBatch::Output alone_outputs[] = {{LoraTarget::kQ, qa.data(), q_dim},
                                               {LoraTarget::kK, ka.data(), kv_dim},
                                               {LoraTarget::kV, va.data(), kv_dim}};
    one.add(layer, alone_outputs, x.data() + b * in, in, sc);
    EXPECT_EQ(std::memcmp(qa.data(), q.data() + b * q_dim, qa.size() * sizeof(float)), 0) << s;
    EXPECT_EQ(std::memcmp(ka.data(), k.data() + b * kv_dim, ka.size() * sizeof(float)), 0) << s;
    EXPECT_EQ(std::memcmp(va.data(), v.data() + b * kv_dim, va.size() * sizeof(float)), 0) << s;
  }
}

}  // namespace
}  // namespace pagoda::model
