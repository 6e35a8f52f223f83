// Hugging Face JSON files: config.json / generation_config.json / tokenizer_config.json /
// model.safetensors.index.json parsing (config.json → ModelConfig is tests/unit/loader).
#include "format/hf_config.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

using format::parse_hf_config;

constexpr const char* kLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
  "intermediate_size": 768, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "max_position_embeddings": 2048, "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0, "vocab_size": 32000, "hidden_act": "silu", "tie_word_embeddings": false,
  "bos_token_id": 1, "eos_token_id": [2, 7], "rope_scaling": null, "torch_dtype": "float16"})";

TEST(HfConfigTest, ParsesConfigJson) {
  auto c = parse_hf_config(kLlama);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->architectures, std::vector<std::string>{"LlamaForCausalLM"});
  EXPECT_EQ(*c->hidden_size, 256);
  EXPECT_EQ(*c->num_key_value_heads, 2);
  EXPECT_FALSE(c->head_dim.has_value());
  EXPECT_FALSE(c->rope_scaling.has_value());  // null = absent
  EXPECT_EQ(c->eos_token_id, (std::vector<int64_t>{2, 7}));
  EXPECT_EQ(c->bos_token_id, (std::vector<int64_t>{1}));
  EXPECT_DOUBLE_EQ(*c->rms_norm_eps, 1e-5);
}

TEST(HfConfigTest, ConfigErrorsNameTheField) {
  auto bad = [](const std::string& text) {
    auto c = parse_hf_config(text);
    return c.ok() ? std::string("<ok>") : c.status().message();
  };
  EXPECT_NE(bad(R"({"hidden_size": "256"})").find("config.json: hidden_size is \"256\""),
            std::string::npos);
  EXPECT_NE(bad(R"({"hidden_size": 2.5})").find("hidden_size"), std::string::npos);
  EXPECT_NE(bad(R"({"eos_token_id": [1, "x"]})").find("eos_token_id"), std::string::npos);
  EXPECT_NE(bad(R"({"architectures": "Llama"})").find("architectures"), std::string::npos);
  EXPECT_NE(bad(R"({"rope_scaling": {"factor": 2}})").find("neither rope_type nor type"),
            std::string::npos);
  EXPECT_NE(
      bad(R"({"rope_scaling": {"type": "linear", "factor": "2"}})").find("rope_scaling.factor"),
      std::string::npos);
  EXPECT_NE(bad(R"({"a": 1, "a": 2})").find("duplicate key \"a\""), std::string::npos);
  EXPECT_NE(bad("[1]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(bad(R"({"hidden_size": 18446744073709551615})").find("hidden_size"), std::string::npos);
}

TEST(HfConfigTest, GenerationConfig) {
  auto g = format::parse_hf_generation_config(
      R"({"do_sample": true, "temperature": 0.6, "top_p": 0.9, "top_k": 50,
          "repetition_penalty": 1.1, "eos_token_id": [128001, 128009], "pad_token_id": null})");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(*g->do_sample);
  EXPECT_DOUBLE_EQ(*g->temperature, 0.6);
  EXPECT_EQ(*g->top_k, 50);
  EXPECT_EQ(g->eos_token_id, (std::vector<int64_t>{128001, 128009}));
  EXPECT_TRUE(g->pad_token_id.empty());
  EXPECT_FALSE(format::parse_hf_generation_config(R"({"top_k": "50"})").ok());
}

TEST(HfConfigTest, TokenizerConfigTokensAndTemplates) {
  auto t = format::parse_hf_tokenizer_config(R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
    "eos_token": "</s>", "pad_token": null, "add_bos_token": true, "add_eos_token": false,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]
  })");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(*t->bos_token, "<s>");
  EXPECT_EQ(*t->eos_token, "</s>");
  EXPECT_FALSE(t->pad_token.has_value());
  EXPECT_TRUE(*t->add_bos_token);
  EXPECT_EQ(t->chat_template, "D");
  EXPECT_EQ(t->named_chat_templates.size(), 2u);
  auto first =
      format::parse_hf_tokenizer_config(R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->chat_template, "R");
  auto plain = format::parse_hf_tokenizer_config(R"({"chat_template": "{{ x }}"})");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->chat_template, "{{ x }}");
  EXPECT_FALSE(format::parse_hf_tokenizer_config(R"({"chat_template": 3})").ok());
  EXPECT_FALSE(format::parse_hf_tokenizer_config(R"({"chat_template": [{"name": "x"}]})").ok());
  EXPECT_FALSE(format::parse_hf_tokenizer_config(R"({"bos_token": {"lstrip": true}})").ok());
  EXPECT_FALSE(format::parse_hf_tokenizer_config(R"({"add_bos_token": "yes"})").ok());
}

TEST(HfConfigTest, WeightIndex) {
  auto idx = format::parse_hf_weight_index(R"({"metadata": {"total_size": 10}, "weight_map": {
      "b": "model-00002-of-00002.safetensors", "a": "model-00001-of-00002.safetensors",
      "c": "model-00001-of-00002.safetensors"}})");
  ASSERT_TRUE(idx.ok()) << idx.status().to_string();
  EXPECT_EQ(idx->shards, (std::vector<std::string>{"model-00001-of-00002.safetensors",
                                                   "model-00002-of-00002.safetensors"}));
  EXPECT_EQ(idx->tensor_to_file.at("b"), "model-00002-of-00002.safetensors");
  for (const char* bad :
       {R"({"weight_map": {"a": "../x.safetensors"}})", R"({"weight_map": {"a": "/etc/passwd"}})",
        R"({"weight_map": {"a": ".hidden"}})", R"({"weight_map": {"a": 1}})",
        R"({"weight_map": []})", R"({"metadata": {}})"}) {
    EXPECT_FALSE(format::parse_hf_weight_index(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace pagoda
