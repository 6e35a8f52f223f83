// Hyper-parameter bounds have one owner, model::ConfigLimits + model::validate_config: a GGUF file
// (its `<arch>.*` keys) and a Hugging Face config.json are both held to them, each error naming
// the reader's own key. One bad value per rule on top of a valid llama-like model.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "format/hf_config.h"
#include "loader/gguf_config.h"
#include "loader/hf/hf_checkpoint.h"
#include "model/arch/arch.h"
#include "model/model_config.h"

namespace pagoda::loader {
namespace {

using format::GgufWriter;
using L = model::ConfigLimits;
using V = format::GgufWriteValue;

GgufWriter llama_like() {
  GgufWriter w;
  w.set("general.architecture", V::string("llama"))
      .set("llama.block_count", V::u32(2))
      .set("llama.context_length", V::u32(2048))
      .set("llama.embedding_length", V::u32(256))
      .set("llama.feed_forward_length", V::u32(768))
      .set("llama.attention.head_count", V::u32(4))
      .set("llama.attention.head_count_kv", V::u32(2))
      .set("tokenizer.ggml.tokens", V::string_array({"<unk>", "<s>", "</s>", "a", "b"}));
  return w;
}

// What the loader makes of a GGUF file's metadata: config_from_gguf, then the model's validation
// (as load_model runs them); "" when the config is valid, else the error message.
std::string gguf_error(const GgufWriter& w) {
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return "writer: " + bytes.status().to_string();
  auto file = format::GgufFile::parse(*bytes);
  if (!file.ok()) return "format: " + file.status().to_string();
  auto config = config_from_gguf(**file);
  if (!config.ok()) return config.status().message();
  const Status st = model::validate_config(*config);
  return st.ok() ? "" : st.message();
}

constexpr const char* kLlamaJson = R"({
  "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 768,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 2048, "vocab_size": 32000})";

struct Field {
  std::string name;
  std::string json;  // the value as JSON text
};

// What model_config_from_hf makes of a llama-like config.json with `fields` set (replaced or
// added); `mixtral` makes it a MixtralForCausalLM with 8 experts, 2 per token. "" when valid.
std::string hf_error(const std::vector<Field>& fields, bool mixtral = false) {
  std::string text = kLlamaJson;
  text.pop_back();  // the closing brace
  std::vector<Field> all = fields;
  if (mixtral) {
    text.replace(text.find("LlamaForCausalLM"), 16, "MixtralForCausalLM");
    all.insert(all.begin(), {{"num_local_experts", "8"}, {"num_experts_per_tok", "2"}});
  }
  for (const Field& f : all) {
    const std::string key = "\"" + f.name + "\": ";
    const size_t at = text.find(key);
    if (at == std::string::npos) {
      text += ", " + key + f.json;
    } else {
      const size_t end = text.find_first_of(",}", at);
      text.replace(at, end - at, key + f.json);
    }
  }
  text += "}";
  auto hf = format::parse_hf_config(text);
  if (!hf.ok()) return "parse: " + hf.status().to_string();
  auto config = model_config_from_hf(*hf, nullptr);
  return config.ok() ? "" : config.status().message();
}

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "missing \"" << (needle) << "\" in: \"" << (haystack) << "\""

TEST(ConfigBoundsTest, LlamaLikeIsValid) {
  EXPECT_EQ(gguf_error(llama_like()), "");
  EXPECT_EQ(hf_error({}), "");
  EXPECT_EQ(hf_error({}, /*mixtral=*/true), "");
}

// The same bound, from model::ConfigLimits, on the GGUF and the config.json path alike.
TEST(ConfigBoundsTest, SameBoundOnBothPaths) {
  struct Case {
    const char* gguf_key;
    const char* hf_field;
    int64_t limit;
    bool experts;
  };
  for (const Case& c :
       {Case{"llama.block_count", "num_hidden_layers", L::kMaxLayers, false},
        Case{"llama.embedding_length", "hidden_size", L::kMaxHidden, false},
        Case{"llama.attention.head_count", "num_attention_heads", L::kMaxHeads, false},
        Case{"llama.attention.head_count_kv", "num_key_value_heads", L::kMaxHeads, false},
        Case{"llama.attention.key_length", "head_dim", L::kMaxHeadDim, false},
        Case{"llama.feed_forward_length", "intermediate_size", L::kMaxFfn, false},
        Case{"llama.vocab_size", "vocab_size", L::kMaxVocab, false},
        Case{"llama.context_length", "max_position_embeddings", L::kMaxContext, false},
        Case{"llama.expert_count", "num_local_experts", L::kMaxExperts, true}}) {
    SCOPED_TRACE(c.gguf_key);
    const std::string range = fmt::format("is out of range [1, {}]", c.limit);
    const auto over = static_cast<uint64_t>(c.limit) + 1;
    GgufWriter w = llama_like().set(c.gguf_key, V::u64(over));
    if (c.experts) w.set("llama.expert_used_count", V::u32(2));
    const std::string gguf = gguf_error(w);
    EXPECT_CONTAINS(gguf, fmt::format("{} = {} {}", c.gguf_key, over, range));
    const std::string hf = hf_error({{c.hf_field, std::to_string(over)}}, c.experts);
    EXPECT_CONTAINS(hf, fmt::format("config.json: {} = {} {}", c.hf_field, over, range));
  }
  // At the limit itself both readers take the value.
  EXPECT_EQ(gguf_error(llama_like().set("llama.block_count", V::u32(L::kMaxLayers))), "");
  EXPECT_EQ(hf_error({{"num_hidden_layers", std::to_string(L::kMaxLayers)}}), "");
  EXPECT_EQ(gguf_error(llama_like().set("llama.context_length", V::u32(L::kMaxContext))), "");
  EXPECT_EQ(hf_error({{"max_position_embeddings", std::to_string(L::kMaxContext)}}), "");

  // RoPE base frequency: one upper bound (before, GGUF files had none).
  const std::string theta = fmt::format("out of range (0, {}]", L::kMaxRopeTheta);
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.rope.freq_base", V::f32(1e13f))), theta);
  EXPECT_CONTAINS(hf_error({{"rope_theta", "1e13"}}), theta);
  EXPECT_EQ(gguf_error(llama_like().set("llama.rope.freq_base", V::f32(1e6f))), "");
  // A scaling factor above kMaxRopeScaling, on both paths.
  EXPECT_CONTAINS(gguf_error(llama_like()
                                 .set("llama.rope.scaling.type", V::string("linear"))
                                 .set("llama.rope.scaling.factor", V::f32(2e6f))),
                  "rope.scaling.factor");
  EXPECT_CONTAINS(hf_error({{"rope_scaling", R"({"type": "linear", "factor": 2e6})"}}),
                  "rope_scaling.factor");
}

// The checks that format/gguf_validate used to make with its own (looser) limits, now the model
// config's: errors name the key or field.
TEST(ConfigBoundsTest, GgufHyperParametersMustBePositiveAndBounded) {
  for (const char* key : {"llama.block_count", "llama.context_length", "llama.embedding_length",
                          "llama.feed_forward_length", "llama.attention.head_count",
                          "llama.attention.head_count_kv"}) {
    SCOPED_TRACE(key);
    EXPECT_CONTAINS(gguf_error(llama_like().set(key, V::u32(0))),
                    fmt::format("{} = 0 is out of range", key));
    const std::string negative = gguf_error(llama_like().set(key, V::i32(-4)));
    EXPECT_CONTAINS(negative, key);
    EXPECT_CONTAINS(negative, "-4");
    EXPECT_CONTAINS(negative, "expected an unsigned integer");
  }
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.block_count", V::u32(70000))),
                  "llama.block_count = 70000 is out of range [1, 1024]");
  EXPECT_CONTAINS(
      gguf_error(llama_like().set("llama.attention.head_count", V::u64(uint64_t{1} << 17))),
      "llama.attention.head_count = 131072 is out of range");
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.embedding_length", V::u64(uint64_t{1} << 40))),
                  "llama.embedding_length = 1099511627776 is out of range");
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.context_length", V::u64(uint64_t{1} << 40))),
                  "llama.context_length = 1099511627776 is out of range");
}

TEST(ConfigBoundsTest, HeadCountsMustDivide) {
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.attention.head_count_kv", V::u32(3))),
                  "attention.head_count 4 is not a multiple of head_count_kv 3");
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.attention.head_count_kv", V::u32(8))),
                  "attention.head_count 4 is not a multiple of head_count_kv 8");
  EXPECT_EQ(gguf_error(llama_like().set("llama.attention.head_count_kv", V::u32(1))), "");  // MQA
  EXPECT_CONTAINS(hf_error({{"num_key_value_heads", "3"}}),
                  "attention.head_count 4 is not a multiple of head_count_kv 3");
}

TEST(ConfigBoundsTest, EmbeddingMustSplitIntoHeads) {
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.embedding_length", V::u32(250))),
                  "embedding_length 250 is not a multiple of attention.head_count 4");
  // An explicit key_length decouples the head size from the embedding.
  EXPECT_EQ(gguf_error(llama_like()
                           .set("llama.embedding_length", V::u32(250))
                           .set("llama.attention.key_length", V::u32(64))
                           .set("llama.attention.value_length", V::u32(64))),
            "");
  EXPECT_CONTAINS(gguf_error(llama_like()
                                 .set("llama.embedding_length", V::u32(1 << 16))
                                 .set("llama.attention.head_count", V::u32(1))
                                 .set("llama.attention.head_count_kv", V::u32(1))),
                  "head_dim = 65536 is out of range [1, 1024]");
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.attention.key_length", V::u32(0))),
                  "llama.attention.key_length = 0 is out of range");
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.attention.value_length", V::u32(1 << 15))),
                  "llama.attention.value_length = 32768 is out of range");
  EXPECT_CONTAINS(hf_error({{"hidden_size", "250"}}),
                  "hidden_size 250 is not a multiple of num_attention_heads 4");
}

TEST(ConfigBoundsTest, ExpertCounts) {
  const auto experts = [](uint32_t n, uint32_t used) {
    return llama_like()
        .set("llama.expert_count", V::u32(n))
        .set("llama.expert_used_count", V::u32(used));
  };
  EXPECT_EQ(gguf_error(experts(4, 2)), "");
  EXPECT_CONTAINS(gguf_error(experts(4, 5)), "expert_used_count 5 must be in [1, expert_count 4]");
  EXPECT_CONTAINS(gguf_error(experts(4, 0)), "llama.expert_used_count = 0 is out of range");
  EXPECT_CONTAINS(gguf_error(experts(0, 0)), "llama.expert_count = 0 is out of range");
  EXPECT_CONTAINS(gguf_error(llama_like().set("llama.expert_used_count", V::u32(2))),
                  "llama.expert_used_count is set but llama.expert_count is not");
  EXPECT_CONTAINS(gguf_error(experts(1 << 20, 2)), "llama.expert_count = 1048576 is out of range");
  EXPECT_CONTAINS(hf_error({{"num_experts_per_tok", "9"}}, /*mixtral=*/true),
                  "expert_used_count 9 must be in [1, expert_count 8]");
}

TEST(ConfigBoundsTest, PerLayerArraysAreNotSupported) {
  // The format accepts them (tests/unit/format/gguf_validate_test.cc); the model does not run
  // per-layer head counts.
  const std::string e =
      gguf_error(llama_like().set("llama.attention.head_count", V::array<int32_t>({4, 4})));
  EXPECT_CONTAINS(e, "llama.attention.head_count");
  EXPECT_CONTAINS(e, "expected an unsigned integer");
}

// config_from_gguf, the architecture's configure, then validate_config (load_model's order).
std::string arch_error(const GgufWriter& w) {
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return "writer: " + bytes.status().to_string();
  auto file = format::GgufFile::parse(*bytes);
  if (!file.ok()) return "format: " + file.status().to_string();
  auto config = config_from_gguf(**file);
  if (!config.ok()) return config.status().message();
  const model::ArchDef* arch = model::find_arch(config->arch);
  if (arch == nullptr) return "no arch " + config->arch;
  Status st = arch->configure(*config);
  if (st.ok()) st = model::validate_config(*config);
  return st.ok() ? "" : st.message();
}

// A model of architecture `arch` with llama_like's sizes.
GgufWriter like(const std::string& arch) {
  GgufWriter w;
  w.set("general.architecture", V::string(arch))
      .set(arch + ".block_count", V::u32(2))
      .set(arch + ".context_length", V::u32(2048))
      .set(arch + ".embedding_length", V::u32(256))
      .set(arch + ".feed_forward_length", V::u32(768))
      .set(arch + ".attention.head_count", V::u32(4))
      .set(arch + ".attention.head_count_kv", V::u32(2))
      .set("tokenizer.ggml.tokens", V::string_array({"<unk>", "<s>", "</s>", "a", "b"}));
  return w;
}

TEST(ConfigBoundsTest, SlidingWindowAndSoftCaps) {
  EXPECT_EQ(arch_error(like("gemma2")), "");  // llama.cpp's defaults for the missing keys
  EXPECT_EQ(arch_error(like("gemma2")
                           .set("gemma2.attention.sliding_window", V::u32(8))
                           .set("gemma2.attn_logit_softcapping", V::f32(3))
                           .set("gemma2.final_logit_softcapping", V::f32(0.4f))),
            "");
  EXPECT_CONTAINS(arch_error(like("gemma2").set("gemma2.attention.sliding_window", V::u32(0))),
                  "gemma2.attention.sliding_window = 0 is out of range");
  EXPECT_CONTAINS(
      arch_error(like("gemma2").set("gemma2.attention.sliding_window", V::u32(1u << 30))),
      "gemma2.attention.sliding_window = 1073741824 is out of range");
  EXPECT_CONTAINS(arch_error(like("gemma2").set("gemma2.attn_logit_softcapping", V::f32(-1))),
                  "gemma2.attn_logit_softcapping = -1 is out of range");
  EXPECT_CONTAINS(
      arch_error(like("gemma2").set("gemma2.final_logit_softcapping", V::f32(std::nanf("")))),
      "gemma2.final_logit_softcapping = nan is out of range");
  EXPECT_CONTAINS(arch_error(like("gemma2").set("gemma2.final_logit_softcapping", V::f32(1e30f))),
                  "is out of range");
  EXPECT_EQ(arch_error(like("phi3").set("phi3.attention.sliding_window", V::u32(2047))), "");
}

TEST(ConfigBoundsTest, SharedExperts) {
  const auto moe = [] {
    return like("qwen2moe")
        .set("qwen2moe.expert_count", V::u32(8))
        .set("qwen2moe.expert_used_count", V::u32(2))
        .set("qwen2moe.expert_feed_forward_length", V::u32(128));
  };
  EXPECT_EQ(arch_error(moe().set("qwen2moe.expert_shared_feed_forward_length", V::u32(512))), "");
  EXPECT_CONTAINS(arch_error(moe()), "qwen2moe needs expert_shared_feed_forward_length");
  EXPECT_CONTAINS(
      arch_error(moe().set("qwen2moe.expert_shared_feed_forward_length", V::u32(1u << 30))),
      "qwen2moe.expert_shared_feed_forward_length = 1073741824 is out of range");
  EXPECT_CONTAINS(arch_error(moe().set("qwen2moe.expert_feed_forward_length", V::u32(0))),
                  "qwen2moe.expert_feed_forward_length = 0 is out of range");
  EXPECT_CONTAINS(arch_error(like("qwen2moe")), "qwen2moe needs expert_count");
  EXPECT_CONTAINS(arch_error(like("qwen2").set("qwen2.expert_feed_forward_length", V::u32(64))),
                  "expert feed-forward lengths are set but expert_count is not");
}

TEST(ConfigBoundsTest, LatentAttention) {
  const auto mla = [] {
    return like("deepseek2")
        .set("deepseek2.attention.key_length", V::u32(48))
        .set("deepseek2.attention.value_length", V::u32(32))
        .set("deepseek2.rope.dimension_count", V::u32(16))
        .set("deepseek2.attention.q_lora_rank", V::u32(128))
        .set("deepseek2.attention.kv_lora_rank", V::u32(64));
  };
  EXPECT_EQ(arch_error(mla()), "");
  EXPECT_EQ(arch_error(mla()
                           .set("deepseek2.expert_count", V::u32(8))
                           .set("deepseek2.expert_used_count", V::u32(2))
                           .set("deepseek2.leading_dense_block_count", V::u32(1))
                           .set("deepseek2.expert_shared_count", V::u32(2))
                           .set("deepseek2.expert_weights_scale", V::f32(2))
                           .set("deepseek2.expert_gating_func", V::u32(1))),
            "");
  EXPECT_CONTAINS(arch_error(like("deepseek2")), "deepseek2 needs attention.kv_lora_rank");
  EXPECT_CONTAINS(arch_error(mla().set("deepseek2.attention.value_length", V::u32(64))),
                  "MLA needs value_length 64 <= key_length 48");
  EXPECT_CONTAINS(arch_error(mla().set("deepseek2.rope.dimension_count", V::u32(48))),
                  "rope.dimension_count 48 < key_length");
  EXPECT_CONTAINS(arch_error(mla().set("deepseek2.leading_dense_block_count", V::u32(3))),
                  "deepseek2.leading_dense_block_count = 3 is out of range [0, 2]");
  EXPECT_CONTAINS(arch_error(mla().set("deepseek2.expert_gating_func", V::u32(7))),
                  "expert_gating_func = 7 is not 1 (softmax) or 2 (sigmoid)");
  // DeepSeek-V3's sigmoid router with grouped top-k: groups must divide the experts.
  EXPECT_EQ(arch_error(mla()
                           .set("deepseek2.expert_count", V::u32(8))
                           .set("deepseek2.expert_used_count", V::u32(2))
                           .set("deepseek2.expert_gating_func", V::u32(2))
                           .set("deepseek2.expert_group_count", V::u32(4))
                           .set("deepseek2.expert_group_used_count", V::u32(2))),
            "");
  EXPECT_CONTAINS(arch_error(mla()
                                 .set("deepseek2.expert_count", V::u32(8))
                                 .set("deepseek2.expert_used_count", V::u32(2))
                                 .set("deepseek2.expert_gating_func", V::u32(2))
                                 .set("deepseek2.expert_group_count", V::u32(3))
                                 .set("deepseek2.expert_group_used_count", V::u32(1))),
                  "expert_group_count 3 / expert_group_used_count 1 must be positive");
  EXPECT_CONTAINS(arch_error(mla()
                                 .set("deepseek2.expert_count", V::u32(8))
                                 .set("deepseek2.expert_used_count", V::u32(4))
                                 .set("deepseek2.expert_group_count", V::u32(4))
                                 .set("deepseek2.expert_group_used_count", V::u32(1))),
                  "the 1 used groups must hold expert_used_count 4");
  EXPECT_CONTAINS(arch_error(mla().set("deepseek2.expert_weights_scale", V::f32(-2))),
                  "deepseek2.expert_weights_scale = -2 is out of range");
  EXPECT_CONTAINS(arch_error(mla().set("deepseek2.attention.kv_lora_rank", V::u32(0))),
                  "deepseek2.attention.kv_lora_rank = 0 is out of range");
  // Only MLA models may have values narrower than keys.
  EXPECT_CONTAINS(arch_error(llama_like()
                                 .set("llama.attention.key_length", V::u32(64))
                                 .set("llama.attention.value_length", V::u32(32))),
                  "attention.value_length 32 != key_length 64 (only MLA models have that)");
  EXPECT_CONTAINS(arch_error(llama_like().set("llama.attention.q_lora_rank", V::u32(16))),
                  "attention.q_lora_rank is set but kv_lora_rank is not");
}

}  // namespace
}  // namespace pagoda::loader
