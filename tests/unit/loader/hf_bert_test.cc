// Hugging Face BERT directories (loader/hf/hf_bert.h, hf_wordpiece.h): tensor names as llama.cpp's
// converter writes them (with and without the bert. prefix), config.json rejections naming the
// field, and hostile tokenizer.json / vocab.txt refused by file and field.
#include <gtest/gtest.h>

#include "format/hf_config.h"
#include "loader/hf/hf_bert.h"
#include "loader/hf/hf_wordpiece.h"

namespace pagoda::loader {
namespace {

std::optional<std::string> name_of(std::string_view hf, bool* skip = nullptr) {
  bool s = false;
  int32_t layer = -1;
  auto out = bert_gguf_name(hf, &s, &layer);
  if (skip != nullptr) *skip = s;
  return out;
}

TEST(HfBert, TensorNames) {
  EXPECT_EQ(name_of("embeddings.word_embeddings.weight"), "token_embd.weight");
  EXPECT_EQ(name_of("bert.embeddings.token_type_embeddings.weight"), "token_types.weight");
  EXPECT_EQ(name_of("bert.embeddings.LayerNorm.bias"), "token_embd_norm.bias");
  EXPECT_EQ(name_of("encoder.layer.11.attention.self.query.weight"), "blk.11.attn_q.weight");
  EXPECT_EQ(name_of("bert.encoder.layer.0.attention.output.LayerNorm.weight"),
            "blk.0.attn_output_norm.weight");
  EXPECT_EQ(name_of("encoder.layer.2.intermediate.dense.bias"), "blk.2.ffn_up.bias");
  EXPECT_EQ(name_of("encoder.layer.2.output.dense.weight"), "blk.2.ffn_down.weight");
  EXPECT_EQ(name_of("encoder.layer.2.output.LayerNorm.bias"), "blk.2.layer_output_norm.bias");
  EXPECT_EQ(name_of("bert.pooler.dense.weight"), "cls.weight");
  EXPECT_EQ(name_of("classifier.bias"), "cls.output.bias");
  bool skip = false;
  EXPECT_EQ(name_of("bert.embeddings.position_ids", &skip), std::nullopt);
  EXPECT_TRUE(skip);
  EXPECT_EQ(name_of("cls.predictions.transform.dense.weight", &skip), std::nullopt);
  EXPECT_TRUE(skip);
  for (std::string_view bad :
       {"encoder.layer.01.output.dense.weight", "encoder.layer.x.output.dense.weight",
        "encoder.layer.1.output.dense.scale", "encoder.layer.1.mystery.weight", "weight", ""}) {
    EXPECT_EQ(name_of(bad, &skip), std::nullopt) << bad;
    EXPECT_FALSE(skip) << bad;
  }
}

format::HfConfig bert_config() {
  auto hf = format::parse_hf_config(R"({"architectures": ["BertForSequenceClassification"],
      "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 64,
      "layer_norm_eps": 1e-12, "hidden_act": "gelu"})");
  EXPECT_TRUE(hf.ok()) << hf.status().to_string();
  return *hf;
}

TEST(HfBert, ConfigAndRejections) {
  format::HfConfig hf = bert_config();
  EXPECT_TRUE(is_hf_bert(hf));
  auto c = bert_config_from_hf(hf, nullptr);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->arch, "bert");
  EXPECT_TRUE(c->encoder);
  EXPECT_EQ(c->pooling_type, 4);  // rank
  EXPECT_EQ(c->head_dim, 16);
  const auto refused = [](format::HfConfig h, std::string_view field) {
    auto r = bert_config_from_hf(h, nullptr);
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  };
  format::HfConfig h = hf;
  h.hidden_act = "relu";
  refused(h, "hidden_act");
  h = hf;
  h.position_embedding_type = "relative_key";
  refused(h, "position_embedding_type");
  h = hf;
  h.type_vocab_size = 3;
  refused(h, "type_vocab_size");
  h = hf;
  h.hidden_size.reset();
  refused(h, "hidden_size");
  h = hf;
  h.num_attention_heads = 5;
  refused(h, "num_attention_heads");
  h = hf;
  h.layer_norm_eps = -1;
  refused(h, "layer_norm_eps");
}

TEST(HfWordPiece, TokenizerJsonAndVocabTxt) {
  constexpr std::string_view kJson =
      R"({"normalizer": {"type": "BertNormalizer", "lowercase": false},
      "added_tokens": [{"id": 4, "content": "[MASK]", "special": true}],
      "model": {"type": "WordPiece", "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3,
                "[MASK]": 4, "a": 5, "##b": 6}}})";
  auto v = wordpiece_from_tokenizer_json(kJson, "");
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  ASSERT_TRUE(v->has_value());
  EXPECT_EQ((*v)->tokens[6], "##b");
  EXPECT_EQ((*v)->bos_id, 2);
  EXPECT_EQ((*v)->eos_id, 3);
  EXPECT_EQ((*v)->unk_id, 1);
  EXPECT_FALSE((*v)->lower_case);
  EXPECT_EQ((*v)->token_types[4], tokenizer::TokenType::kControl);
  // Another model type: not WordPiece, nothing to do here.
  auto bpe = wordpiece_from_tokenizer_json(R"({"model": {"type": "BPE"}})", "");
  ASSERT_TRUE(bpe.ok());
  EXPECT_FALSE(bpe->has_value());
  auto txt = wordpiece_from_vocab_txt("[PAD]\n[UNK]\r\n[CLS]\n[SEP]\nhello\n",
                                      R"({"do_lower_case": false})");
  ASSERT_TRUE(txt.ok()) << txt.status().to_string();
  EXPECT_EQ(txt->tokens.size(), 5u);
  EXPECT_EQ(txt->tokens[1], "[UNK]");
  EXPECT_FALSE(txt->lower_case);
}

TEST(HfWordPiece, HostileFilesNameTheField) {
  const auto json_refused = [](std::string_view text, std::string_view field) {
    auto r = wordpiece_from_tokenizer_json(text, "");
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  };
  json_refused(R"({"model": {"type": "WordPiece", "vocab": [1]}})", "model.vocab");
  json_refused(R"({"model": {"type": "WordPiece", "vocab": {}}})", "model.vocab");
  json_refused(R"({"model": {"type": "WordPiece", "vocab": {"a": 0, "b": 0}}})", "model.vocab");
  json_refused(R"({"model": {"type": "WordPiece", "vocab": {"a": 5}}})", "model.vocab");
  json_refused(R"({"model": {"type": "WordPiece", "vocab": {"a": "0"}}})", "model.vocab");
  json_refused(R"({"model": {"type": "WordPiece", "vocab": {"": 0}}})", "token 0");
  json_refused(R"({"model": {"type": "WordPiece", "vocab": {"[CLS]": 0, "[SEP]": 1}}})", "unk");
  json_refused(R"({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0}}, "x": 1, "x": 2})", "x");
  const auto txt_refused = [](std::string_view text, std::string_view config,
                              std::string_view field) {
    auto r = wordpiece_from_vocab_txt(text, config);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  };
  txt_refused("", "", "no tokens");
  txt_refused("[UNK]\n[SEP]\n", "", "cls");
  txt_refused("[UNK]\n\n[CLS]\n[SEP]\n", "", "token 1");
  txt_refused("[UNK]\n[CLS]\n[SEP]\n", R"({"do_lower_case": "yes"})", "do_lower_case");
  txt_refused("[UNK]\n[CLS]\n[SEP]\n", R"({"cls_token": 3})", "cls_token");
}

}  // namespace
}  // namespace pagoda::loader
