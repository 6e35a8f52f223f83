// PEFT adapter_config.json and GGUF adapter metadata: the scale each form defines (PEFT's
// LoraLayer: alpha / r, or alpha / sqrt(r) with use_rslora; llama.cpp: alpha / r, 1 when alpha is
// 0), and refusals naming the field.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "format/lora_adapter_config.h"

namespace pagoda::format {
namespace {

std::string error_of(const std::string& json) {
  auto c = parse_peft_lora_config(json);
  return c.ok() ? "" : c.status().message();
}

TEST(PeftLoraConfig, ScaleAndTargets) {
  auto c = parse_peft_lora_config(
      R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj"],
          "lora_dropout": 0.05, "bias": "none", "fan_in_fan_out": false, "modules_to_save": null,
          "rank_pattern": {}, "alpha_pattern": {}, "task_type": "CAUSAL_LM"})");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->rank, 8);
  EXPECT_DOUBLE_EQ(c->scale(8), 2.0);
  EXPECT_EQ(c->target_modules, (std::vector<std::string>{"q_proj", "v_proj"}));
  auto rs = parse_peft_lora_config(
      R"({"r": 16, "lora_alpha": 8, "use_rslora": true, "target_modules": ["o_proj"]})");
  ASSERT_TRUE(rs.ok()) << rs.status().message();
  EXPECT_DOUBLE_EQ(rs->scale(16), 8.0 / 4.0);
}

TEST(PeftLoraConfig, RefusalsNameTheField) {
  EXPECT_NE(error_of(R"({"lora_alpha": 16, "target_modules": ["q_proj"]})").find("r (the rank)"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"r": 0, "lora_alpha": 16, "target_modules": ["q_proj"]})").find("r is 0"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"r": "8", "lora_alpha": 16, "target_modules": ["q_proj"]})").find("r is"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"r": 8, "target_modules": ["q_proj"]})").find("lora_alpha"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"r": 8, "lora_alpha": 16})").find("target_modules"), std::string::npos);
  EXPECT_NE(
      error_of(R"({"r": 8, "lora_alpha": 16, "target_modules": ".*q_proj"})").find("regex string"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"r": 8, "lora_alpha": 16, "target_modules": ["q_proj"],
                         "fan_in_fan_out": true})")
                .find("fan_in_fan_out"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"r": 8, "lora_alpha": 16, "target_modules": ["q_proj"],
                         "use_dora": true})")
                .find("use_dora"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"r": 8, "lora_alpha": 16, "target_modules": ["q_proj"],
                         "rank_pattern": {"q_proj": 4}})")
                .find("rank_pattern"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"peft_type": "IA3", "r": 8, "lora_alpha": 16, "target_modules": ["q"]})")
                .find("peft_type"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"r": 8, "r": 4, "lora_alpha": 16, "target_modules": ["q_proj"]})"), "");
  EXPECT_NE(error_of("[1, 2]"), "");
}

Result<LoraAdapterConfig> gguf_config(const std::string& type, const std::string& adapter_type,
                                      std::optional<float> alpha) {
  GgufWriter w;
  w.set("general.architecture", GgufWriteValue::string("llama"));
  w.set("general.type", GgufWriteValue::string(type));
  w.set("adapter.type", GgufWriteValue::string(adapter_type));
  if (alpha) w.set("adapter.lora.alpha", GgufWriteValue::f32(*alpha));
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return bytes.status();
  auto file = GgufFile::parse(std::move(*bytes));
  if (!file.ok()) return file.status();
  return read_gguf_lora_config(**file);
}

TEST(GgufLoraConfig, ScaleAndRefusals) {
  auto c = gguf_config("adapter", "lora", 32.0f);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->architecture, "llama");
  EXPECT_DOUBLE_EQ(c->scale(8), 4.0);
  auto no_alpha = gguf_config("adapter", "lora", std::nullopt);
  ASSERT_TRUE(no_alpha.ok()) << no_alpha.status().message();
  EXPECT_DOUBLE_EQ(no_alpha->scale(8), 1.0);
  EXPECT_NE(gguf_config("model", "lora", 1.0f).status().message().find("general.type"),
            std::string::npos);
  EXPECT_NE(gguf_config("adapter", "control_vector", 1.0f).status().message().find("adapter.type"),
            std::string::npos);
}

}  // namespace
}  // namespace pagoda::format
