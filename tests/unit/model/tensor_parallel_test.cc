// Tensor parallelism without a second process: StepMessage round trips and refusals
// (model/step_message.h), the shard split of a decoder's weights (model/tensor_shard.h; column
// slices checked by dequantising the whole row and the shard's row), the one-rank communicator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>
#include <vector>

#include "backend/parallel/communicator.h"
#include "kernels/quant.h"
#include "model/step_message.h"
#include "model/tensor_shard.h"

namespace pagoda::model {
namespace {

TEST(StepMessage, RoundTripsABatch) {
  const std::vector<int32_t> tokens = {5, 6, 7, 8}, positions = {0, 1, 2, 9}, rows = {2, 3};
  const std::vector<int32_t> t0 = {1}, t1 = {4, 3}, s0 = {6}, s1 = {0, 5};
  const std::vector<SequenceSlice> seqs = {{0, 3, t0, nullptr, s0}, {3, 1, t1, nullptr, s1}};
  const std::vector<KvBlockCopy> copies = {{2, 3}};
  ForwardBatch b;
  b.tokens = tokens;
  b.positions = positions;
  b.sequences = seqs;
  b.logit_rows = rows;
  b.flash_attention = true;
  b.block_copies = copies;
  const KvCacheShape shape{77, 8, 16, tensor::DType::kQ8_0, true};
  const std::vector<uint8_t> bytes = encode_step(StepOp::kForward, shape, b);
  auto m = decode_step(bytes);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, StepOp::kForward);
  EXPECT_EQ(m->kv.id, 77u);
  EXPECT_EQ(m->kv.num_blocks, 8);
  EXPECT_EQ(m->kv.block_size, 16);
  EXPECT_EQ(m->kv.dtype, tensor::DType::kQ8_0);
  EXPECT_TRUE(m->kv.kv_groups);
  EXPECT_EQ(m->tokens, tokens);
  EXPECT_EQ(m->positions, positions);
  EXPECT_EQ(m->logit_rows, rows);
  ASSERT_EQ(m->batch.sequences.size(), 2u);
  EXPECT_EQ(m->batch.sequences[1].token_begin, 3);
  EXPECT_EQ(std::vector<int32_t>(m->batch.sequences[1].block_table.begin(),
                                 m->batch.sequences[1].block_table.end()),
            t1);
  // The sliding-window layers' tables (hybrid KV groups) travel beside them.
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(std::vector<int32_t>(m->batch.sequences[i].sliding_block_table.begin(),
                                   m->batch.sequences[i].sliding_block_table.end()),
              i == 0 ? s0 : s1);
  }
  ASSERT_EQ(m->batch.block_copies.size(), 1u);
  EXPECT_EQ(m->batch.block_copies[0].dst, 3);
  EXPECT_TRUE(m->batch.flash_attention);
  // Every truncation is refused, never read past.
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(decode_step(std::span<const uint8_t>(bytes.data(), n)).ok()) << n;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decode_step(longer).ok());
  std::vector<uint8_t> groups = bytes;
  groups[4 + 4 + 8 + 8 + 4 + 4] = 2;  // kv_groups is a flag
  EXPECT_NE(decode_step(groups).status().message().find("kv_groups"), std::string::npos);
}

TEST(StepMessage, ReportCarriesTheCacheShapeAndNoBatch) {
  const KvCacheShape shape{42, 9, 16, tensor::DType::kBF16};
  const std::vector<uint8_t> bytes = encode_step(StepOp::kReport, shape, {});
  auto m = decode_step(bytes);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, StepOp::kReport);
  EXPECT_EQ(m->kv.id, 42u);
  EXPECT_EQ(m->kv.num_blocks, 9);
  EXPECT_EQ(m->kv.dtype, tensor::DType::kBF16);
  EXPECT_TRUE(m->tokens.empty());
  EXPECT_TRUE(m->copies.empty());
  // Op 4 (one past the last) is refused.
  std::vector<uint8_t> bad = bytes;
  bad[4] = 4;
  EXPECT_NE(decode_step(bad).status().message().find("unknown op"), std::string::npos);
}

TEST(StepMessage, RefusesHugeCountsAndUnknownOps) {
  const std::vector<uint8_t> shutdown = encode_step(StepOp::kShutdown, {}, {});
  auto m = decode_step(shutdown);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->op, StepOp::kShutdown);
  std::vector<uint8_t> bad = shutdown;
  bad[4] = 9;  // op 9
  EXPECT_NE(decode_step(bad).status().message().find("unknown op"), std::string::npos);
  bad = shutdown;
  bad[0] ^= 1;
  EXPECT_NE(decode_step(bad).status().message().find("magic"), std::string::npos);
  // A forward message claiming 2^40 tokens in a few bytes.
  const std::vector<int32_t> one = {1};
  ForwardBatch b;
  b.tokens = one;
  std::vector<uint8_t> f = encode_step(StepOp::kForward, {1, 2, 16, tensor::DType::kF16}, b);
  const size_t count_at = 4 + 4 + 8 + 8 + 4 + 4 + 1 + 1;
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(f.data() + count_at, &huge, sizeof(huge));
  auto r = decode_step(f);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("tokens count"), std::string::npos);
}

ModelConfig dense_config() {
  ModelConfig c;
  c.num_layers = 1;
  c.hidden_dim = 64;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_dim = 128;
  c.vocab_size = 11;
  return c;
}

TEST(TensorShard, DividesHeadsAndFfnOrRefuses) {
  auto c = shard_config(dense_config(), 1, 2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->num_heads, 2);
  EXPECT_EQ(c->num_kv_heads, 1);
  EXPECT_EQ(c->ffn_dim, 64);
  EXPECT_EQ(c->hidden_dim, 64);
  auto odd = shard_config(dense_config(), 0, 4);  // 2 KV heads over 4 ranks
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("num_kv_heads"), std::string::npos);
  ModelConfig moe = dense_config();
  moe.num_experts = 3;
  moe.num_experts_used = 2;
  auto experts = shard_config(moe, 0, 2, /*expert_parallel=*/true);
  ASSERT_FALSE(experts.ok());
  EXPECT_NE(experts.status().message().find("expert_count"), std::string::npos);
}

// A MoE model with dense layers (DeepSeek's leading ones, Qwen-MoE's mlp_only_layers): the dense
// FFN splits by feed_forward_length, the experts stay whole (expert_ffn_dim keeps their width even
// where it was ffn_dim's), the shared expert splits.
TEST(TensorShard, MoeWithDenseLayers) {
  ModelConfig moe = dense_config();
  moe.num_layers = 3;
  moe.num_experts = 4;
  moe.num_experts_used = 2;
  moe.shared_expert_ffn_dim = 96;
  // All layers MoE: ffn_dim is the experts' width and stays whole.
  auto all = shard_config(moe, 1, 2, true);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->ffn_dim, 128);
  EXPECT_EQ(all->expert_ffn(), 128);
  EXPECT_EQ(all->shared_expert_ffn_dim, 48);
  // A leading dense layer of ffn 128, experts of 32.
  moe.leading_dense_layers = 1;
  moe.expert_ffn_dim = 32;
  auto lead = shard_config(moe, 0, 2, true);
  ASSERT_TRUE(lead.ok()) << lead.status().message();
  EXPECT_EQ(lead->ffn_dim, 64);
  EXPECT_EQ(lead->expert_ffn(), 32);
  EXPECT_EQ(lead->shared_expert_ffn_dim, 48);
  // mlp_only_layers with the experts' width taken from ffn_dim (no expert_ffn_dim).
  moe.leading_dense_layers = 0;
  moe.expert_ffn_dim = 0;
  moe.dense_layers = {2};
  auto listed = shard_config(moe, 1, 2, true);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_EQ(listed->ffn_dim, 64);
  EXPECT_EQ(listed->expert_ffn(), 128);
  moe.ffn_dim = 129;
  moe.expert_ffn_dim = 32;
  auto odd = shard_config(moe, 0, 2, true);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("feed_forward_length 129"), std::string::npos);
}

// Without --expert-parallel every expert splits by width (vLLM's default): expert_ffn_dim is each
// rank's share; the expert count need not divide; a width that does not divide is refused, naming
// the flag that keeps experts whole.
TEST(TensorShard, MoeExpertsSplitByWidth) {
  ModelConfig moe = dense_config();
  moe.num_experts = 3;
  moe.num_experts_used = 2;
  moe.expert_ffn_dim = 64;
  auto c = shard_config(moe, 1, 2);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_experts, 3);
  EXPECT_EQ(c->expert_ffn(), 32);
  moe.expert_ffn_dim = 65;
  auto odd = shard_config(moe, 0, 2);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("expert_feed_forward_length 65"), std::string::npos);
  EXPECT_NE(odd.status().message().find("--expert-parallel"), std::string::npos);
}

// DeepSeek-V2-like MLA: 4 heads of 16 no-rope + 8 rope key dims, 16-wide values, a 32-wide
// latent and q compression (configure_deepseek2 sets num_kv_heads = num_heads).
ModelConfig mla_config() {
  ModelConfig c = dense_config();
  c.arch = "deepseek2";
  c.num_heads = c.num_kv_heads = 4;
  c.head_dim = 24;
  c.rope_dims = 8;
  c.v_head_dim = 16;
  c.kv_lora_rank = 32;
  c.q_lora_rank = 32;
  return c;
}

// MLA splits by query head; the latent row (and so the KV layout) stays whole on every rank.
TEST(TensorShard, MlaSplitsHeadsAndReplicatesTheLatent) {
  const ModelConfig full = mla_config();
  auto c = shard_config(full, 1, 2);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->num_heads, 2);
  EXPECT_EQ(c->kv_lora_rank, 32);
  EXPECT_EQ(c->q_lora_rank, 32);
  EXPECT_EQ(c->rope_dims, 8);
  const backend::KvLayout whole = kv_layout(full), part = kv_layout(*c);
  EXPECT_EQ(part.num_kv_heads, 1);
  EXPECT_EQ(part.head_dim, 8 + 32);  // [rope key | latent], the same row as one process
  EXPECT_EQ(part.head_dim, whole.head_dim);
  EXPECT_TRUE(part.values_in_keys);
  // 4 heads over 4 ranks: one each.
  auto four = shard_config(full, 3, 4);
  ASSERT_TRUE(four.ok()) << four.status().message();
  EXPECT_EQ(four->num_heads, 1);
  // 3 heads over 2 ranks: refused, naming the architecture and the heads.
  ModelConfig odd = full;
  odd.num_heads = odd.num_kv_heads = 3;
  auto refused = shard_config(odd, 0, 2);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("deepseek2: MLA attention splits by head: num_heads 3"),
            std::string::npos)
      << refused.status().message();
  auto eight = shard_config(full, 0, 8);
  ASSERT_FALSE(eight.ok());
  EXPECT_NE(eight.status().message().find("num_heads 4 is not divisible"), std::string::npos)
      << eight.status().message();
}

// A [rows, cols] Q8_0 matrix of random values, quantised.
std::vector<uint8_t> q8_matrix(int64_t rows, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> d;
  const size_t row_bytes = static_cast<size_t>(cols / 32 * 34);
  std::vector<uint8_t> out(static_cast<size_t>(rows) * row_bytes);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row)
      v = d(rng);
    kernels::quantize_row(tensor::DType::kQ8_0, row.data(), out.data() + r * row_bytes, cols);
  }
  return out;
}

kernels::WeightView view(const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
  kernels::WeightView w;
  w.dtype = tensor::DType::kQ8_0;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = static_cast<size_t>(cols / 32 * 34);
  w.data = bytes.data();
  return w;
}

TEST(TensorShard, SplitsRowsAndBlockAlignedColumns) {
  const ModelConfig c = dense_config();
  std::mt19937 rng(3);
  const auto wq = q8_matrix(64, 64, rng), wk = q8_matrix(32, 64, rng), wv = q8_matrix(32, 64, rng);
  const auto wo = q8_matrix(64, 64, rng), gate = q8_matrix(128, 64, rng);
  const auto up = q8_matrix(128, 64, rng), down = q8_matrix(64, 128, rng);
  const auto out = q8_matrix(11, 64, rng);
  for (int32_t rank = 0; rank < 2; ++rank) {
    DecoderWeights w;
    w.layers.resize(1);
    DecoderLayer& L = w.layers[0];
    L.attn.wq = view(wq, 64, 64);
    L.attn.wk = view(wk, 32, 64);
    L.attn.wv = view(wv, 32, 64);
    L.attn.wo = view(wo, 64, 64);
    L.attn.bq.assign(64, 0);
    for (int i = 0; i < 64; ++i)
      L.attn.bq[static_cast<size_t>(i)] = static_cast<float>(i);
    L.ffn.gate = view(gate, 128, 64);
    L.ffn.up = view(up, 128, 64);
    L.ffn.down = view(down, 64, 128);
    w.output = view(out, 11, 64);
    auto shard = shard_decoder_weights(c, rank, 2, false, w);
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    // Rows: query heads 2r, 2r+1 (rows [32r, 32r+32)), KV head r, ffn rows [64r, 64r+64).
    EXPECT_EQ(L.attn.wq.rows, 32);
    EXPECT_EQ(L.attn.wq.data, wq.data() + 32 * rank * L.attn.wq.row_bytes);
    EXPECT_EQ(L.attn.wk.data, wk.data() + 16 * rank * L.attn.wk.row_bytes);
    EXPECT_EQ(L.attn.bq.size(), 32u);
    EXPECT_EQ(L.attn.bq[0], 32.0f * static_cast<float>(rank));
    EXPECT_EQ(L.ffn.up.data, up.data() + 64 * rank * L.ffn.up.row_bytes);
    // Output head: vocabulary rows [6r, 6r + (6 or 5)).
    EXPECT_EQ(shard->vocab_stride, 6);
    EXPECT_EQ(shard->vocab_begin, 6 * rank);
    EXPECT_EQ(shard->vocab_count, rank == 0 ? 6 : 5);
    EXPECT_EQ(w.output.rows, shard->vocab_count);
    // Columns: every row of the shard's wo / down equals those columns of the whole row.
    for (auto [part, whole, cols] : {std::tuple{L.attn.wo, view(wo, 64, 64), 32},
                                     std::tuple{L.ffn.down, view(down, 64, 128), 64}}) {
      ASSERT_EQ(part.cols, cols);
      std::vector<float> a(static_cast<size_t>(whole.cols)), b(static_cast<size_t>(cols));
      for (int64_t r = 0; r < whole.rows; ++r) {
        kernels::dequantize_row(whole.dtype, whole.row(r), a.data(), whole.cols);
        kernels::dequantize_row(part.dtype, part.row(r), b.data(), cols);
        for (int32_t k = 0; k < cols; ++k)
          ASSERT_EQ(b[static_cast<size_t>(k)], a[static_cast<size_t>(rank * cols + k)]);
      }
    }
  }
}

// An MLA layer at TP=2 (with a q compression, then with one attn_q): the compressions and the
// latent projection stay whole (the same views), rank r keeps rows [48r, 48r + 48) of attn_q_b /
// attn_q (heads 2r, 2r+1 of 24 dims), those heads' f32 attn_kv_b copies, and input columns
// [32r, 32r + 32) of attn_output (2 heads of 16-wide values), each equal to the whole's.
TEST(TensorShard, MlaSplitsQueryHeadsAndTheirUpProjections) {
  std::mt19937 rng(6);
  const auto wq_a = q8_matrix(32, 64, rng), wq_b = q8_matrix(96, 32, rng);
  const auto wq = q8_matrix(96, 64, rng), wkv_a = q8_matrix(40, 64, rng);
  const auto wo = q8_matrix(64, 64, rng), gate = q8_matrix(128, 64, rng);
  const auto up = q8_matrix(128, 64, rng), down = q8_matrix(64, 128, rng);
  const auto out = q8_matrix(11, 64, rng);
  // Element i of w_uk ([4, 16, 32]) and w_uv_t ([4, 32, 16]) is i: a head's block is findable.
  std::vector<float> uk(4 * 16 * 32), uv(4 * 32 * 16);
  for (size_t i = 0; i < uk.size(); ++i)
    uk[i] = static_cast<float>(i);
  for (size_t i = 0; i < uv.size(); ++i)
    uv[i] = -static_cast<float>(i);
  for (const int32_t q_lora : {32, 0}) {
    ModelConfig c = mla_config();
    c.q_lora_rank = q_lora;
    for (int32_t rank = 0; rank < 2; ++rank) {
      DecoderWeights w;
      w.layers.resize(1);
      DecoderLayer& L = w.layers[0];
      MlaWeights& m = L.mla.emplace();
      if (q_lora > 0) {
        m.wq_a = view(wq_a, 32, 64);
        m.q_a_norm.assign(32, 1.0f);
        m.wq_b = view(wq_b, 96, 32);
      } else {
        m.wq = view(wq, 96, 64);
      }
      m.wkv_a = view(wkv_a, 40, 64);
      m.kv_a_norm.assign(32, 1.0f);
      m.w_uk = uk;
      m.w_uv_t = uv;
      m.wo = view(wo, 64, 64);
      L.ffn.gate = view(gate, 128, 64);
      L.ffn.up = view(up, 128, 64);
      L.ffn.down = view(down, 64, 128);
      w.output = view(out, 11, 64);
      auto shard = shard_decoder_weights(c, rank, 2, false, w);
      ASSERT_TRUE(shard.ok()) << shard.status().message();
      // Replicated: the latent projection (and its norm), the q compression.
      EXPECT_EQ(m.wkv_a.data, wkv_a.data());
      EXPECT_EQ(m.wkv_a.rows, 40);
      EXPECT_EQ(m.kv_a_norm.size(), 32u);
      const kernels::WeightView& q = q_lora > 0 ? m.wq_b : m.wq;
      const std::vector<uint8_t>& q_whole = q_lora > 0 ? wq_b : wq;
      EXPECT_EQ(q.rows, 48);
      EXPECT_EQ(q.data, q_whole.data() + 48 * rank * q.row_bytes);
      if (q_lora > 0) {
        EXPECT_EQ(m.wq_a.data, wq_a.data());
        EXPECT_EQ(m.wq_a.rows, 32);
      }
      // The heads' up-projections: [2, 16, 32] and [2, 32, 16] from head 2r on.
      ASSERT_EQ(m.w_uk.size(), 2u * 16 * 32);
      ASSERT_EQ(m.w_uv_t.size(), 2u * 32 * 16);
      for (size_t i = 0; i < m.w_uk.size(); ++i)
        ASSERT_EQ(m.w_uk[i], uk[static_cast<size_t>(rank) * 2 * 16 * 32 + i]);
      for (size_t i = 0; i < m.w_uv_t.size(); ++i)
        ASSERT_EQ(m.w_uv_t[i], uv[static_cast<size_t>(rank) * 2 * 32 * 16 + i]);
      // attn_output's columns of those heads' values.
      const kernels::WeightView whole = view(wo, 64, 64);
      ASSERT_EQ(m.wo.cols, 32);
      std::vector<float> a(64), b(32);
      for (int64_t r = 0; r < whole.rows; ++r) {
        kernels::dequantize_row(whole.dtype, whole.row(r), a.data(), 64);
        kernels::dequantize_row(m.wo.dtype, m.wo.row(r), b.data(), 32);
        for (int32_t k = 0; k < 32; ++k)
          ASSERT_EQ(b[static_cast<size_t>(k)], a[static_cast<size_t>(rank * 32 + k)]);
      }
      // The dense FFN splits as in any model.
      EXPECT_EQ(L.ffn.up.rows, 64);
    }
  }
}

// attn_output's share off the quantisation block (2 heads of 8-wide values: 16 columns of a Q8_0
// row per rank) is refused naming the tensor.
TEST(TensorShard, MlaRefusesOutputColumnsOffTheQuantBlock) {
  ModelConfig c = mla_config();
  c.v_head_dim = 8;  // attn_output [64, 32]: 16 columns per rank
  std::mt19937 rng(8);
  const auto wq_a = q8_matrix(32, 64, rng), wq_b = q8_matrix(96, 32, rng);
  const auto wkv_a = q8_matrix(40, 64, rng), wo = q8_matrix(64, 32, rng);
  DecoderWeights w;
  w.layers.resize(1);
  MlaWeights& m = w.layers[0].mla.emplace();
  m.wq_a = view(wq_a, 32, 64);
  m.wq_b = view(wq_b, 96, 32);
  m.wkv_a = view(wkv_a, 40, 64);
  m.w_uk.assign(4 * 16 * 32, 0.0f);
  m.w_uv_t.assign(4 * 32 * 8, 0.0f);
  m.wo = view(wo, 64, 32);
  m.wo.name = "blk.0.attn_output.weight";
  auto shard = shard_decoder_weights(c, 1, 2, false, w);
  ASSERT_FALSE(shard.ok());
  EXPECT_NE(shard.status().message().find("blk.0.attn_output.weight"), std::string::npos);
  EXPECT_NE(shard.status().message().find("quantisation block"), std::string::npos);
}

// An act-order MLA output matrix (its rank's head inputs scattered over the blocks) is refused by
// name: the F32 fallback is for MHA's wo only (parallel.md, "GPTQ/AWQ weights under TP").
TEST(TensorShard, MlaRefusesActOrderOutputColumns) {
  ModelConfig c = mla_config();
  c.v_head_dim = 16;  // attn_output [64, 64]: 32 columns per rank, on the block
  std::mt19937 rng(9);
  const auto wq_a = q8_matrix(32, 64, rng), wq_b = q8_matrix(96, 32, rng);
  const auto wkv_a = q8_matrix(40, 64, rng), wo = q8_matrix(64, 64, rng);
  std::vector<int32_t> order(64);
  for (int32_t j = 0; j < 64; ++j)
    order[static_cast<size_t>(j)] = 63 - j;
  DecoderWeights w;
  w.layers.resize(1);
  MlaWeights& m = w.layers[0].mla.emplace();
  m.wq_a = view(wq_a, 32, 64);
  m.wq_b = view(wq_b, 96, 32);
  m.wkv_a = view(wkv_a, 40, 64);
  m.w_uk.assign(4 * 16 * 32, 0.0f);
  m.w_uv_t.assign(4 * 32 * 16, 0.0f);
  m.wo = view(wo, 64, 64);
  m.wo.name = "blk.0.attn_output.weight";
  m.wo.input_order = order.data();
  auto shard = shard_decoder_weights(c, 0, 2, false, w);
  ASSERT_FALSE(shard.ok());
  EXPECT_NE(shard.status().message().find("blk.0.attn_output.weight"), std::string::npos);
  EXPECT_NE(shard.status().message().find("act-order"), std::string::npos)
      << shard.status().message();
}

// K-quant column shares on their 256-element super-block (TinyLlama's wo at TP=2: 1024 of 2048
// columns): each rank's rows of wo (Q4_K) and ffn_down (Q6_K) decode to exactly those columns of
// the whole rows.
TEST(TensorShard, KQuantColumnsOnTheSuperBlock) {
  ModelConfig c = dense_config();
  c.hidden_dim = 512;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 128;  // q_dim 512: 256 columns of wo per rank
  c.ffn_dim = 1024;  // 512 columns of ffn_down per rank
  std::mt19937 rng(5);
  auto matrix = [&](tensor::DType t, int64_t rows, int64_t cols) {
    std::normal_distribution<float> d;
    const size_t row_bytes = *tensor::row_size_bytes(t, static_cast<uint64_t>(cols));
    std::vector<uint8_t> out(static_cast<size_t>(rows) * row_bytes);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
      for (float& v : row)
        v = d(rng);
      kernels::quantize_row(t, row.data(), out.data() + static_cast<size_t>(r) * row_bytes, cols);
    }
    return out;
  };
  auto kview = [](tensor::DType t, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
    kernels::WeightView w;
    w.dtype = t;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = *tensor::row_size_bytes(t, static_cast<uint64_t>(cols));
    w.data = bytes.data();
    return w;
  };
  using tensor::DType;
  const auto wq = matrix(DType::kQ4_K, 512, 512), wkv = matrix(DType::kQ4_K, 256, 512);
  const auto wo = matrix(DType::kQ4_K, 512, 512), gate = matrix(DType::kQ4_K, 1024, 512);
  const auto down = matrix(DType::kQ6_K, 512, 1024), out = matrix(DType::kQ6_K, 11, 512);
  for (int32_t rank = 0; rank < 2; ++rank) {
    DecoderWeights w;
    w.layers.resize(1);
    DecoderLayer& L = w.layers[0];
    L.attn.wq = kview(DType::kQ4_K, wq, 512, 512);
    L.attn.wk = L.attn.wv = kview(DType::kQ4_K, wkv, 256, 512);
    L.attn.wo = kview(DType::kQ4_K, wo, 512, 512);
    L.ffn.gate = L.ffn.up = kview(DType::kQ4_K, gate, 1024, 512);
    L.ffn.down = kview(DType::kQ6_K, down, 512, 1024);
    w.output = kview(DType::kQ6_K, out, 11, 512);
    auto shard = shard_decoder_weights(c, rank, 2, false, w);
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    for (auto [part, whole, cols] :
         {std::tuple{L.attn.wo, kview(DType::kQ4_K, wo, 512, 512), 256},
          std::tuple{L.ffn.down, kview(DType::kQ6_K, down, 512, 1024), 512}}) {
      ASSERT_EQ(part.cols, cols);
      ASSERT_EQ(part.dtype, whole.dtype);
      std::vector<float> a(static_cast<size_t>(whole.cols)), b(static_cast<size_t>(cols));
      for (int64_t r = 0; r < whole.rows; ++r) {
        kernels::dequantize_row(whole.dtype, whole.row(r), a.data(), whole.cols);
        kernels::dequantize_row(part.dtype, part.row(r), b.data(), cols);
        for (int32_t k = 0; k < cols; ++k)
          ASSERT_EQ(b[static_cast<size_t>(k)], a[static_cast<size_t>(rank * cols + k)]);
      }
    }
  }
}

TEST(TensorShard, RefusesColumnsOffTheQuantBlock) {
  ModelConfig c = dense_config();
  c.ffn_dim = 96;  // 48 per rank: not a multiple of Q8_0's 32
  std::mt19937 rng(4);
  const auto m64 = q8_matrix(64, 64, rng), m32 = q8_matrix(32, 64, rng);
  const auto ffn = q8_matrix(96, 64, rng), down = q8_matrix(64, 96, rng),
             out = q8_matrix(11, 64, rng);
  DecoderWeights w;
  w.layers.resize(1);
  DecoderLayer& L = w.layers[0];
  L.attn.wq = view(m64, 64, 64);
  L.attn.wk = view(m32, 32, 64);
  L.attn.wv = view(m32, 32, 64);
  L.attn.wo = view(m64, 64, 64);
  L.ffn.gate = view(ffn, 96, 64);
  L.ffn.up = view(ffn, 96, 64);
  L.ffn.down = view(down, 64, 96);
  L.ffn.down.name = "blk.0.ffn_down.weight";
  w.output = view(out, 11, 64);
  auto shard = shard_decoder_weights(c, 0, 2, false, w);
  ASSERT_FALSE(shard.ok());
  EXPECT_NE(shard.status().message().find("blk.0.ffn_down.weight"), std::string::npos);
  EXPECT_NE(shard.status().message().find("quantisation block"), std::string::npos);
}

// GPTQ/AWQ weights (weight_view.h): Q4_0 blocks with a zero term [groups, rows] and optionally an
// input order. `Quant` owns the bytes; view() describes them.
struct Quant {
  int64_t rows = 0, cols = 0, group = 0;
  std::vector<uint8_t> bytes;
  std::vector<float> zero;     // [cols / group, rows], empty for none
  std::vector<int32_t> order;  // [cols], empty for none
  kernels::WeightView view(const char* name) const {
    kernels::WeightView w;
    w.dtype = tensor::DType::kQ4_0;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = static_cast<size_t>(cols / 32 * 18);
    w.data = bytes.data();
    w.name = name;
    if (!zero.empty()) {
      w.zero_term = zero.data();
      w.zero_group = group;
      w.zero_stride = rows;
    }
    if (!order.empty()) w.input_order = order.data();
    return w;
  }
};

Quant q4_matrix(int64_t rows, int64_t cols, int64_t group, bool ordered, std::mt19937& rng) {
  Quant q;
  q.rows = rows;
  q.cols = cols;
  q.group = group;
  std::normal_distribution<float> d;
  q.bytes.resize(static_cast<size_t>(rows * cols / 32 * 18));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& v : row)
      v = d(rng);
    kernels::quantize_row(tensor::DType::kQ4_0, row.data(), q.bytes.data() + r * cols / 32 * 18,
                          cols);
  }
  if (group > 0) {
    q.zero.resize(static_cast<size_t>(cols / group * rows));
    for (float& v : q.zero)
      v = d(rng);
  }
  if (ordered) {
    q.order.resize(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j)
      q.order[static_cast<size_t>(j)] = static_cast<int32_t>(j);
    std::shuffle(q.order.begin(), q.order.end(), rng);
  }
  return q;
}

// The matrix a view stands for, row r, in input order (dequantised, zero term added).
std::vector<double> matrix_row(const kernels::WeightView& w, int64_t r) {
  std::vector<float> out(static_cast<size_t>(w.cols)), scratch(static_cast<size_t>(w.cols));
  kernels::dequantize_weight_row(w, r, out.data(), scratch.data());
  return {out.begin(), out.end()};
}

struct QuantLayer {
  Quant wq, wk, wv, wo, gate, up, down, out;
};

// One layer of dense_config() in GPTQ form: every matrix Q4_0 with a zero term of `group`
// columns, and, when `ordered`, an input order.
QuantLayer quant_layer(int64_t group, bool ordered, std::mt19937& rng) {
  return {q4_matrix(64, 64, group, ordered, rng),  q4_matrix(32, 64, group, ordered, rng),
          q4_matrix(32, 64, group, ordered, rng),  q4_matrix(64, 64, group, ordered, rng),
          q4_matrix(128, 64, group, ordered, rng), q4_matrix(128, 64, group, ordered, rng),
          q4_matrix(64, 128, group, ordered, rng), q4_matrix(11, 64, 0, false, rng)};
}

void bind(const QuantLayer& q, DecoderWeights& w) {
  w.layers.resize(1);
  DecoderLayer& L = w.layers[0];
  L.attn.wq = q.wq.view("blk.0.attn_q.weight");
  L.attn.wk = q.wk.view("blk.0.attn_k.weight");
  L.attn.wv = q.wv.view("blk.0.attn_v.weight");
  L.attn.wo = q.wo.view("blk.0.attn_output.weight");
  L.ffn.gate = q.gate.view("blk.0.ffn_gate.weight");
  L.ffn.up = q.up.view("blk.0.ffn_up.weight");
  L.ffn.down = q.down.view("blk.0.ffn_down.weight");
  w.output = q.out.view("output.weight");
}

// AWQ / asymmetric GPTQ: the shard's wo and ffn_down columns carry their zero groups: every row
// of the shard's matrix (dequantised with its term) is those columns of the whole one, exactly.
TEST(TensorShard, ZeroTermColumnsCarryTheirGroups) {
  std::mt19937 rng(6);
  const QuantLayer q = quant_layer(32, false, rng);
  for (int32_t rank = 0; rank < 2; ++rank) {
    DecoderWeights w;
    bind(q, w);
    auto shard = shard_decoder_weights(dense_config(), rank, 2, false, w);
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    const DecoderLayer& L = w.layers[0];
    EXPECT_EQ(shard->dequantised_tensors, 0);
    for (auto [part, whole, cols] : {std::tuple{L.attn.wo, q.wo.view("wo"), 32},
                                     std::tuple{L.ffn.down, q.down.view("down"), 64}}) {
      ASSERT_EQ(part.cols, cols);
      ASSERT_EQ(part.dtype, tensor::DType::kQ4_0);
      ASSERT_NE(part.zero_term, nullptr);
      EXPECT_EQ(part.zero_groups(), cols / 32);
      for (int64_t r = 0; r < whole.rows; ++r) {
        const std::vector<double> a = matrix_row(whole, r), b = matrix_row(part, r);
        for (int32_t k = 0; k < cols; ++k)
          ASSERT_EQ(b[static_cast<size_t>(k)], a[static_cast<size_t>(rank * cols + k)]);
      }
    }
    // Row-split matrices keep their rows' terms (row_slice): gate row i is whole row 64r + i.
    for (int64_t i = 0; i < L.ffn.gate.rows; ++i)
      ASSERT_EQ(matrix_row(L.ffn.gate, i), matrix_row(q.gate.view("gate"), 64 * rank + i));
  }
}

TEST(TensorShard, RefusesColumnsOffTheZeroGroup) {
  std::mt19937 rng(7);
  const QuantLayer q = quant_layer(64, false, rng);  // wo's 32-column shares split a group
  DecoderWeights w;
  bind(q, w);
  auto shard = shard_decoder_weights(dense_config(), 1, 2, false, w);
  ASSERT_FALSE(shard.ok());
  EXPECT_NE(shard.status().message().find("blk.0.attn_output.weight"), std::string::npos)
      << shard.status().message();
  EXPECT_NE(shard.status().message().find("[32, 64) does not start and end on its 64-column "
                                          "zero-point groups"),
            std::string::npos)
      << shard.status().message();
}

// Act-order GPTQ (an input order and a zero term on every matrix): each rank's FFN computes the
// features its contiguous run of ffn_down's stored columns holds (gate/up rows gathered), and wo
// keeps the rank's heads' input columns as F32. Checked against the definition in float64: the
// ranks' partial FFN and wo outputs sum to the whole matrices' (up to rounding), every feature
// is computed by exactly one rank, and wo's F32 columns equal the whole matrix's exactly.
TEST(TensorShard, ActOrderSplitsTheFfnByStoredColumnsAndWoInF32) {
  std::mt19937 rng(8);
  const QuantLayer q = quant_layer(32, true, rng);
  std::normal_distribution<double> d;
  std::vector<double> x(64), heads(64);
  for (double& v : x)
    v = d(rng);
  for (double& v : heads)
    v = d(rng);
  auto dot = [](const std::vector<double>& a, const double* b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i)
      s += a[i] * b[i];
    return s;
  };
  // The whole layer: y = down (gate x * up x) (no activation: the split is linear in it), o = wo h.
  std::vector<double> h(128), y(64, 0.0), o(64, 0.0), y_split(64, 0.0), o_split(64, 0.0);
  for (int64_t f = 0; f < 128; ++f)
    h[static_cast<size_t>(f)] = dot(matrix_row(q.gate.view("g"), f), x.data()) *
                                dot(matrix_row(q.up.view("u"), f), x.data());
  for (int64_t r = 0; r < 64; ++r) {
    y[static_cast<size_t>(r)] = dot(matrix_row(q.down.view("d"), r), h.data());
    o[static_cast<size_t>(r)] = dot(matrix_row(q.wo.view("o"), r), heads.data());
  }
  std::vector<int> computed(128, 0);
  for (int32_t rank = 0; rank < 2; ++rank) {
    DecoderWeights w;
    bind(q, w);
    auto shard = shard_decoder_weights(dense_config(), rank, 2, false, w);
    ASSERT_TRUE(shard.ok()) << shard.status().message();
    const DecoderLayer& L = w.layers[0];
    EXPECT_EQ(shard->dequantised_tensors, 1);
    EXPECT_EQ(shard->dequantised_bytes, 64u * 32u * 4u);
    // FFN: 64 gathered rows of gate/up (their own input order and terms kept), down's stored
    // columns [64r, 64r + 64) in the identity order with their zero groups.
    ASSERT_EQ(L.ffn.gate.rows, 64);
    ASSERT_EQ(L.ffn.down.cols, 64);
    EXPECT_EQ(L.ffn.down.input_order, nullptr);
    EXPECT_EQ(L.ffn.gate.input_order, q.gate.order.data());
    EXPECT_EQ(L.ffn.down.dtype, tensor::DType::kQ4_0);
    std::vector<double> h_local(64);
    for (int64_t i = 0; i < 64; ++i) {
      const int32_t f = q.down.order[static_cast<size_t>(64 * rank + i)];
      ++computed[static_cast<size_t>(f)];
      ASSERT_EQ(matrix_row(L.ffn.gate, i), matrix_row(q.gate.view("g"), f));
      ASSERT_EQ(matrix_row(L.ffn.up, i), matrix_row(q.up.view("u"), f));
      h_local[static_cast<size_t>(i)] =
          dot(matrix_row(L.ffn.gate, i), x.data()) * dot(matrix_row(L.ffn.up, i), x.data());
    }
    // wo: F32 rows of the rank's 32 head inputs, exactly the whole matrix's columns.
    ASSERT_EQ(L.attn.wo.dtype, tensor::DType::kF32);
    ASSERT_EQ(L.attn.wo.cols, 32);
    EXPECT_EQ(L.attn.wo.zero_term, nullptr);
    EXPECT_EQ(L.attn.wo.input_order, nullptr);
    for (int64_t r = 0; r < 64; ++r) {
      const std::vector<double> whole = matrix_row(q.wo.view("o"), r);
      const std::vector<double> part = matrix_row(L.attn.wo, r);
      for (int64_t k = 0; k < 32; ++k)
        ASSERT_EQ(part[static_cast<size_t>(k)], whole[static_cast<size_t>(32 * rank + k)]);
      y_split[static_cast<size_t>(r)] += dot(matrix_row(L.ffn.down, r), h_local.data());
      o_split[static_cast<size_t>(r)] += dot(part, heads.data() + 32 * rank);
    }
  }
  EXPECT_EQ(computed, std::vector<int>(128, 1));
  for (size_t r = 0; r < 64; ++r) {
    EXPECT_NEAR(y_split[r], y[r], 1e-9 * (1 + std::abs(y[r])));
    EXPECT_NEAR(o_split[r], o[r], 1e-9 * (1 + std::abs(o[r])));
  }
}

TEST(LocalCommunicator, IsOneRank) {
  backend::parallel::LocalCommunicator comm;
  EXPECT_EQ(comm.size(), 1);
  float x[3] = {1, 2, 3};
  comm.all_reduce_sum(x, 3);
  EXPECT_EQ(x[2], 3.0f);
  float y[3] = {};
  comm.all_gather(x, sizeof(x), y);
  EXPECT_EQ(y[1], 2.0f);
}

}  // namespace
}  // namespace pagoda::model
