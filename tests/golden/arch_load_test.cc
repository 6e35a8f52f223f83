// Hostile variants of the models/arch fixtures (phi3, gemma2, qwen2moe, deepseek2): each copy
// changes one thing (a tensor missing, misshapen or unsupported, a metadata value out of range)
// and loading must fail with an error naming it, never crash. The unmodified copies load.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "golden/gguf_copy.h"
#include "loader/model_loader.h"

namespace pagoda {
namespace {

using format::GgufWriteValue;

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "\"" << (haystack) << "\" does not contain \"" << (needle) << "\""

using Tensor = testing::GgufCopyTensor;
using Mutation = testing::GgufEdits;

// load_model's error for models/arch/<model> copied with `m` applied ("" when it loads).
std::string load_error(const std::string& model, const Mutation& m) {
  auto out = testing::write_gguf_copy(pagoda::testing::fixture("models/arch/" + model), m,
                                      "arch_load_test_" + model);
  if (!out.ok()) return "copy: " + out.status().to_string();
  auto loaded = loader::load_model(*out);
  return loaded.ok() ? "" : loaded.status().to_string();
}

std::function<void(std::vector<Tensor>&)> drop(const std::string& name) {
  return [name](std::vector<Tensor>& ts) {
    std::erase_if(ts, [&](const Tensor& t) { return t.name == name; });
  };
}

// Replaces tensor `name` by an F32 tensor of `dims` (zeros).
std::function<void(std::vector<Tensor>&)> reshape(const std::string& name,
                                                  std::vector<uint64_t> dims) {
  return [name, dims](std::vector<Tensor>& ts) {
    uint64_t n = 1;
    for (uint64_t d : dims)
      n *= d;
    for (Tensor& t : ts) {
      if (t.name == name) t = Tensor{name, tensor::DType::kF32, dims, std::vector<uint8_t>(n * 4)};
    }
  };
}

class ArchLoadTest : public ::testing::Test {
 protected:
  void SetUp() override { PAGODA_REQUIRE_FIXTURE(pagoda::testing::fixture("models/arch")); }
};

TEST_F(ArchLoadTest, UnmodifiedCopiesLoad) {
  for (const char* m :
       {"phi3-Q8_0.gguf", "gemma2-Q8_0.gguf", "qwen2moe-Q8_0.gguf", "deepseek2-Q8_0.gguf"})
    EXPECT_EQ(load_error(m, {}), "") << m;
}

// Metadata key `key` set to `value`.
Mutation set_key(const std::string& key, GgufWriteValue value) {
  return {[key, value](format::GgufWriter& w) { w.set(key, value); }, nullptr};
}

// LongRoPE tables added to the phi3 fixture (rope dims 64: 32 factors each): `n` factors of
// `value` per table, in order.
std::function<void(std::vector<Tensor>&)> add_tables(
    std::vector<std::tuple<std::string, size_t, float>> tables) {
  return [tables](std::vector<Tensor>& ts) {
    for (const auto& [name, n, value] : tables)
      ts.push_back(testing::f32_tensor(name, std::vector<float>(n, value)));
  };
}

TEST_F(ArchLoadTest, Phi3) {
  const std::string kLong = "rope_factors_long.weight", kShort = "rope_factors_short.weight";
  const auto tables_error = [](std::vector<std::tuple<std::string, size_t, float>> t) {
    return load_error("phi3-Q8_0.gguf", {nullptr, add_tables(std::move(t))});
  };
  EXPECT_CONTAINS(tables_error({{kLong, 32, 2}}),
                  "LongRoPE needs both rope_factors_long.weight and rope_factors_short.weight; "
                  "the model has only the long one");
  EXPECT_CONTAINS(tables_error({{kLong, 32, 2}, {kShort, 31, 1}}),
                  "tensor 'rope_factors_short.weight' has shape [31] but [32] was expected");
  EXPECT_CONTAINS(tables_error({{kLong, 32, 0}, {kShort, 32, 1}}),
                  "rope_factors_long.weight has factor 0");
  EXPECT_CONTAINS(tables_error({{kLong, 32, 2}, {kShort, 32, NAN}}),
                  "rope_factors_short.weight has factor nan");
  EXPECT_CONTAINS(tables_error({{kLong, 32, 2}, {kShort, 32, 1}, {"rope_freqs.weight", 32, 1}}),
                  "rope_freqs.weight and LongRoPE's rope_factors_long/short.weight are both");
  EXPECT_CONTAINS(load_error("phi3-Q8_0.gguf",
                             set_key("phi3.rope.scaling.attn_factor", GgufWriteValue::f32(-1.0f))),
                  "phi3.rope.scaling.attn_factor -1 is out of range");
  EXPECT_CONTAINS(load_error("phi3-Q8_0.gguf", set_key("phi3.rope.scaling.original_context_length",
                                                       GgufWriteValue::u32(0))),
                  "phi3.rope.scaling.original_context_length = 0 is out of range");
  // Both tables of the right shape, with their keys: it loads.
  Mutation both = set_key("phi3.rope.scaling.original_context_length", GgufWriteValue::u32(64));
  both.tensors = add_tables({{kLong, 32, 2}, {kShort, 32, 1}});
  EXPECT_EQ(load_error("phi3-Q8_0.gguf", both), "");
  EXPECT_CONTAINS(
      load_error("phi3-Q8_0.gguf", {nullptr, reshape("blk.1.attn_qkv.weight", {256, 500})}),
      "tensor 'blk.1.attn_qkv.weight' has shape [256, 500] but [256, 512] was expected");
  EXPECT_CONTAINS(
      load_error("phi3-Q8_0.gguf", {nullptr, reshape("blk.0.ffn_up.weight", {256, 512})}),
      "tensor 'blk.0.ffn_up.weight' has shape [256, 512] but [256, 1024] was expected");
}

TEST_F(ArchLoadTest, Gemma2) {
  EXPECT_CONTAINS(load_error("gemma2-Q8_0.gguf", {nullptr, drop("blk.3.post_ffw_norm.weight")}),
                  "tensor 'blk.3.post_ffw_norm.weight' is missing");
  EXPECT_CONTAINS(load_error("gemma2-Q8_0.gguf",
                             set_key("gemma2.final_logit_softcapping", GgufWriteValue::f32(-0.4f))),
                  "gemma2.final_logit_softcapping = -0.4");
}

TEST_F(ArchLoadTest, Qwen2Moe) {
  EXPECT_CONTAINS(load_error("qwen2moe-Q8_0.gguf",
                             {nullptr, reshape("blk.1.ffn_gate_inp_shexp.weight", {128})}),
                  "tensor 'blk.1.ffn_gate_inp_shexp.weight' has shape [128]");
  EXPECT_CONTAINS(load_error("qwen2moe-Q8_0.gguf", {nullptr, drop("blk.0.ffn_down_shexp.weight")}),
                  "tensor 'blk.0.ffn_down_shexp.weight' is missing");
  EXPECT_CONTAINS(load_error("qwen2moe-Q8_0.gguf", set_key("qwen2moe.expert_feed_forward_length",
                                                           GgufWriteValue::u32(0))),
                  "qwen2moe.expert_feed_forward_length = 0 is out of range");
}

TEST_F(ArchLoadTest, Deepseek2) {
  EXPECT_CONTAINS(
      load_error("deepseek2-Q8_0.gguf", {nullptr, reshape("blk.1.attn_kv_b.weight", {64, 250})}),
      "tensor 'blk.1.attn_kv_b.weight' has shape [64, 250] but [64, 256] was expected");
  EXPECT_CONTAINS(load_error("deepseek2-Q8_0.gguf", {nullptr, drop("blk.2.ffn_up_shexp.weight")}),
                  "tensor 'blk.2.ffn_up_shexp.weight' is missing");
  EXPECT_CONTAINS(load_error("deepseek2-Q8_0.gguf",
                             {[](format::GgufWriter& w) {
                                w.set("deepseek2.expert_group_count", GgufWriteValue::u32(2));
                                w.set("deepseek2.expert_group_used_count", GgufWriteValue::u32(3));
                              },
                              nullptr}),
                  "expert_group_count 2 / expert_group_used_count 3 must be positive");
  EXPECT_CONTAINS(load_error("deepseek2-Q8_0.gguf", set_key("deepseek2.leading_dense_block_count",
                                                            GgufWriteValue::u32(9))),
                  "deepseek2.leading_dense_block_count = 9 is out of range [0, 3]");
}

}  // namespace
}  // namespace pagoda
