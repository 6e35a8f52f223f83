// `pagoda convert` (convert/hf_to_gguf.h): the q/k row permutation against llama.cpp's converter,
// written here the way it is written there (reshape(n_head, 2, half, ...) then swapaxes(1, 2)),
// and a whole conversion of a hand-made one-layer Mixtral checkpoint whose every weight value
// encodes (tensor, row, column), so the written file's layout can be checked element by element:
// q/k rows permuted, v not, experts stacked in order, norms and the router F32, tokens padded.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "convert/hf_to_gguf.h"
#include "format/gguf_file.h"

namespace pagoda::convert {
namespace {

namespace fs = std::filesystem;

// out[h][i][s] = in[h][s][i] over the row index (rows = n_head * 2 * half).
std::vector<int64_t> permuted_sources(int32_t n_head, int64_t half) {
  std::vector<int64_t> out;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t s = 0; s < 2; ++s)
        out.push_back((h * 2 + s) * half + i);
    }
  }
  return out;
}

TEST(HfToGgufTest, QkPermutationByHand) {
  // Two heads of four rows: rotate-half pairs (0, 2), (1, 3) become adjacent.
  const std::vector<int64_t> expected = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t r = 0; r < 8; ++r) {
    EXPECT_EQ(gguf_qk_source_row(r, 8, 2), expected[static_cast<size_t>(r)]);
  }
}

TEST(HfToGgufTest, QkPermutationMatchesLlamaCppReshape) {
  for (int32_t n_head : {1, 2, 4, 8, 32}) {
    for (int64_t half : {1, 2, 32, 64}) {
      const int64_t rows = n_head * 2 * half;
      const auto expected = permuted_sources(n_head, half);
      std::vector<bool> seen(static_cast<size_t>(rows), false);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t src = gguf_qk_source_row(r, rows, n_head);
        ASSERT_EQ(src, expected[static_cast<size_t>(r)]) << n_head << " " << half << " " << r;
        seen[static_cast<size_t>(src)] = true;
      }
      for (bool b : seen)
        EXPECT_TRUE(b);  // a permutation
    }
  }
}

// ---- a tiny Mixtral checkpoint ------------------------------------------------------------------

constexpr int kHidden = 8, kHeads = 2, kKvHeads = 1, kFfn = 4, kExperts = 2, kVocab = 6;
constexpr int kHeadDim = kHidden / kHeads;

struct HfWeight {
  std::string name;
  std::vector<int64_t> shape;  // row-major
  int code;                    // value(r, c) = code * 1000 + r * 10 + c
};

float value(int code, int64_t r, int64_t c) {
  return static_cast<float>(code * 1000 + r * 10 + c);
}

std::vector<HfWeight> tiny_mixtral() {
  std::vector<HfWeight> w = {
      {"model.embed_tokens.weight", {kVocab, kHidden}, 1},
      {"lm_head.weight", {kVocab, kHidden}, 2},
      {"model.norm.weight", {kHidden}, 3},
      {"model.layers.0.input_layernorm.weight", {kHidden}, 4},
      {"model.layers.0.post_attention_layernorm.weight", {kHidden}, 5},
      {"model.layers.0.self_attn.q_proj.weight", {kHeads * kHeadDim, kHidden}, 6},
      {"model.layers.0.self_attn.k_proj.weight", {kKvHeads * kHeadDim, kHidden}, 7},
      {"model.layers.0.self_attn.v_proj.weight", {kKvHeads * kHeadDim, kHidden}, 8},
      {"model.layers.0.self_attn.o_proj.weight", {kHidden, kHeads * kHeadDim}, 9},
      {"model.layers.0.block_sparse_moe.gate.weight", {kExperts, kHidden}, 10},
  };
  for (int e = 0; e < kExperts; ++e) {
    const std::string p = "model.layers.0.block_sparse_moe.experts." + std::to_string(e) + ".";
    w.push_back({p + "w1.weight", {kFfn, kHidden}, 20 + e});
    w.push_back({p + "w3.weight", {kFfn, kHidden}, 30 + e});
    w.push_back({p + "w2.weight", {kHidden, kFfn}, 40 + e});
  }
  return w;
}

void write_checkpoint(const fs::path& dir) {
  fs::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures": ["MixtralForCausalLM"],
    "model_type": "mixtral", "hidden_size": 8, "intermediate_size": 4, "num_hidden_layers": 1,
    "num_attention_heads": 2, "num_key_value_heads": 1, "vocab_size": 6,
    "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "num_local_experts": 2, "num_experts_per_tok": 1, "tie_word_embeddings": false})";
  std::string header = "{";
  std::vector<uint8_t> data;
  for (const HfWeight& w : tiny_mixtral()) {
    const int64_t rows = w.shape.size() == 2 ? w.shape[0] : 1;
    const int64_t cols = w.shape.back();
    const size_t begin = data.size();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float v = value(w.code, r, c);
        uint8_t b[4];
        std::memcpy(b, &v, 4);
        data.insert(data.end(), b, b + 4);
      }
    }
    std::string shape;
    for (int64_t d : w.shape)
      shape += (shape.empty() ? "" : ",") + std::to_string(d);
    header += (header.size() > 1 ? "," : "") + std::string("\"") + w.name +
              "\":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  std::ofstream out(dir / "model.safetensors", std::ios::binary);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header;
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

loader::HfTokenizerFiles tiny_tokenizer() {
  loader::HfTokenizerFiles t;
  t.vocab.kind = tokenizer::VocabKind::kBpe;
  t.vocab.pre = "qwen2";
  t.vocab.tokens = {"a", "b", "ab", "<|end|>"};  // fewer than the model's 6
  t.vocab.token_types = {tokenizer::TokenType::kNormal, tokenizer::TokenType::kNormal,
                         tokenizer::TokenType::kNormal, tokenizer::TokenType::kControl};
  t.vocab.merges = {"a b"};
  t.vocab.eos_id = 3;
  t.chat_template = "{{ messages }}";
  return t;
}

// The float at ggml position (dims[0] index c, dims[1] index r, dims[2] index e).
float at(const format::GgufTensorInfo& t, uint64_t c, uint64_t r, uint64_t e = 0) {
  float v;
  std::memcpy(&v, t.data + 4 * ((e * t.dims[1] + r) * t.dims[0] + c), 4);
  return v;
}

TEST(HfToGgufTest, TinyMixtralLayout) {
  const fs::path dir =
      fs::temp_directory_path() / ("pagoda_hf_to_gguf_test_" + std::to_string(::getpid()));
  write_checkpoint(dir);
  auto opened = loader::HfCheckpoint::open(dir.string());
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  std::shared_ptr<const loader::HfCheckpoint> checkpoint(std::move(opened).value());
  ConvertOptions options;
  options.file_type = FileType::kAllF32;
  options.name = "tiny";
  auto converted = build_gguf_from_hf(checkpoint, tiny_tokenizer(), options);
  ASSERT_TRUE(converted.ok()) << converted.status().to_string();
  auto bytes = converted->writer.to_bytes();
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto file = format::GgufFile::parse(std::move(bytes).value());
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  const format::GgufFile& f = **file;
  fs::remove_all(dir);

  EXPECT_EQ(*f.get_string("general.architecture"), "llama");
  EXPECT_EQ(*f.get_string("general.name"), "tiny");
  EXPECT_EQ(*f.get_uint("llama.expert_count"), 2u);
  EXPECT_EQ(*f.get_uint("llama.expert_used_count"), 1u);
  EXPECT_EQ(*f.get_uint("llama.attention.head_count_kv"), 1u);
  EXPECT_EQ(*f.get_uint("llama.vocab_size"), 6u);
  EXPECT_EQ(f.find("llama.attention.key_length"), nullptr);  // head_dim == hidden / heads
  EXPECT_EQ(*f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*f.get_string("tokenizer.ggml.pre"), "qwen2");
  EXPECT_EQ(*f.get_uint("tokenizer.ggml.eos_token_id"), 3u);
  EXPECT_EQ(*f.get_string("tokenizer.chat_template"), "{{ messages }}");
  auto tokens = f.get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 6u);
  EXPECT_EQ((*tokens)[4], "[PAD4]");
  EXPECT_EQ((*tokens)[5], "[PAD5]");
  auto types = f.get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ(*types, (std::vector<int64_t>{1, 1, 1, 3, 5, 5}));

  // Tensor names and dims; llama.cpp's order: globals, the layer by name, output_norm, output.
  std::vector<std::string> names;
  for (const auto& t : f.tensors())
    names.push_back(std::string(t.name));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "token_embd.weight", "blk.0.attn_k.weight", "blk.0.attn_norm.weight",
                       "blk.0.attn_output.weight", "blk.0.attn_q.weight", "blk.0.attn_v.weight",
                       "blk.0.ffn_down_exps.weight", "blk.0.ffn_gate_exps.weight",
                       "blk.0.ffn_gate_inp.weight", "blk.0.ffn_norm.weight",
                       "blk.0.ffn_up_exps.weight", "output_norm.weight", "output.weight"}));
  for (const auto& t : f.tensors())
    EXPECT_EQ(t.dtype, tensor::DType::kF32) << t.name;

  // q: ggml row r holds HF row permuted_sources(...)[r]; k likewise over one head; v unchanged.
  const auto q_src = permuted_sources(kHeads, kHeadDim / 2);
  const auto* q = f.find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  for (uint64_t r = 0; r < kHeads * kHeadDim; ++r) {
    for (uint64_t c = 0; c < kHidden; ++c) {
      ASSERT_EQ(at(*q, c, r), value(6, q_src[r], static_cast<int64_t>(c))) << r << " " << c;
    }
  }
  const auto k_src = permuted_sources(kKvHeads, kHeadDim / 2);
  const auto* k = f.find_tensor("blk.0.attn_k.weight");
  const auto* v = f.find_tensor("blk.0.attn_v.weight");
  ASSERT_TRUE(k != nullptr && v != nullptr);
  for (uint64_t r = 0; r < kKvHeads * kHeadDim; ++r) {
    for (uint64_t c = 0; c < kHidden; ++c) {
      ASSERT_EQ(at(*k, c, r), value(7, k_src[r], static_cast<int64_t>(c)));
      ASSERT_EQ(at(*v, c, r), value(8, static_cast<int64_t>(r), static_cast<int64_t>(c)));
    }
  }
  // Experts stacked along dims[2] in expert order: w1 -> gate, w3 -> up, w2 -> down.
  const std::map<std::string, int> stacked = {{"blk.0.ffn_gate_exps.weight", 20},
                                              {"blk.0.ffn_up_exps.weight", 30},
                                              {"blk.0.ffn_down_exps.weight", 40}};
  for (const auto& [name, code] : stacked) {
    const auto* t = f.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->n_dims, 3u);
    ASSERT_EQ(t->dims[2], static_cast<uint64_t>(kExperts));
    for (uint64_t e = 0; e < kExperts; ++e) {
      for (uint64_t r = 0; r < t->dims[1]; ++r) {
        for (uint64_t c = 0; c < t->dims[0]; ++c) {
          ASSERT_EQ(at(*t, c, r, e), value(code + static_cast<int>(e), static_cast<int64_t>(r),
                                           static_cast<int64_t>(c)))
              << name;
        }
      }
    }
  }
  const auto* norm = f.find_tensor("output_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->n_dims, 1u);
  EXPECT_EQ(at(*norm, 7, 0), value(3, 0, 7));
}

}  // namespace
}  // namespace pagoda::convert
