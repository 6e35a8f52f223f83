// GGUF metadata → ModelConfig (loader/gguf_config.h): RoPE scaling and its errors, llama's
// sliding window.
#include "loader/gguf_config.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "model/arch/arch.h"

namespace pagoda::loader {
namespace {

// GGUF metadata of a small llama model, plus `extra` keys.
Result<model::ModelConfig> gguf_config(
    const std::vector<std::pair<std::string, format::GgufWriteValue>>& extra) {
  using V = format::GgufWriteValue;
  format::GgufWriter w;
  w.set("general.architecture", V::string("llama"))
      .set("llama.block_count", V::u32(2))
      .set("llama.embedding_length", V::u32(256))
      .set("llama.feed_forward_length", V::u32(768))
      .set("llama.attention.head_count", V::u32(4))
      .set("llama.context_length", V::u32(2048))
      .set("llama.vocab_size", V::u32(32000));
  for (const auto& [k, v] : extra)
    w.set(k, v);
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return bytes.status();
  auto file = format::GgufFile::parse(*bytes);
  if (!file.ok()) return file.status();
  return config_from_gguf(**file);
}

// llama.attention.sliding_window (what `pagoda convert` writes for Mistral's config.json window;
// llama.cpp's converter writes none): the llama architecture applies it to every layer; without
// it, none. qwen2 likewise.
TEST(GgufModelConfigTest, LlamaSlidingWindowOnEveryLayer) {
  using V = format::GgufWriteValue;
  const model::ArchDef* llama = model::find_arch("llama");
  ASSERT_NE(llama, nullptr);
  auto c = gguf_config({{"llama.attention.sliding_window", V::u32(512)}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_TRUE(llama->configure(*c).ok());
  EXPECT_EQ(c->layer_window(0), 512);
  EXPECT_EQ(c->uniform_sliding_window(), 512);
  auto none = gguf_config({});
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  ASSERT_TRUE(llama->configure(*none).ok());
  EXPECT_EQ(none->uniform_sliding_window(), 0);
  model::ModelConfig q = *c;
  q.arch = "qwen2";
  ASSERT_TRUE(model::find_arch("qwen2")->configure(q).ok());
  EXPECT_EQ(q.uniform_sliding_window(), 512);
}

// Read under every scaling type, as llama.cpp reads them: original_context_length (LongRoPE's
// long/short choice) and attn_factor (phi3's LongRoPE files carry both, without a scaling type).
TEST(GgufModelConfigTest, OriginalContextAndAttnFactorWithoutYarn) {
  using V = format::GgufWriteValue;
  auto c = gguf_config({{"llama.rope.scaling.original_context_length", V::u32(512)},
                        {"llama.rope.scaling.attn_factor", V::f32(1.25f)}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->rope_orig_ctx, 512);
  EXPECT_EQ(c->rope_attn_factor, 1.25f);
  EXPECT_EQ(c->rope_ext_factor, 0.0f);
  EXPECT_EQ(c->context_length, 2048);
  EXPECT_TRUE(model::use_long_rope_factors(*c, 513));
  EXPECT_FALSE(model::use_long_rope_factors(*c, 512));
  auto none = gguf_config({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->rope_orig_ctx, 0);
  EXPECT_FALSE(model::use_long_rope_factors(*none, 1 << 20));
  auto bad = gguf_config({{"llama.rope.scaling.attn_factor", V::f32(0.0f)}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("llama.rope.scaling.attn_factor 0 is out of range"),
            std::string::npos)
      << bad.status().to_string();
}

TEST(GgufModelConfigTest, YarnScaling) {
  using V = format::GgufWriteValue;
  auto c = gguf_config({{"llama.rope.scaling.type", V::string("yarn")},
                        {"llama.rope.scaling.factor", V::f32(4.0f)},
                        {"llama.rope.scaling.original_context_length", V::u32(1024)},
                        {"llama.rope.scaling.attn_factor", V::f32(0.5f)},
                        {"llama.rope.scaling.yarn_beta_fast", V::f32(16.0f)}});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_FLOAT_EQ(c->rope_freq_scale, 0.25f);
  EXPECT_EQ(c->rope_ext_factor, 1.0f);
  EXPECT_EQ(c->rope_orig_ctx, 1024);
  EXPECT_EQ(c->rope_attn_factor, 0.5f);
  EXPECT_EQ(c->rope_yarn_beta_fast, 16.0f);
  EXPECT_EQ(c->rope_yarn_beta_slow, 1.0f);
  EXPECT_EQ(c->context_length, 4096);

  // Defaults: the original context is context_length, attn_factor 1, betas 32 / 1.
  auto d = gguf_config(
      {{"llama.rope.scaling.type", V::string("yarn")}, {"llama.rope.scaling.factor", V::f32(2)}});
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->rope_orig_ctx, 2048);
  EXPECT_EQ(d->rope_attn_factor, 1.0f);
  EXPECT_EQ(d->rope_yarn_beta_fast, 32.0f);
  EXPECT_EQ(d->context_length, 4096);
  // From the factor itself, not 1 / the float freq_scale (1000 / 0.33333334f is 2999.99...).
  auto third = gguf_config({{"llama.rope.scaling.type", V::string("yarn")},
                            {"llama.rope.scaling.factor", V::f32(3)},
                            {"llama.rope.scaling.original_context_length", V::u32(1000)}});
  ASSERT_TRUE(third.ok()) << third.status().to_string();
  EXPECT_EQ(third->context_length, 3000);
  auto linear = gguf_config(
      {{"llama.rope.scaling.type", V::string("linear")}, {"llama.rope.scaling.factor", V::f32(2)}});
  ASSERT_TRUE(linear.ok());
  EXPECT_EQ(linear->rope_ext_factor, 0.0f);
  EXPECT_EQ(linear->context_length, 2048);

  const auto message = [](const Result<model::ModelConfig>& r) {
    return r.ok() ? std::string("<ok>") : r.status().message();
  };
  EXPECT_NE(message(gguf_config({{"llama.rope.scaling.type", V::string("yarn")},
                                 {"llama.rope.scaling.factor", V::f32(0)}}))
                .find("rope.scaling.factor"),
            std::string::npos);
  EXPECT_NE(message(gguf_config({{"llama.rope.scaling.type", V::string("yarn")},
                                 {"llama.rope.scaling.factor", V::f32(4)},
                                 {"llama.rope.scaling.attn_factor", V::f32(-1)}}))
                .find("attn_factor"),
            std::string::npos);
  EXPECT_NE(message(gguf_config({{"llama.rope.scaling.type", V::string("yarn")},
                                 {"llama.rope.scaling.factor", V::f32(4)},
                                 {"llama.rope.scaling.yarn_log_multiplier", V::f32(0.1f)}}))
                .find("yarn_log_multiplier"),
            std::string::npos);
}

}  // namespace
}  // namespace pagoda::loader
