// The tensor-type mixes of `pagoda quantize`, against hand-derived expectations from llama.cpp's
// rules (llama-quant.cpp) for real model layouts: TinyLlama (22 layers, GQA 8), Qwen2.5-0.5B
// (hidden 896: not whole 256-blocks, so the K-types fall back), Mixtral-style 8 experts.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "convert/quantize/quant_mix.h"

namespace pagoda::convert {
namespace {

using tensor::DType;

struct Layout {
  MixModel model;
  std::vector<std::string> names;
  std::vector<MixTensor> tensors;
};

void add(Layout& l, std::string name, std::vector<uint64_t> dims, DType type = DType::kF16) {
  l.names.push_back(std::move(name));
  MixTensor t;
  t.n_dims = static_cast<uint32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    t.dims[i] = dims[i];
  t.dtype = type;
  l.tensors.push_back(t);
}

// A llama-layout model (ggml dims: [cols, rows]).
Layout llama_layout(int layers, uint64_t hidden, uint64_t kv_dim, uint64_t ffn, int heads,
                    int kv_heads, bool tied, int experts = 0) {
  Layout l;
  l.model = {"llama", layers, heads, kv_heads, experts};
  add(l, "token_embd.weight", {hidden, 32000});
  for (int i = 0; i < layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(l, b + "attn_norm.weight", {hidden}, DType::kF32);
    add(l, b + "attn_q.weight", {hidden, hidden});
    add(l, b + "attn_k.weight", {hidden, kv_dim});
    add(l, b + "attn_v.weight", {hidden, kv_dim});
    add(l, b + "attn_output.weight", {hidden, hidden});
    add(l, b + "ffn_norm.weight", {hidden}, DType::kF32);
    if (experts > 0) {
      add(l, b + "ffn_gate_inp.weight", {hidden, static_cast<uint64_t>(experts)}, DType::kF32);
      add(l, b + "ffn_gate_exps.weight", {hidden, ffn, static_cast<uint64_t>(experts)});
      add(l, b + "ffn_up_exps.weight", {hidden, ffn, static_cast<uint64_t>(experts)});
      add(l, b + "ffn_down_exps.weight", {ffn, hidden, static_cast<uint64_t>(experts)});
    } else {
      add(l, b + "ffn_gate.weight", {hidden, ffn});
      add(l, b + "ffn_up.weight", {hidden, ffn});
      add(l, b + "ffn_down.weight", {ffn, hidden});
    }
  }
  add(l, "output_norm.weight", {hidden}, DType::kF32);
  if (!tied) add(l, "output.weight", {hidden, 32000});
  return l;
}

Layout tinyllama() {
  return llama_layout(22, 2048, 256, 5632, 32, 4, false);
}

std::map<std::string, DType> plan(Layout l, FileType type) {
  for (size_t i = 0; i < l.tensors.size(); ++i)
    l.tensors[i].name = l.names[i];
  auto plans = plan_tensor_types(l.model, type, l.tensors);
  EXPECT_TRUE(plans.ok()) << plans.status().to_string();
  std::map<std::string, DType> out;
  if (!plans.ok()) return out;
  for (size_t i = 0; i < l.names.size(); ++i)
    out[l.names[i]] = (*plans)[i].dtype;
  return out;
}

std::string blk(int i, const char* name) {
  return "blk." + std::to_string(i) + "." + name;
}

// use_more_bits for 22 layers, worked out by hand: layers < 22/8 = 2, layers >= 7*22/8 = 19,
// and (i - 2) % 3 == 2.
const std::set<int> kMoreBits22 = {0, 1, 4, 7, 10, 13, 16, 19, 20, 21};

TEST(QuantMix, Q4KMOnTinyLlama) {
  auto types = plan(tinyllama(), FileType::kQ4_K_M);
  EXPECT_EQ(types["output.weight"], DType::kQ6_K);
  EXPECT_EQ(types["token_embd.weight"], DType::kQ4_K);
  EXPECT_EQ(types["output_norm.weight"], DType::kF32);
  for (int i = 0; i < 22; ++i) {
    const DType more = kMoreBits22.count(i) ? DType::kQ6_K : DType::kQ4_K;
    EXPECT_EQ(types[blk(i, "attn_v.weight")], more) << i;
    EXPECT_EQ(types[blk(i, "ffn_down.weight")], more) << i;
    EXPECT_EQ(types[blk(i, "attn_q.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(types[blk(i, "attn_k.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(types[blk(i, "attn_output.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(types[blk(i, "ffn_gate.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(types[blk(i, "ffn_up.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(types[blk(i, "attn_norm.weight")], DType::kF32) << i;
  }
}

TEST(QuantMix, CountersFollowLayerOrderNotFileOrder) {
  Layout l = tinyllama();
  std::reverse(l.names.begin(), l.names.end());
  std::reverse(l.tensors.begin(), l.tensors.end());
  auto types = plan(l, FileType::kQ5_K_M);
  for (int i = 0; i < 22; ++i) {
    const DType more = kMoreBits22.count(i) ? DType::kQ6_K : DType::kQ5_K;
    EXPECT_EQ(types[blk(i, "attn_v.weight")], more) << i;
    EXPECT_EQ(types[blk(i, "ffn_down.weight")], more) << i;
  }
}

TEST(QuantMix, OtherKMixesOnTinyLlama) {
  auto q3m = plan(tinyllama(), FileType::kQ3_K_M);
  auto q4s = plan(tinyllama(), FileType::kQ4_K_S);
  auto q2 = plan(tinyllama(), FileType::kQ2_K);
  auto q6 = plan(tinyllama(), FileType::kQ6_K);
  for (int i = 0; i < 22; ++i) {
    // Q3_K_M: attn_v Q5_K in the first two layers, ffn_down Q5_K below 22/16 = 1.
    EXPECT_EQ(q3m[blk(i, "attn_v.weight")], i < 2 ? DType::kQ5_K : DType::kQ4_K) << i;
    EXPECT_EQ(q3m[blk(i, "ffn_down.weight")], i < 1 ? DType::kQ5_K : DType::kQ4_K) << i;
    EXPECT_EQ(q3m[blk(i, "attn_output.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(q3m[blk(i, "ffn_up.weight")], DType::kQ3_K) << i;
    // Q4_K_S: attn_v Q5_K in the first four layers, ffn_down in the first 22/8 = 2.
    EXPECT_EQ(q4s[blk(i, "attn_v.weight")], i < 4 ? DType::kQ5_K : DType::kQ4_K) << i;
    EXPECT_EQ(q4s[blk(i, "ffn_down.weight")], i < 2 ? DType::kQ5_K : DType::kQ4_K) << i;
    // Q2_K with GQA 32/4 = 8 >= 4: attn_v Q4_K; ffn_down and attn_output Q3_K.
    EXPECT_EQ(q2[blk(i, "attn_v.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(q2[blk(i, "ffn_down.weight")], DType::kQ3_K) << i;
    EXPECT_EQ(q2[blk(i, "attn_output.weight")], DType::kQ3_K) << i;
    EXPECT_EQ(q2[blk(i, "attn_q.weight")], DType::kQ2_K) << i;
    EXPECT_EQ(q6[blk(i, "attn_v.weight")], DType::kQ6_K) << i;
  }
  EXPECT_EQ(q3m["output.weight"], DType::kQ6_K);
  EXPECT_EQ(q2["output.weight"], DType::kQ6_K);
  EXPECT_EQ(q2["token_embd.weight"], DType::kQ2_K);
  // GQA 2 (< 4): Q2_K keeps attn_v at Q3_K.
  auto q2_gqa2 = plan(llama_layout(2, 256, 128, 768, 4, 2, false), FileType::kQ2_K);
  EXPECT_EQ(q2_gqa2[blk(0, "attn_v.weight")], DType::kQ3_K);
}

TEST(QuantMix, LegacyTypesKeepEverythingButOutput) {
  auto q4 = plan(tinyllama(), FileType::kQ4_0);
  auto q8 = plan(tinyllama(), FileType::kQ8_0);
  auto f16 = plan(tinyllama(), FileType::kF16);
  EXPECT_EQ(q4["output.weight"], DType::kQ6_K);
  EXPECT_EQ(q8["output.weight"], DType::kQ8_0);
  EXPECT_EQ(q4["token_embd.weight"], DType::kQ4_0);
  EXPECT_EQ(q4[blk(0, "attn_v.weight")], DType::kQ4_0);
  EXPECT_EQ(q4[blk(21, "ffn_down.weight")], DType::kQ4_0);
  EXPECT_EQ(q8[blk(0, "ffn_down.weight")], DType::kQ8_0);
  EXPECT_EQ(f16["output.weight"], DType::kF16);
  EXPECT_EQ(f16["blk.0.attn_norm.weight"], DType::kF32);
}

TEST(QuantMix, TiedEmbeddingsTakeTheOutputType) {
  auto types = plan(llama_layout(16, 2048, 512, 8192, 32, 8, /*tied=*/true), FileType::kQ4_K_M);
  EXPECT_EQ(types.count("output.weight"), 0u);
  EXPECT_EQ(types["token_embd.weight"], DType::kQ6_K);
  auto q8 = plan(llama_layout(16, 2048, 512, 8192, 32, 8, true), FileType::kQ8_0);
  EXPECT_EQ(q8["token_embd.weight"], DType::kQ8_0);
}

TEST(QuantMix, RowsNotWholeKBlocksFallBack) {
  // Qwen2.5-0.5B: hidden 896 = 3.5 x 256, ffn 4864 = 19 x 256; tied embeddings.
  Layout l = llama_layout(24, 896, 128, 4864, 14, 2, /*tied=*/true);
  l.model.arch = "qwen2";
  auto types = plan(l, FileType::kQ4_K_M);
  EXPECT_EQ(types["token_embd.weight"], DType::kQ8_0);  // Q6_K -> Q8_0
  for (int i = 0; i < 24; ++i) {
    // use_more_bits(24): < 3, >= 21, (i - 3) % 3 == 2.
    const bool more = i < 3 || i >= 21 || (i - 3) % 3 == 2;
    EXPECT_EQ(types[blk(i, "attn_q.weight")], DType::kQ5_0) << i;  // Q4_K -> Q5_0
    EXPECT_EQ(types[blk(i, "attn_v.weight")], more ? DType::kQ8_0 : DType::kQ5_0) << i;
    EXPECT_EQ(types[blk(i, "ffn_up.weight")], DType::kQ5_0) << i;
    EXPECT_EQ(types[blk(i, "ffn_down.weight")], more ? DType::kQ6_K : DType::kQ4_K) << i;
  }
  auto q5s = plan(l, FileType::kQ5_K_S);
  EXPECT_EQ(q5s[blk(0, "attn_q.weight")], DType::kQ5_1);  // Q5_K -> Q5_1
  auto q3 = plan(l, FileType::kQ3_K_S);
  EXPECT_EQ(q3[blk(0, "attn_q.weight")], DType::kQ4_0);  // Q3_K -> (IQ4_NL in llama.cpp)
  auto q4_0 = plan(l, FileType::kQ4_0);
  EXPECT_EQ(q4_0[blk(0, "attn_q.weight")], DType::kQ4_0);  // 896 = 28 x 32: no fallback
}

TEST(QuantMix, EightExpertsRaiseAttention) {
  auto types = plan(llama_layout(4, 512, 128, 1024, 8, 2, false, 8), FileType::kQ4_K_M);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(types[blk(i, "attn_v.weight")], DType::kQ8_0) << i;
    EXPECT_EQ(types[blk(i, "attn_k.weight")], DType::kQ8_0) << i;
    EXPECT_EQ(types[blk(i, "attn_output.weight")], DType::kQ5_K) << i;
    EXPECT_EQ(types[blk(i, "attn_q.weight")], DType::kQ4_K) << i;
    EXPECT_EQ(types[blk(i, "ffn_gate_inp.weight")], DType::kF32) << i;  // router: copied
    EXPECT_EQ(types[blk(i, "ffn_gate_exps.weight")], DType::kQ4_K) << i;
    // use_more_bits(4): layers >= 7*4/8 = 3 and (i - 0) % 3 == 2.
    EXPECT_EQ(types[blk(i, "ffn_down_exps.weight")], i >= 2 ? DType::kQ6_K : DType::kQ4_K) << i;
  }
  // Four experts: no special attention rule.
  auto four = plan(llama_layout(2, 256, 128, 256, 4, 2, true, 4), FileType::kQ4_K_M);
  EXPECT_EQ(four[blk(0, "attn_k.weight")], DType::kQ4_K);
}

TEST(QuantMix, MoeTensorWithoutLayerIsAnError) {
  Layout l = llama_layout(2, 256, 128, 256, 4, 2, true, 8);
  add(l, "blk.7.ffn_down_exps.weight", {256, 256, 8});  // block_count is 2
  for (size_t i = 0; i < l.tensors.size(); ++i)
    l.tensors[i].name = l.names[i];
  auto plans = plan_tensor_types(l.model, FileType::kQ4_K_M, l.tensors);
  ASSERT_FALSE(plans.ok());
  EXPECT_NE(plans.status().message().find("blk.7.ffn_down_exps.weight"), std::string::npos);
}

TEST(QuantMix, WhatIsQuantized) {
  auto q = [](const char* name, std::vector<uint64_t> dims) {
    MixTensor t;
    t.name = name;
    t.n_dims = static_cast<uint32_t>(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      t.dims[i] = dims[i];
    return is_quantizable(t);
  };
  EXPECT_TRUE(q("blk.0.attn_q.weight", {256, 256}));
  EXPECT_TRUE(q("blk.0.ffn_up_exps.weight", {256, 256, 8}));
  EXPECT_FALSE(q("blk.0.attn_norm.weight", {256}));
  EXPECT_FALSE(q("blk.0.attn_norm.weight", {256, 1}));  // norms never, whatever their dims
  EXPECT_FALSE(q("blk.0.attn_q.bias", {256}));
  EXPECT_FALSE(q("rope_freqs.weight", {32}));
  EXPECT_FALSE(q("blk.0.ffn_gate_inp.weight", {256, 8}));
}

TEST(QuantMix, FileTypeNames) {
  EXPECT_EQ(file_type_from_name("q4_k_m"), FileType::kQ4_K_M);
  EXPECT_EQ(file_type_from_name("Q4_K"), FileType::kQ4_K_M);
  EXPECT_EQ(file_type_from_name("Q8_0"), FileType::kQ8_0);
  EXPECT_EQ(file_type_from_name("bf16"), FileType::kBF16);
  EXPECT_FALSE(file_type_from_name("Q7_0").has_value());
  EXPECT_FALSE(file_type_from_name("").has_value());
  // llama.cpp's numbers, written as general.file_type.
  EXPECT_EQ(static_cast<uint32_t>(FileType::kQ4_K_M), 15u);
  EXPECT_EQ(static_cast<uint32_t>(FileType::kQ8_0), 7u);
  EXPECT_EQ(file_type_base(FileType::kQ5_K_S), DType::kQ5_K);
}

}  // namespace
}  // namespace pagoda::convert
