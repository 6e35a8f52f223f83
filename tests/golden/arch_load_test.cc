// Hostile variants of the models/arch fixtures (phi3, gemma2, qwen2moe, deepseek2): each copy
// changes one thing (a tensor missing, misshapen or unsupported, a metadata value out of range)
// and loading must fail with an error naming it, never crash. The unmodified copies load.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "loader/model_loader.h"
#include "test_support.h"

namespace pagoda {
namespace {

using format::GgufWriteValue;

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "\"" << (haystack) << "\" does not contain \"" << (needle) << "\""

// One tensor as written: name, type, dims, bytes.
struct Tensor {
  std::string name;
  tensor::DType dtype;
  std::vector<uint64_t> dims;
  std::vector<uint8_t> bytes;
};

struct Mutation {
  std::function<void(format::GgufWriter&)> metadata;  // after the original keys
  std::function<void(std::vector<Tensor>&)> tensors;  // before they are written
};

// load_model's error for models/arch/<model> copied with `m` applied ("" when it loads).
std::string load_error(const std::string& model, const Mutation& m) {
  const auto src = pagoda::testing::fixture("models/arch/" + model);
  auto file = format::GgufFile::open(src.string());
  if (!file.ok()) return "open: " + file.status().to_string();
  format::GgufWriter w;
  for (const format::GgufKv& kv : (*file)->metadata())
    w.set(std::string(kv.key), GgufWriteValue::copy_of(kv.value));
  if (m.metadata) m.metadata(w);
  std::vector<Tensor> tensors;
  for (const format::GgufTensorInfo& t : (*file)->tensors()) {
    tensors.push_back(Tensor{std::string(t.name), t.dtype,
                             std::vector<uint64_t>(t.dims, t.dims + t.n_dims),
                             std::vector<uint8_t>(t.bytes().begin(), t.bytes().end())});
  }
  if (m.tensors) m.tensors(tensors);
  for (Tensor& t : tensors)
    w.add_tensor(t.name, t.dtype, t.dims, std::move(t.bytes));
  const std::string out = (pagoda::testing::binary_dir() / ("arch_load_test_" + model)).string();
  const Status st = w.write_file(out);
  if (!st.ok()) return "write: " + st.to_string();
  auto loaded = loader::load_model(out);
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

TEST_F(ArchLoadTest, Phi3) {
  EXPECT_CONTAINS(load_error("phi3-Q8_0.gguf", {nullptr,
                                                [](std::vector<Tensor>& ts) {
                                                  ts.push_back(Tensor{"rope_factors_long.weight",
                                                                      tensor::DType::kF32,
                                                                      {32},
                                                                      std::vector<uint8_t>(128)});
                                                }}),
                  "phi3 LongRoPE scaling (rope_factors_long.weight) is not supported yet");
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
  EXPECT_CONTAINS(load_error("gemma2-Q8_0.gguf", {[](format::GgufWriter& w) {
                                                    w.set("gemma2.final_logit_softcapping",
                                                          GgufWriteValue::f32(-0.4f));
                                                  },
                                                  nullptr}),
                  "gemma2.final_logit_softcapping = -0.4");
}

TEST_F(ArchLoadTest, Qwen2Moe) {
  EXPECT_CONTAINS(load_error("qwen2moe-Q8_0.gguf",
                             {nullptr, reshape("blk.1.ffn_gate_inp_shexp.weight", {128})}),
                  "tensor 'blk.1.ffn_gate_inp_shexp.weight' has shape [128]");
  EXPECT_CONTAINS(load_error("qwen2moe-Q8_0.gguf", {nullptr, drop("blk.0.ffn_down_shexp.weight")}),
                  "tensor 'blk.0.ffn_down_shexp.weight' is missing");
  EXPECT_CONTAINS(load_error("qwen2moe-Q8_0.gguf", {[](format::GgufWriter& w) {
                                                      w.set("qwen2moe.expert_feed_forward_length",
                                                            GgufWriteValue::u32(0));
                                                    },
                                                    nullptr}),
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
  EXPECT_CONTAINS(load_error("deepseek2-Q8_0.gguf", {[](format::GgufWriter& w) {
                                                       w.set("deepseek2.leading_dense_block_count",
                                                             GgufWriteValue::u32(9));
                                                     },
                                                     nullptr}),
                  "deepseek2.leading_dense_block_count = 9 is out of range [0, 3]");
}

}  // namespace
}  // namespace pagoda
