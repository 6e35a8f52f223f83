// config.json's quantization_config and bitsandbytes' quant_state (format/hf_quant_config): the
// fields each method's published config uses, and refusals that name the field.
#include "format/hf_quant_config.h"

#include <gtest/gtest.h>

namespace pagoda::format {
namespace {

std::string error_of(const std::string& quant_config) {
  auto q =
      parse_hf_quant_config(R"({"hidden_size": 8, "quantization_config": )" + quant_config + "}");
  return q.ok() ? std::string("<ok>") : q.status().to_string();
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(HfQuantConfigTest, AbsentOrNull) {
  auto a = parse_hf_quant_config(R"({"hidden_size": 8})");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  auto b = parse_hf_quant_config(R"({"quantization_config": null})");
  ASSERT_TRUE(b.ok());
  EXPECT_FALSE(b->has_value());
}

TEST(HfQuantConfigTest, Gptq) {
  auto q = parse_hf_quant_config(R"({"quantization_config": {"quant_method": "gptq", "bits": 4,
      "group_size": 128, "desc_act": true, "sym": false, "damp_percent": 0.01}})");
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  ASSERT_TRUE(q->has_value());
  EXPECT_EQ((*q)->method, HfQuantMethod::kGptq);
  EXPECT_EQ((*q)->bits, 4);
  EXPECT_EQ((*q)->group_size, 128);
  EXPECT_TRUE((*q)->desc_act);
  EXPECT_FALSE((*q)->sym);
  EXPECT_TRUE((*q)->zeros_minus_one);  // no checkpoint_format: AutoGPTQ v1
  auto v2 = parse_hf_quant_config(R"({"quantization_config": {"quant_method": "gptq", "bits": 8,
      "group_size": -1, "checkpoint_format": "gptq_v2"}})");
  ASSERT_TRUE(v2.ok()) << v2.status().to_string();
  EXPECT_FALSE((*v2)->zeros_minus_one);
  EXPECT_EQ((*v2)->group_size, -1);
  auto model_fmt = parse_hf_quant_config(R"({"quantization_config": {"quant_method": "gptq",
      "bits": 4, "group_size": 32, "format": "gptq_v2"}})");
  ASSERT_TRUE(model_fmt.ok());
  EXPECT_FALSE((*model_fmt)->zeros_minus_one);
}

TEST(HfQuantConfigTest, OtherMethods) {
  auto awq = parse_hf_quant_config(R"({"quantization_config": {"quant_method": "awq", "bits": 4,
      "group_size": 128, "zero_point": true, "version": "GEMM"}})");
  ASSERT_TRUE(awq.ok()) << awq.status().to_string();
  EXPECT_EQ((*awq)->method, HfQuantMethod::kAwq);
  EXPECT_FALSE((*awq)->zeros_minus_one);
  auto fp8 = parse_hf_quant_config(R"({"quantization_config": {"quant_method": "fp8",
      "weight_block_size": [128, 64]}})");
  ASSERT_TRUE(fp8.ok()) << fp8.status().to_string();
  EXPECT_EQ((*fp8)->method, HfQuantMethod::kFp8);
  EXPECT_EQ((*fp8)->weight_block_size, (std::vector<int64_t>{128, 64}));
  auto ct = parse_hf_quant_config(R"({"quantization_config": {"quant_method":
      "compressed-tensors", "format": "int-quantized", "config_groups": {"group_0": {"weights":
      {"num_bits": 8, "type": "int", "strategy": "channel", "symmetric": true}}}}})");
  ASSERT_TRUE(ct.ok()) << ct.status().to_string();
  EXPECT_EQ((*ct)->method, HfQuantMethod::kInt8);
  EXPECT_EQ((*ct)->weight_strategy, "channel");
  auto bnb = parse_hf_quant_config(R"({"quantization_config": {"quant_method": "bitsandbytes",
      "load_in_4bit": true, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": true}})");
  ASSERT_TRUE(bnb.ok()) << bnb.status().to_string();
  EXPECT_EQ((*bnb)->method, HfQuantMethod::kNf4);
  EXPECT_TRUE((*bnb)->double_quant);
}

TEST(HfQuantConfigTest, RefusalsNameTheField) {
  EXPECT_TRUE(has(error_of(R"("gptq")"), "quantization_config is \"gptq\", not an object"));
  EXPECT_TRUE(has(error_of(R"({"bits": 4})"), "quantization_config.quant_method is missing"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "hqq"})"), "quant_method \"hqq\""));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "gptq", "bits": 3, "group_size": 128})"),
                  "quantization_config.bits is 3"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "gptq", "bits": 4})"), "group_size is missing"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "gptq", "bits": 4, "group_size": -2})"),
                  "group_size is -2"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "gptq", "bits": "4", "group_size": 32})"),
                  "quantization_config.bits is \"4\", not an integer"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "gptq", "bits": 4, "group_size": 32,
      "checkpoint_format": "marlin"})"),
                  "checkpoint_format \"marlin\""));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "awq", "bits": 4, "group_size": 128,
      "version": "gemv"})"),
                  "version \"gemv\""));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "awq", "bits": 8, "group_size": 128})"),
                  "bits is 8, not 4"));
  EXPECT_TRUE(
      has(error_of(R"({"quant_method": "fp8", "weight_block_size": [128]})"), "weight_block_size"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "compressed-tensors", "format":
      "pack-quantized", "config_groups": {}})"),
                  "format \"pack-quantized\""));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"g": {"weights": {"num_bits": 4, "type": "int"}}}})"),
                  "config_groups.g.weights.num_bits is 4"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "compressed-tensors", "format": "int-quantized",
      "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int", "strategy": "group"}}}})"),
                  "strategy \"group\""));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"g": {"weights": {"num_bits": 8, "type": "int"}}}})"),
                  "does not match its weights"));
  EXPECT_TRUE(
      has(error_of(R"({"quant_method": "bitsandbytes", "load_in_8bit": true})"), "load_in_8bit"));
  EXPECT_TRUE(has(error_of(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
      "bnb_4bit_quant_type": "fp4"})"),
                  "bnb_4bit_quant_type \"fp4\""));
}

TEST(HfQuantConfigTest, BnbQuantState) {
  auto s = parse_bnb_quant_state(R"({"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16",
      "shape": [96, 160], "nested_blocksize": 256, "nested_offset": 0.25,
      "nested_dtype": "float32"})");
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->blocksize, 64);
  EXPECT_EQ(s->dtype, "bfloat16");
  EXPECT_EQ(s->shape, (std::vector<int64_t>{96, 160}));
  EXPECT_TRUE(s->nested);
  EXPECT_EQ(s->nested_blocksize, 256);
  EXPECT_EQ(s->nested_offset, 0.25f);
  auto plain = parse_bnb_quant_state(
      R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16", "shape": [4, 4]})");
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->nested);
  auto bad = [](const std::string& text) {
    auto r = parse_bnb_quant_state(text);
    return r.ok() ? std::string("<ok>") : r.status().to_string();
  };
  EXPECT_TRUE(has(bad(R"({"quant_type": "fp4", "blocksize": 64})"), "quant_type \"fp4\""));
  EXPECT_TRUE(has(bad(R"({"quant_type": "nf4", "blocksize": 0, "dtype": "float16",
      "shape": [4, 4]})"),
                  "blocksize"));
  EXPECT_TRUE(has(bad(R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16",
      "shape": [4, -4]})"),
                  "shape"));
  EXPECT_TRUE(has(bad(R"({"quant_type": "nf4", "blocksize": 64, "dtype": "int8",
      "shape": [4, 4]})"),
                  "dtype \"int8\""));
  EXPECT_TRUE(has(bad(R"({"quant_type": "nf4", "blocksize": 64, "dtype": "float16",
      "shape": [4, 4], "nested_blocksize": 256})"),
                  "nested_offset"));
  EXPECT_TRUE(has(bad("{\"quant_type\": \"nf4\", \"blocksize\""), "quant_state"));
}

}  // namespace
}  // namespace pagoda::format
