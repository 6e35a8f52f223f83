// kv_cache_write + paged_attention against dense causal attention computed in the test (double,
// on an unpaged copy of K/V): shuffled block tables with other data in the unused blocks, GQA
// ratios 1/2/4 and MQA, block sizes that do and do not divide the context, prefill chunks and
// single-token decode, f32, f16, bf16 and q8_0 caches (the q8_0 oracle quantises rows itself, the
// way ggml's quantize_row_q8_0_ref does), the exact and the online softmax. Every ISA path must
// give the reference's bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "isa_guard.h"
#include "kernels/attention.h"
#include "tensor/float16.h"

namespace pagoda::kernels {
namespace {

using tensor::DType;

std::vector<float> random_vec(size_t n, std::mt19937& rng, float scale = 1) {
  std::normal_distribution<float> g(0, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = g(rng);
  return v;
}

// A paged cache for one layer plus the dense K/V it should hold.
struct Cache {
  KvLayerView view;
  std::vector<uint8_t> k_bytes, v_bytes;
  std::vector<int32_t> block_table;
};

Cache make_cache(DType dtype, int32_t block_size, int32_t n_kv_heads, int32_t head_dim,
                 int64_t num_blocks, int64_t context, std::mt19937& rng) {
  Cache c;
  const auto row = kv_row_bytes(dtype, head_dim);
  EXPECT_TRUE(row.ok());
  const size_t bytes = static_cast<size_t>(num_blocks) * n_kv_heads * block_size * row.value();
  // Fill with garbage so reads from the wrong block or slot show up.
  c.k_bytes.resize(bytes);
  c.v_bytes.resize(bytes);
  for (auto& b : c.k_bytes)
    b = static_cast<uint8_t>(rng() % 61);
  for (auto& b : c.v_bytes)
    b = static_cast<uint8_t>(rng() % 61);
  c.view = KvLayerView{dtype,      block_size,       n_kv_heads,      head_dim,
                       num_blocks, c.k_bytes.data(), c.v_bytes.data()};
  // The sequence gets a random subset of the physical blocks, in random order.
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int64_t needed = (context + block_size - 1) / block_size;
  c.block_table.assign(ids.begin(), ids.begin() + needed);
  return c;
}

// What a value rounded to half / bfloat16 reads back as (f32 and q8_0: unchanged).
float stored(DType dtype, float v) {
  if (dtype == DType::kF16) return tensor::fp16_to_fp32(tensor::fp32_to_fp16(v));
  if (dtype == DType::kBF16) return tensor::bf16_to_fp32(tensor::fp32_to_bf16(v));
  return v;
}

// Rows of head_dim values as the cache (or, for q, the vec-dot type) holds them: q8_0 quantises
// each 32-block like ggml's quantize_row_q8_0_ref (d = amax / 127 stored as half, q = round half
// away from zero of x / d computed as x * (1 / d)) and reads back q * d; the others round per
// value.
void round_rows(DType dtype, std::vector<float>& x, int64_t head_dim) {
  if (dtype != DType::kQ8_0) {
    for (auto& v : x)
      v = stored(dtype, v);
    return;
  }
  ASSERT_EQ(head_dim % 32, 0);
  for (size_t b = 0; b < x.size(); b += 32) {
    float amax = 0;
    for (size_t j = b; j < b + 32; ++j)
      amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1 / d : 0;
    const float dh = tensor::fp16_to_fp32(tensor::fp32_to_fp16(d));
    for (size_t j = b; j < b + 32; ++j) {
      const float q = std::min(127.0f, std::max(-127.0f, std::round(x[j] * id)));
      x[j] = q * dh;
    }
  }
}

// The type the probabilities are rounded to: the cache type for f16/bf16; none for f32 and q8_0
// (a quantised V is converted to float and accumulated in f32, as ggml's flash attention does).
DType prob_type(DType dtype) {
  return dtype == DType::kF16 || dtype == DType::kBF16 ? dtype : DType::kF32;
}

// Dense causal attention over K/V [context, n_kv_heads, head_dim] with the semantics of
// attention.h: q (already converted by the caller) and the probabilities are rounded to
// prob_type(dtype) (as ggml does when the cache is f16), everything else in double. The exact
// softmax rounds the normalised probabilities; the online one rounds each e_j = exp(s_j - M_b) as
// it meets it, M_b the running max up to the end of key j's KV block (keys [b * block_size, (b +
// 1) * block_size)), and scales it by exp(M_b - M) / L later. `slack` gets, per output, the error
// a rounding of a probability that sits within 1e-6 of a half-way point could add (the kernel's
// float probability may round the other way there).
std::vector<double> dense_attention(DType dtype, const std::vector<float>& q,
                                    const std::vector<int32_t>& pos, const std::vector<float>& k,
                                    const std::vector<float>& v, int64_t n_heads,
                                    int64_t n_kv_heads, int64_t head_dim, int64_t block_size,
                                    bool online, double scale, std::vector<double>* slack) {
  const int64_t num_tokens = static_cast<int64_t>(pos.size());
  std::vector<double> out(static_cast<size_t>(num_tokens * n_heads * head_dim));
  slack->assign(out.size(), 0);
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t h = 0; h < n_heads; ++h) {
      const int64_t kvh = h / (n_heads / n_kv_heads);
      const int64_t n = pos[t] + 1;
      std::vector<double> s(static_cast<size_t>(n)), running(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < head_dim; ++d) {
          dot += double(q[(t * n_heads + h) * head_dim + d]) *
                 k[(j * n_kv_heads + kvh) * head_dim + d];
        }
        s[j] = dot * scale;
      }
      double mx = -INFINITY;
      for (int64_t b = 0; b < n; b += block_size) {  // the running max after each block
        const int64_t e = std::min(n, b + block_size);
        for (int64_t j = b; j < e; ++j)
          mx = std::max(mx, s[j]);
        for (int64_t j = b; j < e; ++j)
          running[j] = mx;
      }
      if (!online) std::fill(running.begin(), running.end(), mx);
      double sum = 0;
      for (int64_t j = 0; j < n; ++j)
        sum += std::exp(s[j] - mx);
      std::vector<double> p(static_cast<size_t>(n)), ulp(static_cast<size_t>(n), 0.0);
      const DType pt = prob_type(dtype);
      for (int64_t j = 0; j < n; ++j) {
        // What is rounded, and the factor it takes later.
        const double e = online ? std::exp(s[j] - running[j]) : std::exp(s[j] - mx) / sum;
        const double later = online ? std::exp(running[j] - mx) / sum : 1.0;
        p[j] = stored(pt, static_cast<float>(e)) * later;
        if (pt != DType::kF32) {
          const double lo = stored(pt, static_cast<float>(e * (1 - 1e-6)));
          const double hi = stored(pt, static_cast<float>(e * (1 + 1e-6)));
          ulp[j] = (hi - lo) * later;  // 0 unless a half-way point is within reach
        }
      }
      for (int64_t d = 0; d < head_dim; ++d) {
        double acc = 0, extra = 0;
        for (int64_t j = 0; j < n; ++j) {
          const double vv = v[(j * n_kv_heads + kvh) * head_dim + d];
          acc += p[j] * vv;
          extra += ulp[j] * std::fabs(vv);
        }
        out[(t * n_heads + h) * head_dim + d] = acc;
        (*slack)[(t * n_heads + h) * head_dim + d] = extra;
      }
    }
  }
  return out;
}

struct AttnCase {
  DType dtype;
  int32_t n_heads, n_kv_heads, head_dim, block_size;
  int64_t context;  // tokens in the sequence after this step
  int64_t num_new;  // tokens computed in this step (the last num_new positions)
};

class PagedAttentionTest : public ::testing::TestWithParam<AttnCase> {};

TEST_P(PagedAttentionTest, MatchesDenseCausalAttention) {
  const AttnCase c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.n_heads * 131 + c.block_size * 7 + c.context));
  const int64_t num_blocks = (c.context + c.block_size - 1) / c.block_size + 5;
  Cache cache =
      make_cache(c.dtype, c.block_size, c.n_kv_heads, c.head_dim, num_blocks, c.context, rng);

  // Dense K/V for the whole sequence, written in two steps: history, then this step's tokens.
  const size_t kv_row = static_cast<size_t>(c.n_kv_heads) * c.head_dim;
  auto k = random_vec(static_cast<size_t>(c.context) * kv_row, rng);
  auto v = random_vec(static_cast<size_t>(c.context) * kv_row, rng);
  std::vector<int32_t> all_pos(static_cast<size_t>(c.context));
  std::iota(all_pos.begin(), all_pos.end(), 0);
  const int64_t history = c.context - c.num_new;
  kv_cache_write(cache.view, cache.block_table, all_pos.data(), history, k.data(), v.data());
  kv_cache_write(cache.view, cache.block_table, all_pos.data() + history, c.num_new,
                 k.data() + history * kv_row, v.data() + history * kv_row);

  const std::vector<int32_t> pos(all_pos.begin() + history, all_pos.end());
  const auto q = random_vec(static_cast<size_t>(c.num_new) * c.n_heads * c.head_dim, rng);
  round_rows(c.dtype, k, c.head_dim);
  round_rows(c.dtype, v, c.head_dim);
  std::vector<float> q_conv = q;  // q in the cache type's vec-dot type
  round_rows(c.dtype, q_conv, c.head_dim);
  for (const bool online : {false, true}) {
    SCOPED_TRACE(online ? "online softmax" : "exact softmax");
    AttentionParams params{c.n_heads, 1.0f / std::sqrt(float(c.head_dim))};
    params.online_softmax = online;
    std::vector<float> out(q.size(), NAN);
    paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                    out.data());

    std::vector<double> slack;
    const auto expected = dense_attention(c.dtype, q_conv, pos, k, v, c.n_heads, c.n_kv_heads,
                                          c.head_dim, c.block_size, online, params.scale, &slack);
    // f32 accumulation of a q8_0 score sums head_dim / 32 scaled block products: a little more
    // rounding than the plain dot.
    const double tol = c.dtype == DType::kQ8_0 ? 4e-6 : 1e-6;
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], expected[i], tol * (1 + std::fabs(expected[i])) + slack[i])
          << "element " << i;
      worst = std::max(worst, std::fabs(out[i] - expected[i]));
    }
    RecordProperty(online ? "worst_abs_error_online" : "worst_abs_error", std::to_string(worst));

    // Every ISA path computes the reference's operations in the same order: identical bits.
    std::vector<float> want(out.size());
    {
      IsaGuard guard(Isa::kScalar);
      paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                      want.data());
    }
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      std::vector<float> got(out.size(), NAN);
      paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                      got.data());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << isa_name(isa) << " element " << i << ": " << got[i] << " vs " << want[i];
      }
    }

    // Each query token is independent: computing them one at a time gives the same bits.
    for (int64_t t = 0; t < c.num_new; ++t) {
      std::vector<float> alone(static_cast<size_t>(c.n_heads * c.head_dim));
      paged_attention(q.data() + t * c.n_heads * c.head_dim, 1, pos.data() + t, cache.view,
                      cache.block_table, params, alone.data());
      ASSERT_EQ(std::memcmp(alone.data(), out.data() + t * c.n_heads * c.head_dim,
                            alone.size() * sizeof(float)),
                0)
          << "token " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PagedAttentionTest,
    ::testing::Values(
        // GQA ratio 1, 2, 4 and MQA; prefill chunks and decode.
        AttnCase{DType::kF32, 4, 4, 32, 16, 40, 40}, AttnCase{DType::kF32, 4, 2, 32, 16, 40, 7},
        AttnCase{DType::kF32, 8, 2, 16, 16, 70, 1}, AttnCase{DType::kF32, 8, 1, 16, 16, 33, 33},
        // Block sizes that do not divide the context, tiny blocks, one-token context.
        AttnCase{DType::kF32, 2, 1, 8, 5, 23, 4}, AttnCase{DType::kF32, 2, 2, 8, 1, 9, 9},
        AttnCase{DType::kF32, 4, 2, 64, 16, 1, 1}, AttnCase{DType::kF32, 4, 4, 3, 7, 15, 2},
        // Long enough to run multi-threaded.
        AttnCase{DType::kF32, 8, 2, 64, 16, 300, 24},
        // f16 caches.
        AttnCase{DType::kF16, 4, 2, 32, 16, 40, 40}, AttnCase{DType::kF16, 8, 1, 16, 16, 50, 1},
        AttnCase{DType::kF16, 4, 4, 64, 32, 100, 3},
        // head_dim 48 (a 32-dim pair of chunks and a single 16-dim chunk in the 512-bit pass 3),
        // blocks of 7 keys (pass 1's four-key groups leave a pair and a single key).
        AttnCase{DType::kF16, 16, 2, 48, 7, 45, 6}, AttnCase{DType::kBF16, 8, 1, 48, 7, 31, 31},
        // bf16 caches (incl. a tail head_dim and a long multi-threaded prefill).
        AttnCase{DType::kBF16, 4, 2, 32, 16, 40, 40}, AttnCase{DType::kBF16, 8, 1, 16, 16, 50, 1},
        AttnCase{DType::kBF16, 4, 4, 12, 7, 30, 5}, AttnCase{DType::kBF16, 8, 2, 64, 16, 300, 24},
        // q8_0 caches: head_dim 32 / 64 / 128, GQA 1/2/4/12 (two lane groups), decode and prefill.
        AttnCase{DType::kQ8_0, 4, 4, 32, 16, 40, 40}, AttnCase{DType::kQ8_0, 4, 2, 64, 16, 40, 7},
        AttnCase{DType::kQ8_0, 8, 2, 128, 16, 70, 1}, AttnCase{DType::kQ8_0, 12, 1, 32, 5, 23, 4},
        AttnCase{DType::kQ8_0, 2, 2, 64, 1, 9, 9}, AttnCase{DType::kQ8_0, 8, 2, 64, 16, 300, 24}));

// A latent cache (multi-head latent attention): V is the K array (view.v == view.k), one KV head
// shared by every query head, each cached row read as both key and value. kv_cache_write stores
// the row once (its v argument is not read: nullptr here), and attention equals the dense oracle
// with V = K, on every ISA path with the reference's bits. Row widths: 80 (the deepseek2
// fixture's rope key 16 + latent 64) and 96 (q8_0).
TEST(LatentCacheTest, ValuesAreTheKeyRows) {
  for (const AttnCase c :
       {AttnCase{DType::kF32, 4, 1, 80, 16, 37, 37}, AttnCase{DType::kF16, 4, 1, 80, 16, 37, 1},
        AttnCase{DType::kBF16, 16, 1, 80, 7, 29, 5}, AttnCase{DType::kQ8_0, 8, 1, 96, 16, 40, 6}}) {
    SCOPED_TRACE(std::string(tensor::dtype_name(c.dtype)) + " row " + std::to_string(c.head_dim));
    std::mt19937 rng(static_cast<uint32_t>(c.head_dim * 17 + c.num_new));
    const int64_t num_blocks = (c.context + c.block_size - 1) / c.block_size + 3;
    Cache cache = make_cache(c.dtype, c.block_size, 1, c.head_dim, num_blocks, c.context, rng);
    cache.view.v = cache.view.k;
    const std::vector<uint8_t> v_before = cache.v_bytes;
    auto rows = random_vec(static_cast<size_t>(c.context * c.head_dim), rng);
    std::vector<int32_t> all_pos(static_cast<size_t>(c.context));
    std::iota(all_pos.begin(), all_pos.end(), 0);
    kv_cache_write(cache.view, cache.block_table, all_pos.data(), c.context, rows.data(), nullptr);
    EXPECT_EQ(cache.v_bytes, v_before) << "the unused V array was written";
    const int64_t history = c.context - c.num_new;
    const std::vector<int32_t> pos(all_pos.begin() + history, all_pos.end());
    const auto q = random_vec(static_cast<size_t>(c.num_new * c.n_heads * c.head_dim), rng);
    round_rows(c.dtype, rows, c.head_dim);
    std::vector<float> q_conv = q;
    round_rows(c.dtype, q_conv, c.head_dim);
    for (const bool online : {false, true}) {
      AttentionParams params{c.n_heads, 0.125f};
      params.online_softmax = online;
      std::vector<float> want(q.size(), NAN);
      {
        IsaGuard guard(Isa::kScalar);
        paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                        want.data());
      }
      std::vector<double> slack;
      const auto expected = dense_attention(c.dtype, q_conv, pos, rows, rows, c.n_heads, 1,
                                            c.head_dim, c.block_size, online, params.scale, &slack);
      const double tol = c.dtype == DType::kQ8_0 ? 4e-6 : 1e-6;
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(want[i], expected[i], tol * (1 + std::fabs(expected[i])) + slack[i]) << i;
      for (Isa isa : supported_isas()) {
        IsaGuard guard(isa);
        std::vector<float> got(q.size(), NAN);
        paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                        got.data());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
            << isa_name(isa);
      }
    }
  }
}

// Sliding windows and soft-capped scores (Gemma 2, Mistral, Phi-3): against a double-precision
// oracle on an f32 cache, where a query at position p sees keys [p - window + 1, p] and each
// scaled score s becomes cap * tanh(s / cap); prefill chunks and decodes, windows smaller than,
// equal to and larger than a block, the exact and the online softmax.
struct WindowCase {
  int32_t window;
  float softcap;
  int32_t block_size;
  int64_t context, num_new;
};

class WindowedAttentionTest : public ::testing::TestWithParam<WindowCase> {};

TEST_P(WindowedAttentionTest, MatchesDenseWindowedAttention) {
  const WindowCase c = GetParam();
  const int32_t n_heads = 4, n_kv = 2, hd = 32;
  std::mt19937 rng(static_cast<uint32_t>(c.window * 31 + c.context));
  const int64_t num_blocks = (c.context + c.block_size - 1) / c.block_size + 3;
  Cache cache = make_cache(DType::kF32, c.block_size, n_kv, hd, num_blocks, c.context, rng);
  const size_t kv_row = static_cast<size_t>(n_kv) * hd;
  // Large scores (x3) so that the cap changes them.
  const auto k = random_vec(static_cast<size_t>(c.context) * kv_row, rng, 3);
  const auto v = random_vec(static_cast<size_t>(c.context) * kv_row, rng);
  std::vector<int32_t> all_pos(static_cast<size_t>(c.context));
  std::iota(all_pos.begin(), all_pos.end(), 0);
  kv_cache_write(cache.view, cache.block_table, all_pos.data(), c.context, k.data(), v.data());
  const int64_t first = c.context - c.num_new;
  const std::vector<int32_t> pos(all_pos.begin() + first, all_pos.end());
  const auto q = random_vec(static_cast<size_t>(c.num_new) * n_heads * hd, rng);
  const double scale = 1.0 / std::sqrt(double(hd));
  for (const bool online : {false, true}) {
    SCOPED_TRACE(online ? "online softmax" : "exact softmax");
    AttentionParams params{n_heads, static_cast<float>(scale)};
    params.online_softmax = online;
    params.window = c.window;
    params.softcap = c.softcap;
    std::vector<float> out(q.size(), NAN);
    paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                    out.data());
    for (int64_t t = 0; t < c.num_new; ++t) {
      const int64_t p = pos[static_cast<size_t>(t)];
      const int64_t j0 = c.window > 0 ? std::max<int64_t>(0, p - c.window + 1) : 0;
      for (int64_t h = 0; h < n_heads; ++h) {
        const int64_t kvh = h / (n_heads / n_kv);
        std::vector<double> w;
        double mx = -INFINITY;
        for (int64_t j = j0; j <= p; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < hd; ++d)
            dot += double(q[(t * n_heads + h) * hd + d]) * k[(j * n_kv + kvh) * hd + d];
          double sc = dot * scale;
          if (c.softcap > 0) sc = c.softcap * std::tanh(sc / c.softcap);
          w.push_back(sc);
          mx = std::max(mx, sc);
        }
        double sum = 0;
        for (double& x : w)
          sum += (x = std::exp(x - mx));
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t j = j0; j <= p; ++j)
            acc += w[static_cast<size_t>(j - j0)] / sum * v[(j * n_kv + kvh) * hd + d];
          const float got = out[static_cast<size_t>((t * n_heads + h) * hd + d)];
          ASSERT_NEAR(got, acc, 2e-5 * (1 + std::fabs(acc))) << "token " << t << " head " << h;
        }
      }
    }
    // Every ISA gives the scalar path's bits (caps run on the SIMD paths too).
    std::vector<float> want(q.size());
    {
      IsaGuard guard(Isa::kScalar);
      paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                      want.data());
    }
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      std::vector<float> got(q.size(), NAN);
      paged_attention(q.data(), c.num_new, pos.data(), cache.view, cache.block_table, params,
                      got.data());
      ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << isa_name(isa);
    }
  }
}

// A window no query reaches past is no window: the same bits as none, on every ISA (the front
// keeps such calls on the SIMD paths).
TEST(WindowedAttentionTest, WideWindowEqualsNone) {
  std::mt19937 rng(5);
  const int32_t n_heads = 8, n_kv = 2, hd = 64, bs = 16;
  const int64_t context = 40;
  for (DType dtype : {DType::kF32, DType::kF16}) {
    Cache cache = make_cache(dtype, bs, n_kv, hd, 6, context, rng);
    const auto k = random_vec(static_cast<size_t>(context) * n_kv * hd, rng);
    const auto v = random_vec(static_cast<size_t>(context) * n_kv * hd, rng);
    std::vector<int32_t> pos(static_cast<size_t>(context));
    std::iota(pos.begin(), pos.end(), 0);
    kv_cache_write(cache.view, cache.block_table, pos.data(), context, k.data(), v.data());
    const auto q = random_vec(static_cast<size_t>(context) * n_heads * hd, rng);
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      AttentionParams params{n_heads, 0.125f};
      std::vector<float> none(q.size()), wide(q.size());
      paged_attention(q.data(), context, pos.data(), cache.view, cache.block_table, params,
                      none.data());
      params.window = static_cast<int32_t>(context);  // position 39 sees 0..39: everything
      paged_attention(q.data(), context, pos.data(), cache.view, cache.block_table, params,
                      wide.data());
      EXPECT_EQ(std::memcmp(none.data(), wide.data(), none.size() * sizeof(float)), 0)
          << isa_name(isa);
    }
  }
}

// Soft-capped scores on every cache type, the exact and the online softmax: every ISA gives the
// scalar path's bits (the cap is the same scalar tanh after the SIMD scores), and the cap
// changes the result.
TEST(WindowedAttentionTest, SoftcapEveryIsaEqualsScalar) {
  std::mt19937 rng(9);
  const int32_t n_heads = 8, n_kv = 2, hd = 64, bs = 16;
  const int64_t context = 45, num_new = 9;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0}) {
    SCOPED_TRACE(std::string(tensor::dtype_name(dtype)));
    Cache cache = make_cache(dtype, bs, n_kv, hd, 6, context, rng);
    const auto k = random_vec(static_cast<size_t>(context) * n_kv * hd, rng, 3);
    const auto v = random_vec(static_cast<size_t>(context) * n_kv * hd, rng);
    std::vector<int32_t> pos(static_cast<size_t>(context));
    std::iota(pos.begin(), pos.end(), 0);
    kv_cache_write(cache.view, cache.block_table, pos.data(), context, k.data(), v.data());
    const auto q = random_vec(static_cast<size_t>(num_new) * n_heads * hd, rng);
    const int32_t* new_pos = pos.data() + (context - num_new);
    for (const bool online : {false, true}) {
      AttentionParams params{n_heads, 0.125f};
      params.online_softmax = online;
      std::vector<float> uncapped(q.size()), want(q.size());
      paged_attention(q.data(), num_new, new_pos, cache.view, cache.block_table, params,
                      uncapped.data());
      params.softcap = 3;
      {
        IsaGuard guard(Isa::kScalar);
        paged_attention(q.data(), num_new, new_pos, cache.view, cache.block_table, params,
                        want.data());
      }
      EXPECT_NE(std::memcmp(uncapped.data(), want.data(), want.size() * sizeof(float)), 0);
      for (Isa isa : supported_isas()) {
        IsaGuard guard(isa);
        std::vector<float> got(q.size(), NAN);
        paged_attention(q.data(), num_new, new_pos, cache.view, cache.block_table, params,
                        got.data());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
            << isa_name(isa) << (online ? " online" : " exact");
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, WindowedAttentionTest,
                         ::testing::Values(WindowCase{8, 0, 16, 40, 40},
                                           WindowCase{8, 3, 16, 40, 1}, WindowCase{0, 3, 16, 40, 7},
                                           WindowCase{5, 50, 4, 23, 23},
                                           WindowCase{16, 0, 16, 64, 3},
                                           WindowCase{1, 0, 16, 20, 5},
                                           WindowCase{100, 2, 8, 40, 9}));

// Many sequences in one call (decodes and a prefill chunk sharing one cache, block tables
// interleaved) give the same bits as one call per sequence, on every ISA.
TEST(PagedAttentionBatchTest, EqualsOneCallPerSequence) {
  std::mt19937 rng(77);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0}) {
    SCOPED_TRACE(std::string(tensor::dtype_name(dtype)));
    const int32_t n_heads = 8, n_kv = 2, hd = 64, bs = 16;
    const std::vector<int64_t> contexts = {1, 37, 130, 64, 5};
    const std::vector<int64_t> news = {1, 1, 1, 20, 5};
    int64_t total_blocks = 0;
    for (int64_t c : contexts)
      total_blocks += (c + bs - 1) / bs;
    Cache cache = make_cache(dtype, bs, n_kv, hd, total_blocks + 3, 0, rng);
    std::vector<int32_t> ids(static_cast<size_t>(total_blocks + 3));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<std::vector<int32_t>> tables, positions;
    std::vector<std::vector<float>> qs;
    size_t next = 0;
    for (size_t i = 0; i < contexts.size(); ++i) {
      const int64_t nb = (contexts[i] + bs - 1) / bs;
      tables.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(next),
                          ids.begin() + static_cast<std::ptrdiff_t>(next + nb));
      next += static_cast<size_t>(nb);
      std::vector<int32_t> all(static_cast<size_t>(contexts[i]));
      std::iota(all.begin(), all.end(), 0);
      const auto k = random_vec(all.size() * n_kv * hd, rng);
      const auto v = random_vec(all.size() * n_kv * hd, rng);
      kv_cache_write(cache.view, tables.back(), all.data(), contexts[i], k.data(), v.data());
      positions.emplace_back(all.end() - news[i], all.end());
      qs.push_back(random_vec(static_cast<size_t>(news[i] * n_heads * hd), rng));
    }
    for (const bool online : {false, true})
      for (Isa isa : supported_isas()) {
        AttentionParams params{n_heads, 0.125f};
        params.online_softmax = online;
        IsaGuard guard(isa);
        std::vector<std::vector<float>> batched(contexts.size()), single(contexts.size());
        std::vector<AttentionSequence> seqs;
        for (size_t i = 0; i < contexts.size(); ++i) {
          batched[i].assign(qs[i].size(), NAN);
          single[i].assign(qs[i].size(), NAN);
          seqs.push_back(AttentionSequence{qs[i].data(), batched[i].data(), positions[i].data(),
                                           news[i], tables[i]});
          paged_attention(qs[i].data(), news[i], positions[i].data(), cache.view, tables[i], params,
                          single[i].data());
        }
        paged_attention_batch(seqs, cache.view, params);
        for (size_t i = 0; i < contexts.size(); ++i) {
          EXPECT_EQ(
              std::memcmp(batched[i].data(), single[i].data(), batched[i].size() * sizeof(float)),
              0)
              << isa_name(isa) << " sequence " << i << (online ? " online" : " exact");
        }
      }
  }
}

TEST(KvCacheWriteTest, PlacesTokensByBlockTable) {
  // Layout [num_blocks][n_kv_heads][block_size][head_dim]: position p of head h lands in block
  // block_table[p / block_size], slot p % block_size.
  std::vector<float> kc(4 * 2 * 3 * 2, 0.0f), vc(kc.size(), 0.0f);
  const KvLayerView kv{DType::kF32, 3, 2, 2, 4, kc.data(), vc.data()};
  const std::vector<int32_t> table = {2, 0};
  const int32_t positions[2] = {1, 4};
  // k[t, h, d] = 100 t + 10 h + d; v = -k.
  std::vector<float> k = {0, 1, 10, 11, 100, 101, 110, 111};
  std::vector<float> v(k.size());
  for (size_t i = 0; i < k.size(); ++i)
    v[i] = -k[i];
  kv_cache_write(kv, table, positions, 2, k.data(), v.data());
  auto at = [](int block, int head, int slot, int d) {
    return ((block * 2 + head) * 3 + slot) * 2 + d;
  };
  EXPECT_EQ(kc[at(2, 0, 1, 0)], 0.0f);
  EXPECT_EQ(kc[at(2, 0, 1, 1)], 1.0f);
  EXPECT_EQ(kc[at(2, 1, 1, 0)], 10.0f);
  EXPECT_EQ(kc[at(0, 0, 1, 1)], 101.0f);  // position 4 -> block table[1] = 0, slot 1
  EXPECT_EQ(kc[at(0, 1, 1, 0)], 110.0f);
  EXPECT_EQ(vc[at(0, 1, 1, 1)], -111.0f);
  float total = 0;
  for (float x : kc)
    total += x;
  EXPECT_EQ(total, 0 + 1 + 10 + 11 + 100 + 101 + 110 + 111) << "nothing else written";
}

TEST(KvCacheWriteTest, F16CacheRoundsToNearest) {
  std::vector<uint16_t> kc(1 * 1 * 2 * 4), vc(kc.size());
  const KvLayerView kv{DType::kF16, 2, 1, 4, 1, kc.data(), vc.data()};
  const std::vector<int32_t> table = {0};
  const int32_t pos = 1;
  const float k[4] = {1.0f, 1.0f + 1.0f / 4096, -65504.0f, 0.1f};
  const float v[4] = {2.0f, 0.0f, 3.0f, -0.5f};
  kv_cache_write(kv, table, &pos, 1, k, v);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(kc[4 + d], tensor::fp32_to_fp16(k[d]));
    EXPECT_EQ(vc[4 + d], tensor::fp32_to_fp16(v[d]));
    EXPECT_EQ(kc[d], 0);
  }
}

TEST(KvCacheWriteTest, Bf16CacheRoundsToNearestEven) {
  std::vector<uint16_t> kc(1 * 1 * 2 * 4), vc(kc.size());
  const KvLayerView kv{DType::kBF16, 2, 1, 4, 1, kc.data(), vc.data()};
  const std::vector<int32_t> table = {0};
  const int32_t pos = 0;
  // 1 + 2^-8 is half-way between bf16 neighbours 1 and 1 + 2^-7: even -> 1 (0x3f80); 1 + 3 * 2^-8
  // rounds up to 1 + 2^-6 (0x3f82); -2 is exact (0xc000).
  const float k[4] = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.0f, 0.0f};
  const float v[4] = {0.5f, 0.0f, 3.0f, -0.5f};
  kv_cache_write(kv, table, &pos, 1, k, v);
  EXPECT_EQ(kc[0], 0x3f80);
  EXPECT_EQ(kc[1], 0x3f82);
  EXPECT_EQ(kc[2], 0xc000);
  EXPECT_EQ(kc[3], 0x0000);
  EXPECT_EQ(vc[0], 0x3f00);
  EXPECT_EQ(vc[2], 0x4040);
  EXPECT_EQ(vc[3], 0xbf00);
  EXPECT_EQ(kc[4], 0);  // slot 1 untouched
}

TEST(KvCacheWriteTest, Q8_0CacheStoresGgmlBlocks) {
  // head_dim 64 = two 34-byte blocks per row; 2 slots, 1 head: rows of 68 bytes.
  std::vector<uint8_t> kc(2 * 68, 0xAA), vc(kc.size(), 0xAA);
  const KvLayerView kv{DType::kQ8_0, 2, 1, 64, 1, kc.data(), vc.data()};
  const std::vector<int32_t> table = {0};
  const int32_t pos = 1;
  // Block 0: amax 127 -> d = 1 (half 0x3c00); x = 2.5 -> q = 3 (half away from zero), -63.5 -> -64.
  // Block 1: all zero -> d = 0, q = 0.
  std::vector<float> k(64, 0.0f), v(64, 0.0f);
  k[0] = 127;
  k[1] = 2.5f;
  k[2] = -63.5f;
  k[31] = -1;
  v[0] = -254;  // d = 2 (0x4000): q = -127; v[1] = 3 -> 1.5 -> q = 2
  v[1] = 3;
  kv_cache_write(kv, table, &pos, 1, k.data(), v.data());
  const uint8_t* row = kc.data() + 68;
  EXPECT_EQ(row[0] | (row[1] << 8), 0x3c00);
  EXPECT_EQ(static_cast<int8_t>(row[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(row[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(row[4]), -64);
  EXPECT_EQ(static_cast<int8_t>(row[2 + 31]), -1);
  EXPECT_EQ(row[34] | (row[35] << 8), 0);
  for (int j = 0; j < 32; ++j)
    EXPECT_EQ(row[36 + j], 0) << j;
  const uint8_t* vrow = vc.data() + 68;
  EXPECT_EQ(vrow[0] | (vrow[1] << 8), 0x4000);
  EXPECT_EQ(static_cast<int8_t>(vrow[2]), -127);
  EXPECT_EQ(static_cast<int8_t>(vrow[3]), 2);
  for (int i = 0; i < 68; ++i)
    EXPECT_EQ(kc[i], 0xAA) << "slot 0 untouched, byte " << i;
}

TEST(KvRowBytesTest, SizesPerDtypeAndQ8_0NeedsWholeBlocks) {
  EXPECT_EQ(kv_row_bytes(DType::kF32, 64).value(), 256u);
  EXPECT_EQ(kv_row_bytes(DType::kF16, 64).value(), 128u);
  EXPECT_EQ(kv_row_bytes(DType::kBF16, 80).value(), 160u);
  EXPECT_EQ(kv_row_bytes(DType::kQ8_0, 128).value(), 4u * 34);
  const auto bad = kv_row_bytes(DType::kQ8_0, 80);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("head_dim"), std::string::npos);
  EXPECT_NE(bad.status().message().find("80"), std::string::npos);
  EXPECT_FALSE(kv_row_bytes(DType::kQ4_0, 64).ok());
  EXPECT_FALSE(kv_row_bytes(DType::kF16, 0).ok());
}

}  // namespace
}  // namespace pagoda::kernels
