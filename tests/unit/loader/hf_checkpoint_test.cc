// config.json → ModelConfig (architectures, rope scaling, what pagoda refuses), Hugging Face
// tensor names → GGUF names, Llama-3 RoPE factors (checked against transformers' formula, written
// independently here).
#include "loader/hf/hf_checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>

#include "format/hf_config.h"
#include "loader/hf/hf_families.h"

namespace pagoda::loader {
namespace {

using format::parse_hf_config;

constexpr const char* kLlama = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
  "intermediate_size": 768, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "max_position_embeddings": 2048, "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0, "vocab_size": 32000, "hidden_act": "silu", "tie_word_embeddings": false,
  "bos_token_id": 1, "eos_token_id": [2, 7], "rope_scaling": null, "torch_dtype": "float16"})";

TEST(HfModelConfigTest, MapsArchitectures) {
  auto hf = parse_hf_config(kLlama);
  ASSERT_TRUE(hf.ok());
  std::string arch;
  auto c = model_config_from_hf(*hf, &arch);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(arch, "LlamaForCausalLM");
  EXPECT_EQ(c->arch, "llama");
  EXPECT_EQ(c->rope_style, kernels::RopeStyle::kNeox);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->rope_dims, 64);
  EXPECT_EQ(c->num_kv_heads, 2);
  EXPECT_FALSE(c->has_qkv_bias);

  auto q = parse_hf_config(R"({"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
      "max_position_embeddings": 128, "vocab_size": 100})");
  ASSERT_TRUE(q.ok());
  auto qc = model_config_from_hf(*q, nullptr);
  ASSERT_TRUE(qc.ok()) << qc.status().to_string();
  EXPECT_EQ(qc->arch, "qwen2");
  EXPECT_TRUE(qc->has_qkv_bias);
  EXPECT_EQ(qc->num_kv_heads, 4);  // defaults to the head count
  EXPECT_FLOAT_EQ(qc->rms_norm_eps, 1e-6f);

  auto m = parse_hf_config(R"({"architectures": ["MixtralForCausalLM"], "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4,
      "head_dim": 32, "max_position_embeddings": 128, "vocab_size": 100,
      "num_local_experts": 8, "num_experts_per_tok": 2,
      "rope_scaling": {"type": "linear", "factor": 4.0}})");
  ASSERT_TRUE(m.ok());
  auto mc = model_config_from_hf(*m, nullptr);
  ASSERT_TRUE(mc.ok()) << mc.status().to_string();
  EXPECT_EQ(mc->num_experts, 8);
  EXPECT_EQ(mc->num_experts_used, 2);
  EXPECT_EQ(mc->head_dim, 32);
  EXPECT_EQ(mc->q_dim(), 128);
  EXPECT_FLOAT_EQ(mc->rope_freq_scale, 0.25f);
}

// Phi-3: fused projections (tensor names below), its sliding window on every layer (bounded).
TEST(HfModelConfigTest, Phi3SlidingWindow) {
  const std::string base = R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 256,
      "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "max_position_embeddings": 4096, "vocab_size": 32064,
      "hidden_act": "silu", )";
  auto p = parse_hf_config(base + R"("sliding_window": 2047})");
  ASSERT_TRUE(p.ok());
  std::string arch;
  auto c = model_config_from_hf(*p, &arch);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(arch, "Phi3ForCausalLM");
  EXPECT_EQ(c->arch, "phi3");
  EXPECT_TRUE(c->fused_qkv);
  EXPECT_TRUE(c->fused_gate_up);
  EXPECT_EQ(c->sliding_window, 2047);
  EXPECT_EQ(c->layer_window(0), 2047);
  EXPECT_EQ(c->layer_window(1), 2047);
  auto none = parse_hf_config(base + R"("sliding_window": null})");
  ASSERT_TRUE(none.ok());
  auto nc = model_config_from_hf(*none, nullptr);
  ASSERT_TRUE(nc.ok()) << nc.status().to_string();
  EXPECT_EQ(nc->layer_window(0), 0);  // Phi-4: no window
  auto huge = parse_hf_config(base + R"("sliding_window": 99999999999})");
  ASSERT_TRUE(huge.ok());
  auto hc = model_config_from_hf(*huge, nullptr);
  ASSERT_FALSE(hc.ok());
  EXPECT_NE(hc.status().message().find("sliding_window"), std::string::npos);
}

// Phi-3's LongRoPE (Phi-3-mini-128k / Phi-3.5 / Phi-4-mini configs): the attention factor as
// transformers derives it, sqrt(1 + ln(s) / ln(original)) for s = 131072 / 4096 (1.1902), the
// original context from the top level (Phi3Config's default 4096 without one), partial rotary
// dims; bad tables and other families refused by name.
TEST(HfModelConfigTest, Phi3LongRope) {
  const auto phi3 = [](const std::string& extra, int pairs, const std::string& type = "longrope") {
    std::string factors;
    for (int i = 0; i < pairs; ++i)
      factors += (i ? ", " : "") + std::to_string(1.0 + i * 0.5);
    return R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072,
      "intermediate_size": 8192, "num_hidden_layers": 2, "num_attention_heads": 24,
      "num_key_value_heads": 8, "max_position_embeddings": 131072, "vocab_size": 200064,
      "hidden_act": "silu", )" +
           extra + R"("rope_scaling": {"type": ")" + type + R"(", "long_factor": [)" + factors +
           R"(], "short_factor": [)" + factors + "]}}";
  };
  const auto load = [](const std::string& text) -> Result<model::ModelConfig> {
    PAGODA_ASSIGN_OR_RETURN(format::HfConfig hf, parse_hf_config(text));
    return model_config_from_hf(hf, nullptr);
  };
  // Phi-4-mini: head_dim 128, partial_rotary_factor 0.75: 96 rotated dims, 48 factors.
  auto c = load(phi3(R"("original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
                        )",
                     48));
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope_dims, 96);
  EXPECT_EQ(c->rope_orig_ctx, 4096);
  EXPECT_EQ(c->context_length, 131072);
  EXPECT_NEAR(c->rope_attn_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-6);
  EXPECT_NEAR(c->rope_attn_factor, 1.1902, 1e-4);
  EXPECT_EQ(c->rope_ext_factor, 0.0f);
  EXPECT_EQ(c->rope_freq_scale, 1.0f);
  EXPECT_TRUE(model::use_long_rope_factors(*c, 4097));
  EXPECT_FALSE(model::use_long_rope_factors(*c, 4096));
  // Phi-3's older type name, the original context from Phi3Config's default, all 64 head dims.
  auto su = load(phi3("", 64, "su"));
  ASSERT_TRUE(su.ok()) << su.status().to_string();
  EXPECT_EQ(su->rope_dims, 128);
  EXPECT_EQ(su->rope_orig_ctx, 4096);
  // An explicit attention_factor wins.
  std::string explicit_af = phi3(R"("partial_rotary_factor": 0.75, )", 48);
  explicit_af.insert(explicit_af.find("\"long_factor\""), R"("attention_factor": 1.5, )");
  auto af = load(explicit_af);
  ASSERT_TRUE(af.ok()) << af.status().to_string();
  EXPECT_FLOAT_EQ(af->rope_attn_factor, 1.5f);
  // Not extended (original = max_position_embeddings): factor 1.
  auto same = load(phi3(R"("original_max_position_embeddings": 131072, )", 64));
  ASSERT_TRUE(same.ok()) << same.status().to_string();
  EXPECT_EQ(same->rope_attn_factor, 1.0f);
  EXPECT_FALSE(model::use_long_rope_factors(*same, 131072));

  const auto error = [&](const std::string& text) {
    auto r = load(text);
    return r.ok() ? std::string("<ok>") : r.status().message();
  };
  EXPECT_NE(error(phi3(R"("partial_rotary_factor": 0.75, )", 47))
                .find("rope_scaling.long_factor has 47 factors; the 96 rotated dims of a head "
                      "need 48"),
            std::string::npos);
  std::string zero = phi3("", 64);
  zero.replace(zero.find("[1.000000"), 9, "[0.000000");
  EXPECT_NE(error(zero).find("rope_scaling.long_factor has factor 0"), std::string::npos)
      << error(zero);
  EXPECT_NE(error(phi3(R"("original_max_position_embeddings": 0, )", 64))
                .find("original_max_position_embeddings 0 is out of range"),
            std::string::npos);
  EXPECT_NE(error(phi3(R"("partial_rotary_factor": 1.5, )", 64))
                .find("partial_rotary_factor 1.5 is out of range"),
            std::string::npos);
  std::string wrong_type = phi3("", 64);
  wrong_type.replace(wrong_type.find("\"short_factor\": ["), 17, R"("short_factor": "x", "y": [)");
  EXPECT_NE(error(wrong_type).find("rope_scaling.short_factor is \"x\", not a list of numbers"),
            std::string::npos)
      << error(wrong_type);
  std::string llama = kLlama;
  llama.replace(llama.find("\"rope_scaling\": null"), 20,
                R"("rope_scaling": {"type": "longrope", "long_factor": [1], "short_factor": [1]})");
  EXPECT_NE(error(llama).find("rope_scaling type \"longrope\" is supported for Phi-3 only"),
            std::string::npos)
      << error(llama);
  std::string partial = kLlama;
  partial.replace(partial.find("\"rope_scaling\": null"), 20, R"("partial_rotary_factor": 0.5)");
  EXPECT_NE(error(partial).find("partial_rotary_factor 0.5 is not supported for llama"),
            std::string::npos)
      << error(partial);
}

// The families' own rules for config.json's sliding_window (transformers' configs): Mistral and
// Mixtral on every layer; LlamaConfig has none (ignored); Qwen2 only with use_sliding_window, from
// layer max_window_layers on; the other Qwen families' use_sliding_window is refused by name.
TEST(HfModelConfigTest, SlidingWindowPerFamily) {
  const auto config = [](const std::string& arch, const std::string& extra) {
    std::string text = kLlama;
    text.replace(text.find("LlamaForCausalLM"), 16, arch);
    text.replace(text.find("\"rope_scaling\": null"), 20, extra + R"(, "rope_scaling": null)");
    auto hf = parse_hf_config(text);
    EXPECT_TRUE(hf.ok());
    return model_config_from_hf(*hf, nullptr);
  };
  auto mistral = config("MistralForCausalLM", R"("sliding_window": 512)");
  ASSERT_TRUE(mistral.ok()) << mistral.status().to_string();
  EXPECT_EQ(mistral->layer_window(0), 512);
  EXPECT_EQ(mistral->uniform_sliding_window(), 512);
  auto mistral_null = config("MistralForCausalLM", R"("sliding_window": null)");
  ASSERT_TRUE(mistral_null.ok());
  EXPECT_EQ(mistral_null->uniform_sliding_window(), 0);
  auto mixtral =
      config("MixtralForCausalLM",
             R"("sliding_window": 64, "num_local_experts": 4, "num_experts_per_tok": 2)");
  ASSERT_TRUE(mixtral.ok()) << mixtral.status().to_string();
  EXPECT_EQ(mixtral->uniform_sliding_window(), 64);
  auto llama = config("LlamaForCausalLM", R"("sliding_window": 512)");
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(llama->uniform_sliding_window(), 0);
  auto negative = config("MistralForCausalLM", R"("sliding_window": -4)");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("sliding_window -4 is out of range"),
            std::string::npos);

  auto qwen_off = config("Qwen2ForCausalLM", R"("sliding_window": 512, "max_window_layers": 0)");
  ASSERT_TRUE(qwen_off.ok()) << qwen_off.status().to_string();
  EXPECT_EQ(qwen_off->uniform_sliding_window(), 0);
  auto qwen_all =
      config("Qwen2ForCausalLM",
             R"("sliding_window": 512, "use_sliding_window": true, "max_window_layers": 0)");
  ASSERT_TRUE(qwen_all.ok()) << qwen_all.status().to_string();
  EXPECT_EQ(qwen_all->uniform_sliding_window(), 512);
  auto qwen_default =
      config("Qwen2ForCausalLM", R"("sliding_window": 512, "use_sliding_window": true)");
  ASSERT_TRUE(qwen_default.ok());  // max_window_layers 28 >= 2 layers: none slides
  EXPECT_EQ(qwen_default->layer_window(1), 0);
  auto qwen_split =
      config("Qwen2ForCausalLM",
             R"("sliding_window": 512, "use_sliding_window": true, "max_window_layers": 1)");
  ASSERT_FALSE(qwen_split.ok());
  EXPECT_NE(qwen_split.status().message().find("max_window_layers 1"), std::string::npos);
  auto qwen3 = config(
      "Qwen3ForCausalLM",
      R"("sliding_window": 512, "use_sliding_window": true, "max_window_layers": 0, "head_dim": 64)");
  ASSERT_FALSE(qwen3.ok());
  EXPECT_NE(qwen3.status().message().find("use_sliding_window is not supported for qwen3"),
            std::string::npos)
      << qwen3.status().to_string();
}

TEST(HfModelConfigTest, YarnScaling) {
  std::string text = kLlama;
  text.replace(text.find("\"rope_scaling\": null"), 20,
               R"("rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                   "original_max_position_embeddings": 1024, "beta_fast": 16,
                   "attention_factor": 1.5})");
  auto hf = parse_hf_config(text);
  ASSERT_TRUE(hf.ok()) << hf.status().to_string();
  auto c = model_config_from_hf(*hf, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FLOAT_EQ(c->rope_freq_scale, 0.25f);
  EXPECT_EQ(c->rope_ext_factor, 1.0f);
  EXPECT_EQ(c->rope_orig_ctx, 1024);
  EXPECT_EQ(c->rope_yarn_beta_fast, 16.0f);
  EXPECT_EQ(c->rope_yarn_beta_slow, 1.0f);
  // HF's attention_factor is the whole cos/sin scale; GGUF's attn_factor multiplies ggml's
  // 1 + 0.1 ln(factor).
  EXPECT_NEAR(c->rope_attn_factor * (1 + 0.1 * std::log(4.0)), 1.5, 1e-6);
  EXPECT_EQ(c->context_length, 4096);  // 1024 x 4 > max_position_embeddings 2048
}

TEST(HfModelConfigTest, RejectsWhatItCannotRun) {
  auto err = [](const std::string& patch) {
    std::string text = kLlama;
    text.erase(text.find(", \"rope_scaling\": null"), 22);
    text.pop_back();  // the closing brace
    text += ", " + patch + "}";
    auto hf = parse_hf_config(text);
    if (!hf.ok()) return hf.status().message();
    auto c = model_config_from_hf(*hf, nullptr);
    return c.ok() ? std::string("<ok>") : c.status().message();
  };
  std::string text = kLlama;
  text.replace(text.find("LlamaForCausalLM"), 16, "GPT2LMHeadModel");
  auto gpt = model_config_from_hf(*parse_hf_config(text), nullptr);
  ASSERT_FALSE(gpt.ok());
  EXPECT_EQ(gpt.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(gpt.status().message().find("GPT2LMHeadModel"), std::string::npos);
  EXPECT_NE(err(R"("mlp_bias": true)").find("mlp_bias"), std::string::npos);
  EXPECT_NE(err(R"("attention_bias": true)").find("attention_bias"), std::string::npos);
  EXPECT_NE(
      err(R"("rope_scaling": {"rope_type": "yarn", "factor": 4, "mscale": 0.7})").find("mscale"),
      std::string::npos);
  EXPECT_NE(err(R"("rope_scaling": {"rope_type": "yarn", "factor": 0})").find("yarn"),
            std::string::npos);
  EXPECT_NE(err(R"("rope_scaling": {"rope_type": "dynamic", "factor": 2})").find("dynamic"),
            std::string::npos);
  EXPECT_NE(err(R"("rope_scaling": {"type": "linear", "factor": -1})").find("factor"),
            std::string::npos);
  std::string gelu = kLlama;
  gelu.replace(gelu.find("\"silu\""), 6, "\"gelu\"");
  EXPECT_NE(model_config_from_hf(*parse_hf_config(gelu), nullptr).status().message().find("gelu"),
            std::string::npos);
  std::string zero = kLlama;
  zero.replace(zero.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 0");
  EXPECT_NE(model_config_from_hf(*parse_hf_config(zero), nullptr)
                .status()
                .message()
                .find("num_hidden_layers = 0"),
            std::string::npos);
  std::string odd = kLlama;
  odd.replace(odd.find("\"num_key_value_heads\": 2"), 24, "\"num_key_value_heads\": 3");
  EXPECT_FALSE(model_config_from_hf(*parse_hf_config(odd), nullptr).ok());
}

TEST(HfModelConfigTest, TensorNames) {
  bool skip = false;
  int32_t layer = -1, expert = -1;
  auto name = [&](const char* hf) {
    auto n = gguf_name_of(hf, &skip, &layer, &expert);
    return n ? *n : std::string(skip ? "<skip>" : "<none>");
  };
  EXPECT_EQ(name("model.embed_tokens.weight"), "token_embd.weight");
  EXPECT_EQ(name("lm_head.weight"), "output.weight");
  EXPECT_EQ(name("model.norm.weight"), "output_norm.weight");
  EXPECT_EQ(name("model.layers.12.self_attn.q_proj.weight"), "blk.12.attn_q.weight");
  EXPECT_EQ(layer, 12);
  EXPECT_EQ(name("model.layers.0.self_attn.k_proj.bias"), "blk.0.attn_k.bias");
  EXPECT_EQ(name("model.layers.3.mlp.down_proj.weight"), "blk.3.ffn_down.weight");
  EXPECT_EQ(name("model.layers.1.block_sparse_moe.gate.weight"), "blk.1.ffn_gate_inp.weight");
  EXPECT_EQ(name("model.layers.1.block_sparse_moe.experts.7.w1.weight"), "blk.1.ffn_gate.7.weight");
  EXPECT_EQ(expert, 7);
  EXPECT_EQ(name("model.layers.1.block_sparse_moe.experts.7.w3.weight"), "blk.1.ffn_up.7.weight");
  EXPECT_EQ(name("model.layers.1.block_sparse_moe.experts.7.w2.weight"), "blk.1.ffn_down.7.weight");
  EXPECT_EQ(name("model.layers.0.self_attn.rotary_emb.inv_freq"), "<skip>");
  EXPECT_EQ(name("model.layers.2.self_attn.qkv_proj.weight"), "blk.2.attn_qkv.weight");
  EXPECT_EQ(name("model.layers.2.mlp.gate_up_proj.weight"), "blk.2.ffn_up.weight");
  for (const char* bad : {"model.layers.01.mlp.up_proj.weight", "model.layers.x.mlp.up_proj.weight",
                          "model.layers.1.mlp.up_proj", "model.layers.1.self_attn.q_norm.weight",
                          "model.layers.99999999.mlp.up_proj.weight",
                          "model.layers.1.block_sparse_moe.experts.1.w4.weight", ""}) {
    EXPECT_EQ(name(bad), "<none>") << bad;
  }
}

TEST(HfModelConfigTest, Llama3RopeFactorsMatchTransformers) {
  format::HfRopeScaling s;
  s.type = "llama3";
  s.factor = 8.0;
  s.low_freq_factor = 1.0;
  s.high_freq_factor = 4.0;
  s.original_max_position_embeddings = 8192;
  const float theta = 500000.0f;
  const int dims = 128;
  const auto f = llama3_rope_factors(s, theta, dims);
  ASSERT_EQ(f.size(), 64u);
  // transformers' _compute_llama3_parameters gives the scaled inverse frequencies; the factor is
  // the ratio to the unscaled ones.
  int low = 0, mid = 0, high = 0;
  for (int i = 0; i < 64; ++i) {
    const double inv = 1.0 / std::pow(500000.0, 2.0 * i / dims);
    const double wavelen = 2 * M_PI / inv;
    double scaled = wavelen > 8192.0 ? inv / 8.0 : inv;
    if (wavelen >= 2048.0 && wavelen <= 8192.0) {
      const double smooth = (8192.0 / wavelen - 1.0) / (4.0 - 1.0);
      scaled = (1 - smooth) * inv / 8.0 + smooth * inv;
      ++mid;
    } else {
      (wavelen > 8192.0 ? low : high)++;
    }
    EXPECT_NEAR(f[static_cast<size_t>(i)], inv / scaled, 1e-4 * inv / scaled) << i;
  }
  EXPECT_GT(low, 0);
  EXPECT_GT(mid, 0);
  EXPECT_GT(high, 0);
}

}  // namespace
}  // namespace pagoda::loader

namespace pagoda::loader {
namespace {

// Gemma 2, Qwen2-MoE and DeepSeek-V2 (hf_families.h): config fields, tensor names, refusals.
constexpr const char* kGemma2 = R"({"architectures": ["Gemma2ForCausalLM"], "hidden_size": 256,
    "intermediate_size": 256, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 8192,
    "vocab_size": 32000, "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 64,
    "sliding_window": 8, "attn_logit_softcapping": 3.0, "final_logit_softcapping": 0.4})";
constexpr const char* kQwen2Moe = R"({"architectures": ["Qwen2MoeForCausalLM"],
    "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 2048,
    "vocab_size": 1000, "hidden_act": "silu", "num_experts": 8, "num_experts_per_tok": 2,
    "moe_intermediate_size": 128, "shared_expert_intermediate_size": 512,
    "norm_topk_prob": false})";
constexpr const char* kDeepseek = R"({"architectures": ["DeepseekV2ForCausalLM"],
    "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 3,
    "num_attention_heads": 4, "num_key_value_heads": 4, "max_position_embeddings": 2048,
    "vocab_size": 1000, "hidden_act": "silu", "q_lora_rank": 128, "kv_lora_rank": 64,
    "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "n_routed_experts": 8,
    "num_experts_per_tok": 2, "moe_intermediate_size": 128, "n_shared_experts": 2,
    "first_k_dense_replace": 1, "routed_scaling_factor": 2.0, "topk_method": "greedy"})";

Result<model::ModelConfig> config_of(const std::string& text) {
  PAGODA_ASSIGN_OR_RETURN(format::HfConfig hf, format::parse_hf_config(text));
  return model_config_from_hf(hf, nullptr);
}

// `base` with `patch` ("key": value) merged in (a later duplicate key would be refused).
std::string with(const char* base, const std::string& key, const std::string& value) {
  std::string s = base;
  const size_t at = s.find("\"" + key + "\"");
  if (at != std::string::npos) {
    const size_t end = s.find_first_of(",}", s.find(':', at));
    s.replace(at, end - at, "\"" + key + "\": " + value);
  } else {
    s.insert(s.size() - 1, ", \"" + key + "\": " + value);
  }
  return s;
}

std::string error_of(const std::string& text) {
  auto c = config_of(text);
  return c.ok() ? "<ok>" : c.status().message();
}

TEST(HfFamilyConfigTest, Gemma2) {
  auto c = config_of(kGemma2);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "gemma2");
  EXPECT_EQ(c->ffn_activation, model::FfnActivation::kGeluTanh);
  EXPECT_TRUE(c->post_norms);
  EXPECT_FLOAT_EQ(c->attn_scale, 0.125f);  // 64^-1/2, not head_dim's 32^-1/2
  EXPECT_FLOAT_EQ(c->attn_softcap, 3.0f);
  EXPECT_FLOAT_EQ(c->final_softcap, 0.4f);
  EXPECT_FLOAT_EQ(c->embedding_scale, 16.0f);
  EXPECT_EQ(c->layer_window(0), 8);
  EXPECT_EQ(c->layer_window(1), 0);
  EXPECT_EQ(c->rope_style, kernels::RopeStyle::kNeox);
  EXPECT_NE(error_of(with(kGemma2, "hidden_activation", "\"silu\"")).find("hidden_activation"),
            std::string::npos);
  EXPECT_NE(error_of(with(kGemma2, "attn_logit_softcapping", "-1")).find("attn_logit_softcapping"),
            std::string::npos);
  EXPECT_NE(error_of(with(kGemma2, "sliding_window", "0")).find("sliding_window"),
            std::string::npos);
  EXPECT_NE(error_of(with(kGemma2, "query_pre_attn_scalar", "0")).find("query_pre_attn_scalar"),
            std::string::npos);
}

TEST(HfFamilyConfigTest, Qwen2Moe) {
  auto c = config_of(kQwen2Moe);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "qwen2moe");
  EXPECT_EQ(c->num_experts, 8);
  EXPECT_EQ(c->num_experts_used, 2);
  EXPECT_EQ(c->expert_ffn(), 128);
  EXPECT_EQ(c->shared_expert_ffn_dim, 512);
  EXPECT_TRUE(c->shared_expert_gated);
  EXPECT_FALSE(c->moe_norm_weights);
  EXPECT_TRUE(c->has_qkv_bias);
  EXPECT_NE(error_of(with(kQwen2Moe, "num_experts_per_tok", "9")).find("num_experts_per_tok"),
            std::string::npos);
  // norm_topk_prob, mlp_only_layers and decoder_sparse_step as transformers reads them (convert
  // refuses what a qwen2moe GGUF cannot state).
  auto norm = config_of(with(kQwen2Moe, "norm_topk_prob", "true"));
  ASSERT_TRUE(norm.ok()) << norm.status().to_string();
  EXPECT_TRUE(norm->moe_norm_weights);
  auto only = config_of(with(kQwen2Moe, "mlp_only_layers", "[1]"));
  ASSERT_TRUE(only.ok()) << only.status().to_string();
  EXPECT_EQ(only->dense_layers, std::vector<int32_t>{1});
  EXPECT_TRUE(only->layer_has_experts(0));
  EXPECT_FALSE(only->layer_has_experts(1));
  auto step = config_of(with(kQwen2Moe, "decoder_sparse_step", "2"));  // layer 1 only: (1+1)%2
  ASSERT_TRUE(step.ok()) << step.status().to_string();
  EXPECT_EQ(step->dense_layers, std::vector<int32_t>{0});
  EXPECT_NE(error_of(with(kQwen2Moe, "mlp_only_layers", "[2]")).find("mlp_only_layers has 2"),
            std::string::npos);
  EXPECT_NE(error_of(with(kQwen2Moe, "decoder_sparse_step", "3")).find("decoder_sparse_step"),
            std::string::npos);
  std::string no_shared = kQwen2Moe;
  no_shared.erase(no_shared.find(", \"shared_expert_intermediate_size\": 512"), 39);
  EXPECT_NE(error_of(no_shared).find("shared_expert_intermediate_size is missing"),
            std::string::npos)
      << error_of(no_shared);
}

TEST(HfFamilyConfigTest, DeepseekV2) {
  auto c = config_of(kDeepseek);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "deepseek2");
  EXPECT_TRUE(c->mla());
  EXPECT_EQ(c->head_dim, 48);
  EXPECT_EQ(c->rope_dims, 16);
  EXPECT_EQ(c->value_dim(), 32);
  EXPECT_EQ(c->q_lora_rank, 128);
  EXPECT_EQ(c->kv_lora_rank, 64);
  EXPECT_EQ(c->leading_dense_layers, 1);
  EXPECT_EQ(c->expert_shared_count, 2);
  EXPECT_EQ(c->shared_expert_ffn_dim, 256);  // the shared experts fused
  EXPECT_FLOAT_EQ(c->moe_weights_scale, 2.0f);
  EXPECT_FALSE(c->moe_norm_weights);
  EXPECT_EQ(c->rope_style, kernels::RopeStyle::kInterleaved);
  // Renormalised weights are not scaled (DeepSeek-V2's MoEGate).
  auto n = config_of(with(kDeepseek, "norm_topk_prob", "true"));
  ASSERT_TRUE(n.ok());
  EXPECT_TRUE(n->moe_norm_weights);
  EXPECT_FLOAT_EQ(n->moe_weights_scale, 1.0f);
  EXPECT_NE(error_of(with(kDeepseek, "scoring_func", "\"sigmoid\"")).find("scoring_func"),
            std::string::npos);
  EXPECT_NE(error_of(with(kDeepseek, "topk_method", "\"noaux_tc\"")).find("topk_method"),
            std::string::npos);
  EXPECT_NE(error_of(with(kDeepseek, "topk_method",
                          "\"group_limited_greedy\", \"n_group\": 8, "
                          "\"topk_group\": 3"))
                .find("topk_group"),
            std::string::npos);
  EXPECT_NE(error_of(with(kDeepseek, "first_k_dense_replace", "4")).find("first_k_dense_replace"),
            std::string::npos);
  EXPECT_NE(error_of(with(kDeepseek, "kv_lora_rank", "0")).find("kv_lora_rank"), std::string::npos);
  EXPECT_NE(error_of(with(kDeepseek, "qk_rope_head_dim", "null")).find("qk_rope_head_dim"),
            std::string::npos);
  EXPECT_NE(error_of(with(kDeepseek, "routed_scaling_factor", "-2")).find("routed_scaling_factor"),
            std::string::npos);
}

// DeepSeek-V3 (DeepseekV3Config): sigmoid routing with grouped top-k, weights renormalised by
// default and always scaled.
TEST(HfFamilyConfigTest, DeepseekV3) {
  std::string v3 = kDeepseek;
  v3.replace(v3.find("DeepseekV2ForCausalLM"), 21, "DeepseekV3ForCausalLM");
  v3 = with(v3.c_str(), "topk_method", "\"noaux_tc\"");
  const std::string defaults = v3;
  v3 = with(with(v3.c_str(), "n_group", "4").c_str(), "topk_group", "2");
  auto c = config_of(v3);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "deepseek2");
  EXPECT_EQ(c->expert_gating, 2);
  EXPECT_TRUE(c->moe_norm_weights);
  EXPECT_FLOAT_EQ(c->moe_weights_scale, 2.0f);  // scaled although renormalised (unlike V2)
  EXPECT_EQ(c->expert_groups, 4);
  EXPECT_EQ(c->expert_groups_used, 2);
  // Without n_group, DeepseekV3Config's default 8 leaves one expert per group: refused.
  EXPECT_NE(error_of(defaults).find("each group needs 2 experts"), std::string::npos)
      << error_of(defaults);
  EXPECT_NE(
      error_of(with(v3.c_str(), "topk_method", "\"group_limited_greedy\"")).find("topk_group"),
      std::string::npos);
  auto soft = config_of(
      with(with(v3.c_str(), "scoring_func", "\"softmax\"").c_str(), "topk_method", "\"greedy\""));
  ASSERT_TRUE(soft.ok()) << soft.status().to_string();
  EXPECT_EQ(soft->expert_gating, 1);
  EXPECT_EQ(soft->expert_groups, 1);
}

// Gemma 3 text: the local/global pattern from sliding_window_pattern or layer_types, the local
// rope base, no soft-caps by default.
TEST(HfFamilyConfigTest, Gemma3) {
  constexpr const char* kGemma3 = R"({"architectures": ["Gemma3ForCausalLM"], "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 8, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 1024,
    "vocab_size": 1000, "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 16,
    "rope_local_base_freq": 20000.0, "rope_theta": 1000000.0})";
  auto c = config_of(kGemma3);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "gemma3");
  EXPECT_TRUE(c->qk_norm);
  EXPECT_EQ(c->attn_softcap, 0.0f);
  EXPECT_EQ(c->final_softcap, 0.0f);
  EXPECT_FLOAT_EQ(c->rope_local_theta, 20000.0f);
  EXPECT_FLOAT_EQ(c->attn_scale, 1.0f / 16.0f);  // query_pre_attn_scalar's default 256
  for (int32_t l = 0; l < 8; ++l)
    EXPECT_EQ(c->layer_window(l), l == 5 ? 0 : 16) << l;
  auto types = config_of(with(kGemma3, "layer_types",
                              R"(["sliding_attention", "sliding_attention", "full_attention",
                                  "sliding_attention", "sliding_attention", "full_attention",
                                  "sliding_attention", "sliding_attention"])"));
  ASSERT_TRUE(types.ok()) << types.status().to_string();
  EXPECT_EQ(types->sliding_pattern, 3);
  EXPECT_EQ(types->layer_window(2), 0);
  EXPECT_EQ(types->layer_window(3), 16);
  EXPECT_NE(error_of(with(kGemma3, "layer_types", R"(["chunked_attention"])")).find("layer_types"),
            std::string::npos);
  EXPECT_NE(error_of(with(kGemma3, "sliding_window_pattern", "0")).find("sliding_window_pattern"),
            std::string::npos);
}

TEST(HfFamilyConfigTest, Qwen3) {
  constexpr const char* kQwen3 = R"({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 256,
      "vocab_size": 1000, "hidden_act": "silu", "attention_bias": false})";
  auto c = config_of(kQwen3);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "qwen3");
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->has_qkv_bias);
  EXPECT_EQ(c->q_dim(), 128);
  EXPECT_NE(error_of(with(kQwen3, "attention_bias", "true")).find("attention_bias"),
            std::string::npos);
  bool skip = false;
  int32_t layer = -1, expert = -1;
  EXPECT_EQ(gguf_name_of("model.layers.1.self_attn.k_norm.weight", &skip, &layer, &expert, "qwen3")
                .value_or("<none>"),
            "blk.1.attn_k_norm.weight");
  EXPECT_FALSE(
      gguf_name_of("model.layers.1.self_attn.k_norm.weight", &skip, &layer, &expert, "qwen2"));
}

TEST(HfFamilyConfigTest, TensorNames) {
  bool skip = false;
  int32_t layer = -1, expert = -1;
  auto name = [&](const char* hf, std::string_view arch) {
    auto n = gguf_name_of(hf, &skip, &layer, &expert, arch);
    return n ? *n : std::string("<none>");
  };
  EXPECT_EQ(name("model.layers.3.post_attention_layernorm.weight", "gemma2"),
            "blk.3.post_attention_norm.weight");
  EXPECT_EQ(name("model.layers.3.post_attention_layernorm.weight", "llama"),
            "blk.3.ffn_norm.weight");
  EXPECT_EQ(name("model.layers.3.pre_feedforward_layernorm.weight", "gemma2"),
            "blk.3.ffn_norm.weight");
  EXPECT_EQ(name("model.layers.3.post_feedforward_layernorm.weight", "gemma2"),
            "blk.3.post_ffw_norm.weight");
  EXPECT_EQ(name("model.layers.1.mlp.experts.5.down_proj.weight", "qwen2moe"),
            "blk.1.ffn_down.5.weight");
  EXPECT_EQ(expert, 5);
  EXPECT_EQ(name("model.layers.1.mlp.shared_expert_gate.weight", "qwen2moe"),
            "blk.1.ffn_gate_inp_shexp.weight");
  EXPECT_EQ(name("model.layers.1.mlp.shared_expert.up_proj.weight", "qwen2moe"),
            "blk.1.ffn_up_shexp.weight");
  EXPECT_EQ(name("model.layers.1.mlp.shared_experts.up_proj.weight", "deepseek2"),
            "blk.1.ffn_up_shexp.weight");
  EXPECT_EQ(name("model.layers.0.self_attn.kv_b_proj.weight", "deepseek2"),
            "blk.0.attn_kv_b.weight");
  EXPECT_EQ(name("model.layers.0.self_attn.q_proj.weight", "deepseek2"), "blk.0.attn_q.weight");
  for (const char* bad :
       {"model.layers.1.mlp.experts.05.up_proj.weight", "model.layers.1.mlp.experts.1.w1.weight",
        "model.layers.1.mlp.experts.1.up_proj.bias",
        "model.layers.1.mlp.shared_expert_gate.bias"}) {
    EXPECT_EQ(name(bad, "qwen2moe"), "<none>") << bad;
  }
  // Another family's names are not accepted.
  EXPECT_EQ(name("model.layers.0.self_attn.kv_b_proj.weight", "qwen2moe"), "<none>");
  EXPECT_EQ(name("model.layers.1.mlp.experts.1.up_proj.weight", "llama"), "<none>");
  EXPECT_TRUE(hf_norm_adds_one("gemma2", "blk.0.post_ffw_norm.weight"));
  EXPECT_TRUE(hf_norm_adds_one("gemma2", "output_norm.weight"));
  EXPECT_FALSE(hf_norm_adds_one("qwen2moe", "output_norm.weight"));
  EXPECT_FALSE(hf_norm_adds_one("gemma2", "blk.0.attn_q.weight"));
}

}  // namespace
}  // namespace pagoda::loader
